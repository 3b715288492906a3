//! The little of `pg_catalog` weir answers: psql's lists (`\d`, `\dt`, `\dv`, `\di`, `\ds`, with or
//! without `+` and a name pattern; `\l`, `\dn`, `\du` and `\df`), recognized by the query psql sends for them (its `\d NAME`,
//! and the drivers' catalog questions, are [`crate::describe`]'s). Any other query of `pg_catalog` is refused with 0A000 and a message
//! that says so, rather than "unknown table". (`information_schema`'s `tables`, `columns`,
//! `views`, `sequences` and `schemata` are the planner's, answered as any query.)

use pgwire::error::PgWireResult;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::errors::user_error;
use weir_operators::Value;

/// Which of psql's lists a query is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// `\d`, `\dt`, `\dv`, `\di`, `\ds` (and with `+`): relations from `pg_class`.
    Relations {
        /// Tables are listed.
        tables: bool,
        /// Views are listed.
        views: bool,
        /// Indexes are listed (with the table each is on).
        indexes: bool,
        /// Sequences are listed (`\ds`, and `\d`).
        sequences: bool,
    },
    /// `\l`: the databases (`pg_database`).
    Databases,
    /// `\dn`: the schemas (`pg_namespace`).
    Schemas,
    /// `\du` (and `\dg`): the roles (`pg_roles`): the session's user, the one role weir knows.
    Roles,
    /// `\df`: the functions of the user's schemas (`pg_proc`): weir has none.
    Functions,
}

/// The columns of `pg_roles` that psql's `\du` reads (by name: its query has no titles).
const ROLE_COLUMNS: [&str; 11] = [
    "rolname",
    "rolsuper",
    "rolinherit",
    "rolcreaterole",
    "rolcreatedb",
    "rolcanlogin",
    "rolconnlimit",
    "rolvaliduntil",
    "memberof",
    "rolreplication",
    "rolbypassrls",
];

/// The columns of psql's `\du` query, in the order it asks for them: those of
/// [`ROLE_COLUMNS`] it names (`r.rolname`, `... as memberof`).
fn role_columns(sql: &str) -> Vec<String> {
    let lower = sql.to_ascii_lowercase();
    let mut found: Vec<(usize, &str)> = ROLE_COLUMNS
        .iter()
        .filter_map(|c| {
            lower
                .find(&format!("r.{c}"))
                .or_else(|| lower.find(&format!("as {c}")))
                .map(|at| (at, *c))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, c)| c.to_string()).collect()
}

/// One of psql's lists (relations, databases, schemas), recognized by the query psql sends
/// for it: what it lists, the name pattern, and the columns asked for by their titles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelationList {
    /// What is listed.
    pub kind: ListKind,
    /// The pattern of `\d PATTERN`, as psql wrote it (`None`: every relation).
    pub pattern: Option<String>,
    /// The column titles, in order (`Schema`, `Name`, `Type`, `Owner`, `Size`, ...).
    pub columns: Vec<String>,
}

/// The titles of a psql list query's columns: every `as "Title"`, in order.
fn titles(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = sql;
    while let Some(at) = rest.to_ascii_lowercase().find(" as \"") {
        let after = &rest[at + 5..];
        let Some(end) = after.find('"') else {
            break;
        };
        out.push(after[..end].to_string());
        rest = &after[end + 1..];
    }
    out
}

