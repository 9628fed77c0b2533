//! `mandato acquirer set|show|remove` (CONTRACT 13): which acquirer moves a commerce's money on
//! each rail. Secrets are read from stdin, stored, and never printed again.

use std::io::Read;

use clap::Subcommand;
use serde_json::{Value, json};

use super::dev::{environment, fail, resolve_commerce};
use super::print;
use crate::clock::{Clock, SystemClock, timestamp};
use crate::config::Config;
use crate::domain::acquirer::{AcquirerInput, AcquirerSetting, Rail};
use crate::error::Error;
use crate::operations::acquirers::{self, AcquirerView};
use crate::secret::Secret;

#[derive(Subcommand, Debug)]
pub enum AcquirerCommand {
    /// Set the acquirer of a rail: `--rail cards --kind transbank` (Oneclick Mall and Webpay
    /// Plus codes), `--rail bank --kind fintoc` (public key), or `--kind simulated` (sandbox
    /// only). The secret is read from stdin with `--secret-stdin`; with
    /// `--webhook-secret-stdin` too, stdin holds two lines: the API secret, then Fintoc's
    /// webhook secret.
    Set {
        #[arg(long)]
        commerce: Option<String>,
        #[arg(long, value_parser = ["cards", "bank"])]
        rail: String,
        #[arg(long, value_parser = ["simulated", "transbank", "fintoc"])]
        kind: String,
        /// Transbank Oneclick Mall's commerce code.
        #[arg(long)]
        mall_code: Option<String>,
        /// The Oneclick Mall child store that charges.
        #[arg(long)]
        child_code: Option<String>,
        /// Transbank Webpay Plus's commerce code (portal payments).
        #[arg(long)]
        webpay_code: Option<String>,
        /// Which table of response codes Transbank gives the commerce: 1 (every commerce's
        /// default) or 2 (on request to Transbank's support).
        #[arg(long, value_parser = ["1", "2"])]
        response_code_level: Option<String>,
        /// Fintoc's public key (pk_live_... or pk_test_...).
        #[arg(long)]
        public_key: Option<String>,
        /// Read the API secret (Transbank's Tbk-Api-Key-Secret, Fintoc's secret key) from stdin.
        #[arg(long)]
        secret_stdin: bool,
        /// Fintoc: also read the webhook endpoint's secret (whsec_...) from stdin, on the line
        /// after the API secret. Fintoc's webhooks to /acquirers/fintoc/webhook are then
        /// verified and acted on.
        #[arg(long, requires = "secret_stdin")]
        webhook_secret_stdin: bool,
        /// The rail's API root (default: the integration environment in a sandbox, production
        /// in production); `http://` only in a sandbox.
        #[arg(long)]
        base_url: Option<String>,
    },
    /// The commerce's acquirers: kind, codes, base URL, whether a secret is set (never the
    /// secret).
    Show {
        #[arg(long)]
        commerce: Option<String>,
    },
    /// Remove a rail's acquirer: the rail's methods are no longer offered or charged.
    Remove {
        #[arg(long)]
        commerce: Option<String>,
        #[arg(long, value_parser = ["cards", "bank"])]
        rail: String,
    },
}

pub fn run(config: &Config, json_mode: bool, command: AcquirerCommand) -> anyhow::Result<()> {
    match command {
        AcquirerCommand::Set {
            commerce,
            rail,
            kind,
            mall_code,
            child_code,
            webpay_code,
            response_code_level,
            public_key,
            secret_stdin,
            webhook_secret_stdin,
            base_url,
        } => {
            let (secret, webhook_secret) = if secret_stdin {
                read_secrets(webhook_secret_stdin)?
            } else {
                (None, None)
            };
            let input = AcquirerInput {
                rail: Some(rail),
                kind: Some(kind),
                mall_code,
                child_code,
                webpay_code,
                response_code_level,
                public_key,
                base_url,
                secret,
                webhook_secret,
            };
            set(config, json_mode, commerce.as_deref(), input)
        }
        AcquirerCommand::Show { commerce } => show(config, json_mode, commerce.as_deref()),
        AcquirerCommand::Remove { commerce, rail } => {
            remove(config, json_mode, commerce.as_deref(), &rail)
        }
    }
}

/// The API secret and, when asked for, the webhook secret.
type Secrets = (Option<Secret<String>>, Option<Secret<String>>);

