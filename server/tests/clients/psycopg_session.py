"""A psycopg 3 session against `weir serve`, as a Python service would run one.

Run by `server/tests/postgres.rs` (test `psycopg_runs_a_session_against_the_server`) with the
server's port as the only argument; exits non-zero, saying what differed, on any surprise.
"""

import datetime
import decimal
import sys

import psycopg
from psycopg import errors


def main(port: int) -> None:
    conninfo = f"host=127.0.0.1 port={port} user=weir dbname=shop"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE py_items (id BIGINT PRIMARY KEY, name VARCHAR, price DECIMAL(10,2), "
            "weight DOUBLE, sold BOOLEAN, made DATE, seen TIMESTAMP)"
        )
        rows = [
            (1, "bolt", decimal.Decimal("0.25"), 1.5, True, datetime.date(2026, 1, 31),
             datetime.datetime(2026, 1, 31, 12, 30, 5)),
            (2, "nut", decimal.Decimal("0.10"), 0.5, False, datetime.date(2025, 12, 1),
             datetime.datetime(2025, 12, 1, 0, 0, 0)),
            (3, None, None, None, None, None, None),
        ]
        with conn.cursor() as cur:
            # Parameters bound by the extended protocol, the statement prepared once.
            cur.executemany(
                "INSERT INTO py_items VALUES (%s, %s, %s, %s, %s, %s, %s)", rows
            )
        got = conn.execute("SELECT * FROM py_items ORDER BY id").fetchall()
        assert got == rows, f"text results: {got!r}"
        with conn.cursor(binary=True) as cur:
            got = cur.execute("SELECT * FROM py_items ORDER BY id").fetchall()
        assert got == rows, f"binary results: {got!r}"
        one = conn.execute(
            "SELECT name FROM py_items WHERE id = %s", (2,), prepare=True
        ).fetchone()
        assert one == ("nut",), one

        # Errors arrive as psycopg's exception for their SQLSTATE.
        try:
            conn.execute("SELECT * FROM no_such_table")
            raise AssertionError("a query of an unknown table succeeded")
        except errors.UndefinedTable:
            pass
        try:
            conn.execute("INSERT INTO py_items (id, name) VALUES (1, 'again')")
            raise AssertionError("a duplicate key was accepted")
        except errors.UniqueViolation:
            pass
        # (`x / 0` is NULL in weir, as in SQLite; zero to a negative power is an error.)
        try:
            conn.execute("SELECT POWER(0, -1) FROM py_items")
            raise AssertionError("zero to a negative power succeeded")
        except errors.DivisionByZero:
            pass
        try:
            conn.execute("SELEC 1")
            raise AssertionError("a syntax error was accepted")
        except errors.SyntaxError:
            pass

        # COPY through the protocol, both ways.
        with conn.cursor() as cur:
            with cur.copy("COPY py_items (id, name) FROM STDIN") as copy:
                for i in range(10, 20):
                    copy.write_row((i, f"copied{i}"))
            out = []
            with cur.copy("COPY (SELECT id, name FROM py_items WHERE id >= 10 ORDER BY id) TO STDOUT") as copy:
                for row in copy.rows():
                    out.append(row)
        assert out == [(str(i), f"copied{i}") for i in range(10, 20)], out

        server_version = conn.info.parameter_status("server_version")
        assert server_version and "weir" in server_version, server_version

    # Without autocommit psycopg opens a transaction for the first statement: weir commits
    # each statement as it runs, and COMMIT is accepted.
    with psycopg.connect(conninfo) as conn:
        conn.execute("INSERT INTO py_items (id, name) VALUES (100, 'in a block')")
        conn.commit()
        n = conn.execute("SELECT COUNT(*) FROM py_items").fetchone()[0]
        assert n == 14, n
    print("psycopg session ok")


if __name__ == "__main__":
    main(int(sys.argv[1]))
