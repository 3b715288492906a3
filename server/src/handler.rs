//! The query handlers: pgwire's [`SimpleQueryHandler`] (a Query message's statements, run one
//! after another, each answered before the next starts) and [`ExtendedQueryHandler`] (Parse
//! prepares a statement on the cluster, Bind decodes its parameters, Execute runs it; pgwire
//! keeps statements and portals and suspends a portal at its row limit), over one executor
//! (`QueryHandler::execute`).
//!
//! A query's rows stream (in both protocols: an Execute without a row limit is streamed here
//! rather than gathered by pgwire's default): each batch weir hands over is encoded into
//! DataRow messages and written before the next is asked for, so a slow client holds the query's producers back
//! (weir's credit windows) instead of the server buffering the result. While a query waits
//! for its next batch, a CancelRequest for its session or its client hanging up ends it,
//! and dropping its stream cancels it on the cluster (its actors stop, its memory returns).

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::Either;
use futures::{Sink, SinkExt, Stream, StreamExt};
use pgwire::api::copy::{send_copy_in_response, send_copy_out_response, CopyHandler};
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::{
    send_execution_response, send_query_response, send_ready_for_query, ExtendedQueryHandler,
    SimpleQueryHandler,
};
use pgwire::api::results::{CopyResponse, FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, Type, DEFAULT_NAME};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult, SEVERITY_WARNING};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::data::{DataRow, NoData, ParameterDescription};
use pgwire::messages::extendedquery::{Bind, Describe, Execute, Parse, TARGET_TYPE_BYTE_STATEMENT};
use pgwire::messages::response::{EmptyQueryResponse, NoticeResponse};
use pgwire::messages::simplequery::Query;
use pgwire::messages::PgWireBackendMessage;
use tokio_util::sync::CancellationToken;
use weir_operators::{DataType, Value};
use weir_runtime::{AsyncQueryStream, Cluster};

use crate::copy::{copy_out_stream, CopyIn, CopySpec};
use crate::errors::{to_pg, user_error};
use crate::session::Session;
use crate::settings;
use crate::split::split_statements;
use crate::statement::{self, check_setting, classify, Kind, Local, Stmt, SystemFn, WriteTag};
use crate::types::{decode_param, encode_batch, encode_values, field, format_at, pg_field};

/// The simple and extended query handler of every connection (the statement parser too).
pub struct QueryHandler {
    /// The cluster statements run on.
    pub cluster: Arc<Cluster>,
}

/// The session of a connection (set up once it authenticated).
fn session_of<C: ClientInfo + ?Sized>(client: &C) -> PgWireResult<Arc<Session>> {
    client
        .session_extensions()
        .get::<Session>()
        .ok_or_else(|| user_error("08P01", "the connection has not authenticated"))
}

/// The result columns of `columns` in the formats of `format`; a column with an array type
/// in `arrays` is of that type (a catalog answer's).
fn fields(
    columns: &[(String, DataType)],
    format: &Format,
    arrays: &[Option<Type>],
) -> PgWireResult<Vec<FieldInfo>> {
    let n = columns.len();
    columns
        .iter()
        .enumerate()
        .map(|(i, (name, t))| {
            let format = format_at(format, i, n)?;
            Ok(match arrays.get(i).cloned().flatten() {
                Some(array) => pg_field(name, array, format),
                None => field(name, *t, format),
            })
        })
        .collect()
}

/// The PostgreSQL types weir's do not name of a statement's result columns (a catalog
/// answer's arrays and `json`; none for others).
fn pg_types(stmt: &Stmt) -> Vec<Option<Type>> {
    match &stmt.kind {
        Kind::Describe(describe) => describe.pg_types(),
        _ => Vec::new(),
    }
}

/// What executing a statement answers: the response and a warning to send before it.
struct Outcome {
    response: Response,
    notice: Option<String>,
}

impl From<Response> for Outcome {
    fn from(response: Response) -> Self {
        Outcome {
            response,
            notice: None,
        }
    }
}

