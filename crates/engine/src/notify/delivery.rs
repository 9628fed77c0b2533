//! The delivery worker: sends outbox events to their `https://` URLs, at least once.
//!
//! It reads due events in creation order, sends each with both signatures, and records every
//! attempt. Results are written in batches (one transaction per batch), so delivery is not
//! bound by one disk sync per event. An event stays PENDING in the database until its result
//! is committed: a crash at any point leads to a resend at the next start, never to a loss.
//!
//! Concurrency is bounded overall and per host, and a host whose slots are busy is skipped
//! (not waited for), so a slow or dead receiver holds up neither other receivers nor the API.
//!
//! Due events are read in pages that continue where the last one ended and are claimed into a
//! small window in memory; a send that ends frees its slot and wakes the worker, which starts
//! the next waiting event at once. Nothing is read twice while it is claimed, and the scan for
//! the next retry time (which looks at every pending event) runs only when there is nothing
//! to do. Database reads run on the blocking pool, never on the runtime's threads.

use mandato_store::db::Db;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rand::Rng;
use reqwest::StatusCode;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};

use super::destination::{self, Destinations};
use super::signing::standard_webhooks_signature;
use mandato_core::clock::{Clock, timestamp};
use mandato_store::Store;
use mandato_store::deliveries::{self, Attempt, AttemptKind, DueEvent, Outcome, SentHeaders};
use mandato_store::settings;

pub use crate::config::{DeliveryConfig, RETRY_SCHEDULE};

/// At most this much of a receiver's answer is read; the rest is never received (the
/// connection is dropped), so an endless body costs nothing.
pub const MAX_RESPONSE_READ: usize = 64 * 1024;
/// The part of it kept as the attempt's response excerpt.
pub const MAX_EXCERPT: usize = 2 * 1024;

/// Sandbox fault injection, per commerce (stored as JSON on the commerce).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Faults {
    /// Deliver every n-th event twice (0 or absent: never).
    #[serde(default)]
    pub duplicate_every: u32,
    /// Send each batch of due events newest first.
    #[serde(default)]
    pub reorder: bool,
    /// Hold each event this long after its creation before its first attempt.
    #[serde(default)]
    pub delay_seconds: u32,
}

