//! Payment instruments as the customer types them: checked here (Luhn, expiry, CVV; bank,
//! account type, account number, holder RUT), then handed to the processor and forgotten.
//! Only a token, the brand and the last four digits are ever stored.

use super::rut::Rut;
use super::state::PaymentMethod;
use crate::secret::Secret;

/// Chilean banks accepted for direct debit: (code, name).
pub const BANKS: &[(&str, &str)] = &[
    ("001", "Banco de Chile / Edwards"),
    ("009", "Banco Internacional"),
    ("012", "BancoEstado"),
    ("014", "Scotiabank"),
    ("016", "BCI"),
    ("028", "Banco BICE"),
    ("031", "HSBC Bank"),
    ("037", "Banco Santander"),
    ("039", "Banco Itaú"),
    ("049", "Banco Security"),
    ("051", "Banco Falabella"),
    ("053", "Banco Ripley"),
    ("055", "Banco Consorcio"),
    ("672", "Coopeuch"),
];

pub const ACCOUNT_TYPES: &[(&str, &str)] = &[
    ("CHECKING", "Cuenta corriente"),
    ("VISTA", "Cuenta vista / RUT"),
    ("SAVINGS", "Cuenta de ahorro"),
];

pub fn bank_name(code: &str) -> Option<&'static str> {
    BANKS.iter().find(|(c, _)| *c == code).map(|(_, n)| *n)
}

#[derive(Debug, Clone)]
pub enum InstrumentInput {
    Card {
        method: PaymentMethod,
        number: Secret<String>,
        expiry_month: u32,
        expiry_year: i32,
        cvv: Secret<String>,
    },
    Bank {
        method: PaymentMethod,
        bank_code: String,
        account_type: String,
        account_number: Secret<String>,
        holder_rut: Rut,
    },
}

/// One problem with one part of an instrument; `field` is the part's name (`number`,
/// `expiry`, `cvv`, `bankCode`, `accountType`, `accountNumber`, `holderRut`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstrumentProblem {
    pub field: &'static str,
    pub code: &'static str,
    pub message: &'static str,
}

fn problem(field: &'static str, code: &'static str, message: &'static str) -> InstrumentProblem {
    InstrumentProblem {
        field,
        code,
        message,
    }
}

/// What is kept of an enrolled instrument besides the processor's token: its method and, for a
/// bank account, the bank, the account type and the holder. Nothing secret: this is what the
/// mandate, its document and the staff may show. A card enrolled on the acquirer's own page
/// (Transbank Oneclick) is known only by these facts; one typed on our page (the sandbox's
/// simulation) is reduced to them once enrolled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstrumentFacts {
    Card {
        method: PaymentMethod,
    },
    Bank {
        method: PaymentMethod,
        bank_code: String,
        account_type: String,
        holder_rut: Rut,
    },
}

impl InstrumentFacts {
    pub fn method(&self) -> PaymentMethod {
        match self {
            InstrumentFacts::Card { method } | InstrumentFacts::Bank { method, .. } => *method,
        }
    }
}

impl InstrumentInput {
    pub fn method(&self) -> PaymentMethod {
        match self {
            InstrumentInput::Card { method, .. } | InstrumentInput::Bank { method, .. } => *method,
        }
    }

    /// What may be kept of the instrument once enrolled.
    pub fn facts(&self) -> InstrumentFacts {
        match self {
            InstrumentInput::Card { method, .. } => InstrumentFacts::Card { method: *method },
            InstrumentInput::Bank {
                method,
                bank_code,
                account_type,
                holder_rut,
                ..
            } => InstrumentFacts::Bank {
                method: *method,
                bank_code: bank_code.clone(),
                account_type: account_type.clone(),
                holder_rut: holder_rut.clone(),
            },
        }
    }

    /// The last four digits of the card or account number.
    pub fn last4(&self) -> String {
        let digits = match self {
            InstrumentInput::Card { number, .. } => number.expose(),
            InstrumentInput::Bank { account_number, .. } => account_number.expose(),
        };
        digits[digits.len().saturating_sub(4)..].to_string()
    }

    /// A card from its parts; `today` is (year, month) to refuse expired cards.
    pub fn card(
        method: PaymentMethod,
        number: &str,
        expiry: &str,
        cvv: &str,
        today: (i32, u32),
    ) -> Result<InstrumentInput, Vec<InstrumentProblem>> {
        let mut problems = Vec::new();
        let digits: String = number
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '-')
            .collect();
        if !method.is_card() {
            problems.push(problem(
                "method",
                "NOT_A_CARD",
                "this payment method is not a card",
            ));
        }
        if !(12..=19).contains(&digits.len()) || !digits.chars().all(|c| c.is_ascii_digit()) {
            problems.push(problem("number", "INVALID_CARD_NUMBER", "12 to 19 digits"));
        } else if !luhn_valid(&digits) {
            problems.push(problem(
                "number",
                "INVALID_CARD_NUMBER",
                "the card number is not valid (check digit)",
            ));
        }
        let expiry_parts = parse_expiry(expiry);
        match expiry_parts {
            None => problems.push(problem(
                "expiry",
                "INVALID_EXPIRY",
                "month and year as MM/YY",
            )),
            Some((month, year)) if (year, month) < today => {
                problems.push(problem("expiry", "CARD_EXPIRED", "the card has expired"))
            }
            Some(_) => {}
        }
        if !(3..=4).contains(&cvv.len()) || !cvv.chars().all(|c| c.is_ascii_digit()) {
            problems.push(problem("cvv", "INVALID_CVV", "3 or 4 digits"));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let (expiry_month, expiry_year) = expiry_parts.expect("checked");
        Ok(InstrumentInput::Card {
            method,
            number: Secret::new(digits),
            expiry_month,
            expiry_year,
            cvv: Secret::new(cvv.to_string()),
        })
    }

