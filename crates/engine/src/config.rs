//! Everything an installation can be told, with the embedded defaults that make a fresh start
//! need no configuration at all.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use chrono_tz::Tz;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Environment {
    Sandbox,
    Production,
}

impl Environment {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "sandbox" => Some(Environment::Sandbox),
            "production" => Some(Environment::Production),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Environment::Sandbox => "sandbox",
            Environment::Production => "production",
        }
    }

    pub fn is_sandbox(self) -> bool {
        self == Environment::Sandbox
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub data_dir: PathBuf,
    /// A PostgreSQL database (`--database-url`) instead of SQLite's file in `data_dir`.
    pub database_url: Option<mandato_core::secret::Secret<String>>,
    /// How the engine connects to PostgreSQL: its pool's bound, timeouts and CA file.
    pub postgres: mandato_store::db::PgSettings,
    pub listen: SocketAddr,
    /// Binding anything but loopback must be asked for explicitly.
    pub allow_non_loopback: bool,
    pub environment: Environment,
    /// The host name merchants and customers use, when it is not localhost (for `Host` checks
    /// and absolute Magic Link URLs).
    pub public_host: Option<String>,
    /// The installation's address as clients reach it (`https://mandato.example`), when TLS or
    /// a proxy sits in front: its host is accepted in `Host` (beside `public_host`), Magic Links
    /// start with it, and with `https` the staff session cookie is `Secure`.
    pub public_url: Option<url::Url>,
    pub time_zone: Tz,
    pub countries: Vec<String>,
    pub process_ids: Vec<String>,
    pub jwt_lifetime_secs: i64,
    /// How far `requestDateTime` may stray from the wall clock.
    pub max_clock_skew_secs: i64,
    pub magic_link_days: i64,
    /// How long a correlationId is remembered for replay refusal.
    pub correlation_retention_days: i64,
    pub delivery: DeliveryConfig,
    /// The local time of the daily charging run; `None` runs only by hand (tests, `charge-run`).
    pub charge_at: Option<chrono::NaiveTime>,
    /// Production delivers webhooks to private and loopback addresses only when asked to
    /// (on-premises receivers); the sandbox always does.
    pub allow_private_webhooks: bool,
    /// The listener's limits against slow and numerous clients.
    pub http: HttpLimits,
    /// Daily backups beside the database, and how many are kept.
    pub backups: crate::backups::BackupConfig,
    /// The days charges are made on.
    pub business_days: BusinessDays,
    /// How many authorizations a charging run keeps in flight at once with a real card
    /// acquirer (CONTRACT 13): a run of N takes about N × latency / this, not N × latency.
    pub acquirer_in_flight: std::num::NonZeroUsize,
    /// How long one call to a real acquirer may take before its outcome counts as unknown.
    pub acquirer_timeout: std::time::Duration,
}

/// What the rails need of the configuration.
#[derive(Clone, Copy, Debug)]
pub struct AcquirerLimits {
    pub in_flight: usize,
    pub timeout: std::time::Duration,
}

impl Config {
    pub fn acquirer_limits(&self) -> AcquirerLimits {
        AcquirerLimits {
            in_flight: self.acquirer_in_flight.get(),
            timeout: self.acquirer_timeout,
        }
    }
}

/// Transbank documents no time limit and its SDKs wait without one; a minute is far beyond its
/// usual answers (well under a second) and short enough for a run to move on.
pub const DEFAULT_ACQUIRER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The default bound of authorizations in flight: Transbank answers in a few hundred
/// milliseconds, so 64 charge ~300 installments a second without a burst a merchant's
/// contract would notice.
pub const DEFAULT_ACQUIRER_IN_FLIGHT: usize = 64;

/// The days charges are made on and bank debits settle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BusinessDays {
    /// Chile's bank days: not weekends, national holidays, 31 December or added holidays.
    #[default]
    Chile,
    /// Every day, on the due date itself (test installations that charge on any date).
    EveryDay,
}

impl BusinessDays {
    pub fn as_str(self) -> &'static str {
        match self {
            BusinessDays::Chile => "CHILE",
            BusinessDays::EveryDay => mandato_store::calendar::EVERY_DAY,
        }
    }
}

/// How long a client may take and how many may be connected (CONTRACT 12, "HTTP").
#[derive(Clone, Debug)]
pub struct HttpLimits {
    /// A request's headers must have arrived within this (also the longest a kept-alive
    /// connection may sit idle between requests).
    pub header_read_timeout: std::time::Duration,
    /// A request is answered or cut within this, reading its body included.
    pub request_timeout: std::time::Duration,
    /// The same for `POST /api/v1/signature`, whose body may hold 16 MiB of PDFs.
    pub signature_request_timeout: std::time::Duration,
    /// Connections served at once; the rest wait in the listen backlog.
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_read_timeout: std::time::Duration::from_secs(10),
            request_timeout: std::time::Duration::from_secs(60),
            signature_request_timeout: std::time::Duration::from_secs(120),
            max_connections: 1024,
        }
    }
}

