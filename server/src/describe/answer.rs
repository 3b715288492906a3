//! A describe query's answer: its columns' types, and its rows from the relations and the
//! statement's parameters, each select item answered by the catalog column it names.

use pgwire::api::Type;
use weir_operators::{DataType, Value};

use super::question::{Describe, Filter, Item, Question, TypeName};
use super::relations::{oid, CheckInfo, ColumnInfo, ForeignKeyInfo, IndexInfo, Relation};
use crate::catalog::matches;
use weir_planner::ReferentialAction;

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

/// The type of the values of catalog column (or function) `name`.
fn named_type(name: &str) -> DataType {
    match name {
        "oid" | "relchecks" | "reltablespace" | "attnum" | "stxstattarget" | "attstattarget"
        | "conrelid" | "indrelid" | "indnkeyatts" | "relam" | "atttypid" | "atttypmod"
        | "attlen" | "typtypmod" | "typbasetype" | "key_seq" | "ordinal_position" | "type"
        | "cardinality" | "pages" | "update_rule" | "delete_rule" | "deferrability" => {
            DataType::Int64
        }
        // psql's `\d` of a sequence (`pg_sequence`).
        "Start" | "Minimum" | "Maximum" | "Increment" | "Cache" => DataType::Int64,
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
        | "mcv_enabled"
        | "not_null"
        | "has_constraint"
        | "indnullsnotdistinct"
        | "sametable" => DataType::Boolean,
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

    /// The number of parameters the query takes.
    pub fn params(&self) -> usize {
        self.params
    }

    /// The PostgreSQL type of each result column whose type weir's types do not name, `None`
    /// for the others: arrays (SQLAlchemy's index and constraint columns), whose value is
    /// their text form (`{a,b}`, as [`array_text`] writes it; an `int2vector`'s `0 0`), and
    /// `json` (SQLAlchemy's identity options).
    pub fn pg_types(&self) -> Vec<Option<Type>> {
        self.items
            .iter()
            .map(|i| match i {
                Item::Named(n) => match n.as_str() {
                    "cols" | "elements" => Some(Type::TEXT_ARRAY),
                    "elements_is_expr" => Some(Type::BOOL_ARRAY),
                    "elements_opclass" => Some(Type::INT8_ARRAY),
                    // PostgreSQL's int2vector: `0 0` in text.
                    "indoption" => Some(Type::INT2_VECTOR),
                    "identity_options" => Some(Type::JSON),
                    _ => None,
                },
                Item::Literal(_) => None,
            })
            .collect()
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
            Question::Relations { filters } => passing(relations, filters, params)
                .into_iter()
                .map(|r| answer(&|n| class_value(r, n)))
                .collect(),
            Question::Columns { filters } => passing(relations, filters, params)
                .into_iter()
                .flat_map(|r| {
                    r.columns
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            answer(&|n| match n {
                                "name" => text(&c.name),
                                "not_null" => Value::Bool(c.not_null),
                                "table_name" | "relname" => text(&r.name),
                                "generated" => text(""),
                                "identity_options" => identity_options(c),
                                _ => attribute_value(c, i, n),
                            })
                        })
                        .collect::<Vec<_>>()
                })
                .collect(),
            Question::Constraints { kind, oids } => {
                // weir's only constraints are primary keys (a unique index is an index).
                if value_of(kind, params) != Some("p") {
                    return Vec::new();
                }
                let mut found = by_oids(relations, oids, params);
                found.sort_by_key(|r| oid(&r.name));
                found
                    .into_iter()
                    .filter_map(|r| Some((r, r.indexes.iter().find(|ix| ix.primary)?)))
                    .map(|(r, ix)| {
                        answer(&|n| match n {
                            "conrelid" => Value::Int(oid(&r.name)),
                            "cols" => text(&array_text(&ix.columns)),
                            "conname" => text(&ix.name),
                            "indnkeyatts" => Value::Int(ix.columns.len() as i64),
                            "indnullsnotdistinct" => Value::Bool(false),
                            _ => Value::Null,
                        })
                    })
                    .collect()
            }
            Question::TableIndexes { oids } => {
                let mut found = by_oids(relations, oids, params);
                found.sort_by_key(|r| oid(&r.name));
                found
                    .into_iter()
                    .flat_map(|r| {
                        let mut secondary: Vec<&IndexInfo> =
                            r.indexes.iter().filter(|ix| !ix.primary).collect();
                        secondary.sort_by(|a, b| a.name.cmp(&b.name));
                        secondary.into_iter().map(move |ix| (r, ix))
                    })
                    .map(|(r, ix)| {
                        let each = |v: &str| array_text(&vec![v.to_string(); ix.columns.len()]);
                        answer(&|n| match n {
                            "indrelid" => Value::Int(oid(&r.name)),
                            "relname" => text(&ix.name),
                            "indisunique" => Value::Bool(ix.unique),
                            "indisvalid" => Value::Bool(true),
                            "has_constraint" | "indnullsnotdistinct" => Value::Bool(false),
                            "indoption" => text(&vec!["0"; ix.columns.len()].join(" ")),
                            "elements_opclass" => text(&each("0")),
                            "relam" => Value::Int(access_method(ix.method)),
                            "indnkeyatts" => Value::Int(ix.columns.len() as i64),
                            "elements" => text(&array_text(&ix.columns)),
                            "elements_is_expr" => text(&each("f")),
                            _ => Value::Null,
                        })
                    })
                    .collect()
            }
            Question::AccessMethods { name } => {
                let wanted = name.as_ref().map(|n| value_of(n, params));
                ["btree", "hash"]
                    .into_iter()
                    .filter(|m| wanted.is_none_or(|w| w == Some(*m)))
                    .map(|m| {
                        answer(&|n| match n {
                            "oid" => Value::Int(access_method(m)),
                            "amname" => text(m),
                            "amtype" => text("i"),
                            _ => Value::Null,
                        })
                    })
                    .collect()
            }
            Question::JdbcTables {
                name,
                schema,
                kinds,
            } => {
                let mut found: Vec<&Relation> = relations
                    .iter()
                    .filter(|r| kinds.contains(&r.relkind()))
                    .filter(|r| like_or_any(name, &r.name) && like_or_any(schema, "public"))
                    .collect();
                found.sort_by(|a, b| (table_type(a), &a.name).cmp(&(table_type(b), &b.name)));
                found
                    .into_iter()
                    .map(|r| {
                        answer(&|n| match n {
                            "table_schem" => text("public"),
                            "table_name" => text(&r.name),
                            "table_type" => text(table_type(r)),
                            "type_cat"
                            | "type_schem"
                            | "type_name"
                            | "self_referencing_col_name"
                            | "ref_generation" => text(""),
                            "remarks" => text_or_null(r.comment.as_deref()),
                            _ => Value::Null,
                        })
                    })
                    .collect()
            }
            Question::JdbcColumns {
                table,
                schema,
                column,
            } => {
                let mut found: Vec<&Relation> = relations
                    .iter()
                    .filter(|r| like_or_any(table, &r.name) && like_or_any(schema, "public"))
                    .collect();
                found.sort_by(|a, b| a.name.cmp(&b.name));
                found
                    .into_iter()
                    .flat_map(|r| {
                        r.columns
                            .iter()
                            .enumerate()
                            .filter(|(_, c)| like_or_any(column, &c.name))
                            .map(|(i, c)| {
                                let (type_oid, modifier, length) = type_of(&c.type_name);
                                answer(&|n| match n {
                                    "nspname" => text("public"),
                                    "relname" => text(&r.name),
                                    "atttypid" => Value::Int(type_oid),
                                    "atttypmod" => Value::Int(modifier),
                                    "attlen" => Value::Int(length),
                                    "typtypmod" => Value::Int(-1),
                                    "typbasetype" => Value::Int(0),
                                    "typtype" => text("b"),
                                    // NULLIF(attidentity, ''), NULLIF(attgenerated, '').
                                    "attidentity" if !c.identity.is_empty() => text(c.identity),
                                    "attidentity" | "attgenerated" => Value::Null,
                                    _ => attribute_value(c, i, n),
                                })
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect()
            }
            Question::JdbcPrimaryKeys { table } => {
                let wanted = value_of(table, params).map(str::to_lowercase);
                relations
                    .iter()
                    .filter(|r| Some(r.name.to_lowercase()) == wanted)
                    .filter_map(|r| Some((r, r.indexes.iter().find(|ix| ix.primary)?)))
                    .flat_map(|(r, ix)| {
                        ix.columns
                            .iter()
                            .enumerate()
                            .map(|(k, c)| {
                                answer(&|n| match n {
                                    "table_schem" => text("public"),
                                    "table_name" => text(&r.name),
                                    "column_name" => text(c),
                                    "key_seq" => Value::Int(k as i64 + 1),
                                    "pk_name" => text(&ix.name),
                                    _ => Value::Null,
                                })
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect()
            }
            Question::Schemas { system } => {
                let mut names = vec!["information_schema", "public"];
                if *system {
                    names.insert(1, "pg_catalog");
                }
                names
                    .into_iter()
                    .map(|name| {
                        answer(&|n| match n {
                            "nspname" | "table_schem" => text(name),
                            _ => Value::Null,
                        })
                    })
                    .collect()
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
            Question::Sequence { oid } => find(*oid)
                .and_then(|r| r.sequence.as_ref())
                .map(|s| {
                    vec![answer(&|n| match n {
                        "Type" => text("bigint"),
                        "Start" => Value::Int(s.start),
                        "Minimum" => Value::Int(s.min),
                        "Maximum" => Value::Int(s.max),
                        "Increment" => Value::Int(s.increment),
                        "Cycles?" => text("no"),
                        "Cache" => Value::Int(1),
                        _ => Value::Null,
                    })]
                })
                .unwrap_or_default(),
            Question::SequenceOwner { oid } => find(*oid)
                .and_then(|r| r.sequence.as_ref()?.owner.as_ref())
                .map(|(table, column, identity)| {
                    vec![answer(&|n| match n {
                        "quote_ident" => text(&format!(
                            "public.{}.{}",
                            quote_ident(table),
                            quote_ident(column)
                        )),
                        "deptype" => text(if *identity { "i" } else { "a" }),
                        _ => Value::Null,
                    })]
                })
                .unwrap_or_default(),
            Question::ForeignKeys { oid } => find(*oid)
                .map(|r| {
                    r.foreign_keys
                        .iter()
                        .map(|k| {
                            answer(&|n| match n {
                                "sametable" => Value::Bool(true),
                                "ontable" => text(&k.table),
                                _ => constraint_value(k, n),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
            Question::CheckConstraints { oid } => find(*oid)
                .map(|r| {
                    r.checks
                        .iter()
                        .map(|c| answer(&|n| check_value(c, n)))
                        .collect()
                })
                .unwrap_or_default(),
            Question::ReferencedBy { oid } => find(*oid)
                .map(|r| {
                    r.referenced_by
                        .iter()
                        .map(|k| {
                            answer(&|n| match n {
                                "ontable" => text(&k.table),
                                _ => constraint_value(k, n),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
            Question::ConstraintDefinitions { kind, filters } => {
                let kind = value_of(kind, params);
                passing(relations, filters, params)
                    .into_iter()
                    .flat_map(|r| {
                        let relname = |n: &str| (n == "relname").then(|| text(&r.name));
                        let rows: Vec<Vec<Value>> = match kind {
                            Some("f") => r
                                .foreign_keys
                                .iter()
                                .map(|k| {
                                    answer(&|n| {
                                        relname(n).unwrap_or_else(|| match n {
                                            // The referenced table's schema.
                                            "nspname" => text("public"),
                                            _ => constraint_value(k, n),
                                        })
                                    })
                                })
                                .collect(),
                            Some("c") => r
                                .checks
                                .iter()
                                .map(|c| {
                                    answer(&|n| relname(n).unwrap_or_else(|| check_value(c, n)))
                                })
                                .collect(),
                            _ => Vec::new(),
                        };
                        if rows.is_empty() {
                            // The outer join's row of a relation without one.
                            vec![answer(&|n| relname(n).unwrap_or(Value::Null))]
                        } else {
                            rows
                        }
                    })
                    .collect()
            }
            Question::JdbcForeignKeys { table, exported } => {
                let wanted = value_of(table, params).map(str::to_lowercase);
                let Some(r) = relations
                    .iter()
                    .find(|r| Some(r.name.to_lowercase()) == wanted)
                else {
                    return Vec::new();
                };
                let mut keys: Vec<&ForeignKeyInfo> = if *exported {
                    r.referenced_by.iter().collect()
                } else {
                    r.foreign_keys.iter().collect()
                };
                // As JDBC orders them: by the other table, then the key's name.
                keys.sort_by(|a, b| {
                    let other = |k: &ForeignKeyInfo| {
                        if *exported {
                            k.table.clone()
                        } else {
                            k.parent.clone()
                        }
                    };
                    (other(a), &a.name).cmp(&(other(b), &b.name))
                });
                keys.into_iter()
                    .flat_map(|k| {
                        (0..k.columns.len())
                            .map(|i| {
                                answer(&|n| match n {
                                    "pktable_schem" | "fktable_schem" => text("public"),
                                    "pktable_name" => text(&k.parent),
                                    "pkcolumn_name" => text(&k.parent_columns[i]),
                                    "fktable_name" => text(&k.table),
                                    "fkcolumn_name" => text(&k.columns[i]),
                                    "key_seq" => Value::Int(i as i64 + 1),
                                    "update_rule" => Value::Int(jdbc_rule(k.on_update)),
                                    "delete_rule" => Value::Int(jdbc_rule(k.on_delete)),
                                    "fk_name" => text(&k.name),
                                    "pk_name" => text(&k.parent_index),
                                    // importedKeyNotDeferrable.
                                    "deferrability" => Value::Int(7),
                                    _ => Value::Null,
                                })
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect()
            }
            Question::JdbcIndexInfo { table, unique_only } => {
                let wanted = value_of(table, params).map(str::to_lowercase);
                let mut rows: Vec<(bool, i64, &str, usize, &Relation, &IndexInfo, &str)> =
                    Vec::new();
                for r in relations
                    .iter()
                    .filter(|r| Some(r.name.to_lowercase()) == wanted)
                {
                    for ix in r.indexes.iter().filter(|ix| ix.unique || !unique_only) {
                        // JDBC's index types: 2 hashed (weir's primary key), 3 other.
                        let kind = if ix.method == "hash" { 2 } else { 3 };
                        for (k, c) in ix.columns.iter().enumerate() {
                            rows.push((!ix.unique, kind, &ix.name, k + 1, r, ix, c));
                        }
                    }
                }
                // As JDBC orders them: NON_UNIQUE, TYPE, INDEX_NAME, ORDINAL_POSITION.
                rows.sort_by(|a, b| (a.0, a.1, a.2, a.3).cmp(&(b.0, b.1, b.2, b.3)));
                rows.into_iter()
                    .map(|(non_unique, kind, name, position, r, ix, column)| {
                        answer(&|n| match n {
                            "table_schem" => text("public"),
                            "table_name" => text(&r.name),
                            "non_unique" => text(if non_unique { "t" } else { "f" }),
                            "index_name" => text(name),
                            "type" => Value::Int(kind),
                            "ordinal_position" => Value::Int(position as i64),
                            "column_name" => text(column),
                            // Only an ordered index has an order.
                            "asc_or_desc" if ix.method == "btree" => text("A"),
                            "cardinality" | "pages" => Value::Int(0),
                            _ => Value::Null,
                        })
                    })
                    .collect()
            }
            Question::Setting { name } => match value_of(name, params) {
                // The most columns an index has in PostgreSQL; JDBC reads foreign keys'
                // positions up to it.
                Some("max_index_keys") => vec![vec![text("32")]],
                Some("max_identifier_length") => vec![vec![text("63")]],
                _ => Vec::new(),
            },
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

/// The relations that pass every filter, by name.
fn passing<'a>(
    relations: &'a [Relation],
    filters: &[Filter],
    params: &[Value],
) -> Vec<&'a Relation> {
    let mut found: Vec<&Relation> = relations
        .iter()
        .filter(|r| filters.iter().all(|f| passes(r, f, params)))
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The relations with the object ids `oids` (written in the query or parameters).
fn by_oids<'a>(
    relations: &'a [Relation],
    oids: &[TypeName],
    params: &[Value],
) -> Vec<&'a Relation> {
    let wanted: Vec<i64> = oids.iter().filter_map(|o| int_of(o, params)).collect();
    relations
        .iter()
        .filter(|r| wanted.contains(&oid(&r.name)))
        .collect()
}

/// An integer value of the query: written in it, or the parameter's (an integer, or text
/// that reads as one).
fn int_of(v: &TypeName, params: &[Value]) -> Option<i64> {
    match v {
        TypeName::Literal(n) => n.parse().ok(),
        TypeName::Param(i) => match params.get(*i)? {
            Value::Int(n) => Some(*n),
            Value::Str(n) => n.trim().parse().ok(),
            _ => None,
        },
    }
}

/// PostgreSQL's type id, type modifier and length in bytes (-1: variable) of a column of
/// type `type_name` (as `format_type` writes it: `numeric(12,2)` has modifier
/// `(12 << 16 | 2) + 4`).
fn type_of(type_name: &str) -> (i64, i64, i64) {
    if let Some(args) = type_name
        .strip_prefix("numeric(")
        .and_then(|t| t.strip_suffix(')'))
    {
        let mut parts = args
            .split(',')
            .map(|p| p.trim().parse::<i64>().unwrap_or(0));
        let (precision, scale) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        return (1700, ((precision << 16) | scale) + 4, -1);
    }
    let (oid, length) = match type_name {
        "bigint" => (20, 8),
        "integer" => (23, 4),
        "smallint" => (21, 2),
        "double precision" => (701, 8),
        "real" => (700, 4),
        "boolean" => (16, 1),
        "date" => (1082, 4),
        "timestamp without time zone" => (1114, 8),
        "numeric" => (1700, -1),
        "text" => (25, -1),
        _ => (1043, -1),
    };
    (oid, -1, length)
}

/// JDBC's name of a relation's kind.
fn table_type(r: &Relation) -> &'static str {
    match r.relkind() {
        'v' => "VIEW",
        'f' => "FOREIGN TABLE",
        'S' => "SEQUENCE",
        _ => "TABLE",
    }
}

/// Whether `value` matches `pattern` (SQL LIKE), when there is one.
fn like_or_any(pattern: &Option<String>, value: &str) -> bool {
    pattern.as_deref().is_none_or(|p| like(p, value))
}

/// Whether `value` matches SQL LIKE `pattern` (`%` any text, `_` one character, `\\` escapes
/// the next), comparing as weir's names compare: without regard to case. Linear in the
/// lengths' product at worst (a mismatch goes back to the last `%` only).
fn like(pattern: &str, value: &str) -> bool {
    /// One element of a pattern: `%`, `_`, or a character to match.
    #[derive(Clone, Copy, PartialEq)]
    enum Part {
        Any,
        One,
        Char(char),
    }
    let mut parts = Vec::new();
    let mut chars = pattern
        .to_lowercase()
        .chars()
        .collect::<Vec<_>>()
        .into_iter();
    while let Some(c) = chars.next() {
        parts.push(match c {
            '%' => Part::Any,
            '_' => Part::One,
            '\\' => Part::Char(chars.next().unwrap_or('\\')),
            c => Part::Char(c),
        });
    }
    let v: Vec<char> = value.to_lowercase().chars().collect();
    let (mut p, mut i) = (0, 0);
    // The last `%` seen and the value position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while i < v.len() {
        match parts.get(p) {
            Some(Part::Any) => {
                star = Some((p, i));
                p += 1;
            }
            Some(Part::One) => (p, i) = (p + 1, i + 1),
            Some(Part::Char(c)) if *c == v[i] => (p, i) = (p + 1, i + 1),
            _ => match star {
                Some((sp, si)) => {
                    star = Some((sp, si + 1));
                    (p, i) = (sp + 1, si + 1);
                }
                None => return false,
            },
        }
    }
    parts[p..].iter().all(|part| *part == Part::Any)
}

/// PostgreSQL's object id of index access method `name` (`pg_am`).
fn access_method(name: &str) -> i64 {
    match name {
        "hash" => 405,
        _ => 403,
    }
}

/// A one-dimensional array in PostgreSQL's text form: `{a,b}`, an element in double quotes
/// (with `"` and `\` escaped) when it is empty, `NULL`, or holds braces, commas, quotes,
/// backslashes or white space.
pub fn array_text<S: AsRef<str>>(elements: &[S]) -> String {
    let mut out = String::from("{");
    for (i, e) in elements.iter().enumerate() {
        let e = e.as_ref();
        if i > 0 {
            out.push(',');
        }
        let plain = !e.is_empty()
            && !e.eq_ignore_ascii_case("NULL")
            && !e
                .chars()
                .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
        if plain {
            out.push_str(e);
        } else {
            out.push('"');
            for c in e.chars() {
                if matches!(c, '"' | '\\') {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
        }
    }
    out.push('}');
    out
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

/// `s` as text, or NULL.
fn text_or_null(s: Option<&str>) -> Value {
    s.map_or(Value::Null, text)
}

/// `pg_class`'s columns for `r`.
fn class_value(r: &Relation, name: &str) -> Value {
    let view = r.view_sql.is_some();
    match name {
        "relchecks" => Value::Int(r.checks.len() as i64),
        "reltablespace" => Value::Int(0),
        "relkind" => text(&r.relkind().to_string()),
        // `obj_description(oid, 'pg_class')` (psql's `\dt+`), `pg_description.description`
        // (SQLAlchemy's table comment).
        "Description" | "description" | "obj_description" => text_or_null(r.comment.as_deref()),
        "relhasindex" => Value::Bool(!r.indexes.is_empty()),
        // PostgreSQL enforces foreign keys by triggers; psql lists a table's keys, and those
        // referencing it, only for a table that has them.
        "relhastriggers" => Value::Bool(!r.foreign_keys.is_empty() || !r.referenced_by.is_empty()),
        "relhasrules"
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

/// `pg_constraint`'s columns for foreign key `k`.
fn constraint_value(k: &ForeignKeyInfo, name: &str) -> Value {
    match name {
        "conname" => text(&k.name),
        // psql's `condef`, SQLAlchemy's `anon_1` (`CASE ... pg_get_constraintdef(...) END`).
        "condef" | "pg_get_constraintdef" | "anon_1" => text(&k.definition()),
        "contype" => text("f"),
        "confupdtype" => text(ForeignKeyInfo::action_code(k.on_update)),
        "confdeltype" => text(ForeignKeyInfo::action_code(k.on_delete)),
        "condeferrable" | "condeferred" => Value::Bool(false),
        _ => Value::Null,
    }
}

/// `pg_constraint`'s columns for `CHECK` constraint `c`.
fn check_value(c: &CheckInfo, name: &str) -> Value {
    match name {
        "conname" => text(&c.name),
        "condef" | "pg_get_constraintdef" | "anon_1" => text(&c.definition()),
        "contype" => text("c"),
        "condeferrable" | "condeferred" => Value::Bool(false),
        _ => Value::Null,
    }
}

/// JDBC's rule of a referential action: `importedKeyNoAction` 3, `importedKeyRestrict` 1.
fn jdbc_rule(action: ReferentialAction) -> i64 {
    match action {
        ReferentialAction::NoAction => 3,
        ReferentialAction::Restrict => 1,
        ReferentialAction::Cascade => 0,
        ReferentialAction::SetNull => 2,
        ReferentialAction::SetDefault => 4,
    }
}

/// `pg_attribute`'s columns for column `c`, the `i`-th.
fn attribute_value(c: &ColumnInfo, i: usize, name: &str) -> Value {
    match name {
        "attname" => text(&c.name),
        "format_type" => text(&c.type_name),
        "attnotnull" => Value::Bool(c.not_null),
        "attnum" => Value::Int(i as i64 + 1),
        "attidentity" => text(c.identity),
        "attgenerated" | "attcompression" => text(""),
        "atthasdef" => Value::Bool(c.default.is_some()),
        // psql's, SQLAlchemy's and JDBC's names for `pg_get_expr(adbin, adrelid)`.
        "pg_get_expr" | "default" | "adsrc" => text_or_null(c.default.as_deref()),
        "attstorage" => text(if c.varlena { "x" } else { "p" }),
        // psql's `col_description(attrelid, attnum)`, SQLAlchemy's `comment`, JDBC's
        // `dsc.description`.
        "col_description" | "comment" | "description" => text_or_null(c.comment.as_deref()),
        _ => Value::Null,
    }
}

/// SQLAlchemy's `identity_options` of column `c`: its sequence's options as a JSON object
/// (weir's sequences start at 1, count by 1 and do not cycle), NULL for a column that is not
/// an identity column.
fn identity_options(c: &ColumnInfo) -> Value {
    if c.identity.is_empty() {
        return Value::Null;
    }
    text(&format!(
        "{{\"always\": {}, \"start\": 1, \"increment\": 1, \"minvalue\": 1, \"maxvalue\": {}, \"cache\": 1, \"cycle\": false}}",
        c.identity == "a",
        i64::MAX
    ))
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

/// `name` as PostgreSQL's `quote_ident` writes it: as it is when it is a plain lower-case
/// identifier, else in double quotes (a quote in it doubled).
fn quote_ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}