/// The worker's handle: wake it after writing events; `shutdown` lets in-flight sends finish.
pub struct Deliverer {
    wake: Arc<Notify>,
    stop: Arc<Notify>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The sender of copies to `mandato listen` receivers (sandbox only), woken with the worker.
    listen_wake: Arc<Notify>,
    listen_stop: Arc<Notify>,
    listen_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Deliverer {
    pub fn start(
        store: Arc<Store>,
        clock: Arc<dyn Clock>,
        config: DeliveryConfig,
        sandbox: bool,
        destinations: Destinations,
    ) -> Deliverer {
        let wake = Arc::new(Notify::new());
        let stop = Arc::new(Notify::new());
        let listen_wake = Arc::new(Notify::new());
        let listen_stop = Arc::new(Notify::new());
        // Leases exist for the sandbox's developer tools only; production never sends copies.
        let listen_task = sandbox.then(|| {
            tokio::spawn(super::listen::run(
                Arc::clone(&store),
                Arc::clone(&clock),
                Arc::new(config.clone()),
                Arc::clone(&listen_wake),
                Arc::clone(&listen_stop),
            ))
        });
        let worker = Worker {
            store,
            clock,
            global: Arc::new(Semaphore::new(config.max_in_flight)),
            hosts: HashMap::new(),
            commerces: HashMap::new(),
            claimed: Arc::new(Mutex::new(HashSet::new())),
            config: Arc::new(config),
            sandbox,
            destinations,
            wake: Arc::clone(&wake),
            slot_freed: Arc::new(Notify::new()),
        };
        let task = tokio::spawn(worker.run(Arc::clone(&stop)));
        Deliverer {
            wake,
            stop,
            task: Mutex::new(Some(task)),
            listen_wake,
            listen_stop,
            listen_task: Mutex::new(listen_task),
        }
    }

    /// Tells the worker new events may be due.
    pub fn wake(&self) {
        self.wake.notify_one();
        self.listen_wake.notify_one();
    }

    pub async fn shutdown(&self) {
        self.stop.notify_one();
        self.listen_stop.notify_one();
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            let _ = task.await;
        }
        let task = self
            .listen_task
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

struct Worker {
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
    config: Arc<DeliveryConfig>,
    sandbox: bool,
    destinations: Destinations,
    global: Arc<Semaphore>,
    hosts: HashMap<String, Arc<Semaphore>>,
    /// Sends in flight per commerce (see `DeliveryConfig::commerce_share`).
    commerces: HashMap<i64, Arc<AtomicUsize>>,
    /// Events read for sending whose result is not committed yet: waiting in the window, in
    /// flight, or on their way to the writer. Never read again until the writer frees them.
    claimed: Arc<Mutex<HashSet<i64>>>,
    wake: Arc<Notify>,
    /// Signalled whenever a send ends and gives its slots back.
    slot_freed: Arc<Notify>,
}

/// One send's result on its way to the batch writer.
struct Sent {
    attempt: Attempt,
}

/// A claimed event waiting in the window for a slot of its host.
struct Waiting {
    event: DueEvent,
    host: Arc<Semaphore>,
    claimed_at: Instant,
}

/// Where the worker is in its walk over the due events, in creation order.
///
/// Each read continues after the last event read (keyset on `seq`) instead of starting over, so
/// events in flight or awaiting their commit are not read again and again; once a read comes
/// back short the walk is at the end, and the next one starts from the beginning when woken
/// (new events, committed results, a redelivery) or when the poll interval passes. A long walk
/// (a backlog) also starts over after a poll interval when woken, so that retries and
/// redeliveries falling due behind it are not kept waiting for its end.
struct Walk {
    after: i64,
    at_end: bool,
    restart: bool,
    started: Instant,
    /// The earliest moment an event held back by the sandbox's `delaySeconds` may go.
    held_until: Option<DateTime<Utc>>,
}

/// A read of due events under way on the blocking pool.
struct Reading {
    task: tokio::task::JoinHandle<Result<Vec<DueEvent>, mandato_core::error::Error>>,
    /// The claimed events when the read began: those it finds are not claimed twice.
    claimed_before: HashSet<i64>,
    limit: usize,
    now: DateTime<Utc>,
}

impl Worker {
    async fn run(mut self, stop: Arc<Notify>) {
        let (results_tx, results_rx) = mpsc::unbounded_channel::<Sent>();
        let writer = tokio::spawn(write_results(
            Arc::clone(&self.store),
            results_rx,
            Arc::clone(&self.claimed),
            Arc::clone(&self.wake),
        ));
        // At most this many claimed events wait for a slot (as many as one read of the old
        // design looked at); reading again once half of them are gone.
        let capacity = (self.config.max_in_flight * 4).max(1);
        let stale_after = self.config.poll_interval * 4;
        let mut window: VecDeque<Waiting> = VecDeque::new();
        // Of the window's events, those its last dispatch passed over for their commerce's share.
        let mut held_by_share = 0;
        let mut walk = Walk {
            after: 0,
            at_end: true,
            restart: true,
            started: Instant::now(),
            held_until: None,
        };
        let mut client = None;
        let mut roots_version = None;
        let mut roots_checked: Option<Instant> = None;
        // The read under way, if any: sends go on starting from the window meanwhile.
        let mut reading: Option<Reading> = None;
        loop {
            let new_walk = reading.is_none()
                && walk.restart
                && (walk.at_end || walk.started.elapsed() >= self.config.poll_interval);
            if new_walk || roots_checked.is_none_or(|t| t.elapsed() >= self.config.poll_interval) {
                roots_checked = Some(Instant::now());
                match self.roots_version().await {
                    Ok(version) if roots_version.as_ref() != Some(&version) => {
                        match self.build_client().await {
                            Ok(c) => {
                                client = Some(c);
                                roots_version = Some(version);
                            }
                            Err(e) => {
                                tracing::error!(error = %e, "could not build the webhook HTTP client")
                            }
                        }
                    }
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "could not read the trusted roots"),
                }
            }
            if let Some(client) = &client {
                self.release_stale(&mut window, stale_after);
                if new_walk {
                    walk = Walk {
                        after: 0,
                        at_end: false,
                        restart: false,
                        started: Instant::now(),
                        held_until: None,
                    };
                }
                // Events held back only by their commerce's share do not count as a full window:
                // the walk goes on to find other commerces' events behind them (up to the
                // window's capacity, which bounds memory).
                let waiting = window.len().saturating_sub(held_by_share);
                if reading.is_none()
                    && !walk.at_end
                    && window.len() < capacity
                    && waiting <= capacity / 2
                {
                    reading = Some(self.start_read(&walk, capacity - window.len()));
                }
                held_by_share = self.dispatch(client, &mut window, &results_tx);
            }
            let pause = if reading.is_some() {
                self.config.poll_interval
            } else {
                let idle = client.is_some()
                    && window.is_empty()
                    && self
                        .claimed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .is_empty();
                match walk.held_until {
                    Some(at) if client.is_some() => wait_until(self.clock.now(), at, &self.config),
                    // Nothing due, nothing in flight: sleep until the next retry falls due.
                    _ if idle => self.until_next_due().await,
                    // Committed results wake the worker; this is only the fallback.
                    _ => self.config.poll_interval,
                }
            };
            tokio::select! {
                _ = stop.notified() => break,
                read = async { (&mut reading.as_mut().expect("a read is under way").task).await },
                    if reading.is_some() =>
                {
                    let under_way = reading.take().expect("a read is under way");
                    self.take_due(under_way, read, &mut walk, &mut window);
                }
                _ = self.wake.notified() => walk.restart = true,
                _ = self.slot_freed.notified(), if !window.is_empty() => {}
                _ = tokio::time::sleep(pause), if reading.is_none() => walk.restart = true,
            }
        }
        // Let in-flight sends finish (they hold global permits), then flush their results.
        // Events still waiting in the window were never sent: they stay PENDING.
        let _ = self
            .global
            .acquire_many(self.config.max_in_flight as u32)
            .await;
        drop(results_tx);
        let _ = writer.await;
    }

    /// Runs a read on the blocking pool: SQLite must not stall the runtime's threads.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(Db<'_>) -> Result<T, mandato_core::error::Error> + Send + 'static,
    ) -> anyhow::Result<T> {
        let store = Arc::clone(&self.store);
        Ok(tokio::task::spawn_blocking(move || store.read(f)).await??)
    }

