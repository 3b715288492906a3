//! psql's `\d NAME` and `\d+ NAME`: the catalog queries psql sends to describe a relation,
//! recognized by what they read and answered from weir's catalog.
//!
//! psql finds the relations a name pattern names (`pg_class` joined with `pg_namespace`),
//! then reads each one's flags (`pg_class`), columns (`pg_attribute`), indexes (`pg_index`),
//! and asks for what weir never has (row-level policies, extended statistics, publications,
//! inheritance). Each query is recognized by its `FROM` and its select list; every item of
//! the select list is answered by the catalog column or function it names (`c.relkind`,
//! `pg_catalog.format_type(...)`, an alias such as `AS attcollation`) or is a literal, so
//! the answer has the columns psql asked for, in its order, whichever psql version sent it.
//! What weir has no notion of (defaults, collations, tablespaces, access methods) is NULL.

use sqlparser::tokenizer::{Token, TokenWithSpan};
use weir_operators::{DataType, Value};
use weir_runtime::Cluster;

use crate::catalog::matches;

/// The first object id given to a relation (PostgreSQL's first id for user objects).
const FIRST_OID: i64 = 16384;

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

/// The types a type lookup finds: weir's column types and the integer and float widths
/// clients bind (name, oid, array type's oid, `regtype` text; other names it answers to).
const TYPES: [(&str, i64, i64, &str, &[&str]); 11] = [
    ("bool", 16, 1000, "boolean", &["boolean"]),
    ("int8", 20, 1016, "bigint", &["bigint"]),
    ("int2", 21, 1005, "smallint", &["smallint"]),
    ("int4", 23, 1007, "integer", &["integer", "int"]),
    ("text", 25, 1009, "text", &[]),
    ("float4", 700, 1021, "real", &["real"]),
    (
        "float8",
        701,
        1022,
        "double precision",
        &["double precision"],
    ),
    (
        "varchar",
        1043,
        1015,
        "character varying",
        &["character varying"],
    ),
    ("date", 1082, 1182, "date", &[]),
    (
        "timestamp",
        1114,
        1115,
        "timestamp without time zone",
        &["timestamp without time zone"],
    ),
    ("numeric", 1700, 1231, "numeric", &["decimal"]),
];

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

/// What psql is told of one table or view.
#[derive(Clone, Debug, PartialEq)]
pub struct Relation {
    /// Its name.
    pub name: String,
    /// Its query, for a view.
    pub view_sql: Option<String>,
    /// An external table (read in place from files): PostgreSQL's foreign table.
    pub external: bool,
    /// Its columns, in order.
    pub columns: Vec<ColumnInfo>,
    /// Its indexes, the primary key's first.
    pub indexes: Vec<IndexInfo>,
}

impl Relation {
    /// PostgreSQL's kind of relation: `r` a table, `v` a view, `f` a foreign (external) table.
    pub fn relkind(&self) -> char {
        if self.view_sql.is_some() {
            'v'
        } else if self.external {
            'f'
        } else {
            'r'
        }
    }
}

/// One column of a [`Relation`].
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnInfo {
    /// Column name.
    pub name: String,
    /// PostgreSQL's name of its type, as `format_type` writes it (`numeric(12,2)`).
    pub type_name: String,
    /// Whether NULL is refused (a key column or `NOT NULL`).
    pub not_null: bool,
    /// Whether values are stored out of line in PostgreSQL's terms (text): `\d+`'s storage.
    pub varlena: bool,
}

/// One index of a [`Relation`].
#[derive(Clone, Debug, PartialEq)]
pub struct IndexInfo {
    /// Index name (`<table>_pkey` for the primary key).
    pub name: String,
    /// Its columns, in order.
    pub columns: Vec<String>,
    /// The primary key.
    pub primary: bool,
    /// No two rows share a key.
    pub unique: bool,
    /// The access method as psql prints it: `hash` for the primary key (rows are placed and
    /// found by the key's hash), `btree` for a secondary index (an ordered set).
    pub method: &'static str,
}

/// The object id psql knows relation `name` by: stable for a name (a hash of it), so the
/// queries of one `\d` agree without the server keeping state.
pub fn oid(name: &str) -> i64 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.to_lowercase().bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    FIRST_OID + i64::from(h % (i32::MAX as u32 - FIRST_OID as u32))
}

