//! The [`Engine`] handle: the store, the keys, the clock and calendar, the charger, the
//! deliverer and the sealer, with the background tasks that keep them going. Front doors (the
//! HTTP routers, the CLI, the desktop shell) hold an `Arc<Engine>` and call its methods; none
//! of them reaches the store.

use std::sync::{Arc, Mutex};

use chrono::NaiveDate;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use mandato_core::clock::{BusinessCalendar, Clock};
use mandato_core::domain::state::PaymentMethod;
use mandato_core::error::Result;
use mandato_core::processor::Processor;
use mandato_store::audit::AuditWriter;
use mandato_store::commerces::Commerce;
use mandato_store::db::Db;
use mandato_store::{Checkpointer, Store, settings};

use crate::auth::jwe::JweKeyPair;
use crate::auth::jwt::JwtSigner;
use crate::backups::EngineLock;
use crate::charging::run::Charger;
use crate::charging::schedule::Schedule;
use crate::config::Config;
use crate::esign::sealing::Sealer;
use crate::notify::delivery::Deliverer;
use crate::operations::Ctx;
use crate::rails::{Rails, rail_of};

/// The environment's key material.
pub struct Keys {
    pub jwe: JweKeyPair,
    pub jwt: JwtSigner,
}

/// A running engine. `start` starts every background task; `shutdown` stops them and writes
/// what is queued.
pub struct Engine {
    store: Arc<Store>,
    pub audit: Arc<AuditWriter>,
    pub config: Arc<Config>,
    pub keys: Arc<Keys>,
    pub clock: Arc<dyn Clock>,
    pub calendar: Arc<BusinessCalendar>,
    pub deliverer: Arc<Deliverer>,
    /// Each commerce's acquirers per rail (CONTRACT 13).
    pub rails: Arc<Rails>,
    pub charger: Arc<Charger>,
    /// Seals signature processes (the last signature's request seals at once).
    pub sealer: Arc<Sealer>,
    /// Tells the daily schedule to look again (the sandbox clock moved).
    pub schedule_wake: Arc<Notify>,
    /// Tells the Fintoc follower a verified webhook event is waiting.
    pub(crate) fintoc_wake: Arc<Notify>,
    background: Mutex<Background>,
}

/// What `shutdown` stops, waits for and releases (or dropping the engine, when it never
/// shut down).
struct Background {
    schedule: Option<(Arc<Notify>, JoinHandle<()>)>,
    /// The daily backup task, when backups are on.
    backups: Option<(Arc<Notify>, JoinHandle<()>)>,
    /// Copies the WAL back into the database file off the commit path; its last checkpoint
    /// runs when it is dropped, before the data directory's lock is released.
    checkpointer: Option<Checkpointer>,
    /// The shared lock on the data directory that keeps `restore` out while the engine runs.
    lock: Option<EngineLock>,
}

/// Opens the store and loads (or, on first start, generates) the environment's keys.
pub fn open(config: &Config) -> anyhow::Result<(Arc<Store>, Keys)> {
    let store = config.open_store()?;
    let keys = load_or_create_keys(&store)?;
    Ok((Arc::new(store), keys))
}

/// Keys are made once, at first start. Two processes starting together may both generate;
/// the first to store its key wins and both use that one.
fn load_or_create_keys(store: &Store) -> anyhow::Result<Keys> {
    let jwe_pem = stored_or_created_key(store, settings::JWE_PRIVATE_KEY, || {
        tracing::info!("generating the environment's RSA-3072 JWE key (first start)");
        let fresh = JweKeyPair::generate().map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(fresh.private_pem().expose().clone())
    })?;
    let jwt_pem = stored_or_created_key(store, settings::JWT_PRIVATE_KEY, || {
        tracing::info!("generating the environment's P-256 JWT signing key (first start)");
        let fresh = JwtSigner::generate().map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(fresh.private_pem().expose().clone())
    })?;
    Ok(Keys {
        jwe: JweKeyPair::from_private_pem(&jwe_pem)
            .map_err(|e| anyhow::anyhow!("stored JWE key: {e}"))?,
        jwt: JwtSigner::from_private_pem(&jwt_pem)
            .map_err(|e| anyhow::anyhow!("stored JWT key: {e}"))?,
    })
}

