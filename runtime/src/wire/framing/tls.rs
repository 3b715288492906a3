//! Mutual TLS between node processes (rustls with the ring provider): the files a node or a
//! client is given, what they become, and which node ids a certificate may claim.
//!
//! Every party holds a certificate and its key, signed (directly or through intermediates
//! that come after it in its file) by the cluster's CA, whose certificate every party holds
//! too. Both ends of a connection present their certificate and check the other's against the
//! CA (signature, validity dates, key usage); then the weir handshake runs inside TLS and the
//! id it claims is checked against the certificate's names (`allows`):
//!
//! - `node-<id>.weir` (a DNS subject alternative name, e.g. `node-2.weir`): data node `<id>`.
//!   It may claim that id and no other. A node that dials another checks, as a TLS client
//!   checks a server's host name, that the peer's certificate names the id it dials.
//! - `client.weir`: a client (`ClusterBuilder::connect`). Its id is the number of data nodes
//!   plus a slot, drawn when it connects, so the certificate names a role, not an id: it may
//!   claim any id but the accepting node's own and those of the data nodes that node knows
//!   (those a client's `Join` named); a client-certificate connection holding an id that a
//!   later `Join` names as a data node's is closed.
//! - A certificate with a wildcard name that covers these (`*.weir`) is refused: it would
//!   name every node.
//!
//! A refused identity is refused like a wrong secret: the connection is closed before
//! anything it carries is read, counted (`TcpStats::wrong_identity` and
//! `refused_connections`) and logged. The weir handshake inside TLS takes the place of the
//! shared secret: its proofs are keyed with keying material exported from the TLS session
//! (RFC 5705), so both ends prove they terminate the same TLS session; no secret file is used.

use crate::wire::ids::NodeId;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The DNS name the certificate of data node `id` carries: `node-<id>.weir`.
pub fn node_name(id: NodeId) -> String {
    format!("node-{id}.weir")
}

/// The DNS name a client's certificate carries.
pub const CLIENT_NAME: &str = "client.weir";

/// A name no certificate issued for weir carries: a certificate valid for it has a wildcard
/// name (refused).
const WILDCARD_PROBE: &str = "wildcard-probe.weir";

/// Label of the keying material exported from a TLS session for the weir handshake.
pub(crate) const EXPORTER_LABEL: &[u8] = b"EXPORTER-weir-handshake-v1";

/// The three PEM files of a node or a client: its certificate (chain), its private key and
/// the cluster's CA certificate (`--tls-cert`, `--tls-key`, `--tls-ca`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// This party's certificate, then any intermediates (PEM `CERTIFICATE` blocks).
    pub cert: PathBuf,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// The CA certificate(s) that sign every node's and client's certificate.
    pub ca: PathBuf,
}

/// Why TLS could not be set up from its files.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read the TLS {what} file {path}: {message}")]
    Read {
        /// Which file: `certificate`, `key` or `CA`.
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// The operating system's error.
        message: String,
    },
    /// A file does not hold what it should (malformed PEM, no block of the right kind).
    #[error("the TLS {what} file {path}: {message}")]
    Pem {
        /// Which file: `certificate`, `key` or `CA`.
        what: &'static str,
        /// Its path (empty when the PEM came from memory).
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The files are well-formed but do not make a TLS setup (a key that does not match the
    /// certificate, a CA certificate rustls does not accept).
    #[error("TLS: {0}")]
    Setup(String),
    /// The certificate does not name the identity this party is about to claim.
    #[error("the TLS certificate {path} does not name {name} (the identity of {who})")]
    Identity {
        /// The certificate's path.
        path: PathBuf,
        /// The name it should carry.
        name: String,
        /// Who this party is (`node 2`, `a client`).
        who: String,
    },
}

/// What a certificate entitles its holder to, checked once its chain verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Data node `id` (`node-<id>.weir`).
    Node(NodeId),
    /// A client (`client.weir`).
    Client,
}