/// The catalog relations a query reads, lower-cased, without the `pg_catalog.` prefix
/// (named with it anywhere, or without it right after `FROM` or `JOIN`).
fn catalog_tables(code: &[&Token]) -> Vec<String> {
    let qualified = code.windows(3).filter_map(|w| match (w[0], w[1], w[2]) {
        (Token::Word(s), Token::Period, Token::Word(t))
            if s.value.eq_ignore_ascii_case("pg_catalog") =>
        {
            Some(t.value.to_lowercase())
        }
        _ => None,
    });
    let bare = code.windows(2).filter_map(|w| match (w[0], w[1]) {
        (Token::Word(k), Token::Word(t))
            if (k.value.eq_ignore_ascii_case("FROM") || k.value.eq_ignore_ascii_case("JOIN"))
                && t.value.to_lowercase().starts_with("pg_") =>
        {
            Some(t.value.to_lowercase())
        }
        _ => None,
    });
    qualified.chain(bare).collect()
}

/// Whether `sql` is one of psql's describe queries, and which.
pub fn psql_describe(tokens: &[TokenWithSpan]) -> Option<Describe> {
    let code: Vec<&Token> = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::EOF | Token::SemiColon))
        .collect();
    if !matches!(code.first(), Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("SELECT")) {
        return None;
    }
    let items = select_list(&code[1..])?;
    let tables = catalog_tables(&code);
    let reads = |t: &str| tables.iter().any(|x| x == t);
    let named = |n: &str| items.iter().any(|i| *i == Item::Named(n.to_string()));
    let oid = || quoted_oid(&code);
    let question =
        if reads("pg_class") && reads("pg_namespace") && items == [Item::Named("relname".into())] {
            Question::RelationNames {
                filters: filters(&code)?,
            }
        } else if reads("pg_class") && reads("pg_namespace") && named("nspname") {
            let pattern = pattern(&code)?;
            if !named("relname") || !named("oid") {
                return None;
            }
            Question::Lookup { pattern }
        } else if reads("pg_index") && named("indisprimary") {
            Question::Indexes { oid: oid()? }
        } else if reads("pg_attribute") && named("attname") && named("format_type") {
            Question::Attributes { oid: oid()? }
        } else if reads("pg_class") && named("relchecks") && named("relkind") {
            Question::Relation { oid: oid()? }
        } else if reads("pg_type") && calls(&code, "to_regtype") {
            Question::TypeLookup {
                name: argument(&code, "to_regtype")?,
            }
        } else if named("pg_get_viewdef") && items.len() == 1 {
            Question::ViewDefinition { oid: oid()? }
        } else if [
            "pg_policy",
            "pg_statistic_ext",
            "pg_publication",
            "pg_inherits",
            "pg_trigger",
            "pg_rewrite",
        ]
        .iter()
        .any(|t| reads(t))
        {
            Question::Nothing
        } else {
            return None;
        };
    Some(Describe { question, items })
}

