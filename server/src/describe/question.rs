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
    /// The names of the relations that pass filters on `relname`, `relkind`,
    /// `relpersistence` and `nspname` (SQLAlchemy's `has_table` and `get_table_names`).
    RelationNames {
        /// Each filter: the column, whether it is negated (`!=`), and its values.
        filters: Vec<Filter>,
    },
    /// A type by name (`pg_type ... WHERE t.oid = to_regtype(name)`, as psycopg's
    /// `TypeInfo.fetch` asks): a row for a type weir's values have, none for another.
    TypeLookup {
        /// The name as a literal of the query, or the parameter (0-based) that gives it.
        name: TypeName,
    },
    /// What weir never has (policies, extended statistics, publications, inheritance,
    /// triggers, rules): no rows.
    Nothing,
}

/// One condition of a [`Question::RelationNames`]: `column = value`, `column IN (values)`,
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

/// Where a type lookup's name is.
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
}
