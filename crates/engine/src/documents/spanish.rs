//! What the customer reads, in Spanish (Chile): amounts, dates, the names of types, states and
//! methods, and the terms of the mandate. Shared by the Magic Link pages and the EPAC document,
//! so both say the same thing the same way.

use chrono::{Datelike, NaiveDate, Weekday};
use serde_json::Value;

use mandato_core::domain::money::{Currency, Money};
use mandato_core::domain::state::{InstallmentState, MandateType, PaymentMethod, RejectionCode};

/// `$29.990`, `UF 1,2345`, `US$ 10,50`: dots between thousands, a comma before decimals.
pub fn money(amount: &Money) -> String {
    let min_decimals = match amount.currency() {
        Currency::Clp => 0,
        Currency::Clf | Currency::Usd => 2,
    };
    let number = number(&amount.amount().normalize().to_string(), min_decimals);
    match amount.currency() {
        Currency::Clp => format!("${number}"),
        Currency::Clf => format!("UF {number}"),
        Currency::Usd => format!("US$ {number}"),
    }
}

/// A UF value in pesos, as exact as it is stored: `$39.123,45`. Not a `Money`, which keeps
/// pesos whole.
pub fn uf_value(value: &str) -> String {
    format!("${}", number(value, 2))
}

/// An exact decimal written as text (`39123.45`) the Chilean way (`39.123,45`), with at least
/// `min_decimals` decimals.
fn number(text: &str, min_decimals: usize) -> String {
    let (sign, text) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text),
    };
    let (integer, fraction) = text.split_once('.').unwrap_or((text, ""));
    let mut grouped = String::new();
    for (i, digit) in integer.chars().enumerate() {
        if i > 0 && (integer.len() - i) % 3 == 0 {
            grouped.push('.');
        }
        grouped.push(digit);
    }
    let mut fraction = fraction.to_string();
    while fraction.len() < min_decimals {
        fraction.push('0');
    }
    if fraction.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped},{fraction}")
    }
}

/// How a payment the merchant recorded was made (the evidence's `method`), in words.
pub fn manual_method(code: &str) -> &str {
    match code {
        "TRANSFER" => "Transferencia",
        "CASH" => "Efectivo",
        "CHECK" => "Cheque",
        "CARD" => "Tarjeta",
        "OTHER" => "Otro medio",
        other => other,
    }
}

/// A file attached to a payment as its receipt names it: `comprobante.pdf (PDF, 1,5 KiB)`.
pub fn attached_file(name: &str, content_type: &str, size_bytes: i64) -> String {
    let kind = match content_type {
        "application/pdf" => "PDF",
        "image/png" => "PNG",
        "image/jpeg" => "JPEG",
        other => other,
    };
    let size = if size_bytes < 1024 {
        format!("{size_bytes} B")
    } else {
        let (value, unit) = if size_bytes < 1024 * 1024 {
            (size_bytes as f64 / 1024.0, "KiB")
        } else {
            (size_bytes as f64 / (1024.0 * 1024.0), "MiB")
        };
        format!("{} {unit}", format!("{value:.1}").replace('.', ","))
    };
    format!("{name} ({kind}, {size})")
}

/// The currency's name, for sentences.
pub fn currency_name(currency: Currency) -> &'static str {
    match currency {
        Currency::Clp => "pesos chilenos (CLP)",
        Currency::Clf => "Unidades de Fomento (UF)",
        Currency::Usd => "dólares estadounidenses (USD)",
    }
}

/// `05-12-2026`, as dates are written in Chile.
pub fn date(d: NaiveDate) -> String {
    d.format("%d-%m-%Y").to_string()
}

/// The weekday's name: `lunes`.
pub fn weekday(d: NaiveDate) -> &'static str {
    match d.weekday() {
        Weekday::Mon => "lunes",
        Weekday::Tue => "martes",
        Weekday::Wed => "miércoles",
        Weekday::Thu => "jueves",
        Weekday::Fri => "viernes",
        Weekday::Sat => "sábado",
        Weekday::Sun => "domingo",
    }
}

/// A due date, and the day it is charged when that differs (a weekend or holiday moves it):
/// "05-12-2026 (se cobra el lunes 07-12-2026)".
pub fn due_and_charge_date(due: NaiveDate, charged: NaiveDate) -> String {
    if due == charged {
        date(due)
    } else {
        format!(
            "{} (se cobra el {} {})",
            date(due),
            weekday(charged),
            date(charged)
        )
    }
}

