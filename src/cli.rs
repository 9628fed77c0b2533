//! The `mandato` command line (CONTRACT 10). Commands that change data open the same database
//! file as a running `mandato serve` and write in their own short transactions, which SQLite
//! (WAL, busy timeout) serializes with the server's.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use serde_json::json;

use crate::auth::{api_key, password};
use crate::config::{Config, Environment, default_data_dir};
use crate::domain::state::PaymentMethod;
use crate::notify::tls;
use crate::secret::Secret;
use crate::store::settings;
use mandato_engine::records::ResetScope;
use mandato_engine::staff::events::rotate_webhook_secret;
use mandato_engine::staff::settings::{
    NewCommerce, add_trusted_roots, create_api_key, create_commerce, create_staff, revoke_api_key,
};

mod acquirer;
mod audit;
mod clock;
mod dev;
mod fees;
mod holidays;
mod ledger;
pub mod listen;
pub mod trigger;
pub use dev::{CliError, error_name, parse, report, require_sandbox, resolve_commerce};

#[derive(Parser, Debug)]
#[command(
    name = "mandato",
    version,
    about = "Payment mandates, installments and signed webhooks, self-contained"
)]
pub struct Cli {
    /// Where the database lives (default: the platform's data directory).
    #[arg(long, global = true, env = "MANDATO_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Keep the data in this PostgreSQL database (postgres://user:password@host:port/db)
    /// instead of SQLite in the data directory.
    #[arg(
        long,
        global = true,
        env = "MANDATO_DATABASE_URL",
        hide_env_values = true
    )]
    pub database_url: Option<String>,
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// Print one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// How the engine connects to PostgreSQL (with `--database-url`; SQLite ignores them).
#[derive(Args, Debug, Clone, Default)]
pub struct PostgresArgs {
    /// Connections the engine's pool keeps open at once, idle ones included [default: 16].
    /// Past it, work waits up to 5 s for a connection, then is answered 503 SERVICE_BUSY.
    #[arg(
        long,
        global = true,
        env = "MANDATO_DATABASE_MAX_CONNECTIONS",
        value_name = "N",
        value_parser = clap::value_parser!(u16).range(1..=1000)
    )]
    pub database_max_connections: Option<u16>,
    /// Seconds any one statement may run before PostgreSQL cancels it; 0 for no limit
    /// [default: 30]. Migrations are not limited.
    #[arg(
        long,
        global = true,
        env = "MANDATO_DATABASE_STATEMENT_TIMEOUT",
        value_name = "SECONDS",
        value_parser = clap::value_parser!(u32).range(0..=86_400)
    )]
    pub database_statement_timeout: Option<u32>,
    /// PEM file of the CA certificates that may sign the server's certificate, instead of the
    /// system's roots; with it the certificate and host name are always checked.
    #[arg(
        long,
        global = true,
        env = "MANDATO_DATABASE_CA_FILE",
        value_name = "FILE"
    )]
    pub database_ca_file: Option<PathBuf>,
}

