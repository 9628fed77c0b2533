//! Which acquirer moves each commerce's money, per rail (CONTRACT 13).
//!
//! A commerce's rail is what `mandato acquirer set` stored (`operations::acquirers`). A sandbox
//! rail without a setting is the simulation; a production one without a setting is *not
//! configured*: nothing of that rail is offered or attempted. Production never builds the
//! simulation, whatever is stored.
//!
//! Clients are built once per setting and kept until the setting or the installation's
//! trusted roots change.

mod calls;
pub mod fintoc;
pub mod fintoc_webhooks;
pub mod transbank;
pub mod webpay;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mandato_core::domain::acquirer::{
    AcquirerKind, Rail, ResponseCodeLevel, TransbankCode, TransbankCodes,
};
use mandato_core::domain::state::PaymentMethod;
use mandato_core::error::{Error, Result};
use mandato_core::processor::Processor;
use mandato_store::acquirers::{self, AcquirerRow};
use mandato_store::db::Db;
use mandato_store::{Store, deliveries, settings};

use crate::charging::simulated::SimulatedProcessor;
use crate::config::AcquirerLimits;
use transbank::Oneclick;

/// Who serves a commerce's rail here.
#[derive(Clone)]
pub enum Acquirer {
    /// The sandbox's simulation: instruments typed on our page.
    Simulated(Arc<SimulatedProcessor>),
    /// Transbank Oneclick Mall: cards inscribed on Webpay's page.
    Transbank(Arc<Oneclick>),
    /// Fintoc Direct Debit: bank accounts authorized through Fintoc's widget.
    Fintoc(Arc<fintoc::Fintoc>),
    /// A production rail with no acquirer, or one this installation cannot reach: nothing
    /// of the rail is offered or charged (`ACQUIRER_NOT_CONFIGURED`).
    NotConfigured,
}

impl Acquirer {
    /// The processor charges of the rail go through; `None` when not configured.
    pub fn processor(&self) -> Option<Arc<dyn Processor>> {
        match self {
            Acquirer::Simulated(p) => Some(Arc::clone(p) as Arc<dyn Processor>),
            Acquirer::Transbank(p) => Some(Arc::clone(p) as Arc<dyn Processor>),
            Acquirer::Fintoc(p) => Some(Arc::clone(p) as Arc<dyn Processor>),
            Acquirer::NotConfigured => None,
        }
    }
}

/// Why a due installment was left alone.
pub const ACQUIRER_NOT_CONFIGURED: &str = "ACQUIRER_NOT_CONFIGURED";

struct Built {
    /// The setting's `updated_at` and the roots' version it was built with.
    version: (String, i64),
    acquirer: Acquirer,
}

pub struct Rails {
    store: Arc<Store>,
    /// When each call to an acquirer is logged as made.
    clock: Arc<dyn mandato_core::clock::Clock>,
    sandbox: bool,
    /// Authorizations a run keeps in flight with a real acquirer, and each call's limit.
    limits: AcquirerLimits,
    /// Present in the sandbox only.
    simulated: Option<Arc<SimulatedProcessor>>,
    runtime: transbank::Runtime,
    built: Mutex<HashMap<(i64, Rail), Built>>,
}

impl Rails {
    /// The acquirers' calls use the current tokio runtime, or one of their own when there is
    /// none (the command line).
    pub fn new(
        store: Arc<Store>,
        clock: Arc<dyn mandato_core::clock::Clock>,
        sandbox: bool,
        limits: AcquirerLimits,
    ) -> anyhow::Result<Rails> {
        let simulated = if sandbox {
            Some(Arc::new(SimulatedProcessor::open(&store)?))
        } else {
            None
        };
        Ok(Rails {
            store,
            clock,
            sandbox,
            limits,
            simulated,
            runtime: transbank::Runtime::current_or_own()?,
            built: Mutex::new(HashMap::new()),
        })
    }

    /// The acquirer of `commerce_id`'s `rail`, read in `db`.
    pub fn acquirer(&self, db: Db<'_>, commerce_id: i64, rail: Rail) -> Result<Acquirer> {
        let row = acquirers::of_commerce(db, commerce_id)?
            .into_iter()
            .find(|r| r.rail == rail.as_str());
        self.resolve(db, commerce_id, rail, row)
    }

    /// Who serves each of the commerce's rails, cards then bank, from one read of its
    /// settings.
    pub fn both(&self, db: Db<'_>, commerce_id: i64) -> Result<(Acquirer, Acquirer)> {
        let mut rows = acquirers::of_commerce(db, commerce_id)?;
        let mut take = |rail: Rail| {
            let at = rows.iter().position(|r| r.rail == rail.as_str())?;
            Some(rows.swap_remove(at))
        };
        let (cards, bank) = (take(Rail::Cards), take(Rail::Bank));
        let cards = self.resolve(db, commerce_id, Rail::Cards, cards)?;
        let bank = self.resolve(db, commerce_id, Rail::Bank, bank)?;
        Ok((cards, bank))
    }

    /// The acquirer of a rail's stored setting (`None`: no setting), built once per setting.
    fn resolve(
        &self,
        db: Db<'_>,
        commerce_id: i64,
        rail: Rail,
        row: Option<AcquirerRow>,
    ) -> Result<Acquirer> {
        let Some(row) = row else {
            return Ok(match &self.simulated {
                Some(simulated) => Acquirer::Simulated(Arc::clone(simulated)),
                None => Acquirer::NotConfigured,
            });
        };
        let roots = deliveries::trusted_roots_version(db)?;
        let version = (row.updated_at.clone(), roots);
        let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(known) = built.get(&(commerce_id, rail))
            && known.version == version
        {
            return Ok(known.acquirer.clone());
        }
        let acquirer = self.build(db, commerce_id, &row)?;
        built.insert(
            (commerce_id, rail),
            Built {
                version,
                acquirer: acquirer.clone(),
            },
        );
        Ok(acquirer)
    }

