//! What psql and the drivers are told of the cluster's tables, views and sequences: columns with
//! PostgreSQL's type names, nullability, indexes, foreign keys, a view's query, and a stable
//! object id.

use weir_operators::{DataType, Value};
use weir_planner::{DefaultValue, ReferentialAction, TableDef};
use weir_runtime::Cluster;

/// The first object id given to a relation (PostgreSQL's first id for user objects).
pub(crate) const FIRST_OID: i64 = 16384;

/// What psql is told of one table or view.
#[derive(Clone, Debug, PartialEq)]
pub struct Relation {
    /// Its name.
    pub name: String,
    /// Its query, for a view.
    pub view_sql: Option<String>,
    /// An external table (read in place from files): PostgreSQL's foreign table.
    pub external: bool,
    /// A sequence (`CREATE SEQUENCE`, or a `SERIAL` column's): no columns, no indexes.
    pub sequence: Option<SequenceInfo>,
    /// Its columns, in order.
    pub columns: Vec<ColumnInfo>,
    /// Its indexes, the primary key's first.
    pub indexes: Vec<IndexInfo>,
    /// Its foreign keys, by name.
    pub foreign_keys: Vec<ForeignKeyInfo>,
    /// The foreign keys that reference it (its own, when it references itself, among them),
    /// by name.
    pub referenced_by: Vec<ForeignKeyInfo>,
    /// Its `CHECK` constraints, by name.
    pub checks: Vec<CheckInfo>,
    /// Its comment (`COMMENT ON TABLE`).
    pub comment: Option<String>,
}

/// One `CHECK` constraint of a [`Relation`].
#[derive(Clone, Debug, PartialEq)]
pub struct CheckInfo {
    /// The constraint's name.
    pub name: String,
    /// Its condition as written.
    pub condition: String,
}

impl CheckInfo {
    /// The definition as `pg_get_constraintdef` writes it: `CHECK (condition)`.
    pub fn definition(&self) -> String {
        format!("CHECK ({})", self.condition)
    }
}

impl Relation {
    /// PostgreSQL's kind of relation: `r` a table, `v` a view, `f` a foreign (external)
    /// table, `S` a sequence.
    pub fn relkind(&self) -> char {
        if self.sequence.is_some() {
            'S'
        } else if self.view_sql.is_some() {
            'v'
        } else if self.external {
            'f'
        } else {
            'r'
        }
    }
}

/// What psql's `\d` of a sequence shows (`pg_sequence`, and the column that owns it).
#[derive(Clone, Debug, PartialEq)]
pub struct SequenceInfo {
    /// The first value.
    pub start: i64,
    /// The smallest value.
    pub min: i64,
    /// The largest value.
    pub max: i64,
    /// The step.
    pub increment: i64,
    /// The `SERIAL` or identity column whose sequence it is: (table, column, identity).
    pub owner: Option<(String, String, bool)>,
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
    /// Its default as PostgreSQL's `pg_get_expr` writes it: a `DEFAULT` expression, or
    /// `nextval('<table>_<column>_seq'::regclass)` for a `SERIAL` column.
    pub default: Option<String>,
    /// `pg_attribute.attidentity`: `a` for `GENERATED ALWAYS AS IDENTITY`, `d` for `BY
    /// DEFAULT`, empty for any other column.
    pub identity: &'static str,
    /// Its comment (`COMMENT ON COLUMN`).
    pub comment: Option<String>,
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

/// One foreign key, as `pg_constraint` tells of it.
#[derive(Clone, Debug, PartialEq)]
pub struct ForeignKeyInfo {
    /// The constraint's name.
    pub name: String,
    /// The referencing table.
    pub table: String,
    /// The referencing columns, in the key's order.
    pub columns: Vec<String>,
    /// The referenced table.
    pub parent: String,
    /// The referenced columns, one per referencing column.
    pub parent_columns: Vec<String>,
    /// The name of the referenced table's index on those columns (its primary key's
    /// `<table>_pkey`, or a unique index's).
    pub parent_index: String,
    /// `ON DELETE`.
    pub on_delete: ReferentialAction,
    /// `ON UPDATE`.
    pub on_update: ReferentialAction,
}

impl ForeignKeyInfo {
    /// The key as `pg_get_constraintdef` writes it: `FOREIGN KEY (a) REFERENCES p(id)`, with
    /// the actions that are not the default.
    pub fn definition(&self) -> String {
        let mut out = format!(
            "FOREIGN KEY ({}) REFERENCES {}({})",
            self.columns.join(", "),
            self.parent,
            self.parent_columns.join(", ")
        );
        for (on, action) in [("UPDATE", self.on_update), ("DELETE", self.on_delete)] {
            if action != ReferentialAction::NoAction {
                out.push_str(&format!(" ON {on} {}", action.sql()));
            }
        }
        out
    }

    /// `pg_constraint`'s `confupdtype`/`confdeltype` of `action`: `a` no action, `r` restrict.
    pub fn action_code(action: ReferentialAction) -> &'static str {
        match action {
            ReferentialAction::NoAction => "a",
            ReferentialAction::Restrict => "r",
            ReferentialAction::Cascade => "c",
            ReferentialAction::SetNull => "n",
            ReferentialAction::SetDefault => "d",
        }
    }
}

