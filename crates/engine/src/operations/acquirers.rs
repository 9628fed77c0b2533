//! Setting, showing and removing a commerce's acquirer per rail (CONTRACT 13, `mandato
//! acquirer` and Settings › Acquirers). The setting arrives checked
//! (`domain::acquirer::AcquirerSetting`); a secret is stored and never answered again.

use serde_json::{Value, json};

use mandato_core::domain::acquirer::{AcquirerSetting, AcquirerTerms, Rail};
use mandato_core::error::Result;
use mandato_store::acquirers::{self, NewAcquirer};
use mandato_store::db::Db;

/// A rail's acquirer as it may be shown: everything but the secret, and whether one is set.
#[derive(Debug, Clone, PartialEq)]
pub struct AcquirerView {
    pub rail: String,
    pub kind: String,
    /// Transbank's codes or Fintoc's public key, as set.
    pub terms: Value,
    pub base_url: Option<String>,
    pub secret_set: bool,
    /// Whether Fintoc's webhook secret is stored (its webhooks are verified and acted on).
    pub webhook_secret_set: bool,
    pub updated_at: String,
}

fn terms_json(terms: &AcquirerTerms) -> Value {
    match terms {
        AcquirerTerms::Simulated => json!({}),
        AcquirerTerms::Transbank(codes) => json!({
            "mallCode": codes.mall.as_str(),
            "childCode": codes.child.as_str(),
            "webpayCode": codes.webpay.as_str(),
            "responseCodeLevel": codes.response_codes.number(),
        }),
        AcquirerTerms::Fintoc { public_key } => json!({ "publicKey": public_key }),
    }
}

/// Sets (or replaces) the commerce's acquirer of the setting's rail.
pub fn set(tx: Db<'_>, commerce_id: i64, setting: &AcquirerSetting, at: &str) -> Result<()> {
    let terms = terms_json(&setting.terms).to_string();
    acquirers::set(
        tx,
        &NewAcquirer {
            commerce_id,
            rail: setting.rail.as_str(),
            kind: setting.terms.kind().as_str(),
            terms: &terms,
            base_url: setting.base_url.as_deref(),
            secret: setting.secret.as_ref(),
            webhook_secret: setting.webhook_secret.as_ref(),
            at,
        },
    )?;
    Ok(())
}

/// The commerce's acquirers, cards first, without their secrets.
pub fn show(conn: Db<'_>, commerce_id: i64) -> Result<Vec<AcquirerView>> {
    Ok(acquirers::of_commerce(conn, commerce_id)?
        .into_iter()
        .map(|row| AcquirerView {
            terms: serde_json::from_str(&row.terms).unwrap_or(Value::Null),
            secret_set: row.secret.is_some(),
            webhook_secret_set: row.webhook_secret.is_some(),
            rail: row.rail,
            kind: row.kind,
            base_url: row.base_url,
            updated_at: row.updated_at,
        })
        .collect())
}

/// Removes the commerce's acquirer of `rail`; false when it had none.
pub fn remove(tx: Db<'_>, commerce_id: i64, rail: Rail) -> Result<bool> {
    Ok(acquirers::remove(tx, commerce_id, rail.as_str())?)
}