/// Whether `sql` is the query of one of psql's lists: `\d`, `\dt`, `\dv`, `\di` (with or
/// without `+` and a pattern), `\l`, `\dn`, `\du` or `\df`.
pub fn psql_relation_list(sql: &str) -> Option<RelationList> {
    let pattern = sql
        .split("OPERATOR(pg_catalog.~) '")
        .nth(1)
        .and_then(|p| p.split('\'').next())
        .map(str::to_string);
    if sql.contains("FROM pg_catalog.pg_roles r") && sql.contains("r.rolname") {
        return Some(RelationList {
            kind: ListKind::Roles,
            pattern,
            columns: role_columns(sql),
        });
    }
    let columns = titles(sql);
    let titled = |t: &str| columns.iter().any(|c| c == t);
    if !titled("Name") {
        return None;
    }
    let kind = if sql.contains("FROM pg_catalog.pg_class c")
        && titled("Schema")
        && titled("Type")
        && titled("Owner")
    {
        let kinds = sql.split("c.relkind IN (").nth(1)?.split(')').next()?;
        ListKind::Relations {
            tables: kinds.contains("'r'"),
            views: kinds.contains("'v'"),
            indexes: kinds.contains("'i'"),
            sequences: kinds.contains("'S'"),
        }
    } else if sql.contains("FROM pg_catalog.pg_database d") && titled("Owner") {
        ListKind::Databases
    } else if sql.contains("FROM pg_catalog.pg_namespace n") && titled("Owner") {
        ListKind::Schemas
    } else if sql.contains("FROM pg_catalog.pg_proc p") && titled("Argument data types") {
        ListKind::Functions
    } else {
        return None;
    };
    Some(RelationList {
        kind,
        pattern,
        columns,
    })
}

/// One entry of a list: its name and what psql shows of it.
struct Entry {
    name: String,
    /// `table`, `view`, `index` or `sequence` (relations only).
    kind: &'static str,
    /// The table an index is on; the access method of an index.
    table: Option<String>,
    method: Option<&'static str>,
    /// A table's comment (`COMMENT ON TABLE`).
    comment: Option<String>,
}

/// The rows of psql's list `list` in `cluster`: each column answered by its title
/// (`Schema`, `Name`, `Type`, `Owner`, `Persistence`, `Access method`, `Table`, `Encoding`,
/// `Description`, ...; what weir has no notion of, such as sizes and privileges, is NULL).
/// `owner` is the session's user; `database` its database.
pub fn listed(
    cluster: &weir_runtime::Cluster,
    list: &RelationList,
    owner: &str,
    database: impl FnOnce() -> String,
) -> Vec<Vec<Value>> {
    let entry = |name: String, kind: &'static str| Entry {
        name,
        kind,
        table: None,
        method: None,
        comment: None,
    };
    let mut entries: Vec<Entry> = match &list.kind {
        ListKind::Relations {
            tables,
            views,
            indexes,
            sequences,
        } => {
            let mut out = Vec::new();
            let defs = cluster.tables();
            if *tables {
                out.extend(defs.iter().map(|t| Entry {
                    comment: t.comments.table.clone(),
                    ..entry(t.name.clone(), "table")
                }));
            }
            if *views {
                out.extend(cluster.views().into_iter().map(|v| entry(v.name, "view")));
            }
            if *sequences {
                let all = cluster.sequences().into_iter();
                out.extend(all.map(|s| entry(s.name, "sequence")));
            }
            if *indexes {
                for t in &defs {
                    let on = |name: String, method| Entry {
                        name,
                        kind: "index",
                        table: Some(t.name.clone()),
                        method: Some(method),
                        comment: None,
                    };
                    if !t.primary_key.is_empty() {
                        out.push(on(format!("{}_pkey", t.name), "hash"));
                    }
                    out.extend(t.indexes.iter().map(|ix| on(ix.name.clone(), "btree")));
                }
            }
            out
        }
        ListKind::Databases => vec![entry(database(), "")],
        ListKind::Schemas => vec![entry("public".to_string(), "")],
        ListKind::Roles => vec![entry(owner.to_string(), "")],
        ListKind::Functions => Vec::new(),
    };
    entries.retain(|e| list.pattern.as_deref().is_none_or(|p| matches(p, &e.name)));
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let text = |s: &str| Value::Str(s.to_string());
    entries
        .into_iter()
        .map(|e| {
            list.columns
                .iter()
                .map(|title| match title.as_str() {
                    "Schema" => text("public"),
                    "Name" => text(&e.name),
                    "Type" => text(e.kind),
                    "Owner" => text(owner),
                    "Persistence" => text("permanent"),
                    "Access method" => e.method.map_or(Value::Null, text),
                    "Table" => e.table.as_deref().map_or(Value::Null, text),
                    "Description" => e.comment.as_deref().map_or(Value::Null, text),
                    "Encoding" => text("UTF8"),
                    "Collate" | "Ctype" => text("C"),
                    "Locale Provider" => text("libc"),
                    // `\du`'s: the session's user may do anything weir does, and weir has no
                    // other roles (psql reads booleans as `t` and `f`).
                    "rolname" => text(&e.name),
                    "rolsuper" | "rolinherit" | "rolcanlogin" => text("t"),
                    "rolcreaterole" | "rolcreatedb" | "rolreplication" | "rolbypassrls" => {
                        text("f")
                    }
                    "rolconnlimit" => text("-1"),
                    "memberof" => text("{}"),
                    _ => Value::Null,
                })
                .collect()
        })
        .collect()
}