/// The foreign keys of `tables`, each as [`ForeignKeyInfo`].
fn foreign_keys(tables: &[TableDef]) -> Vec<ForeignKeyInfo> {
    let mut out = Vec::new();
    for t in tables {
        for fk in &t.foreign_keys {
            let Some(parent) = tables
                .iter()
                .find(|p| p.name.eq_ignore_ascii_case(&fk.parent))
            else {
                continue;
            };
            let mut wanted = fk.parent_columns.clone();
            wanted.sort_unstable();
            let same = |columns: &[usize]| {
                let mut columns = columns.to_vec();
                columns.sort_unstable();
                columns == wanted
            };
            let parent_index = if same(&parent.primary_key) {
                format!("{}_pkey", parent.name)
            } else {
                parent
                    .indexes
                    .iter()
                    .find(|i| i.unique && same(&i.columns()))
                    .map_or_else(String::new, |i| i.name.clone())
            };
            out.push(ForeignKeyInfo {
                name: fk.name.clone(),
                table: t.name.clone(),
                columns: fk
                    .columns
                    .iter()
                    .map(|&c| t.schema.fields[c].name.clone())
                    .collect(),
                parent: parent.name.clone(),
                parent_columns: fk
                    .parent_columns
                    .iter()
                    .map(|&c| parent.schema.fields[c].name.clone())
                    .collect(),
                parent_index,
                on_delete: fk.on_delete,
                on_update: fk.on_update,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
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
    let tables = cluster.tables();
    let keys = foreign_keys(&tables);
    let keys_where = |table: &str, referenced: bool| -> Vec<ForeignKeyInfo> {
        keys.iter()
            .filter(|k| if referenced { &k.parent } else { &k.table } == table)
            .cloned()
            .collect()
    };
    let mut out: Vec<Relation> = tables
        .iter()
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
                    default: match t.default_of(i) {
                        Some(DefaultValue::Expr(e)) => Some(e.clone()),
                        Some(DefaultValue::Serial) => {
                            Some(format!("nextval('{}_{}_seq'::regclass)", t.name, f.name))
                        }
                        Some(DefaultValue::Identity { .. }) | None => None,
                    },
                    identity: match t.default_of(i) {
                        Some(DefaultValue::Identity { always: true }) => "a",
                        Some(DefaultValue::Identity { always: false }) => "d",
                        _ => "",
                    },
                    comment: t.comments.of_column(i).map(str::to_string),
                })
                .collect();
            Relation {
                name: t.name.clone(),
                view_sql: None,
                external: t.external.is_some(),
                sequence: None,
                columns,
                indexes,
                foreign_keys: keys_where(&t.name, false),
                referenced_by: keys_where(&t.name, true),
                checks: {
                    let mut checks: Vec<CheckInfo> = t
                        .checks
                        .iter()
                        .map(|c| CheckInfo {
                            name: c.name.clone(),
                            condition: c.condition.clone(),
                        })
                        .collect();
                    checks.sort_by(|a, b| a.name.cmp(&b.name));
                    checks
                },
                comment: t.comments.table.clone(),
            }
        })
        .collect();
    // Sequences, so that a driver's question for one (SQLAlchemy's `has_sequence`) finds it.
    // A `SERIAL` or identity column's sequence is `<table>_<column>_seq`, owned by it.
    let owners: Vec<(String, (String, String, bool))> = tables
        .iter()
        .flat_map(|t| {
            t.schema.fields.iter().enumerate().filter_map(|(i, f)| {
                let identity = match t.default_of(i)? {
                    DefaultValue::Serial => false,
                    DefaultValue::Identity { .. } => true,
                    DefaultValue::Expr(_) => return None,
                };
                let name = format!("{}_{}_seq", t.name, f.name).to_lowercase();
                Some((name, (t.name.clone(), f.name.clone(), identity)))
            })
        })
        .collect();
    out.extend(cluster.sequences().into_iter().map(|s| {
        Relation {
            sequence: Some(SequenceInfo {
                start: s.start,
                min: s.min,
                max: s.max,
                increment: s.increment,
                owner: owners
                    .iter()
                    .find(|(name, _)| *name == s.name)
                    .map(|(_, owner)| owner.clone())
                    .or_else(|| {
                        // `OWNED BY table.column` of a sequence made by CREATE SEQUENCE.
                        let o = s.owner.as_ref()?;
                        let t = tables
                            .iter()
                            .find(|t| t.name.eq_ignore_ascii_case(&o.table))?;
                        let c = t.schema.index_of(&o.column)?;
                        Some((t.name.clone(), t.schema.fields[c].name.clone(), false))
                    }),
            }),
            name: s.name,
            view_sql: None,
            external: false,
            columns: Vec::new(),
            indexes: Vec::new(),
            foreign_keys: Vec::new(),
            referenced_by: Vec::new(),
            checks: Vec::new(),
            comment: None,
        }
    }));
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
                    default: None,
                    identity: "",
                    comment: None,
                }
            })
            .collect();
        out.push(Relation {
            name: v.name,
            view_sql: Some(v.sql),
            external: false,
            sequence: None,
            columns,
            indexes: Vec::new(),
            foreign_keys: Vec::new(),
            referenced_by: Vec::new(),
            checks: Vec::new(),
            comment: None,
        });
    }
    Ok(out)
}
