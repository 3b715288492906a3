//! Parse and Bind as PostgreSQL answers them: ParseComplete and BindComplete wait in the
//! connection's buffer for the Sync (or Flush) that ends the client's batch, so a prepared
//! statement's Bind, Execute and Sync cost one write to the socket, not three. (pgwire's
//! defaults flush each of them: every flush is a write that wakes the client, which on a
//! loaded machine costs more than a point query's whole answer.)

use std::fmt::Debug;
use std::sync::Arc;

use futures::{Sink, SinkExt};
use pgwire::api::portal::Portal;
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, DEFAULT_NAME};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult, SEVERITY_ERROR};
use pgwire::messages::extendedquery::{Bind, BindComplete, Parse, ParseComplete};
use pgwire::messages::PgWireBackendMessage;

/// Stores the statement a Parse message prepares (an empty query as an empty statement) and
/// queues ParseComplete.
pub async fn parse<C, Q>(client: &mut C, message: Parse, parser: Arc<Q>) -> PgWireResult<()>
where
    C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::PortalStore: PortalStore<Statement = Q::Statement>,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    Q: QueryParser + Send + Sync,
{
    let name = message.name.as_deref().unwrap_or(DEFAULT_NAME).to_owned();
    match StoredStatement::parse(client, &message, parser).await? {
        Some(stmt) => client.portal_store().put_statement(Arc::new(stmt)),
        None => client.portal_store().put_empty_statement(&name),
    }
    client
        .feed(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
        .await?;
    Ok(())
}

/// Makes the portal a Bind message asks for (its statement and parameters) and queues
/// BindComplete. An unknown statement, or parameters given to an empty one, is an error.
pub async fn bind<C, S>(client: &mut C, message: Bind) -> PgWireResult<()>
where
    C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::PortalStore: PortalStore<Statement = S>,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    S: Clone + Send + Sync + 'static,
{
    let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
    let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
    match client.portal_store().get_statement(statement_name) {
        Some(Entry::Value(statement)) => {
            let portal = Portal::try_new(&message, statement)?;
            client.portal_store().put_portal(Arc::new(portal));
        }
        Some(Entry::Empty) => {
            if !message.parameters.is_empty() {
                return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                    SEVERITY_ERROR.to_owned(),
                    "08P01".to_owned(),
                    format!(
                        "bind message supplies {} parameters, but prepared statement \"{}\" \
                         requires 0",
                        message.parameters.len(),
                        statement_name
                    ),
                ))));
            }
            client.portal_store().put_empty_portal(portal_name);
        }
        None => return Err(PgWireError::StatementNotFound(statement_name.to_owned())),
    }
    client
        .feed(PgWireBackendMessage::BindComplete(BindComplete::new()))
        .await?;
    Ok(())
}
