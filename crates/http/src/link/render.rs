//! The HTML of the Magic Link pages: server-rendered, no script, inline CSS, Spanish (Chile).
//! Every interpolated value goes through [`esc`].

use std::collections::HashMap;
use std::fmt::Write as _;

use chrono::NaiveDate;
use sha2::{Digest, Sha256};

use mandato_core::domain::activation::{ActivationFailure, ActivationMode};
use mandato_core::domain::holidays::ChargeDates;
use mandato_core::domain::instrument::{ACCOUNT_TYPES, BANKS};
use mandato_core::domain::money::Currency;
use mandato_core::domain::state::{InstallmentState, MandateState, PaymentMethod};
use mandato_engine::documents::spanish::{self, TermsSubject};
use mandato_engine::records::{Commerce, CustomerRow, InstallmentRow, MandateRow, StoredJson};

/// Escapes text for HTML element content and quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

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
        spanish::terms(
            &TermsSubject {
                commerce_name: &self.commerce.name,
                commerce_code: &self.commerce.code,
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
}

/// The simulated acquirer's test instruments and what each does (`charging::simulated`), shown
/// on sandbox pages so that whoever tries the page knows what to type. Static text: nothing of
/// the mandate or the customer goes into it.
const SANDBOX_BANNER: &str = "<section class=\"sandbox\" role=\"note\" aria-label=\"Entorno de pruebas\">\
<h2>Entorno de pruebas (sandbox)</h2>\
<p>Nada se cobra de verdad. Use estos medios de prueba:</p>\
<ul>\
<li>Tarjeta terminada en <code>4242</code> o <code>1111</code> (por ejemplo <code>4242 4242 4242 4242</code>), \
vencimiento futuro, CVV <code>123</code>: aprobada.</li>\
<li>Tarjeta <code>4000 0000 0000 0002</code>: rechazada por fondos insuficientes \
(<code>INSUFFICIENT_FUNDS</code>, se reintenta a 1, 3 y 7 días).</li>\
<li>Tarjeta <code>4000 0000 0000 0069</code>: rechazada, tarjeta vencida (<code>EXPIRED_CARD</code>, sin reintento).</li>\
<li>Cuenta bancaria terminada en <code>0000</code> (por ejemplo <code>123450000</code>, banco <code>012</code>): \
en validación, pagada en la siguiente ejecución de cobro.</li>\
<li>Cuenta terminada en <code>9999</code>: en validación, rechazada en la siguiente ejecución \
(<code>BANK_VALIDATION_FAILED</code>).</li>\
<li>Tarjeta o cuenta terminada en <code>0119</code>: el emisor no la acepta al inscribirla.</li>\
</ul></section>";

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

/// A whole HTML document.
pub fn document(title: &str, header: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"es-CL\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex,nofollow\">\
         <title>{}</title><style>{CSS}</style></head><body>\
         <header>{header}</header><main>{body}</main>\
         <footer>Página segura de activación y pago. Nunca le pediremos su clave bancaria.</footer>\
         </body></html>\n",
        esc(title)
    )
}

/// A page that only says something: unknown, expired or closed links, failures.
pub fn message_page(title: &str, text: &str, commerce: Option<&str>) -> String {
    let header = match commerce {
        Some(name) => format!("<div class=\"who\">{}</div>", esc(name)),
        None => String::new(),
    };
    let body = format!(
        "<section><h1>{}</h1><p>{}</p></section>",
        esc(title),
        esc(text)
    );
    document(title, &header, &body)
}

fn field_error(s: &mut String, id: &str, error: Option<&str>) {
    if let Some(message) = error {
        let _ = write!(s, "<p class=\"err\" id=\"{id}-err\">{}</p>", esc(message));
    }
}

fn invalid_attrs(id: &str, error: Option<&str>) -> String {
    if error.is_some() {
        format!(" aria-invalid=\"true\" aria-describedby=\"{id}-err\"")
    } else {
        String::new()
    }
}

/// A text input with its label and, when it has one, its problem right below it.
fn text_input(
    s: &mut String,
    form: &str,
    name: &str,
    label: &str,
    value: &str,
    extra: &str,
    error: Option<&str>,
) {
    let id = format!("{form}-{name}");
    let _ = write!(
        s,
        "<label for=\"{id}\">{}</label><input type=\"text\" id=\"{id}\" name=\"{name}\" \
         value=\"{}\" {extra}{}>",
        esc(label),
        esc(value),
        invalid_attrs(&id, error)
    );
    field_error(s, &id, error);
}

