//! The developer side of the command line (CONTRACT 12): named errors (one JSON object with
//! `--json`), the commerce code rule, the listings, `commerce show`, the commerce's webhook URL
//! and `sandbox reset`. Like every command they open the database a running `serve` uses and
//! write in short transactions of their own.

use std::fmt;
use std::path::Path;

use serde_json::{Value, json};

use super::{Cli, out, print};
use crate::config::{Config, Environment};
use crate::domain::activation::ActivationMode;
use crate::domain::commerce::CommerceCode;
use crate::store::commerces::{self, Commerce};
use crate::store::{Store, dev_tools, settings};

/// A refusal of a command, with a stable SCREAMING_SNAKE name a script can test for.
#[derive(Debug)]
pub struct CliError {
    pub name: &'static str,
    pub message: String,
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

pub fn fail(name: &'static str, message: impl Into<String>) -> anyhow::Error {
    CliError {
        name,
        message: message.into(),
    }
    .into()
}

/// The name of a failure: a [`CliError`]'s, an engine refusal's (`COMMERCE_EXISTS`, also when
/// it was turned into text as `NAME: message`), or `COMMAND_FAILED`.
pub fn error_name(error: &anyhow::Error) -> String {
    if let Some(e) = error.downcast_ref::<CliError>() {
        return e.name.to_string();
    }
    if let Some(
        crate::error::Error::Refused { name, .. } | crate::error::Error::Forbidden { name, .. },
    ) = error.downcast_ref::<crate::error::Error>()
    {
        return (*name).to_string();
    }
    if let Some(crate::error::Error::NotFound { .. }) = error.downcast_ref::<crate::error::Error>()
    {
        return "NOT_FOUND".into();
    }
    let text = error.to_string();
    match text.split_once(": ") {
        Some((name, _))
            if name.len() > 2
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
                && name.starts_with(|c: char| c.is_ascii_uppercase()) =>
        {
            name.to_string()
        }
        _ => "COMMAND_FAILED".into(),
    }
}

/// Reports a failed command: with `--json`, one object `{"error": {"name", "message"}}` on
/// stdout (scripts read stdout); otherwise `error: ...` on stderr. Either way exit code 1.
pub fn report(json_mode: bool, error: &anyhow::Error) -> std::process::ExitCode {
    if json_mode {
        // Scripts read the JSON on stdout; whoever watches the terminal reads the log line.
        tracing::error!("{error:#}");
        let message = match error.downcast_ref::<CliError>() {
            Some(e) => e.message.clone(),
            None => format!("{error:#}"),
        };
        out(format_args!(
            "{}",
            json!({"error": {"name": error_name(error), "message": message}})
        ));
    } else {
        // Said once, here: no log line repeats it on the same stderr.
        eprintln!("error: {error:#}");
    }
    std::process::ExitCode::FAILURE
}

/// Parses the command line; with `--json` anywhere, a usage error is reported as a JSON error
/// (`INVALID_ARGUMENTS`) too. Help and version print as usual.
pub fn parse() -> Cli {
    use clap::Parser;
    use clap::error::ErrorKind;
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            e.exit()
        }
        Err(e) if std::env::args().any(|a| a == "--json") => {
            // clap's message without its usage and help hints, on one line.
            let text = e.render().to_string();
            let message = text
                .lines()
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            let first = message.trim_start_matches("error: ");
            out(format_args!(
                "{}",
                json!({"error": {"name": "INVALID_ARGUMENTS",
                                 "message": first.trim_start_matches("error: ")}})
            ));
            std::process::exit(1);
        }
        Err(e) => e.exit(),
    }
}

/// A commerce code as `commerce add` stores it (`CommerceCode`: a RUT normalized, or an
/// issued code), refused under the rule's own name.
pub fn commerce_code(text: &str) -> anyhow::Result<String> {
    CommerceCode::parse(text)
        .map(CommerceCode::into_string)
        .map_err(|e| fail(e.name(), format!("{}: {e}", text.trim())))
}

