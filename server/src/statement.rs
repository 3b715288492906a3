//! What a statement is before it runs: a weir query or write, prepared on the cluster
//! ([`Kind::Query`], [`Kind::Write`], [`Kind::Returning`]); a COPY with the client ([`Kind::Copy`]); or one the
//! server answers itself ([`Local`]): the
//! transaction commands, `SET`, `SHOW`, `RESET`, `DISCARD`, and a `SELECT` of the system
//! functions drivers call (`version()`, `current_schema()`, `current_database()`, ...). And,
//! for the extended protocol's Describe, its parameter types and result columns
//! (`describe_query`, through [`classify`]).
//!
//! A weir statement is prepared with [`Cluster::prepare`] once, when the client parses it;
//! every Bind/Execute then runs the kept plan (planned again only after DDL or for other
//! parameter types). Parameter types come from the client's Parse message when it gives them,
//! else from the plan (a query's parameters are typed by where they stand: `k = $1` takes
//! `k`'s type), else from the target columns of an `INSERT ... VALUES` or `UPDATE ... SET`;
//! a parameter nothing types is `text`.

use std::sync::Arc;

use pgwire::api::Type;
use pgwire::error::{PgWireError, PgWireResult};
use sqlparser::ast::{self as sql, Expr, SelectItem, SetExpr};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan};
use weir_operators::{DataType, Value};
use weir_runtime::{Cluster, Prepared};

use crate::column_names::{column_names, ColumnName};
use crate::errors::{to_pg, user_error};
use crate::split::{leading_words, param_count, tokenize};
use crate::types::pg_type;

/// A prepared statement that owns its cluster handle, so that it can outlive the call that
/// made it (the extended protocol keeps it until the client closes it).
mod cell {
    use std::sync::Arc;
    use weir_runtime::{Cluster, Prepared};

    /// [`Prepared`] borrows its cluster.
    pub type PreparedOn<'a> = Prepared<'a>;

    self_cell::self_cell!(
        /// A weir prepared statement with the cluster it runs on.
        pub struct PreparedCell {
            owner: Arc<Cluster>,
            #[covariant]
            dependent: PreparedOn,
        }
    );
}
pub use cell::PreparedCell;

/// A statement as the server keeps it between Parse and Execute.
pub struct Stmt {
    /// The statement's text.
    pub sql: String,
    /// How it runs.
    pub kind: Kind,
    /// Parameter types, as Describe reports them and Bind reads values.
    pub params: Vec<Type>,
    /// The weir type each parameter must have where the plan says so.
    pub expected: Vec<Option<DataType>>,
    /// Result columns (name and weir type, named as PostgreSQL names them); empty for a
    /// statement returning no rows.
    pub columns: Vec<(String, DataType)>,
    /// The names PostgreSQL gives its result columns, one per select-list item (empty: weir's).
    pub names: Vec<ColumnName>,
}

impl Stmt {
    /// Renames `columns`, as weir's plan names them, as PostgreSQL names this statement's.
    pub fn rename(&self, columns: &mut [(String, DataType)]) {
        crate::column_names::rename(&self.names, columns);
    }
}

/// How a statement runs.
pub enum Kind {
    /// A weir query: rows stream back.
    Query(Option<PreparedCell>),
    /// A weir statement that returns a count or nothing (INSERT, UPDATE, DELETE, DDL), with
    /// the command tag's word(s).
    Write(Option<PreparedCell>, WriteTag),
    /// `INSERT`, `UPDATE` or `DELETE ... RETURNING`: a write whose rows come back, tagged
    /// as the write ([`WriteTag::Insert`], [`WriteTag::Update`], [`WriteTag::Delete`]).
    Returning(Option<PreparedCell>, WriteTag),
    /// Answered by the server.
    Local(Local),
    /// One of the catalog queries of psql's `\d NAME`, answered by the server from the
    /// cluster's catalog (which it reads off the async workers).
    Describe(crate::describe::Describe),
    /// `COPY ... FROM STDIN` or `COPY ... TO STDOUT`.
    Copy(crate::copy::CopySpec),
}