/// The items of a select list (the tokens after `SELECT`, up to the `FROM` outside any
/// parentheses, or the end).
fn select_list(code: &[&Token]) -> Option<Vec<Item>> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut end = code.len();
    for (i, t) in code.iter().enumerate() {
        match t {
            Token::LParen | Token::LBracket => depth += 1,
            Token::RParen | Token::RBracket => depth -= 1,
            Token::Comma if depth == 0 => {
                items.push(item(&code[start..i])?);
                start = i + 1;
            }
            Token::Word(w) if depth == 0 && w.value.eq_ignore_ascii_case("FROM") => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    items.push(item(&code[start..end])?);
    Some(items)
}

/// What one select item names: its alias, else the function it calls or the column it
/// reads (the last part of `c.relkind`), or the constant it is.
fn item(tokens: &[&Token]) -> Option<Item> {
    let word = |t: &Token| match t {
        Token::Word(w) => Some(w.value.to_lowercase()),
        _ => None,
    };
    if let [.., Token::Word(as_), last] = tokens {
        if as_.value.eq_ignore_ascii_case("AS") {
            return word(last).map(Item::Named);
        }
    }
    match tokens {
        [] => None,
        [Token::SingleQuotedString(s)] => Some(Item::Literal(Value::Str(s.clone()))),
        [Token::Number(n, _)] => Some(Item::Literal(
            n.parse().map(Value::Int).unwrap_or(Value::Null),
        )),
        [Token::Word(w)] if w.value.eq_ignore_ascii_case("NULL") => {
            Some(Item::Literal(Value::Null))
        }
        [Token::Word(w)] if w.value.eq_ignore_ascii_case("TRUE") => {
            Some(Item::Literal(Value::Bool(true)))
        }
        [Token::Word(w)] if w.value.eq_ignore_ascii_case("FALSE") => {
            Some(Item::Literal(Value::Bool(false)))
        }
        _ => {
            let call = tokens.iter().position(|t| matches!(t, Token::LParen));
            let named = match call {
                Some(0) => None,
                Some(at) => word(tokens[at - 1]),
                None => tokens.iter().rev().find_map(|t| word(t)),
            };
            Some(Item::Named(named.unwrap_or_default()))
        }
    }
}

/// The columns a relation-name query filters on.
const FILTERED: [&str; 4] = ["relname", "relkind", "relpersistence", "nspname"];

/// The filters of a relation-name query's WHERE: each value (a string or a parameter) is
/// the last filtered column's, compared as the last operator said. `None` when a value of
/// the WHERE is not a filtered column's (the query asks more than this answers).
fn filters(code: &[&Token]) -> Option<Vec<Filter>> {
    let at = code
        .iter()
        .position(|t| matches!(t, Token::Word(w) if w.value.eq_ignore_ascii_case("WHERE")))?;
    let mut out: Vec<Filter> = Vec::new();
    let mut column: Option<String> = None;
    let mut negated = false;
    for t in &code[at + 1..] {
        match t {
            Token::Word(w) if FILTERED.contains(&w.value.to_lowercase().as_str()) => {
                column = Some(w.value.to_lowercase());
                negated = false;
            }
            Token::Word(w) if w.value.eq_ignore_ascii_case("ORDER") => break,
            Token::Neq => negated = true,
            Token::SingleQuotedString(_) | Token::Placeholder(_) => {
                let value = match t {
                    Token::SingleQuotedString(v) => TypeName::Literal(v.clone()),
                    Token::Placeholder(p) => {
                        TypeName::Param(p.strip_prefix('$')?.parse::<usize>().ok()?.checked_sub(1)?)
                    }
                    _ => return None,
                };
                let column = column.clone()?;
                match out
                    .iter_mut()
                    .find(|f| f.column == column && f.negated == negated)
                {
                    Some(f) => f.values.push(value),
                    None => out.push(Filter {
                        column,
                        negated,
                        values: vec![value],
                    }),
                }
            }
            _ => {}
        }
    }
    Some(out)
}

/// Whether the query calls function `f`.
fn calls(code: &[&Token], f: &str) -> bool {
    code.windows(2).any(|w| {
        matches!((w[0], w[1]), (Token::Word(n), Token::LParen) if n.value.eq_ignore_ascii_case(f))
    })
}

/// The argument of the query's call of `f`: a string, or a parameter (`$n`).
fn argument(code: &[&Token], f: &str) -> Option<TypeName> {
    code.windows(3).find_map(|w| match (w[0], w[1], w[2]) {
        (Token::Word(n), Token::LParen, arg) if n.value.eq_ignore_ascii_case(f) => match arg {
            Token::SingleQuotedString(s) => Some(TypeName::Literal(s.clone())),
            Token::Placeholder(p) => p
                .strip_prefix('$')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| n >= 1)
                .map(|n| TypeName::Param(n - 1)),
            _ => None,
        },
        _ => None,
    })
}

/// psql's name pattern: the string after `OPERATOR(pg_catalog.~)`.
fn pattern(code: &[&Token]) -> Option<String> {
    let at = code.iter().position(|t| matches!(t, Token::Tilde))?;
    code[at..].iter().find_map(|t| match t {
        Token::SingleQuotedString(s) => Some(s.clone()),
        _ => None,
    })
}

