//! Who may connect: the startup handler (pgwire's [`AuthDriver`] with SCRAM-SHA-256 when the
//! server has [`Passwords`], no password otherwise; never a cleartext or MD5 password), the
//! connection limit (a client past it is refused with 53300, as PostgreSQL refuses it), and
//! the session each authenticated connection gets. And the CancelRequest handler.

use std::collections::HashMap;
use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::mechanism::AuthMechanismFactory;
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth, SCRAM_ITERATIONS};
use pgwire::api::auth::sasl::{SaslMechanismFactory, SaslMechanisms};
use pgwire::api::auth::{
    protocol_negotiation, save_startup_parameters_to_metadata, AuthDriver, AuthOutcome, AuthSource,
    DefaultServerParameterProvider, LoginInfo, Password, StartupHandler,
};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::ClientInfo;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::errors::fatal_error;
use crate::session::{CancelKeys, CancelSlot, PendingConnections, Session};
use crate::settings;

/// The users who may connect and their passwords, kept only as SCRAM-SHA-256 salted
/// passwords (each with a random salt drawn when it is added).
///
/// ```
/// use weir_server::Passwords;
/// let p = Passwords::new().user("alice", "s3cret");
/// assert_eq!(p.len(), 1);
/// ```
#[derive(Clone, Default)]
pub struct Passwords {
    users: HashMap<String, (Vec<u8>, Vec<u8>)>,
}

impl Debug for Passwords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut users: Vec<&String> = self.users.keys().collect();
        users.sort();
        f.debug_struct("Passwords").field("users", &users).finish()
    }
}

impl Passwords {
    /// No users (every login fails until one is added).
    pub fn new() -> Self {
        Passwords::default()
    }

    /// Adds (or replaces) user `name` with `password`.
    pub fn user(mut self, name: &str, password: &str) -> Self {
        let salt: [u8; 16] = rand::random();
        let salted = gen_salted_password(password, &salt, SCRAM_ITERATIONS);
        self.users.insert(name.to_string(), (salt.to_vec(), salted));
        self
    }

    /// Reads a password file: one `user:password` a line (the password is the rest of the
    /// line after the first `:`); blank lines and lines starting with `#` are skipped.
    pub fn from_file(path: &Path) -> std::io::Result<Self> {
        let text = std::fs::read_to_string(path)?;
        let mut p = Passwords::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let Some((user, password)) = line.split_once(':') else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}: line {} is not user:password", path.display(), i + 1),
                ));
            };
            p = p.user(user.trim(), password);
        }
        Ok(p)
    }

    /// Number of users.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Whether there is no user.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

/// [`Passwords`] as pgwire's source of SCRAM secrets.
#[derive(Debug)]
struct PasswordSource(Passwords);

#[async_trait]
impl AuthSource for PasswordSource {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().unwrap_or_default();
        match self.0.users.get(user) {
            Some((salt, salted)) => Ok(Password::new(Some(salt.clone()), salted.clone())),
            None => Err(PgWireError::InvalidPassword(user.to_string())),
        }
    }
}

/// The startup handler of every connection.
pub struct Startup {
    driver: AuthDriver<Arc<DefaultServerParameterProvider>>,
    scram: Option<SaslMechanisms>,
    pending: Arc<PendingConnections>,
    keys: Arc<CancelKeys>,
}

impl Startup {
    /// A startup handler asking for SCRAM-SHA-256 passwords when `passwords` is given.
    pub fn new(
        passwords: Option<Passwords>,
        pending: Arc<PendingConnections>,
        keys: Arc<CancelKeys>,
    ) -> Self {
        let mut parameters = DefaultServerParameterProvider::default();
        parameters.server_version = settings::server_version();
        let scram = passwords.map(|p| {
            let mut scram = ScramAuth::new(Arc::new(PasswordSource(p)));
            scram.set_iterations(SCRAM_ITERATIONS);
            let scram: Arc<dyn SaslMechanismFactory> = Arc::new(scram);
            SaslMechanisms::new(vec![scram])
        });
        Startup {
            driver: AuthDriver::new(Arc::new(parameters)),
            scram,
            pending,
            keys,
        }
    }

    /// Completes the startup (AuthenticationOk, parameters, BackendKeyData, ReadyForQuery)
    /// and sets up the session.
    async fn finish<C>(&self, client: &mut C, last: Option<Authentication>) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.driver.complete_authentication(client, last).await?;
        let pending = self.pending.take(&client.socket_addr());
        let (pid, secret) = client.pid_and_secret_key();
        let cancel = Arc::new(CancelSlot::default());
        let key = self
            .keys
            .register((pid, secret.to_bytes().to_vec()), cancel.clone());
        let mut watch = None;
        if let Some(mut p) = pending {
            watch = p.watch.take();
            if let Some(tx) = p.authenticated.take() {
                let _ = tx.send(());
            }
        }
        client.session_extensions().insert(Session {
            pid,
            cancel,
            _key: Some(key),
            watch,
            settings: std::sync::Mutex::new(settings::initial(client.metadata())),
            block: Default::default(),
            copy_in: Default::default(),
            sequences: weir_runtime::Session::new(),
        });
        Ok(())
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                if self.pending.over_limit(&client.socket_addr()) {
                    return Err(fatal_error("53300", "sorry, too many clients already"));
                }
                match &self.scram {
                    Some(mechanisms) => {
                        let started = self
                            .driver
                            .begin_authentication(client, mechanisms.create())
                            .await?;
                        match started {
                            AuthOutcome::InProgress => Ok(()),
                            AuthOutcome::Authenticated { final_message, .. } => {
                                self.finish(client, final_message).await
                            }
                        }
                    }
                    None => self.finish(client, None).await,
                }
            }
            PgWireFrontendMessage::PasswordMessageFamily(m) => {
                match self.driver.advance_authentication(client, m).await? {
                    AuthOutcome::InProgress => Ok(()),
                    AuthOutcome::Authenticated { final_message, .. } => {
                        self.finish(client, final_message).await
                    }
                }
            }
            _ => Ok(()),
        }
    }
}

/// Cancels the running query of the session a CancelRequest names by its process id and
/// secret key (a request naming no session does nothing, as in PostgreSQL).
pub struct Cancel {
    /// The sessions by key.
    pub keys: Arc<CancelKeys>,
}

#[async_trait]
impl CancelHandler for Cancel {
    async fn on_cancel_request(&self, request: CancelRequest) {
        self.keys
            .cancel(&(request.pid, request.secret_key.to_bytes().to_vec()));
    }
}
