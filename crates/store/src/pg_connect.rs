//! How the engine reaches its PostgreSQL server: the URL's settings, the bounds the engine adds
//! to them (connect and statement timeouts) and TLS.
//!
//! TLS follows the URL's `sslmode` (the `postgres` crate reads `disable`, `prefer` and
//! `require`; `prefer` when absent) and the CA file the installation names
//! (`--database-ca-file`):
//! - `disable`: plain TCP.
//! - `prefer`: TLS when the server offers it, plain TCP when it does not. Without a CA file
//!   the server's certificate is not checked (it keeps passive listeners out, not an active
//!   attacker, who could also refuse TLS); with one it is checked as under `require`.
//! - `require`: TLS or no connection, and the server's certificate must chain to the CA file
//!   (only to it) or, without one, to the system's roots, and name the host of the URL
//!   (libpq's `verify-full`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::time::Duration;

use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
use openssl::x509::X509;
use openssl::x509::store::X509StoreBuilder;
use postgres::config::{Host, SslMode};
use postgres_openssl::MakeTlsConnector;

use super::db::{Error, PgConn, Result};

/// Connections a pool keeps open at once by default. Each request or worker holds one for
/// the length of its transaction and SQLite's engine serves everything through one writer,
/// so a handful covers an engine's concurrency; several engines on one server each count
/// theirs against its `max_connections` (100 by default).
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// What an installation may set about its PostgreSQL connections besides the URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgSettings {
    /// Connections the engine's pool has open at once, idle ones included. The audit
    /// writer's two connections are its own, outside this count.
    pub max_connections: usize,
    /// How long a transaction waits for a free connection before it is refused as busy.
    pub acquire_timeout: Duration,
    /// How long opening a connection may take, when the URL sets no `connect_timeout`.
    pub connect_timeout: Duration,
    /// Any one statement of the pool's transactions is cancelled after this; `None` lets it
    /// run. Migrations and the audit writer's bulk loads run without it.
    pub statement_timeout: Option<Duration>,
    /// The certificates that may sign the server's, instead of the system's roots.
    pub ca_file: Option<PathBuf>,
}

impl Default for PgSettings {
    fn default() -> Self {
        PgSettings {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            acquire_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Some(Duration::from_secs(30)),
            ca_file: None,
        }
    }
}

/// A server to connect to, parsed and checked once: the URL's settings with the engine's
/// timeouts added, and the TLS connector its `sslmode` asks for.
pub struct PgTarget {
    /// For the pool: the statement timeout applies.
    pooled: postgres::Config,
    /// For migrations and bulk work: no statement timeout.
    unbounded: postgres::Config,
    tls: Option<Tls>,
    /// Where, for messages: hosts, ports, database and user; never the password.
    place: String,
    /// How long a whole connection (TCP, TLS, authentication) may take.
    handshake_timeout: Duration,
    /// Connection attempts under way, given up on or not.
    unanswered: Arc<AtomicUsize>,
    /// Attempts under way beyond which new ones are refused at once.
    max_unanswered: usize,
}