    /// A bank account for PAC/EPAC debit from its parts.
    pub fn bank(
        method: PaymentMethod,
        bank_code: &str,
        account_type: &str,
        account_number: &str,
        holder_rut: &str,
    ) -> Result<InstrumentInput, Vec<InstrumentProblem>> {
        let mut problems = Vec::new();
        if method.is_card() {
            problems.push(problem(
                "method",
                "NOT_A_BANK_METHOD",
                "this payment method is a card",
            ));
        }
        if bank_name(bank_code).is_none() {
            problems.push(problem(
                "bankCode",
                "UNKNOWN_BANK",
                "choose a bank from the list",
            ));
        }
        if !ACCOUNT_TYPES.iter().any(|(t, _)| *t == account_type) {
            problems.push(problem(
                "accountType",
                "INVALID_ACCOUNT_TYPE",
                "CHECKING, VISTA or SAVINGS",
            ));
        }
        let digits: String = account_number
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '-')
            .collect();
        if !(4..=20).contains(&digits.len()) || !digits.chars().all(|c| c.is_ascii_digit()) {
            problems.push(problem(
                "accountNumber",
                "INVALID_ACCOUNT_NUMBER",
                "4 to 20 digits",
            ));
        }
        let rut = Rut::parse(holder_rut);
        if rut.is_err() {
            problems.push(problem(
                "holderRut",
                "INVALID_RUT",
                "the account holder's RUT is not valid",
            ));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(InstrumentInput::Bank {
            method,
            bank_code: bank_code.to_string(),
            account_type: account_type.to_string(),
            account_number: Secret::new(digits),
            holder_rut: rut.expect("checked"),
        })
    }
}

/// `MM/YY`, `MM/YYYY` or `MM-YY`.
fn parse_expiry(text: &str) -> Option<(u32, i32)> {
    let (m, y) = text.trim().split_once(['/', '-'])?;
    let month: u32 = m.trim().parse().ok().filter(|m| (1..=12).contains(m))?;
    let year: i32 = match y.trim().len() {
        2 => 2000 + y.trim().parse::<i32>().ok()?,
        4 => y.trim().parse().ok()?,
        _ => return None,
    };
    Some((month, year))
}

pub fn luhn_valid(digits: &str) -> bool {
    let mut sum = 0;
    for (i, c) in digits.chars().rev().enumerate() {
        let Some(mut d) = c.to_digit(10) else {
            return false;
        };
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    sum % 10 == 0
}

/// The card brand from its number's prefix, for display.
pub fn card_brand(digits: &str) -> &'static str {
    match digits.as_bytes() {
        [b'4', ..] => "VISA",
        [b'5', b'1'..=b'5', ..] | [b'2', b'2'..=b'7', ..] => "MASTERCARD",
        [b'3', b'4' | b'7', ..] => "AMEX",
        _ => "CARD",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn() {
        for (number, ok) in [
            ("4111111111111111", true),
            ("4242424242424242", true),
            ("4111111111111112", false),
            ("5555555555554444", true),
        ] {
            assert_eq!(luhn_valid(number), ok, "{number}");
        }
    }

    #[test]
    fn cards_are_checked_part_by_part() {
        let today = (2026, 11);
        assert!(
            InstrumentInput::card(
                PaymentMethod::CreditCard,
                "4111 1111 1111 1111",
                "12/30",
                "123",
                today
            )
            .is_ok()
        );
        let problems = InstrumentInput::card(
            PaymentMethod::CreditCard,
            "4111111111111112",
            "10/26",
            "12",
            today,
        )
        .unwrap_err();
        let fields: Vec<&str> = problems.iter().map(|p| p.field).collect();
        assert_eq!(fields, ["number", "expiry", "cvv"]);
        assert!(
            InstrumentInput::card(
                PaymentMethod::CreditCard,
                "4111111111111111",
                "11/26",
                "123",
                today
            )
            .is_ok(),
            "valid through its month"
        );
        assert!(
            InstrumentInput::card(
                PaymentMethod::Pac,
                "4111111111111111",
                "12/30",
                "123",
                today
            )
            .is_err()
        );
    }

    #[test]
    fn bank_accounts_are_checked_part_by_part() {
        let ok = InstrumentInput::bank(
            PaymentMethod::Pac,
            "012",
            "CHECKING",
            "123450000",
            "12.345.678-5",
        )
        .unwrap();
        assert_eq!(ok.last4(), "0000");
        let problems =
            InstrumentInput::bank(PaymentMethod::Epac, "999", "GOLD", "12", "12345678-9")
                .unwrap_err();
        let fields: Vec<&str> = problems.iter().map(|p| p.field).collect();
        assert_eq!(
            fields,
            ["bankCode", "accountType", "accountNumber", "holderRut"]
        );
    }
}
