//! Which acquirer moves a commerce's money, per rail (CONTRACT 13): cards go through Transbank
//! (Oneclick Mall for enrolment and recurring charges, Webpay Plus for one-off portal payments),
//! bank debits through Fintoc Direct Debit, and the simulation only in a sandbox.
//!
//! An [`AcquirerSetting`] can only be built valid: the kind belongs to the rail, every code has
//! Transbank's shape, the base URL is `https://` (or `http://` in a sandbox), and production
//! never holds the simulation.

use std::fmt;

use crate::error::{Error, FieldErrors};
use crate::secret::Secret;

/// The two kinds of money movement a commerce contracts separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rail {
    /// Methods 3, 4 and 11, and portal payments.
    Cards,
    /// Methods 5, 6 and 14.
    Bank,
}

impl Rail {
    pub const ALL: [Rail; 2] = [Rail::Cards, Rail::Bank];

    pub fn as_str(self) -> &'static str {
        match self {
            Rail::Cards => "cards",
            Rail::Bank => "bank",
        }
    }

    pub fn parse(text: &str) -> Option<Rail> {
        Rail::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

impl fmt::Display for Rail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who the rail's money goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AcquirerKind {
    /// The simulation of CONTRACT 6: sandbox only.
    Simulated,
    /// Transbank Oneclick Mall and Webpay Plus (REST): cards.
    Transbank,
    /// Fintoc Direct Debit: bank accounts.
    Fintoc,
}

impl AcquirerKind {
    pub const ALL: [AcquirerKind; 3] = [
        AcquirerKind::Simulated,
        AcquirerKind::Transbank,
        AcquirerKind::Fintoc,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AcquirerKind::Simulated => "simulated",
            AcquirerKind::Transbank => "transbank",
            AcquirerKind::Fintoc => "fintoc",
        }
    }

    pub fn parse(text: &str) -> Option<AcquirerKind> {
        AcquirerKind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// Whether this kind can serve `rail`.
    pub fn serves(self, rail: Rail) -> bool {
        match self {
            AcquirerKind::Simulated => true,
            AcquirerKind::Transbank => rail == Rail::Cards,
            AcquirerKind::Fintoc => rail == Rail::Bank,
        }
    }

    /// Where the rail's API is reached when the set-up names no base URL.
    pub fn default_base_url(self, sandbox: bool) -> Option<&'static str> {
        match (self, sandbox) {
            (AcquirerKind::Simulated, _) => None,
            (AcquirerKind::Transbank, true) => Some(TRANSBANK_INTEGRATION),
            (AcquirerKind::Transbank, false) => Some(TRANSBANK_PRODUCTION),
            // Fintoc has one host; test mode is chosen by the key (`sk_test_...`).
            (AcquirerKind::Fintoc, _) => Some(FINTOC_API),
        }
    }
}

/// Transbank's hosts (its SDKs' `integration_type.py`: LIVE and TEST).
pub const TRANSBANK_PRODUCTION: &str = "https://webpay3g.transbank.cl";
pub const TRANSBANK_INTEGRATION: &str = "https://webpay3gint.transbank.cl";
/// Fintoc's API host (its Direct Debit guide, v2023-11-15).
pub const FINTOC_API: &str = "https://api.fintoc.com";

/// The most a Transbank commerce code holds (`ApiConstants.COMMERCE_CODE_LENGTH`).
pub const COMMERCE_CODE_MAX: usize = 12;

/// A Transbank commerce code: digits only, at most 12.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransbankCode(String);