impl PgTarget {
    /// Parses `url` and prepares what connecting to it needs (its CA file read now, so a bad
    /// one is found at start).
    pub fn new(url: &str, settings: &PgSettings) -> Result<PgTarget> {
        let mut unbounded: postgres::Config = url.parse().map_err(unreadable_url)?;
        if unbounded.get_connect_timeout().is_none() {
            unbounded.connect_timeout(settings.connect_timeout);
        }
        let mut pooled = unbounded.clone();
        if let Some(timeout) = settings.statement_timeout {
            // The URL's own options come after ours, so a `statement_timeout` it sets wins.
            let ours = format!("-c statement_timeout={}", timeout.as_millis().max(1));
            match unbounded.get_options() {
                Some(own) => pooled.options(&format!("{ours} {own}")),
                None => pooled.options(&ours),
            };
        }
        let tls = tls_connector(unbounded.get_ssl_mode(), settings.ca_file.as_deref())?;
        if tls.as_ref().is_some_and(|tls| tls.verifies) && !names_a_tcp_host(&unbounded) {
            // OpenSSL checks a name only when it is given one: a URL with only `hostaddr`
            // would pass unchecked.
            return Err(Error::Tls(
                "checking the server's certificate needs its host name in the URL".into(),
            ));
        }
        let place = describe(&unbounded);
        let per_host = *unbounded
            .get_connect_timeout()
            .unwrap_or(&settings.connect_timeout);
        let hosts = u32::try_from(unbounded.get_hosts().len().max(1)).unwrap_or(u32::MAX);
        Ok(PgTarget {
            pooled,
            unbounded,
            tls,
            place,
            handshake_timeout: per_host.saturating_mul(hosts),
            unanswered: Arc::new(AtomicUsize::new(0)),
            // The pool's connections, the audit writer's two and a migration's.
            max_unanswered: settings.max_connections.max(1) + 3,
        })
    }

    /// A connection for the pool, its statements bounded by the statement timeout.
    pub fn connect(&self) -> Result<PgConn> {
        self.open(&self.pooled)
    }

    /// A connection without the statement timeout, for work that may rightly run long.
    pub fn connect_unbounded(&self) -> Result<PgConn> {
        self.open(&self.unbounded)
    }

    /// The server, database and user, for messages (never the password).
    pub fn place(&self) -> &str {
        &self.place
    }

    /// Connects on a thread of its own, given up after the connect timeout (once per host):
    /// the driver bounds reaching the server, but a server that accepts the connection and
    /// then never answers would hold the caller forever. A given-up thread ends when the
    /// server answers or drops it; while as many as the pool's bound are still waiting, new
    /// attempts are refused at once rather than pile up more threads.
    fn open(&self, config: &postgres::Config) -> Result<PgConn> {
        let waiting = Arc::clone(&self.unanswered);
        if waiting.load(AtomicOrdering::SeqCst) >= self.max_unanswered {
            return Err(self.gave_up("earlier attempts are still unanswered"));
        }
        let (sender, answer) = std::sync::mpsc::sync_channel(1);
        let config = config.clone();
        let tls = self.tls.as_ref().map(|tls| tls.connector.clone());
        waiting.fetch_add(1, AtomicOrdering::SeqCst);
        let spawned = std::thread::Builder::new()
            .name("pg-connect".into())
            .spawn(move || {
                let client = match tls {
                    None => config.connect(postgres::NoTls),
                    Some(tls) => config.connect(tls),
                };
                waiting.fetch_sub(1, AtomicOrdering::SeqCst);
                // Nobody listens once the attempt was given up: the client just closes.
                let _ = sender.send(client);
            });
        if let Err(e) = spawned {
            self.unanswered.fetch_sub(1, AtomicOrdering::SeqCst);
            return Err(self.gave_up(&format!("no thread to connect on: {e}")));
        }
        match answer.recv_timeout(self.handshake_timeout) {
            Ok(client) => client
                .map(PgConn::from_client)
                .map_err(|cause| Error::Connect {
                    place: self.place.clone(),
                    cause,
                }),
            Err(_) => Err(self.gave_up(&format!(
                "no answer within {}s",
                self.handshake_timeout.as_secs_f64()
            ))),
        }
    }

    fn gave_up(&self, why: &str) -> Error {
        Error::ConnectTimeout {
            place: self.place.clone(),
            why: why.to_string(),
        }
    }
}

/// Why a URL cannot be read, with what the engine takes instead of libpq's TLS settings.
fn unreadable_url(error: postgres::Error) -> Error {
    let mut message = super::db::with_causes(&error);
    if message.contains("sslmode") {
        message
            .push_str(" (sslmode is disable, prefer or require; require checks the certificate)");
    } else if message.contains("sslrootcert")
        || message.contains("sslcert")
        || message.contains("sslkey")
    {
        message.push_str(" (name the server's CA with --database-ca-file)");
    }
    Error::Url(message)
}

