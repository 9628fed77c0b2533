//! The three kinds of webhook events (CONTRACT 14): `activation`, `payment` and `signature`,
//! the names of the events API's `type`, `mandato listen --events` and the stored kind. Filters
//! also take the other names an integrator meets for them: a `mandato trigger` scenario
//! (`payment.paid`, `mandate.cancelled`) and a signature body's `event` (`SIGNATURE_COMPLETED`,
//! `SIGNATORY_SIGNED`).

/// The kinds, as stored and sent.
pub const EVENT_KINDS: [&str; 3] = ["activation", "payment", "signature"];

/// The kind a name stands for, or `None` when it names none.
pub fn kind_named(name: &str) -> Option<&'static str> {
    let name = name.trim();
    if name.starts_with("SIGNATURE_") || name.starts_with("SIGNATORY_") {
        return Some("signature");
    }
    // A trigger scenario: its kind, then what happened. A cancellation is sent as an
    // activation-kind event (the mandate's state changed).
    let head = match name.split_once('.') {
        Some(("mandate", _)) => "activation",
        Some((head, _)) => head,
        None => name,
    };
    EVENT_KINDS.into_iter().find(|k| *k == head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_scenarios_and_body_names_name_a_kind() {
        for (name, kind) in [
            ("payment", "payment"),
            ("payment.paid", "payment"),
            ("payment.reversed", "payment"),
            ("activation", "activation"),
            ("mandate.cancelled", "activation"),
            ("signature", "signature"),
            ("signature.completed", "signature"),
            ("SIGNATURE_COMPLETED", "signature"),
            ("SIGNATORY_SIGNED", "signature"),
        ] {
            assert_eq!(kind_named(name), Some(kind), "{name}");
        }
        for name in ["", "pay", "Payment", "mandate", "refund.paid", "SIGNATUREX"] {
            assert_eq!(kind_named(name), None, "{name}");
        }
    }
}
