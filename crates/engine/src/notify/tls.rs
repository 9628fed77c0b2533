//! Certificates for local HTTPS receivers: the installation's development CA (made once, kept
//! in the database), `localhost` certificates issued by it, and extra trusted roots.
//!
//! The development CA is name-constrained to `localhost`, `127.0.0.1` and `::1`: its key sits
//! in the database, so a CA able to vouch for any name would let whoever reads the database
//! impersonate any site to every machine that trusts it. Production does not trust it at all.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub use mandato_core::dev_ca::{DevCa, is_name_constrained};

use mandato_store::Store;
use mandato_store::settings;

/// Replaces a development CA made before it was name-constrained by a new, constrained one.
/// Certificates the old CA issued stop verifying, which is the point: `mandato dev-cert`
/// issues new ones. Answers whether a CA was replaced.
pub fn replace_unconstrained_dev_ca(store: &Store) -> anyhow::Result<bool> {
    let current = store.read(|c| Ok(settings::get(c, settings::DEV_CA_CERT)?))?;
    let Some(old) = current else {
        return Ok(false);
    };
    if is_name_constrained(&old) {
        return Ok(false);
    }
    let fresh = DevCa::generate()?;
    // Replaced only if still the one read: another process may have replaced it meanwhile.
    let replaced = store
        .write(|tx| {
            if settings::get(tx, settings::DEV_CA_CERT)?.as_deref() != Some(old.as_str()) {
                return Ok(false);
            }
            settings::set(tx, settings::DEV_CA_KEY, fresh.key_pem.expose())?;
            settings::set(tx, settings::DEV_CA_CERT, &fresh.cert_pem)?;
            Ok(true)
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if replaced {
        tracing::warn!(
            "the development CA had no name constraints and was replaced by one limited to \
             localhost, 127.0.0.1 and ::1; certificates issued by the old one no longer verify: \
             run `mandato dev-cert` again"
        );
    }
    Ok(replaced)
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

/// The installation's development CA, made on first use and kept in the database.
pub fn installation_dev_ca(store: &Store) -> anyhow::Result<DevCa> {
    replace_unconstrained_dev_ca(store)?;
    let existing = store.read(|c| {
        Ok((
            settings::get(c, settings::DEV_CA_CERT)?,
            settings::get(c, settings::DEV_CA_KEY)?,
        ))
    })?;
    if let (Some(cert_pem), Some(key_pem)) = existing {
        return Ok(DevCa {
            cert_pem,
            key_pem: mandato_core::secret::Secret::new(key_pem),
        });
    }
    let fresh = DevCa::generate()?;
    // Two processes may race; both keep whichever pair was stored first.
    let (cert_pem, key_pem) = store
        .write(|tx| {
            let key = settings::get_or_insert(tx, settings::DEV_CA_KEY, fresh.key_pem.expose())?;
            let cert = if key == *fresh.key_pem.expose() {
                settings::set(tx, settings::DEV_CA_CERT, &fresh.cert_pem)?;
                fresh.cert_pem.clone()
            } else {
                settings::get(tx, settings::DEV_CA_CERT)?.unwrap_or_default()
            };
            Ok((cert, key))
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(DevCa {
        cert_pem,
        key_pem: mandato_core::secret::Secret::new(key_pem),
    })
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