    /// Changes whenever a root is added or the development CA is made (or replaced).
    async fn roots_version(&self) -> anyhow::Result<(i64, Option<String>)> {
        self.read(|c| {
            Ok((
                deliveries::trusted_roots_version(c)?,
                settings::get(c, settings::DEV_CA_CERT)?,
            ))
        })
        .await
    }

    /// A client trusting the system roots and the configured roots, plus the installation's
    /// development CA in the sandbox only: a production installation trusts no CA it made
    /// itself (a receiver of its own is trusted by adding its root). Where destinations are
    /// limited to public addresses, the client resolves names through the filtering resolver
    /// and uses no proxy (a proxy would resolve and connect on our behalf, out of reach of the
    /// check).
    async fn build_client(&self) -> anyhow::Result<reqwest::Client> {
        let trust_dev_ca = self.sandbox;
        let (roots, dev_ca) = self
            .read(move |c| {
                let dev_ca = if trust_dev_ca {
                    settings::get(c, settings::DEV_CA_CERT)?
                } else {
                    None
                };
                Ok((deliveries::trusted_roots(c)?, dev_ca))
            })
            .await?;
        let mut certs = Vec::new();
        for pem in roots.iter().chain(dev_ca.iter()) {
            certs.extend(reqwest::Certificate::from_pem_bundle(pem.as_bytes())?);
        }
        let mut builder = reqwest::Client::builder()
            .tls_certs_merge(certs)
            .timeout(self.config.timeout)
            .connect_timeout(self.config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("mandato-webhooks/", env!("CARGO_PKG_VERSION")))
            .pool_max_idle_per_host(self.config.max_per_host);
        if self.destinations == Destinations::PublicOnly {
            builder = builder
                .dns_resolver(destination::PublicOnlyResolver)
                .no_proxy();
        }
        Ok(builder.build()?)
    }

    /// How long until the earliest pending event falls due (at most the poll interval). This
    /// looks at every pending event, so it is asked only when the worker has nothing to do.
    async fn until_next_due(&self) -> Duration {
        let next = self
            .read(|c| Ok(deliveries::next_due_at(c)?))
            .await
            .ok()
            .flatten();
        let Some(at) = next.and_then(|t| DateTime::parse_from_rfc3339(&t).ok()) else {
            return self.config.poll_interval;
        };
        wait_until(self.clock.now(), at.with_timezone(&Utc), &self.config)
    }