    /// The processor of the rail `method` belongs to; `None` when not configured.
    pub fn processor(
        &self,
        db: Db<'_>,
        commerce_id: i64,
        method: PaymentMethod,
    ) -> Result<Option<Arc<dyn Processor>>> {
        Ok(self.acquirer(db, commerce_id, rail_of(method))?.processor())
    }

    fn build(&self, db: Db<'_>, commerce_id: i64, row: &AcquirerRow) -> Result<Acquirer> {
        match AcquirerKind::parse(&row.kind) {
            Some(AcquirerKind::Simulated) => Ok(match &self.simulated {
                Some(simulated) => Acquirer::Simulated(Arc::clone(simulated)),
                // Stored by a sandbox that became production: never honoured.
                None => Acquirer::NotConfigured,
            }),
            Some(AcquirerKind::Transbank) => {
                let (Some(base_url), Some(secret), Some(codes)) = (
                    row.base_url.as_deref(),
                    row.secret.clone(),
                    transbank_codes(&row.terms),
                ) else {
                    tracing::error!(rail = %row.rail, "a stored Transbank setting is incomplete");
                    return Ok(Acquirer::NotConfigured);
                };
                let client = self.client(db)?;
                Ok(Acquirer::Transbank(Arc::new(Oneclick::new(
                    transbank::CallLog::new(
                        commerce_id,
                        Arc::clone(&self.store),
                        Arc::clone(&self.clock),
                    ),
                    base_url,
                    codes,
                    secret,
                    client,
                    self.runtime.clone(),
                    self.limits,
                ))))
            }
            Some(AcquirerKind::Fintoc) => {
                let public_key = serde_json::from_str::<serde_json::Value>(&row.terms)
                    .ok()
                    .and_then(|v| v["publicKey"].as_str().map(str::to_string));
                let (Some(base_url), Some(secret), Some(public_key)) =
                    (row.base_url.as_deref(), row.secret.clone(), public_key)
                else {
                    tracing::error!(rail = %row.rail, "a stored Fintoc setting is incomplete");
                    return Ok(Acquirer::NotConfigured);
                };
                let client = self.client(db)?;
                Ok(Acquirer::Fintoc(Arc::new(fintoc::Fintoc::new(
                    transbank::CallLog::new(
                        commerce_id,
                        Arc::clone(&self.store),
                        Arc::clone(&self.clock),
                    ),
                    base_url,
                    &public_key,
                    secret,
                    client,
                    self.runtime.clone(),
                    self.limits,
                    Arc::clone(&self.store),
                ))))
            }
            None => Ok(Acquirer::NotConfigured),
        }
    }

    /// A client trusting the system's roots and the installation's trusted roots, plus its
    /// development CA in the sandbox (as webhook delivery does): an on-premises proxy or a
    /// test stand-in is trusted by adding its root.
    fn client(&self, db: Db<'_>) -> Result<reqwest::Client> {
        let mut pems = deliveries::trusted_roots(db)?;
        if self.sandbox
            && let Some(dev_ca) = settings::get(db, settings::DEV_CA_CERT)?
        {
            pems.push(dev_ca);
        }
        let mut certs = Vec::new();
        for pem in &pems {
            certs.extend(
                reqwest::Certificate::from_pem_bundle(pem.as_bytes())
                    .map_err(|e| Error::Internal(e.into()))?,
            );
        }
        reqwest::Client::builder()
            .tls_certs_merge(certs)
            .connect_timeout(std::time::Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("mandato/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Internal(e.into()))
    }

    /// The commerces (by code) a production installation cannot charge on some rail, for
    /// the start-up warning.
    pub fn unserved(&self, db: Db<'_>) -> Result<Vec<(String, Vec<Rail>)>> {
        let mut unserved = Vec::new();
        for (id, code) in acquirers::commerce_codes(db)? {
            let mut rails = Vec::new();
            for rail in Rail::ALL {
                if matches!(self.acquirer(db, id, rail)?, Acquirer::NotConfigured) {
                    rails.push(rail);
                }
            }
            if !rails.is_empty() {
                unserved.push((code, rails));
            }
        }
        Ok(unserved)
    }

    /// The store the rails read their settings from.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }
}

/// The rail a payment method's money moves on.
pub fn rail_of(method: PaymentMethod) -> Rail {
    if method.is_card() {
        Rail::Cards
    } else {
        Rail::Bank
    }
}

/// Transbank's codes as `operations::acquirers` stores them.
fn transbank_codes(terms: &str) -> Option<TransbankCodes> {
    let value: serde_json::Value = serde_json::from_str(terms).ok()?;
    let code = |name: &str| value[name].as_str().and_then(TransbankCode::parse);
    let level = match value["responseCodeLevel"].as_u64() {
        Some(2) => ResponseCodeLevel::Two,
        _ => ResponseCodeLevel::One,
    };
    Some(TransbankCodes {
        mall: code("mallCode")?,
        child: code("childCode")?,
        webpay: code("webpayCode")?,
        response_codes: level,
    })
}
