//! The HTML of the Magic Link pages: server-rendered, no script, inline CSS, Spanish (Chile).
//! Written with maud, which escapes every value (`crate::pages` says why maud, measured).

use std::collections::HashMap;
use std::str::FromStr;

use chrono::NaiveDate;
use maud::{Markup, PreEscaped, html};
use sha2::{Digest, Sha256};

use crate::pages::{self, Look};
use mandato_core::domain::activation::{ActivationFailure, ActivationMode};
use mandato_core::domain::holidays::ChargeDates;
use mandato_core::domain::instrument::{ACCOUNT_TYPES, BANKS};
use mandato_core::domain::money::{Currency, Money};
use mandato_core::domain::state::{InstallmentState, MandateState, PaymentMethod};
use mandato_engine::documents::spanish::{self, TermsSubject};
use mandato_engine::records::{Commerce, CustomerRow, InstallmentRow, MandateRow, StoredJson};
use mandato_engine::staff::mandates::EvidenceFileMeta;

/// A mandate opened by its link, with everything its page shows.
pub struct Loaded {
    pub mandate: MandateRow,
    pub commerce: Commerce,
    pub customer: CustomerRow,
    pub installments: Vec<InstallmentRow>,
    /// The day each installment is charged: its due date moved off weekends and holidays by
    /// the commerce's rule.
    pub charge_dates: ChargeDates,
    /// A signature-gated mandate's latest signature, while it has not activated the mandate.
    pub signing: Option<Signing>,
}

/// Where the signature of a signature-gated mandate stands.
pub enum Signing {
    /// Open: the customer signs at `/sign/{token}`.
    Open { token: String },
    /// Signed; the document is being sealed, then the mandate activates.
    Sealing,
    /// Ended without activating the mandate; a new enrolment starts a new process.
    Ended(ActivationFailure),
}

impl Loaded {
    pub fn summary(&self) -> String {
        spanish::charges_summary(self.mandate.mandate_type, &self.mandate.charges.value())
    }

    /// The terms of the mandate with `method`, exactly as the page shows them.
    pub fn terms(&self, method: PaymentMethod) -> String {
        let summary = self.summary();
        // A commerce code that is a RUT reads with its dots, as everywhere the customer looks.
        let commerce_code = mandato_core::domain::rut::dotted(&self.commerce.code);
        spanish::terms(
            &TermsSubject {
                commerce_name: &self.commerce.name,
                commerce_code: &commerce_code,
                mandate_id: &self.mandate.external_id,
                mandate_name: &self.mandate.name,
                summary: &summary,
            },
            method,
        )
    }

    /// The methods the customer may enrol, in the order of seed 2.4.
    pub fn methods(&self) -> Vec<PaymentMethod> {
        PaymentMethod::ALL
            .iter()
            .copied()
            .filter(|m| self.mandate.payment_methods.contains(&m.id()))
            .collect()
    }

    /// The bank method an authorization through Fintoc enrols: the mandate's first (PAC,
    /// then EPAC, then direct EPAC). EPAC and direct EPAC also make the signed mandate
    /// document when the subscription activates.
    pub fn hosted_bank_method(&self) -> Option<PaymentMethod> {
        self.methods().into_iter().find(|m| !m.is_card())
    }

    /// The card methods an active mandate's card may be replaced with: the mandate's own.
    pub fn card_change_methods(&self) -> Vec<PaymentMethod> {
        self.methods().into_iter().filter(|m| m.is_card()).collect()
    }

    /// The card methods a portal payment may name: the mandate's, or every card when the
    /// mandate allows none (a portal payment is by card whatever the enrolled method).
    pub fn card_methods(&self) -> Vec<PaymentMethod> {
        let allowed: Vec<PaymentMethod> =
            self.methods().into_iter().filter(|m| m.is_card()).collect();
        if allowed.is_empty() {
            PaymentMethod::ALL
                .iter()
                .copied()
                .filter(|m| m.is_card())
                .collect()
        } else {
            allowed
        }
    }
}

/// Whether the customer can pay `installment` in the portal on `today`: due or overdue and
/// PENDING, or REJECTED.
pub fn payable(installment: &InstallmentRow, today: NaiveDate) -> bool {
    match installment.state {
        InstallmentState::Pending => installment.due_date <= today,
        InstallmentState::Rejected => true,
        _ => false,
    }
}

pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// A banner at the top of the page.
pub enum Notice {
    Activated,
    AlreadyActive,
    Paid {
        installment: String,
        authorization_code: String,
        /// The installment's internal id, for the link to its receipt.
        receipt: String,
    },
    /// The card was replaced; `retried` rejected installments go to the next run.
    CardChanged {
        retried: usize,
    },
    Info(String),
    /// Why what the customer asked for was not done.
    Problem(String),
}

/// A form sent back with problems: its values (never the card number or CVV) and a message
/// per field (`form` for the form as a whole).
#[derive(Default)]
pub struct Submitted {
    pub values: HashMap<String, String>,
    pub errors: Vec<(String, String)>,
}

impl Submitted {
    fn error(&self, field: &str) -> Option<&str> {
        self.errors
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, m)| m.as_str())
    }

    fn value(&self, field: &str) -> &str {
        self.values.get(field).map_or("", String::as_str)
    }
}

/// What the page of a mandate shows besides the mandate itself.
pub struct View<'a> {
    pub data: &'a Loaded,
    pub token: &'a str,
    pub today: NaiveDate,
    /// The environment's time zone, for the link's expiry date.
    pub time_zone: chrono_tz::Tz,
    pub notice: Option<Notice>,
    /// The activation forms are shown (PENDING, link valid).
    pub activation_open: bool,
    /// The activation form sent back: its method id and problems.
    pub activation: Option<(i64, Submitted)>,
    /// A payment form sent back: the installment's internal id and problems.
    pub payment: Option<(String, Submitted)>,
    /// The card change form sent back with its problems.
    pub card_update: Option<Submitted>,
    /// A sandbox installation: the page lists the test instruments. Never in production.
    pub sandbox: bool,
    /// The rails whose instruments are typed on this page (the sandbox's simulation). A rail
    /// a real acquirer serves, or none (production without `mandato acquirer set`), shows
    /// no card or account fields here.
    pub offered: Offered,
}

/// The rails whose forms the page offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offered {
    /// Cards typed here (the simulation).
    pub cards: bool,
    pub bank: bool,
    /// Cards inscribed on Webpay's page (Transbank Oneclick): a button, no card fields.
    pub hosted_cards: bool,
    /// Bank accounts authorized at the bank through Fintoc's widget: a button, no fields.
    pub hosted_bank: bool,
    /// The customer authorized on Fintoc and the bank is validating it: nothing to do but
    /// wait, so the bank's button is not shown.
    pub bank_validating: bool,
}

impl Offered {
    #[cfg(test)]
    pub const ALL: Offered = Offered {
        cards: true,
        bank: true,
        hosted_cards: false,
        hosted_bank: false,
        bank_validating: false,
    };

    pub fn allows(self, method: PaymentMethod) -> bool {
        if method.is_card() {
            self.cards
        } else {
            self.bank
        }
    }
}

/// The test instruments and what each does (`charging::simulated`), shown on sandbox pages so
/// that whoever tries the page knows what to type.
const BANNER_HEAD: &str = "<section class=\"sandbox\" role=\"note\" aria-label=\"Entorno de pruebas\">\
<h2>Entorno de pruebas (sandbox)</h2>\
<p>Nada se cobra de verdad. Use estos medios de prueba:</p>\
<ul>";