    fn host_slots(&mut self, url: &str) -> Arc<Semaphore> {
        let host = reqwest::Url::parse(url)
            .ok()
            .and_then(|u| {
                u.host_str()
                    .map(|h| format!("{h}:{}", u.port_or_known_default().unwrap_or(0)))
            })
            .unwrap_or_default();
        let per_host = self.config.max_per_host;
        Arc::clone(
            self.hosts
                .entry(host)
                .or_insert_with(|| Arc::new(Semaphore::new(per_host))),
        )
    }

    /// Starts reading the walk's next due events on the blocking pool.
    fn start_read(&self, walk: &Walk, limit: usize) -> Reading {
        let now = self.clock.now();
        // Taken before the read: an event freed by the writer after this point was committed
        // before the read began, so the read sees its new state. (Checking the live set after
        // the read could miss an event committed meanwhile and send it twice.)
        let claimed_before = self
            .claimed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let (store, now_text, after) = (Arc::clone(&self.store), timestamp(now), walk.after);
        let lease = self.config.claim_lease;
        let task = tokio::task::spawn_blocking(move || {
            store.read(|c| Ok(deliveries::due(c, &now_text, after, limit, lease)?))
        });
        Reading {
            task,
            claimed_before,
            limit,
            now,
        }
    }

    /// Claims what a read found into the window and moves the walk on.
    fn take_due(
        &mut self,
        reading: Reading,
        read: Result<Result<Vec<DueEvent>, mandato_core::error::Error>, tokio::task::JoinError>,
        walk: &mut Walk,
        window: &mut VecDeque<Waiting>,
    ) {
        let due = match read {
            Ok(Ok(due)) => due,
            Ok(Err(e)) => {
                tracing::error!(error = %e, "could not read due events");
                walk.at_end = true;
                return;
            }
            Err(e) => {
                tracing::error!(error = %e, "could not read due events");
                walk.at_end = true;
                return;
            }
        };
        let Reading {
            claimed_before,
            limit,
            now,
            ..
        } = reading;
        if due.len() < limit {
            walk.at_end = true;
        }
        let first_new = window.len();
        let mut reorder = false;
        let mut claimed = Vec::new();
        let mut held = Vec::new();
        for event in due {
            walk.after = walk.after.max(event.seq);
            if claimed_before.contains(&event.seq) {
                // Still being sent when the read began: the commit of its result wakes a later
                // walk, which takes it if it is due again (a redelivery asked for meanwhile).
                // PostgreSQL's read has claimed it, so the claim is given back below; kept, it
                // would hold the event until the lease ends.
                held.push(event.seq);
                continue;
            }
            let faults = self.faults_of(&event);
            if faults.delay_seconds > 0 && event.attempts == 0 && !event.manual {
                let held_until = DateTime::parse_from_rfc3339(&event.created_at)
                    .map(|c| {
                        c.with_timezone(&Utc)
                            + chrono::Duration::seconds(faults.delay_seconds.into())
                    })
                    .unwrap_or(now);
                if held_until > now {
                    // Left unclaimed: a later walk reads it again.
                    walk.held_until =
                        Some(walk.held_until.map_or(held_until, |h| h.min(held_until)));
                    held.push(event.seq);
                    continue;
                }
            }
            reorder |= faults.reorder;
            claimed.push(event.seq);
            let host = self.host_slots(&event.url);
            window.push_back(Waiting {
                event,
                host,
                claimed_at: Instant::now(),
            });
        }
        if reorder {
            // Sandbox: each batch of due events newest first.
            window.make_contiguous()[first_new..].reverse();
        }
        // PostgreSQL's read claimed them for its lease: given back, a later walk finds them.
        self.give_back(held);
        self.claimed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(claimed);
    }

