//! Certificates for local HTTPS receivers: the installation's development CA (made once, kept
//! in the database), `localhost` certificates issued by it, and extra trusted roots.
//!
//! The development CA is name-constrained to `localhost`, `127.0.0.1` and `::1`: its key sits
//! in the database, so a CA able to vouch for any name would let whoever reads the database
//! impersonate any site to every machine that trusts it. Production does not trust it at all.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CidrSubnet, DnType, GeneralSubtree, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, NameConstraints,
};
use sha2::{Digest, Sha256};

use crate::secret::Secret;
use crate::store::Store;
use crate::store::settings;

/// The only names the development CA may certify.
const DEV_CA_DNS_NAMES: [&str; 1] = ["localhost"];
const DEV_CA_ADDRESSES: [IpAddr; 2] = [
    IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
    IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
];

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
        let mut permitted: Vec<GeneralSubtree> = DEV_CA_DNS_NAMES
            .iter()
            .map(|n| GeneralSubtree::DnsName(n.to_string()))
            .collect();
        permitted.extend(DEV_CA_ADDRESSES.iter().map(|ip| {
            let bits = if ip.is_ipv4() { 32 } else { 128 };
            GeneralSubtree::IpAddress(CidrSubnet::from_addr_prefix(*ip, bits))
        }));
        params.name_constraints = Some(NameConstraints {
            permitted_subtrees: permitted,
            excluded_subtrees: Vec::new(),
        });
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

/// Whether a CA certificate (PEM) carries X.509 name constraints. An unreadable certificate
/// counts as unconstrained, so that it is replaced.
pub fn is_name_constrained(cert_pem: &str) -> bool {
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()) else {
        return false;
    };
    let Ok(cert) = pem.parse_x509() else {
        return false;
    };
    matches!(cert.name_constraints(), Ok(Some(nc)) if nc.value.permitted_subtrees.is_some())
}

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

    #[test]
    fn the_dev_ca_permits_only_localhost_and_loopback() {
        let ca = DevCa::generate().unwrap();
        assert!(is_name_constrained(&ca.cert_pem));
        let (_, pem) = x509_parser::pem::parse_x509_pem(ca.cert_pem.as_bytes()).unwrap();
        let cert = pem.parse_x509().unwrap();
        let constraints = cert.name_constraints().unwrap().expect("name constraints");
        assert!(constraints.critical, "name constraints must be critical");
        let permitted: Vec<String> = constraints
            .value
            .permitted_subtrees
            .as_ref()
            .expect("permitted subtrees")
            .iter()
            .map(|s| format!("{:?}", s.base))
            .collect();
        assert_eq!(permitted.len(), 3, "{permitted:?}");
        assert!(permitted[0].contains("\"localhost\""), "{permitted:?}");
        assert!(constraints.value.excluded_subtrees.is_none());
    }

    #[test]
    fn a_ca_without_constraints_is_told_apart() {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        let old = params.self_signed(&key).unwrap().pem();
        assert!(!is_name_constrained(&old));
        assert!(!is_name_constrained("not a certificate"));
    }
}
