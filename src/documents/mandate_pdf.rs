//! The EPAC mandate document: what the customer accepted, with whom, for which account (masked)
//! and when, with the SHA-256 of the terms' exact text, sent to the merchant as `fileBase64`.
//!
//! The document never holds a full account number: [`MandateDocument`] has no field for one.

use chrono::NaiveDate;
use sha2::{Digest, Sha256};

use super::pdf::{self, Block, Meta};
use super::spanish;
use crate::domain::money::Money;
use crate::domain::state::{MandateType, PaymentMethod};

/// One scheduled installment, as listed in the document.
#[derive(Debug, Clone)]
pub struct DocumentInstallment {
    pub id: String,
    pub due_date: NaiveDate,
    pub amount: Money,
}

/// Everything the document states.
#[derive(Debug, Clone)]
pub struct MandateDocument {
    pub commerce_name: String,
    pub commerce_code: String,
    pub customer_name: String,
    /// Normalized, `12345678-5`.
    pub customer_rut: String,
    /// The merchant's mandate id.
    pub mandate_id: String,
    /// Ours, `man_...`.
    pub mandate_internal_id: String,
    pub mandate_name: String,
    pub mandate_detail: Option<String>,
    pub mandate_type: MandateType,
    /// What the mandate charges, in words (see `spanish::charges_summary`).
    pub charges_summary: String,
    /// The installments known at acceptance (none yet for most DYNAMIC mandates).
    pub installments: Vec<DocumentInstallment>,
    pub method: PaymentMethod,
    pub bank_name: String,
    /// The account type's code (`CHECKING`, `VISTA`, `SAVINGS`).
    pub account_type: String,
    pub account_last4: String,
    pub holder_rut: String,
    /// RFC 3339 UTC, as recorded with the acceptance.
    pub accepted_at: String,
    pub ip: Option<String>,
    /// The terms exactly as shown to the customer.
    pub terms: String,
}

impl MandateDocument {
    /// The account as the merchant and the staff see it: bank and last four digits.
    pub fn masked_account(&self) -> String {
        format!("{} **** {}", self.bank_name, self.account_last4)
    }

    pub fn terms_sha256(&self) -> String {
        hex::encode(Sha256::digest(self.terms.as_bytes()))
    }
}

/// `D:YYYYMMDDHHmmSSZ` from an RFC 3339 timestamp (empty when it cannot be read).
fn pdf_date(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("D:%Y%m%d%H%M%SZ")
                .to_string()
        })
        .unwrap_or_default()
}