    /// Starts a send for every waiting event whose host has a free slot, oldest first; a host
    /// whose slots are busy is passed over, not waited for, and so is a commerce past its share
    /// while only its share of slots is free. Returns how many of the events left waiting are
    /// held back by their commerce's share (as far as it looked).
    fn dispatch(
        &mut self,
        client: &reqwest::Client,
        window: &mut VecDeque<Waiting>,
        results: &mpsc::UnboundedSender<Sent>,
    ) -> usize {
        let share = self.config.commerce_share();
        let mut held_by_share = 0;
        let mut i = 0;
        while i < window.len() && self.global.available_permits() > 0 {
            let in_flight = Arc::clone(
                self.commerces
                    .entry(window[i].event.commerce_id)
                    .or_default(),
            );
            if in_flight.load(Ordering::Acquire) >= share
                && self.global.available_permits() <= share
            {
                held_by_share += 1;
                i += 1;
                continue;
            }
            if window[i].host.available_permits() == 0 {
                i += 1;
                continue;
            }
            let Ok(host_permit) = Arc::clone(&window[i].host).try_acquire_owned() else {
                i += 1;
                continue;
            };
            let Ok(global_permit) = Arc::clone(&self.global).try_acquire_owned() else {
                break;
            };
            let Some(Waiting { event, .. }) = window.remove(i) else {
                break;
            };
            let faults = self.faults_of(&event);
            let duplicate =
                faults.duplicate_every > 0 && event.seq % i64::from(faults.duplicate_every) == 0;
            let commerce_slot = CommerceSlot::take(in_flight);
            tokio::spawn(send(
                client.clone(),
                Arc::clone(&self.clock),
                Arc::clone(&self.config),
                self.destinations,
                event,
                duplicate,
                results.clone(),
                (global_permit, host_permit, commerce_slot),
                Arc::clone(&self.slot_freed),
            ));
        }
        held_by_share
    }

    /// Gives back events that waited too long for a slot (a slow or dead receiver): they are
    /// read again, with fresh secrets, on a later walk, and make room for other receivers.
    fn release_stale(&self, window: &mut VecDeque<Waiting>, stale_after: Duration) {
        // Claimed in order, so the front is the oldest.
        if window
            .front()
            .is_none_or(|w| w.claimed_at.elapsed() < stale_after)
        {
            return;
        }
        let mut released = Vec::new();
        window.retain(|w| {
            let keep = w.claimed_at.elapsed() < stale_after;
            if !keep {
                released.push(w.event.seq);
            }
            keep
        });
        {
            let mut claimed = self.claimed.lock().unwrap_or_else(|p| p.into_inner());
            for seq in &released {
                claimed.remove(seq);
            }
        }
        // Never sent by this engine: on PostgreSQL any engine may take them at once, rather
        // than when this one's lease ends.
        self.give_back(released);
    }

    /// Ends this engine's database claim (PostgreSQL) on events it read but did not send.
    fn give_back(&self, seqs: Vec<i64>) {
        if seqs.is_empty() || self.store.backend() != mandato_store::db::Backend::Postgres {
            return;
        }
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || {
            if let Err(e) = store.write(|db| Ok(deliveries::release_claims(db, &seqs)?)) {
                tracing::warn!(error = %e, "could not give back claimed events");
            }
        });
    }

    fn faults_of(&self, event: &DueEvent) -> Faults {
        if !self.sandbox || event.faults.is_none() {
            return Faults::default();
        }
        event
            .faults
            .as_deref()
            .and_then(|f| serde_json::from_str(f).ok())
            .unwrap_or_default()
    }
}

/// One of a commerce's sends in flight, counted until dropped.
struct CommerceSlot(Arc<AtomicUsize>);

impl CommerceSlot {
    fn take(in_flight: Arc<AtomicUsize>) -> CommerceSlot {
        in_flight.fetch_add(1, Ordering::AcqRel);
        CommerceSlot(in_flight)
    }
}

impl Drop for CommerceSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How long to wait for `at`: at least 5 ms, at most the poll interval.
fn wait_until(now: DateTime<Utc>, at: DateTime<Utc>, config: &DeliveryConfig) -> Duration {
    let wait = (at - now).to_std().unwrap_or(Duration::ZERO);
    wait.clamp(Duration::from_millis(5), config.poll_interval)
}

/// Sends one event (twice when a duplicate is injected) and reports the result.
#[allow(clippy::too_many_arguments)]
async fn send(
    client: reqwest::Client,
    clock: Arc<dyn Clock>,
    config: Arc<DeliveryConfig>,
    destinations: Destinations,
    event: DueEvent,
    duplicate: bool,
    results: mpsc::UnboundedSender<Sent>,
    permits: (OwnedSemaphorePermit, OwnedSemaphorePermit, CommerceSlot),
    slot_freed: Arc<Notify>,
) {
    let kind = if event.manual {
        AttemptKind::Manual
    } else if event.attempts == 0 {
        AttemptKind::First
    } else {
        AttemptKind::Retry
    };
    let attempt = attempt_once(&client, clock.as_ref(), &config, destinations, &event, kind).await;
    let delivered = attempt.outcome == Outcome::Delivered;
    let _ = results.send(Sent { attempt });
    if duplicate && delivered {
        let again = attempt_once(
            &client,
            clock.as_ref(),
            &config,
            destinations,
            &event,
            AttemptKind::Injected,
        )
        .await;
        let _ = results.send(Sent { attempt: again });
    }
    drop(permits);
    slot_freed.notify_one();
}