fn stored_or_created_key(
    store: &Store,
    name: &str,
    generate: impl FnOnce() -> anyhow::Result<String>,
) -> anyhow::Result<String> {
    if let Some(pem) = store.read(|conn| Ok(settings::get(conn, name)?))? {
        return Ok(pem);
    }
    let pem = generate()?;
    Ok(store.write(|tx| Ok(settings::get_or_insert(tx, name, &pem)?))?)
}

/// One warning per production commerce with a rail no acquirer serves (CONTRACT 13).
fn warn_unserved(rails: &Rails) -> anyhow::Result<()> {
    let unserved = rails.store().read(|c| rails.unserved(c))?;
    for (commerce, missing) in unserved {
        let missing: Vec<&str> = missing.iter().map(|r| r.as_str()).collect();
        tracing::warn!(
            %commerce,
            rails = %missing.join(", "),
            "ACQUIRER_NOT_CONFIGURED: nothing of these rails is offered or charged until `mandato acquirer set` configures them"
        );
    }
    Ok(())
}

impl Engine {
    /// Opens the data directory and the store, settles what a crash left in flight, and starts
    /// the charging schedule, webhook delivery, the sealing sweep, backups and checkpoints.
    /// Must run on a multi-threaded tokio runtime.
    pub async fn start(config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<Arc<Engine>> {
        // Before the database is opened, so a restore never swaps it under a starting engine.
        let lock = tokio::task::block_in_place(|| crate::backups::lock_engine(&config.data_dir))?;
        tokio::task::block_in_place(|| {
            crate::backups::tighten(&crate::backups::directory(&config.data_dir))
        })
        .map_err(|e| anyhow::anyhow!("closing the backups directory to other users: {e}"))?;
        let (store, keys) = tokio::task::block_in_place(|| open(&config))?;
        tokio::task::block_in_place(|| crate::notify::tls::replace_unconstrained_dev_ca(&store))?;
        tokio::task::block_in_place(|| record_installation(&store, &config))?;
        let checkpointer = match store.sqlite() {
            Some(sqlite) => Some(tokio::task::block_in_place(|| sqlite.start_checkpointer())?),
            None => None,
        };
        let audit = AuditWriter::start(
            &store,
            config.correlation_retention_days,
            Arc::clone(&clock),
        )?;
        let offset = store.read(|conn| Ok(settings::get(conn, settings::SANDBOX_OFFSET_DAYS)?))?;
        let offset_days = offset.and_then(|o| o.parse().ok()).unwrap_or(0);
        let calendar = Arc::new(BusinessCalendar::new(config.time_zone, offset_days));
        let sandbox = config.environment.is_sandbox();
        let deliverer = Arc::new(Deliverer::start(
            Arc::clone(&store),
            Arc::clone(&clock),
            config.delivery.clone(),
            sandbox,
            crate::notify::destination::Destinations::of(&config),
        ));
        // Production never builds the simulation: a rail without an acquirer is not charged.
        let rails = Arc::new(Rails::new(
            Arc::clone(&store),
            Arc::clone(&clock),
            sandbox,
            config.acquirer_limits(),
        )?);
        if !sandbox {
            warn_unserved(&rails)?;
        }
        let wake_deliverer = Arc::clone(&deliverer);
        let charger = Arc::new(Charger::new(
            Arc::clone(&store),
            Arc::clone(&rails),
            Arc::clone(&clock),
            sandbox,
            Box::new(move || wake_deliverer.wake()),
        ));
        // Attempts a crash left IN_PROCESS are settled before anything else runs.
        let reconciling = Arc::clone(&charger);
        tokio::task::spawn_blocking(move || reconciling.reconcile()).await??;
        let schedule_wake = Arc::new(Notify::new());
        let schedule = config.charge_at.map(|run_at| {
            let stop = Arc::new(Notify::new());
            let schedule = Schedule {
                charger: Arc::clone(&charger),
                store: Arc::clone(&store),
                clock: Arc::clone(&clock),
                calendar: Arc::clone(&calendar),
                run_at,
            };
            let task = tokio::spawn(schedule.run(Arc::clone(&schedule_wake), Arc::clone(&stop)));
            (stop, task)
        });
        tokio::spawn(release_memory_when_idle(Arc::downgrade(&store)));
        let fintoc_wake = Arc::new(Notify::new());
        tokio::spawn(follow_fintoc(
            Arc::downgrade(&charger),
            Arc::clone(&calendar),
            Arc::clone(&clock),
            Arc::clone(&fintoc_wake),
        ));
        if sandbox {
            tokio::spawn(follow_sandbox_clock(
                Arc::downgrade(&store),
                Arc::clone(&calendar),
            ));
        }
        // PostgreSQL's backups are the server's (`pg_dump`), never the engine's.
        let backups = (config.backups.enabled && store.sqlite().is_some()).then(|| {
            let stop = Arc::new(Notify::new());
            let task = tokio::spawn(crate::backups::run(
                Arc::clone(&store),
                Arc::clone(&clock),
                crate::backups::directory(&config.data_dir),
                config.backups.clone(),
                Arc::clone(&stop),
            ));
            (stop, task)
        });
        // Seals what a crash left owed, then keeps sealing and expiring signature processes.
        let sealer = Arc::new(Sealer::new(
            Arc::clone(&store),
            Arc::clone(&clock),
            Arc::clone(&calendar),
            sandbox,
            Arc::clone(&deliverer),
        ));
        tokio::spawn(Arc::clone(&sealer).sweep());
        // The stand-in hash that unknown sign-in e-mails are checked against, made before the
        // first sign-in so that one does not take longer.
        tokio::task::spawn_blocking(crate::auth::password::prepare).await?;
        Ok(Arc::new(Engine {
            store,
            audit: Arc::new(audit),
            config: Arc::new(config),
            keys: Arc::new(keys),
            clock,
            calendar,
            deliverer,
            rails,
            charger,
            sealer,
            schedule_wake,
            fintoc_wake,
            background: Mutex::new(Background {
                schedule,
                backups,
                checkpointer,
                lock: Some(lock),
            }),
        }))
    }

    /// Stops the schedule (a run under way finishes first) and the backups, lets webhook sends
    /// in flight finish, writes the queued request audit, takes the last WAL checkpoint and
    /// releases the data directory (a restore may then take it), whoever still holds the
    /// engine.
    pub async fn shutdown(&self) -> anyhow::Result<()> {
        let (schedule, backups) = {
            let mut background = self.background.lock().unwrap_or_else(|p| p.into_inner());
            (background.schedule.take(), background.backups.take())
        };
        // A run's events are then delivered or kept for next time.
        for (stop, task) in schedule.into_iter().chain(backups) {
            stop.notify_one();
            let _ = task.await;
        }
        self.deliverer.shutdown().await;
        let audit = Arc::clone(&self.audit);
        tokio::task::spawn_blocking(move || audit.shutdown()).await?;
        let (checkpointer, lock) = {
            let mut background = self.background.lock().unwrap_or_else(|p| p.into_inner());
            (background.checkpointer.take(), background.lock.take())
        };
        // The checkpoint thread finishes its last checkpoint before the lock goes.
        tokio::task::block_in_place(|| drop(checkpointer));
        drop(lock);
        Ok(())
    }

    /// The store, for the composition root, the command line and tests. Front doors call the
    /// engine's methods instead.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Today's business date (America/Santiago, the sandbox clock's offset included).
    pub fn today(&self) -> NaiveDate {
        self.calendar.today(self.clock.now())
    }

    fn ctx<'a>(&'a self, commerce: &'a Commerce) -> Ctx<'a> {
        let now = self.clock.now();
        Ctx {
            commerce,
            charge_dates: &self.store.charge_dates,
            now,
            today: self.calendar.today(now),
        }
    }

    /// Runs a commerce's operation all or nothing in the next group commit, off the async
    /// workers (a durable commit waits for the disk); answers once it is durable. The
    /// operation may run more than once (`Store::write_grouped`): it must change nothing but
    /// the database.
    pub async fn write<T: Send + 'static>(
        self: &Arc<Self>,
        commerce: Arc<Commerce>,
        operation: impl Fn(Db<'_>, &Ctx<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let engine = Arc::clone(self);
        let value = self
            .store
            .write_grouped(move |tx| {
                let ctx = engine.ctx(&commerce);
                operation(tx, &ctx)
            })
            .await?;
        // The change may have written events; the worker need not wait for its next poll.
        self.deliverer.wake();
        Ok(value)
    }

    /// Runs a commerce's read-only operation on a pooled connection.
    pub fn read<T>(
        &self,
        commerce: &Commerce,
        operation: impl FnOnce(Db<'_>, &Ctx<'_>) -> Result<T>,
    ) -> Result<T> {
        let ctx = self.ctx(commerce);
        self.store.read(|conn| operation(conn, &ctx))
    }
}

/// Records what the commands that only make sense in a sandbox (trigger, sandbox reset) and
/// every reader of the calendar (runs, events, the CLI) take from the store.
fn record_installation(store: &Store, config: &Config) -> anyhow::Result<()> {
    let environment = config.environment.as_str();
    store.write(|tx| {
        settings::set(tx, settings::INSTALLATION_ENVIRONMENT, environment)?;
        Ok(settings::set(
            tx,
            mandato_store::calendar::BUSINESS_DAYS,
            config.business_days.as_str(),
        )?)
    })?;
    Ok(())
}

/// Once a second, takes the sandbox clock as stored: engines that share a PostgreSQL database
/// share one clock, which any of them may move, and `mandato sandbox clock advance` moves it
/// beside a running `serve` (the sandbox's own operations also read it before they use it).
/// Ends with the store.
async fn follow_sandbox_clock(store: std::sync::Weak<Store>, calendar: Arc<BusinessCalendar>) {
    let mut ticks = tokio::time::interval(std::time::Duration::from_secs(1));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(store) = store.upgrade() else {
            return;
        };
        let stored = tokio::task::spawn_blocking(move || {
            store.read(|c| Ok(settings::get(c, settings::SANDBOX_OFFSET_DAYS)?))
        })
        .await;
        match stored {
            Ok(Ok(offset)) => {
                if let Some(days) = offset.and_then(|o| o.parse().ok()) {
                    calendar.catch_up_to(days);
                }
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "could not read the sandbox clock"),
            Err(e) => tracing::warn!(error = %e, "could not read the sandbox clock"),
        }
    }
}