/// OpenSSL's connector, and whether it checks the server's certificate.
struct Tls {
    connector: MakeTlsConnector,
    verifies: bool,
}

/// The connector `mode` asks for: none for `disable`; otherwise OpenSSL's, checking the
/// certificate (chain and host name) under `require` or whenever a CA file is named.
fn tls_connector(mode: SslMode, ca_file: Option<&Path>) -> Result<Option<Tls>> {
    if mode == SslMode::Disable {
        return Ok(None);
    }
    let mut builder =
        SslConnector::builder(SslMethod::tls_client()).map_err(|e| Error::Tls(e.to_string()))?;
    if let Some(path) = ca_file {
        builder.set_cert_store(ca_store(path)?);
    }
    let verifies = mode == SslMode::Require || ca_file.is_some();
    if !verifies {
        builder.set_verify(SslVerifyMode::NONE);
    }
    let mut connector = MakeTlsConnector::new(builder.build());
    if !verifies {
        connector.set_callback(|ssl, _| {
            ssl.set_verify_hostname(false);
            Ok(())
        });
    }
    Ok(Some(Tls {
        connector,
        verifies,
    }))
}

/// Whether the URL names a host reached over TCP (whose name a certificate must hold).
fn names_a_tcp_host(config: &postgres::Config) -> bool {
    config
        .get_hosts()
        .iter()
        .any(|host| matches!(host, Host::Tcp(_)))
}

/// The certificates of the PEM file at `path`, as the only roots a server's chain may end in.
fn ca_store(path: &Path) -> Result<openssl::x509::store::X509Store> {
    let unreadable = |message: String| Error::CaFile {
        path: path.to_path_buf(),
        message,
    };
    let pem = std::fs::read(path).map_err(|e| unreadable(e.to_string()))?;
    let certificates = X509::stack_from_pem(&pem).map_err(|e| unreadable(e.to_string()))?;
    if certificates.is_empty() {
        return Err(unreadable("it holds no PEM certificate".into()));
    }
    let mut store = X509StoreBuilder::new().map_err(|e| Error::Tls(e.to_string()))?;
    for certificate in certificates {
        store
            .add_cert(certificate)
            .map_err(|e| unreadable(e.to_string()))?;
    }
    Ok(store.build())
}