pub(super) async fn attempt_once(
    client: &reqwest::Client,
    clock: &dyn Clock,
    config: &DeliveryConfig,
    destinations: Destinations,
    event: &DueEvent,
    kind: AttemptKind,
) -> Attempt {
    let started = clock.now();
    let timer = Instant::now();
    let mut attempt = Attempt {
        event_seq: event.seq,
        kind,
        started_at: timestamp(started),
        duration_ms: 0,
        status_code: None,
        response_excerpt: None,
        error: None,
        outcome: Outcome::Failed,
        counts: matches!(kind, AttemptKind::First | AttemptKind::Retry),
        sent: None,
    };
    // Events only ever get https:// URLs; this guard keeps it true whatever the data says.
    if !event.url.starts_with("https://") {
        attempt.error = Some("refused: webhook URLs must use https://".into());
        return attempt;
    }
    // An address written in the URL is connected to without resolution, so the resolver never
    // sees it: it is checked here, at each attempt (the row may predate the rule, or the
    // installation may have moved from the sandbox to production). Names are the resolver's.
    if !reqwest::Url::parse(&event.url).is_ok_and(|u| destinations.allows_written_address(&u)) {
        attempt.error = Some(destination::DESTINATION_NOT_ALLOWED.into());
        attempt.outcome = next_step(config, event, None, None, clock.now());
        return attempt;
    }
    let deadline = tokio::time::Instant::now() + config.timeout;
    let sent = SentHeaders {
        timestamp: started.timestamp(),
        signature: signature_header(event, started),
    };
    let request = client
        .post(&event.url)
        .header("content-type", "application/json")
        .header("webhook-id", &event.id)
        .header("webhook-timestamp", sent.timestamp.to_string())
        .header("webhook-signature", &sent.signature)
        .body(event.body.clone())
        .send();
    attempt.sent = Some(sent);
    let response = match tokio::time::timeout_at(deadline, request).await {
        Ok(response) => response.map_err(|e| describe(&e)),
        Err(_) => Err("timeout: no answer within the delivery timeout".to_string()),
    };
    let retry_after = match response {
        Ok(response) => {
            let status = response.status();
            attempt.status_code = Some(status.as_u16());
            let retry_after = retry_after(&response, clock.now());
            attempt.response_excerpt = excerpt(response, deadline).await;
            if status.is_success() {
                attempt.outcome = Outcome::Delivered;
            }
            retry_after
        }
        Err(e) => {
            attempt.error = Some(e);
            None
        }
    };
    attempt.duration_ms = timer.elapsed().as_millis() as i64;
    if attempt.outcome != Outcome::Delivered {
        attempt.outcome = next_step(config, event, attempt.status_code, retry_after, clock.now());
    }
    attempt
}

/// `v1,<sig>` with the current secret, and with the previous one while its rotation lasts.
fn signature_header(event: &DueEvent, at: DateTime<Utc>) -> String {
    let ts = at.timestamp();
    let mut header = standard_webhooks_signature(&event.secret, &event.id, ts, &event.body);
    if let Some((previous, until)) = &event.previous_secret
        && DateTime::parse_from_rfc3339(until).is_ok_and(|u| u.with_timezone(&Utc) > at)
    {
        header.push(' ');
        header.push_str(&standard_webhooks_signature(
            previous,
            &event.id,
            ts,
            &event.body,
        ));
    }
    header
}

/// After a failed attempt: retry per the schedule (or the receiver's Retry-After), or give up.
/// 410 Gone means the receiver asks for no more deliveries.
fn next_step(
    config: &DeliveryConfig,
    event: &DueEvent,
    status: Option<u16>,
    retry_after: Option<Duration>,
    now: DateTime<Utc>,
) -> Outcome {
    if status == Some(StatusCode::GONE.as_u16()) {
        return Outcome::Failed;
    }
    // Manual attempts do not use up the automatic budget.
    let used = event.attempts + if event.manual { 0 } else { 1 };
    let Some(step) = config.retry_schedule.get((used.max(1) - 1) as usize) else {
        return Outcome::Failed;
    };
    if used >= config.max_attempts() {
        return Outcome::Failed;
    }
    let delay = match retry_after {
        Some(wait) => wait.min(config.max_retry_after),
        None => jittered(*step, config.jitter),
    };
    let at = now + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::zero());
    Outcome::RetryAt(timestamp(at))
}