const SIMULATED_CARDS: &str = "<li>Tarjeta terminada en <code>4242</code> o <code>1111</code> (por ejemplo <code>4242 4242 4242 4242</code>), \
vencimiento futuro, CVV <code>123</code>: aprobada.</li>\
<li>Tarjeta <code>4000 0000 0000 0002</code>: rechazada por fondos insuficientes \
(<code>INSUFFICIENT_FUNDS</code>, se reintenta a 1, 3 y 7 días).</li>\
<li>Tarjeta <code>4000 0000 0000 0069</code>: rechazada, tarjeta vencida (<code>EXPIRED_CARD</code>, sin reintento).</li>";

/// The integration environment's test cards (transbankdevelopers.cl, "Cómo empezar"), for a
/// sandbox whose cards rail is Transbank: the card is typed on Webpay, not here.
const TRANSBANK_CARDS: &str = "<li>Las tarjetas se inscriben en Webpay, el entorno de integración de Transbank: \
VISA <code>4051 8856 0044 6623</code> (aprobada), Redcompra <code>4051 8842 3993 7763</code> (débito, aprobada), \
Prepago VISA <code>4051 8860 0005 6590</code> (aprobada), MasterCard <code>5186 0595 5959 0568</code> (rechazada); \
en el simulador del banco, RUT <code>11.111.111-1</code> y clave <code>123</code>.</li>";

const SIMULATED_ACCOUNTS: &str = "<li>Cuenta bancaria terminada en <code>0000</code> (por ejemplo <code>123450000</code>, banco <code>012</code>): \
en validación, pagada en la siguiente ejecución de cobro.</li>\
<li>Cuenta terminada en <code>9999</code>: en validación, rechazada en la siguiente ejecución \
(<code>BANK_VALIDATION_FAILED</code>).</li>";

/// Fintoc's sandbox credentials (docs.fintoc.com, "Test your integration" for Direct Debit),
/// for a sandbox whose bank rail is Fintoc: the customer authorizes at the bank in Fintoc's
/// widget, not here.
const FINTOC_ACCOUNTS: &str = "<li>La cuenta bancaria se autoriza en el widget de Fintoc (modo de prueba): \
RUT <code>41614850-3</code>, <code>40427672-7</code> o <code>41579263-8</code> con la clave <code>jonsnow</code>.</li>";

const REFUSED_AT_ENROLMENT: &str = "<li>Tarjeta o cuenta terminada en <code>0119</code>: el emisor no la acepta al inscribirla.</li>";

/// The sandbox banner for the rails this page offers: the simulation's test instruments, or
/// Transbank's test cards and Fintoc's test logins. Static text: nothing of the mandate or the customer goes into it.
fn sandbox_banner(offered: Offered) -> String {
    let mut banner = String::from(BANNER_HEAD);
    if offered.hosted_cards {
        banner.push_str(TRANSBANK_CARDS);
    } else if offered.cards {
        banner.push_str(SIMULATED_CARDS);
    }
    if offered.hosted_bank {
        banner.push_str(FINTOC_ACCOUNTS);
    } else if offered.bank {
        banner.push_str(SIMULATED_ACCOUNTS);
    }
    if offered.cards || offered.bank {
        banner.push_str(REFUSED_AT_ENROLMENT);
    }
    banner.push_str("</ul></section>");
    banner
}

const CSS: &str = r#"
*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
  background:#f3f5f8;color:#1d2433;line-height:1.45;font-size:16px}