/// The command tag of a write: `INSERT 0 n`, `UPDATE n`, `DELETE n`, `SELECT n` (CREATE
/// TABLE AS) count rows; DDL tags name the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteTag {
    /// `INSERT 0 n`.
    Insert,
    /// `UPDATE n`.
    Update,
    /// `DELETE n`.
    Delete,
    /// `SELECT n` (as PostgreSQL tags CREATE TABLE AS).
    Select,
    /// A command without a count (`CREATE TABLE`, `DROP VIEW`, ...).
    Command(&'static str),
}

/// A statement the server answers itself.
pub enum Local {
    /// `BEGIN` / `START TRANSACTION`.
    Begin,
    /// `COMMIT` / `END`.
    Commit,
    /// `ROLLBACK` / `ABORT`.
    Rollback,
    /// `SAVEPOINT name` (in a block: ROLLBACK TO it undoes nothing, and says so).
    Savepoint(String),
    /// `RELEASE [SAVEPOINT] name`.
    Release(String),
    /// `ROLLBACK [WORK | TRANSACTION] TO [SAVEPOINT] name`.
    RollbackTo(String),
    /// `SET name = value` (`None`: back to the default).
    Set(String, Option<String>),
    /// A `SET` that changes nothing weir has (`SET TRANSACTION ...`).
    SetIgnored,
    /// `RESET name` / `RESET ALL` (`None`).
    Reset(Option<String>),
    /// `SHOW name`.
    Show(String),
    /// `SHOW ALL`.
    ShowAll,
    /// `DISCARD ...`, `DEALLOCATE ...`: accepted, the tag given back.
    Accept(&'static str),
    /// A `SELECT` of system functions, one per column.
    System(Vec<SystemFn>),
    /// psql's `\d` / `\dt`: the relations, as its catalog query would list them.
    Relations(crate::catalog::RelationList),
}

/// A system function a `SELECT` without FROM may call.
#[derive(Clone, Debug, PartialEq)]
pub enum SystemFn {
    /// `version()`.
    Version,
    /// `current_schema()`, `current_schema`.
    CurrentSchema,
    /// `current_database()`, `current_catalog`.
    CurrentDatabase,
    /// `current_user`, `session_user`, `user`, `current_role`.
    CurrentUser,
    /// `pg_backend_pid()`.
    BackendPid,
    /// `current_setting('name')`.
    CurrentSetting(String),
    /// `pg_is_in_recovery()`.
    InRecovery,
    /// `set_config('name', 'value', is_local)`: `SET name = value` for the session (a
    /// transaction-local one too: weir has no transactions), answering the value, as
    /// `pg_dump`'s scripts call it.
    SetConfig(String, String),
}

impl SystemFn {
    /// The type of the function's value.
    pub fn data_type(&self) -> DataType {
        match self {
            SystemFn::BackendPid => DataType::Int64,
            SystemFn::InRecovery => DataType::Boolean,
            _ => DataType::Utf8,
        }
    }
}

/// The savepoint name that is word `i` of the statement (as written: a quoted name keeps its
/// case), or a syntax error when there is none.
fn savepoint_name(tokens: &[TokenWithSpan], i: usize) -> PgWireResult<String> {
    tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .nth(i)
        .and_then(|t| match &t.token {
            Token::Word(w) => Some(w.value.clone()),
            _ => None,
        })
        .ok_or_else(|| user_error("42601", "syntax error: a savepoint needs a name"))
}

/// The tokens of `sql`, a syntax error (42601) when it does not tokenize.
fn tokens_of(sql: &str) -> PgWireResult<Vec<TokenWithSpan>> {
    tokenize(sql).map_err(|e| user_error("42601", format!("syntax error: {e}")))
}

/// Classifies one statement. With `prepare`, a weir statement is prepared on the cluster
/// and described (its parameter types, its result columns) for the extended protocol;
/// without, it is only classified (the simple protocol runs it once, by its text).
/// `client_types` are the parameter types of the client's Parse message.
pub fn classify(
    cluster: &Arc<Cluster>,
    sql: &str,
    client_types: &[Option<Type>],
    prepare: bool,
) -> PgWireResult<Stmt> {
    let tokens = tokens_of(sql)?;
    let words = leading_words(&tokens, 6);
    let word = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    let local = |kind: Local, columns: Vec<(String, DataType)>| -> PgWireResult<Stmt> {
        Ok(Stmt {
            sql: sql.to_string(),
            kind: Kind::Local(kind),
            params: vec![],
            expected: vec![],
            columns,
            names: vec![],
        })
    };
    let text_column = |name: &str| vec![(name.to_string(), DataType::Utf8)];
    match word(0) {
        "BEGIN" => return local(Local::Begin, vec![]),
        "START" if word(1) == "TRANSACTION" => return local(Local::Begin, vec![]),
        "COMMIT" | "END" => return local(Local::Commit, vec![]),
        "ROLLBACK" | "ABORT" => {
            let mut i = 1;
            if matches!(word(i), "WORK" | "TRANSACTION") {
                i += 1;
            }
            if word(i) != "TO" {
                return local(Local::Rollback, vec![]);
            }
            i += 1;
            if word(i) == "SAVEPOINT" {
                i += 1;
            }
            return local(Local::RollbackTo(savepoint_name(&tokens, i)?), vec![]);
        }
        "SAVEPOINT" => return local(Local::Savepoint(savepoint_name(&tokens, 1)?), vec![]),
        "RELEASE" => {
            let i = if word(1) == "SAVEPOINT" { 2 } else { 1 };
            return local(Local::Release(savepoint_name(&tokens, i)?), vec![]);
        }
        "SET" => return local(parse_set(&tokens)?, vec![]),
        "RESET" => {
            let name = word(1).to_ascii_lowercase();
            let name = (name != "all").then_some(name);
            return local(Local::Reset(name), vec![]);
        }
        "SHOW" => {
            let name = match (word(1), word(2)) {
                ("ALL", _) => {
                    let columns = ["name", "setting", "description"]
                        .iter()
                        .map(|n| (n.to_string(), DataType::Utf8))
                        .collect();
                    return local(Local::ShowAll, columns);
                }
                ("TRANSACTION", "ISOLATION") => "transaction_isolation".to_string(),
                ("TIME", "ZONE") => "timezone".to_string(),
                ("", _) => return Err(user_error("42601", "SHOW needs a parameter name")),
                (n, _) => n.to_ascii_lowercase(),
            };
            let columns = text_column(&name);
            return local(Local::Show(name), columns);
        }
        "DISCARD" => return local(Local::Accept("DISCARD ALL"), vec![]),
        "DEALLOCATE" => return local(Local::Accept("DEALLOCATE"), vec![]),
        "COPY" => {
            return Ok(Stmt {
                sql: sql.to_string(),
                kind: Kind::Copy(crate::copy::parse_copy(sql, &tokens)?),
                params: vec![],
                expected: vec![],
                columns: vec![],
                names: vec![],
            })
        }
        "PREPARE" | "EXECUTE" | "LISTEN" | "NOTIFY" | "UNLISTEN" | "LOCK" | "VACUUM"
        | "ANALYZE" => {
            return Err(user_error(
                "0A000",
                format!("{} is not supported by weir", word(0)),
            ))
        }
        _ => {}
    }
    if let Some(list) = crate::catalog::psql_relation_list(sql) {
        let columns = list
            .columns
            .iter()
            .map(|n| (n.clone(), DataType::Utf8))
            .collect();
        return local(Local::Relations(list), columns);
    }
    if let Some(describe) = crate::describe::psql_describe(&tokens) {
        return Ok(Stmt {
            sql: sql.to_string(),
            params: vec![Type::TEXT; describe.params()],
            expected: vec![None; describe.params()],
            columns: describe.columns(),
            names: vec![],
            kind: Kind::Describe(describe),
        });
    }
    let parsed = Parser::parse_sql(&GenericDialect {}, sql).ok();
    let ast = parsed.as_ref().and_then(|s| s.first());
    if let Some(sql::Statement::Query(q)) = ast {
        if let Some(fns) = system_select(q) {
            let columns = fns
                .iter()
                .map(|(name, f)| (name.clone(), f.data_type()))
                .collect();
            let fns = fns.into_iter().map(|(_, f)| f).collect();
            return local(Local::System(fns), columns);
        }
    }
    crate::catalog::refuse_catalog_query(&tokens)?;
    // A command only weir's planner reads (sqlparser does not), answered with its tag.
    let unparsed_command = match (ast, word(0), word(1)) {
        (None, "ALTER", "SEQUENCE") => Some("ALTER SEQUENCE"),
        // `ALTER TABLE ... ALTER COLUMN c ADD GENERATED ... AS IDENTITY (...)`.
        (None, "ALTER", "TABLE") => Some("ALTER TABLE"),
        _ => None,
    };
    let returns_rows = match ast {
        Some(sql::Statement::Query(_)) | Some(sql::Statement::Explain { .. }) => true,
        Some(_) => false,
        // Text sqlparser cannot parse is given to weir as a query: its planner says what
        // is wrong with it (or runs what only weir reads).
        None => unparsed_command.is_none(),
    };
    let write_tag = |ast| match unparsed_command {
        Some(command) => WriteTag::Command(command),
        None => write_tag(ast),
    };
    let returning = match ast {
        Some(sql::Statement::Insert(i)) => i.returning.is_some(),
        Some(sql::Statement::Update(u)) => u.returning.is_some(),
        Some(sql::Statement::Delete(d)) => d.returning.is_some(),
        _ => false,
    };
    let names = ast.map(column_names).unwrap_or_default();
    if !prepare {
        let kind = if returning {
            Kind::Returning(None, write_tag(ast))
        } else if returns_rows {
            Kind::Query(None)
        } else {
            Kind::Write(None, write_tag(ast))
        };
        return Ok(Stmt {
            sql: sql.to_string(),
            kind,
            params: vec![],
            expected: vec![],
            columns: vec![],
            names,
        });
    }
    let prepared = PreparedCell::try_new(cluster.clone(), |c| c.prepare(sql)).map_err(to_pg)?;
    let n = param_count(&tokens);
    if let Some(sql::Statement::Explain { .. }) = ast {
        // EXPLAIN answers one text column, `plan`, a line a row.
        let expected = vec![None; n];
        return Ok(Stmt {
            sql: sql.to_string(),
            kind: Kind::Query(Some(prepared)),
            params: resolve(&expected, client_types),
            expected,
            columns: vec![("plan".to_string(), DataType::Utf8)],
            names: vec![],
        });
    }
    if returning {
        let expected = write_param_types(cluster, ast, n);
        let params = resolve(&expected, client_types);
        let stand_ins: Vec<Value> = params.iter().map(stand_in).collect();
        let mut columns: Vec<(String, DataType)> = cluster
            .result_columns(sql, &stand_ins)
            .or_else(|_| cluster.result_columns(sql, &vec![Value::Null; n]))
            .map_err(to_pg)?
            .map(|schema| {
                schema
                    .fields
                    .iter()
                    .map(|f| (f.name.clone(), f.data_type))
                    .collect()
            })
            .unwrap_or_default();
        crate::column_names::rename(&names, &mut columns);
        return Ok(Stmt {
            sql: sql.to_string(),
            kind: Kind::Returning(Some(prepared), write_tag(ast)),
            params,
            expected,
            columns,
            names,
        });
    }
    if returns_rows {
        let (params, expected, mut columns) = describe_query(cluster, sql, n, client_types)?;
        crate::column_names::rename(&names, &mut columns);
        Ok(Stmt {
            sql: sql.to_string(),
            kind: Kind::Query(Some(prepared)),
            params,
            expected,
            columns,
            names,
        })
    } else {
        let expected = write_param_types(cluster, ast, n);
        let params = resolve(&expected, client_types);
        Ok(Stmt {
            sql: sql.to_string(),
            kind: Kind::Write(Some(prepared), write_tag(ast)),
            params,
            expected,
            columns: vec![],
            names: vec![],
        })
    }
}

/// The parameter types Describe reports: the client's where given, else the one weir
/// expects, else `text`.
fn resolve(expected: &[Option<DataType>], client_types: &[Option<Type>]) -> Vec<Type> {
    expected
        .iter()
        .enumerate()
        .map(|(i, e)| {
            client_types
                .get(i)
                .cloned()
                .flatten()
                .or_else(|| e.map(pg_type))
                .unwrap_or(Type::TEXT)
        })
        .collect()
}

/// A value of PostgreSQL type `t`, standing in for a parameter when a query is planned for
/// its result columns.
fn stand_in(t: &Type) -> Value {
    match *t {
        Type::INT2 | Type::INT4 | Type::INT8 => Value::Int(0),
        Type::FLOAT4 | Type::FLOAT8 => Value::Float(0.0),
        Type::NUMERIC => Value::Decimal(0, 0),
        Type::BOOL => Value::Bool(false),
        Type::DATE => Value::Date(0),
        Type::TIMESTAMP | Type::TIMESTAMPTZ => Value::Timestamp(0),
        _ => Value::Str(String::new()),
    }
}

/// A query's parameter types (reported and expected) and result columns: planned once with
/// NULL parameters (which fit any type) to learn the types weir expects, then with values
/// of the reported types, so that the columns are those the query will return.
#[allow(clippy::type_complexity)]
fn describe_query(
    cluster: &Cluster,
    sql: &str,
    n: usize,
    client_types: &[Option<Type>],
) -> PgWireResult<(Vec<Type>, Vec<Option<DataType>>, Vec<(String, DataType)>)> {
    let nulls = vec![Value::Null; n];
    let first = cluster.plan_query(sql, &nulls);
    let mut expected = match &first {
        Ok(plan) => plan.param_types.clone(),
        Err(_) => vec![None; n],
    };
    expected.resize(n, None);
    let params = resolve(&expected, client_types);
    let stand_ins: Vec<Value> = params.iter().map(stand_in).collect();
    let schema = match cluster.plan_query(sql, &stand_ins) {
        Ok(plan) => plan.output_schema,
        Err(e) => match first {
            Ok(plan) => plan.output_schema,
            // A SELECT that is no query (`SELECT nextval('s')`): its columns, without
            // running it.
            Err(_) => match cluster.result_columns(sql, &stand_ins) {
                Ok(Some(schema)) => schema,
                Ok(None) => return Err(to_pg(e)),
                Err(e) => return Err(to_pg(e)),
            },
        },
    };
    let columns = schema
        .fields
        .iter()
        .map(|f| (f.name.clone(), f.data_type))
        .collect();
    Ok((params, expected, columns))
}

/// The tag of a write, from its syntax tree.
fn write_tag(ast: Option<&sql::Statement>) -> WriteTag {
    use sql::Statement as S;
    match ast {
        Some(S::Insert(_)) => WriteTag::Insert,
        Some(S::Update(_)) => WriteTag::Update,
        Some(S::Delete(_)) => WriteTag::Delete,
        Some(S::CreateTable(t)) if t.query.is_some() => WriteTag::Select,
        Some(S::CreateTable(_)) => WriteTag::Command("CREATE TABLE"),
        Some(S::CreateIndex(_)) => WriteTag::Command("CREATE INDEX"),
        Some(S::CreateView(_)) => WriteTag::Command("CREATE VIEW"),
        Some(S::AlterTable(_)) => WriteTag::Command("ALTER TABLE"),
        Some(S::Comment { .. }) => WriteTag::Command("COMMENT"),
        Some(S::CreateSequence { .. }) => WriteTag::Command("CREATE SEQUENCE"),
        Some(S::Truncate(_)) => WriteTag::Command("TRUNCATE TABLE"),
        Some(S::Drop { object_type, .. }) => match object_type {
            sql::ObjectType::Table => WriteTag::Command("DROP TABLE"),
            sql::ObjectType::View => WriteTag::Command("DROP VIEW"),
            sql::ObjectType::Index => WriteTag::Command("DROP INDEX"),
            sql::ObjectType::Sequence => WriteTag::Command("DROP SEQUENCE"),
            _ => WriteTag::Command("DROP"),
        },
        _ => WriteTag::Command("OK"),
    }
}

/// The parameter index of placeholder `s` (`$n` is n - 1); `?` takes the next in order.
fn placeholder_index(s: &str, next_qmark: &mut usize) -> Option<usize> {
    if s == "?" {
        *next_qmark += 1;
        Some(*next_qmark - 1)
    } else {
        s.strip_prefix('$')?.parse::<usize>().ok()?.checked_sub(1)
    }
}

/// The placeholder an expression is, if it is one.
fn placeholder(e: &Expr) -> Option<&str> {
    match e {
        Expr::Value(v) => match &v.value {
            sql::Value::Placeholder(s) => Some(s),
            _ => None,
        },
        // `$1::VARCHAR`, as SQLAlchemy writes its parameters: the value goes to the column
        // all the same.
        Expr::Nested(inner) | Expr::Cast { expr: inner, .. } => placeholder(inner),
        _ => None,
    }
}

/// The last part of a (possibly qualified) name, lower-cased.
fn last_name(name: &sql::ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.to_ascii_lowercase())
        .unwrap_or_default()
}