fn select(
    s: &mut String,
    form: &str,
    name: &str,
    label: &str,
    options: &[(String, String)],
    chosen: &str,
    error: Option<&str>,
) {
    let id = format!("{form}-{name}");
    let _ = write!(
        s,
        "<label for=\"{id}\">{}</label><select id=\"{id}\" name=\"{name}\" required{}>\
         <option value=\"\">Seleccione…</option>",
        esc(label),
        invalid_attrs(&id, error)
    );
    for (value, text) in options {
        let selected = if value == chosen { " selected" } else { "" };
        let _ = write!(
            s,
            "<option value=\"{}\"{selected}>{}</option>",
            esc(value),
            esc(text)
        );
    }
    s.push_str("</select>");
    field_error(s, &id, error);
}

/// Card number, expiry and CVV. The number and CVV are never written back.
fn card_fields(s: &mut String, form: &str, sub: Option<&Submitted>) {
    let error = |f: &str| sub.and_then(|s| s.error(f));
    let value = |f: &str| sub.map_or("", |s| s.value(f));
    text_input(
        s,
        form,
        "number",
        "Número de tarjeta",
        "",
        "inputmode=\"numeric\" autocomplete=\"cc-number\" maxlength=\"23\" required",
        error("number"),
    );
    s.push_str("<div class=\"row\"><div>");
    text_input(
        s,
        form,
        "expiry",
        "Vencimiento (MM/AA)",
        value("expiry"),
        "inputmode=\"numeric\" autocomplete=\"cc-exp\" placeholder=\"MM/AA\" maxlength=\"7\" required",
        error("expiry"),
    );
    s.push_str("</div><div>");
    text_input(
        s,
        form,
        "cvv",
        "Código de seguridad (CVV)",
        "",
        "inputmode=\"numeric\" autocomplete=\"cc-csc\" maxlength=\"4\" required",
        error("cvv"),
    );
    s.push_str("</div></div>");
}

fn bank_fields(s: &mut String, form: &str, sub: Option<&Submitted>) {
    let error = |f: &str| sub.and_then(|s| s.error(f));
    let value = |f: &str| sub.map_or("", |s| s.value(f));
    let banks: Vec<(String, String)> = BANKS
        .iter()
        .map(|(c, n)| (c.to_string(), n.to_string()))
        .collect();
    select(
        s,
        form,
        "bankCode",
        "Banco",
        &banks,
        value("bankCode"),
        error("bankCode"),
    );
    let types: Vec<(String, String)> = ACCOUNT_TYPES
        .iter()
        .map(|(c, n)| (c.to_string(), n.to_string()))
        .collect();
    select(
        s,
        form,
        "accountType",
        "Tipo de cuenta",
        &types,
        value("accountType"),
        error("accountType"),
    );
    text_input(
        s,
        form,
        "accountNumber",
        "Número de cuenta",
        value("accountNumber"),
        "inputmode=\"numeric\" autocomplete=\"off\" maxlength=\"24\" required",
        error("accountNumber"),
    );
    text_input(
        s,
        form,
        "holderRut",
        "RUT del titular de la cuenta",
        value("holderRut"),
        "placeholder=\"12.345.678-5\" maxlength=\"14\" required",
        error("holderRut"),
    );
}

fn notice(s: &mut String, notice: &Notice, view: &View<'_>) {
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
    let _ = write!(
        s,
        "<section class=\"notice {class}\" role=\"status\"><h2>{}</h2><p>{}</p>",
        esc(&title),
        esc(&text)
    );
    if let Notice::Paid { receipt, .. } = notice {
        let _ = write!(
            s,
            "<p><a href=\"{}\">Ver e imprimir el comprobante</a></p>",
            esc(&receipt_url(view.token, receipt))
        );
    }
    s.push_str("</section>");
}