/// Twice a second, hands the store's caches back to the system once it has been idle for a
/// whole period (`Store::release_memory_if_idle`); ends with the store.
async fn release_memory_when_idle(store: std::sync::Weak<Store>) {
    let mut ticks = tokio::time::interval(std::time::Duration::from_millis(500));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(store) = store.upgrade() else {
            return;
        };
        store.release_memory_if_idle();
    }
}

impl Engine {
    /// The commerce with this code, if any.
    pub fn commerce_by_code(&self, code: &str) -> Result<Option<Commerce>> {
        self.store()
            .read(|c| Ok(mandato_store::commerces::by_code(c, code)?))
    }
}

impl Engine {
    /// Runs an operation that no commerce's credentials scope (a signing link's step, the
    /// sandbox clock) all or nothing, off the async workers; wakes delivery for the events it
    /// may have written.
    pub async fn write_unscoped<T: Send + 'static>(
        &self,
        operation: impl FnOnce(Db<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let store = Arc::clone(&self.store);
        let result = tokio::task::spawn_blocking(move || store.write(operation))
            .await
            .map_err(|e| mandato_core::error::Error::Internal(e.into()))?;
        if result.is_ok() {
            self.deliverer.wake();
        }
        result
    }

    /// Runs a read-only operation that no commerce's credentials scope.
    pub fn read_unscoped<T>(&self, operation: impl FnOnce(Db<'_>) -> Result<T>) -> Result<T> {
        self.store.read(operation)
    }
}

impl Engine {
    /// The API key with this hash (if active) and the commerce with this code (if any),
    /// answered from the credentials cache when it holds them.
    pub fn credentials(
        &self,
        key_hash: &str,
        commerce_code: &str,
    ) -> Result<mandato_store::commerces::Credentials> {
        use mandato_store::commerces;
        self.store.credentials.get(key_hash, commerce_code, || {
            self.store.read(|conn| {
                Ok((
                    commerces::active_api_key_by_hash(conn, key_hash)?,
                    commerces::by_code(conn, commerce_code)?,
                ))
            })
        })
    }