/// A `YYYY-MM-DD` text as `05-12-2026`; anything else unchanged.
pub fn date_text(text: &str) -> String {
    text.parse::<NaiveDate>()
        .map(date)
        .unwrap_or_else(|_| text.to_string())
}

pub fn mandate_type(t: MandateType) -> &'static str {
    match t {
        MandateType::Subscription => "Suscripción",
        MandateType::Permanent => "Cargo recurrente sin término",
        MandateType::Dynamic => "Cargos variables",
        MandateType::Onepay => "Pago único",
    }
}

pub fn periodicity(p: &str) -> &str {
    match p {
        "WEEKLY" => "semanal",
        "MONTHLY" => "mensual",
        "BIMONTHLY" => "bimestral",
        "QUARTERLY" => "trimestral",
        "SEMIANNUAL" => "semestral",
        "ANNUAL" => "anual",
        other => other,
    }
}

pub fn installment_state(s: InstallmentState) -> &'static str {
    match s {
        InstallmentState::Pending => "Pendiente",
        InstallmentState::InProcess => "En proceso de cobro",
        InstallmentState::InValidation => "En validación",
        InstallmentState::Paid => "Pagada",
        InstallmentState::Rejected => "Rechazada",
        InstallmentState::Annulled => "Anulada",
        InstallmentState::Reversed => "Reversada",
    }
}

pub fn method(m: PaymentMethod) -> &'static str {
    match m {
        PaymentMethod::CreditCard => "Tarjeta de crédito",
        PaymentMethod::DebitCard => "Tarjeta de débito",
        PaymentMethod::PrepaidCard => "Tarjeta de prepago",
        PaymentMethod::Pac => "PAC: cargo automático en cuenta",
        PaymentMethod::Epac => "EPAC: mandato electrónico de cargo en cuenta",
        PaymentMethod::DirectEpac => "EPAC directo: cargo en cuenta sin intermediarios",
    }
}

/// A card by its brand and last four digits: "VISA terminada en 4242" ("Tarjeta terminada en
/// 4242" when the brand is unknown).
pub fn card(brand: Option<&str>, last4: &str) -> String {
    // A processor that cannot tell the brand names it `CARD`.
    let brand = brand
        .map(str::trim)
        .filter(|b| !b.is_empty() && !b.eq_ignore_ascii_case("CARD"));
    format!("{} terminada en {last4}", brand.unwrap_or("Tarjeta"))
}

/// Why a charge was declined, for the customer.
pub fn rejection(code: &str) -> &'static str {
    match RejectionCode::parse(code) {
        Some(RejectionCode::InsufficientFunds) => "Fondos insuficientes.",
        Some(RejectionCode::CardDeclined) => "El emisor rechazó la tarjeta.",
        Some(RejectionCode::ExpiredCard) => "La tarjeta está vencida.",
        Some(RejectionCode::AccountClosed) => "La cuenta bancaria está cerrada.",
        Some(RejectionCode::BankValidationFailed) => "El banco rechazó el cargo.",
        None => "El pago fue rechazado.",
    }
}

/// The account type's name (`CHECKING` → "Cuenta corriente").
pub fn account_type(code: &str) -> &str {
    mandato_core::domain::instrument::ACCOUNT_TYPES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or(code, |(_, name)| name)
}

fn charge_amount(charges: &Value, key: &str, currency: Currency) -> Option<Money> {
    match &charges[key] {
        Value::Number(n) => Money::parse(n, currency).ok(),
        _ => None,
    }
}