impl QueryHandler {
    /// Runs statement `stmt` with `params` for session `session`, its rows in `format`.
    async fn execute(
        &self,
        session: &Arc<Session>,
        stmt: Arc<Stmt>,
        params: Vec<Value>,
        format: &Format,
    ) -> PgWireResult<Outcome> {
        match &stmt.kind {
            Kind::Query(prepared) => {
                let token = session.cancel.begin();
                let stream = session
                    .sequences
                    .run(|| match prepared {
                        Some(cell) => statement::prepared(cell).query_stream(params),
                        None => self.cluster.query_stream(&stmt.sql, &params),
                    })
                    .map_err(to_pg)?
                    .into_async();
                let mut columns: Vec<(String, DataType)> = stream
                    .schema()
                    .fields
                    .iter()
                    .map(|f| (f.name.clone(), f.data_type))
                    .collect();
                stmt.rename(&mut columns);
                let fields = fields(&columns, format, &[])?;
                let formats = fields.iter().map(FieldInfo::format).collect();
                let rows = row_stream(stream, formats, token, session.clone());
                Ok(Response::Query(QueryResponse::new(Arc::new(fields), rows)).into())
            }
            Kind::Write(_, tag) => {
                let tag = *tag;
                let cluster = self.cluster.clone();
                let stmt = stmt.clone();
                let n = in_session(session, "statement", move || match &stmt.kind {
                    Kind::Write(Some(cell), _) => statement::prepared(cell).execute(params),
                    _ => cluster.execute_with(&stmt.sql, &params),
                })
                .await?;
                session.with_block(|b| b.wrote());
                let n = n as usize;
                let tag = match tag {
                    WriteTag::Insert => Tag::new("INSERT").with_oid(0).with_rows(n),
                    WriteTag::Update => Tag::new("UPDATE").with_rows(n),
                    WriteTag::Delete => Tag::new("DELETE").with_rows(n),
                    WriteTag::Select => Tag::new("SELECT").with_rows(n),
                    WriteTag::Command(c) => Tag::new(c),
                };
                Ok(Response::Execution(tag).into())
            }
            Kind::Returning(_, tag) => {
                let tag = match tag {
                    // PostgreSQL tags an INSERT's rows `INSERT 0 n`.
                    WriteTag::Insert => "INSERT 0",
                    WriteTag::Update => "UPDATE",
                    _ => "DELETE",
                };
                let cluster = self.cluster.clone();
                let running = stmt.clone();
                let result = in_session(session, "statement", move || match &running.kind {
                    Kind::Returning(Some(cell), _) => statement::prepared(cell).query(params),
                    _ => cluster.query(&running.sql, &params),
                })
                .await?;
                session.with_block(|b| b.wrote());
                let mut columns: Vec<(String, DataType)> = result
                    .schema
                    .fields
                    .iter()
                    .map(|f| (f.name.clone(), f.data_type))
                    .collect();
                stmt.rename(&mut columns);
                let mut outcome = value_rows(&columns, format, &[], result.rows())?;
                if let Response::Query(q) = &mut outcome.response {
                    q.set_command_tag(tag);
                }
                Ok(outcome)
            }
            Kind::Describe(describe) => {
                let cluster = self.cluster.clone();
                let relations = if describe.reads_relations() {
                    off_the_workers("statement", move || crate::describe::relations(&cluster))
                        .await?
                } else {
                    Vec::new()
                };
                let rows = describe.rows(&relations, &params);
                value_rows(&stmt.columns, format, &describe.pg_types(), rows)
            }
            Kind::Local(local) => self.local(session, local, &stmt.columns, format),
            Kind::Copy(spec) => self.copy(session, spec),
        }
    }