/// The object id the query asks about: its first quoted number (`c.oid = '16415'`).
fn quoted_oid(code: &[&Token]) -> Option<i64> {
    code.iter().find_map(|t| match t {
        Token::SingleQuotedString(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        _ => None,
    })
}

/// The type of the values of catalog column (or function) `name`.
fn named_type(name: &str) -> DataType {
    match name {
        "oid" | "relchecks" | "reltablespace" | "attnum" | "stxstattarget" | "attstattarget" => {
            DataType::Int64
        }
        "relhasindex"
        | "relhasrules"
        | "relhastriggers"
        | "relrowsecurity"
        | "relforcerowsecurity"
        | "relhasoids"
        | "relispartition"
        | "attnotnull"
        | "indisprimary"
        | "indisunique"
        | "indisclustered"
        | "indisvalid"
        | "condeferrable"
        | "condeferred"
        | "indisreplident"
        | "polpermissive"
        | "inhdetachpending"
        | "ndist_enabled"
        | "deps_enabled"
        | "mcv_enabled" => DataType::Boolean,
        _ => DataType::Utf8,
    }
}

impl Describe {
    /// The result's columns: one per select item, named for it.
    pub fn columns(&self) -> Vec<(String, DataType)> {
        self.items
            .iter()
            .map(|i| match i {
                Item::Named(n) => (n.clone(), named_type(n)),
                Item::Literal(v) => (
                    "?column?".to_string(),
                    match v {
                        Value::Int(_) => DataType::Int64,
                        Value::Bool(_) => DataType::Boolean,
                        _ => DataType::Utf8,
                    },
                ),
            })
            .collect()
    }

    /// Whether the answer needs the cluster's relations (a type lookup's does not).
    pub fn reads_relations(&self) -> bool {
        !matches!(
            self.question,
            Question::TypeLookup { .. } | Question::Nothing
        )
    }

    /// The parameters the query takes (a type lookup's name, a relation-name query's
    /// values).
    pub fn params(&self) -> usize {
        let count = |v: &TypeName| match v {
            TypeName::Param(n) => n + 1,
            TypeName::Literal(_) => 0,
        };
        match &self.question {
            Question::TypeLookup { name } => count(name),
            Question::RelationNames { filters } => filters
                .iter()
                .flat_map(|f| f.values.iter().map(count))
                .max()
                .unwrap_or(0),
            _ => 0,
        }
    }

    /// The answer's rows, from `relations` and the statement's `params`.
    pub fn rows(&self, relations: &[Relation], params: &[Value]) -> Vec<Vec<Value>> {
        let find = |oid: i64| relations.iter().find(|r| self::oid(&r.name) == oid);
        let answer = |values: &dyn Fn(&str) -> Value| -> Vec<Value> {
            self.items
                .iter()
                .map(|i| match i {
                    Item::Named(n) => values(n),
                    Item::Literal(v) => v.clone(),
                })
                .collect()
        };
        match &self.question {
            Question::Lookup { pattern } => {
                let mut found: Vec<&Relation> = relations
                    .iter()
                    .filter(|r| matches(pattern, &r.name))
                    .collect();
                found.sort_by(|a, b| a.name.cmp(&b.name));
                found
                    .into_iter()
                    .map(|r| {
                        answer(&|n| match n {
                            "oid" => Value::Int(oid(&r.name)),
                            "nspname" => text("public"),
                            "relname" => text(&r.name),
                            _ => Value::Null,
                        })
                    })
                    .collect()
            }
            Question::Relation { oid } => find(*oid)
                .map(|r| vec![answer(&|n| class_value(r, n))])
                .unwrap_or_default(),
            Question::Attributes { oid } => find(*oid)
                .map(|r| {
                    r.columns
                        .iter()
                        .enumerate()
                        .map(|(i, c)| answer(&|n| attribute_value(c, i, n)))
                        .collect()
                })
                .unwrap_or_default(),
            Question::Indexes { oid } => find(*oid)
                .map(|r| {
                    r.indexes
                        .iter()
                        .map(|ix| answer(&|n| index_value(r, ix, n)))
                        .collect()
                })
                .unwrap_or_default(),
            Question::ViewDefinition { oid } => find(*oid)
                .and_then(|r| r.view_sql.as_deref())
                .map(|sql| vec![vec![text(sql)]])
                .unwrap_or_default(),
            Question::RelationNames { filters } => {
                let mut names: Vec<&str> = relations
                    .iter()
                    .filter(|r| filters.iter().all(|f| passes(r, f, params)))
                    .map(|r| r.name.as_str())
                    .collect();
                names.sort();
                names.into_iter().map(|n| vec![text(n)]).collect()
            }
            Question::TypeLookup { name } => {
                let name = value_of(name, params);
                let wanted =
                    name.map(|n| n.trim().trim_start_matches("pg_catalog.").to_lowercase());
                TYPES
                    .iter()
                    .filter(|(typname, _, _, regtype, aliases)| {
                        wanted
                            .as_deref()
                            .is_some_and(|w| w == *typname || w == *regtype || aliases.contains(&w))
                    })
                    .map(|&(typname, oid, array, regtype, _)| {
                        answer(&|n| match n {
                            "name" | "typname" => text(typname),
                            "oid" => Value::Int(oid),
                            "array_oid" | "typarray" => Value::Int(array),
                            "regtype" => text(regtype),
                            "delimiter" | "typdelim" => text(","),
                            _ => Value::Null,
                        })
                    })
                    .collect()
            }
            Question::Nothing => Vec::new(),
        }
    }
}

/// A value of the query: written in it, or the parameter's (text).
fn value_of<'a>(v: &'a TypeName, params: &'a [Value]) -> Option<&'a str> {
    match v {
        TypeName::Literal(n) => Some(n.as_str()),
        TypeName::Param(i) => match params.get(*i) {
            Some(Value::Str(n)) => Some(n.as_str()),
            _ => None,
        },
    }
}

/// Whether relation `r` passes filter `f` (every relation is in schema `public` and
/// persistent, `p`).
fn passes(r: &Relation, f: &Filter, params: &[Value]) -> bool {
    let own = match f.column.as_str() {
        "relname" => r.name.to_lowercase(),
        "relkind" => r.relkind().to_string(),
        "relpersistence" => "p".to_string(),
        _ => "public".to_string(),
    };
    let matched = f.values.iter().any(|v| {
        value_of(v, params).is_some_and(|v| {
            if f.column == "relkind" {
                v == own
            } else {
                v.to_lowercase() == own
            }
        })
    });
    matched != f.negated
}

fn text(s: &str) -> Value {
    Value::Str(s.to_string())
}

/// `pg_class`'s columns for `r`.
fn class_value(r: &Relation, name: &str) -> Value {
    let view = r.view_sql.is_some();
    match name {
        "relchecks" | "reltablespace" => Value::Int(0),
        "relkind" => text(&r.relkind().to_string()),
        "relhasindex" => Value::Bool(!r.indexes.is_empty()),
        "relhasrules"
        | "relhastriggers"
        | "relrowsecurity"
        | "relforcerowsecurity"
        | "relhasoids"
        | "relispartition" => Value::Bool(false),
        "relpersistence" => text("p"),
        "relreplident" => text(if view { "n" } else { "d" }),
        "relname" => text(&r.name),
        "oid" => Value::Int(oid(&r.name)),
        // `\d+`'s reloptions (`array_to_string(...)`): none.
        "array_to_string" => text(""),
        _ => Value::Null,
    }
}

/// `pg_attribute`'s columns for column `c`, the `i`-th.
fn attribute_value(c: &ColumnInfo, i: usize, name: &str) -> Value {
    match name {
        "attname" => text(&c.name),
        "format_type" => text(&c.type_name),
        "attnotnull" => Value::Bool(c.not_null),
        "attnum" => Value::Int(i as i64 + 1),
        "attidentity" | "attgenerated" | "attcompression" => text(""),
        "attstorage" => text(if c.varlena { "x" } else { "p" }),
        _ => Value::Null,
    }
}

/// `pg_index`'s (and its constraint's) columns for index `ix` of `r`.
fn index_value(r: &Relation, ix: &IndexInfo, name: &str) -> Value {
    let columns = ix.columns.join(", ");
    match name {
        "relname" => text(&ix.name),
        "indisprimary" => Value::Bool(ix.primary),
        "indisunique" => Value::Bool(ix.unique || ix.primary),
        "indisclustered" | "condeferrable" | "condeferred" | "indisreplident" => Value::Bool(false),
        "indisvalid" => Value::Bool(true),
        "pg_get_indexdef" => text(&format!(
            "CREATE {}INDEX {} ON public.{} USING {} ({columns})",
            if ix.unique || ix.primary {
                "UNIQUE "
            } else {
                ""
            },
            ix.name,
            r.name,
            ix.method
        )),
        "pg_get_constraintdef" if ix.primary => text(&format!("PRIMARY KEY ({columns})")),
        "contype" if ix.primary => text("p"),
        "reltablespace" => Value::Int(0),
        _ => Value::Null,
    }
}

/// PostgreSQL's name of `t`, as `format_type` writes it.
pub fn format_type(t: DataType) -> String {
    match t {
        DataType::Int64 => "bigint".into(),
        DataType::Float64 => "double precision".into(),
        DataType::Utf8 => "character varying".into(),
        DataType::Boolean => "boolean".into(),
        DataType::Decimal { precision, scale } => format!("numeric({precision},{scale})"),
        DataType::Date => "date".into(),
        DataType::Timestamp => "timestamp without time zone".into(),
    }
}

/// The tables and views of `cluster`, as psql is told of them: from the catalog, and a
/// view's columns from `information_schema.columns`.
pub fn relations(cluster: &Cluster) -> weir_runtime::Result<Vec<Relation>> {
    let mut out: Vec<Relation> = cluster
        .tables()
        .into_iter()
        .map(|t| {
            let name_of = |i: usize| t.schema.fields[i].name.clone();
            let mut indexes = Vec::new();
            if !t.primary_key.is_empty() {
                indexes.push(IndexInfo {
                    name: format!("{}_pkey", t.name),
                    columns: t.primary_key.iter().map(|&i| name_of(i)).collect(),
                    primary: true,
                    unique: true,
                    method: "hash",
                });
            }
            let mut secondary: Vec<IndexInfo> = t
                .indexes
                .iter()
                .map(|ix| IndexInfo {
                    name: ix.name.clone(),
                    columns: std::iter::once(ix.column)
                        .chain(ix.further.iter().copied())
                        .map(name_of)
                        .collect(),
                    primary: false,
                    unique: ix.unique,
                    method: "btree",
                })
                .collect();
            secondary.sort_by(|a, b| a.name.cmp(&b.name));
            indexes.extend(secondary);
            let columns = t
                .schema
                .fields
                .iter()
                .enumerate()
                .map(|(i, f)| ColumnInfo {
                    name: f.name.clone(),
                    type_name: format_type(f.data_type),
                    not_null: t.primary_key.contains(&i) || t.not_null.contains(&i),
                    varlena: f.data_type == DataType::Utf8,
                })
                .collect();
            Relation {
                name: t.name.clone(),
                view_sql: None,
                external: t.external.is_some(),
                columns,
                indexes,
            }
        })
        .collect();
    let views = cluster.views();
    if views.is_empty() {
        return Ok(out);
    }
    // A view's columns are what its query gives: the planner binds it for
    // information_schema.columns.
    let columns = cluster.query(
        "SELECT table_name, column_name, data_type, numeric_precision, numeric_scale \
         FROM information_schema.columns ORDER BY table_name, ordinal_position",
        &[],
    )?;
    let columns = columns.rows();
    for v in views {
        let columns = columns
            .iter()
            .filter(|c| matches!(c.first(), Some(Value::Str(t)) if *t == v.name))
            .map(|c| {
                let get = |i: usize| c.get(i).cloned().unwrap_or(Value::Null);
                let type_name = match (get(2), get(3), get(4)) {
                    (Value::Str(t), Value::Int(p), Value::Int(s)) if t == "numeric" => {
                        format!("numeric({p},{s})")
                    }
                    (Value::Str(t), _, _) => t,
                    _ => String::new(),
                };
                ColumnInfo {
                    name: match get(1) {
                        Value::Str(n) => n,
                        _ => String::new(),
                    },
                    varlena: type_name == "character varying",
                    type_name,
                    not_null: false,
                }
            })
            .collect();
        out.push(Relation {
            name: v.name,
            view_sql: Some(v.sql),
            external: false,
            columns,
            indexes: Vec::new(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn describe(sql: &str) -> Option<Describe> {
        psql_describe(&crate::split::tokenize(sql).unwrap())
    }

    /// The queries psql 15 sends for `\d item` (and `\d+ item`), as PostgreSQL logged them.
    pub(crate) const LOOKUP: &str = "SELECT c.oid,\n  n.nspname,\n  c.relname\nFROM \
        pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = \
        c.relnamespace\nWHERE c.relname OPERATOR(pg_catalog.~) '^(item)$' COLLATE \
        pg_catalog.default\n  AND pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 2, 3;";
    const RELATION: &str = "SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, \
        c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, \
        c.relispartition, '', c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE \
        c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, \
        c.relreplident, am.amname\nFROM pg_catalog.pg_class c\n LEFT JOIN pg_catalog.pg_class \
        tc ON (c.reltoastrelid = tc.oid)\nLEFT JOIN pg_catalog.pg_am am ON (c.relam = \
        am.oid)\nWHERE c.oid = '16415';";
    const ATTRIBUTES: &str = "SELECT a.attname,\n  pg_catalog.format_type(a.atttypid, \
        a.atttypmod),\n  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)\n   FROM \
        pg_catalog.pg_attrdef d\n   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND \
        a.atthasdef),\n  a.attnotnull,\n  (SELECT c.collname FROM pg_catalog.pg_collation c, \
        pg_catalog.pg_type t\n   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND \
        a.attcollation <> t.typcollation) AS attcollation,\n  a.attidentity,\n  \
        a.attgenerated,\n  a.attstorage,\n  a.attcompression AS attcompression,\n  CASE WHEN \
        a.attstattarget=-1 THEN NULL ELSE a.attstattarget END AS attstattarget,\n  \
        pg_catalog.col_description(a.attrelid, a.attnum)\nFROM pg_catalog.pg_attribute a\nWHERE \
        a.attrelid = '16415' AND a.attnum > 0 AND NOT a.attisdropped\nORDER BY a.attnum;";
    const INDEXES: &str = "SELECT c2.relname, i.indisprimary, i.indisunique, \
        i.indisclustered, i.indisvalid, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),\n  \
        pg_catalog.pg_get_constraintdef(con.oid, true), contype, condeferrable, condeferred, \
        i.indisreplident, c2.reltablespace\nFROM pg_catalog.pg_class c, pg_catalog.pg_class c2, \
        pg_catalog.pg_index i\n  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = \
        i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))\nWHERE c.oid = \
        '16415' AND c.oid = i.indrelid AND i.indexrelid = c2.oid\nORDER BY i.indisprimary DESC, \
        c2.relname;";
    const INHERITS: &str = "SELECT c.oid::pg_catalog.regclass\nFROM pg_catalog.pg_class c, \
        pg_catalog.pg_inherits i\nWHERE c.oid = i.inhparent AND i.inhrelid = '16415'\n  AND \
        c.relkind != 'p' AND c.relkind != 'I'\nORDER BY inhseqno;";

    fn item_table() -> Relation {
        let col = |name: &str, type_name: &str, not_null: bool| ColumnInfo {
            name: name.into(),
            type_name: type_name.into(),
            not_null,
            varlena: type_name == "character varying",
        };
        Relation {
            name: "item".into(),
            view_sql: None,
            external: false,
            columns: vec![
                col("id", "bigint", true),
                col("name", "character varying", false),
                col("price", "numeric(12,2)", false),
            ],
            indexes: vec![
                IndexInfo {
                    name: "item_pkey".into(),
                    columns: vec!["id".into()],
                    primary: true,
                    unique: true,
                    method: "hash",
                },
                IndexInfo {
                    name: "item_name".into(),
                    columns: vec!["name".into()],
                    primary: false,
                    unique: false,
                    method: "btree",
                },
            ],
        }
    }

    fn with_oid(sql: &str) -> String {
        sql.replace("16415", &oid("item").to_string())
    }

    #[test]
    fn the_lookup_finds_relations_by_pattern() {
        let d = describe(LOOKUP).unwrap();
        assert_eq!(
            d.question,
            Question::Lookup {
                pattern: "^(item)$".into()
            }
        );
        assert_eq!(d.columns().len(), 3);
        let rows = d.rows(&[item_table()], &[]);
        assert_eq!(
            rows,
            vec![vec![Value::Int(oid("item")), text("public"), text("item")]]
        );
        let other = Relation {
            name: "other".into(),
            ..item_table()
        };
        assert!(d.rows(&[other], &[]).is_empty());
    }

    #[test]
    fn a_relation_answers_every_column_psql_asks_for_in_order() {
        let d = describe(&with_oid(RELATION)).unwrap();
        assert_eq!(d.items.len(), 15);
        let rows = d.rows(&[item_table()], &[]);
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row[0], Value::Int(0), "relchecks");
        assert_eq!(row[1], text("r"), "relkind");
        assert_eq!(row[2], Value::Bool(true), "relhasindex");
        assert_eq!(row[7], Value::Bool(false), "false AS relhasoids");
        assert_eq!(row[9], text(""), "the '' literal");
        assert_eq!(row[12], text("p"), "relpersistence");
        assert_eq!(row[14], Value::Null, "no access method");
        let unknown = describe(RELATION.replace("16415", "1").as_str()).unwrap();
        assert!(unknown.rows(&[item_table()], &[]).is_empty());
    }

    #[test]
    fn attributes_give_names_types_and_nullability() {
        let d = describe(&with_oid(ATTRIBUTES)).unwrap();
        assert_eq!(d.items.len(), 11, "{:?}", d.items);
        let rows = d.rows(&[item_table()], &[]);
        let shown: Vec<(Value, Value, Value, Value)> = rows
            .iter()
            .map(|r| (r[0].clone(), r[1].clone(), r[3].clone(), r[7].clone()))
            .collect();
        assert_eq!(
            shown,
            vec![
                (text("id"), text("bigint"), Value::Bool(true), text("p")),
                (
                    text("name"),
                    text("character varying"),
                    Value::Bool(false),
                    text("x")
                ),
                (
                    text("price"),
                    text("numeric(12,2)"),
                    Value::Bool(false),
                    text("p")
                ),
            ]
        );
        assert_eq!(rows[0][2], Value::Null, "no default");
        assert_eq!(rows[0][4], Value::Null, "no collation");
    }

    #[test]
    fn indexes_read_as_psql_prints_them() {
        let d = describe(&with_oid(INDEXES)).unwrap();
        let rows = d.rows(&[item_table()], &[]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0][0], text("item_pkey"));
        assert_eq!(rows[0][1], Value::Bool(true));
        assert_eq!(
            rows[0][5],
            text("CREATE UNIQUE INDEX item_pkey ON public.item USING hash (id)")
        );
        assert_eq!(rows[0][6], text("PRIMARY KEY (id)"));
        assert_eq!(rows[0][7], text("p"));
        assert_eq!(rows[1][0], text("item_name"));
        assert_eq!(
            rows[1][5],
            text("CREATE INDEX item_name ON public.item USING btree (name)")
        );
        assert_eq!(rows[1][6], Value::Null);
    }

    #[test]
    fn what_weir_never_has_is_no_rows_and_other_queries_are_not_describes() {
        let d = describe(INHERITS).unwrap();
        assert_eq!(d.question, Question::Nothing);
        assert_eq!(d.columns().len(), 1);
        assert!(d.rows(&[item_table()], &[]).is_empty());
        assert!(describe("SELECT * FROM pg_catalog.pg_class").is_none());
        assert!(describe("SELECT relname FROM item").is_none());
    }

    #[test]
    fn psycopgs_type_lookup_finds_weirs_types_and_no_other() {
        let sql = "SELECT\n    typname AS name, oid, typarray AS array_oid,\n    \
            oid::regtype::text AS regtype, typdelim AS delimiter\nFROM pg_type t\nWHERE t.oid \
            = to_regtype($1)\nORDER BY t.oid\n";
        let d = describe(sql).unwrap();
        assert_eq!(
            d.question,
            Question::TypeLookup {
                name: TypeName::Param(0)
            }
        );
        assert_eq!(d.params(), 1);
        assert!(d.rows(&[], &[text("hstore")]).is_empty());
        assert_eq!(
            d.rows(&[], &[text("bigint")]),
            vec![vec![
                text("int8"),
                Value::Int(20),
                Value::Int(1016),
                text("bigint"),
                text(",")
            ]]
        );
        let literal = describe(&sql.replace("$1", "'numeric'")).unwrap();
        assert_eq!(literal.params(), 0);
        assert_eq!(literal.rows(&[], &[]).len(), 1);
    }

    #[test]
    fn sqlalchemys_relation_names_filter_by_name_kind_and_schema() {
        // has_table("item") and get_view_names(), as SQLAlchemy 2.1 sends them.
        let has_table = "SELECT pg_catalog.pg_class.relname \nFROM pg_catalog.pg_class JOIN \
            pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = \
            pg_catalog.pg_class.relnamespace \nWHERE pg_catalog.pg_class.relname IN ($1) AND \
            pg_catalog.pg_class.relkind = ANY (ARRAY[$2::VARCHAR, $3::VARCHAR, $4::VARCHAR]) \
            AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND \
            pg_catalog.pg_namespace.nspname != $5::VARCHAR";
        let d = describe(has_table).unwrap();
        assert_eq!(d.params(), 5);
        let view = Relation {
            name: "cheap".into(),
            view_sql: Some("SELECT 1".into()),
            ..item_table()
        };
        let relations = [item_table(), view];
        let params = |name: &str, kinds: [&str; 3]| {
            let mut p = vec![text(name)];
            p.extend(kinds.iter().map(|k| text(k)));
            p.push(text("pg_catalog"));
            p
        };
        assert_eq!(
            d.rows(&relations, &params("item", ["r", "p", "f"])),
            vec![vec![text("item")]]
        );
        assert!(d
            .rows(&relations, &params("cheap", ["r", "p", "f"]))
            .is_empty());
        assert_eq!(
            d.rows(&relations, &params("cheap", ["v", "m", "x"])),
            vec![vec![text("cheap")]]
        );
        assert!(d
            .rows(&relations, &params("nosuch", ["r", "p", "f"]))
            .is_empty());
        let in_schema = has_table.replace("nspname != $5", "nspname = $5");
        let d = describe(&in_schema).unwrap();
        assert!(d
            .rows(&relations, &params("item", ["r", "p", "f"]))
            .is_empty());
    }

    #[test]
    fn oids_are_stable_and_case_blind() {
        assert_eq!(oid("Item"), oid("item"));
        assert_ne!(oid("item"), oid("items"));
        assert!(oid("item") >= FIRST_OID);
    }
}
