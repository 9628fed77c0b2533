//! The mandate document: what the customer accepted, with whom, on which bank account or card
//! (masked) and when, with the SHA-256 of the terms' exact text, sent to the merchant as
//! `fileBase64` (EPAC) or signed by the customer (signature-gated activation).
//!
//! The document never holds a full account or card number: [`ChargedInstrument`] keeps only
//! their [`LastFour`].

use chrono::NaiveDate;
use sha2::{Digest, Sha256};

use super::layout::{self, Block, Meta};
use super::spanish;
use mandato_core::domain::money::Money;
use mandato_core::domain::rut::dotted;
use mandato_core::domain::state::{MandateType, PaymentMethod};

/// One scheduled installment, as listed in the document.
#[derive(Debug, Clone)]
pub struct DocumentInstallment {
    pub id: String,
    pub due_date: NaiveDate,
    pub amount: Money,
}

/// The last four digits of a card or account number: all the document ever shows of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastFour(String);

impl LastFour {
    /// The last four digits of `number` (fewer when it has fewer); anything but digits is
    /// dropped, so a full number given by mistake still shows only its end.
    pub fn of(number: &str) -> LastFour {
        let digits: Vec<char> = number.chars().filter(char::is_ascii_digit).collect();
        LastFour(digits[digits.len().saturating_sub(4)..].iter().collect())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What the mandate charges: a card or a bank account, each with the rows that describe it.
#[derive(Debug, Clone)]
pub enum ChargedInstrument {
    /// A credit, debit or prepaid card. A card names no holder RUT: the customer declares in
    /// the terms being its holder or authorized by them.
    Card {
        method: PaymentMethod,
        /// As the processor names it (`VISA`), when it does.
        brand: Option<String>,
        last4: LastFour,
    },
    /// A bank account debited by PAC or EPAC.
    BankAccount {
        method: PaymentMethod,
        bank_name: String,
        /// The account type's code (`CHECKING`, `VISTA`, `SAVINGS`).
        account_type: String,
        last4: LastFour,
        /// Normalized, `12345678-5`.
        holder_rut: String,
    },
}

impl ChargedInstrument {
    pub fn method(&self) -> PaymentMethod {
        match self {
            ChargedInstrument::Card { method, .. }
            | ChargedInstrument::BankAccount { method, .. } => *method,
        }
    }

    /// The instrument as the merchant and the staff see it: "BancoEstado **** 0000",
    /// "VISA terminada en 4242".
    pub fn masked(&self) -> String {
        match self {
            ChargedInstrument::Card { brand, last4, .. } => {
                spanish::card(brand.as_deref(), last4.as_str())
            }
            ChargedInstrument::BankAccount {
                bank_name, last4, ..
            } => format!("{bank_name} **** {}", last4.as_str()),
        }
    }

    /// The document's title, as the terms' heading names the mandate.
    fn title(&self) -> &'static str {
        match self {
            ChargedInstrument::Card { .. } => "Mandato de cargo en tarjeta",
            ChargedInstrument::BankAccount { .. } => "Mandato de cargo en cuenta",
        }
    }

    /// The section that describes the instrument.
    fn blocks(&self) -> Vec<Block> {
        let method = Block::Row(
            "Medio de pago".into(),
            spanish::method(self.method()).to_string(),
        );
        match self {
            ChargedInstrument::Card { .. } => vec![
                Block::Heading("Tarjeta de cargo".into()),
                method,
                Block::Row("Tarjeta".into(), self.masked()),
            ],
            ChargedInstrument::BankAccount {
                bank_name,
                account_type,
                holder_rut,
                ..
            } => vec![
                Block::Heading("Cuenta de cargo".into()),
                method,
                Block::Row("Banco".into(), bank_name.clone()),
                Block::Row(
                    "Tipo de cuenta".into(),
                    spanish::account_type(account_type).to_string(),
                ),
                Block::Row("Cuenta".into(), self.masked()),
                Block::Row("RUT del titular".into(), dotted(holder_rut)),
            ],
        }
    }
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
    pub instrument: ChargedInstrument,
    /// RFC 3339 UTC, as recorded with the acceptance.
    pub accepted_at: String,
    pub ip: Option<String>,
    /// The terms exactly as shown to the customer.
    pub terms: String,
}

impl MandateDocument {
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
    let title = d.instrument.title();
    let mut blocks = vec![
        Block::Title(title.into()),
        Block::Paragraph(format!(
            "{} · {}",
            spanish::method(d.instrument.method()),
            d.commerce_name
        )),
        Block::Rule,
        Block::Heading("Comercio".into()),
        Block::Row("Nombre".into(), d.commerce_name.clone()),
        Block::Row("Código".into(), dotted(&d.commerce_code)),
        Block::Heading("Cliente".into()),
        Block::Row("Nombre".into(), d.customer_name.clone()),
        Block::Row("RUT".into(), dotted(&d.customer_rut)),
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
    blocks.extend(d.instrument.blocks());
    blocks.extend([
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
    layout::render(
        &blocks,
        &Meta {
            title,
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
    use crate::documents::poppler::{page_count, poppler, poppler_text, text_of};
    use mandato_core::domain::money::Currency;

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
            instrument: ChargedInstrument::BankAccount {
                method: PaymentMethod::Epac,
                bank_name: "BancoEstado".into(),
                account_type: "CHECKING".into(),
                last4: LastFour::of("123450000"),
                holder_rut: "12345678-5".into(),
            },
            accepted_at: "2026-11-22T08:12:10.123Z".into(),
            ip: Some("127.0.0.1".into()),
            terms,
        }
    }

    #[test]
    fn the_document_states_the_mandate_in_spanish_with_the_account_masked() {
        let mut input = sample(12);
        input.customer_name = "José Muñoz Ñúñez".into();
        input.installments[11].amount =
            Money::from_decimal(Decimal::from_str("1234567").unwrap(), Currency::Clp).unwrap();
        let bytes = mandate_document(&input);
        assert!(bytes.starts_with(b"%PDF-"));
        assert_eq!(page_count(&bytes), 2, "the terms continue on a second page");
        let text = text_of(&bytes);
        for expected in [
            "Mandato de cargo en cuenta",
            "José Muñoz Ñúñez",
            "Gimnasio Ñuñoa (Centro)",
            "BancoEstado **** 0000",
            "RUT 12.345.678-5",
            "RUT del titular 12.345.678-5",
            "GYM-2026-001",
            "Plan mensual",
            "Suscripción (SUBSCRIPTION)",
            "76123456-0",
            "Cuota c1 $29.990 · vence el 05-12-2026",
            "Cuota c12 $1.234.567 · vence el 05-12-2026",
            "$29.990 mensual, 12 cuotas desde el 05-12-2026",
            "2026-11-22T08:12:10.123Z",
            "Dirección IP 127.0.0.1",
            "Aceptación electrónica en el enlace de activación (Magic Link)",
            "MANDATO ELECTRÓNICO DE CARGO EN CUENTA (EPAC)",
            "Página 1 de 2",
            &input.terms_sha256(),
        ] {
            assert!(text.contains(expected), "missing {expected:?} in {text}");
        }
    }

    fn card_sample() -> MandateDocument {
        let mut input = sample(3);
        input.terms = spanish::terms(
            &spanish::TermsSubject {
                commerce_name: "Gimnasio Ñuñoa (Centro)",
                commerce_code: "76123456-0",
                mandate_id: "GYM-2026-001",
                mandate_name: "Plan mensual",
                summary: "$29.990 mensual, 12 cuotas desde el 05-12-2026",
            },
            PaymentMethod::CreditCard,
        );
        input.instrument = ChargedInstrument::Card {
            method: PaymentMethod::CreditCard,
            brand: Some("VISA".into()),
            last4: LastFour::of("4111 1111 1111 4242"),
        };
        input
    }

    #[test]
    fn a_card_mandate_names_the_card_and_no_bank_account() {
        let input = card_sample();
        let bytes = mandate_document(&input);
        let text = text_of(&bytes);
        for expected in [
            "Mandato de cargo en tarjeta",
            "Tarjeta de cargo",
            "Medio de pago Tarjeta de crédito",
            "Tarjeta VISA terminada en 4242",
            "MANDATO DE CARGO AUTOMÁTICO EN TARJETA",
            "RUT 12.345.678-5",
            &input.terms_sha256(),
        ] {
            assert!(text.contains(expected), "missing {expected:?} in {text}");
        }
        for absent in [
            "Banco",
            "Tipo de cuenta",
            "Cuenta de cargo",
            "RUT del titular",
            "****",
            "—",
            "4111",
        ] {
            assert!(!text.contains(absent), "{absent:?} in {text}");
        }
        let info = poppler_text("pdfinfo", &["PDF"], &bytes);
        assert!(info.contains("Mandato de cargo en tarjeta"), "{info}");
        assert_eq!(bytes, mandate_document(&input), "deterministic");
    }

    #[test]
    fn a_card_without_a_known_brand_is_named_a_card() {
        let mut input = card_sample();
        input.instrument = ChargedInstrument::Card {
            method: PaymentMethod::PrepaidCard,
            brand: None,
            last4: LastFour::of("4242"),
        };
        let text = text_of(&mandate_document(&input));
        assert!(text.contains("Medio de pago Tarjeta de prepago"), "{text}");
        assert!(text.contains("Tarjeta Tarjeta terminada en 4242"), "{text}");
    }

    #[test]
    fn only_the_last_four_digits_are_kept() {
        assert_eq!(LastFour::of("4111111111114242").as_str(), "4242");
        assert_eq!(LastFour::of("4111-1111-1111-4242").as_str(), "4242");
        assert_eq!(LastFour::of("0000").as_str(), "0000");
        assert_eq!(LastFour::of("12").as_str(), "12");
    }

    #[test]
    fn every_spanish_sign_prints_as_itself() {
        let mut input = sample(0);
        input.mandate_detail = Some("¿Año? ¡Sí! 1º 2ª pingüino ÁÉÍÓÚÜ $".into());
        let text = text_of(&mandate_document(&input));
        assert!(
            text.contains("Detalle ¿Año? ¡Sí! 1º 2ª pingüino ÁÉÍÓÚÜ $"),
            "{text}"
        );
    }

    #[test]
    fn the_full_account_number_never_appears() {
        // The account number the customer typed; only its last four reach the document.
        let full = "123450000";
        let bytes = mandate_document(&sample(3));
        assert!(!text_of(&bytes).contains(full));
        assert!(!bytes.windows(full.len()).any(|w| w == full.as_bytes()));
    }

    #[test]
    fn long_schedules_flow_onto_more_pages_each_numbered() {
        let bytes = mandate_document(&sample(120));
        let pages = page_count(&bytes);
        assert!(pages > 1, "{pages} page(s)");
        let parsed = lopdf::Document::load_mem(&bytes).expect("lopdf reads it back");
        assert_eq!(parsed.get_pages().len(), pages);
        let text = text_of(&bytes);
        assert!(text.contains("Cuota c120"));
        for page in 1..=pages {
            assert!(
                text.contains(&format!("Página {page} de {pages}")),
                "{page}"
            );
        }
    }

    #[test]
    fn the_same_mandate_gives_the_same_bytes() {
        let input = sample(12);
        let first = mandate_document(&input);
        assert_eq!(first, mandate_document(&input));
        let mut other = input.clone();
        other.customer_name = "Ana Pérez Sota".into();
        let second = mandate_document(&other);
        assert_ne!(
            Sha256::digest(&first),
            Sha256::digest(&second),
            "the hash tells documents apart"
        );
        // No clock: the creation date is the acceptance.
        let info = poppler_text("pdfinfo", &["-isodates", "PDF"], &first);
        assert!(info.contains("2026-11-22T08:12:10"), "{info}");
    }

    #[test]
    fn the_first_page_renders_to_an_image() {
        let mut input = sample(12);
        input.customer_name = "José Muñoz Ñúñez".into();
        let pdf = mandate_document(&input);
        // MANDATO_PDF_SAMPLE=path keeps the document, to look at.
        if let Ok(path) = std::env::var("MANDATO_PDF_SAMPLE") {
            std::fs::write(path, &pdf).unwrap();
        }
        let args = [
            "-png",
            "-r",
            "60",
            "-f",
            "1",
            "-l",
            "1",
            "-singlefile",
            "PDF",
            "ROOT",
        ];
        let (_, dir) = poppler("pdftoppm", &args, &pdf);
        let png = std::fs::read(dir.path().join("page.png")).expect("page 1 as PNG");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG image");
        assert!(png.len() > 10_000, "with text drawn: {} bytes", png.len());
    }

    #[test]
    fn only_the_glyphs_used_are_embedded() {
        // Two full faces are 825 KB; a one-page mandate carries a few kilobytes of them.
        let bytes = mandate_document(&sample(12));
        assert!(bytes.len() < 60_000, "{} bytes", bytes.len());
        let fonts = poppler_text("pdffonts", &["PDF"], &bytes);
        for name in ["+LiberationSans ", "+LiberationSans-Bold "] {
            let line = fonts
                .lines()
                .find(|l| l.contains(name))
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .unwrap_or_else(|| panic!("{name} in {fonts}"));
            // Type, encoding, embedded, subset, ToUnicode.
            assert!(line.contains("CID TrueType"), "{line}");
            assert!(line.contains("Identity-H yes yes yes"), "{line}");
        }
    }
}
