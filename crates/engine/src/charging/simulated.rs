//! The simulated acquirer: deterministic outcomes from the test instruments of CONTRACT 6.
//!
//! | instrument | outcome |
//! |---|---|
//! | card ending 1111 or 4242 (or any other ending) | approved in the run |
//! | card ending 0002 | rejected, INSUFFICIENT_FUNDS (soft: retried) |
//! | card ending 0069 | rejected, EXPIRED_CARD (hard) |
//! | bank account ending 0000 (or any other ending) | IN_VALIDATION, approved at the next run |
//! | bank account ending 9999 | IN_VALIDATION, rejected BANK_VALIDATION_FAILED at the next run |
//! | card or bank account ending 0119 | refused at enrolment (the issuer will not tokenise it) |
//!
//! A sandbox-forced outcome wins over the instrument's.
//!
//! Every approved charge reports the acquirer's fee (`domain::ledger::acquirer_fee`): a
//! commission of 2.95% on credit cards, 1.79% on debit and prepaid cards and 0.60% on bank
//! debits (PAC, EPAC, direct EPAC), plus 19% IVA on the commission, each rounded half away from
//! zero to the currency's decimals. A bank debit's fee is fixed when it is submitted and
//! reported when it settles approved.

use std::sync::Arc;

use mandato_core::clock::timestamp;
use mandato_core::domain::instrument::{InstrumentInput, card_brand};
use mandato_core::domain::ledger::acquirer_fee;
use mandato_core::domain::money::Money;
use mandato_core::domain::state::RejectionCode;
use mandato_core::processor::{
    ChargeRequest, ChargeResult, Enrolled, Forced, Processor, ProcessorError,
};
use mandato_store::Store;
use mandato_store::db::Db;
use mandato_store::sim_acquirer::{self, Ledger};
use mandato_store::sim_acquirer::{NewSimCharge, SimCharge};

pub struct SimulatedProcessor {
    ledger: Ledger,
}

/// Where the acquirer's ledger is written. On SQLite, a connection of its own (outside the
/// engine's transactions, as a real acquirer would be); on PostgreSQL, transactions of the
/// store's pool, which are already each their own.
impl SimulatedProcessor {
    pub fn open(store: &Arc<Store>) -> anyhow::Result<Self> {
        Ok(SimulatedProcessor {
            ledger: Ledger::open(store)?,
        })
    }

    fn with<T>(
        &self,
        f: impl FnOnce(Db<'_>) -> mandato_store::db::Result<T>,
    ) -> Result<T, ProcessorError> {
        self.ledger.with(f).map_err(ProcessorError::Unavailable)
    }
}

fn now() -> String {
    timestamp(chrono::Utc::now())
}

/// The last four digits of a test card or account that the issuer refuses to enrol, so the
/// enrolment routes can be tried against a decline.
const ENROLMENT_REFUSED: &str = "0119";

/// What the test instrument's last four digits decide.
fn card_outcome(last4: &str) -> Result<(), RejectionCode> {
    match last4 {
        "0002" => Err(RejectionCode::InsufficientFunds),
        "0069" => Err(RejectionCode::ExpiredCard),
        _ => Ok(()),
    }
}

fn bank_outcome(last4: &str) -> Result<(), RejectionCode> {
    match last4 {
        "9999" => Err(RejectionCode::BankValidationFailed),
        _ => Ok(()),
    }
}

fn authorization_code(key: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(key.as_bytes());
    format!("AUT-{}", hex::encode(&digest[..4]).to_uppercase())
}

impl Processor for SimulatedProcessor {
    fn enroll(&self, instrument: &InstrumentInput) -> Result<Enrolled, ProcessorError> {
        let token = mandato_core::ids::new_id("tok");
        let last4 = instrument.last4();
        if last4 == ENROLMENT_REFUSED {
            return Err(ProcessorError::Refused(
                "the issuer refused to enrol the instrument".into(),
            ));
        }
        let (kind, brand) = match instrument {
            InstrumentInput::Card { number, .. } => {
                ("CARD", Some(card_brand(number.expose()).to_string()))
            }
            InstrumentInput::Bank { .. } => ("BANK", None),
        };
        self.with(|c| sim_acquirer::insert_instrument(c, &token, kind, &last4, &now()))?;
        Ok(Enrolled {
            token,
            brand,
            last4,
        })
    }

    fn charge(&self, request: &ChargeRequest<'_>) -> Result<ChargeResult, ProcessorError> {
        self.charge_many(std::slice::from_ref(request))
            .pop()
            .unwrap_or_else(|| Err(ProcessorError::Unavailable("no answer".into())))
    }