    /// Claims a request's correlationId for its commerce (`Replayed` when it was used within
    /// the retention window; on PostgreSQL `Deferred` to the request's first transaction for a
    /// read or a database-only write, `RequestKind`).
    pub fn reserve_correlation(
        &self,
        commerce_id: i64,
        correlation_id: &str,
        kind: mandato_store::audit::RequestKind,
    ) -> Result<mandato_store::audit::Reservation> {
        self.audit.reserve_correlation(
            &self.store,
            commerce_id,
            correlation_id,
            self.clock.now(),
            kind,
        )
    }

    /// After a deferred claim's request's handler: its claim taken, or the refusal of a
    /// used correlationId (`DeferredClaim::settle`).
    pub fn settle_claim(&self, claim: &mandato_store::audit::DeferredClaim) -> Result<()> {
        claim.settle(&self.store)
    }

    /// Whether daily backups run (SQLite only; PostgreSQL's are the server's).
    /// The processor `commerce_id` charges `method` through; `None` when no acquirer serves
    /// the method's rail (production without `mandato acquirer set`).
    pub fn processor_for(
        &self,
        commerce_id: i64,
        method: PaymentMethod,
    ) -> Result<Option<Arc<dyn Processor>>> {
        self.store
            .read(|c| self.rails.processor(c, commerce_id, method))
    }