fn jittered(step: Duration, jitter: f64) -> Duration {
    if jitter <= 0.0 {
        return step;
    }
    let factor = rand::rng().random_range((1.0 - jitter)..(1.0 + jitter));
    step.mul_f64(factor)
}

/// Retry-After on 429 and 503, in seconds or as an HTTP date.
fn retry_after(response: &reqwest::Response, now: DateTime<Utc>) -> Option<Duration> {
    if !matches!(
        response.status(),
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
    ) {
        return None;
    }
    let value = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = DateTime::parse_from_rfc2822(value)
        .ok()?
        .with_timezone(&Utc);
    (at - now).to_std().ok()
}

/// The start of the answer (at most `MAX_EXCERPT` bytes), for the delivery log.
///
/// Reads at most `MAX_RESPONSE_READ` bytes and stops at the attempt's deadline; the response
/// is then dropped, which closes its connection instead of draining the rest. Whatever arrived
/// before the body ended, broke off or ran out of time is kept: a body delimited by the
/// connection's close (HTTP/1.0), or cut short, still has its excerpt.
async fn excerpt(
    mut response: reqwest::Response,
    deadline: tokio::time::Instant,
) -> Option<String> {
    let mut read: Vec<u8> = Vec::new();
    while read.len() < MAX_RESPONSE_READ {
        match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                let room = MAX_RESPONSE_READ - read.len();
                read.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            // The end, a broken connection or the deadline: keep what came.
            Ok(Ok(None)) | Ok(Err(_)) | Err(_) => break,
        }
    }
    drop(response);
    excerpt_of(&read)
}

/// At most `MAX_EXCERPT` bytes of text, cut on a character boundary.
fn excerpt_of(bytes: &[u8]) -> Option<String> {
    let head = &bytes[..bytes.len().min(MAX_EXCERPT)];
    // A character cut by the limit is dropped rather than turned into a replacement mark.
    let head = match std::str::from_utf8(head) {
        Err(e) if e.error_len().is_none() => &head[..e.valid_up_to()],
        _ => head,
    };
    let mut text = String::from_utf8_lossy(head).into_owned();
    // Replacement marks are longer than the bytes they replace.
    if text.len() > MAX_EXCERPT {
        let mut end = MAX_EXCERPT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    (!text.is_empty()).then_some(text)
}

fn describe(e: &reqwest::Error) -> String {
    // A refused destination says so and nothing else: no address, no resolver detail.
    if destination::is_not_allowed(e) {
        return destination::DESTINATION_NOT_ALLOWED.to_string();
    }
    let kind = if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        "connect"
    } else {
        "request"
    };
    let mut message = format!("{kind}: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        message.push_str(&format!(": {s}"));
        source = s.source();
    }
    message.chars().take(512).collect()
}