/// A party's TLS setup, loaded once: the configurations of both sides of a connection.
#[derive(Clone)]
pub struct Tls {
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
    cert: CertificateDer<'static>,
    cert_path: PathBuf,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("cert", &self.cert_path)
            .finish_non_exhaustive()
    }
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Read {
        what,
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// The ring provider, as the PostgreSQL server's TLS uses it (the workspace builds no
/// aws-lc; rustls marks ring's provider deprecated for lacking post-quantum key exchange).
#[allow(deprecated)]
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates of PEM text `pem` (at least one).
fn certs(
    what: &'static str,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |message: String| TlsError::Pem {
        what,
        path: path.to_path_buf(),
        message,
    };
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("malformed PEM: {e}")))?;
    if certs.is_empty() {
        return Err(bad("no CERTIFICATE block".into()));
    }
    Ok(certs)
}

impl Tls {
    /// Reads and checks the three files: each must be readable and well-formed, the key
    /// must match the certificate, and the certificate must be signed by the CA and valid now.
    pub fn load(files: &TlsFiles) -> Result<Tls, TlsError> {
        let cert = read("certificate", &files.cert)?;
        let key = read("key", &files.key)?;
        let ca = read("CA", &files.ca)?;
        Self::build(&cert, &key, &ca, files)
    }

    /// [`Tls::load`] from PEM text in memory.
    pub fn from_pem(cert: &[u8], key: &[u8], ca: &[u8]) -> Result<Tls, TlsError> {
        let nowhere = TlsFiles {
            cert: PathBuf::new(),
            key: PathBuf::new(),
            ca: PathBuf::new(),
        };
        Self::build(cert, key, ca, &nowhere)
    }

    fn build(cert: &[u8], key: &[u8], ca: &[u8], files: &TlsFiles) -> Result<Tls, TlsError> {
        let chain = certs("certificate", &files.cert, cert)?;
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| TlsError::Pem {
            what: "key",
            path: files.key.clone(),
            message: match e {
                rustls::pki_types::pem::Error::NoItemsFound => "no PRIVATE KEY block".into(),
                e => format!("malformed PEM: {e}"),
            },
        })?;
        let mut roots = RootCertStore::empty();
        for c in certs("CA", &files.ca, ca)? {
            roots.add(c).map_err(|e| TlsError::Pem {
                what: "CA",
                path: files.ca.clone(),
                message: format!("not a usable CA certificate: {e}"),
            })?;
        }
        let roots = Arc::new(roots);
        let setup = |e: &dyn fmt::Display| TlsError::Setup(e.to_string());
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(roots.clone(), provider())
                .build()
                .map_err(|e| setup(&e))?;
        let server = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| setup(&e))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(|e| setup(&format!("the certificate and key: {e}")))?;
        let client = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| setup(&e))?
            .with_root_certificates(roots.clone())
            .with_client_auth_cert(chain.clone(), key)
            .map_err(|e| setup(&format!("the certificate and key: {e}")))?;
        check_signed(&chain, &roots, &files.cert)?;
        Ok(Tls {
            server: Arc::new(server),
            client: Arc::new(client),
            cert: chain[0].clone(),
            cert_path: files.cert.clone(),
        })
    }

    /// The configuration of the accepting side (it asks for, and verifies, the dialer's
    /// certificate).
    pub fn server_config(&self) -> Arc<ServerConfig> {
        self.server.clone()
    }

    /// The configuration of the dialing side (it presents this party's certificate).
    pub fn client_config(&self) -> Arc<ClientConfig> {
        self.client.clone()
    }

    /// Whether this party's own certificate lets it claim `role` (checked when a node or a
    /// client starts, so that a wrong certificate is a clear error there, not a refusal at
    /// every peer).
    pub fn check_role(&self, role: Role) -> Result<(), TlsError> {
        let (name, who) = match role {
            Role::Node(id) => (node_name(id), format!("node {id}")),
            Role::Client => (CLIENT_NAME.to_string(), "a client".to_string()),
        };
        if names(&self.cert, &name) && !names(&self.cert, WILDCARD_PROBE) {
            Ok(())
        } else {
            Err(TlsError::Identity {
                path: self.cert_path.clone(),
                name,
                who,
            })
        }
    }
}