    /// Starts a COPY: FROM STDIN opens the file the client's data goes to; TO STDOUT starts
    /// the query whose rows stream out.
    fn copy(&self, session: &Session, spec: &CopySpec) -> PgWireResult<Outcome> {
        let (name, columns) = match spec.target.split_once('(') {
            Some((name, cols)) if !name.trim().is_empty() => {
                let cols = cols.trim_end().trim_end_matches(')');
                (name.trim(), Some(cols.to_string()))
            }
            _ => (spec.target.trim(), None),
        };
        if spec.from_stdin {
            let n = match &columns {
                Some(cols) => cols.split(',').count(),
                None => self
                    .cluster
                    .tables()
                    .iter()
                    .find(|t| {
                        // `public.t` is `t`.
                        let last = name.rsplit('.').next().unwrap_or(name);
                        t.name.eq_ignore_ascii_case(last.trim_matches('"'))
                    })
                    .map(|t| t.schema.fields.len())
                    .ok_or_else(|| user_error("42P01", format!("unknown table '{name}'")))?,
            };
            // The file goes where the cluster's COPY may read.
            let dir = match self.cluster.config().copy_dir_list() {
                None => std::env::temp_dir(),
                Some([first, ..]) => first.clone(),
                Some([]) => {
                    return Err(user_error(
                        "0A000",
                        "COPY FROM STDIN needs a directory COPY may use, and this cluster \
                         allows none (ClusterBuilder::copy_dirs)",
                    ))
                }
            };
            let copy = CopyIn::start(spec.clone(), &dir)?;
            *session.copy_in.lock().unwrap_or_else(|e| e.into_inner()) = Some(copy);
            let empty = futures::stream::empty();
            return Ok(Response::CopyIn(CopyResponse::new(0, n, empty)).into());
        }
        let query = if spec.target.starts_with('(') {
            spec.target[1..spec.target.len() - 1].to_string()
        } else {
            format!("SELECT {} FROM {name}", columns.as_deref().unwrap_or("*"))
        };
        let stream = self
            .cluster
            .query_stream(&query, &[])
            .map_err(to_pg)?
            .into_async();
        let n = stream.schema().fields.len();
        let data = copy_out_stream(stream, spec.format.clone());
        Ok(Response::CopyOut(CopyResponse::new(0, n, data)).into())
    }

    /// Answers a statement the server handles itself.
    fn local(
        &self,
        session: &Session,
        local: &Local,
        columns: &[(String, DataType)],
        format: &Format,
    ) -> PgWireResult<Outcome> {
        let rows = |rows: Vec<Vec<Value>>| value_rows(columns, format, &[], rows);
        match local {
            Local::Begin => {
                session.with_block(|b| b.begin());
                Ok(Response::TransactionStart(Tag::new("BEGIN")).into())
            }
            Local::Commit => {
                session.with_block(|b| b.end());
                Ok(Response::TransactionEnd(Tag::new("COMMIT")).into())
            }
            Local::Rollback => {
                let writes = session.with_block(|b| b.end());
                let notice = (writes > 0).then(|| {
                    format!(
                        "weir has no transactions: the {writes} statement(s) that wrote since \
                         BEGIN were committed as they ran, and ROLLBACK does not undo them"
                    )
                });
                Ok(Outcome {
                    response: Response::TransactionEnd(Tag::new("ROLLBACK")),
                    notice,
                })
            }
            Local::Savepoint(name) => {
                session.with_block(|b| b.savepoint(name))?;
                Ok(Response::Execution(Tag::new("SAVEPOINT")).into())
            }
            Local::Release(name) => {
                session.with_block(|b| b.release(name))?;
                Ok(Response::Execution(Tag::new("RELEASE")).into())
            }
            Local::RollbackTo(name) => {
                let writes = session.with_block(|b| b.rollback_to(name))?;
                let notice = (writes > 0).then(|| {
                    format!(
                        "weir has no transactions: the {writes} statement(s) that wrote since \
                         SAVEPOINT {name} were committed as they ran, and ROLLBACK TO SAVEPOINT \
                         does not undo them"
                    )
                });
                Ok(Outcome {
                    response: Response::Execution(Tag::new("ROLLBACK")),
                    notice,
                })
            }
            Local::Set(name, value) => {
                match value {
                    Some(v) => {
                        check_setting(name, v)?;
                        session.set(name, v.clone());
                    }
                    None => session.set(name, settings::default(name).unwrap_or_default()),
                }
                Ok(Response::Execution(Tag::new("SET")).into())
            }
            Local::SetIgnored => Ok(Response::Execution(Tag::new("SET")).into()),
            Local::Reset(name) => {
                let names: Vec<String> = match name {
                    Some(n) => vec![n.clone()],
                    None => settings::DEFAULTS
                        .iter()
                        .map(|(n, _)| n.to_string())
                        .collect(),
                };
                for n in names {
                    if let Some(v) = settings::default(&n) {
                        session.set(&n, v);
                    }
                }
                Ok(Response::Execution(Tag::new("RESET")).into())
            }
            Local::Show(name) => {
                let value = session.setting(name).ok_or_else(|| {
                    user_error(
                        "42704",
                        format!("unrecognized configuration parameter \"{name}\""),
                    )
                })?;
                rows(vec![vec![Value::Str(value)]])
            }
            Local::ShowAll => {
                let all = session
                    .settings
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .map(|(k, v)| vec![Value::Str(k.clone()), Value::Str(v.clone()), Value::Null])
                    .collect();
                rows(all)
            }
            Local::Accept(tag) => Ok(Response::Execution(Tag::new(tag)).into()),
            Local::System(fns) => {
                let row = fns
                    .iter()
                    .map(|f| {
                        Ok(match f {
                            SystemFn::Version => {
                                Value::Str(settings::version_string(&self.cluster))
                            }
                            SystemFn::CurrentSchema => Value::Str("public".into()),
                            SystemFn::CurrentDatabase => {
                                Value::Str(session.setting("database").unwrap_or_default())
                            }
                            SystemFn::CurrentUser => {
                                Value::Str(session.setting("user").unwrap_or_default())
                            }
                            SystemFn::BackendPid => Value::Int(session.pid.into()),
                            SystemFn::CurrentSetting(name) => {
                                session.setting(name).map_or(Value::Null, Value::Str)
                            }
                            SystemFn::InRecovery => Value::Bool(false),
                            SystemFn::SetConfig(name, value) => {
                                check_setting(name, value)?;
                                session.set(name, value.clone());
                                Value::Str(value.clone())
                            }
                        })
                    })
                    .collect::<PgWireResult<Vec<_>>>()?;
                rows(vec![row])
            }
            Local::Relations(list) => {
                let owner = session.setting("user").unwrap_or_default();
                let listed = crate::catalog::listed(&self.cluster, list, &owner, || {
                    session.setting("database").unwrap_or_default()
                });
                rows(listed)
            }
        }
    }
}

