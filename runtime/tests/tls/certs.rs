//! Certificates for the TLS tests, made with rcgen: a CA, and node and client certificates
//! it signs (or another CA signs, or that expired), written as PEM files to a directory.
//! Shared by the runtime's TLS tests and the CLI's (`#[path]`).

#![allow(dead_code)]

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use std::path::{Path, PathBuf};
use weir_runtime::wire::framing::TlsFiles;

/// A certificate authority: its certificate and key.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate's validity.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// Valid now (2020 to 2100).
    Now,
    /// Expired (2000 to 2001).
    Expired,
}

impl Ca {
    /// A new CA named `name`.
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Ca { issuer }
    }

    /// The CA's certificate, PEM.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for the DNS names `names` and its key, PEM.
    pub fn issue(&self, names: &[&str], validity: Validity) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names.clone()).unwrap();
        params.distinguished_name.push(
            DnType::CommonName,
            names.first().cloned().unwrap_or_default(),
        );
        if validity == Validity::Expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        } else {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2100, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// Writes a certificate for `names` signed by this CA, its key and this CA's certificate
    /// to `dir` as `<stem>.crt`, `<stem>.key` and `<stem>-ca.crt`.
    pub fn files(&self, dir: &Path, stem: &str, names: &[&str]) -> TlsFiles {
        self.files_with(dir, stem, names, Validity::Now, &[])
    }

    /// [`Ca::files`] with the validity given, the CA file holding `also_trusted` CAs too.
    pub fn files_with(
        &self,
        dir: &Path,
        stem: &str,
        names: &[&str],
        validity: Validity,
        also_trusted: &[&Ca],
    ) -> TlsFiles {
        let (cert, key) = self.issue(names, validity);
        let mut ca = self.pem();
        for other in also_trusted {
            ca.push_str(&other.pem());
        }
        write(dir, stem, &cert, &key, &ca)
    }
}

/// Writes PEM text to `<stem>.crt`, `<stem>.key` and `<stem>-ca.crt` in `dir`.
pub fn write(dir: &Path, stem: &str, cert: &str, key: &str, ca: &str) -> TlsFiles {
    let path = |suffix: &str| -> PathBuf { dir.join(format!("{stem}{suffix}")) };
    let files = TlsFiles {
        cert: path(".crt"),
        key: path(".key"),
        ca: path("-ca.crt"),
    };
    std::fs::write(&files.cert, cert).unwrap();
    std::fs::write(&files.key, key).unwrap();
    std::fs::write(&files.ca, ca).unwrap();
    files
}

/// The DNS name of data node `id`'s certificate.
pub fn node(id: u32) -> String {
    format!("node-{id}.weir")
}