/// What the mandate charges, in one sentence: "$29.990 mensual, 12 cuotas desde el 05-12-2026".
pub fn charges_summary(t: MandateType, charges: &Value) -> String {
    let Some(currency) = charges["currencyId"].as_str().and_then(Currency::parse) else {
        return "Según lo acordado con el comercio".to_string();
    };
    let amount = charge_amount(charges, "amount", currency);
    let shown = amount.as_ref().map(money).unwrap_or_default();
    let every = charges["periodicity"]
        .as_str()
        .map(periodicity)
        .unwrap_or("");
    let start = charges["startDate"].as_str().map(date_text);
    match t {
        MandateType::Subscription => {
            let mut s = format!("{shown} {every}");
            if let Some(count) = charges["count"].as_u64() {
                let word = if count == 1 { "cuota" } else { "cuotas" };
                s.push_str(&format!(", {count} {word}"));
            }
            if let Some(start) = start {
                s.push_str(&format!(" desde el {start}"));
            }
            if let Some(end) = charges["endDate"].as_str() {
                s.push_str(&format!(" hasta el {}", date_text(end)));
            }
            s
        }
        MandateType::Permanent => {
            let mut s = format!("{shown} {every}");
            if let Some(start) = start {
                s.push_str(&format!(" desde el {start}"));
            }
            s.push_str(", sin fecha de término");
            s
        }
        MandateType::Onepay => {
            let mut s = format!("Pago único de {shown}");
            if let Some(due) = charges["dueDate"].as_str() {
                s.push_str(&format!(", vence el {}", date_text(due)));
            }
            s
        }
        MandateType::Dynamic => {
            let mut s = format!(
                "Montos variables en {} que el comercio informe",
                currency_name(currency)
            );
            match charge_amount(charges, "maxAmount", currency) {
                Some(max) => s.push_str(&format!(", con un máximo de {} por cuota", money(&max))),
                None => s.push_str(", sin un máximo por cuota"),
            }
            s
        }
    }
}

/// What the terms are about: the parties and the commitment, as the customer sees them.
pub struct TermsSubject<'a> {
    pub commerce_name: &'a str,
    pub commerce_code: &'a str,
    pub mandate_id: &'a str,
    pub mandate_name: &'a str,
    pub summary: &'a str,
}