impl Config {
    pub fn new(data_dir: PathBuf) -> Self {
        Config {
            data_dir,
            database_url: None,
            postgres: mandato_store::db::PgSettings::default(),
            listen: "127.0.0.1:7420".parse().expect("valid default address"),
            allow_non_loopback: false,
            environment: Environment::Sandbox,
            public_host: None,
            public_url: None,
            time_zone: chrono_tz::America::Santiago,
            countries: vec!["CL".into()],
            process_ids: vec!["HYBRID".into(), "API".into(), "BATCH".into()],
            jwt_lifetime_secs: 3600,
            max_clock_skew_secs: 300,
            magic_link_days: 30,
            correlation_retention_days: 7,
            delivery: DeliveryConfig::default(),
            charge_at: chrono::NaiveTime::from_hms_opt(6, 0, 0),
            allow_private_webhooks: false,
            http: HttpLimits::default(),
            backups: crate::backups::BackupConfig::default(),
            business_days: BusinessDays::Chile,
            acquirer_in_flight: std::num::NonZeroUsize::new(DEFAULT_ACQUIRER_IN_FLIGHT)
                .expect("not zero"),
            acquirer_timeout: DEFAULT_ACQUIRER_TIMEOUT,
        }
    }

    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join("mandato.db")
    }

    /// Where the data lives: the PostgreSQL database of `database_url`, or SQLite's file.
    pub fn database_location(&self) -> anyhow::Result<mandato_store::Location> {
        mandato_store::Location::from_url(
            self.database_url.as_ref().map(|url| url.expose().as_str()),
            self.database_path(),
        )
    }

    /// Opens the store where the data lives, naming the place (never the URL, which may hold a
    /// password) when it cannot.
    pub fn open_store(&self) -> anyhow::Result<mandato_store::Store> {
        use anyhow::Context;
        let location = self.database_location()?;
        mandato_store::Store::open_at(&location, &self.postgres).with_context(|| match &location {
            mandato_store::Location::Sqlite(path) => format!("opening {}", path.display()),
            mandato_store::Location::Postgres(_) => "opening the PostgreSQL database".to_string(),
        })
    }

    /// Whether the data lives in PostgreSQL.
    pub fn uses_postgres(&self) -> bool {
        self.database_url.is_some()
    }
}

/// `~/.local/share/mandato` on Linux (honouring `XDG_DATA_HOME`), the platform's data directory
/// elsewhere.
pub fn default_data_dir() -> PathBuf {
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("mandato");
    }
    let home = std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    if cfg!(target_os = "macos") {
        home.join("Library/Application Support/mandato")
    } else {
        home.join(".local/share/mandato")
    }
}

// Webhook delivery.

/// The contract's schedule: after the first attempt, retries after these delays; then FAILED.
pub const RETRY_SCHEDULE: [Duration; 7] = [
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3600),
    Duration::from_secs(5 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(10 * 3600),
];

#[derive(Clone, Debug)]
pub struct DeliveryConfig {
    pub retry_schedule: Vec<Duration>,
    /// Connect and response, body included, within this in all; a receiver that has not
    /// answered by then has failed this attempt.
    pub timeout: Duration,
    pub max_in_flight: usize,
    pub max_per_host: usize,
    /// Each retry delay is moved by up to this fraction, either way, so that retries of many
    /// events failed together do not arrive together.
    pub jitter: f64,
    /// How often to look for due events when nothing wakes the worker.
    pub poll_interval: Duration,
    /// Retry-After values beyond this are capped.
    pub max_retry_after: Duration,
    /// How long an engine holds the events it read (PostgreSQL, where engines share the
    /// outbox); see `deliveries::CLAIM_LEASE`.
    pub claim_lease: Duration,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        DeliveryConfig {
            retry_schedule: RETRY_SCHEDULE.to_vec(),
            timeout: Duration::from_secs(15),
            max_in_flight: 64,
            max_per_host: 8,
            jitter: 0.1,
            poll_interval: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(24 * 3600),
            claim_lease: mandato_store::deliveries::CLAIM_LEASE,
        }
    }
}

impl DeliveryConfig {
    /// A commerce's share of the sending slots: beyond it, a commerce takes a slot only while
    /// more than this many stay free, so that one commerce's slow or dead receivers (any
    /// number of hosts) never hold every slot and another commerce's events go at once.
    pub fn commerce_share(&self) -> usize {
        (self.max_in_flight / 4)
            .max(self.max_per_host)
            .min(self.max_in_flight)
            .max(1)
    }

    /// Automatic attempts in all: the first plus one per retry step.
    pub fn max_attempts(&self) -> i64 {
        self.retry_schedule.len() as i64 + 1
    }
}
