//! `mandato trigger SCENARIO` (CONTRACT 12): a throwaway customer and mandate (or signature
//! process) of a commerce, driven through a real lifecycle so that its real events are written.
//!
//! How the command reaches the engine: in process, against the installation's database, through
//! the very functions the merchant and sandbox endpoints call (request validation, the
//! operations, the processor, the charging run, the signing ceremony and the seal). Each step
//! commits in a short transaction of its own, which SQLite serializes with a running `serve`; the
//! events land in the outbox, and that server's delivery worker (which polls it every second)
//! signs and sends them to the commerce's webhook URL (`mandato commerce set-webhook`). Nothing
//! needs the server's address or a credential, and nothing moves the business clock: the
//! command works on the installation's business date (the sandbox offset is stored in the
//! database). A payment scenario runs today's charge, as `POST /sandbox/charging/run` does, so
//! anything else of the installation due today is charged too.

use crate::store::db::Db;
use std::sync::Arc;

use anyhow::Context;
use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde_json::{Value, json};

use crate::charging::run::{Charger, Trigger};
use crate::cli::{CliError, out};
use crate::clock::{BusinessCalendar, Clock, SystemClock};
use crate::config::Config;
use crate::domain::contact::Email;
use crate::domain::external_id::ExternalId;
use crate::domain::instrument::InstrumentInput;
use crate::domain::rut::Rut;
use crate::domain::state::PaymentMethod;
use crate::error::Error;
use crate::esign::ceremony::{self, Act, StepError};
use crate::operations::activation::{self, Acceptance, Enrolment};
use crate::operations::mandates::{MagicLinkPolicy, MandateView};
use crate::operations::{Ctx, CustomerRef, MandateRef};
use crate::store::commerces::Commerce;
use crate::store::customers::{CustomerInput, CustomerRow, Upserted};
use crate::store::{Store, dev_tools, settings};
use mandato_engine::rails::Rails;
use mandato_engine::records::TriggerRecord;

/// The command's arguments.
#[derive(clap::Args, Debug)]
pub struct TriggerArgs {
    /// The scenario to play (`mandato trigger --list`).
    #[arg(required_unless_present = "list")]
    pub scenario: Option<String>,
    /// The commerce (may be omitted when the installation has only one).
    #[arg(long)]
    pub commerce: Option<String>,
    /// List the scenarios and exit.
    #[arg(long, conflicts_with = "scenario")]
    pub list: bool,
}

/// Every scenario, with what it does.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "activation",
        "a mandate activated with an approving test card (4242): activation ACTIVE",
    ),
    (
        "payment.paid",
        "activated, then today's charge of its installment approved: payment PAID",
    ),
    (
        "payment.rejected",
        "activated with card 0002, today's charge declined INSUFFICIENT_FUNDS (soft): payment REJECTED with the retry the commerce's policy schedules",
    ),
    (
        "payment.reversed",
        "paid, then the payment reversed: payment PAID, then REVERSED",
    ),
    (
        "mandate.cancelled",
        "activated, then cancelled by the merchant: installments ANNULLED, activation CANCELLED",
    ),
    (
        "signature.completed",
        "a one-document FES process signed by its signatory and sealed: SIGNATORY_SIGNED, SIGNATURE_COMPLETED",
    ),
    (
        "signature.rejected",
        "a one-document FES process its signatory rejects: SIGNATURE_REJECTED",
    ),
];

/// Card numbers of the simulated acquirer (README "Sandbox").
const APPROVING_CARD: &str = "4242424242424242";
const INSUFFICIENT_FUNDS_CARD: &str = "4000000000000002";

fn fail(name: &'static str, message: impl Into<String>) -> anyhow::Error {
    CliError {
        name,
        message: message.into(),
    }
    .into()
}