/// Writes results in batches, then frees their events for a later walk.
async fn write_results(
    store: Arc<Store>,
    mut results: mpsc::UnboundedReceiver<Sent>,
    claimed: Arc<Mutex<HashSet<i64>>>,
    wake: Arc<Notify>,
) {
    let mut batch = Vec::new();
    while results.recv_many(&mut batch, 1000).await > 0 {
        let attempts: Vec<Attempt> = batch.drain(..).map(|s| s.attempt).collect();
        let seqs: Vec<i64> = attempts.iter().map(|a| a.event_seq).collect();
        let store = Arc::clone(&store);
        let written = tokio::task::spawn_blocking(move || {
            let result = store.write(|tx| Ok(deliveries::record_attempts(tx, &attempts)?));
            (result, attempts)
        })
        .await;
        // Freed only now: an event is read again only once its result is committed (or, when
        // the write failed, still PENDING and due to be sent again: at least once).
        {
            let mut set = claimed.lock().unwrap_or_else(|p| p.into_inner());
            for seq in &seqs {
                set.remove(seq);
            }
        }
        let attempts = match written {
            Ok((Ok(()), attempts)) => attempts,
            Ok((Err(e), _)) => {
                tracing::error!(error = %e, "could not record delivery attempts");
                wake.notify_one();
                continue;
            }
            Err(e) => {
                tracing::error!(error = %e, "the delivery writer failed");
                wake.notify_one();
                continue;
            }
        };
        for a in &attempts {
            match &a.outcome {
                Outcome::Delivered => tracing::debug!(event = a.event_seq, "webhook delivered"),
                Outcome::RetryAt(at) => {
                    tracing::info!(event = a.event_seq, status = ?a.status_code, error = ?a.error, retry_at = %at, "webhook failed; will retry")
                }
                Outcome::Failed => {
                    tracing::warn!(event = a.event_seq, status = ?a.status_code, error = ?a.error, "webhook delivery FAILED")
                }
            }
        }
        wake.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(attempts: i64, manual: bool) -> DueEvent {
        DueEvent {
            seq: 1,
            id: "evt_1".into(),
            commerce_id: 1,
            url: "https://example.test/h".into(),
            body: "{}".into(),
            attempts,
            manual,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            secret: mandato_core::secret::Secret::new("whsec_AAAA".into()),
            previous_secret: None,
            faults: None,
        }
    }

    #[test]
    fn the_schedule_is_the_contracts_then_failed() {
        let config = DeliveryConfig {
            jitter: 0.0,
            ..DeliveryConfig::default()
        };
        let now: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
        let expected = [
            "00:00:05", "00:05:00", "00:30:00", "02:00:00", "05:00:00", "10:00:00", "10:00:00",
        ];
        for (attempts_before, wait) in expected.iter().enumerate() {
            let outcome = next_step(
                &config,
                &event(attempts_before as i64, false),
                Some(500),
                None,
                now,
            );
            let Outcome::RetryAt(at) = outcome else {
                panic!("attempt {attempts_before}: {outcome:?}")
            };
            let at: DateTime<Utc> = at.parse().unwrap();
            let delay = at - now;
            let (h, m, s): (i64, i64, i64) = (
                wait[0..2].parse().unwrap(),
                wait[3..5].parse().unwrap(),
                wait[6..8].parse().unwrap(),
            );
            assert_eq!(
                delay.num_seconds(),
                h * 3600 + m * 60 + s,
                "after attempt {}",
                attempts_before + 1
            );
        }
        assert_eq!(
            next_step(&config, &event(7, false), Some(500), None, now),
            Outcome::Failed
        );
        assert_eq!(
            next_step(&config, &event(0, false), Some(410), None, now),
            Outcome::Failed
        );
        // A manual attempt on an exhausted event does not start new automatic retries.
        assert_eq!(
            next_step(&config, &event(8, true), Some(500), None, now),
            Outcome::Failed
        );
        // Retry-After wins over the schedule.
        let Outcome::RetryAt(at) = next_step(
            &config,
            &event(0, false),
            Some(429),
            Some(Duration::from_secs(120)),
            now,
        ) else {
            panic!()
        };
        assert_eq!(at, "2026-01-01T00:02:00.000Z");
    }

    #[test]
    fn the_excerpt_is_at_most_2_kib_cut_on_a_character() {
        assert_eq!(excerpt_of(b""), None);
        assert_eq!(excerpt_of(b"queue full").as_deref(), Some("queue full"));
        let long = vec![b'x'; 10_000];
        assert_eq!(excerpt_of(&long).unwrap().len(), MAX_EXCERPT);
        // A two-byte character across the limit is dropped whole.
        let mut text = vec![b'a'; MAX_EXCERPT - 1];
        text.extend_from_slice("ñ and more".as_bytes());
        let cut = excerpt_of(&text).unwrap();
        assert_eq!(cut.len(), MAX_EXCERPT - 1);
        assert!(cut.bytes().all(|b| b == b'a'));
        // Invalid bytes become replacement marks, which are longer: still within the limit.
        let garbage = vec![0xff; 10_000];
        let cut = excerpt_of(&garbage).unwrap();
        assert!(cut.len() <= MAX_EXCERPT && cut.starts_with('\u{fffd}'));
    }

    #[test]
    fn jitter_stays_within_its_fraction() {
        for _ in 0..100 {
            let d = jittered(Duration::from_secs(100), 0.1);
            assert!(d >= Duration::from_secs(90) && d <= Duration::from_secs(110));
        }
    }
}