main{max-width:680px;margin:0 auto;padding:16px}
header{padding:20px 16px 8px;max-width:680px;margin:0 auto}
header .who{font-size:.85rem;color:#5a6478;text-transform:uppercase;letter-spacing:.04em}
h1{font-size:1.5rem;margin:.2rem 0 .4rem}
h2{font-size:1.15rem;margin:0 0 .6rem}
h3{font-size:1rem;margin:0}
section,.card{background:#fff;border-radius:12px;padding:16px;margin:0 0 16px;
  box-shadow:0 1px 3px rgba(20,30,50,.08)}
dl{display:grid;grid-template-columns:minmax(110px,38%) 1fr;gap:6px 12px;margin:0}
dt{color:#5a6478}dd{margin:0;font-weight:600;overflow-wrap:anywhere}
table{width:100%;border-collapse:collapse;font-size:.92rem}
th,td{text-align:left;padding:7px 4px;border-bottom:1px solid #e6e9ef;vertical-align:top}
td.amount,th.amount{text-align:right;white-space:nowrap}
.state{display:inline-block;padding:1px 8px;border-radius:10px;font-size:.8rem;background:#eef1f6}
.state.s2{background:#dff5e6;color:#17663a}.state.s-99{background:#fde8e8;color:#9b1c1c}
.state.s4,.state.s5{background:#eee;color:#555}
details{border:1px solid #dde2ea;border-radius:10px;margin:0 0 10px;background:#fff}
summary{cursor:pointer;padding:12px 14px;font-weight:600}
details form{padding:0 14px 14px}
label{display:block;font-size:.9rem;margin:10px 0 4px;color:#323b4e}
input[type=text],select{width:100%;padding:10px;font-size:1rem;border:1px solid #b9c1cf;
  border-radius:8px;background:#fff}
input[aria-invalid=true],select[aria-invalid=true]{border-color:#c81e1e;background:#fff7f7}
.row{display:flex;gap:10px}.row>div{flex:1}
.err{color:#b42318;font-size:.88rem;margin:4px 0 0}
.terms{white-space:pre-wrap;font-size:.85rem;max-height:220px;overflow:auto;background:#f7f8fa;
  border:1px solid #e3e7ee;border-radius:8px;padding:10px;margin:12px 0 6px}
.check{display:flex;gap:8px;align-items:flex-start;margin-top:8px}
.check input{margin-top:4px;width:20px;height:20px}
button{margin-top:14px;width:100%;padding:12px;font-size:1rem;font-weight:600;border:0;
  border-radius:8px;background:#1f5eff;color:#fff;cursor:pointer}
.notice{border-left:4px solid #1f5eff;background:#eef3ff}
.notice.ok{border-color:#17a34a;background:#ecfbf1}
.notice.bad{border-color:#c81e1e;background:#fff1f1}
.sandbox{border:2px dashed #b7791f;background:#fffaeb}
.sandbox ul{margin:.4rem 0 0;padding-left:1.2rem}
.muted{color:#5a6478;font-size:.9rem}
.due{display:flex;justify-content:space-between;gap:8px;flex-wrap:wrap}
footer{max-width:680px;margin:0 auto;padding:8px 16px 32px;color:#566074;font-size:.8rem}
.receipt dd{font-weight:600}.receipt .total{font-size:1.3rem}
@media print{body{background:#fff}section,.card{box-shadow:none;border:1px solid #ccc}
  footer,.noprint{display:none}}
"#;

const LOOK: Look = Look {
    css: CSS,
    footer: "Página segura de activación y pago. Nunca le pediremos su clave bancaria.",
};

/// A page that only says something: unknown, expired or closed links, failures.
pub fn message_page(title: &str, text: &str, commerce: Option<&str>) -> String {
    pages::message_page(&LOOK, title, text, commerce, None)
}

/// A field's problem, right below it; its id ties it to the field (`aria-describedby`).
fn field_error(id: &str, error: Option<&str>) -> Markup {
    html! {
        @if let Some(message) = error {
            p class="err" id={ (id) "-err" } { (message) }
        }
    }
}

/// How a text input is typed and filled in.
struct Input<'a> {
    inputmode: Option<&'a str>,
    autocomplete: Option<&'a str>,
    placeholder: Option<&'a str>,
    maxlength: u32,
}

/// A required text input with its label and, when it has one, its problem right below it.
fn text_input(
    form: &str,
    name: &str,
    label: &str,
    value: &str,
    input: Input<'_>,
    error: Option<&str>,
) -> Markup {
    let id = format!("{form}-{name}");
    html! {
        label for=(id) { (label) }
        input type="text" id=(id) name=(name) value=(value) inputmode=[input.inputmode]
            autocomplete=[input.autocomplete] placeholder=[input.placeholder]
            maxlength=(input.maxlength) required
            aria-invalid=[error.map(|_| "true")]
            aria-describedby=[error.map(|_| format!("{id}-err"))];
        (field_error(&id, error))
    }
}

fn select(
    form: &str,
    name: &str,
    label: &str,
    options: &[(String, String)],
    chosen: &str,
    error: Option<&str>,
) -> Markup {
    let id = format!("{form}-{name}");
    html! {
        label for=(id) { (label) }
        select id=(id) name=(name) required
            aria-invalid=[error.map(|_| "true")]
            aria-describedby=[error.map(|_| format!("{id}-err"))] {
            option value="" { "Seleccione…" }
            @for (value, text) in options {
                option value=(value) selected[value == chosen] { (text) }
            }
        }
        (field_error(&id, error))
    }
}

/// Card number, expiry and CVV. The number and CVV are never written back.
fn card_fields(form: &str, sub: Option<&Submitted>) -> Markup {
    let error = |f: &str| sub.and_then(|s| s.error(f));
    let value = |f: &str| sub.map_or("", |s| s.value(f));
    let numeric = |autocomplete, maxlength| Input {
        inputmode: Some("numeric"),
        autocomplete: Some(autocomplete),
        placeholder: None,
        maxlength,
    };
    let expiry = Input {
        placeholder: Some("MM/AA"),
        ..numeric("cc-exp", 7)
    };
    html! {
        (text_input(form, "number", "Número de tarjeta", "", numeric("cc-number", 23), error("number")))
        div class="row" {
            div { (text_input(form, "expiry", "Vencimiento (MM/AA)", value("expiry"), expiry, error("expiry"))) }
            div { (text_input(form, "cvv", "Código de seguridad (CVV)", "", numeric("cc-csc", 4), error("cvv"))) }
        }
    }
}

fn bank_fields(form: &str, sub: Option<&Submitted>) -> Markup {
    let error = |f: &str| sub.and_then(|s| s.error(f));
    let value = |f: &str| sub.map_or("", |s| s.value(f));
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(c, n)| (c.to_string(), n.to_string()))
            .collect()
    };
    let account = Input {
        inputmode: Some("numeric"),
        autocomplete: Some("off"),
        placeholder: None,
        maxlength: 24,
    };
    let holder = Input {
        inputmode: None,
        autocomplete: None,
        placeholder: Some("12.345.678-5"),
        maxlength: 14,
    };
    html! {
        (select(form, "bankCode", "Banco", &pairs(BANKS), value("bankCode"), error("bankCode")))
        (select(form, "accountType", "Tipo de cuenta", &pairs(ACCOUNT_TYPES), value("accountType"), error("accountType")))
        (text_input(form, "accountNumber", "Número de cuenta", value("accountNumber"), account, error("accountNumber")))
        (text_input(form, "holderRut", "RUT del titular de la cuenta", value("holderRut"), holder, error("holderRut")))
    }
}

fn notice(notice: &Notice, view: &View<'_>) -> Markup {
    let data = view.data;
    let (class, title, text) = match notice {
        Notice::Activated => (
            "ok",
            "¡Listo! Su mandato quedó activo".to_string(),
            format!(
                "{} realizará los cargos con el medio de pago que registró.",
                data.commerce.name
            ),
        ),
        Notice::AlreadyActive => (
            "",
            "Este mandato ya está activo".to_string(),
            "El enlace ya fue usado para registrar un medio de pago. Aquí puede revisar sus \
             cuotas y pagar las que estén pendientes."
                .to_string(),
        ),
        Notice::Paid {
            installment,
            authorization_code,
            ..
        } => (
            "ok",
            "Pago aprobado".to_string(),
            format!(
                "La cuota {installment} quedó pagada. Código de autorización: {authorization_code}."
            ),
        ),
        Notice::CardChanged { retried } => (
            "ok",
            "Tarjeta actualizada".to_string(),
            match retried {
                0 => "Los próximos cargos se harán a su nueva tarjeta.".to_string(),
                1 => "Los próximos cargos se harán a su nueva tarjeta. La cuota rechazada se \
                      volverá a cobrar en el próximo proceso de cobro."
                    .to_string(),
                n => format!(
                    "Los próximos cargos se harán a su nueva tarjeta. Las {n} cuotas rechazadas \
                     se volverán a cobrar en el próximo proceso de cobro."
                ),
            },
        ),
        Notice::Info(text) => ("", "Aviso".to_string(), text.clone()),
        Notice::Problem(text) => ("bad", "No pudimos continuar".to_string(), text.clone()),
    };
    html! {
        section class={ "notice " (class) } role="status" {
            h2 { (title) }
            p { (text) }
            @if let Notice::Paid { receipt, .. } = notice {
                p { a href=(receipt_url(view.token, receipt)) { "Ver e imprimir el comprobante" } }
            }
        }
    }
}

fn mandate_section(view: &View<'_>) -> Markup {
    let m = &view.data.mandate;
    let mut rows: Vec<(&str, String)> = vec![
        ("Comercio", view.data.commerce.name.clone()),
        ("N° de mandato", m.external_id.clone()),
        ("Tipo", spanish::mandate_type(m.mandate_type).to_string()),
        ("Montos", view.data.summary()),
    ];
    if let Some(method) = m.enrolled_method.as_ref().map(StoredJson::value)
        && let Some(instrument) = method["instrument"].as_str()
    {
        let name = method["id"]
            .as_i64()
            .and_then(PaymentMethod::from_id)
            .map_or("", spanish::method);
        rows.push(("Medio de pago", format!("{name} · {instrument}")));
    }
    if m.state == MandateState::Pending {
        let expires = chrono::DateTime::parse_from_rfc3339(&m.magic_link_expires_at)
            .map(|t| spanish::date(t.with_timezone(&view.time_zone).date_naive()))
            .unwrap_or_default();
        rows.push(("Enlace válido hasta", expires));
    }
    html! {
        section {
            h2 { (m.name) }
            @if let Some(detail) = m.detail.as_deref().filter(|d| !d.is_empty()) {
                p { (detail) }
            }
            dl {
                @for (label, value) in &rows {
                    dt { (label) }
                    dd { (value) }
                }
            }
        }
    }
}

fn schedule_section(view: &View<'_>) -> Markup {
    let dates = &view.data.charge_dates;
    html! {
        section {
            h2 { "Calendario de cuotas" }
            @if view.data.installments.is_empty() {
                p class="muted" {
                    "Aún no hay cuotas. El comercio las informará a medida que correspondan."
                }
            } @else {
                table {
                    thead { tr { th { "Cuota" } th { "Vence" } th class="amount" { "Monto" } th { "Estado" } } }
                    tbody {
                        @for i in &view.data.installments {
                            tr {
                                td { (i.external_id) }
                                td { (spanish::due_and_charge_date(i.due_date, dates.of(i.due_date))) }
                                td class="amount" { (spanish::money(&i.amount)) }
                                td {
                                    span class={ "state s" (i.state.id()) } { (spanish::installment_state(i.state)) }
                                    @if i.state == InstallmentState::Paid {
                                        " "
                                        a href=(receipt_url(view.token, &i.id)) { "Comprobante" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn portal_section(view: &View<'_>) -> Markup {
    if !view.offered.cards && !view.offered.hosted_cards {
        return html! {};
    }
    let due: Vec<&InstallmentRow> = view
        .data
        .installments
        .iter()
        .filter(|i| payable(i, view.today))
        .collect();
    if due.is_empty() {
        return html! {};
    }
    html! {
        section id="pagar" {
            h2 { "Cuotas por pagar" }
            p class="muted" { "Puede pagar ahora con tarjeta las cuotas vencidas o rechazadas." }
            @for i in due {
                (portal_installment(view, i))
            }
        }
    }
}

/// One installment the customer can pay now, folded, with its card form.
fn portal_installment(view: &View<'_>, i: &InstallmentRow) -> Markup {
    let form = format!("p-{}", i.id);
    let sub = view
        .payment
        .as_ref()
        .filter(|(id, _)| *id == i.id)
        .map(|(_, sub)| sub);
    let mut status = spanish::installment_state(i.state).to_string();
    if let Some(code) = &i.rejection_code {
        status = format!("{status}: {}", spanish::rejection(code));
    }
    let methods: Vec<(String, String)> = view
        .data
        .card_methods()
        .into_iter()
        .map(|m| (m.id().to_string(), spanish::method(m).to_string()))
        .collect();
    let chosen = sub
        .map(|s| s.value("method").to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| methods[0].0.clone());
    html! {
        details class="card" id=(form) open[sub.is_some()] {
            summary {
                span class="due" {
                    span { "Cuota " (i.external_id) " · vence el " (spanish::date(i.due_date)) }
                    span { (spanish::money(&i.amount)) }
                }
            }
            p class="muted" { (status) }
            @if i.amount.currency() == Currency::Clf {
                p {
                    "Esta cuota está expresada en UF. No puede pagarse en línea sin el valor de \
                     la UF del día del pago; el comercio la cobrará en pesos en su fecha o puede \
                     contactarlo para pagarla."
                }
            } @else {
                @if let Some(message) = sub.and_then(|s| s.error("form")) {
                    p class="err" role="alert" { (message) }
                }
                @if view.offered.hosted_cards {
                    // Webpay Plus: the card is typed on Transbank's page, never here.
                    form method="post" action={ "/link/" (view.token) "/pay/" (i.id) } {
                        p class="muted" {
                            "Pagará en Webpay, el sitio seguro de Transbank, con tarjeta de \
                             crédito, débito o prepago."
                        }
                        button type="submit" { "Pagar en Webpay " (spanish::money(&i.amount)) }
                    }
                } @else {
                    form method="post" action={ "/link/" (view.token) "/pay/" (i.id) } autocomplete="on" {
                        (select(&form, "method", "Tipo de tarjeta", &methods, &chosen, sub.and_then(|s| s.error("method"))))
                        (card_fields(&form, sub))
                        button type="submit" { "Pagar ahora " (spanish::money(&i.amount)) }
                    }
                }
            }
        }
    }
}

/// The terms as the customer reads them, and the box that accepts them.
fn terms_acceptance(terms: &str, accept_id: &str, text: &str, error: Option<&str>) -> Markup {
    html! {
        div class="terms" tabindex="0" aria-label="Términos del mandato" { (terms) }
        div class="check" {
            input type="checkbox" id=(accept_id) name="accept" value="1" required
                aria-invalid=[error.map(|_| "true")]
                aria-describedby=[error.map(|_| format!("{accept_id}-err"))];
            label for=(accept_id) { (text) }
        }
        (field_error(accept_id, error))
    }
}

fn activation_section(view: &View<'_>) -> Markup {
    let allowed = view.data.methods();
    let methods: Vec<PaymentMethod> = allowed
        .iter()
        .copied()
        .filter(|m| view.offered.allows(*m))
        .collect();
    let hosted = view.offered.hosted_cards && allowed.iter().any(|m| m.is_card());
    // Fintoc enrols the mandate's bank method: a mandate that allows one gets the bank's button.
    let hosted_bank = view.offered.hosted_bank && view.data.hosted_bank_method().is_some();
    let hosted = hosted || hosted_bank;
    let waiting_for_bank = hosted_bank && view.offered.bank_validating;
    let signature_gated = view.data.mandate.activation_mode == ActivationMode::Signature;
    let submitted_method = view.activation.as_ref().map(|(m, _)| *m);
    html! {
        section id="activar" {
            h2 { "Elija su medio de pago" }
            @if allowed.is_empty() {
                p { "Este mandato no tiene medios de pago habilitados. Contacte al comercio." }
            } @else if waiting_for_bank && methods.is_empty() && !view.offered.hosted_cards {
                p {
                    "Ya autorizó el cargo automático en su banco; este mandato se activará \
                     cuando su banco lo confirme."
                }
            } @else if methods.is_empty() && !hosted {
                p {
                    "Los medios de pago de este mandato aún no se pueden registrar en línea. \
                     Contacte al comercio."
                }
            } @else {
                p class="muted" {
                    "Registre el medio con el que se pagarán las cuotas y acepte los términos \
                     del mandato."
                }
                @if signature_gated {
                    (signature_step(view.data.signing.as_ref()))
                }
                @if view.offered.hosted_cards && allowed.iter().any(|m| m.is_card()) {
                    (hosted_card_form(view, signature_gated))
                }
                @if let Some(method) = view.data.hosted_bank_method().filter(|_| hosted_bank && !waiting_for_bank) {
                    (hosted_bank_form(view, method))
                }
                @for (index, method) in methods.iter().enumerate() {
                    @let open = match submitted_method {
                        Some(m) => m == method.id(),
                        None => index == 0 && !hosted,
                    };
                    (activation_form(view, *method, open, signature_gated))
                }
            }
        }
    }
}

/// The enrolment form of one method, folded unless it is the one in play.
fn activation_form(
    view: &View<'_>,
    method: PaymentMethod,
    open: bool,
    signature_gated: bool,
) -> Markup {
    let form = format!("m{}", method.id());
    let sub = view
        .activation
        .as_ref()
        .filter(|(m, _)| *m == method.id())
        .map(|(_, sub)| sub);
    let terms = view.data.terms(method);
    html! {
        details id=(form) open[open] {
            summary { (spanish::method(method)) }
            @if let Some(message) = sub.and_then(|s| s.error("form")) {
                p class="err" role="alert" style="padding:0 14px" { (message) }
            }
            form method="post" action={ "/link/" (view.token) } autocomplete="on" {
                input type="hidden" name="method" value=(method.id());
                input type="hidden" name="termsSha256" value=(sha256_hex(&terms));
                @if method.is_card() {
                    (card_fields(&form, sub))
                } @else {
                    (bank_fields(&form, sub))
                }
                (terms_acceptance(&terms, &format!("{form}-accept"), "He leído y acepto los términos del mandato.", sub.and_then(|s| s.error("accept"))))
                button type="submit" {
                    @if signature_gated { "Autorizar y continuar a la firma" } @else { "Autorizar y activar" }
                }
            }
        }
    }
}

/// A signature-gated mandate: the signature step that follows the enrolment, and where the
/// customer's latest signature stands.
fn signature_step(signing: Option<&Signing>) -> Markup {
    html! {
        p class="muted" id="firma" {
            "Este mandato requiere su firma electrónica: después de registrar su medio de pago, \
             le llevaremos a firmar el documento del mandato. Confirmará su identidad con su RUT \
             y un código de un solo uso, y el mandato quedará activo cuando lo firme."
        }
        @match signing {
            None => {}
            Some(Signing::Open { token }) => {
                p class="notice" role="status" {
                    "Tiene una firma pendiente. "
                    a href={ "/sign/" (token) } { "Continuar con la firma del mandato" }
                    ". Si registra otro medio de pago, esa firma se reemplaza por una nueva."
                }
            }
            Some(Signing::Sealing) => {
                p class="notice" role="status" {
                    "Recibimos su firma y estamos sellando el documento del mandato; quedará \
                     activo en unos momentos."
                }
            }
            Some(Signing::Ended(failure)) => {
                p class="notice bad" role="status" {
                    (ended_reason(*failure))
                    " El mandato sigue pendiente: puede comenzar de nuevo registrando su medio \
                     de pago."
                }
            }
        }
    }
}

fn ended_reason(failure: ActivationFailure) -> &'static str {
    match failure {
        ActivationFailure::SignatureRejected => "Usted rechazó la firma del mandato.",
        ActivationFailure::SignatureExpired => "El plazo para firmar el mandato venció.",
        ActivationFailure::SignatureCancelled => "El proceso de firma del mandato fue cancelado.",
    }
}

/// Where a paid installment's receipt is.
fn receipt_url(token: &str, installment: &str) -> String {
    format!("/link/{token}/comprobante/{installment}")
}

/// A rejection in the customer's words: what happened and what they can do about it.
fn rejection_explained(code: Option<&str>) -> &'static str {
    match code.and_then(mandato_core::domain::state::RejectionCode::parse) {
        Some(mandato_core::domain::state::RejectionCode::InsufficientFunds) => {
            "Su banco informó que no había saldo o cupo suficiente al momento del cobro."
        }
        Some(mandato_core::domain::state::RejectionCode::CardDeclined) => {
            "El banco emisor de su tarjeta no autorizó el cargo. Puede consultar a su banco o \
             registrar otra tarjeta."
        }
        Some(mandato_core::domain::state::RejectionCode::ExpiredCard) => {
            "La tarjeta registrada está vencida. Registre su tarjeta nueva para que podamos \
             cobrar."
        }
        Some(mandato_core::domain::state::RejectionCode::AccountClosed) => {
            "La cuenta bancaria registrada está cerrada. Registre otro medio de pago."
        }
        Some(mandato_core::domain::state::RejectionCode::BankValidationFailed) => {
            "El banco no validó el cargo en su cuenta. Consulte a su banco o registre una \
             tarjeta."
        }
        None => "El cargo no fue autorizado.",
    }
}

/// Why an installment was rejected and what happens next. A hard decline that is due for a
/// retry anyway was given a new instrument since, so the old reason is history by then.
fn rejection_and_next_step(i: &InstallmentRow) -> String {
    use mandato_core::domain::state::RejectionCode;
    let code = i.rejection_code.as_deref();
    let hard = code
        .and_then(RejectionCode::parse)
        .is_some_and(|c| c != RejectionCode::InsufficientFunds);
    let retry = i.next_retry_date.as_deref().filter(|_| i.retry_scheduled);
    // A retry due on a date already attempted goes to the next run.
    let when = retry.map(|date| {
        let attempted = i
            .last_attempt_date
            .as_deref()
            .is_some_and(|last| last >= date);
        if attempted {
            "en el próximo proceso de cobro".to_string()
        } else {
            NaiveDate::parse_from_str(date, "%Y-%m-%d")
                .map(|d| format!("el {}", spanish::date(d)))
                .unwrap_or_else(|_| format!("el {date}"))
        }
    });
    match (when, hard) {
        (Some(when), true) => format!(
            "El cobro anterior fue rechazado: {} Con su nuevo medio de pago lo volveremos a \
             intentar {when}.",
            spanish::rejection(code.unwrap_or_default())
        ),
        (Some(when), false) => format!(
            "{} Volveremos a intentar el cobro {when}.",
            rejection_explained(code)
        ),
        (None, _) => format!(
            "{} No volveremos a intentarlo con el medio de pago registrado.",
            rejection_explained(code)
        ),
    }
}

/// An active mandate with rejected charges: why, when the next try is, and the ways out
/// (pay now in the portal, or replace the card); otherwise the card change, folded.
fn rejected_section(view: &View<'_>) -> Markup {
    let data = view.data;
    if data.mandate.state != MandateState::Active {
        return html! {};
    }
    let rejected: Vec<&InstallmentRow> = data
        .installments
        .iter()
        .filter(|i| i.state == InstallmentState::Rejected)
        .collect();
    html! {
        @if !rejected.is_empty() {
            section id="rechazo" class="notice bad" {
                h2 { "Un cobro fue rechazado" }
                @for i in &rejected {
                    p {
                        strong { "Cuota " (i.external_id) " · " (spanish::money(&i.amount)) }
                        " (vence el " (spanish::date(i.due_date)) "): " (rejection_and_next_step(i))
                    }
                }
                p {
                    "Puede pagarla ahora en "
                    a href="#pagar" { "Cuotas por pagar" }
                    ", o registrar otra tarjeta: la usaremos desde ahora y la cuota rechazada se \
                     volverá a cobrar en el próximo proceso de cobro."
                }
            }
        }
        (card_change_form(view, !rejected.is_empty()))
    }
}

/// The form that replaces an active mandate's card.
fn card_change_form(view: &View<'_>, after_rejection: bool) -> Markup {
    let methods = view.data.card_change_methods();
    if !methods.is_empty() && view.offered.hosted_cards {
        return hosted_card_change(view, methods[0], after_rejection);
    }
    if methods.is_empty() || !view.offered.cards {
        return html! {};
    }
    let sub = view.card_update.as_ref();
    let options: Vec<(String, String)> = methods
        .iter()
        .map(|m| (m.id().to_string(), spanish::method(*m).to_string()))
        .collect();
    let chosen = sub
        .map(|s| s.value("method").to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| options[0].0.clone());
    let method = methods
        .iter()
        .copied()
        .find(|m| m.id().to_string() == chosen)
        .unwrap_or(methods[0]);
    let terms = view.data.terms(method);
    html! {
        section id="tarjeta" class="noprint" {
            details open[after_rejection || sub.is_some()] {
                summary {
                    @if after_rejection { "Registrar otra tarjeta" } @else { "¿Cambió su tarjeta? Actualícela aquí" }
                }
                @if let Some(message) = sub.and_then(|s| s.error("form")) {
                    p class="err" role="alert" { (message) }
                }
                form method="post" action={ "/link/" (view.token) "/tarjeta" } autocomplete="on" {
                    input type="hidden" name="termsSha256" value=(sha256_hex(&terms));
                    (select("t", "method", "Tipo de tarjeta", &options, &chosen, sub.and_then(|s| s.error("method"))))
                    (card_fields("t", sub))
                    (terms_acceptance(&terms, "t-accept", "Acepto que los cargos de este mandato se hagan a esta tarjeta.", sub.and_then(|s| s.error("accept"))))
                    button type="submit" { "Guardar la nueva tarjeta" }
                }
            }
        }
    }
}

/// The card methods' enrolment on Webpay's page (Transbank Oneclick): the terms, their
/// acceptance and a button; the card itself is typed on Webpay, never here. The method
/// follows the card Transbank reports (credit, debit or prepaid).
fn hosted_card_form(view: &View<'_>, signature_gated: bool) -> Markup {
    let cards: Vec<PaymentMethod> = view
        .data
        .methods()
        .into_iter()
        .filter(|m| m.is_card())
        .collect();
    let Some(first) = cards.first().copied() else {
        return html! {};
    };
    let terms = view.data.terms(first);
    let names: Vec<&str> = cards.iter().map(|m| spanish::method(*m)).collect();
    let sub = view
        .activation
        .as_ref()
        .filter(|(m, _)| *m == first.id())
        .map(|(_, sub)| sub);
    html! {
        details id="webpay" open {
            summary { "Tarjeta (" (names.join(", ")) ")" }
            form method="post" action={ "/link/" (view.token) "/oneclick" } {
                input type="hidden" name="termsSha256" value=(sha256_hex(&terms));
                p class="muted" {
                    "Inscribirá su tarjeta en Webpay, el sitio seguro de Transbank: allí ingresa \
                     sus datos, que nunca pasan por esta página. "
                    (ONE_CARD_PER_CUSTOMER)
                }
                (terms_acceptance(&terms, "webpay-accept", "He leído y acepto los términos del mandato.", sub.and_then(|s| s.error("accept"))))
                button type="submit" {
                    @if signature_gated { "Inscribir tarjeta y continuar a la firma" } @else { "Inscribir tarjeta" }
                }
            }
        }
    }
}

/// Transbank keeps one card per customer of a commerce: said before the customer inscribes.
const ONE_CARD_PER_CUSTOMER: &str = "Transbank guarda una tarjeta por cliente: si ya tiene \
     otra inscrita con este comercio, la nueva la reemplaza también en sus otros mandatos.";

/// The bank step on Fintoc: the terms, their acceptance and a button that opens Fintoc's
/// widget, where the customer authorizes the automatic debit at their bank.
fn hosted_bank_form(view: &View<'_>, method: PaymentMethod) -> Markup {
    let terms = view.data.terms(method);
    let sub = view
        .activation
        .as_ref()
        .filter(|(m, _)| *m == method.id())
        .map(|(_, sub)| sub);
    html! {
        details id="fintoc" open {
            summary { "Cuenta bancaria (" (spanish::method(method)) ")" }
            form method="post" action={ "/link/" (view.token) "/fintoc" } {
                input type="hidden" name="termsSha256" value=(sha256_hex(&terms));
                p class="muted" {
                    "Autorizará el cargo automático en su banco a través de Fintoc: sus datos \
                     de acceso al banco nunca pasan por esta página."
                }
                (terms_acceptance(&terms, "fintoc-accept", "He leído y acepto los términos del mandato.", sub.and_then(|s| s.error("accept"))))
                button type="submit" { "Autorizar con mi banco" }
            }
        }
    }
}

/// The script that opens Fintoc's widget with what the page holds; its hash is the page's
/// only inline script permission. `onSuccess` and `onExit` bring the customer back here.
pub const FINTOC_SCRIPT: &str = "(function(){var d=document.getElementById('fintoc').dataset;\
history.replaceState(null,'',d.returned);\
var w=Fintoc.create({holderType:'individual',product:'subscriptions',publicKey:d.key,\
widgetToken:d.token,onSuccess:function(){location.assign(d.returned);},\
onExit:function(){location.assign(d.back);}});w.open();})();";

/// What the widget page holds.
pub struct FintocWidget<'a> {
    pub script: &'a str,
    pub public_key: &'a str,
    pub widget_token: &'a str,
    pub returned: &'a str,
    pub back: &'a str,
    pub commerce: &'a str,
}

/// The page that opens Fintoc's widget; its link does the same as `onExit` without
/// JavaScript.
pub fn fintoc_widget_page(w: &FintocWidget<'_>) -> String {
    let header = html! {
        div class="who" { (w.commerce) }
        h1 { "Autorizar con su banco" }
    };
    let body = html! {
        div id="fintoc" data-key=(w.public_key) data-token=(w.widget_token)
            data-returned=(w.returned) data-back=(w.back) {
            p { "Abrimos Fintoc para que autorice el cargo automático en su banco." }
            p { a href=(w.back) { "Volver al mandato" } }
        }
        script src=(w.script) {}
        script { (PreEscaped(FINTOC_SCRIPT)) }
    };
    pages::document(&LOOK, "Autorizar con su banco", header, body)
}

/// Replacing an active mandate's card through a new Oneclick inscription.
fn hosted_card_change(view: &View<'_>, method: PaymentMethod, after_rejection: bool) -> Markup {
    let terms = view.data.terms(method);
    let sub = view.card_update.as_ref();
    html! {
        section id="tarjeta" class="noprint" {
            details open[after_rejection || sub.is_some()] {
                summary {
                    @if after_rejection { "Registrar otra tarjeta" } @else { "¿Cambió su tarjeta? Actualícela aquí" }
                }
                form method="post" action={ "/link/" (view.token) "/oneclick" } {
                    input type="hidden" name="termsSha256" value=(sha256_hex(&terms));
                    p class="muted" { "La nueva tarjeta se inscribe en Webpay, el sitio seguro de Transbank. " (ONE_CARD_PER_CUSTOMER) }
                    (terms_acceptance(&terms, "t-accept", "Acepto que los cargos de este mandato se hagan a esta tarjeta.", sub.and_then(|s| s.error("accept"))))
                    button type="submit" { "Inscribir la nueva tarjeta" }
                }
            }
        }
    }
}

/// The script that sends the customer on to Webpay; its hash is the page's only script
/// permission (`WEBPAY_SCRIPT_CSP`).
pub const WEBPAY_SCRIPT: &str = "document.getElementById('webpay').submit();";

/// What the customer goes to Webpay for, and the field Transbank's token travels in.
#[derive(Clone, Copy)]
pub enum WebpayErrand {
    /// A Oneclick inscription: `TBK_TOKEN`.
    Inscription,
    /// A Webpay Plus payment: `token_ws`.
    Payment,
}

/// The page that posts Transbank's token to Webpay. It submits itself; the button does the
/// same without JavaScript.
pub fn webpay_redirect_page(
    url_webpay: &str,
    errand: WebpayErrand,
    tbk_token: &str,
    commerce: &str,
) -> String {
    let (field, text) = match errand {
        WebpayErrand::Inscription => (
            "TBK_TOKEN",
            "Le llevamos a Webpay para que inscriba su tarjeta.",
        ),
        WebpayErrand::Payment => ("token_ws", "Le llevamos a Webpay para que pague la cuota."),
    };
    let header = html! {
        div class="who" { (commerce) }
        h1 { "Continuar a Webpay" }
    };
    let body = html! {
        form id="webpay" method="post" action=(url_webpay) {
            input type="hidden" name=(field) value=(tbk_token);
            p { (text) }
            button type="submit" { "Continuar a Webpay" }
        }
        script { (PreEscaped(WEBPAY_SCRIPT)) }
    };
    pages::document(&LOOK, "Continuar a Webpay", header, body)
}

/// The receipt of a paid installment: what was paid, when (in the installation's zone, named),
/// how (the method, the instrument masked) and the references to quote. Printable as it is.
/// A paid installment, and whether the charging engine charged it with the instrument the
/// mandate holds now (rather than a card typed in the portal, a payment the merchant recorded,
/// or a card replaced since).
pub struct Receipt<'a> {
    pub installment: &'a InstallmentRow,
    pub current_instrument: bool,
    /// A UF installment charged in pesos: the UF value of its charge's date, when known.
    pub uf_value: Option<String>,
    /// A payment recorded by hand with a file as its evidence: the file (staff read it from
    /// the installment's page in the staff UI).
    pub evidence_file: Option<EvidenceFileMeta>,
}

pub fn receipt_page(
    data: &Loaded,
    receipt: &Receipt<'_>,
    token: &str,
    zone: chrono_tz::Tz,
) -> String {
    let installment = receipt.installment;
    let evidence = installment.payment.as_ref().map(StoredJson::value);
    // A payment the merchant recorded was made on the date staff entered, not when it was
    // recorded; the evidence has a date and no time.
    let recorded_date = evidence
        .as_ref()
        .and_then(|p| p["date"].as_str())
        .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok());
    let paid_at = match recorded_date {
        Some(date) => spanish::date(date),
        None => charged_at(installment, zone),
    };
    let header = html! {
        div class="who" { (data.commerce.name) }
        h1 { "Comprobante de pago" }
    };
    let mut rows: Vec<(&str, String)> = vec![
        ("Monto pagado", paid_amount(receipt)),
        ("Cuota", installment.external_id.clone()),
        ("Vencimiento", spanish::date(installment.due_date)),
        ("Fecha del pago", paid_at),
        ("Medio de pago", paid_with(data, receipt)),
        (
            "Código de autorización",
            installment
                .authorization_code
                .clone()
                .unwrap_or_else(|| "—".to_string()),
        ),
        ("Referencia", installment.id.clone()),
    ];
    if let Some(file) = &receipt.evidence_file {
        // After the method and its reference: the document that shows the payment.
        rows.push((
            "Respaldo adjunto",
            spanish::attached_file(&file.name, &file.content_type, file.size_bytes),
        ));
    }
    rows.extend([
        (
            "Mandato",
            format!("{} · {}", data.mandate.name, data.mandate.external_id),
        ),
        (
            "Comercio",
            format!(
                "{} (RUT {})",
                data.commerce.name,
                mandato_core::domain::rut::dotted(&data.commerce.code)
            ),
        ),
        (
            "Cliente",
            format!("{} {}", data.customer.first_name, data.customer.last_name),
        ),
    ]);
    let body = html! {
        section class="receipt" {
            dl {
                @for (label, value) in &rows {
                    dt { (label) }
                    dd { (value) }
                }
            }
        }
        p class="noprint muted" {
            "Para guardarlo, use la opción Imprimir de su navegador (o «Guardar como PDF»). "
            a href={ "/link/" (token) } { "Volver a su mandato" }
        }
    };
    let title = format!("Comprobante · cuota {}", installment.external_id);
    pages::document(&LOOK, &title, header, body)
}

/// When the installment became PAID, in the installation's zone, named.
fn charged_at(installment: &InstallmentRow, zone: chrono_tz::Tz) -> String {
    chrono::DateTime::parse_from_rfc3339(&installment.state_at)
        .map(|t| {
            let local = t.with_timezone(&zone);
            format!(
                "{} a las {} (hora de {}, UTC{})",
                spanish::date(local.date_naive()),
                local.format("%H:%M"),
                zone.name(),
                local.format("%:z")
            )
        })
        .unwrap_or_else(|_| installment.state_at.clone())
}

/// What was paid: a UF installment charged in pesos shows both, and the UF value used.
fn paid_amount(receipt: &Receipt<'_>) -> String {
    let installment = receipt.installment;
    let amount = spanish::money(&installment.amount);
    let clp = installment
        .charged_clp
        .as_deref()
        .and_then(|clp| rust_decimal::Decimal::from_str(clp).ok())
        .and_then(|clp| Money::from_decimal(clp, Currency::Clp).ok());
    match (clp, &receipt.uf_value) {
        (Some(clp), Some(uf)) => format!(
            "{} ({amount}, con la UF a {})",
            spanish::money(&clp),
            spanish::uf_value(uf)
        ),
        (Some(clp), None) => format!("{} ({amount})", spanish::money(&clp)),
        (None, _) => amount,
    }
}

/// How an installment was paid: a manual payment's evidence; a charge of the engine with the
/// current instrument by its method and that instrument, masked; otherwise by its method only
/// (a portal card's number is never kept).
fn paid_with(data: &Loaded, receipt: &Receipt<'_>) -> String {
    let installment = receipt.installment;
    let payment = installment.payment.as_ref().map(StoredJson::value);
    if let Some(method) = payment.as_ref().and_then(|p| p["method"].as_str()) {
        return format!(
            "{}, registrado por el comercio",
            spanish::manual_method(method)
        );
    }
    let Some(method) = installment
        .payment_method_id
        .and_then(PaymentMethod::from_id)
    else {
        return "—".to_string();
    };
    let enrolled_method = data.mandate.enrolled_method.as_ref().map(StoredJson::value);
    let enrolled = enrolled_method
        .as_ref()
        .filter(|m| receipt.current_instrument && m["id"].as_i64() == Some(method.id()))
        .and_then(|m| m["instrument"].as_str());
    match enrolled {
        Some(instrument) => format!("{} · {instrument}", spanish::method(method)),
        None => spanish::method(method).to_string(),
    }
}

/// The page of a mandate: activation forms while it awaits activation, and the payment
/// portal before and after.
pub fn mandate_page(view: &View<'_>) -> String {
    let data = view.data;
    let title = if view.activation_open {
        "Autorice su mandato de pago"
    } else {
        "Su mandato de pago"
    };
    let header = html! {
        div class="who" { (data.commerce.name) }
        h1 { (title) }
        p class="muted" { "Hola, " (data.customer.first_name) "." }
    };
    let sent_back = view
        .activation
        .as_ref()
        .map(|(m, sub)| {
            let hosted = view.offered.hosted_cards
                && PaymentMethod::from_id(*m).is_some_and(|m| m.is_card());
            let anchor = if hosted {
                "webpay".to_string()
            } else {
                format!("m{m}")
            };
            (anchor, sub)
        })
        .or_else(|| {
            view.payment
                .as_ref()
                .map(|(i, sub)| (format!("p-{i}"), sub))
        })
        .or_else(|| {
            view.card_update
                .as_ref()
                .map(|sub| ("tarjeta".to_string(), sub))
        })
        .filter(|(_, sub)| !sub.errors.is_empty());
    let body = html! {
        @if view.sandbox {
            (PreEscaped(sandbox_banner(view.offered)))
        }
        @if let Some(n) = &view.notice {
            (notice(n, view))
        }
        @if let Some((anchor, _)) = &sent_back {
            section class="notice bad" role="alert" {
                h2 { "No pudimos continuar" }
                p {
                    a href={ "#" (anchor) } { "Revise los datos marcados en el formulario" }
                    "; no se guardó ni se cobró nada."
                }
            }
        }
        (mandate_section(view))
        (rejected_section(view))
        (portal_section(view))
        @if view.activation_open {
            (activation_section(view))
        }
        (schedule_section(view))
    };
    let page_title = format!("{} · {}", data.commerce.name, data.mandate.name);
    pages::document(&LOOK, &page_title, header, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mandato_core::domain::money::{Currency, Money};
    use mandato_core::domain::state::MandateType;
    use mandato_core::secret::Secret;

    /// A name that breaks out of the markup, in text and in a quoted attribute alike, unless
    /// it is escaped.
    const HOSTILE: &str = r#"<script>"'&"#;
    /// `HOSTILE` escaped: a single quote is harmless, attribute values being double-quoted.
    const ESCAPED: &str = "&lt;script&gt;&quot;'&amp;";

    fn rejected(code: &str, retry: Option<&str>, last_attempt: &str) -> InstallmentRow {
        InstallmentRow {
            seq: 1,
            id: "ins_1".into(),
            mandate_seq: 1,
            external_id: "c1".into(),
            amount: Money::parse(&serde_json::Number::from(15000), Currency::Clp).unwrap(),
            due_date: NaiveDate::from_ymd_opt(2026, 11, 20).unwrap(),
            state: InstallmentState::Rejected,
            state_at: "2026-11-20T09:00:00.000Z".into(),
            attempts: 1,
            payment_method_id: Some(3),
            authorization_code: None,
            rejection_code: Some(code.into()),
            rejection_message: None,
            payment: None,
            last_attempt_date: Some(last_attempt.into()),
            next_retry_date: retry.map(str::to_string),
            retry_scheduled: retry.is_some(),
            first_rejected_date: Some("2026-11-20".into()),
            forced_outcome: None,
            charged_clp: None,
        }
    }

    #[test]
    fn a_rejection_says_why_and_what_happens_next() {
        let soft = rejection_and_next_step(&rejected(
            "INSUFFICIENT_FUNDS",
            Some("2026-11-21"),
            "2026-11-20",
        ));
        assert!(soft.starts_with("Su banco informó"), "{soft}");
        assert!(soft.ends_with("el cobro el 21-11-2026."), "{soft}");

        let hard = rejection_and_next_step(&rejected("EXPIRED_CARD", None, "2026-11-20"));
        assert!(
            hard.starts_with("La tarjeta registrada está vencida"),
            "{hard}"
        );
        assert!(hard.ends_with("con el medio de pago registrado."), "{hard}");

        // A hard decline due for a retry has a new card; today's run already tried it.
        let replaced =
            rejection_and_next_step(&rejected("EXPIRED_CARD", Some("2026-11-20"), "2026-11-20"));
        assert_eq!(
            replaced,
            "El cobro anterior fue rechazado: La tarjeta está vencida. Con su nuevo medio de \
             pago lo volveremos a intentar en el próximo proceso de cobro."
        );
    }

    /// A pending mandate whose commerce, customer and mandate carry `HOSTILE` names.
    fn hostile_mandate() -> Loaded {
        Loaded {
            mandate: MandateRow {
                seq: 1,
                id: "man_1".into(),
                commerce_id: 1,
                customer_seq: 1,
                external_id: HOSTILE.into(),
                mandate_type: MandateType::Permanent,
                state: MandateState::Pending,
                name: HOSTILE.into(),
                detail: Some(HOSTILE.into()),
                terminate_when_charged: false,
                charges: StoredJson::from_value(&serde_json::json!({
                    "currencyId": "CLP", "amount": 15000, "periodicity": "MONTHLY"
                })),
                payment_methods: vec![PaymentMethod::CreditCard.id(), PaymentMethod::Pac.id()],
                metadata: None,
                url_callback: None,
                url_activation_webhook: None,
                url_payment_webhook: None,
                magic_link_token: "tok".into(),
                magic_link_expires_at: "2026-12-01T12:00:00.000Z".into(),
                enrolled_method: None,
                cancel_description: None,
                created_at: "2026-11-20T09:00:00.000Z".into(),
                updated_at: "2026-11-20T09:00:00.000Z".into(),
                activation_mode: ActivationMode::Direct,
            },
            commerce: Commerce {
                id: 1,
                code: "76086428-5".into(),
                name: HOSTILE.into(),
                channels: None,
                payment_methods: vec![PaymentMethod::CreditCard, PaymentMethod::Pac],
                webhook_secret: Secret::new("whsec".into()),
                authorization_required: false,
                password_hash: String::new(),
                activation_mode: ActivationMode::Direct,
            },
            customer: CustomerRow {
                seq: 1,
                id: "cus_1".into(),
                commerce_id: 1,
                user_id: "u1".into(),
                rut: "11111111-1".into(),
                first_name: HOSTILE.into(),
                last_name: HOSTILE.into(),
                second_last_name: None,
                address: None,
                email: "a@example.com".into(),
                phone: None,
                created_at: "2026-11-20T09:00:00.000Z".into(),
                updated_at: "2026-11-20T09:00:00.000Z".into(),
            },
            installments: Vec::new(),
            charge_dates: ChargeDates::default(),
            signing: None,
        }
    }

    #[test]
    fn hostile_names_and_values_come_out_escaped_in_text_and_attributes() {
        let data = hostile_mandate();
        // The bank form sent back with a hostile holder RUT: it is written back into `value`.
        let sent_back = Submitted {
            values: HashMap::from([("holderRut".to_string(), HOSTILE.to_string())]),
            errors: vec![("holderRut".to_string(), HOSTILE.to_string())],
        };
        let view = View {
            data: &data,
            token: "tok",
            today: NaiveDate::from_ymd_opt(2026, 11, 28).unwrap(),
            time_zone: chrono_tz::America::Santiago,
            notice: Some(Notice::Info(HOSTILE.into())),
            activation_open: true,
            activation: Some((PaymentMethod::Pac.id(), sent_back)),
            payment: None,
            card_update: None,
            sandbox: false,
            offered: Offered::ALL,
        };
        let page = mandate_page(&view);
        assert!(!page.contains("<script>"), "{page}");
        assert!(
            page.contains(&format!("<title>{ESCAPED} · {ESCAPED}</title>")),
            "{page}"
        );
        assert!(
            page.contains(&format!("<div class=\"who\">{ESCAPED}</div>")),
            "{page}"
        );
        assert!(page.contains(&format!("Hola, {ESCAPED}.")), "{page}");
        assert!(page.contains(&format!("<h2>{ESCAPED}</h2>")), "{page}");
        assert!(page.contains(&format!("<dd>{ESCAPED}</dd>")), "{page}");
        assert!(page.contains(&format!(
            "<p class=\"err\" id=\"m5-holderRut-err\">{ESCAPED}</p>"
        )));
        assert!(
            page.contains(&format!(
                "id=\"m5-holderRut\" name=\"holderRut\" value=\"{ESCAPED}\""
            )),
            "{page}"
        );

        let mut paid = rejected("INSUFFICIENT_FUNDS", None, "2026-11-20");
        paid.state = InstallmentState::Paid;
        paid.external_id = HOSTILE.into();
        let receipt = Receipt {
            installment: &paid,
            current_instrument: false,
            uf_value: None,
            evidence_file: Some(EvidenceFileMeta {
                seq: 1,
                id: "pef_1".into(),
                commerce_id: 1,
                mandate_seq: 1,
                name: HOSTILE.into(),
                content_type: "application/pdf".into(),
                size_bytes: 15,
                sha256: "00".into(),
                uploaded_by: "ops@example.cl".into(),
                created_at: "2026-11-20T12:00:00.000Z".into(),
            }),
        };
        let page = receipt_page(&data, &receipt, "tok", chrono_tz::America::Santiago);
        assert!(!page.contains("<script>"), "{page}");
        assert!(
            page.contains(&format!("<dd>{ESCAPED} {ESCAPED}</dd>")),
            "{page}"
        );
        assert!(page.contains(&format!("<title>Comprobante · cuota {ESCAPED}</title>")));
        assert!(
            page.contains(&format!(
                "<dt>Respaldo adjunto</dt><dd>{ESCAPED} (PDF, 15 B)</dd>"
            )),
            "{page}"
        );
    }
}