/// An engine refusal keeps its name (`MANDATE_STATE_CONFLICT`, ...) for `--json`.
fn engine(e: Error) -> anyhow::Error {
    match e {
        Error::Refused { name, message, .. } => fail(name, message),
        Error::Validation(errors) => fail(
            "VALIDATION_ERROR",
            errors
                .iter()
                .map(|e| format!("{}: {}", e.field, e.message))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        other => anyhow::anyhow!("{other}"),
    }
}

pub fn run(config: &Config, json_mode: bool, args: TriggerArgs) -> anyhow::Result<()> {
    if args.list {
        if json_mode {
            let items: Vec<Value> = SCENARIOS
                .iter()
                .map(|(name, does)| json!({"name": name, "description": does}))
                .collect();
            out(format_args!("{}", json!({"scenarios": items})));
        } else {
            for (name, does) in SCENARIOS {
                out(format_args!("{name}\t{does}"));
            }
        }
        return Ok(());
    }
    let scenario = args.scenario.unwrap_or_default();
    if !SCENARIOS.iter().any(|(name, _)| *name == scenario) {
        return Err(fail(
            "UNKNOWN_SCENARIO",
            format!(
                "no scenario {scenario:?}; one of: {}",
                SCENARIOS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let store = Arc::new(config.open_store()?);
    crate::cli::require_sandbox(&store, "trigger")?;
    let commerce = crate::cli::resolve_commerce(&store, args.commerce.as_deref())?;
    let url = store.read(|c| Ok(dev_tools::webhook_url(c, commerce.id)?))?;
    // Without a webhook URL of its own, a commerce whose events a `mandato listen` receives
    // still gets them there: the listener's copy needs no URL on the mandate.
    let now = crate::clock::timestamp(chrono::Utc::now());
    let listener =
        store.read(|c| Ok(crate::store::listen_leases::live_url(c, commerce.id, &now)?))?;
    let Some(callback) = url.clone().or(listener) else {
        return Err(fail(
            "NO_WEBHOOK_URL",
            format!(
                "commerce {} has no webhook URL and no `mandato listen` runs for it; start \
                 `mandato listen` in another terminal, or set a URL with: mandato commerce \
                 set-webhook --code {} --url https://...",
                commerce.code, commerce.code
            ),
        ));
    };
    let offset = store.read(|c| Ok(settings::get(c, settings::SANDBOX_OFFSET_DAYS)?))?;
    let calendar = BusinessCalendar::new(
        config.time_zone,
        offset.and_then(|o| o.parse().ok()).unwrap_or(0),
    );
    // A sandbox tool: the commerce's rails as the sandbox has them (the simulation by default).
    let rails = Arc::new(Rails::new(
        Arc::clone(&store),
        Arc::new(crate::clock::SystemClock),
        true,
        config.acquirer_limits(),
    )?);
    let session = Session {
        store,
        commerce,
        url,
        callback,
        calendar,
        clock: Arc::new(SystemClock),
        rails,
        link_days: config.magic_link_days,
        suffix: uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
    };
    let made = session.play(&scenario)?;
    let events = session
        .store
        .read(|c| Ok(dev_tools::events_of(c, made.mandate_seq, made.process_seq)?))?;
    let described: Vec<Value> = events.iter().map(describe).collect();
    if json_mode {
        out(format_args!(
            "{}",
            json!({"scenario": scenario, "commerce": session.commerce.code,
                   "customer": made.customer, "mandate": made.mandate, "signatureProcess": made.process,
                   "webhookUrl": session.url, "events": described})
        ));
    } else {
        out(format_args!(
            "{scenario}: commerce {}, customer {}{}{}; events for {}:",
            session.commerce.code,
            made.customer,
            made.mandate
                .as_ref()
                .map(|m| format!(", mandate {}", m["id"].as_str().unwrap_or("")))
                .unwrap_or_default(),
            made.process
                .as_ref()
                .map(|p| format!(", signature process {}", p.as_str().unwrap_or("")))
                .unwrap_or_default(),
            session
                .url
                .as_deref()
                .unwrap_or("the running `mandato listen`")
        ));
        for e in &described {
            out(format_args!(
                "{}  {:<10} #{}  {}",
                e["eventId"].as_str().unwrap_or(""),
                e["type"].as_str().unwrap_or(""),
                e["sequence"],
                e["detail"].as_str().unwrap_or("")
            ));
        }
    }
    Ok(())
}

/// One event as printed: id, type, sequence and what it says.
fn describe(event: &dev_tools::EventListing) -> Value {
    let body: Value = serde_json::from_str(&event.body).unwrap_or(Value::Null);
    let detail = match event.kind.as_str() {
        "activation" => format!(
            "mandate {} {}",
            body["product"]["id"].as_str().unwrap_or(""),
            body["product"]["state"]["name"].as_str().unwrap_or("")
        ),
        "payment" => {
            let i = &body["installment"];
            let mut text = format!(
                "installment {} {}",
                i["id"].as_str().unwrap_or(""),
                i["state"]["name"].as_str().unwrap_or("")
            );
            if let Some(code) = i["rejection"]["code"].as_str() {
                text.push_str(&format!(" {code}"));
            }
            if i["retryScheduled"].as_bool() == Some(true) {
                text.push_str(&format!(
                    ", retry on {}",
                    i["nextRetryDate"].as_str().unwrap_or("")
                ));
            } else if i["state"]["name"] == "REJECTED" {
                text.push_str(", not retried");
            }
            // Due on a weekend or holiday: charged on the next business day.
            if i["chargeDate"] != i["installmentDueDate"]
                && let Some(charged) = i["chargeDate"].as_str()
            {
                text.push_str(&format!(", charge date {charged}"));
            }
            text
        }
        _ => body["event"].as_str().unwrap_or("").to_string(),
    };
    json!({"eventId": event.id, "type": event.kind, "sequence": event.sequence,
           "detail": detail, "url": event.url, "createdAt": event.created_at})
}

/// What a scenario made: the ids to print, and the rows whose events are its own.
struct Made {
    customer: String,
    mandate: Option<Value>,
    process: Option<Value>,
    mandate_seq: Option<i64>,
    process_seq: Option<i64>,
}

struct Session {
    store: Arc<Store>,
    commerce: Commerce,
    /// The commerce's own webhook URL; `None` when only a listener gets the events.
    url: Option<String>,
    /// Where the customer's browser would go after activating or signing (never opened here).
    callback: String,
    calendar: BusinessCalendar,
    clock: Arc<dyn Clock>,
    rails: Arc<Rails>,
    link_days: i64,
    /// Makes this run's ids unique: `trigger-<suffix>`.
    suffix: String,
}

impl Session {
    fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    fn today(&self) -> NaiveDate {
        self.calendar.today(self.now())
    }

    /// Runs `f` in one write transaction, acting for the commerce now.
    fn write<T>(&self, f: impl FnOnce(Db<'_>, &Ctx<'_>) -> Result<T, Error>) -> anyhow::Result<T> {
        let now = self.now();
        let ctx = Ctx {
            commerce: &self.commerce,
            charge_dates: &self.store.charge_dates,
            now,
            today: self.calendar.today(now),
        };
        self.store.write(|tx| f(tx, &ctx)).map_err(engine)
    }

    fn act(&self) -> (DateTime<Utc>, DateTime<Utc>) {
        let now = self.now();
        (now, self.calendar.now(now))
    }

    fn play(&self, scenario: &str) -> anyhow::Result<Made> {
        let customer = self.customer()?;
        let mut made = Made {
            customer: customer.user_id.clone(),
            mandate: None,
            process: None,
            mandate_seq: None,
            process_seq: None,
        };
        if let Some(kind) = scenario.strip_prefix("signature.") {
            let (process_id, process_seq) = self.signature(&customer, kind == "completed")?;
            made.process = Some(json!(process_id));
            made.process_seq = Some(process_seq);
            return Ok(made);
        }
        let view = self.mandate(&customer)?;
        made.mandate = Some(json!({"id": view.mandate.external_id, "internalId": view.mandate.id}));
        made.mandate_seq = Some(view.mandate.seq);
        let card = if scenario == "payment.rejected" {
            INSUFFICIENT_FUNDS_CARD
        } else {
            APPROVING_CARD
        };
        self.activate(&view, card)?;
        match scenario {
            "activation" => {}
            "payment.paid" | "payment.rejected" => self.charge_own(&view)?,
            "payment.reversed" => {
                self.charge_own(&view)?;
                self.reverse(&view)?;
            }
            "mandate.cancelled" => {
                let mandate = MandateRef::Internal(view.mandate.id.clone());
                let owner = CustomerRef::UserId(customer.user_id.clone());
                self.write(|tx, ctx| {
                    crate::operations::mandates::cancel(
                        tx,
                        ctx,
                        &mandate,
                        &owner,
                        "cancelado por mandato trigger",
                    )
                })?;
            }
            other => unreachable!("scenario {other} is checked against SCENARIOS"),
        }
        Ok(made)
    }

    /// A throwaway customer, `trigger-<suffix>`, with a RUT of its own.
    fn customer(&self) -> anyhow::Result<CustomerRow> {
        let user_id = format!("trigger-{}", self.suffix);
        // RUTs are unique per commerce: a few random ones until one is free.
        for _ in 0..8 {
            let body: u32 = rand::random_range(30_000_000..90_000_000);
            let rut = Rut::parse(&format!("{body}-{}", crate::domain::rut::check_digit(body)))
                .expect("a computed check digit is valid");
            let input = CustomerInput {
                user_id: ExternalId::parse(&user_id).expect("trigger ids are valid ids"),
                rut,
                first_name: "Cliente".into(),
                last_name: "De Prueba".into(),
                second_last_name: None,
                address: None,
                email: Email::parse(&format!("{user_id}@sandbox.example"))
                    .expect("a valid address"),
                phone: None,
            };
            let registered = self.write(|tx, ctx| {
                let upserted = crate::operations::customers::register(tx, ctx, &input)?;
                let (Upserted::Created(row) | Upserted::Updated(row)) = &upserted;
                mark(tx, TriggerRecord::Customer(row.seq))?;
                Ok(upserted)
            });
            match registered {
                Ok(Upserted::Created(row) | Upserted::Updated(row)) => return Ok(row),
                Err(e) if e.downcast_ref::<CliError>().is_some() => continue,
                Err(e) => return Err(e),
            }
        }
        Err(fail(
            "COMMAND_FAILED",
            "could not find a free RUT for the throwaway customer",
        ))
    }

    /// A DYNAMIC mandate of one 1,000 CLP installment due today, its webhooks the commerce's
    /// URL, validated exactly as `POST /mandate` validates its body.
    fn mandate(&self, customer: &CustomerRow) -> anyhow::Result<MandateView> {
        let today = self.today();
        let body = json!({
            "customer": {"userId": customer.user_id},
            "mandate": {"id": format!("trigger-{}", self.suffix), "type": "DYNAMIC",
                        "name": "Mandato de prueba (mandato trigger)",
                        "charges": {"currencyId": "CLP", "maxAmount": 100000}},
            "installments": [{"id": "trigger-1", "amount": 1000, "currencyId": "CLP",
                              "installmentDueDate": today.to_string()}],
            "paymentMethods": [3],
            "urls": {"callback": self.callback, "activationWebhook": self.url, "paymentWebhook": self.url}
        });
        let command = crate::http::mandates::validate_request(body.to_string().as_bytes(), today)
            .map_err(engine)?;
        let policy = MagicLinkPolicy {
            valid_days: self.link_days,
            business_offset_days: self.calendar.offset_days(),
        };
        self.write(|tx, ctx| {
            let view = crate::operations::mandates::create(tx, ctx, &command, &policy)?;
            mark(tx, TriggerRecord::Mandate(view.mandate.seq))?;
            Ok(view)
        })
    }

    /// Enrols a test card as `POST /sandbox/mandates/{id}/activate` does.
    fn activate(&self, view: &MandateView, number: &str) -> anyhow::Result<()> {
        let (now, business_now) = self.act();
        let today = self.calendar.today(now);
        let method = PaymentMethod::from_id(3).expect("3 is a card method");
        let instrument = InstrumentInput::card(
            method,
            number,
            "12/30",
            "123",
            (today.year(), today.month()),
        )
        .map_err(|_| fail("COMMAND_FAILED", "the test card was refused"))?;
        let loaded = self
            .store
            .read(|c| crate::http::link::load_mandate(c, view.mandate.clone()))
            .map_err(engine)?;
        activation::check_activatable(&loaded.mandate, method, business_now).map_err(engine)?;
        let processor = self
            .store
            .read(|c| self.rails.processor(c, self.commerce.id, method))
            .map_err(engine)?
            .ok_or_else(|| {
                fail(
                    "ACQUIRER_NOT_CONFIGURED",
                    "no acquirer serves the card rail",
                )
            })?;
        let enrolled = processor
            .enroll(&instrument)
            .map_err(|e| fail("INSTRUMENT_REFUSED", e.to_string()))?;
        let acceptance = Acceptance {
            ip: None,
            user_agent: Some("mandato trigger".into()),
            terms: loaded.terms(method),
        };
        self.write(|tx, ctx| {
            activation::activate(
                tx,
                ctx.commerce,
                &loaded.mandate,
                &Enrolment {
                    instrument: &instrument.facts(),
                    enrolled: &enrolled,
                    acceptance: &acceptance,
                    document: None,
                },
                ctx.now,
            )
        })?;
        Ok(())
    }

    /// Charges the throwaway mandate's installment, and nothing else of the commerce, on its
    /// charge date: today when today is a business day, else the next business day (the
    /// payment event's `chargeDate` says which), so a scenario works on any day.
    fn charge_own(&self, view: &MandateView) -> anyhow::Result<()> {
        let today = self.today();
        let calendar = self
            .store
            .read(|c| Ok(crate::store::calendar::load(c)?))
            .map_err(engine)?;
        let date = calendar.on_or_after(today).unwrap_or(today);
        let installments: Vec<i64> = view.installments.iter().map(|i| i.seq).collect();
        let charger = Charger::new(
            Arc::clone(&self.store),
            Arc::clone(&self.rails),
            Arc::clone(&self.clock),
            true,
            Box::new(|| {}),
        );
        charger
            .charge_only(date, &installments, Trigger::Sandbox)
            .map_err(engine)?;
        Ok(())
    }

    /// Reverses the paid installment now, as the sandbox outcome `REVERSED` does.
    fn reverse(&self, view: &MandateView) -> anyhow::Result<()> {
        let installment_seq = view
            .installments
            .first()
            .map(|i| i.seq)
            .ok_or_else(|| fail("COMMAND_FAILED", "the mandate has no installment"))?;
        let mandate_seq = view.mandate.seq;
        self.write(|tx, ctx| {
            let row = crate::store::installments::by_seq(tx, installment_seq)?;
            let mandate = crate::store::mandates::by_seq(tx, mandate_seq)?;
            crate::operations::installments::reverse(tx, ctx, &row, &mandate).map(drop)
        })
    }

    /// A one-document FES process for the customer, validated as `POST /signature` validates
    /// its body, then the signatory's steps on the signing page: RUT, one-time code (the
    /// sandbox keeps it for staff), and signing (then the seal) or rejecting.
    fn signature(&self, customer: &CustomerRow, sign: bool) -> anyhow::Result<(String, i64)> {
        use base64::Engine;
        let body = json!({
            "process": {"processName": "Documento de prueba (mandato trigger)",
                        "externalProcessId": format!("trigger-{}", self.suffix),
                        "requestUser": "mandato trigger"},
            "signatories": [{"userId": customer.user_id, "order": 1, "type": "FES"}],
            "documents": [{"documentName": "prueba.pdf",
                           "contentBase64": base64::engine::general_purpose::STANDARD.encode(test_pdf()?),
                           "signatureData": [{"signatory": {"userId": customer.user_id}, "mode": "LAST_PAGE"}]}],
            "urls": {"callback": self.callback, "webhook": self.url}
        });
        let command = crate::http::signature::validate_request(body.to_string().as_bytes(), |_| {
            Some(customer.clone())
        })
        .map_err(engine)?;
        let (now, business_now) = self.act();
        let act = Act {
            now,
            business_now,
            ip: None,
            user_agent: Some("mandato trigger"),
            sandbox: true,
        };
        let view = self.write(|tx, ctx| {
            let view = ceremony::create(tx, ctx.commerce, &act, &command)?;
            mark(tx, TriggerRecord::SignatureProcess(view.process.seq))?;
            Ok(view)
        })?;
        let process_seq = view.process.seq;
        let token = view
            .signatories
            .first()
            .map(|s| s.token.clone())
            .ok_or_else(|| fail("COMMAND_FAILED", "the process has no signatory"))?;
        let rut = customer.rut.clone();
        step(self.write(|tx, _| ceremony::send_code(tx, &token, &act, &rut))?)?;
        let code = self
            .store
            .read(|c| crate::store::signatures::signatory_by_token(c, &token))
            .map_err(engine)?
            .and_then(|s| s.code_plain)
            .ok_or_else(|| fail("COMMAND_FAILED", "the sandbox kept no one-time code"))?;
        step(self.write(|tx, _| ceremony::verify_code(tx, &token, &act, &code))?)?;
        if !sign {
            step(self.write(|tx, _| {
                ceremony::reject(tx, &token, &act, "rechazado por mandato trigger")
            })?)?;
            return Ok((view.process.id, process_seq));
        }
        let signed = step(self.write(|tx, _| ceremony::sign(tx, &token, &act, true))?)?;
        if signed.completed {
            // Sealed outside any transaction, as the signing page does; a running server's
            // sweep would seal it too, and only one seal is stored.
            let job = self
                .store
                .read(|c| ceremony::prepare_seal(c, process_seq, &act))
                .map_err(engine)?;
            if let Some(job) = job {
                let sealed = job.run().map_err(engine)?;
                self.store
                    .write(|tx| ceremony::complete_seal(tx, sealed, &act))
                    .map_err(engine)?;
            }
        }
        Ok((view.process.id, process_seq))
    }
}

/// Marks a throwaway record in its creation's transaction: left out of totals, removed by
/// `sandbox reset --triggers-only`.
fn mark(tx: Db<'_>, record: TriggerRecord) -> Result<(), Error> {
    crate::operations::sandbox::mark_trigger_record(tx, record)
}

fn step<T>(result: ceremony::Step<T>) -> anyhow::Result<T> {
    result.map_err(|e: StepError| fail("SIGNING_STEP_REFUSED", format!("{e:?}")))
}

/// A one-page PDF for the throwaway process.
fn test_pdf() -> anyhow::Result<Vec<u8>> {
    use lopdf::{Dictionary, Document, Object, Stream, dictionary};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let content = doc.add_object(Stream::new(
        Dictionary::new(),
        b"BT /F1 14 Tf 72 760 Td (Documento de prueba de mandato trigger) Tj ET".to_vec(),
    ));
    let font = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let page = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => content,
        "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Count" => 1, "Kids" => vec![Object::from(page)],
            "Resources" => dictionary! { "Font" => dictionary! { "F1" => font } },
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).context("writing the test PDF")?;
    Ok(bytes)
}