/// The terms the customer accepts with `method`. Their exact text is stored with the
/// acceptance and its SHA-256 printed in the EPAC document, so it must not depend on anything
/// but its arguments.
pub fn terms(subject: &TermsSubject<'_>, method: PaymentMethod) -> String {
    let TermsSubject {
        commerce_name,
        commerce_code,
        mandate_id,
        mandate_name,
        summary,
    } = subject;
    let mut clauses: Vec<String> = Vec::new();
    let heading;
    if method.is_card() {
        heading = "MANDATO DE CARGO AUTOMÁTICO EN TARJETA".to_string();
        clauses.push(format!(
            "Autorizo a {commerce_name} (código {commerce_code}) a cargar en la tarjeta que \
             indico en este formulario los montos del mandato \"{mandate_name}\" \
             (N° {mandate_id}): {summary}."
        ));
        clauses.push(
            "Cada cuota se cargará en su fecha de vencimiento. Si el cargo es rechazado, el \
             comercio podrá intentarlo nuevamente según su política de reintentos."
                .to_string(),
        );
        clauses.push(
            "Declaro ser titular de la tarjeta o estar autorizado por su titular. Sólo se \
             conservan el emisor y los últimos cuatro dígitos de la tarjeta; su número completo \
             y su código de seguridad no se guardan."
                .to_string(),
        );
    } else {
        heading = match method {
            PaymentMethod::Pac => "MANDATO DE CARGO AUTOMÁTICO EN CUENTA (PAC)".to_string(),
            PaymentMethod::DirectEpac => {
                "MANDATO ELECTRÓNICO DE CARGO EN CUENTA (EPAC DIRECTO)".to_string()
            }
            _ => "MANDATO ELECTRÓNICO DE CARGO EN CUENTA (EPAC)".to_string(),
        };
        clauses.push(format!(
            "Por medio del presente mandato autorizo expresamente a {commerce_name} (código \
             {commerce_code}) y al banco de la cuenta que indico en este formulario a cargar en \
             ella los montos del mandato \"{mandate_name}\" (N° {mandate_id}): {summary}."
        ));
        clauses.push(
            "Cada cuota se cargará en su fecha de vencimiento, sujeta a la validación de mi \
             banco. Si el banco rechaza un cargo, la cuota quedará impaga y el comercio podrá \
             cobrarla nuevamente según su política de reintentos."
                .to_string(),
        );
        clauses.push(
            "Declaro ser titular de la cuenta o estar autorizado por su titular para suscribir \
             este mandato, y que el RUT del titular indicado es correcto."
                .to_string(),
        );
        if matches!(method, PaymentMethod::Epac | PaymentMethod::DirectEpac) {
            clauses.push(
                "Se emitirá un documento PDF con este mandato, la cuenta enmascarada, la fecha y \
                 hora de mi aceptación y el resumen SHA-256 de estos términos, que el comercio \
                 conservará como respaldo."
                    .to_string(),
            );
        }
    }
    clauses.push(
        "El mandato seguirá vigente mientras existan cuotas por pagar, salvo que lo revoque ante \
         el comercio o que el comercio lo cancele. La revocación no afecta las cuotas ya pagadas."
            .to_string(),
    );
    clauses.push(
        "Acepto que mi aceptación electrónica, registrada con su fecha, hora y la dirección desde \
         la que se realiza, tenga el mismo valor que mi firma."
            .to_string(),
    );
    let mut text = format!("{heading}\n");
    for (i, clause) in clauses.iter().enumerate() {
        text.push_str(&format!("\n{}. {clause}", i + 1));
    }
    text
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use rust_decimal::Decimal;
    use serde_json::json;

    use super::*;

    fn m(amount: &str, currency: Currency) -> Money {
        Money::from_decimal(Decimal::from_str(amount).unwrap(), currency).unwrap()
    }

    #[test]
    fn an_attached_file_is_named_with_its_kind_and_size() {
        assert_eq!(
            attached_file("v.pdf", "application/pdf", 15),
            "v.pdf (PDF, 15 B)"
        );
        assert_eq!(
            attached_file("f.png", "image/png", 1536),
            "f.png (PNG, 1,5 KiB)"
        );
        assert_eq!(
            attached_file("f.jpg", "image/jpeg", 5 * 1024 * 1024),
            "f.jpg (JPEG, 5,0 MiB)"
        );
    }

    #[test]
    fn amounts_are_written_the_chilean_way() {
        for (amount, currency, shown) in [
            ("29990", Currency::Clp, "$29.990"),
            ("1234567", Currency::Clp, "$1.234.567"),
            ("990", Currency::Clp, "$990"),
            ("1.2345", Currency::Clf, "UF 1,2345"),
            ("2.5", Currency::Clf, "UF 2,50"),
            ("1000", Currency::Clf, "UF 1.000,00"),
            ("10.5", Currency::Usd, "US$ 10,50"),
            ("123456.78", Currency::Usd, "US$ 123.456,78"),
        ] {
            assert_eq!(money(&m(amount, currency)), shown);
        }
    }

    #[test]
    fn a_charge_date_is_named_only_when_it_differs_from_the_due_date() {
        let saturday = NaiveDate::from_ymd_opt(2026, 12, 5).unwrap();
        let monday = NaiveDate::from_ymd_opt(2026, 12, 7).unwrap();
        assert_eq!(
            due_and_charge_date(saturday, monday),
            "05-12-2026 (se cobra el lunes 07-12-2026)"
        );
        assert_eq!(due_and_charge_date(monday, monday), "07-12-2026");
        assert_eq!(weekday(saturday), "sábado");
    }

    #[test]
    fn a_card_is_named_by_its_brand_and_last_four_digits() {
        assert_eq!(card(Some("VISA"), "4242"), "VISA terminada en 4242");
        assert_eq!(card(None, "4242"), "Tarjeta terminada en 4242");
        assert_eq!(card(Some(" "), "4242"), "Tarjeta terminada en 4242");
        assert_eq!(card(Some("CARD"), "4242"), "Tarjeta terminada en 4242");
    }

    #[test]
    fn charges_read_as_a_sentence() {
        let sub = json!({"currencyId": "CLP", "amount": 29990, "periodicity": "MONTHLY",
                         "startDate": "2026-12-05", "count": 12, "endDate": null});
        assert_eq!(
            charges_summary(MandateType::Subscription, &sub),
            "$29.990 mensual, 12 cuotas desde el 05-12-2026"
        );
        let dynamic = json!({"currencyId": "CLP", "maxAmount": 100000});
        assert!(charges_summary(MandateType::Dynamic, &dynamic).contains("$100.000"));
    }

    #[test]
    fn terms_depend_on_the_method() {
        let subject = TermsSubject {
            commerce_name: "Gimnasio",
            commerce_code: "76123456-0",
            mandate_id: "GYM-1",
            mandate_name: "Plan",
            summary: "$1.000 mensual",
        };
        let card = terms(&subject, PaymentMethod::CreditCard);
        let epac = terms(&subject, PaymentMethod::Epac);
        assert!(card.contains("TARJETA") && !card.contains("PDF"));
        assert!(epac.contains("EPAC") && epac.contains("SHA-256"));
        assert_eq!(epac, terms(&subject, PaymentMethod::Epac), "stable");
    }
}