fn mandate_section(s: &mut String, view: &View<'_>) {
    let m = &view.data.mandate;
    let _ = write!(s, "<section><h2>{}</h2>", esc(&m.name));
    if let Some(detail) = m.detail.as_deref().filter(|d| !d.is_empty()) {
        let _ = write!(s, "<p>{}</p>", esc(detail));
    }
    s.push_str("<dl>");
    let mut row = |label: &str, value: &str| {
        let _ = write!(s, "<dt>{}</dt><dd>{}</dd>", esc(label), esc(value));
    };
    row("Comercio", &view.data.commerce.name);
    row("N° de mandato", &m.external_id);
    row("Tipo", spanish::mandate_type(m.mandate_type));
    row("Montos", &view.data.summary());
    if let Some(method) = m.enrolled_method.as_ref().map(StoredJson::value)
        && let Some(instrument) = method["instrument"].as_str()
    {
        let name = method["id"]
            .as_i64()
            .and_then(PaymentMethod::from_id)
            .map_or("", spanish::method);
        row("Medio de pago", &format!("{name} · {instrument}"));
    }
    if m.state == MandateState::Pending {
        let expires = chrono::DateTime::parse_from_rfc3339(&m.magic_link_expires_at)
            .map(|t| spanish::date(t.with_timezone(&view.time_zone).date_naive()))
            .unwrap_or_default();
        row("Enlace válido hasta", &expires);
    }
    s.push_str("</dl></section>");
}

fn schedule_section(s: &mut String, view: &View<'_>) {
    s.push_str("<section><h2>Calendario de cuotas</h2>");
    if view.data.installments.is_empty() {
        s.push_str(
            "<p class=\"muted\">Aún no hay cuotas. El comercio las informará a medida que \
             correspondan.</p></section>",
        );
        return;
    }
    s.push_str(
        "<table><thead><tr><th>Cuota</th><th>Vence</th><th class=\"amount\">Monto</th>\
         <th>Estado</th></tr></thead><tbody>",
    );
    for i in &view.data.installments {
        let receipt = if i.state == InstallmentState::Paid {
            format!(
                " <a href=\"{}\">Comprobante</a>",
                esc(&receipt_url(view.token, &i.id))
            )
        } else {
            String::new()
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td class=\"amount\">{}</td>\
             <td><span class=\"state s{}\">{}</span>{receipt}</td></tr>",
            esc(&i.external_id),
            esc(&spanish::due_and_charge_date(
                i.due_date,
                view.data.charge_dates.of(i.due_date)
            )),
            esc(&spanish::money(&i.amount)),
            i.state.id(),
            esc(spanish::installment_state(i.state))
        );
    }
    s.push_str("</tbody></table></section>");
}

fn portal_section(s: &mut String, view: &View<'_>) {
    let due: Vec<&InstallmentRow> = view
        .data
        .installments
        .iter()
        .filter(|i| payable(i, view.today))
        .collect();
    if due.is_empty() {
        return;
    }
    s.push_str(
        "<section id=\"pagar\"><h2>Cuotas por pagar</h2><p class=\"muted\">Puede pagar ahora con \
         tarjeta las cuotas vencidas o rechazadas.</p>",
    );
    for i in due {
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
        let _ = write!(
            s,
            "<details class=\"card\" id=\"{form}\"{}><summary><span class=\"due\">\
             <span>Cuota {} · vence el {}</span><span>{}</span></span></summary>\
             <p class=\"muted\">{}</p>",
            if sub.is_some() { " open" } else { "" },
            esc(&i.external_id),
            esc(&spanish::date(i.due_date)),
            esc(&spanish::money(&i.amount)),
            esc(&status)
        );
        if i.amount.currency() == Currency::Clf {
            s.push_str(
                "<p>Esta cuota está expresada en UF. No puede pagarse en línea sin el valor de \
                 la UF del día del pago; el comercio la cobrará en pesos en su fecha o puede \
                 contactarlo para pagarla.</p></details>",
            );
            continue;
        }
        if let Some(message) = sub.and_then(|s| s.error("form")) {
            let _ = write!(s, "<p class=\"err\" role=\"alert\">{}</p>", esc(message));
        }
        let _ = write!(
            s,
            "<form method=\"post\" action=\"/link/{}/pay/{}\" autocomplete=\"on\">",
            esc(view.token),
            esc(&i.id)
        );
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
        select(
            s,
            &form,
            "method",
            "Tipo de tarjeta",
            &methods,
            &chosen,
            sub.and_then(|s| s.error("method")),
        );
        card_fields(s, &form, sub);
        let _ = write!(
            s,
            "<button type=\"submit\">Pagar ahora {}</button></form></details>",
            esc(&spanish::money(&i.amount))
        );
    }
    s.push_str("</section>");
}

