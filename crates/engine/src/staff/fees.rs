//! Settings › Acquirers › fees (CONTRACT 13): an admin sets, shows and resets each commerce's
//! fee rule per payment method, as `mandato fees` does. Every change goes to the staff audit.

use mandato_core::domain::fees::FeeRule;
use mandato_core::domain::state::PaymentMethod;
use mandato_core::error::{Error, Result};
use mandato_store::commerces;

use super::settings::record;
use crate::Engine;
use crate::operations::fees::{self, FeeRuleView};

impl Engine {
    /// Every method's fee rule for the commerce `code`.
    pub fn fee_rules(&self, code: &str) -> Result<Vec<FeeRuleView>> {
        self.store().read(|c| {
            let commerce =
                commerces::by_code(c, code)?.ok_or_else(|| Error::not_found("commerce"))?;
            fees::show(c, commerce.id)
        })
    }

    /// Sets the commerce's rule for `method`; answers every method's rule.
    pub fn set_fee_rule(
        &self,
        actor: &str,
        code: &str,
        method: PaymentMethod,
        rule: FeeRule,
    ) -> Result<Vec<FeeRuleView>> {
        let now = self.clock.now();
        tokio::task::block_in_place(|| {
            self.store().write(|tx| {
                let commerce =
                    commerces::by_code(tx, code)?.ok_or_else(|| Error::not_found("commerce"))?;
                fees::set(
                    tx,
                    commerce.id,
                    method,
                    &rule,
                    &mandato_core::clock::timestamp(now),
                )?;
                let detail = format!(
                    "method {} {}% + {}{}",
                    method.id(),
                    rule.commission_percent(),
                    rule.fixed(),
                    if rule.iva() { " + IVA" } else { "" }
                );
                record(tx, actor, now, "commerce.fees", code, Some(&detail))?;
                fees::show(tx, commerce.id)
            })
        })
    }

    /// Puts the commerce's rule for `method` back to the default; answers every method's rule.
    pub fn reset_fee_rule(
        &self,
        actor: &str,
        code: &str,
        method: PaymentMethod,
    ) -> Result<Vec<FeeRuleView>> {
        let now = self.clock.now();
        tokio::task::block_in_place(|| {
            self.store().write(|tx| {
                let commerce =
                    commerces::by_code(tx, code)?.ok_or_else(|| Error::not_found("commerce"))?;
                if !fees::reset(tx, commerce.id, method)? {
                    return Err(Error::not_found("fee rule"));
                }
                let detail = format!("method {} default", method.id());
                record(tx, actor, now, "commerce.fees", code, Some(&detail))?;
                fees::show(tx, commerce.id)
            })
        })
    }
}
