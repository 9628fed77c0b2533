//! Each commerce's fee rules (CONTRACT 13): set and shown by admins (`mandato fees`, Settings ›
//! Acquirers), read by the ledger for every approval whose acquirer reported no fee.

use mandato_core::domain::fees::{FeeRule, FeeRuleInput};
use mandato_core::domain::state::PaymentMethod;
use mandato_core::error::{Error, Result};
use mandato_store::db::Db;
use mandato_store::fee_rules::{self, FeeRuleRow};

/// One method's rule as shown: the commerce's own, or the default.
#[derive(Debug, Clone, PartialEq)]
pub struct FeeRuleView {
    pub method: PaymentMethod,
    pub rule: FeeRule,
    /// False when the commerce set no rule of its own for the method.
    pub own: bool,
    pub updated_at: Option<String>,
}

fn stored(row: &FeeRuleRow) -> Result<FeeRule> {
    FeeRule::parse(&FeeRuleInput {
        commission_percent: Some(row.commission_percent.clone()),
        fixed: Some(row.fixed_amount.clone()),
        iva: Some(row.iva),
    })
    .map_err(|e| Error::Internal(anyhow::anyhow!("a stored fee rule: {e}")))
}

/// The rule the ledger applies to `commerce_id`'s approvals of `method`.
pub fn rule_for(conn: Db<'_>, commerce_id: i64, method: PaymentMethod) -> Result<FeeRule> {
    match fee_rules::get(conn, commerce_id, method.id())? {
        Some(row) => stored(&row),
        None => Ok(FeeRule::default_for(method)),
    }
}

/// Every method's rule for the commerce, in method order.
pub fn show(conn: Db<'_>, commerce_id: i64) -> Result<Vec<FeeRuleView>> {
    let rows = fee_rules::of_commerce(conn, commerce_id)?;
    let mut methods = PaymentMethod::ALL.to_vec();
    methods.sort_by_key(|m| m.id());
    methods
        .into_iter()
        .map(|method| {
            Ok(match rows.iter().find(|r| r.method_id == method.id()) {
                Some(row) => FeeRuleView {
                    method,
                    rule: stored(row)?,
                    own: true,
                    updated_at: Some(row.updated_at.clone()),
                },
                None => FeeRuleView {
                    method,
                    rule: FeeRule::default_for(method),
                    own: false,
                    updated_at: None,
                },
            })
        })
        .collect()
}

/// Sets the commerce's rule for `method`.
pub fn set(
    tx: Db<'_>,
    commerce_id: i64,
    method: PaymentMethod,
    rule: &FeeRule,
    at: &str,
) -> Result<()> {
    fee_rules::set(
        tx,
        commerce_id,
        &FeeRuleRow {
            method_id: method.id(),
            commission_percent: rule.commission_percent().to_string(),
            fixed_amount: rule.fixed().to_string(),
            iva: rule.iva(),
            updated_at: at.to_string(),
        },
    )?;
    Ok(())
}

/// Puts the commerce's rule for `method` back to the default; false when it had none.
pub fn reset(tx: Db<'_>, commerce_id: i64, method: PaymentMethod) -> Result<bool> {
    Ok(fee_rules::remove(tx, commerce_id, method.id())?)
}