/// Whether certificate `cert` is valid for DNS name `name`.
fn names(cert: &CertificateDer<'_>, name: &str) -> bool {
    let Ok(server_name) = ServerName::try_from(name) else {
        return false;
    };
    webpki::EndEntityCert::try_from(cert)
        .and_then(|c| c.verify_is_valid_for_subject_name(&server_name))
        .is_ok()
}

/// Checks that `chain`'s first certificate is signed by one of `roots` (through the rest of
/// `chain`) and valid now, for a TLS client or server.
fn check_signed(
    chain: &[CertificateDer<'static>],
    roots: &RootCertStore,
    path: &Path,
) -> Result<(), TlsError> {
    let bad = |message: String| TlsError::Pem {
        what: "certificate",
        path: path.to_path_buf(),
        message,
    };
    let cert =
        webpki::EndEntityCert::try_from(&chain[0]).map_err(|e| bad(format!("not X.509: {e}")))?;
    let now = rustls::pki_types::UnixTime::now();
    let algs = provider().signature_verification_algorithms;
    cert.verify_for_usage(
        algs.all,
        &roots.roots,
        &chain[1..],
        now,
        webpki::KeyUsage::client_auth(),
        None,
        None,
    )
    .map(|_| ())
    .map_err(|e| {
        bad(match e {
            webpki::Error::CertExpired { .. } => "expired".to_string(),
            webpki::Error::CertNotValidYet { .. } => "not valid yet".to_string(),
            webpki::Error::UnknownIssuer => "not signed by the CA".to_string(),
            e => format!("does not verify against the CA: {e}"),
        })
    })
}

/// Which role certificate `cert` (its chain verified by TLS) gives a peer claiming id
/// `claimed`, or why it gives none. `known_node` says whether an id is a data node's as the
/// accepting endpoint knows (itself, and the peers it was given addresses for).
pub(crate) fn allows(
    cert: &CertificateDer<'_>,
    claimed: NodeId,
    known_node: impl Fn(NodeId) -> bool,
) -> Result<Role, String> {
    if names(cert, WILDCARD_PROBE) {
        return Err("its certificate has a wildcard name (it would name every node)".into());
    }
    if names(cert, &node_name(claimed)) {
        return Ok(Role::Node(claimed));
    }
    if names(cert, CLIENT_NAME) {
        if known_node(claimed) {
            return Err(format!(
                "a client certificate ({CLIENT_NAME}) cannot claim data node {claimed}'s id"
            ));
        }
        return Ok(Role::Client);
    }
    Err(format!(
        "its certificate names neither {} nor {CLIENT_NAME}",
        node_name(claimed)
    ))
}

/// Whether `e` (from a TLS stream) says the peer's certificate was refused by this end or
/// the other one, i.e. is an identity or trust failure rather than a broken connection.
pub(crate) fn is_certificate_error(e: &std::io::Error) -> bool {
    use rustls::{AlertDescription as A, Error as E};
    match e.get_ref().and_then(|e| e.downcast_ref::<E>()) {
        Some(E::InvalidCertificate(_)) | Some(E::NoCertificatesPresented) => true,
        Some(E::AlertReceived(a)) => matches!(
            a,
            A::BadCertificate
                | A::UnknownCA
                | A::CertificateExpired
                | A::CertificateRequired
                | A::CertificateUnknown
                | A::UnsupportedCertificate
                | A::AccessDenied
        ),
        _ => false,
    }
}

/// Whether `e` (from a TLS stream after its handshake) says a record did not decrypt: bytes
/// altered or injected on the path.
pub(crate) fn is_tampering(e: &std::io::Error) -> bool {
    matches!(
        e.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()),
        Some(rustls::Error::DecryptError)
            | Some(rustls::Error::AlertReceived(
                rustls::AlertDescription::BadRecordMac
            ))
    )
}