    /// The whole batch in one transaction of the acquirer's ledger: one durable commit instead
    /// of one per charge, and on PostgreSQL three statements whatever the batch's size. Until
    /// it commits none of them counts (a crash before then leaves the keys unknown, and
    /// reconciliation sends them again).
    fn charge_many(
        &self,
        requests: &[ChargeRequest<'_>],
    ) -> Vec<Result<ChargeResult, ProcessorError>> {
        let decide_all = |db: Db<'_>| {
            let tokens: Vec<&str> = requests.iter().map(|r| r.token).collect();
            let instruments = sim_acquirer::instruments_of(db, &tokens)?;
            let at = now();
            let decisions: Vec<Result<NewSimCharge<'_>, ProcessorError>> = requests
                .iter()
                .map(|r| decide(r, instruments.get(r.token), &at))
                .collect();
            let new: Vec<NewSimCharge<'_>> = decisions
                .iter()
                .filter_map(|d| d.as_ref().ok().cloned())
                .collect();
            let held = sim_acquirer::charge_all_once(db, &new)?;
            Ok::<_, mandato_store::db::Error>(
                requests
                    .iter()
                    .zip(decisions)
                    .map(|(request, decision)| {
                        decision?;
                        held.get(request.idempotency_key)
                            .map(to_result)
                            .ok_or_else(|| ProcessorError::Unavailable("not recorded".into()))
                    })
                    .collect::<Vec<_>>(),
            )
        };
        match self.ledger.transaction(decide_all) {
            Ok(results) => results,
            Err(e) => requests
                .iter()
                .map(|_| Err(ProcessorError::Unavailable(e.clone())))
                .collect(),
        }
    }

    fn status(&self, idempotency_key: &str) -> Result<Option<ChargeResult>, ProcessorError> {
        let held = self.with(|c| sim_acquirer::charge(c, idempotency_key))?;
        Ok(held.map(|h| to_result(&h)))
    }

    /// The simulation gives back any charge it approved.
    fn refund(&self, idempotency_key: &str, _amount: &Money) -> Result<(), ProcessorError> {
        match self.with(|c| sim_acquirer::charge(c, idempotency_key))? {
            Some(_) => Ok(()),
            None => Err(ProcessorError::Refused("unknown charge".into())),
        }
    }

    fn settle(&self, idempotency_key: &str) -> Result<ChargeResult, ProcessorError> {
        let held = self
            .with(|c| sim_acquirer::charge(c, idempotency_key))?
            .ok_or_else(|| ProcessorError::Refused("unknown charge".into()))?;
        Ok(match held.settles_as.as_deref() {
            Some("REJECTED") => rejected(held.code.as_deref()),
            Some(_) => ChargeResult::Approved {
                fee: parse_fee(held.fee.as_deref()),
                authorization_code: held
                    .code
                    .unwrap_or_else(|| authorization_code(idempotency_key)),
            },
            None => to_result(&held),
        })
    }
}

/// Decides one charge by its test instrument (`kind`, last four digits) and the sandbox's
/// forced outcome: the charge to record (a repeated key keeps the one recorded first).
fn decide<'r>(
    request: &ChargeRequest<'r>,
    instrument: Option<&(String, String)>,
    at: &'r str,
) -> Result<NewSimCharge<'r>, ProcessorError> {
    let Some((kind, last4)) = instrument else {
        return Err(ProcessorError::Refused("unknown instrument token".into()));
    };
    let natural = if kind == "CARD" {
        card_outcome(last4)
    } else {
        bank_outcome(last4)
    };
    let decided = match request.forced {
        Some(Forced::Paid) => Ok(()),
        Some(Forced::Rejected(code)) => Err(code),
        None => natural,
    };
    let code = Some(match &decided {
        Ok(()) => authorization_code(request.idempotency_key),
        Err(code) => code.as_str().to_string(),
    });
    let (result, settles_as) = if kind == "BANK" && request.forced.is_none() {
        let settles = if decided.is_ok() {
            "APPROVED"
        } else {
            "REJECTED"
        };
        ("PENDING", Some(settles))
    } else if decided.is_ok() {
        ("APPROVED", None)
    } else {
        ("REJECTED", None)
    };
    let fee = (result == "APPROVED" || settles_as == Some("APPROVED"))
        .then(|| acquirer_fee(request.amount, request.method).to_string());
    Ok(NewSimCharge {
        key: request.idempotency_key,
        token: request.token,
        amount: request.amount.amount().normalize().to_string(),
        currency: request.amount.currency().code(),
        result,
        code,
        settles_as,
        fee,
        at,
    })
}

fn to_result(held: &SimCharge) -> ChargeResult {
    match held.result.as_str() {
        "APPROVED" => ChargeResult::Approved {
            authorization_code: held.code.clone().unwrap_or_default(),
            fee: parse_fee(held.fee.as_deref()),
        },
        "REJECTED" => rejected(held.code.as_deref()),
        _ => ChargeResult::Pending,
    }
}

fn rejected(code: Option<&str>) -> ChargeResult {
    ChargeResult::Rejected {
        code: code
            .and_then(RejectionCode::parse)
            .unwrap_or(RejectionCode::CardDeclined),
    }
}

/// Charges recorded before fees were reported have none.
fn parse_fee(stored: Option<&str>) -> Option<rust_decimal::Decimal> {
    stored.and_then(|f| f.parse().ok())
}
