//! Copies of events for `mandato listen` receivers (sandbox only).
//!
//! Each copy goes once to its lease's URL, signed like the event's own delivery (same body and
//! `webhook-id`, a fresh timestamp and header signature), and is logged as an attempt of kind
//! `LISTEN`. It never touches the event's own state, attempt count or retry schedule, and a
//! copy that fails is not retried: the listener is a developer's terminal, not a receiver the
//! contract promises delivery to. Leases past their expiry are swept with their copies.

use mandato_store::db::Db;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::delivery::{DeliveryConfig, attempt_once};
use super::destination::Destinations;
use mandato_core::clock::{Clock, timestamp};
use mandato_store::Store;
use mandato_store::deliveries::{self, AttemptKind, DueEvent, Outcome};
use mandato_store::listen_leases::{self, ListenCopy};
use mandato_store::settings;

/// Copies sent at once; a listener is one local process.
const BATCH: usize = 32;

pub(super) async fn run(
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
    config: Arc<DeliveryConfig>,
    wake: Arc<Notify>,
    stop: Arc<Notify>,
) {
    // The client is rebuilt only when the development CA changes.
    let mut client: Option<(Option<String>, reqwest::Client)> = None;
    loop {
        if let Err(e) = pass(&store, &clock, &config, &mut client).await {
            tracing::warn!(error = %e, "could not send events to listeners");
        }
        tokio::select! {
            _ = stop.notified() => break,
            _ = wake.notified() => {}
            _ = tokio::time::sleep(config.poll_interval) => {}
        }
    }
}

async fn read<T: Send + 'static>(
    store: &Arc<Store>,
    f: impl FnOnce(Db<'_>) -> Result<T, mandato_core::error::Error> + Send + 'static,
) -> anyhow::Result<T> {
    let store = Arc::clone(store);
    Ok(tokio::task::spawn_blocking(move || store.read(f)).await??)
}

/// Sends every waiting copy of live leases, then sweeps expired leases.
async fn pass(
    store: &Arc<Store>,
    clock: &Arc<dyn Clock>,
    config: &Arc<DeliveryConfig>,
    client: &mut Option<(Option<String>, reqwest::Client)>,
) -> anyhow::Result<()> {
    loop {
        let now = timestamp(clock.now());
        let swept_at = now.clone();
        let (copies, dev_ca, expired) = read(store, move |c| {
            let expired = listen_leases::any_expired(c, &now)?;
            if !listen_leases::any_pending(c)? {
                return Ok((Vec::new(), None, expired));
            }
            Ok((
                listen_leases::pending(c, &now, BATCH)?,
                settings::get(c, settings::DEV_CA_CERT)?,
                expired,
            ))
        })
        .await?;
        if copies.is_empty() {
            if !expired {
                return Ok(());
            }
            let store = Arc::clone(store);
            tokio::task::spawn_blocking(move || {
                store.write(|tx| Ok(listen_leases::sweep_expired(tx, &swept_at)?))
            })
            .await??;
            return Ok(());
        }
        if client.as_ref().is_none_or(|(ca, _)| *ca != dev_ca) {
            *client = Some((dev_ca.clone(), build_client(dev_ca.as_deref(), config)?));
        }
        let http = client.as_ref().expect("built above").1.clone();
        let mut sends = tokio::task::JoinSet::new();
        for copy in copies {
            let (http, config, clock) = (http.clone(), Arc::clone(config), Arc::clone(clock));
            sends.spawn(async move { send_copy(http, config, clock, copy).await });
        }
        let mut done = Vec::new();
        while let Some(result) = sends.join_next().await {
            if let Ok(sent) = result {
                done.push(sent);
            }
        }
        let store_w = Arc::clone(store);
        tokio::task::spawn_blocking(move || {
            store_w.write(|tx| {
                for (copy_seq, attempt) in &done {
                    deliveries::record_attempts(tx, std::slice::from_ref(attempt))?;
                    listen_leases::sent(tx, *copy_seq)?;
                }
                Ok(())
            })
        })
        .await??;
    }
}

async fn send_copy(
    client: reqwest::Client,
    config: Arc<DeliveryConfig>,
    clock: Arc<dyn Clock>,
    copy: ListenCopy,
) -> (i64, deliveries::Attempt) {
    let event = DueEvent {
        seq: copy.event_seq,
        id: copy.event_id,
        commerce_id: copy.commerce_id,
        url: copy.url,
        body: copy.body,
        attempts: 0,
        manual: false,
        created_at: copy.created_at,
        secret: copy.secret,
        previous_secret: copy.previous_secret,
        faults: None,
    };
    // Listeners live on this machine: the sandbox allows loopback destinations.
    let mut attempt = attempt_once(
        &client,
        clock.as_ref(),
        &config,
        Destinations::Any,
        &event,
        AttemptKind::Listen,
    )
    .await;
    // No retry schedule for copies: delivered or failed, once.
    if attempt.outcome != Outcome::Delivered {
        attempt.outcome = Outcome::Failed;
    }
    (copy.seq, attempt)
}

fn build_client(dev_ca: Option<&str>, config: &DeliveryConfig) -> anyhow::Result<reqwest::Client> {
    let mut certs = Vec::new();
    if let Some(pem) = dev_ca {
        certs.extend(reqwest::Certificate::from_pem_bundle(pem.as_bytes())?);
    }
    Ok(reqwest::Client::builder()
        .tls_certs_merge(certs)
        .timeout(config.timeout)
        .connect_timeout(config.timeout.min(Duration::from_secs(5)))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .user_agent(concat!("mandato-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()?)
}