/// The environment `serve` last ran this installation as (sandbox until it has run).
pub fn environment(store: &Store) -> anyhow::Result<Environment> {
    let stored = store.read(|c| Ok(settings::get(c, settings::INSTALLATION_ENVIRONMENT)?))?;
    Ok(stored
        .as_deref()
        .and_then(Environment::parse)
        .unwrap_or(Environment::Sandbox))
}

/// Refuses in a production installation: the sandbox tools would write test data there.
pub fn require_sandbox(store: &Store, what: &str) -> anyhow::Result<()> {
    if environment(store)?.is_sandbox() {
        Ok(())
    } else {
        Err(fail(
            "NOT_SANDBOX",
            format!("{what} is for sandbox installations; this one runs as production"),
        ))
    }
}

/// The commerce named, or the only one when none is named.
pub fn resolve_commerce(store: &Store, code: Option<&str>) -> anyhow::Result<Commerce> {
    match code {
        Some(code) => {
            let normalized = commerce_code(code).unwrap_or_else(|_| code.to_string());
            store
                .read(|c| Ok(commerces::by_code(c, &normalized)?))?
                .ok_or_else(|| fail("COMMERCE_NOT_FOUND", format!("no commerce has code {code}")))
        }
        None => {
            let all = store.read(|c| Ok(dev_tools::commerces(c)?))?;
            match all.as_slice() {
                [only] => store
                    .read(|c| Ok(commerces::by_code(c, &only.code)?))?
                    .ok_or_else(|| fail("COMMERCE_NOT_FOUND", "the commerce is gone")),
                [] => Err(fail(
                    "COMMERCE_NOT_FOUND",
                    "the installation has no commerce yet (mandato commerce add)",
                )),
                many => Err(fail(
                    "COMMERCE_REQUIRED",
                    format!(
                        "the installation has {} commerces; name one with --commerce ({})",
                        many.len(),
                        many.iter()
                            .map(|c| c.code.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
            }
        }
    }
}

fn commerce_json(c: &dev_tools::CommerceListing) -> Value {
    json!({"code": c.code, "name": c.name, "createdAt": c.created_at, "webhookUrl": c.webhook_url,
           "channels": c.channels, "paymentMethods": c.payment_methods,
           "authorizationRequired": c.authorization_required,
           "customers": c.customers, "mandates": c.mandates})
}

pub fn commerce_list(config: &Config, json_mode: bool) -> anyhow::Result<()> {
    let store = config.open_store()?;
    let all = store.read(|c| Ok(dev_tools::commerces(c)?))?;
    if json_mode {
        let items: Vec<Value> = all.iter().map(commerce_json).collect();
        out(format_args!("{}", json!({"commerces": items})));
    } else {
        for c in &all {
            out(format_args!(
                "{}\t{}\t{} customers\t{} mandates\twebhook {}",
                c.code,
                c.name,
                c.customers,
                c.mandates,
                c.webhook_url.as_deref().unwrap_or("-")
            ));
        }
    }
    Ok(())
}

pub fn commerce_show(
    config: &Config,
    json_mode: bool,
    code: &str,
    secret: bool,
) -> anyhow::Result<()> {
    let store = config.open_store()?;
    let commerce = resolve_commerce(&store, Some(code))?;
    let listing = store
        .read(|c| Ok(dev_tools::commerce(c, &commerce.code)?))?
        .ok_or_else(|| fail("COMMERCE_NOT_FOUND", format!("no commerce has code {code}")))?;
    let mut value = commerce_json(&listing);
    value["activationMode"] = json!(commerce.activation_mode.name());
    let mut text = format!(
        "code: {}\nname: {}\ncreated: {}\nwebhook URL: {}\nchannels: {}\npayment methods: {}\nauthorization required: {}\nactivation: {}\ncustomers: {}\nmandates: {}",
        listing.code,
        listing.name,
        listing.created_at,
        listing.webhook_url.as_deref().unwrap_or("(none)"),
        listing
            .channels
            .as_ref()
            .map(|c| c.join(", "))
            .unwrap_or_else(|| "any".into()),
        listing
            .payment_methods
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        listing.authorization_required,
        commerce.activation_mode.name(),
        listing.customers,
        listing.mandates,
    );
    let rule = store.read(|c| Ok(crate::store::calendar::charging_rule(c, commerce.id)?))?;
    value["chargingRule"] = json!(rule.as_str());
    text.push_str(&format!("\ncharging rule: {rule}"));
    if secret {
        // Asked for by name, by whoever can read the database on this machine.
        value["webhookSecret"] = json!(commerce.webhook_secret.expose());
        text.push_str(&format!(
            "\nwebhook secret: {}",
            commerce.webhook_secret.expose()
        ));
    }
    print(json_mode, value, text);
    Ok(())
}

pub fn commerce_set_webhook(
    config: &Config,
    json_mode: bool,
    code: &str,
    url: Option<&str>,
) -> anyhow::Result<()> {
    let url = match url {
        Some(text) => {
            let mut errors = crate::error::FieldErrors::new();
            let owned = text.to_string();
            Some(
                crate::http::fields::https_url(Some(&owned), "url", &mut errors).ok_or_else(
                    || {
                        fail(
                            "INVALID_URL",
                            "the webhook URL must be an https:// URL with a host",
                        )
                    },
                )?,
            )
        }
        None => None,
    };
    let store = config.open_store()?;
    let commerce = resolve_commerce(&store, Some(code))?;
    store
        .write(|tx| {
            Ok(dev_tools::set_webhook_url(
                tx,
                &commerce.code,
                url.as_deref(),
            )?)
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    print(
        json_mode,
        json!({"code": commerce.code, "webhookUrl": url}),
        match &url {
            Some(url) => format!("commerce {}: events of trigger go to {url}", commerce.code),
            None => format!("commerce {}: webhook URL cleared", commerce.code),
        },
    );
    Ok(())
}

/// `commerce set-activation`: the commerce's default activation mode.
pub fn commerce_set_activation(
    config: &Config,
    json_mode: bool,
    code: &str,
    mode: &str,
) -> anyhow::Result<()> {
    let mode = ActivationMode::from_cli(mode).ok_or_else(|| {
        fail(
            "INVALID_ACTIVATION_MODE",
            format!("unknown activation mode {mode:?}: use direct or signature"),
        )
    })?;
    let store = config.open_store()?;
    let commerce = resolve_commerce(&store, Some(code))?;
    store
        .write(|tx| Ok(commerces::set_activation_mode(tx, &commerce.code, mode)?))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    print(
        json_mode,
        json!({"code": commerce.code, "activationMode": mode.name()}),
        format!(
            "commerce {}: mandates are activated {} unless POST /mandate says otherwise",
            commerce.code,
            match mode {
                ActivationMode::Direct => "when the customer enrols (DIRECT)",
                ActivationMode::Signature => "once the customer signs the mandate (SIGNATURE)",
            }
        ),
    );
    Ok(())
}

/// An API key's name as given on the command line: trimmed, blank meaning none, held to the
/// staff API's rules (at most 100 characters, none that would disguise what is shown).
pub fn api_key_name(name: Option<&str>) -> anyhow::Result<Option<String>> {
    let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    if name.chars().count() > 100 {
        return Err(fail(
            "INVALID_NAME",
            "the name has more than 100 characters",
        ));
    }
    crate::domain::text::check_shown_text(name)
        .map_err(|e| fail("INVALID_NAME", format!("the name {e}")))?;
    Ok(Some(name.to_string()))
}

pub fn apikey_list(config: &Config, json_mode: bool) -> anyhow::Result<()> {
    let store = config.open_store()?;
    let keys = store.read(|c| Ok(dev_tools::api_keys(c)?))?;
    if json_mode {
        let items: Vec<Value> = keys
            .iter()
            .map(|k| {
                json!({"prefix": k.prefix, "name": k.name, "commerces": k.commerces,
                       "createdAt": k.created_at, "revokedAt": k.revoked_at,
                       "lastUsedAt": k.last_used_at, "active": k.revoked_at.is_none()})
            })
            .collect();
        out(format_args!("{}", json!({"apiKeys": items})));
    } else {
        for k in &keys {
            out(format_args!(
                "{}\t{}\t{}\tcreated {}\t{}\t{}",
                k.prefix,
                k.name.as_deref().unwrap_or("-"),
                if k.commerces.is_empty() {
                    "every commerce".to_string()
                } else {
                    k.commerces.join(",")
                },
                k.created_at,
                k.revoked_at
                    .as_deref()
                    .map(|at| format!("revoked {at}"))
                    .unwrap_or_else(|| "active".into()),
                k.last_used_at
                    .as_deref()
                    .map(|at| format!("last used {at}"))
                    .unwrap_or_else(|| "never used".into()),
            ));
        }
    }
    Ok(())
}

pub fn trust_list(config: &Config, json_mode: bool) -> anyhow::Result<()> {
    let store = config.open_store()?;
    let roots = store.read(|c| Ok(crate::store::staff_views::trusted_roots(c)?))?;
    if json_mode {
        let items: Vec<Value> = roots
            .iter()
            .map(|r| json!({"fingerprint": r.fingerprint, "subject": r.subject, "addedAt": r.added_at}))
            .collect();
        out(format_args!("{}", json!({"roots": items})));
    } else {
        for r in &roots {
            out(format_args!(
                "{}\t{}\tadded {}",
                r.fingerprint, r.subject, r.added_at
            ));
        }
    }
    Ok(())
}

/// `FINGERPRINT` (hex SHA-256 of the certificate, colons and case ignored) or a PEM `FILE`
/// whose certificates are all removed.
pub fn trust_remove(config: &Config, json_mode: bool, target: &str) -> anyhow::Result<()> {
    let fingerprints: Vec<String> = if Path::new(target).is_file() {
        let pem = std::fs::read_to_string(target)
            .map_err(|e| fail("UNREADABLE_FILE", format!("reading {target}: {e}")))?;
        crate::notify::tls::parse_roots(&pem)
            .map_err(|e| fail("INVALID_CERTIFICATE", format!("{target}: {e:#}")))?
            .into_iter()
            .map(|r| r.fingerprint)
            .collect()
    } else {
        let hex: String = target
            .chars()
            .filter(|c| *c != ':')
            .collect::<String>()
            .to_ascii_lowercase();
        if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(fail(
                "INVALID_FINGERPRINT",
                format!("{target} is neither a PEM file nor a SHA-256 fingerprint (64 hex digits)"),
            ));
        }
        vec![hex]
    };
    let store = config.open_store()?;
    let removed = store
        .write(|tx| {
            let mut removed = Vec::new();
            for f in &fingerprints {
                if crate::store::staff_views::remove_trusted_root(tx, f)? {
                    removed.push(f.clone());
                }
            }
            Ok(removed)
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if removed.is_empty() {
        return Err(fail(
            "ROOT_NOT_FOUND",
            format!("no trusted root matches {target} (mandato trust list)"),
        ));
    }
    print(
        json_mode,
        json!({"removed": removed}),
        format!(
            "{} root(s) no longer trusted: {}",
            removed.len(),
            removed.join(", ")
        ),
    );
    Ok(())
}

pub fn sandbox_reset(
    config: &Config,
    json_mode: bool,
    commerce: Option<&str>,
    scope: mandato_engine::records::ResetScope,
) -> anyhow::Result<()> {
    let store = config.open_store()?;
    require_sandbox(&store, "sandbox reset")?;
    let commerce = resolve_commerce(&store, commerce)?;
    let c = store
        .write(|tx| mandato_engine::operations::sandbox::reset(tx, commerce.id, scope))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    print(
        json_mode,
        json!({"commerce": commerce.code, "customers": c.customers, "mandates": c.mandates,
               "installments": c.installments, "chargeAttempts": c.charge_attempts,
               "events": c.events, "deliveryAttempts": c.delivery_attempts,
               "signatureProcesses": c.signature_processes, "ledgerEntries": c.ledger_entries}),
        format!(
            "commerce {}: removed {} customers, {} mandates, {} installments, {} charge attempts, {} events ({} delivery attempts), {} signature processes, {} ledger entries",
            commerce.code,
            c.customers,
            c.mandates,
            c.installments,
            c.charge_attempts,
            c.events,
            c.delivery_attempts,
            c.signature_processes,
            c.ledger_entries
        ),
    );
    Ok(())
}