/// The parameter types of a write: a placeholder standing for a column (a VALUES row of an
/// INSERT, `SET col = $n` of an UPDATE or of an INSERT's `ON CONFLICT ... DO UPDATE`) takes
/// the column's type; those of a WHERE clause or
/// an INSERT's query are typed by planning them as a query.
fn write_param_types(
    cluster: &Cluster,
    ast: Option<&sql::Statement>,
    n: usize,
) -> Vec<Option<DataType>> {
    let mut types: Vec<Option<DataType>> = vec![None; n];
    if n == 0 {
        return types;
    }
    let tables = cluster.tables();
    let columns_of = |table: &str| -> Vec<(String, DataType)> {
        tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(table))
            .map(|t| {
                t.schema
                    .fields
                    .iter()
                    .map(|f| (f.name.to_ascii_lowercase(), f.data_type))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut set = |i: Option<usize>, t: Option<DataType>| {
        if let (Some(i), Some(t)) = (i, t) {
            if let Some(slot) = types.get_mut(i) {
                slot.get_or_insert(t);
            }
        }
    };
    let mut next_qmark = 0usize;
    let mut query_text: Option<String> = None;
    match ast {
        Some(sql::Statement::Insert(ins)) => {
            let table = match &ins.table {
                sql::TableObject::TableName(name) => last_name(name),
                _ => String::new(),
            };
            let all = columns_of(&table);
            let targets: Vec<Option<DataType>> = if ins.columns.is_empty() {
                all.iter().map(|c| Some(c.1)).collect()
            } else {
                ins.columns
                    .iter()
                    .map(|c| {
                        let c = last_name(c);
                        all.iter().find(|(n, _)| *n == c).map(|x| x.1)
                    })
                    .collect()
            };
            if let Some(source) = &ins.source {
                match source.body.as_ref() {
                    SetExpr::Values(values) => {
                        for row in &values.rows {
                            for (j, e) in row.content.iter().enumerate() {
                                if let Some(p) = placeholder(e) {
                                    let i = placeholder_index(p, &mut next_qmark);
                                    set(i, targets.get(j).copied().flatten());
                                }
                            }
                        }
                    }
                    _ => query_text = Some(source.to_string()),
                }
            }
            // `ON CONFLICT ... DO UPDATE SET col = $n`: the column's type, as in an UPDATE.
            if let Some(sql::OnInsert::OnConflict(sql::OnConflict {
                action: sql::OnConflictAction::DoUpdate(update),
                ..
            })) = &ins.on
            {
                for a in &update.assignments {
                    if let (sql::AssignmentTarget::ColumnName(c), Some(p)) =
                        (&a.target, placeholder(&a.value))
                    {
                        let c = last_name(c);
                        let t = all.iter().find(|(n, _)| *n == c).map(|x| x.1);
                        set(placeholder_index(p, &mut next_qmark), t);
                    }
                }
            }
        }
        Some(sql::Statement::Update(up)) => {
            let table = match &up.table.relation {
                sql::TableFactor::Table { name, .. } => last_name(name),
                _ => String::new(),
            };
            let all = columns_of(&table);
            for a in &up.assignments {
                if let (sql::AssignmentTarget::ColumnName(c), Some(p)) =
                    (&a.target, placeholder(&a.value))
                {
                    let c = last_name(c);
                    let t = all.iter().find(|(n, _)| *n == c).map(|x| x.1);
                    set(placeholder_index(p, &mut next_qmark), t);
                }
            }
            if let Some(w) = &up.selection {
                query_text = Some(format!("SELECT 1 FROM {} WHERE {w}", up.table));
            }
        }
        Some(sql::Statement::Delete(del)) => {
            let from = match &del.from {
                sql::FromTable::WithFromKeyword(t) | sql::FromTable::WithoutKeyword(t) => t,
            };
            if let (Some(t), Some(w)) = (from.first(), &del.selection) {
                query_text = Some(format!("SELECT 1 FROM {t} WHERE {w}"));
            }
        }
        _ => {}
    }
    // `$n` keeps its number in the query's text; `?` would not, so only `$n` is planned.
    if let Some(q) = query_text.filter(|_| next_qmark == 0) {
        if let Ok(plan) = cluster.plan_query(&q, &vec![Value::Null; n]) {
            for (i, t) in plan.param_types.iter().enumerate() {
                set(Some(i), *t);
            }
        }
    }
    types
}

/// The system functions of a `SELECT` without FROM whose every column calls one, with the
/// columns' names; `None` for any other query.
fn system_select(q: &sql::Query) -> Option<Vec<(String, SystemFn)>> {
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    if !s.from.is_empty() || s.selection.is_some() || q.order_by.is_some() {
        return None;
    }
    s.projection
        .iter()
        .map(|item| {
            let (e, alias) = match item {
                SelectItem::UnnamedExpr(e) => (e, None),
                SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
                _ => return None,
            };
            let (name, f) = system_fn(e)?;
            Some((alias.unwrap_or(name), f))
        })
        .collect()
}

/// The system function `e` calls, with PostgreSQL's name for its column.
fn system_fn(e: &Expr) -> Option<(String, SystemFn)> {
    let (name, args): (String, Vec<&Expr>) = match e {
        Expr::Function(f) => {
            let args = match &f.args {
                sql::FunctionArguments::None => vec![],
                sql::FunctionArguments::List(l) => l
                    .args
                    .iter()
                    .map(|a| match a {
                        sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => Some(e),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?,
                sql::FunctionArguments::Subquery(_) => return None,
            };
            (last_name(&f.name), args)
        }
        Expr::Identifier(i) => (i.value.to_ascii_lowercase(), vec![]),
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            (parts[1].value.to_ascii_lowercase(), vec![])
        }
        _ => return None,
    };
    let f = match (name.as_str(), args.as_slice()) {
        ("version", []) => SystemFn::Version,
        ("current_schema", []) => SystemFn::CurrentSchema,
        ("current_database" | "current_catalog", []) => SystemFn::CurrentDatabase,
        ("current_user" | "session_user" | "user" | "current_role", []) => SystemFn::CurrentUser,
        ("pg_backend_pid", []) => SystemFn::BackendPid,
        ("pg_is_in_recovery", []) => SystemFn::InRecovery,
        ("current_setting", [Expr::Value(v)]) => match &v.value {
            sql::Value::SingleQuotedString(s) => SystemFn::CurrentSetting(s.to_lowercase()),
            _ => return None,
        },
        ("set_config", [Expr::Value(n), Expr::Value(v), Expr::Value(_)]) => {
            match (&n.value, &v.value) {
                (sql::Value::SingleQuotedString(n), sql::Value::SingleQuotedString(v)) => {
                    SystemFn::SetConfig(n.to_lowercase(), v.clone())
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    Some((name, f))
}

/// A `SET` statement: `SET [SESSION | LOCAL] name {= | TO} value[, ...]`, `SET TIME ZONE
/// value`, `SET NAMES value`; `SET TRANSACTION ...` and `SET SESSION CHARACTERISTICS ...`
/// change nothing weir has.
fn parse_set(tokens: &[TokenWithSpan]) -> PgWireResult<Local> {
    let toks: Vec<&Token> = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::EOF | Token::SemiColon))
        .collect();
    fn word(t: &Token) -> Option<String> {
        match t {
            Token::Word(w) => Some(w.value.to_ascii_lowercase()),
            _ => None,
        }
    }
    let mut i = 1;
    if matches!(
        toks.get(i).and_then(|t| word(t)).as_deref(),
        Some("session" | "local")
    ) {
        i += 1;
    }
    let Some(first) = toks.get(i).and_then(|t| word(t)) else {
        return Err(user_error("42601", "syntax error in SET"));
    };
    let name = match first.as_str() {
        "transaction" | "characteristics" => return Ok(Local::SetIgnored),
        "time" if toks.get(i + 1).and_then(|t| word(t)).as_deref() == Some("zone") => {
            i += 2;
            "timezone".to_string()
        }
        "names" => {
            i += 1;
            "client_encoding".to_string()
        }
        _ => {
            // A dotted name (`my.setting`) is one parameter.
            let mut name = first;
            i += 1;
            while let (Some(Token::Period), Some(Token::Word(w))) = (toks.get(i), toks.get(i + 1)) {
                name.push('.');
                name.push_str(&w.value.to_ascii_lowercase());
                i += 2;
            }
            match toks.get(i) {
                Some(Token::Eq) => i += 1,
                Some(t) if word(t).as_deref() == Some("to") => i += 1,
                _ => return Err(user_error("42601", format!("syntax error in SET {name}"))),
            }
            name
        }
    };
    let parts: Vec<String> = toks[i.min(toks.len())..]
        .iter()
        .filter(|t| !matches!(t, Token::Comma))
        .map(|t| match t {
            Token::SingleQuotedString(s) => s.clone(),
            Token::Word(w) => w.value.clone(),
            other => other.to_string(),
        })
        .collect();
    if parts.is_empty() {
        return Err(user_error("42601", format!("SET {name} needs a value")));
    }
    if parts.len() == 1 && parts[0].eq_ignore_ascii_case("default") {
        return Ok(Local::Set(name, None));
    }
    Ok(Local::Set(name, Some(parts.join(", "))))
}

/// The error for a parameter `SET` may not change: `client_encoding` is UTF8 only.
pub fn check_setting(name: &str, value: &str) -> Result<(), PgWireError> {
    if name == "client_encoding" {
        let v = value.to_ascii_uppercase().replace(['-', '_'], "");
        if v != "UTF8" && v != "UNICODE" {
            return Err(user_error(
                "22023",
                format!("weir speaks UTF8 only, not client_encoding {value}"),
            ));
        }
    }
    Ok(())
}

/// [`Prepared`] of a cell, for running it.
pub fn prepared(cell: &PreparedCell) -> &Prepared<'_> {
    cell.borrow_dependent()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(sql: &str) -> Local {
        parse_set(&tokenize(sql).unwrap()).unwrap()
    }

    #[test]
    fn set_statements_parse() {
        assert!(matches!(set("SET extra_float_digits = 3"),
            Local::Set(n, Some(v)) if n == "extra_float_digits" && v == "3"));
        assert!(matches!(set("SET SESSION application_name TO 'x y'"),
            Local::Set(n, Some(v)) if n == "application_name" && v == "x y"));
        assert!(matches!(set("SET TIME ZONE 'UTC'"),
            Local::Set(n, Some(v)) if n == "timezone" && v == "UTC"));
        assert!(matches!(set("SET search_path = a, b"),
            Local::Set(n, Some(v)) if n == "search_path" && v == "a, b"));
        assert!(matches!(
            set("SET datestyle TO DEFAULT"),
            Local::Set(_, None)
        ));
        assert!(matches!(
            set("SET TRANSACTION ISOLATION LEVEL READ COMMITTED"),
            Local::SetIgnored
        ));
    }

    #[test]
    fn system_functions_are_recognized() {
        let f = |sql: &str| {
            let stmts = Parser::parse_sql(&GenericDialect {}, sql).unwrap();
            match &stmts[0] {
                sql::Statement::Query(q) => system_select(q),
                _ => None,
            }
        };
        assert_eq!(
            f("SELECT version(), current_schema() AS s, current_database()").unwrap(),
            vec![
                ("version".to_string(), SystemFn::Version),
                ("s".to_string(), SystemFn::CurrentSchema),
                ("current_database".to_string(), SystemFn::CurrentDatabase)
            ]
        );
        assert_eq!(
            f("SELECT pg_catalog.version()").unwrap()[0].1,
            SystemFn::Version
        );
        assert!(f("SELECT 1").is_none());
        assert!(f("SELECT version() FROM t").is_none());
    }
}
