//! TLS on both sides of the proxy.
//!
//! Towards the browser: a per-run CA, made in memory when the run starts and never written
//! anywhere, signs a certificate for each allowlisted host the browser opens a tunnel to. Every
//! such certificate carries the same per-run key, and Chromium is told to accept exactly that key
//! (`--ignore-certificate-errors-spki-list`, which Chromium honours only with a profile folder of
//! its own, as Playwright gives it): the browser alone trusts it, nothing on the machine does,
//! and it dies with the run.
//!
//! Towards the app: an ordinary TLS client that verifies the app's certificate against the
//! system's roots and any `--ca-cert` the run was given (a staging app with a private CA).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::Digest as _;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The per-run authority the browser's side of every tunnel is signed by.
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    leaf: KeyPair,
    /// Server configs by host: one certificate per host per run.
    configs: Mutex<HashMap<String, Arc<rustls::ServerConfig>>>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("spki", &self.spki_sha256())
            .finish_non_exhaustive()
    }
}

impl Authority {
    /// A fresh CA and leaf key (ECDSA P-256: a millisecond, not the tens an RSA key costs).
    ///
    /// # Errors
    ///
    /// Key generation failed.
    pub fn new() -> anyhow::Result<Authority> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params
            .distinguished_name
            .push(DnType::CommonName, "Leopold run CA (this run only)");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = Issuer::new(params, KeyPair::generate()?);
        Ok(Authority {
            issuer,
            leaf: KeyPair::generate()?,
            configs: Mutex::new(HashMap::new()),
        })
    }

    /// Base64 of the SHA-256 of the leaf key's SubjectPublicKeyInfo: the value of Chromium's
    /// `--ignore-certificate-errors-spki-list`.
    pub fn spki_sha256(&self) -> String {
        use base64::Engine as _;
        use rcgen::PublicKeyData as _;
        let digest = sha2::Sha256::digest(self.leaf.subject_public_key_info());
        base64::engine::general_purpose::STANDARD.encode(digest)
    }

    /// The server side of a tunnel to `host`: http/1.1 only (the proxy judges each request of
    /// one connection in turn).
    ///
    /// # Errors
    ///
    /// The certificate could not be made.
    pub fn server_config(&self, host: &str) -> anyhow::Result<Arc<rustls::ServerConfig>> {
        let mut configs = self.configs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = configs.get(host) {
            return Ok(c.clone());
        }
        let mut params = CertificateParams::new(vec![host.to_owned()])
            .with_context(|| format!("no certificate can name {host}"))?;
        params.distinguished_name.push(DnType::CommonName, host);
        let cert = params.signed_by(&self.leaf, &self.issuer)?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf.serialize_der()));
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        configs.insert(host.to_owned(), config.clone());
        Ok(config)
    }
}

/// The client side towards the app: the system's roots plus `extra` PEM files.
///
/// # Errors
///
/// An extra file that cannot be read or holds no certificate, named.
pub fn client_config(extra: &[PathBuf]) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    // Unreadable system certificates are skipped: the extra ones may be all a staging app needs.
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    for path in extra {
        let certs = read_pem_certs(path)?;
        let (added, _) = roots.add_parsable_certificates(certs);
        anyhow::ensure!(
            added > 0,
            "--ca-cert {}: no usable certificate in it\n(hint: give a PEM file holding the CA that signed your staging app's certificate)",
            path.display()
        );
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn read_pem_certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject as _;
    let certs = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("--ca-cert {}: cannot read it", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("--ca-cert {}: not a PEM certificate file", path.display()))?;
    anyhow::ensure!(
        !certs.is_empty(),
        "--ca-cert {}: no certificate in it\n(hint: give a PEM file with a -----BEGIN CERTIFICATE----- block)",
        path.display()
    );
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_for_every_host_and_one_config_per_host() {
        let a = Authority::new().unwrap();
        let spki = a.spki_sha256();
        assert_eq!(spki.len(), 44, "base64 of 32 bytes");
        let c1 = a.server_config("staging.example.com").unwrap();
        let c2 = a.server_config("staging.example.com").unwrap();
        assert!(Arc::ptr_eq(&c1, &c2));
        a.server_config("cdn.example.com").unwrap();
        assert_eq!(a.spki_sha256(), spki);
        // Another run, another key.
        assert_ne!(Authority::new().unwrap().spki_sha256(), spki);
    }

    #[test]
    fn a_ca_file_that_is_not_one_is_refused_by_name() {
        let (dir, p) = crate::test_support::temp_path("ca.pem");
        std::fs::write(&p, "not a certificate\n").unwrap();
        let e = format!("{:#}", client_config(std::slice::from_ref(&p)).unwrap_err());
        assert!(e.contains("ca.pem"), "{e}");
        let missing = dir.path().join("missing.pem");
        let e = format!("{:#}", client_config(&[missing]).unwrap_err());
        assert!(
            e.contains("missing.pem") && e.contains("cannot read"),
            "{e}"
        );
    }
}
