// A session of the PostgreSQL JDBC driver (pgjdbc, as Debian packages it) against `weir serve`:
// its start-up, plain and prepared statements (past the driver's threshold, where it switches
// to named server-side statements), every type weir has, NULLs, batches, a transaction as the
// driver opens one, errors by SQLSTATE, and DatabaseMetaData's tables, columns, primary key and
// schemas.
// Run as `java -cp postgresql.jar JdbcSession.java PORT`; prints "jdbc session ok" at the end.

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Date;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;

public class JdbcSession {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    /** A row of getImportedKeys or getExportedKeys, as one line. */
    static String describeKey(ResultSet r) throws SQLException {
        return r.getString("PKTABLE_NAME") + "." + r.getString("PKCOLUMN_NAME") + " <- "
                + r.getString("FKTABLE_NAME") + "." + r.getString("FKCOLUMN_NAME") + " #" + r.getShort("KEY_SEQ")
                + " " + r.getString("FK_NAME") + " on " + r.getString("PK_NAME")
                + " update " + r.getShort("UPDATE_RULE") + " delete " + r.getShort("DELETE_RULE");
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/shop?user=weir";
        try (Connection c = DriverManager.getConnection(url)) {
            check(c.getMetaData().getDatabaseProductName().equals("PostgreSQL"), "product name");
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE jdbc_items (id BIGINT PRIMARY KEY, name VARCHAR, "
                        + "price DECIMAL(12,2), weight DOUBLE, ok BOOLEAN, made DATE, seen TIMESTAMP)");
                // Another table, which DatabaseMetaData's questions about jdbc_items leave out.
                s.execute("CREATE TABLE jdbc_other (k BIGINT PRIMARY KEY, v VARCHAR)");
                int n = s.executeUpdate("INSERT INTO jdbc_items VALUES "
                        + "(1, 'bolt', 1.25, 0.5, true, DATE '2024-02-29', TIMESTAMP '2024-02-29 12:34:56')");
                check(n == 1, "insert count " + n);
            }

            // Prepared statements: the driver turns to a named server-side statement on its
            // fifth execution; parameters and results in binary from then on.
            try (PreparedStatement ins = c.prepareStatement(
                    "INSERT INTO jdbc_items (id, name, price, weight, ok, made, seen) VALUES (?, ?, ?, ?, ?, ?, ?)")) {
                for (int i = 2; i <= 11; i++) {
                    ins.setLong(1, i);
                    ins.setString(2, "part " + i);
                    ins.setBigDecimal(3, new BigDecimal(i + ".50"));
                    ins.setDouble(4, i * 0.25);
                    ins.setBoolean(5, i % 2 == 0);
                    ins.setDate(6, Date.valueOf("2024-03-" + String.format("%02d", i)));
                    ins.setTimestamp(7, Timestamp.valueOf("2024-03-01 10:00:0" + (i % 10)));
                    check(ins.executeUpdate() == 1, "prepared insert " + i);
                }
            }
            // A batch, with NULLs.
            try (PreparedStatement ins = c.prepareStatement(
                    "INSERT INTO jdbc_items (id, name, price, weight, ok, made, seen) VALUES (?, ?, ?, ?, ?, ?, ?)")) {
                for (int i = 12; i <= 14; i++) {
                    ins.setLong(1, i);
                    ins.setNull(2, Types.VARCHAR);
                    ins.setNull(3, Types.NUMERIC);
                    ins.setNull(4, Types.DOUBLE);
                    ins.setNull(5, Types.BOOLEAN);
                    ins.setNull(6, Types.DATE);
                    ins.setNull(7, Types.TIMESTAMP);
                    ins.addBatch();
                }
                int[] counts = ins.executeBatch();
                check(counts.length == 3, "batch counts");
            }

            try (PreparedStatement q = c.prepareStatement(
                    "SELECT id, name, price, weight, ok, made, seen FROM jdbc_items WHERE id = ?")) {
                for (int round = 0; round < 8; round++) {
                    q.setLong(1, 1);
                    try (ResultSet r = q.executeQuery()) {
                        check(r.next(), "row 1");
                        check(r.getLong(1) == 1, "id");
                        check(r.getString(2).equals("bolt"), "name");
                        check(r.getBigDecimal(3).compareTo(new BigDecimal("1.25")) == 0, "price " + r.getBigDecimal(3));
                        check(r.getDouble(4) == 0.5, "weight");
                        check(r.getBoolean(5), "ok");
                        check(r.getDate(6).toString().equals("2024-02-29"), "made " + r.getDate(6));
                        check(r.getTimestamp(7).equals(Timestamp.valueOf("2024-02-29 12:34:56")), "seen " + r.getTimestamp(7));
                        check(!r.next(), "one row");
                    }
                }
                q.setLong(1, 13);
                try (ResultSet r = q.executeQuery()) {
                    check(r.next(), "row 13");
                    check(r.getString(2) == null && r.wasNull(), "NULL name");
                    check(r.getBigDecimal(3) == null, "NULL price");
                    r.getDouble(4);
                    check(r.wasNull(), "NULL weight");
                    check(r.getDate(6) == null, "NULL date");
                }
            }

            try (PreparedStatement q = c.prepareStatement(
                    "SELECT COUNT(*), SUM(price), MIN(name) FROM jdbc_items WHERE made >= ? AND ok = ?")) {
                q.setDate(1, Date.valueOf("2024-03-01"));
                q.setBoolean(2, true);
                try (ResultSet r = q.executeQuery()) {
                    check(r.next(), "aggregate row");
                    check(r.getLong(1) == 5, "count " + r.getLong(1));
                    check(r.getBigDecimal(2).compareTo(new BigDecimal("32.50")) == 0, "sum " + r.getBigDecimal(2));
                    check(r.getString(3).equals("part 10"), "min " + r.getString(3));
                }
            }

            // The driver opens a transaction with BEGIN when autocommit is off.
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.executeUpdate("UPDATE jdbc_items SET name = 'nut' WHERE id = 2");
            }
            c.commit();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement();
                    ResultSet r = s.executeQuery("SELECT name FROM jdbc_items WHERE id = 2")) {
                check(r.next() && r.getString(1).equals("nut"), "updated");
            }

            // Errors carry their SQLSTATE; the connection goes on after them.
            String[][] bad = {
                {"SELECT * FROM no_such_table", "42P01"},
                {"SELECT no_such_column FROM jdbc_items", "42703"},
                {"SELEC 1", "42601"},
                {"INSERT INTO jdbc_items (id) VALUES (1)", "23505"},
                {"SELECT CAST('x' AS BIGINT)", "22P02"},
            };
            for (String[] b : bad) {
                try (Statement s = c.createStatement()) {
                    s.executeQuery(b[0]);
                    throw new AssertionError("no error for " + b[0]);
                } catch (SQLException e) {
                    check(b[1].equals(e.getSQLState()), b[0] + ": " + e.getSQLState() + " " + e.getMessage());
                }
            }

            // DatabaseMetaData's table list.
            List<String> tables = new ArrayList<>();
            try (ResultSet r = c.getMetaData().getTables(null, null, "jdbc%", new String[] {"TABLE"})) {
                while (r.next()) {
                    tables.add(r.getString("TABLE_NAME"));
                }
            }
            check(tables.equals(List.of("jdbc_items", "jdbc_other")), "tables " + tables);
            // Its columns, with JDBC's types, sizes and nullability, and the primary key.
            List<String> columns = new ArrayList<>();
            try (ResultSet r = c.getMetaData().getColumns(null, null, "jdbc_items", null)) {
                while (r.next()) {
                    columns.add(r.getString("COLUMN_NAME") + " " + r.getInt("DATA_TYPE") + " "
                            + r.getString("TYPE_NAME") + " " + r.getInt("COLUMN_SIZE") + " "
                            + r.getInt("DECIMAL_DIGITS") + " " + r.getString("IS_NULLABLE") + " "
                            + r.getInt("ORDINAL_POSITION"));
                }
            }
            check(columns.equals(List.of(
                    "id " + Types.BIGINT + " int8 19 0 NO 1",
                    "name " + Types.VARCHAR + " varchar 2147483647 0 YES 2",
                    "price " + Types.NUMERIC + " numeric 12 2 YES 3",
                    "weight " + Types.DOUBLE + " float8 17 17 YES 4",
                    "ok " + Types.BIT + " bool 1 0 YES 5",
                    "made " + Types.DATE + " date 13 0 YES 6",
                    "seen " + Types.TIMESTAMP + " timestamp 29 6 YES 7")), "columns " + columns);
            try (ResultSet r = c.getMetaData().getPrimaryKeys(null, null, "jdbc_items")) {
                check(r.next(), "a primary key");
                check(r.getString("COLUMN_NAME").equals("id") && r.getInt("KEY_SEQ") == 1
                        && r.getString("PK_NAME").equals("jdbc_items_pkey"), "primary key");
                check(!r.next(), "one key column");
            }
            // The indexes, a row per index column (the primary key is hashed), and no foreign
            // keys: what tools (DBeaver, ...) read to draw a table.
            List<String> indexes = new ArrayList<>();
            try (ResultSet r = c.getMetaData().getIndexInfo(null, null, "jdbc_items", false, true)) {
                while (r.next()) {
                    indexes.add(r.getString("INDEX_NAME") + " " + r.getBoolean("NON_UNIQUE") + " "
                            + r.getShort("TYPE") + " " + r.getString("COLUMN_NAME"));
                }
            }
            check(indexes.equals(List.of("jdbc_items_pkey false " + DatabaseMetaData.tableIndexHashed + " id")),
                    "indexes " + indexes);
            try (ResultSet r = c.getMetaData().getImportedKeys(null, null, "jdbc_items")) {
                check(!r.next(), "no imported keys");
            }
            try (ResultSet r = c.getMetaData().getExportedKeys(null, null, "jdbc_items")) {
                check(!r.next(), "no exported keys");
            }
            List<String> schemas = new ArrayList<>();
            try (ResultSet r = c.getMetaData().getSchemas()) {
                while (r.next()) {
                    schemas.add(r.getString("TABLE_SCHEM"));
                }
            }
            check(schemas.contains("public"), "schemas " + schemas);

            try (Statement s = c.createStatement();
                    ResultSet r = s.executeQuery("SELECT COUNT(*) FROM jdbc_items")) {
                check(r.next() && r.getLong(1) == 14, "count");
            }

            // Keys the database generates, read back as JDBC's generated keys (the driver
            // adds RETURNING to the INSERT).
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE jdbc_events (id BIGSERIAL PRIMARY KEY, what VARCHAR NOT NULL)");
            }
            try (PreparedStatement ins = c.prepareStatement(
                    "INSERT INTO jdbc_events (what) VALUES (?)", Statement.RETURN_GENERATED_KEYS)) {
                for (int i = 1; i <= 3; i++) {
                    ins.setString(1, "event " + i);
                    check(ins.executeUpdate() == 1, "generated-key insert " + i);
                    try (ResultSet keys = ins.getGeneratedKeys()) {
                        check(keys.next() && keys.getLong("id") == i, "generated key " + i);
                    }
                }
            }
            try (ResultSet r = c.getMetaData().getColumns(null, null, "jdbc_events", "id")) {
                check(r.next() && r.getString("IS_AUTOINCREMENT").equals("YES"), "id is autoincrement");
                check(r.getString("COLUMN_DEF").startsWith("nextval("), "id's default " + r.getString("COLUMN_DEF"));
            }

            // A foreign key: enforced (SQLState 23503), and listed from both of its tables.
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE jdbc_notes (id BIGINT PRIMARY KEY, "
                        + "event_id BIGINT REFERENCES jdbc_events ON DELETE RESTRICT)");
                check(s.executeUpdate("INSERT INTO jdbc_notes VALUES (1, 2)") == 1, "a note");
                try {
                    s.executeUpdate("INSERT INTO jdbc_notes VALUES (2, 99)");
                    check(false, "a note of no event was stored");
                } catch (SQLException e) {
                    check("23503".equals(e.getSQLState()), "foreign key violation " + e.getSQLState());
                }
            }
            String expected = "jdbc_events.id <- jdbc_notes.event_id #1 jdbc_notes_event_id_fkey on jdbc_events_pkey"
                    + " update " + DatabaseMetaData.importedKeyNoAction + " delete " + DatabaseMetaData.importedKeyRestrict;
            try (ResultSet r = c.getMetaData().getImportedKeys(null, null, "jdbc_notes")) {
                check(r.next() && describeKey(r).equals(expected), "imported key");
                check(!r.next(), "one imported key");
            }
            try (ResultSet r = c.getMetaData().getExportedKeys(null, null, "jdbc_events")) {
                check(r.next() && describeKey(r).equals(expected), "exported key");
                check(!r.next(), "one exported key");
            }
        }
        System.out.println("jdbc session ok");
    }
}
