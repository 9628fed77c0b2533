//! The installation's development CA as values: a self-signed root name-constrained to
//! `localhost`, `127.0.0.1` and `::1`, and the `localhost` certificates it issues. Its key sits
//! in the database, so a CA able to vouch for any name would let whoever reads the database
//! impersonate any site to every machine that trusts it. Keeping it and trusting it is the
//! engine's (`notify::tls`); nothing here does I/O.

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, CidrSubnet, DnType, GeneralSubtree, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, NameConstraints,
};

use crate::secret::Secret;

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

#[cfg(test)]
mod tests {
    use super::*;

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