fn activation_section(s: &mut String, view: &View<'_>) {
    let methods = view.data.methods();
    s.push_str("<section id=\"activar\"><h2>Elija su medio de pago</h2>");
    if methods.is_empty() {
        s.push_str(
            "<p>Este mandato no tiene medios de pago habilitados. Contacte al comercio.</p>\
             </section>",
        );
        return;
    }
    s.push_str(
        "<p class=\"muted\">Registre el medio con el que se pagarán las cuotas y acepte los \
         términos del mandato.</p>",
    );
    let signature_gated = view.data.mandate.activation_mode == ActivationMode::Signature;
    if signature_gated {
        signature_step(s, view.data.signing.as_ref());
    }
    let submitted_method = view.activation.as_ref().map(|(m, _)| *m);
    for (index, method) in methods.iter().enumerate() {
        let form = format!("m{}", method.id());
        let sub = view
            .activation
            .as_ref()
            .filter(|(m, _)| *m == method.id())
            .map(|(_, sub)| sub);
        let open = match submitted_method {
            Some(m) => m == method.id(),
            None => index == 0,
        };
        let terms = view.data.terms(*method);
        let _ = write!(
            s,
            "<details id=\"{form}\"{}><summary>{}</summary>",
            if open { " open" } else { "" },
            esc(spanish::method(*method))
        );
        if let Some(message) = sub.and_then(|s| s.error("form")) {
            let _ = write!(
                s,
                "<p class=\"err\" role=\"alert\" style=\"padding:0 14px\">{}</p>",
                esc(message)
            );
        }
        let _ = write!(
            s,
            "<form method=\"post\" action=\"/link/{}\" autocomplete=\"on\">\
             <input type=\"hidden\" name=\"method\" value=\"{}\">\
             <input type=\"hidden\" name=\"termsSha256\" value=\"{}\">",
            esc(view.token),
            method.id(),
            sha256_hex(&terms)
        );
        if method.is_card() {
            card_fields(s, &form, sub);
        } else {
            bank_fields(s, &form, sub);
        }
        let accept_error = sub.and_then(|s| s.error("accept"));
        let accept_id = format!("{form}-accept");
        let _ = write!(
            s,
            "<div class=\"terms\" tabindex=\"0\" aria-label=\"Términos del mandato\">{}</div>\
             <div class=\"check\"><input type=\"checkbox\" id=\"{accept_id}\" name=\"accept\" \
             value=\"1\" required{}><label for=\"{accept_id}\">He leído y acepto los términos del \
             mandato.</label></div>",
            esc(&terms),
            invalid_attrs(&accept_id, accept_error)
        );
        field_error(s, &accept_id, accept_error);
        s.push_str(if signature_gated {
            "<button type=\"submit\">Autorizar y continuar a la firma</button></form></details>"
        } else {
            "<button type=\"submit\">Autorizar y activar</button></form></details>"
        });
    }
    s.push_str("</section>");
}

