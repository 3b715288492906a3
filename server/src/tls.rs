//! TLS for client connections (rustls, through pgwire): a certificate chain and its private
//! key in PEM. A client asking for SSL (the protocol's SSLRequest, or PostgreSQL 17's direct
//! TLS with ALPN `postgresql`) gets it; one that does not ask is served in plain text.

use std::io;
use std::path::Path;
use std::sync::Arc;

use pgwire::tokio::tokio_rustls::rustls;
use pgwire::tokio::TlsAcceptor;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The TLS side of the server: its certificate chain and key, read from PEM text.
pub fn acceptor(cert_pem: &[u8], key_pem: &[u8]) -> io::Result<TlsAcceptor> {
    let invalid = |what: &str, e: &dyn std::fmt::Display| {
        io::Error::new(io::ErrorKind::InvalidData, format!("{what}: {e}"))
    };
    let certs = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid("the certificate", &e))?;
    if certs.is_empty() {
        return Err(invalid("the certificate", &"no CERTIFICATE block"));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| invalid("the key", &e))?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| invalid("the certificate and key", &e))?;
    // PostgreSQL 17 clients may open TLS directly, naming the protocol with ALPN.
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// [`acceptor`] of the PEM files at `cert` and `key`.
pub fn acceptor_from_files(cert: &Path, key: &Path) -> io::Result<TlsAcceptor> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
    };
    acceptor(&read(cert)?, &read(key)?)
}