impl PostgresArgs {
    /// The defaults, with what was given in their place.
    pub fn settings(&self) -> crate::store::db::PgSettings {
        let mut settings = crate::store::db::PgSettings::default();
        if let Some(max) = self.database_max_connections {
            settings.max_connections = usize::from(max);
        }
        if let Some(secs) = self.database_statement_timeout {
            settings.statement_timeout =
                (secs > 0).then(|| std::time::Duration::from_secs(u64::from(secs)));
        }
        settings.ca_file.clone_from(&self.database_ca_file);
        settings
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the engine: the HTTP listener (API, UI, pages) and background work.
    Serve(ServeArgs),
    /// Manage commerces.
    #[command(subcommand)]
    Commerce(CommerceCommand),
    /// Manage API keys.
    #[command(subcommand)]
    Apikey(ApiKeyCommand),
    /// Which acquirer moves a commerce's money on each rail (cards, bank).
    #[command(subcommand)]
    Acquirer(acquirer::AcquirerCommand),
    /// A commerce's fee rule per payment method, for the ledger (commission, fixed, IVA).
    #[command(subcommand)]
    Fees(fees::FeesCommand),
    /// Manage staff accounts for the UI.
    #[command(subcommand)]
    Staff(StaffCommand),
    /// Print the environment's JWE public key (PEM).
    PublicKey,
    /// Write a consistent copy of the live database to FILE.
    Backup { file: PathBuf },
    /// Issue a `localhost` certificate from the installation's development CA (made once), for
    /// a local HTTPS webhook receiver. The delivery worker trusts that CA.
    DevCert {
        /// Where to write localhost.pem, localhost-key.pem and mandato-dev-ca.pem
        /// (default: DATA_DIR/dev-cert).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Manage the extra root certificates trusted for webhook delivery.
    #[command(subcommand)]
    Trust(TrustCommand),
    /// Run the charging engine for one business date (default: today) and exit.
    ChargeRun {
        /// The business date, YYYY-MM-DD.
        #[arg(long)]
        date: Option<chrono::NaiveDate>,
    },
    /// Manage UF values.
    #[command(subcommand)]
    Uf(UfCommand),
    /// The business-day calendar: list a year's holidays, add or remove one-off ones.
    #[command(subcommand)]
    Holidays(holidays::HolidaysCommand),
    /// Sandbox tools for a commerce's test data.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Make a throwaway customer and mandate (or signature process) of a commerce and drive
    /// it through SCENARIO, so that its real events are written and the running engine
    /// delivers them to the commerce's webhook URL (`commerce set-webhook`). Sandbox only.
    Trigger(crate::trigger::TriggerArgs),
    /// Receive this commerce's new events on a local HTTPS receiver (sandbox): prints a line
    /// per event with its signature check, and can forward each to a local URL.
    Listen(ListenArgs),
    /// A commerce's recent events, newest first; `events resend EVENT_ID` sends one again.
    Events(EventsArgs),
    /// A commerce's ledger: export its entries, reconcile an acquirer payout report.
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// List the automatic backups in DATA_DIR/backups, newest first.
    Backups,
    /// Put a backup in place of the database (mandato must be stopped); the replaced database
    /// is kept beside it as mandato.db.replaced-<time>.
    Restore { file: PathBuf },
    /// Check the audit hash chains: staff actions and signature processes.
    #[command(subcommand)]
    Audit(AuditCommand),
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Recompute the staff audit's hash chain and every signature process's trail: exit 0 when
    /// they hold, 1 naming the first broken record.
    Verify,
}

#[derive(Args, Debug)]
pub struct ListenArgs {
    /// The commerce code (may be omitted when the installation has only one).
    #[arg(long)]
    pub commerce: Option<String>,
    /// Also POST each event (exact body and Standard Webhooks headers) to this http(s) URL on
    /// this machine, and print its answer's status.
    #[arg(long)]
    pub forward_to: Option<String>,
    /// Forward deliveries whose signatures do not verify too (by default they are printed but
    /// not forwarded: the receiver behind the listener should only see what the engine sent).
    #[arg(long, requires = "forward_to")]
    pub forward_unverified: bool,
    /// Only these event types, comma-separated: activation, payment, signature.
    #[arg(long)]
    pub events: Option<String>,
    /// How long the lease lasts without renewal (the engine stops sending after that when the
    /// listener is killed).
    #[arg(long, default_value_t = 30, hide = true)]
    pub lease_seconds: u64,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EventsArgs {
    #[command(subcommand)]
    pub action: Option<EventsAction>,
    /// The commerce code (may be omitted when the installation has only one).
    #[arg(long, global = true)]
    pub commerce: Option<String>,
    /// Keep printing new events as they are written.
    #[arg(long)]
    pub follow: bool,
    /// How many recent events to list (1 to 100).
    #[arg(long, default_value_t = 20)]
    pub limit: i64,
}

#[derive(Subcommand, Debug)]
pub enum EventsAction {
    /// Schedule an event to be sent again now, whatever its state.
    Resend { event_id: String },
}

#[derive(Subcommand, Debug)]
pub enum SandboxCommand {
    /// Remove the commerce's customers (unless kept), mandates, installments, charge attempts,
    /// events and signature processes, as `POST /api/v1/sandbox/reset` does. The sandbox
    /// clock stays where it is (`mandato sandbox clock` shows it).
    Reset {
        /// The commerce (may be omitted when the installation has only one).
        #[arg(long)]
        commerce: Option<String>,
        /// Keep the customers.
        #[arg(long, conflicts_with = "triggers_only")]
        keep_customers: bool,
        /// Remove only what `mandato trigger` made (its `trigger-*` customers, mandates and
        /// signature processes, with everything hanging off them).
        #[arg(long)]
        triggers_only: bool,
    },
    /// The installation's business clock: `show` (the default) or `advance --days N | --to
    /// DATE`, which charges each date crossed, as `POST /api/v1/sandbox/clock` does.
    Clock {
        #[command(subcommand)]
        action: Option<clock::ClockAction>,
    },
    /// Print the simulated acquirer's payout report of a business date (CSV), as
    /// `GET /api/v1/sandbox/payout-report` does.
    PayoutReport {
        /// The commerce (may be omitted when the installation has only one).
        #[arg(long)]
        commerce: Option<String>,
        /// The payout date, YYYY-MM-DD.
        #[arg(long)]
        date: chrono::NaiveDate,
    },
}

#[derive(Subcommand, Debug)]
pub enum LedgerCommand {
    /// Print the commerce's ledger entries, oldest first (CSV with a header row, or JSON).
    Export {
        /// The commerce (may be omitted when the installation has only one).
        #[arg(long)]
        commerce: Option<String>,
        /// First business date, inclusive (YYYY-MM-DD).
        #[arg(long)]
        from: Option<chrono::NaiveDate>,
        /// Last business date, inclusive (YYYY-MM-DD).
        #[arg(long)]
        to: Option<chrono::NaiveDate>,
        #[arg(long, value_enum, default_value = "csv")]
        format: ledger::ExportFormat,
    },
    /// Match an acquirer payout report (CSV `date,reference,amount`) against the ledger, store
    /// the import, and print the result.
    Reconcile {
        /// The commerce (may be omitted when the installation has only one).
        #[arg(long)]
        commerce: Option<String>,
        file: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum UfCommand {
    /// Import UF values from a CSV of `date,value` lines (`2026-12-01,39123.45`; a header line
    /// and `;` with a decimal comma are accepted too).
    Import { file: PathBuf },
}

#[derive(Subcommand, Debug)]
pub enum TrustCommand {
    /// Trust the CA certificate(s) in a PEM file for webhook delivery.
    AddRoot { file: PathBuf },
    /// List the extra trusted roots: fingerprint (hex SHA-256), subject, when added.
    List,
    /// Stop trusting a root, by fingerprint or by the PEM file it was added from.
    Remove {
        #[arg(value_name = "FINGERPRINT|FILE")]
        target: String,
    },
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (port 0: any free port, logged at start).
    #[arg(long, env = "MANDATO_LISTEN", default_value = "127.0.0.1:7420")]
    pub listen: std::net::SocketAddr,
    /// `sandbox` (test helpers on) or `production`.
    #[arg(long, default_value = "sandbox", value_parser = ["sandbox", "production"])]
    pub environment: String,
    /// Allow listening on an address other machines can reach.
    #[arg(long)]
    pub allow_non_loopback: bool,
    /// The host name clients use, when not localhost (accepted in `Host`, used in links).
    #[arg(long)]
    pub public_host: Option<String>,
    /// In production, deliver webhooks to private, loopback and link-local addresses too
    /// (receivers on this machine or the local network).
    #[arg(long)]
    pub allow_private_webhooks: bool,
    /// The address clients use when TLS or a proxy is in front (`https://host[:port]`): its
    /// host is accepted in `Host`, links start with it, and with https the staff session
    /// cookie is `Secure`.
    #[arg(long, value_parser = parse_public_url)]
    pub public_url: Option<url::Url>,
    /// How many days keep their newest automatic backup (the most recent days that have one).
    #[arg(long, default_value = "7")]
    pub backup_keep_daily: std::num::NonZeroU32,
    /// How many ISO weeks before those keep their newest backup.
    #[arg(long, default_value_t = 4)]
    pub backup_keep_weekly: u32,
    /// Take no automatic daily backups.
    #[arg(long)]
    pub no_backups: bool,
    /// The days charges are made on: `chile` (Chile's bank days) or `every-day` (a test
    /// installation that charges on any date).
    #[arg(long, env = "MANDATO_BUSINESS_DAYS", default_value = "chile", value_parser = ["chile", "every-day"])]
    pub business_days: String,
    /// On PostgreSQL, how many seconds an engine holds the webhook events it took to send;
    /// those of an engine that dies go to the others when it ends. Longer than a send (15 s)
    /// plus its wait for a slot, so that no event is sent by two engines at once.
    #[arg(long, env = "MANDATO_DELIVERY_LEASE_SECS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(20..=3600))]
    pub delivery_lease_secs: u64,
    /// How many card authorizations a charging run keeps in flight at once with a real
    /// acquirer (Transbank).
    #[arg(long, env = "MANDATO_ACQUIRER_IN_FLIGHT", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub acquirer_in_flight: u64,
    /// How many seconds one call to a real acquirer may take before its outcome counts as
    /// unknown (and is asked for later).
    #[arg(long, env = "MANDATO_ACQUIRER_TIMEOUT_SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=300))]
    pub acquirer_timeout_secs: u64,
}

fn parse_public_url(text: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|e| e.to_string())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err("an http:// or https:// URL with a host".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("no query or fragment".into());
    }
    Ok(url)
}

#[derive(Subcommand, Debug)]
pub enum CommerceCommand {
    /// Register a commerce; prints its webhook secret (and its password, when generated).
    Add {
        /// A RUT (normalized to 12345678-5) or an issued code.
        #[arg(long)]
        code: String,
        #[arg(long)]
        name: String,
        /// Read the password from standard input instead of generating one.
        #[arg(long)]
        password_stdin: bool,
        /// An allowed `channel` header value; repeat for several (default: any).
        #[arg(long = "channel")]
        channels: Vec<String>,
        /// Payment-method ids the commerce offers (default: 3,4,11,5,6,14).
        #[arg(long = "payment-method", value_delimiter = ',')]
        payment_methods: Vec<i64>,
        /// Manual payments must carry an authorization code.
        #[arg(long)]
        authorization_required: bool,
    },
    /// Replace the commerce's webhook secret; the old one keeps signing (beside the new one)
    /// for the overlap window.
    RotateSecret {
        #[arg(long)]
        code: String,
        /// Hours the previous secret stays valid.
        #[arg(long, default_value_t = 24)]
        overlap_hours: u32,
    },
    /// List the commerces: code, name, customers, mandates, webhook URL.
    List,
    /// Show a commerce; with --secret, its webhook secret too.
    Show {
        code: String,
        /// Also print the webhook secret.
        #[arg(long)]
        secret: bool,
    },
    /// Where charges due on a weekend or holiday go: the next business day (the default) or
    /// the previous one.
    SetChargingRule {
        #[arg(long)]
        code: String,
        /// next or previous.
        #[arg(long)]
        rule: String,
    },
    /// Set the commerce's webhook URL (https://), where `mandato trigger` sends its events;
    /// without --url, clear it.
    SetWebhook {
        #[arg(long)]
        code: String,
        #[arg(long)]
        url: Option<String>,
    },
    /// Set how the commerce's mandates are activated when `POST /mandate` does not say:
    /// `direct` (enrolling the instrument activates) or `signature` (the customer then signs
    /// the mandate document; its completion activates).
    SetActivation {
        #[arg(long)]
        code: String,
        #[arg(long)]
        mode: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum ApiKeyCommand {
    /// Create an API key and print it (once).
    Create {
        /// Limit the key to this commerce; repeat for several (default: every commerce).
        #[arg(long = "commerce")]
        commerces: Vec<String>,
        /// What the key is for (at most 100 characters), shown in lists and in the staff UI.
        #[arg(long)]
        name: Option<String>,
    },
    /// Revoke the key with this prefix (its first 8 characters).
    Revoke { prefix: String },
    /// List the keys: prefix, name, commerces, created, revoked, last use (never the key).
    List,
}

#[derive(Subcommand, Debug)]
pub enum StaffCommand {
    /// Create a staff account.
    Add {
        #[arg(long)]
        email: String,
        #[arg(long)]
        password_stdin: bool,
        #[arg(long, default_value = "admin", value_parser = ["admin", "operator", "viewer"])]
        role: String,
    },
}

pub fn config_for(
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
    postgres: &PostgresArgs,
) -> Config {
    let mut config = Config::new(data_dir.unwrap_or_else(default_data_dir));
    config.database_url = database_url.map(crate::secret::Secret::new);
    config.postgres = postgres.settings();
    config
}

fn print(json_mode: bool, value: serde_json::Value, text: String) {
    if json_mode {
        out(format_args!("{value}"));
    } else {
        out(format_args!("{text}"));
    }
}

/// Writes one line to stdout. Every command prints through here rather than `println!`, which
/// panics when the reader has gone (`mandato public-key | head -1`): a closed pipe means nobody
/// wants the rest, so the command ends quietly with exit 0 (CONTRACT 12). Other write errors
/// (a full disk behind a redirection) are reported and exit 1.
pub fn out(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let written = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            eprintln!("error: writing to stdout: {e}");
            std::process::exit(1);
        }
    }
}

fn read_stdin_secret() -> anyhow::Result<Secret<String>> {
    let mut buf = String::new();
    std::io::stdin()
        .read_to_string(&mut buf)
        .context("reading the password from stdin")?;
    let password = buf.trim_end_matches(['\n', '\r']).to_string();
    anyhow::ensure!(
        password.chars().count() >= 8,
        "the password must have at least 8 characters"
    );
    Ok(Secret::new(password))
}

/// The backup commands work on SQLite's file; on PostgreSQL they name the tools that do it.
fn refuse_on_postgres(config: &Config, command: &str) -> anyhow::Result<()> {
    if config.uses_postgres() {
        return Err(dev::fail(
            "NOT_ON_POSTGRES",
            format!("mandato {command}: {}", crate::store::BACKUP_ON_POSTGRES),
        ));
    }
    Ok(())
}

/// Runs every command but `serve`.
pub fn run_admin(cli: Cli) -> anyhow::Result<()> {
    let config = config_for(
        cli.data_dir.clone(),
        cli.database_url.clone(),
        &cli.postgres,
    );
    let json_mode = cli.json;
    match cli.command {
        Command::Serve(_) => unreachable!("serve is run by main"),
        Command::Commerce(CommerceCommand::Add {
            code,
            name,
            password_stdin,
            channels,
            payment_methods,
            authorization_required,
        }) => {
            // A code written as a RUT must be a valid one, stored normalized.
            let code = dev::commerce_code(&code)?;
            anyhow::ensure!(!name.trim().is_empty(), "the name must not be empty");
            anyhow::ensure!(
                name.trim().chars().count() <= crate::domain::commerce::MAX_NAME_CHARS,
                "the name has at most {} characters",
                crate::domain::commerce::MAX_NAME_CHARS
            );
            crate::domain::text::check_shown_text(name.trim())
                .map_err(|e| anyhow::anyhow!("the name {e}"))?;
            let methods: Vec<PaymentMethod> = if payment_methods.is_empty() {
                PaymentMethod::ALL.to_vec()
            } else {
                payment_methods
                    .iter()
                    .map(|id| {
                        PaymentMethod::from_id(*id)
                            .ok_or_else(|| anyhow::anyhow!("unknown payment method {id}"))
                    })
                    .collect::<anyhow::Result<_>>()?
            };
            let (password, generated) = if password_stdin {
                (read_stdin_secret()?, false)
            } else {
                (password::generate_commerce_password(), true)
            };
            let secret = api_key::generate_webhook_secret();
            let hash = password::hash_password(&password);
            let store = config.open_store()?;
            let new = NewCommerce {
                code: &code,
                name: name.trim(),
                password_hash: &hash,
                channels: &channels,
                payment_methods: &methods,
                webhook_secret: &secret,
                authorization_required,
            };
            store
                .write(|tx| create_commerce(tx, None, chrono::Utc::now(), &new))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let mut value = json!({"code": code, "webhookSecret": secret.expose()});
            let mut text = format!(
                "commerce {code} registered\nwebhook secret: {}",
                secret.expose()
            );
            if generated {
                value["password"] = json!(password.expose());
                text.push_str(&format!("\npassword (shown once): {}", password.expose()));
            }
            print(json_mode, value, text);
        }
        Command::Commerce(CommerceCommand::RotateSecret {
            code,
            overlap_hours,
        }) => {
            let store = config.open_store()?;
            let secret = api_key::generate_webhook_secret();
            let now = chrono::Utc::now();
            let until =
                crate::clock::timestamp(now + chrono::Duration::hours(overlap_hours.into()));
            let rotated = store
                .write(|tx| rotate_webhook_secret(tx, None, now, &code, &secret, &until))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            if !rotated {
                return Err(dev::fail(
                    "COMMERCE_NOT_FOUND",
                    format!("no commerce has code {code}"),
                ));
            }
            print(
                json_mode,
                json!({"code": code, "webhookSecret": secret.expose(), "previousValidUntil": until}),
                format!(
                    "new webhook secret: {}\nthe previous one stays valid until {until}",
                    secret.expose()
                ),
            );
        }
        Command::DevCert { out } => {
            let store = config.open_store()?;
            let ca = dev_ca(&store)?;
            let dir = out.unwrap_or_else(|| config.data_dir.join("dev-cert"));
            let files = tls::write_localhost_cert(&ca, &dir)?;
            print(
                json_mode,
                serde_json::to_value(&files)?,
                format!(
                    "certificate: {}\nkey: {}\nCA (trusted by mandato's webhook delivery): {}",
                    files.certificate.display(),
                    files.key.display(),
                    files.ca.display()
                ),
            );
        }
        Command::Trust(TrustCommand::AddRoot { file }) => {
            let pem = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let roots = tls::parse_roots(&pem)?;
            let store = config.open_store()?;
            let added = store
                .write(|tx| add_trusted_roots(tx, None, chrono::Utc::now(), &roots))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            print(
                json_mode,
                json!({"added": added, "certificates": roots.len()}),
                format!(
                    "{} of {} certificate(s) added: {}",
                    added.len(),
                    roots.len(),
                    added.join("; ")
                ),
            );
        }
        Command::ChargeRun { date } => {
            let store = Arc::new(config.open_store()?);
            let clock: Arc<dyn crate::clock::Clock> = Arc::new(crate::clock::SystemClock);
            let offset = store.read(|c| Ok(settings::get(c, settings::SANDBOX_OFFSET_DAYS)?))?;
            let calendar = crate::clock::BusinessCalendar::new(
                config.time_zone,
                offset.and_then(|o| o.parse().ok()).unwrap_or(0),
            );
            let date = date.unwrap_or_else(|| calendar.today(clock.now()));
            // The installation's acquirers: production never simulates a charge.
            let sandbox = config.environment.is_sandbox();
            let rails = Arc::new(mandato_engine::rails::Rails::new(
                Arc::clone(&store),
                Arc::clone(&clock),
                sandbox,
                config.acquirer_limits(),
            )?);
            // A running server's webhook worker picks the events up on its next look.
            let charger =
                crate::charging::run::Charger::new(store, rails, clock, sandbox, Box::new(|| {}));
            let summary = charger
                .run(date, crate::charging::run::Trigger::Manual)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let c = &summary.counts;
            print(
                json_mode,
                json!({"date": date.to_string(), "businessDay": summary.business_day,
                       "nextBusinessDay": summary.next_business_day.map(|d| d.to_string()),
                       "attempted": c.attempted, "paid": c.paid, "rejected": c.rejected,
                       "inValidation": c.in_validation, "inProcess": c.in_process, "settled": c.settled,
                       "waitingUf": c.waiting_uf, "acquirerNotConfigured": c.acquirer_not_configured}),
                match summary.next_business_day.filter(|_| !summary.business_day) {
                    Some(next) => format!(
                        "{date} is not a business day: nothing was charged; the next is {next}"
                    ),
                    None => format!(
                        "{date}: {} attempted, {} paid, {} rejected, {} in validation, {} in process, {} settled, {} waiting for UF",
                        c.attempted,
                        c.paid,
                        c.rejected,
                        c.in_validation,
                        c.in_process,
                        c.settled,
                        c.waiting_uf
                    ),
                },
            );
        }
        Command::Uf(UfCommand::Import { file }) => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let values = crate::domain::uf::parse_csv(&text)?;
            let store = config.open_store()?;
            store
                .write(|tx| crate::operations::uf::import(tx, &values))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            print(
                json_mode,
                json!({"imported": values.len()}),
                format!("{} UF values imported", values.len()),
            );
        }
        Command::Apikey(ApiKeyCommand::Create {
            commerces: codes,
            name,
        }) => {
            let name = dev::api_key_name(name.as_deref())?;
            let store = config.open_store()?;
            let key = api_key::generate();
            let at = chrono::Utc::now();
            store
                .write(|tx| create_api_key(tx, None, at, &key, &codes, name.as_deref()))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            print(
                json_mode,
                json!({"apiKey": key.key.expose(), "prefix": key.prefix, "commerces": codes,
                       "name": name}),
                format!(
                    "API key (shown once): {}\nprefix: {}",
                    key.key.expose(),
                    key.prefix
                ),
            );
        }
        Command::Apikey(ApiKeyCommand::Revoke { prefix }) => {
            let store = config.open_store()?;
            let at = chrono::Utc::now();
            let revoked = match store.write(|tx| revoke_api_key(tx, None, at, &prefix)) {
                Err(crate::error::Error::NotFound { .. }) => {
                    return Err(dev::fail(
                        "API_KEY_NOT_FOUND",
                        format!("no active API key has prefix {prefix}"),
                    ));
                }
                revoked => revoked.map_err(|e| anyhow::anyhow!("{e}"))?,
            };
            print(
                json_mode,
                json!({"prefix": prefix, "revoked": revoked}),
                format!("revoked {revoked} key(s)"),
            );
        }
        Command::Staff(StaffCommand::Add {
            email,
            password_stdin,
            role,
        }) => {
            let email = crate::domain::contact::Email::parse(&email)
                .map_err(|_| anyhow::anyhow!("not a valid e-mail address"))?;
            let (password, generated) = if password_stdin {
                (read_stdin_secret()?, false)
            } else {
                (password::generate_commerce_password(), true)
            };
            let hash = password::hash_password(&password);
            let store = config.open_store()?;
            let staff_role = crate::store::staff::Role::parse(&role)
                .ok_or_else(|| anyhow::anyhow!("not a staff role: {role}"))?;
            let at = chrono::Utc::now();
            store
                .write(|tx| create_staff(tx, None, at, email.as_str(), &hash, staff_role))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let mut value = json!({"email": email.as_str(), "role": role});
            let mut text = format!("staff account {} ({role}) created", email.as_str());
            if generated {
                value["password"] = json!(password.expose());
                text.push_str(&format!("\npassword (shown once): {}", password.expose()));
            }
            print(json_mode, value, text);
        }
        Command::PublicKey => {
            let (_, keys) = crate::app::open(&config)?;
            let pem = keys.jwe.public_pem().to_string();
            print(
                json_mode,
                json!({"publicKey": pem}),
                pem.trim_end().to_string(),
            );
        }
        Command::Listen(args) => crate::listen::run(
            &config,
            crate::listen::ListenOptions {
                commerce: args.commerce,
                forward_to: args.forward_to,
                forward_unverified: args.forward_unverified,
                events: args.events,
                lease_seconds: args.lease_seconds,
                json: json_mode,
            },
        )?,
        Command::Events(EventsArgs {
            action: Some(EventsAction::Resend { event_id }),
            commerce,
            ..
        }) => crate::listen::events::resend(&config, commerce.as_deref(), &event_id, json_mode)?,
        Command::Events(args) => crate::listen::events::list(
            &config,
            crate::listen::events::EventsOptions {
                commerce: args.commerce,
                follow: args.follow,
                limit: args.limit,
                json: json_mode,
            },
        )?,
        Command::Backups => {
            refuse_on_postgres(&config, "backups")?;
            let dir = crate::backups::directory(&config.data_dir);
            let backups =
                crate::backups::list(&dir).with_context(|| format!("reading {}", dir.display()))?;
            let items: Vec<_> = backups
                .iter()
                .map(|b| {
                    json!({"file": b.file, "path": b.path.display().to_string(),
                           "takenAt": crate::clock::timestamp(b.taken_at), "size": b.size})
                })
                .collect();
            let text = if backups.is_empty() {
                format!("no backups in {}", dir.display())
            } else {
                backups
                    .iter()
                    .map(|b| {
                        format!(
                            "{}  {}  {} bytes",
                            b.file,
                            crate::clock::timestamp(b.taken_at),
                            b.size
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            print(
                json_mode,
                json!({"directory": dir.display().to_string(), "backups": items}),
                text,
            );
        }
        Command::Restore { file } => {
            refuse_on_postgres(&config, "restore")?;
            let restored = crate::backups::restore(&config.data_dir, &file, chrono::Utc::now())?;
            let latest = crate::store::migrations::latest_version();
            let mut text = format!(
                "restored {} into {} (schema {} of {latest}{})",
                file.display(),
                restored.database.display(),
                restored.schema_version,
                if restored.schema_version < latest {
                    "; brought up to date at the next start"
                } else {
                    ""
                }
            );
            if let Some(replaced) = &restored.replaced {
                text.push_str(&format!(
                    "\nthe replaced database is kept as {}",
                    replaced.display()
                ));
            }
            print(
                json_mode,
                json!({"restored": file.display().to_string(),
                       "database": restored.database.display().to_string(),
                       "replaced": restored.replaced.as_ref().map(|p| p.display().to_string()),
                       "schemaVersion": restored.schema_version}),
                text,
            );
        }
        Command::Backup { file } => {
            anyhow::ensure!(
                !file.exists(),
                "{} already exists; choose a new file",
                file.display()
            );
            refuse_on_postgres(&config, "backup")?;
            let store = config.open_store()?;
            store.backup_to(&file)?;
            print(
                json_mode,
                json!({"backup": file.display().to_string()}),
                format!("database copied to {}", file.display()),
            );
        }
        Command::Commerce(CommerceCommand::List) => dev::commerce_list(&config, json_mode)?,
        Command::Commerce(CommerceCommand::Show { code, secret }) => {
            dev::commerce_show(&config, json_mode, &code, secret)?
        }
        Command::Commerce(CommerceCommand::SetChargingRule { code, rule }) => {
            holidays::set_charging_rule(&config, json_mode, &code, &rule)?
        }
        Command::Holidays(command) => holidays::run(&config, json_mode, command)?,
        Command::Acquirer(command) => acquirer::run(&config, json_mode, command)?,
        Command::Fees(command) => fees::run(&config, json_mode, command)?,
        Command::Commerce(CommerceCommand::SetWebhook { code, url }) => {
            dev::commerce_set_webhook(&config, json_mode, &code, url.as_deref())?
        }
        Command::Commerce(CommerceCommand::SetActivation { code, mode }) => {
            dev::commerce_set_activation(&config, json_mode, &code, &mode)?
        }
        Command::Apikey(ApiKeyCommand::List) => dev::apikey_list(&config, json_mode)?,
        Command::Trust(TrustCommand::List) => dev::trust_list(&config, json_mode)?,
        Command::Trust(TrustCommand::Remove { target }) => {
            dev::trust_remove(&config, json_mode, &target)?
        }
        Command::Sandbox(SandboxCommand::Reset {
            commerce,
            keep_customers,
            triggers_only,
        }) => {
            let scope = if triggers_only {
                ResetScope::TriggersOnly
            } else {
                ResetScope::Everything { keep_customers }
            };
            dev::sandbox_reset(&config, json_mode, commerce.as_deref(), scope)?
        }
        Command::Sandbox(SandboxCommand::Clock { action }) => {
            clock::run(&config, json_mode, action)?
        }
        Command::Sandbox(SandboxCommand::PayoutReport { commerce, date }) => {
            ledger::payout_report(&config, json_mode, commerce.as_deref(), date)?
        }
        Command::Ledger(LedgerCommand::Export {
            commerce,
            from,
            to,
            format,
        }) => {
            // `--json` means one JSON object on stdout, whatever the format asked.
            let format = if json_mode {
                ledger::ExportFormat::Json
            } else {
                format
            };
            ledger::export(&config, commerce.as_deref(), from, to, format)?
        }
        Command::Ledger(LedgerCommand::Reconcile { commerce, file }) => {
            ledger::reconcile(&config, json_mode, commerce.as_deref(), &file)?
        }
        Command::Trigger(args) => crate::trigger::run(&config, json_mode, args)?,
        Command::Audit(AuditCommand::Verify) => audit::verify(&config, json_mode)?,
    }
    Ok(())
}

/// The installation's development CA, made on first use and kept in the database.
pub use crate::notify::tls::installation_dev_ca as dev_ca;

/// Runs `serve` until Ctrl-C or SIGTERM.
pub async fn serve(
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
    postgres: PostgresArgs,
    args: ServeArgs,
) -> anyhow::Result<()> {
    let mut config = config_for(data_dir, database_url, &postgres);
    // The automatic backups copy SQLite's file; PostgreSQL's are pg_dump's.
    if config.uses_postgres() && config.backups.enabled {
        tracing::info!(
            "automatic backups are off on PostgreSQL: back the database up with pg_dump"
        );
    }
    config.listen = args.listen;
    config.allow_non_loopback = args.allow_non_loopback;
    config.public_host = args.public_host;
    config.allow_private_webhooks = args.allow_private_webhooks;
    config.public_url = args.public_url;
    config.backups.enabled = !args.no_backups && !config.uses_postgres();
    if args.business_days == "every-day" {
        config.business_days = crate::config::BusinessDays::EveryDay;
    }
    config.delivery.claim_lease = std::time::Duration::from_secs(args.delivery_lease_secs);
    config.acquirer_in_flight = usize::try_from(args.acquirer_in_flight)
        .ok()
        .and_then(std::num::NonZeroUsize::new)
        .unwrap_or(config.acquirer_in_flight);
    config.acquirer_timeout = std::time::Duration::from_secs(args.acquirer_timeout_secs);
    config.backups.keep_daily = args.backup_keep_daily;
    config.backups.keep_weekly = args.backup_keep_weekly;
    config.environment = Environment::parse(&args.environment).expect("clap checked the value");
    let clock: Arc<dyn crate::clock::Clock> = Arc::new(crate::clock::SystemClock);
    tracing::info!(data_dir = %config.data_dir.display(), "starting");
    let mut running = crate::app::start(config, clock).await?;
    if let Some(code) = &running.setup_code {
        // The one place this secret is shown: whoever reads this log started the server.
        tracing::warn!(
            setup_code = code.expose().as_str(),
            "no staff account yet: the first setup from another machine asks for this one-time code"
        );
    }
    tokio::select! {
        _ = shutdown_signal() => tracing::info!("shutting down: finishing in-flight requests"),
        result = running.stopped() => return result,
    }
    running.shutdown().await?;
    tracing::info!("stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