/// `host:port` for each host, then the database and user: what an operator needs to find
/// the server a message is about.
fn describe(config: &postgres::Config) -> String {
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) => format!("{name}:{port}"),
                #[cfg(unix)]
                Host::Unix(dir) => format!("{}/.s.PGSQL.{port}", dir.display()),
            }
        })
        .collect();
    let hosts = if hosts.is_empty() {
        "the default host".to_string()
    } else {
        hosts.join(", ")
    };
    let mut place = hosts;
    if let Some(dbname) = config.get_dbname() {
        place.push_str(&format!(" (database {dbname}"));
        if let Some(user) = config.get_user() {
            place.push_str(&format!(", user {user}"));
        }
        place.push(')');
    } else if let Some(user) = config.get_user() {
        place.push_str(&format!(" (user {user})"));
    }
    place
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::params;
    use crate::pg_test::OwnCluster;
    use mandato_core::dev_ca::DevCa;

    #[test]
    fn the_place_names_hosts_database_and_user_but_never_the_password() {
        let config: postgres::Config = "postgres://app:hunter2@db.example:6432/mandato"
            .parse()
            .unwrap();
        let place = describe(&config);
        assert_eq!(place, "db.example:6432 (database mandato, user app)");
        let config: postgres::Config = "postgres://app@h1,h2:5433/x".parse().unwrap();
        assert_eq!(describe(&config), "h1:5432, h2:5433 (database x, user app)");
    }

    #[test]
    fn the_url_keeps_its_own_connect_timeout_and_options() {
        let settings = PgSettings::default();
        let target = PgTarget::new(
            "postgres://u@127.0.0.1/db?connect_timeout=2&options=-c%20statement_timeout%3D7",
            &settings,
        )
        .unwrap();
        assert_eq!(
            target.unbounded.get_connect_timeout(),
            Some(&Duration::from_secs(2))
        );
        assert_eq!(
            target.pooled.get_options(),
            Some("-c statement_timeout=30000 -c statement_timeout=7")
        );
        assert_eq!(
            target.unbounded.get_options(),
            Some("-c statement_timeout=7")
        );

        let target = PgTarget::new("postgres://u@127.0.0.1/db", &settings).unwrap();
        assert_eq!(
            target.pooled.get_connect_timeout(),
            Some(&Duration::from_secs(5))
        );
        assert_eq!(target.unbounded.get_options(), None);
    }

    #[test]
    fn libpq_tls_settings_are_refused_with_what_to_use_instead() {
        let settings = PgSettings::default();
        let refused = |url: &str| {
            PgTarget::new(url, &settings)
                .err()
                .expect("refused")
                .to_string()
        };
        let message = refused("postgres://u:pw@h/db?sslmode=verify-full");
        assert!(
            message.contains("sslmode is disable, prefer or require"),
            "{message}"
        );
        let message = refused("postgres://u:pw@h/db?sslrootcert=/ca.pem");
        assert!(message.contains("--database-ca-file"), "{message}");
        assert!(!message.contains("pw"), "{message}");
    }

    #[test]
    fn a_server_that_never_answers_is_given_up_after_the_connect_timeout() {
        // The kernel accepts connections to a listening socket nobody serves: TCP is made,
        // and PostgreSQL's startup waits for an answer that never comes.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = silent.local_addr().unwrap().port();
        let url = format!("postgres://app:hunter2@127.0.0.1:{port}/db?connect_timeout=1");
        let settings = PgSettings {
            max_connections: 1,
            ..PgSettings::default()
        };
        let target = PgTarget::new(&url, &settings).unwrap();
        let started = std::time::Instant::now();
        let error = target.connect().err().expect("given up");
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
        let message = error.to_string();
        assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
        assert!(message.contains("no answer within 1s"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");

        // The given-up attempts still wait; past the bound, new ones are refused at once.
        for _ in 0..3 {
            let _ = target.connect();
        }
        let started = std::time::Instant::now();
        let error = target.connect().err().expect("refused");
        assert!(started.elapsed() < Duration::from_millis(500));
        assert!(error.to_string().contains("still unanswered"), "{error}");
        drop(silent);
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate").unwrap();
        let settings = PgSettings {
            ca_file: Some(path.clone()),
            ..PgSettings::default()
        };
        let error = PgTarget::new("postgres://u@localhost/db?sslmode=require", &settings)
            .err()
            .expect("refused");
        assert!(
            error.to_string().contains(&path.display().to_string()),
            "{error}"
        );
        let settings = PgSettings {
            ca_file: Some(dir.path().join("missing.pem")),
            ..PgSettings::default()
        };
        assert!(PgTarget::new("postgres://u@localhost/db", &settings).is_err());
    }

    #[test]
    fn a_closed_port_fails_at_once_naming_the_server_and_not_the_password() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let url = format!("postgres://app:hunter2@127.0.0.1:{port}/mandato");
        let target = PgTarget::new(&url, &PgSettings::default()).unwrap();
        let started = std::time::Instant::now();
        let error = target.connect().err().expect("nothing listens there");
        assert!(started.elapsed() < Duration::from_secs(5));
        let message = error.to_string();
        assert!(
            message.contains(&format!("127.0.0.1:{port} (database mandato, user app)")),
            "{message}"
        );
        assert!(message.contains("Connection refused"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }

    /// A server of its own speaking TLS with a certificate for `localhost` and `127.0.0.1`
    /// signed by `ca`, its settings changed and reloaded as an operator would.
    fn tls_cluster(ca: &DevCa) -> OwnCluster {
        use std::os::unix::fs::PermissionsExt;
        let cluster = OwnCluster::start();
        let (cert, key) = ca.issue_localhost().unwrap();
        let data = cluster.data_dir();
        std::fs::write(data.join("server.crt"), cert).unwrap();
        std::fs::write(data.join("server.key"), key.expose()).unwrap();
        std::fs::set_permissions(
            data.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        // The server reads them as the user it runs as (`postgres` when the tests run as
        // root), who must own the key.
        let owned = std::process::Command::new("chown")
            .arg("--reference")
            .arg(&data)
            .arg(data.join("server.crt"))
            .arg(data.join("server.key"))
            .status()
            .unwrap();
        assert!(owned.success());
        let admin = PgConn::connect(&cluster.url).unwrap();
        admin.batch("ALTER SYSTEM SET ssl = on").unwrap();
        admin.batch("SELECT pg_reload_conf()").unwrap();
        // The reload is asynchronous: new sessions speak TLS once it is done.
        let prefer = PgTarget::new(&cluster.url, &PgSettings::default()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !uses_tls(&prefer.connect().unwrap()) {
            assert!(
                std::time::Instant::now() < deadline,
                "the server did not turn TLS on: {}",
                std::fs::read_to_string(cluster.dir.join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        cluster
    }

    fn uses_tls(conn: &PgConn) -> bool {
        conn.transaction(|db| {
            db.query_row(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &params![],
                |r| r.get::<bool>(0),
            )
        })
        .unwrap()
    }

    fn connect(url: &str, ca_file: Option<&Path>) -> Result<PgConn> {
        let settings = PgSettings {
            ca_file: ca_file.map(Path::to_path_buf),
            ..PgSettings::default()
        };
        PgTarget::new(url, &settings)?.connect()
    }

    #[test]
    fn each_sslmode_encrypts_and_checks_the_server_as_documented() {
        let ca = DevCa::generate().unwrap();
        let cluster = tls_cluster(&ca);
        let files = tempfile::tempdir().unwrap();
        let ca_file = files.path().join("ca.pem");
        std::fs::write(&ca_file, &ca.cert_pem).unwrap();
        let other_ca_file = files.path().join("other-ca.pem");
        std::fs::write(&other_ca_file, DevCa::generate().unwrap().cert_pem).unwrap();
        let url = |mode: &str| format!("{}?sslmode={mode}", cluster.url);

        // require with the CA that signed the certificate: encrypted, by address or by name.
        let conn = connect(&url("require"), Some(&ca_file)).unwrap();
        assert!(uses_tls(&conn));
        let by_name = url("require").replace("127.0.0.1", "localhost");
        assert!(uses_tls(&connect(&by_name, Some(&ca_file)).unwrap()));

        // Another CA, or the system's roots (which do not hold this CA): refused.
        let refused = connect(&url("require"), Some(&other_ca_file))
            .err()
            .expect("a certificate of another CA is refused");
        assert!(
            refused.to_string().contains("certificate verify failed"),
            "{refused}"
        );
        assert!(refused.to_string().contains("127.0.0.1"), "{refused}");
        assert!(connect(&url("require"), None).is_err());
        // Under prefer, a CA file is checked just the same.
        assert!(connect(&url("prefer"), Some(&other_ca_file)).is_err());

        // prefer without a CA file (and no sslmode at all): encrypted, the certificate
        // unchecked.
        assert!(uses_tls(&connect(&url("prefer"), None).unwrap()));
        assert!(uses_tls(&connect(&cluster.url, None).unwrap()));

        // disable: plain, even with a CA file.
        assert!(!uses_tls(
            &connect(&url("disable"), Some(&ca_file)).unwrap()
        ));
    }
}