/// The document as a PDF file.
pub fn mandate_document(input: &MandateDocument) -> Vec<u8> {
    let d = input;
    let mut blocks = vec![
        Block::Title("Mandato de cargo en cuenta".into()),
        Block::Paragraph(format!(
            "{} · {}",
            spanish::method(d.method),
            d.commerce_name
        )),
        Block::Rule,
        Block::Heading("Comercio".into()),
        Block::Row("Nombre".into(), d.commerce_name.clone()),
        Block::Row("Código".into(), d.commerce_code.clone()),
        Block::Heading("Cliente".into()),
        Block::Row("Nombre".into(), d.customer_name.clone()),
        Block::Row("RUT".into(), d.customer_rut.clone()),
        Block::Heading("Mandato".into()),
        Block::Row("N° de mandato".into(), d.mandate_id.clone()),
        Block::Row(
            "Identificador interno".into(),
            d.mandate_internal_id.clone(),
        ),
        Block::Row("Nombre".into(), d.mandate_name.clone()),
    ];
    if let Some(detail) = d.mandate_detail.as_deref().filter(|t| !t.is_empty()) {
        blocks.push(Block::Row("Detalle".into(), detail.to_string()));
    }
    blocks.extend([
        Block::Row(
            "Tipo".into(),
            format!(
                "{} ({})",
                spanish::mandate_type(d.mandate_type),
                d.mandate_type.name()
            ),
        ),
        Block::Row("Montos".into(), d.charges_summary.clone()),
    ]);
    if !d.installments.is_empty() {
        blocks.push(Block::Heading("Cuotas programadas".into()));
        for i in &d.installments {
            blocks.push(Block::Row(
                format!("Cuota {}", i.id),
                format!(
                    "{} · vence el {}",
                    spanish::money(&i.amount),
                    spanish::date(i.due_date)
                ),
            ));
        }
    }
    blocks.extend([
        Block::Heading("Cuenta de cargo".into()),
        Block::Row(
            "Medio de pago".into(),
            spanish::method(d.method).to_string(),
        ),
        Block::Row("Banco".into(), d.bank_name.clone()),
        Block::Row(
            "Tipo de cuenta".into(),
            spanish::account_type(&d.account_type).to_string(),
        ),
        Block::Row("Cuenta".into(), d.masked_account()),
        Block::Row("RUT del titular".into(), d.holder_rut.clone()),
        Block::Heading("Aceptación".into()),
        Block::Row("Fecha y hora (UTC)".into(), d.accepted_at.clone()),
    ]);
    if let Some(ip) = &d.ip {
        blocks.push(Block::Row("Dirección IP".into(), ip.clone()));
    }
    blocks.extend([
        Block::Row(
            "Forma".into(),
            "Aceptación electrónica en el enlace de activación (Magic Link)".into(),
        ),
        Block::Heading("Términos aceptados".into()),
    ]);
    for paragraph in d.terms.split('\n').filter(|p| !p.trim().is_empty()) {
        blocks.push(Block::Paragraph(paragraph.to_string()));
    }
    blocks.extend([
        Block::Rule,
        Block::Small("SHA-256 del texto de los términos (UTF-8):".into()),
        Block::Small(d.terms_sha256()),
    ]);

    let footer = format!(
        "Mandato {} · {} · aceptado el {}",
        d.mandate_id, d.commerce_name, d.accepted_at
    );
    let subject = format!("Mandato {} de {}", d.mandate_id, d.customer_name);
    pdf::render(
        &blocks,
        &Meta {
            title: "Mandato de cargo en cuenta",
            subject: &subject,
            author: &d.commerce_name,
            creation_date: &pdf_date(&d.accepted_at),
            footer: &footer,
        },
    )
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use rust_decimal::Decimal;

    use super::*;
    use crate::domain::money::Currency;

    fn sample(installments: usize) -> MandateDocument {
        let terms = spanish::terms(
            &spanish::TermsSubject {
                commerce_name: "Gimnasio Ñuñoa (Centro)",
                commerce_code: "76123456-0",
                mandate_id: "GYM-2026-001",
                mandate_name: "Plan mensual",
                summary: "$29.990 mensual, 12 cuotas desde el 05-12-2026",
            },
            PaymentMethod::Epac,
        );
        MandateDocument {
            commerce_name: "Gimnasio Ñuñoa (Centro)".into(),
            commerce_code: "76123456-0".into(),
            customer_name: "Ana Pérez Soto".into(),
            customer_rut: "12345678-5".into(),
            mandate_id: "GYM-2026-001".into(),
            mandate_internal_id: "man_0193".into(),
            mandate_name: "Plan mensual".into(),
            mandate_detail: Some("Gimnasio".into()),
            mandate_type: MandateType::Subscription,
            charges_summary: "$29.990 mensual, 12 cuotas desde el 05-12-2026".into(),
            installments: (0..installments)
                .map(|i| DocumentInstallment {
                    id: format!("c{}", i + 1),
                    due_date: NaiveDate::from_ymd_opt(2026, 12, 5).unwrap(),
                    amount: Money::from_decimal(Decimal::from_str("29990").unwrap(), Currency::Clp)
                        .unwrap(),
                })
                .collect(),
            method: PaymentMethod::Epac,
            bank_name: "BancoEstado".into(),
            account_type: "CHECKING".into(),
            account_last4: "0000".into(),
            holder_rut: "12345678-5".into(),
            accepted_at: "2026-11-22T08:12:10.123Z".into(),
            ip: Some("127.0.0.1".into()),
            terms,
        }
    }

    fn text_of(bytes: &[u8]) -> (usize, String) {
        let doc = lopdf::Document::load_mem(bytes).expect("a PDF that parses");
        let pages: Vec<u32> = doc.get_pages().keys().copied().collect();
        let text = doc.extract_text(&pages).expect("text extracts");
        (pages.len(), text)
    }

    #[test]
    fn the_document_is_a_pdf_stating_the_mandate_with_the_account_masked() {
        let input = sample(12);
        let bytes = mandate_document(&input);
        assert!(bytes.starts_with(b"%PDF-"));
        assert!(bytes.ends_with(b"%%EOF\n"));
        let (pages, text) = text_of(&bytes);
        assert!(pages >= 1);
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for expected in [
            "BancoEstado **** 0000",
            "12345678-5",
            "GYM-2026-001",
            "Plan mensual",
            "Ana Pérez Soto",
            "Gimnasio Ñuñoa (Centro)",
            "76123456-0",
            "$29.990",
            "2026-11-22T08:12:10.123Z",
            "MANDATO ELECTRÓNICO DE CARGO EN CUENTA (EPAC)",
            &input.terms_sha256(),
        ] {
            assert!(flat.contains(expected), "missing {expected:?} in {flat}");
        }
    }

    #[test]
    fn the_full_account_number_never_appears() {
        // The account number the customer typed; only its last four reach the document.
        let full = "123450000";
        let bytes = mandate_document(&sample(3));
        let (_, text) = text_of(&bytes);
        assert!(!text.contains(full));
        assert!(!bytes.windows(full.len()).any(|w| w == full.as_bytes()));
    }

    #[test]
    fn long_schedules_flow_onto_more_pages_and_output_is_deterministic() {
        let input = sample(120);
        let bytes = mandate_document(&input);
        let (pages, text) = text_of(&bytes);
        assert!(pages > 1, "{pages} page(s)");
        assert!(text.contains("c120"));
        assert_eq!(bytes, mandate_document(&input));
    }
}
