//! `mandato fees show|set|reset` (CONTRACT 13): a commerce's fee rule per payment method, which
//! the ledger uses when the acquirer reports no fee (Transbank and Fintoc never do).

use clap::Subcommand;
use serde_json::{Value, json};

use super::acquirer::refusal;
use super::dev::{fail, resolve_commerce};
use super::print;
use crate::clock::{Clock, SystemClock, timestamp};
use crate::config::Config;
use crate::domain::fees::{FeeRule, FeeRuleInput};
use crate::domain::state::PaymentMethod;
use crate::operations::fees::{self, FeeRuleView};

#[derive(Subcommand, Debug)]
pub enum FeesCommand {
    /// Every payment method's rule: the commerce's own, or the default (the simulated
    /// acquirer's rates).
    Show {
        #[arg(long)]
        commerce: Option<String>,
    },
    /// Set a method's rule: `--commission 1.49 --fixed 50 --iva yes`.
    Set {
        #[arg(long)]
        commerce: Option<String>,
        /// 3, 4, 5, 6, 11 or 14.
        #[arg(long)]
        method: i64,
        /// Percent of the amount, 0 to 20, at most 4 decimals (1.49 for 1.49 %).
        #[arg(long)]
        commission: String,
        /// Whole pesos per approved charge (default 0).
        #[arg(long)]
        fixed: Option<String>,
        /// Whether IVA (19 %) is added on the commission and the fixed amount.
        #[arg(long, value_parser = ["yes", "no"], default_value = "yes")]
        iva: String,
    },
    /// Put a method's rule back to the default.
    Reset {
        #[arg(long)]
        commerce: Option<String>,
        #[arg(long)]
        method: i64,
    },
}

pub fn run(config: &Config, json_mode: bool, command: FeesCommand) -> anyhow::Result<()> {
    let store = config.open_store()?;
    match command {
        FeesCommand::Show { commerce } => {
            let commerce = resolve_commerce(&store, commerce.as_deref())?;
            let views = store.read(|c| fees::show(c, commerce.id))?;
            print(json_mode, answer(&commerce.code, &views), lines(&views));
        }
        FeesCommand::Set {
            commerce,
            method,
            commission,
            fixed,
            iva,
        } => {
            let method = method_of(method)?;
            let rule = FeeRule::parse(&FeeRuleInput {
                commission_percent: Some(commission),
                fixed,
                iva: Some(iva == "yes"),
            })
            .map_err(refusal)?;
            let commerce = resolve_commerce(&store, commerce.as_deref())?;
            let at = timestamp(SystemClock.now());
            let views = store.write(|tx| {
                fees::set(tx, commerce.id, method, &rule, &at)?;
                fees::show(tx, commerce.id)
            })?;
            print(json_mode, answer(&commerce.code, &views), lines(&views));
        }
        FeesCommand::Reset { commerce, method } => {
            let method = method_of(method)?;
            let commerce = resolve_commerce(&store, commerce.as_deref())?;
            let views = store.write(|tx| {
                if !fees::reset(tx, commerce.id, method)? {
                    return Ok(None);
                }
                fees::show(tx, commerce.id).map(Some)
            })?;
            let Some(views) = views else {
                return Err(fail(
                    "FEE_RULE_NOT_FOUND",
                    format!(
                        "{} has no rule of its own for method {}",
                        commerce.code,
                        method.id()
                    ),
                ));
            };
            print(json_mode, answer(&commerce.code, &views), lines(&views));
        }
    }
    Ok(())
}

fn method_of(id: i64) -> anyhow::Result<PaymentMethod> {
    PaymentMethod::from_id(id)
        .ok_or_else(|| fail("VALIDATION_ERROR", "method: 3, 4, 5, 6, 11 or 14"))
}

fn answer(commerce: &str, views: &[FeeRuleView]) -> Value {
    let rules: Vec<Value> = views
        .iter()
        .map(|v| {
            json!({
                "methodId": v.method.id(),
                "methodName": v.method.name(),
                "commissionPercent": v.rule.commission_percent().to_string(),
                "fixed": v.rule.fixed().to_string(),
                "iva": v.rule.iva(),
                "own": v.own,
                "updatedAt": v.updated_at,
            })
        })
        .collect();
    json!({ "commerce": commerce, "rules": rules })
}

fn lines(views: &[FeeRuleView]) -> String {
    views
        .iter()
        .map(|v| {
            format!(
                "{:>2} {:<13} {}% + ${}{}{}",
                v.method.id(),
                v.method.name(),
                v.rule.commission_percent(),
                v.rule.fixed(),
                if v.rule.iva() { " + IVA" } else { "" },
                if v.own { "" } else { "  (default)" }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