    /// Who serves `commerce_id`'s rail of `method`.
    pub fn acquirer_for(
        &self,
        commerce_id: i64,
        method: PaymentMethod,
    ) -> Result<crate::rails::Acquirer> {
        self.store
            .read(|c| self.rails.acquirer(c, commerce_id, rail_of(method)))
    }

    /// Who serves `commerce_id`'s cards and bank rails, read together.
    pub fn acquirers_of(
        &self,
        commerce_id: i64,
    ) -> Result<(crate::rails::Acquirer, crate::rails::Acquirer)> {
        self.store.read(|c| self.rails.both(c, commerce_id))
    }

    pub fn backups_enabled(&self) -> bool {
        self.config.backups.enabled && self.store.sqlite().is_some()
    }
}

/// Bank accounts the bank is validating (Fintoc) are asked about every hour, besides every
/// run, so a mandate activates within the hour of the bank's confirmation.
async fn follow_fintoc(
    charger: std::sync::Weak<Charger>,
    calendar: Arc<BusinessCalendar>,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
) {
    let mut ticks = tokio::time::interval(std::time::Duration::from_secs(3600));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        // Every hour, everything still open; on a webhook, what its events name.
        let everything = tokio::select! {
            _ = ticks.tick() => true,
            _ = wake.notified() => false,
        };
        let Some(charger) = charger.upgrade() else {
            return;
        };
        let today = calendar.today(clock.now());
        let asked = tokio::task::spawn_blocking(move || -> Result<()> {
            charger.handle_fintoc_events(today)?;
            if everything {
                charger.settle_fintoc_enrolments()?;
                charger.settle_fintoc_charges(today)?;
            }
            Ok(())
        })
        .await;
        if let Ok(Err(e)) = asked {
            tracing::warn!(error = %e, "fintoc's outcomes not followed");
        }
    }
}