/// Runs `work` (a call that blocks on the cluster) on tokio's blocking threads, so that the
/// async workers go on serving other connections; its error as the client sees it.
async fn off_the_workers<T: Send + 'static>(
    what: &str,
    work: impl FnOnce() -> weir_runtime::Result<T> + Send + 'static,
) -> PgWireResult<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| user_error("XX000", format!("the {what}'s thread failed: {e}")))?
        .map_err(to_pg)
}

/// [`off_the_workers`] in `session`: the sequence values `work` is handed are the session's
/// (`currval`, `lastval`).
async fn in_session<T: Send + 'static>(
    session: &Session,
    what: &str,
    work: impl FnOnce() -> weir_runtime::Result<T> + Send + 'static,
) -> PgWireResult<T> {
    let sequences = session.sequences.clone();
    off_the_workers(what, move || sequences.run(work)).await
}

/// Rows the server computed itself, as a query's response with `columns` (those with a
/// type in `arrays` hold arrays in their text form).
fn value_rows(
    columns: &[(String, DataType)],
    format: &Format,
    arrays: &[Option<Type>],
    rows: Vec<Vec<Value>>,
) -> PgWireResult<Outcome> {
    let fields = fields(columns, format, arrays)?;
    let formats: Vec<FieldFormat> = fields.iter().map(FieldInfo::format).collect();
    let data = encode_values(&rows, &formats, arrays);
    let stream = futures::stream::iter(data.into_iter().map(Ok));
    Ok(Response::Query(QueryResponse::new(Arc::new(fields), stream)).into())
}