/// The API secret from stdin: all of it, or (with the webhook's secret) its first line, the
/// webhook secret being the second.
fn read_secrets(with_webhook: bool) -> anyhow::Result<Secrets> {
    let mut read = String::new();
    std::io::stdin().read_to_string(&mut read)?;
    let text = Secret::new(read);
    let text = text.expose();
    if !with_webhook {
        return Ok((Some(Secret::new(text.trim().to_string())), None));
    }
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let secret = lines.next().map(|l| Secret::new(l.to_string()));
    let webhook = lines.next().map(|l| Secret::new(l.to_string()));
    if webhook.is_none() {
        return Err(fail(
            "VALIDATION_ERROR",
            "webhookSecret: stdin holds the API secret, then the webhook secret on its own line",
        ));
    }
    Ok((secret, webhook))
}

/// A refusal as the command line names it: the rule's name, or VALIDATION_ERROR listing each
/// bad field.
pub(super) fn refusal(error: Error) -> anyhow::Error {
    match error {
        Error::Validation(fields) => {
            let listed: Vec<String> = fields
                .iter()
                .map(|f| format!("{}: {}", f.field, f.message))
                .collect();
            fail("VALIDATION_ERROR", listed.join("; "))
        }
        Error::Refused { name, message, .. } => fail(name, message),
        other => other.into(),
    }
}

fn set(
    config: &Config,
    json_mode: bool,
    commerce: Option<&str>,
    input: AcquirerInput,
) -> anyhow::Result<()> {
    let store = config.open_store()?;
    let sandbox = environment(&store)?.is_sandbox();
    let setting = AcquirerSetting::parse(input, sandbox).map_err(refusal)?;
    let commerce = resolve_commerce(&store, commerce)?;
    let at = timestamp(SystemClock.now());
    store
        .write(|tx| acquirers::set(tx, commerce.id, &setting, &at))
        .map_err(refusal)?;
    let shown = store.read(|c| acquirers::show(c, commerce.id))?;
    let view = shown
        .iter()
        .find(|v| v.rail == setting.rail.as_str())
        .map(view_json)
        .unwrap_or(Value::Null);
    print(
        json_mode,
        json!({"commerce": commerce.code, "acquirer": view}),
        format!(
            "{} rail of {} set to {}",
            setting.rail,
            commerce.code,
            setting.terms.kind().as_str()
        ),
    );
    Ok(())
}

fn view_json(v: &AcquirerView) -> Value {
    json!({
        "rail": v.rail,
        "kind": v.kind,
        "terms": v.terms,
        "baseUrl": v.base_url,
        "secretSet": v.secret_set,
        "webhookSecretSet": v.webhook_secret_set,
        "updatedAt": v.updated_at,
    })
}

fn show(config: &Config, json_mode: bool, commerce: Option<&str>) -> anyhow::Result<()> {
    let store = config.open_store()?;
    let commerce = resolve_commerce(&store, commerce)?;
    let views = store.read(|c| acquirers::show(c, commerce.id))?;
    let mut lines = Vec::new();
    for rail in Rail::ALL {
        let line = match views.iter().find(|v| v.rail == rail.as_str()) {
            Some(v) => format!(
                "{rail}: {} {} base {} secret {}{}",
                v.kind,
                v.terms,
                v.base_url.as_deref().unwrap_or("-"),
                if v.secret_set { "set" } else { "not set" },
                if v.webhook_secret_set {
                    ", webhook secret set"
                } else {
                    ""
                }
            ),
            None => format!("{rail}: not configured"),
        };
        lines.push(line);
    }
    print(
        json_mode,
        json!({"commerce": commerce.code, "acquirers": views.iter().map(view_json).collect::<Vec<_>>()}),
        lines.join("\n"),
    );
    Ok(())
}

fn remove(
    config: &Config,
    json_mode: bool,
    commerce: Option<&str>,
    rail: &str,
) -> anyhow::Result<()> {
    let rail = Rail::parse(rail).ok_or_else(|| fail("VALIDATION_ERROR", "rail: cards or bank"))?;
    let store = config.open_store()?;
    let commerce = resolve_commerce(&store, commerce)?;
    let removed = store.write(|tx| acquirers::remove(tx, commerce.id, rail))?;
    if !removed {
        return Err(fail(
            "ACQUIRER_NOT_FOUND",
            format!("{} has no acquirer on the {rail} rail", commerce.code),
        ));
    }
    print(
        json_mode,
        json!({"commerce": commerce.code, "rail": rail.as_str(), "removed": true}),
        format!("{rail} rail of {} removed", commerce.code),
    );
    Ok(())
}