/// A signature-gated mandate: the signature step that follows the enrolment, and where the
/// customer's latest signature stands.
fn signature_step(s: &mut String, signing: Option<&Signing>) {
    s.push_str(
        "<p class=\"muted\" id=\"firma\">Este mandato requiere su firma electrónica: después de \
         registrar su medio de pago, le llevaremos a firmar el documento del mandato. Confirmará \
         su identidad con su RUT y un código de un solo uso, y el mandato quedará activo cuando \
         lo firme.</p>",
    );
    match signing {
        None => {}
        Some(Signing::Open { token }) => {
            let _ = write!(
                s,
                "<p class=\"notice\" role=\"status\">Tiene una firma pendiente. \
                 <a href=\"/sign/{}\">Continuar con la firma del mandato</a>. Si registra otro \
                 medio de pago, esa firma se reemplaza por una nueva.</p>",
                esc(token)
            );
        }
        Some(Signing::Sealing) => s.push_str(
            "<p class=\"notice\" role=\"status\">Recibimos su firma y estamos sellando el \
             documento del mandato; quedará activo en unos momentos.</p>",
        ),
        Some(Signing::Ended(failure)) => {
            let why = match failure {
                ActivationFailure::SignatureRejected => "Usted rechazó la firma del mandato.",
                ActivationFailure::SignatureExpired => "El plazo para firmar el mandato venció.",
                ActivationFailure::SignatureCancelled => {
                    "El proceso de firma del mandato fue cancelado."
                }
            };
            let _ = write!(
                s,
                "<p class=\"notice bad\" role=\"status\">{why} El mandato sigue pendiente: \
                 puede comenzar de nuevo registrando su medio de pago.</p>"
            );
        }
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
fn rejected_section(s: &mut String, view: &View<'_>) {
    let data = view.data;
    if data.mandate.state != MandateState::Active {
        return;
    }
    let rejected: Vec<&InstallmentRow> = data
        .installments
        .iter()
        .filter(|i| i.state == InstallmentState::Rejected)
        .collect();
    if !rejected.is_empty() {
        s.push_str("<section id=\"rechazo\" class=\"notice bad\"><h2>Un cobro fue rechazado</h2>");
        for i in &rejected {
            let _ = write!(
                s,
                "<p><strong>Cuota {} · {}</strong> (vence el {}): {}</p>",
                esc(&i.external_id),
                esc(&spanish::money(&i.amount)),
                esc(&spanish::date(i.due_date)),
                esc(&rejection_and_next_step(i))
            );
        }
        s.push_str(
            "<p>Puede pagarla ahora en <a href=\"#pagar\">Cuotas por pagar</a>, o registrar otra \
             tarjeta: la usaremos desde ahora y la cuota rechazada se volverá a cobrar en el \
             próximo proceso de cobro.</p></section>",
        );
    }
    card_change_form(s, view, !rejected.is_empty());
}

/// The form that replaces an active mandate's card.
fn card_change_form(s: &mut String, view: &View<'_>, after_rejection: bool) {
    let methods = view.data.card_change_methods();
    if methods.is_empty() {
        return;
    }
    let sub = view.card_update.as_ref();
    let open = after_rejection || sub.is_some();
    let _ = write!(
        s,
        "<section id=\"tarjeta\" class=\"noprint\"><details{}><summary>{}</summary>",
        if open { " open" } else { "" },
        if after_rejection {
            "Registrar otra tarjeta"
        } else {
            "¿Cambió su tarjeta? Actualícela aquí"
        }
    );
    if let Some(message) = sub.and_then(|s| s.error("form")) {
        let _ = write!(s, "<p class=\"err\" role=\"alert\">{}</p>", esc(message));
    }
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
    let _ = write!(
        s,
        "<form method=\"post\" action=\"/link/{}/tarjeta\" autocomplete=\"on\">\
         <input type=\"hidden\" name=\"termsSha256\" value=\"{}\">",
        esc(view.token),
        sha256_hex(&terms)
    );
    select(
        s,
        "t",
        "method",
        "Tipo de tarjeta",
        &options,
        &chosen,
        sub.and_then(|s| s.error("method")),
    );
    card_fields(s, "t", sub);
    let accept_error = sub.and_then(|s| s.error("accept"));
    let _ = write!(
        s,
        "<div class=\"terms\" tabindex=\"0\" aria-label=\"Términos del mandato\">{}</div>\
         <div class=\"check\"><input type=\"checkbox\" id=\"t-accept\" name=\"accept\" \
         value=\"1\" required{}><label for=\"t-accept\">Acepto que los cargos de este mandato se \
         hagan a esta tarjeta.</label></div>",
        esc(&terms),
        invalid_attrs("t-accept", accept_error)
    );
    field_error(s, "t-accept", accept_error);
    s.push_str(
        "<button type=\"submit\">Guardar la nueva tarjeta</button></form></details></section>",
    );
}

/// The receipt of a paid installment: what was paid, when (in the installation's zone, named),
/// how (the method, the instrument masked) and the references to quote. Printable as it is.
/// A paid installment, and whether the charging engine charged it with the instrument the
/// mandate holds now (rather than a card typed in the portal, a payment the merchant recorded,
/// or a card replaced since).
pub struct Receipt<'a> {
    pub installment: &'a InstallmentRow,
    pub current_instrument: bool,
}

pub fn receipt_page(
    data: &Loaded,
    receipt: &Receipt<'_>,
    token: &str,
    zone: chrono_tz::Tz,
) -> String {
    let installment = receipt.installment;
    let paid_at = chrono::DateTime::parse_from_rfc3339(&installment.state_at)
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
        .unwrap_or_else(|_| installment.state_at.clone());
    let header = format!(
        "<div class=\"who\">{}</div><h1>Comprobante de pago</h1>",
        esc(&data.commerce.name)
    );
    let mut body = String::from("<section class=\"receipt\"><dl>");
    let mut row = |label: &str, value: &str| {
        let _ = write!(body, "<dt>{}</dt><dd>{}</dd>", esc(label), esc(value));
    };
    row("Monto pagado", &spanish::money(&installment.amount));
    row("Cuota", &installment.external_id);
    row("Vencimiento", &spanish::date(installment.due_date));
    row("Fecha del pago", &paid_at);
    row("Medio de pago", &paid_with(data, receipt));
    row(
        "Código de autorización",
        installment.authorization_code.as_deref().unwrap_or("—"),
    );
    row("Referencia", &installment.id);
    row(
        "Mandato",
        &format!("{} · {}", data.mandate.name, data.mandate.external_id),
    );
    row(
        "Comercio",
        &format!("{} (RUT {})", data.commerce.name, data.commerce.code),
    );
    row(
        "Cliente",
        &format!("{} {}", data.customer.first_name, data.customer.last_name),
    );
    body.push_str("</dl></section>");
    let _ = write!(
        body,
        "<p class=\"noprint muted\">Para guardarlo, use la opción Imprimir de su navegador (o \
         «Guardar como PDF»). <a href=\"/link/{}\">Volver a su mandato</a></p>",
        esc(token)
    );
    document(
        &format!("Comprobante · cuota {}", installment.external_id),
        &header,
        &body,
    )
}

/// How an installment was paid: a manual payment's evidence; a charge of the engine with the
/// current instrument by its method and that instrument, masked; otherwise by its method only
/// (a portal card's number is never kept).
fn paid_with(data: &Loaded, receipt: &Receipt<'_>) -> String {
    let installment = receipt.installment;
    let payment = installment.payment.as_ref().map(StoredJson::value);
    if let Some(method) = payment.as_ref().and_then(|p| p["method"].as_str()) {
        return format!("Pago registrado por el comercio ({method})");
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
    let header = format!(
        "<div class=\"who\">{}</div><h1>{}</h1><p class=\"muted\">Hola, {}.</p>",
        esc(&data.commerce.name),
        esc(if view.activation_open {
            "Autorice su mandato de pago"
        } else {
            "Su mandato de pago"
        }),
        esc(&data.customer.first_name)
    );
    let mut body = String::new();
    if view.sandbox {
        body.push_str(SANDBOX_BANNER);
    }
    if let Some(n) = &view.notice {
        notice(&mut body, n, view);
    }
    let sent_back = view
        .activation
        .as_ref()
        .map(|(m, sub)| (format!("m{m}"), sub))
        .or_else(|| {
            view.payment
                .as_ref()
                .map(|(i, sub)| (format!("p-{i}"), sub))
        })
        .or_else(|| {
            view.card_update
                .as_ref()
                .map(|sub| ("tarjeta".to_string(), sub))
        });
    if let Some((anchor, sub)) = sent_back
        && !sub.errors.is_empty()
    {
        let _ = write!(
            body,
            "<section class=\"notice bad\" role=\"alert\"><h2>No pudimos continuar</h2>\
             <p><a href=\"#{}\">Revise los datos marcados en el formulario</a>; no se guardó \
             ni se cobró nada.</p></section>",
            esc(&anchor)
        );
    }
    mandate_section(&mut body, view);
    rejected_section(&mut body, view);
    portal_section(&mut body, view);
    if view.activation_open {
        activation_section(&mut body, view);
    }
    schedule_section(&mut body, view);
    document(
        &format!("{} · {}", data.commerce.name, data.mandate.name),
        &header,
        &body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mandato_core::domain::money::{Currency, Money};

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

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            esc("<a href=\"x\" title='y'>&</a>"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
    }
}
