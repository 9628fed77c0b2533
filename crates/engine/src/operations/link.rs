//! What the Magic Link's pages read: the mandate a link token opens and everything its page
//! shows, in one snapshot.

use mandato_core::domain::activation::ActivationMode;
use mandato_core::domain::holidays::ChargeDates;
use mandato_core::error::{Error, Result};
use mandato_store::commerces::{self, Commerce};
use mandato_store::customers::{self, CustomerRow};
use mandato_store::db::Db;
use mandato_store::installments::{self, InstallmentRow};
use mandato_store::mandates::{self, MandateRow};

use crate::esign::pages::{self, MandateSigning};

/// A mandate's page: its commerce, customer, installments and charge dates, and where its
/// signature stands when it is signature-gated.
pub struct LinkRecords {
    pub commerce: Commerce,
    pub customer: CustomerRow,
    pub installments: Vec<InstallmentRow>,
    pub charge_dates: ChargeDates,
    pub signing: Option<MandateSigning>,
}

/// The mandate a Magic Link token opens.
pub fn by_token(conn: Db<'_>, token: &str) -> Result<Option<MandateRow>> {
    Ok(mandates::by_magic_token(conn, token)?)
}

/// The mandate as committed now: steps that change it read it again inside their transaction,
/// as another activation or a cancellation may have landed since the page was read.
pub fn fresh(conn: Db<'_>, seq: i64) -> Result<MandateRow> {
    Ok(mandates::by_seq(conn, seq)?)
}

/// Everything the mandate's page shows besides the mandate itself.
pub fn records(conn: Db<'_>, mandate: &MandateRow) -> Result<LinkRecords> {
    let commerce = commerces::by_id(conn, mandate.commerce_id)?.ok_or_else(|| {
        Error::Internal(anyhow::anyhow!("mandate {} has no commerce", mandate.id))
    })?;
    let signing = if mandate.activation_mode == ActivationMode::Signature {
        pages::mandate_signing(conn, mandate.seq)?
    } else {
        None
    };
    Ok(LinkRecords {
        customer: customers::by_seq(conn, mandate.customer_seq)?,
        installments: installments::for_mandate(conn, mandate.seq)?,
        charge_dates: mandato_store::calendar::charge_dates(conn, commerce.id)?,
        commerce,
        signing,
    })
}

/// Whether a paid installment was paid (authorization `code`) with the card or account the
/// mandate holds now.
pub fn paid_with_current_instrument(
    conn: Db<'_>,
    installment_seq: i64,
    code: &str,
) -> Result<bool> {
    Ok(mandato_store::charging::paid_with_current_instrument(
        conn,
        installment_seq,
        code,
    )?)
}

/// The UF value of a business date (`YYYY-MM-DD`), in pesos, when it is known: a UF
/// installment's receipt shows the value its pesos were worked out with.
pub fn uf_value(conn: Db<'_>, date: &str) -> Result<Option<String>> {
    Ok(mandato_store::charging::uf_value(conn, date)?)
}
