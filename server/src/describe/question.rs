//! What a describe query asks ([`Question`]) and which columns ([`Item`]s of its select
//! list), as [`super::recognize`] reads them.

use weir_operators::Value;

/// Which catalog question a describe query asks.
#[derive(Clone, Debug, PartialEq)]
pub enum Question {
    /// The relations whose names match psql's pattern: `(oid, schema, name)`.
    Lookup {
        /// psql's `^(name)$` pattern.
        pattern: String,
    },
    /// One relation's kind and flags (`pg_class`).
    Relation {
        /// The relation's object id.
        oid: i64,
    },
    /// One relation's columns (`pg_attribute`).
    Attributes {
        /// The relation's object id.
        oid: i64,
    },
    /// One table's indexes (`pg_index`).
    Indexes {
        /// The table's object id.
        oid: i64,
    },
    /// A view's query (`pg_get_viewdef`, asked by `\d+`).
    ViewDefinition {
        /// The view's object id.
        oid: i64,
    },
    /// The relations that pass filters on `relname`, `relkind`, `relpersistence` and
    /// `nspname`, a row each with `pg_class`'s columns (SQLAlchemy's `has_table`,
    /// `get_table_names`, its tables' object ids, options and comments, and its foreign-key
    /// and check-constraint lists are [`Question::ConstraintDefinitions`]).
    Relations {
        /// Each filter: the column, whether it is negated (`!=`), and its values.
        filters: Vec<Filter>,
    },
    /// The columns of the relations that pass filters, a row each, by relation name and
    /// position (SQLAlchemy's `get_columns`).
    Columns {
        /// As [`Question::Relations`]'s.
        filters: Vec<Filter>,
    },
    /// The constraints of one kind (`contype`: `p` a primary key, `u` unique) on the
    /// relations with these object ids, each with its columns as an array (SQLAlchemy's
    /// primary-key and unique-constraint reflection).
    Constraints {
        /// The constraint kind.
        kind: TypeName,
        /// The relations' object ids.
        oids: Vec<TypeName>,
    },
    /// The secondary indexes of the tables with these object ids, a row each with its
    /// columns as arrays (SQLAlchemy's `get_indexes`).
    TableIndexes {
        /// The tables' object ids.
        oids: Vec<TypeName>,
    },
    /// Index access methods (`pg_am`), all or the one named: `btree` and `hash`, the two
    /// weir's indexes are described with.
    AccessMethods {
        /// The name asked for.
        name: Option<TypeName>,
    },
    /// JDBC's `DatabaseMetaData.getTables`: the relations whose name (and schema) match
    /// LIKE patterns and whose kind is one asked for, a row each.
    JdbcTables {
        /// The name's LIKE pattern (`None`: every name).
        name: Option<String>,
        /// The schema's LIKE pattern (`None`: every schema).
        schema: Option<String>,
        /// The kinds asked for (`r` tables, `v` views, `f` foreign tables, ...).
        kinds: Vec<char>,
    },
    /// JDBC's `DatabaseMetaData.getColumns`: the columns of the relations whose name (and
    /// schema) match, whose own name matches, a row each with `pg_attribute`'s and
    /// `pg_type`'s columns (the driver derives the JDBC types from the type ids).
    JdbcColumns {
        /// The relation name's LIKE pattern (`None`: every relation).
        table: Option<String>,
        /// The schema's LIKE pattern (`None`: every schema).
        schema: Option<String>,
        /// The column name's LIKE pattern (`None`: every column).
        column: Option<String>,
    },
    /// JDBC's `DatabaseMetaData.getPrimaryKeys`: a table's primary-key columns, a row each
    /// with its position in the key and the key's name.
    JdbcPrimaryKeys {
        /// The table's name.
        table: TypeName,
    },
    /// JDBC's `DatabaseMetaData.getIndexInfo`: a table's indexes (the primary key and the
    /// secondary ones), a row per index column.
    JdbcIndexInfo {
        /// The table's name.
        table: TypeName,
        /// Only the unique ones (`getIndexInfo(..., unique = true, ...)`).
        unique_only: bool,
    },
    /// A server setting from `pg_settings` (JDBC asks `max_index_keys` before
    /// `getImportedKeys`): a row with its value, none for a setting weir does not report.
    Setting {
        /// The setting's name.
        name: TypeName,
    },
    /// The schemas (`pg_namespace`): `public` and `information_schema`, and with `system`
    /// `pg_catalog` (SQLAlchemy's `get_schema_names` leaves `pg_` names out).
    Schemas {
        /// Whether `pg_catalog` is listed.
        system: bool,
    },
    /// A type by name (`pg_type ... WHERE t.oid = to_regtype(name)`, as psycopg's
    /// `TypeInfo.fetch` asks): a row for a type weir's values have, none for another.
    TypeLookup {
        /// The name as a literal of the query, or the parameter (0-based) that gives it.
        name: TypeName,
    },
    /// psql's "Foreign-key constraints" of `\d` (psql asks for a table with triggers, which
    /// weir reports for a table with foreign keys or referenced by one): the table's keys,
    /// by name.
    ForeignKeys {
        /// The table's object id.
        oid: i64,
    },
    /// psql's "Check constraints" of `\d` (psql asks for a table whose `relchecks` is not
    /// 0): the table's `CHECK` constraints and their definitions, by name.
    CheckConstraints {
        /// The table's object id.
        oid: i64,
    },
    /// psql's "Referenced by" of `\d`: the foreign keys that reference the table, by name.
    ReferencedBy {
        /// The table's object id.
        oid: i64,
    },
    /// SQLAlchemy's foreign-key and check-constraint reflection: the constraints of one kind
    /// (`f` foreign keys, `c` checks) of the relations that pass filters, a row
    /// each with its definition; a relation without one is a row whose constraint columns
    /// are NULL (the query's outer join).
    ConstraintDefinitions {
        /// The constraint kind.
        kind: TypeName,
        /// As [`Question::Relations`]'s.
        filters: Vec<Filter>,
    },
    /// JDBC's `DatabaseMetaData.getImportedKeys` (the foreign keys of a table) and
    /// `getExportedKeys` (those that reference it): a row per key column.
    JdbcForeignKeys {
        /// The table's name.
        table: TypeName,
        /// `getExportedKeys`.
        exported: bool,
    },
    /// psql's `\d` of a sequence: its type, bounds and step (`pg_sequence`).
    Sequence {
        /// The sequence's object id.
        oid: i64,
    },
    /// psql's "Owned by" of a sequence's `\d` (`pg_depend`): the `SERIAL` or identity
    /// column whose sequence it is, as `schema.table.column`, and how (`a`: a `SERIAL`
    /// column's, `i`: an identity column's).
    SequenceOwner {
        /// The sequence's object id.
        oid: i64,
    },
    /// What weir never has (policies, extended statistics, publications, inheritance,
    /// triggers, rules): no rows.
    Nothing,
}

/// One condition of a [`Question::Relations`]: `column = value`, `column IN (values)`,
/// `column = ANY (ARRAY[values])`, or with `negated` `column != value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    /// `relname`, `relkind`, `relpersistence` or `nspname`.
    pub column: String,
    /// `!=` / `<>`.
    pub negated: bool,
    /// The values: written in the query, or parameters.
    pub values: Vec<TypeName>,
}

/// Where a value of the query is (a type lookup's name, a filter's value, an object id).
#[derive(Clone, Debug, PartialEq)]
pub enum TypeName {
    /// Written in the query.
    Literal(String),
    /// The query's `n`-th parameter (0-based).
    Param(usize),
}

/// One item of the query's select list.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A catalog column or function, by its name (`relkind`, `format_type`) or alias.
    Named(String),
    /// A constant.
    Literal(Value),
}

/// A recognized describe query: the question and the columns asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct Describe {
    /// What is asked.
    pub question: Question,
    /// The select list, in order.
    pub items: Vec<Item>,
    /// The number of parameters the query takes (its highest `$n`).
    pub params: usize,
}
