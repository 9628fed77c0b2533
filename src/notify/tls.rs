//! Certificates for local HTTPS receivers: the installation's development CA (made once, kept
//! in the database), `localhost` certificates issued by it, and extra trusted roots.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use sha2::{Digest, Sha256};

use crate::secret::Secret;

/// The development CA: a self-signed root whose only use is signing local receivers' certs.
pub struct DevCa {
    pub cert_pem: String,
    pub key_pem: Secret<String>,
}

impl DevCa {
    pub fn generate() -> anyhow::Result<DevCa> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params
            .distinguished_name
            .push(DnType::CommonName, "mandato local development CA");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "mandato");
        params.not_before = rcgen::date_time_ymd(2024, 1, 1);
        params.not_after = rcgen::date_time_ymd(2036, 1, 1);
        let cert = params.self_signed(&key)?;
        Ok(DevCa {
            cert_pem: cert.pem(),
            key_pem: Secret::new(key.serialize_pem()),
        })
    }

    /// A certificate for `localhost`, `127.0.0.1` and `::1`, signed by this CA.
    pub fn issue_localhost(&self) -> anyhow::Result<(String, Secret<String>)> {
        let ca_key = KeyPair::from_pem(self.key_pem.expose())?;
        let issuer = Issuer::from_ca_cert_pem(&self.cert_pem, ca_key)?;
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "::1".to_string(),
        ])?;
        params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        params.not_before = rcgen::date_time_ymd(2024, 1, 1);
        params.not_after = rcgen::date_time_ymd(2035, 12, 31);
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &issuer)?;
        Ok((cert.pem(), Secret::new(key.serialize_pem())))
    }
}

/// Where `mandato dev-cert` wrote its files.
#[derive(Debug, serde::Serialize)]
pub struct IssuedFiles {
    pub certificate: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
}

/// Writes a fresh `localhost` certificate, its key (mode 0600) and the CA certificate to `dir`.
pub fn write_localhost_cert(ca: &DevCa, dir: &Path) -> anyhow::Result<IssuedFiles> {
    std::fs::create_dir_all(dir)?;
    let (cert, key) = ca.issue_localhost()?;
    let files = IssuedFiles {
        certificate: dir.join("localhost.pem"),
        key: dir.join("localhost-key.pem"),
        ca: dir.join("mandato-dev-ca.pem"),
    };
    std::fs::write(&files.certificate, cert)?;
    write_private(&files.key, key.expose())?;
    std::fs::write(&files.ca, &ca.cert_pem)?;
    Ok(files)
}

fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        file.write_all(contents.as_bytes())
    }
    #[cfg(not(unix))]
    std::fs::write(path, contents)
}

/// A root certificate read from PEM, ready to be trusted.
#[derive(Debug, Clone)]
pub struct RootCert {
    pub pem: String,
    pub fingerprint: String,
    pub subject: String,
}

/// Reads every certificate of a PEM file; each must be a CA certificate.
pub fn parse_roots(pem: &str) -> anyhow::Result<Vec<RootCert>> {
    let mut roots = Vec::new();
    for block in x509_parser::pem::Pem::iter_from_buffer(pem.as_bytes()) {
        let block = block.map_err(|e| anyhow::anyhow!("not a PEM file: {e}"))?;
        if block.label != "CERTIFICATE" {
            continue;
        }
        let cert = block
            .parse_x509()
            .map_err(|e| anyhow::anyhow!("not an X.509 certificate: {e}"))?;
        anyhow::ensure!(cert.is_ca(), "{} is not a CA certificate", cert.subject());
        let body =
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &block.contents);
        let wrapped: Vec<String> = body
            .as_bytes()
            .chunks(64)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        roots.push(RootCert {
            pem: format!(
                "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
                wrapped.join("\n")
            ),
            fingerprint: hex::encode(Sha256::digest(&block.contents)),
            subject: cert.subject().to_string(),
        });
    }
    anyhow::ensure!(!roots.is_empty(), "the file holds no certificate");
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dev_ca_is_a_trustable_root_and_signs_localhost() {
        let ca = DevCa::generate().unwrap();
        let roots = parse_roots(&ca.cert_pem).unwrap();
        assert_eq!(roots.len(), 1);
        assert!(roots[0].subject.contains("mandato local development CA"));
        let (leaf, _) = ca.issue_localhost().unwrap();
        assert!(parse_roots(&leaf).is_err(), "a leaf is not a root");
    }
}