impl TransbankCode {
    pub fn parse(text: &str) -> Option<TransbankCode> {
        let text = text.trim();
        let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
        (digits && text.len() <= COMMERCE_CODE_MAX).then(|| TransbankCode(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Which of Transbank's two tables of authorization response codes a commerce receives
/// (transbankdevelopers.cl/producto/webpay, "Códigos de respuesta de autorización"): level 1
/// is every commerce's default and groups the issuers' reasons in -1 to -5; level 2, given on
/// request to Transbank's support, tells them apart in -1 to -11. The same number means
/// different things at each level, so the level is part of the contract's set-up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ResponseCodeLevel {
    #[default]
    One,
    Two,
}

impl ResponseCodeLevel {
    pub fn number(self) -> u8 {
        match self {
            ResponseCodeLevel::One => 1,
            ResponseCodeLevel::Two => 2,
        }
    }

    pub fn parse(text: &str) -> Option<ResponseCodeLevel> {
        match text.trim() {
            "1" => Some(ResponseCodeLevel::One),
            "2" => Some(ResponseCodeLevel::Two),
            _ => None,
        }
    }
}

/// The codes of a Transbank contract: the Oneclick Mall and its child store, and Webpay Plus,
/// and the level of response codes Transbank gives the commerce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransbankCodes {
    pub mall: TransbankCode,
    pub child: TransbankCode,
    pub webpay: TransbankCode,
    pub response_codes: ResponseCodeLevel,
}

/// What a rail is set to. Secrets travel apart, as [`Secret`]s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AcquirerTerms {
    Simulated,
    Transbank(TransbankCodes),
    Fintoc { public_key: String },
}

impl AcquirerTerms {
    pub fn kind(&self) -> AcquirerKind {
        match self {
            AcquirerTerms::Simulated => AcquirerKind::Simulated,
            AcquirerTerms::Transbank(_) => AcquirerKind::Transbank,
            AcquirerTerms::Fintoc { .. } => AcquirerKind::Fintoc,
        }
    }
}

/// A rail's acquirer, valid for the installation it was checked against.
#[derive(Debug)]
pub struct AcquirerSetting {
    pub rail: Rail,
    pub terms: AcquirerTerms,
    /// Where its API is reached; `None` for the simulation.
    pub base_url: Option<String>,
    /// Transbank's `Tbk-Api-Key-Secret` or Fintoc's secret key; `None` for the simulation.
    pub secret: Option<Secret<String>>,
    /// Fintoc only: the secret of the webhook endpoint registered at Fintoc, which signs the
    /// events it POSTs to `/acquirers/fintoc/webhook`. `None`: outcomes are only asked for.
    pub webhook_secret: Option<Secret<String>>,
}

/// A rail's set-up as typed (the command line's flags, the staff API's body).
#[derive(Debug, Default)]
pub struct AcquirerInput {
    pub rail: Option<String>,
    pub kind: Option<String>,
    pub mall_code: Option<String>,
    pub child_code: Option<String>,
    pub webpay_code: Option<String>,
    /// Transbank: `1` (default) or `2`.
    pub response_code_level: Option<String>,
    pub public_key: Option<String>,
    pub base_url: Option<String>,
    pub secret: Option<Secret<String>>,
    pub webhook_secret: Option<Secret<String>>,
}

/// The most a webhook secret holds (Fintoc's are `whsec_` and a few dozen characters).
pub const WEBHOOK_SECRET_MAX: usize = 200;

/// The refusal of the simulation in production.
pub const ACQUIRER_NOT_ALLOWED: &str = "ACQUIRER_NOT_ALLOWED";

impl AcquirerSetting {
    /// Checks a set-up, naming every bad field at once. In production the simulation is
    /// refused (`ACQUIRER_NOT_ALLOWED`), and so is any `http://` base URL.
    pub fn parse(input: AcquirerInput, sandbox: bool) -> Result<AcquirerSetting, Error> {
        let mut errors = FieldErrors::new();
        let rail = match input.rail.as_deref() {
            None => {
                errors.missing("rail");
                None
            }
            Some(text) => Rail::parse(text.trim()).or_else(|| {
                errors.push("rail", "INVALID_VALUE", "cards or bank");
                None
            }),
        };
        let kind = match input.kind.as_deref() {
            None => {
                errors.missing("kind");
                None
            }
            Some(text) => AcquirerKind::parse(text.trim()).or_else(|| {
                errors.push("kind", "INVALID_VALUE", "simulated, transbank or fintoc");
                None
            }),
        };
        if let (Some(rail), Some(kind)) = (rail, kind)
            && !kind.serves(rail)
        {
            let serves = if kind == AcquirerKind::Transbank {
                "cards"
            } else {
                "bank"
            };
            errors.push(
                "kind",
                "KIND_NOT_FOR_RAIL",
                format!("{} serves the {serves} rail", kind.as_str()),
            );
        }
        let terms = kind.and_then(|kind| terms(kind, &input, &mut errors));
        let base_url =
            kind.and_then(|kind| base_url(kind, input.base_url.as_deref(), sandbox, &mut errors));
        let secret = match kind {
            Some(AcquirerKind::Simulated) | None => None,
            Some(_) => match input.secret {
                Some(s) if !s.expose().trim().is_empty() => Some(s),
                _ => {
                    errors.missing("secret");
                    None
                }
            },
        };
        let webhook_secret = webhook_secret(kind, input.webhook_secret, &mut errors);
        errors.into_result()?;
        let (rail, terms) = (rail.expect("checked"), terms.expect("checked"));
        if terms == AcquirerTerms::Simulated && !sandbox {
            return Err(Error::refused_at(
                ACQUIRER_NOT_ALLOWED,
                "kind",
                "a production installation never simulates a charge; set transbank or fintoc",
            ));
        }
        Ok(AcquirerSetting {
            rail,
            terms,
            base_url,
            secret,
            webhook_secret,
        })
    }
}

/// A webhook secret: only Fintoc signs its webhooks; printable ASCII, at most
/// [`WEBHOOK_SECRET_MAX`] characters. An empty one is none.
fn webhook_secret(
    kind: Option<AcquirerKind>,
    typed: Option<Secret<String>>,
    errors: &mut FieldErrors,
) -> Option<Secret<String>> {
    let typed = typed.filter(|s| !s.expose().trim().is_empty())?;
    let text = typed.expose().trim();
    if kind.is_some_and(|k| k != AcquirerKind::Fintoc) {
        errors.push(
            "webhookSecret",
            "INVALID_VALUE",
            "only Fintoc signs its webhooks",
        );
        return None;
    }
    if text.len() > WEBHOOK_SECRET_MAX || !text.bytes().all(|b| b.is_ascii_graphic()) {
        errors.push(
            "webhookSecret",
            "INVALID_KEY",
            "the webhook endpoint's secret as Fintoc shows it (whsec_...)",
        );
        return None;
    }
    Some(Secret::new(text.to_string()))
}

fn code(field: &str, value: Option<&str>, errors: &mut FieldErrors) -> Option<TransbankCode> {
    match value {
        None => {
            errors.missing(field);
            None
        }
        Some(text) => TransbankCode::parse(text).or_else(|| {
            errors.push(
                field,
                "INVALID_COMMERCE_CODE",
                "Transbank's commerce code: 1 to 12 digits",
            );
            None
        }),
    }
}

fn terms(
    kind: AcquirerKind,
    input: &AcquirerInput,
    errors: &mut FieldErrors,
) -> Option<AcquirerTerms> {
    match kind {
        AcquirerKind::Simulated => Some(AcquirerTerms::Simulated),
        AcquirerKind::Transbank => {
            let mall = code("mallCode", input.mall_code.as_deref(), errors);
            let child = code("childCode", input.child_code.as_deref(), errors);
            let webpay = code("webpayCode", input.webpay_code.as_deref(), errors);
            let level = match input.response_code_level.as_deref().map(str::trim) {
                None | Some("") => Some(ResponseCodeLevel::One),
                Some(text) => ResponseCodeLevel::parse(text).or_else(|| {
                    errors.push(
                        "responseCodeLevel",
                        "INVALID_VALUE",
                        "1 (Transbank's default) or 2",
                    );
                    None
                }),
            };
            Some(AcquirerTerms::Transbank(TransbankCodes {
                mall: mall?,
                child: child?,
                webpay: webpay?,
                response_codes: level?,
            }))
        }
        AcquirerKind::Fintoc => match input.public_key.as_deref().map(str::trim) {
            None | Some("") => {
                errors.missing("publicKey");
                None
            }
            Some(key) if key.starts_with("pk_") && key.len() <= 200 && key.is_ascii() => {
                Some(AcquirerTerms::Fintoc {
                    public_key: key.to_string(),
                })
            }
            Some(_) => {
                errors.push(
                    "publicKey",
                    "INVALID_KEY",
                    "Fintoc's public key: pk_live_... or pk_test_...",
                );
                None
            }
        },
    }
}

/// The rail's API root: the one typed, or the kind's default for this installation.
fn base_url(
    kind: AcquirerKind,
    typed: Option<&str>,
    sandbox: bool,
    errors: &mut FieldErrors,
) -> Option<String> {
    let Some(text) = typed.map(str::trim).filter(|t| !t.is_empty()) else {
        return kind.default_base_url(sandbox).map(str::to_string);
    };
    let scheme_ok = text.starts_with("https://") || (sandbox && text.starts_with("http://"));
    let host = text
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(""))
        .unwrap_or("");
    let shaped = text.len() <= 255
        && !host.is_empty()
        && text.chars().all(|c| c.is_ascii_graphic())
        && !text.contains(['?', '#', '@']);
    if !(scheme_ok && shaped) {
        let rule = if sandbox {
            "an https:// (or, in a sandbox, http://) URL without query or credentials"
        } else {
            "an https:// URL without query or credentials"
        };
        errors.push("baseUrl", "INVALID_URL", rule);
        return None;
    }
    Some(text.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transbank(base_url: Option<&str>) -> AcquirerInput {
        AcquirerInput {
            rail: Some("cards".into()),
            kind: Some("transbank".into()),
            mall_code: Some("597055555541".into()),
            child_code: Some("597055555542".into()),
            webpay_code: Some("597055555532".into()),
            base_url: base_url.map(str::to_string),
            secret: Some(Secret::new("579B532A".into())),
            ..AcquirerInput::default()
        }
    }

    fn fields(e: Error) -> Vec<String> {
        match e {
            Error::Validation(list) => list.into_iter().map(|f| f.field).collect(),
            other => panic!("not a validation error: {other:?}"),
        }
    }

    #[test]
    fn transbank_defaults_to_its_integration_host_in_a_sandbox_and_production_host_otherwise() {
        let sandbox = AcquirerSetting::parse(transbank(None), true).unwrap();
        assert_eq!(sandbox.base_url.as_deref(), Some(TRANSBANK_INTEGRATION));
        let production = AcquirerSetting::parse(transbank(None), false).unwrap();
        assert_eq!(production.base_url.as_deref(), Some(TRANSBANK_PRODUCTION));
        assert_eq!(production.rail, Rail::Cards);
    }

    #[test]
    fn production_refuses_the_simulation_and_plain_http() {
        let simulated = AcquirerInput {
            rail: Some("bank".into()),
            kind: Some("simulated".into()),
            ..AcquirerInput::default()
        };
        match AcquirerSetting::parse(simulated, false) {
            Err(Error::Refused { name, .. }) => assert_eq!(name, ACQUIRER_NOT_ALLOWED),
            other => panic!("{other:?}"),
        }
        let http = transbank(Some("http://127.0.0.1:9000"));
        assert_eq!(
            fields(AcquirerSetting::parse(http, false).unwrap_err()),
            ["baseUrl"]
        );
        let sandbox = AcquirerSetting::parse(transbank(Some("http://127.0.0.1:9000/")), true);
        assert_eq!(
            sandbox.unwrap().base_url.as_deref(),
            Some("http://127.0.0.1:9000")
        );
    }

    #[test]
    fn every_bad_field_is_named() {
        let input = AcquirerInput {
            rail: Some("bank".into()),
            kind: Some("transbank".into()),
            mall_code: Some("59705555554X".into()),
            child_code: None,
            webpay_code: Some("5970555555321".into()),
            ..AcquirerInput::default()
        };
        assert_eq!(
            fields(AcquirerSetting::parse(input, true).unwrap_err()),
            ["kind", "mallCode", "childCode", "webpayCode", "secret"]
        );
    }

    #[test]
    fn only_fintoc_takes_a_webhook_secret() {
        let mut card = transbank(None);
        card.webhook_secret = Some(Secret::new("whsec_1".into()));
        assert_eq!(
            fields(AcquirerSetting::parse(card, true).unwrap_err()),
            ["webhookSecret"]
        );
        let fintoc = |webhook: &str| AcquirerInput {
            rail: Some("bank".into()),
            kind: Some("fintoc".into()),
            public_key: Some("pk_test_1".into()),
            secret: Some(Secret::new("sk_test_1".into())),
            webhook_secret: Some(Secret::new(webhook.into())),
            ..AcquirerInput::default()
        };
        let set = AcquirerSetting::parse(fintoc(" whsec_abc "), false).unwrap();
        assert_eq!(set.webhook_secret.unwrap().expose(), "whsec_abc");
        assert!(
            AcquirerSetting::parse(fintoc(""), false)
                .unwrap()
                .webhook_secret
                .is_none()
        );
        assert_eq!(
            fields(AcquirerSetting::parse(fintoc("whsec a"), false).unwrap_err()),
            ["webhookSecret"]
        );
    }
}