/// A query's rows as DataRow messages, one batch encoded at a time. Ends with an error when
/// the query fails, when `token` is cancelled (57014), or when the client hangs up while the
/// query waits for a batch; the query's stream is dropped then, which cancels it.
fn row_stream(
    stream: AsyncQueryStream,
    formats: Vec<FieldFormat>,
    token: CancellationToken,
    session: Arc<Session>,
) -> impl Stream<Item = PgWireResult<DataRow>> + Send + 'static {
    struct Batches {
        stream: Option<AsyncQueryStream>,
        formats: Vec<FieldFormat>,
        token: CancellationToken,
        session: Arc<Session>,
    }
    let state = Batches {
        stream: Some(stream),
        formats,
        token,
        session,
    };
    // A step per batch, not per row: a row then costs the iterator's next.
    let batches = futures::stream::unfold(state, |mut b| async move {
        let stream = b.stream.as_mut()?;
        let next = tokio::select! {
            biased;
            _ = b.token.cancelled() => Some(Err(user_error(
                "57014",
                "canceling statement due to user request",
            ))),
            _ = b.session.client_gone() => Some(Err(user_error(
                "08006",
                "the client closed the connection",
            ))),
            batch = stream.next() => batch.map(|batch| batch.map_err(to_pg)),
        };
        match next? {
            Ok(batch) => {
                let rows = encode_batch(&batch, &b.formats);
                Some((Ok(rows), b))
            }
            Err(e) => {
                // Dropping the stream cancels the query on the cluster.
                b.stream = None;
                Some((Err(e), b))
            }
        }
    });
    batches.flat_map(|rows| match rows {
        Ok(rows) => Either::Left(futures::stream::iter(rows.into_iter().map(Ok))),
        Err(e) => Either::Right(futures::stream::iter(std::iter::once(Err(e)))),
    })
}

/// Sends a warning (a NoticeResponse).
async fn send_notice<C>(client: &mut C, message: String) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let info = ErrorInfo::new(SEVERITY_WARNING.to_string(), "01000".to_string(), message);
    client
        .feed(PgWireBackendMessage::NoticeResponse(NoticeResponse::from(
            info,
        )))
        .await?;
    Ok(())
}

/// Whether an error is the connection's (the client is gone) rather than the statement's.
fn is_connection_error(e: &PgWireError) -> bool {
    matches!(e, PgWireError::IoError(_))
}

#[async_trait]
impl SimpleQueryHandler for QueryHandler {
    /// Runs the message's statements in order, each answered (its rows streamed) before the
    /// next starts; the first that fails ends the message, as in PostgreSQL.
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        let session = session_of(client)?;
        let mut status = client.transaction_status();
        // Ok(true): a COPY FROM STDIN is under way, and ReadyForQuery waits for its end.
        let outcome: PgWireResult<bool> = async {
            let pieces = split_statements(&query.query)
                .map_err(|e| user_error("42601", format!("syntax error: {e}")))?;
            if pieces.is_empty() {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await?;
            }
            let count = pieces.len();
            for (i, sql) in pieces.into_iter().enumerate() {
                let stmt = Arc::new(classify(&self.cluster, &sql, &[], false)?);
                if matches!(&stmt.kind, Kind::Copy(c) if c.from_stdin) && i + 1 < count {
                    return Err(user_error(
                        "0A000",
                        "COPY FROM STDIN must be the last statement of its message",
                    ));
                }
                let outcome = self
                    .execute(&session, stmt, vec![], &Format::UnifiedText)
                    .await?;
                if let Some(n) = outcome.notice {
                    send_notice(client, n).await?;
                }
                match outcome.response {
                    Response::Query(rows) => send_query_response(client, rows, true).await?,
                    Response::Execution(tag) => send_execution_response(client, tag).await?,
                    Response::TransactionStart(tag) => {
                        send_execution_response(client, tag).await?;
                        status = status.to_in_transaction_state();
                    }
                    Response::TransactionEnd(tag) => {
                        send_execution_response(client, tag).await?;
                        status = status.to_idle_state();
                    }
                    Response::CopyOut(data) => send_copy_out_response(client, data).await?,
                    Response::CopyIn(copy) => {
                        // The data comes next; CopyDone answers, then ReadyForQuery.
                        send_copy_in_response(client, copy).await?;
                        client.set_state(PgWireConnectionState::CopyInProgress(false));
                        client.set_transaction_status(status);
                        return Ok(true);
                    }
                    _ => {
                        client
                            .feed(PgWireBackendMessage::EmptyQueryResponse(
                                EmptyQueryResponse::new(),
                            ))
                            .await?
                    }
                }
            }
            Ok(false)
        }
        .await;
        if let Ok(true) = outcome {
            return Ok(());
        }
        if let Err(e) = outcome {
            if is_connection_error(&e) {
                return Err(e);
            }
            client
                .feed(PgWireBackendMessage::ErrorResponse(
                    ErrorInfo::from(e).into(),
                ))
                .await?;
            status = status.to_error_state();
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(status);
        send_ready_for_query(client, status).await
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // `on_query` runs the statements itself, streaming each before the next.
        Err(user_error(
            "XX000",
            "unreachable: simple queries run in on_query",
        ))
    }
}