/// Whether a relation name matches psql's pattern: `^(name)$`, with `.*` for any text and
/// `|` between alternatives (names compare case-insensitively, as weir's names do).
pub fn matches(pattern: &str, name: &str) -> bool {
    let p = pattern
        .trim_start_matches('^')
        .trim_end_matches('$')
        .trim_start_matches('(')
        .trim_end_matches(')');
    p.split('|')
        .any(|alt| wildcard(&alt.to_lowercase(), &name.to_lowercase()))
}

/// `pattern` with `.*` standing for any text.
fn wildcard(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split(".*").collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let mut rest = name;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// The error for a query of the system catalogs weir does not answer: one naming
/// `pg_catalog.` something.
pub fn refuse_catalog_query(tokens: &[TokenWithSpan]) -> PgWireResult<()> {
    let code: Vec<&Token> = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    // A relation of pg_catalog; its functions (`pg_catalog.setval(...)`, as `pg_dump`
    // writes them) are weir's functions of the same name.
    let names_catalog = code.windows(4).any(|w| match (w[0], w[1], w[3]) {
        (Token::Word(word), Token::Period, next) => {
            word.value.eq_ignore_ascii_case("pg_catalog") && *next != Token::LParen
        }
        _ => false,
    }) || matches!(code.as_slice(), [.., Token::Word(w), Token::Period, _]
            if w.value.eq_ignore_ascii_case("pg_catalog"));
    if names_catalog {
        return Err(user_error(
            "0A000",
            "pg_catalog is not available in weir: psql's \\d commands and SQLAlchemy's \
             reflection are answered, and information_schema.tables, .columns, .views, \
             .sequences and .schemata describe the relations",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DT: &str = "SELECT n.nspname as \"Schema\",\n  c.relname as \"Name\",\n  CASE c.relkind \
        WHEN 'r' THEN 'table' END as \"Type\",\n  pg_catalog.pg_get_userbyid(c.relowner) as \
        \"Owner\"\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid \
        = c.relnamespace\nWHERE c.relkind IN ('r','p','')\n  AND c.relname OPERATOR(pg_catalog.~) \
        '^(k.*)$' COLLATE pg_catalog.default\nORDER BY 1,2;";

    #[test]
    fn psql_lists_are_recognized() {
        let l = psql_relation_list(DT).unwrap();
        assert_eq!(
            l.kind,
            ListKind::Relations {
                tables: true,
                views: false,
                indexes: false,
                sequences: false,
            },
            "\\dt lists tables only"
        );
        assert_eq!(l.pattern.as_deref(), Some("^(k.*)$"));
        assert_eq!(l.columns, ["Schema", "Name", "Type", "Owner"]);
        assert!(psql_relation_list("SELECT * FROM pg_catalog.pg_class").is_none());
        let refused = |sql: &str| refuse_catalog_query(&crate::split::tokenize(sql).unwrap());
        assert!(refused("SELECT * FROM pg_catalog.pg_type").is_err());
        assert!(refused("SELECT * FROM information_schema.tables").is_ok());
        assert!(refused("SELECT 'pg_catalog.x' FROM t").is_ok());
    }

    #[test]
    fn databases_schemas_indexes_and_the_plus_lists_are_recognized() {
        // As psql 15 sends them for `\\l`, `\\dn`, `\\di` and `\\dt+`.
        let l = "SELECT d.datname as \"Name\",\n       pg_catalog.pg_get_userbyid(d.datdba) as \
            \"Owner\",\n       pg_catalog.pg_encoding_to_char(d.encoding) as \"Encoding\"\n\
            FROM pg_catalog.pg_database d\nORDER BY 1;";
        let list = psql_relation_list(l).unwrap();
        assert_eq!(list.kind, ListKind::Databases);
        assert_eq!(list.columns, ["Name", "Owner", "Encoding"]);
        let dn = "SELECT n.nspname AS \"Name\",\n  pg_catalog.pg_get_userbyid(n.nspowner) AS \
            \"Owner\"\nFROM pg_catalog.pg_namespace n\nWHERE n.nspname !~ '^pg_' AND \
            n.nspname <> 'information_schema'\nORDER BY 1;";
        assert_eq!(psql_relation_list(dn).unwrap().kind, ListKind::Schemas);
        let di = DT
            .replace("('r','p','')", "('i','I','')")
            .replace("as \"Owner\"", "as \"Owner\",\n  c2.relname as \"Table\"");
        let list = psql_relation_list(&di).unwrap();
        assert_eq!(
            list.kind,
            ListKind::Relations {
                tables: false,
                views: false,
                indexes: true,
                sequences: false,
            }
        );
        assert_eq!(list.columns, ["Schema", "Name", "Type", "Owner", "Table"]);
        let ds = DT.replace("('r','p','')", "('S','')");
        assert_eq!(
            psql_relation_list(&ds).unwrap().kind,
            ListKind::Relations {
                tables: false,
                views: false,
                indexes: false,
                sequences: true,
            },
            "\\ds lists sequences only"
        );
        let plus = DT.replace(
            "as \"Owner\"",
            "as \"Owner\",\n  pg_catalog.pg_size_pretty(pg_catalog.pg_table_size(c.oid)) as \"Size\"",
        );
        assert_eq!(psql_relation_list(&plus).unwrap().columns.len(), 5);
        // A query with no titled Name column is no list.
        assert!(psql_relation_list("SELECT datname FROM pg_catalog.pg_database d").is_none());
    }

    #[test]
    fn roles_and_functions_are_recognized() {
        // As psql 15 sends them for `\\du` and `\\df`.
        let du = "SELECT r.rolname, r.rolsuper, r.rolinherit,\n  r.rolcreaterole, r.rolcreatedb, \
            r.rolcanlogin,\n  r.rolconnlimit, r.rolvaliduntil,\n  ARRAY(SELECT b.rolname\n        \
            FROM pg_catalog.pg_auth_members m\n        JOIN pg_catalog.pg_roles b ON (m.roleid = \
            b.oid)\n        WHERE m.member = r.oid) as memberof\n, r.rolreplication\n, \
            r.rolbypassrls\nFROM pg_catalog.pg_roles r\nWHERE r.rolname !~ '^pg_'\nORDER BY 1;";
        let list = psql_relation_list(du).unwrap();
        assert_eq!(list.kind, ListKind::Roles);
        assert_eq!(list.columns, ROLE_COLUMNS);
        let df = "SELECT n.nspname as \"Schema\",\n  p.proname as \"Name\",\n  \
            pg_catalog.pg_get_function_result(p.oid) as \"Result data type\",\n  \
            pg_catalog.pg_get_function_arguments(p.oid) as \"Argument data types\",\n CASE \
            p.prokind\n  WHEN 'a' THEN 'agg'\n  ELSE 'func'\n END as \"Type\"\nFROM \
            pg_catalog.pg_proc p\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = \
            p.pronamespace\nWHERE pg_catalog.pg_function_is_visible(p.oid)\nORDER BY 1, 2, 4;";
        let list = psql_relation_list(df).unwrap();
        assert_eq!(list.kind, ListKind::Functions);
        assert_eq!(list.columns.len(), 5);
    }

    #[test]
    fn patterns_match_names() {
        assert!(matches("^(kv)$", "KV"));
        assert!(!matches("^(kv)$", "kv2"));
        assert!(matches("^(k.*)$", "kv2"));
        assert!(matches("^(.*v)$", "kv"));
        assert!(matches("^(a|kv)$", "kv"));
    }
}