/// Parses the extended protocol's statements: classified, prepared on the cluster and
/// described (see [`classify`]).
pub struct StatementParser {
    cluster: Arc<Cluster>,
}

#[async_trait]
impl QueryParser for StatementParser {
    type Statement = Arc<Stmt>;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Self::Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let pieces =
            split_statements(sql).map_err(|e| user_error("42601", format!("syntax error: {e}")))?;
        match pieces.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(Arc::new(classify(&self.cluster, one, types, true)?))),
            _ => Err(user_error(
                "42601",
                "cannot insert multiple commands into a prepared statement",
            )),
        }
    }

    fn get_parameter_types(&self, stmt: &Self::Statement) -> PgWireResult<Vec<Type>> {
        Ok(stmt.params.clone())
    }

    fn get_result_schema(
        &self,
        stmt: &Self::Statement,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let format = column_format.unwrap_or(&Format::UnifiedText);
        fields(&stmt.columns, format, &pg_types(stmt))
    }
}

#[async_trait]
impl ExtendedQueryHandler for QueryHandler {
    type Statement = Arc<Stmt>;
    type QueryParser = StatementParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        Arc::new(StatementParser {
            cluster: self.cluster.clone(),
        })
    }

    /// Parse: [`crate::buffered::parse`] (ParseComplete waits for the Sync).
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        crate::buffered::parse(client, message, self.query_parser()).await
    }

    /// Bind: [`crate::buffered::bind`] (BindComplete waits for the Sync).
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        crate::buffered::bind(client, message).await
    }

    /// Describe of a statement that takes parameters and returns no rows answers
    /// ParameterDescription and NoData, as PostgreSQL does (pgwire's default sends an empty
    /// RowDescription then, which the JDBC driver takes for a result and fails its
    /// `executeUpdate` on).
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if message.target_type == TARGET_TYPE_BYTE_STATEMENT {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            if let Some(Entry::Value(stmt)) = client.portal_store().get_statement(name) {
                let described = self.do_describe_statement(client, &stmt).await?;
                if described.fields.is_empty() {
                    let types = described.parameters.iter().map(Type::oid).collect();
                    client
                        .feed(PgWireBackendMessage::ParameterDescription(
                            ParameterDescription::new(types),
                        ))
                        .await?;
                    client
                        .feed(PgWireBackendMessage::NoData(NoData::new()))
                        .await?;
                    return Ok(());
                }
            }
        }
        self._on_describe(client, message).await
    }

    /// An Execute without a row limit streams the portal's rows to the client as they
    /// come (pgwire's default gathers them first); one with a limit is pgwire's: that many
    /// rows, then PortalSuspended, the rest kept in the portal for the next Execute.
    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if message.max_rows > 0 {
            return self._on_execute(client, message).await;
        }
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal = match client.portal_store().get_portal(name) {
            Some(Entry::Value(portal)) => portal,
            _ => return self._on_execute(client, message).await,
        };
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        // A portal suspended at a row limit: its rest, streamed.
        let suspended = {
            let state = portal.state();
            let mut state = state.lock().await;
            match &*state {
                PortalExecutionState::Initial => None,
                PortalExecutionState::Suspended(_) => {
                    match std::mem::replace(&mut *state, PortalExecutionState::Finished) {
                        PortalExecutionState::Suspended(rows) => Some(rows),
                        _ => None,
                    }
                }
                PortalExecutionState::Finished => {
                    drop(state);
                    return self._on_execute(client, message).await;
                }
            }
        };
        client.set_state(PgWireConnectionState::QueryInProgress);
        let mut status = client.transaction_status();
        let response = match suspended {
            Some(rows) => Response::Query(rows),
            None => ExtendedQueryHandler::do_query(self, client, &portal, 0).await?,
        };
        match response {
            Response::Query(mut rows) => {
                *portal.state().lock().await = PortalExecutionState::Finished;
                let tag = rows.command_tag().to_string();
                let mut n = 0usize;
                while let Some(row) = rows.data_rows().next().await {
                    client.feed(PgWireBackendMessage::DataRow(row?)).await?;
                    n += 1;
                }
                client
                    .feed(PgWireBackendMessage::CommandComplete(
                        Tag::new(&tag).with_rows(n).into(),
                    ))
                    .await?;
            }
            Response::Execution(tag) => send_execution_response(client, tag).await?,
            Response::TransactionStart(tag) => {
                send_execution_response(client, tag).await?;
                status = status.to_in_transaction_state();
            }
            Response::TransactionEnd(tag) => {
                send_execution_response(client, tag).await?;
                status = status.to_idle_state();
                client.portal_store().rm_portal(DEFAULT_NAME);
            }
            Response::CopyOut(data) => send_copy_out_response(client, data).await?,
            Response::CopyIn(copy) => {
                client.set_state(PgWireConnectionState::CopyInProgress(true));
                send_copy_in_response(client, copy).await?;
                return Ok(());
            }
            _ => {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await?
            }
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(status);
        Ok(())
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session_of(client)?;
        let stmt = portal.statement.statement.clone();
        let n = stmt.params.len();
        if portal.parameters.len() != n {
            return Err(user_error(
                "08P01",
                format!(
                    "bind message supplies {} parameters, but prepared statement requires {n}",
                    portal.parameters.len()
                ),
            ));
        }
        let params = (0..n)
            .map(|i| {
                let t = portal
                    .statement
                    .parameter_types
                    .get(i)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| stmt.params[i].clone());
                let binary = format_at(&portal.parameter_format, i, n)? == FieldFormat::Binary;
                decode_param(
                    portal.parameters[i].as_deref(),
                    &t,
                    binary,
                    stmt.expected.get(i).copied().flatten(),
                )
            })
            .collect::<PgWireResult<Vec<Value>>>()?;
        let outcome = self
            .execute(&session, stmt, params, &portal.result_column_format)
            .await?;
        if let Some(n) = outcome.notice {
            send_notice(client, n).await?;
        }
        Ok(outcome.response)
    }
}

#[async_trait]
impl CopyHandler for QueryHandler {
    async fn on_copy_data<C>(&self, client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session_of(client)?;
        let mut copy = session.copy_in.lock().unwrap_or_else(|e| e.into_inner());
        match copy.as_mut() {
            Some(c) => c.write(&data.data),
            None => Err(user_error("08P01", "CopyData without a COPY FROM STDIN")),
        }
    }

    /// Loads what the client sent with weir's COPY (all or nothing) and answers `COPY n`.
    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session_of(client)?;
        let copy = session
            .copy_in
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(mut copy) = copy else {
            return Err(user_error("08P01", "CopyDone without a COPY FROM STDIN"));
        };
        let sql = copy.finish()?;
        let cluster = self.cluster.clone();
        let n = in_session(&session, "COPY", move || {
            let n = cluster.execute(&sql);
            // Removes the file.
            drop(copy);
            n
        })
        .await?;
        session.with_block(|b| b.wrote());
        client
            .send(PgWireBackendMessage::CommandComplete(
                Tag::new("COPY").with_rows(n as usize).into(),
            ))
            .await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Ok(session) = session_of(client) {
            session
                .copy_in
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
        }
        user_error("57014", format!("COPY from stdin failed: {}", fail.message))
    }
}
