//! States, types and payment methods with their wire ids (CONTRACT 5), and the installment
//! state machine. Every state travels as `{"id": <number>, "name": "<NAME>"}`.

/// Declares an enum whose variants each carry a wire id and a wire name, with lookups both ways.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = ($id:expr, $text:expr)),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn id(self) -> i64 {
                match self { $($name::$variant => $id),+ }
            }

            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn from_id(id: i64) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.id() == id)
            }

            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.name() == name)
            }
        }
    };
}

wire_enum!(
    /// The life of a mandate.
    MandateState {
        Pending = (1, "PENDING"),
        Active = (2, "ACTIVE"),
        Cancelled = (3, "CANCELLED"),
        Finished = (4, "FINISHED"),
        Deleted = (5, "DELETED"),
    }
);

impl MandateState {
    /// Only mandates still awaiting activation or active may be cancelled.
    pub fn can_cancel(self) -> bool {
        matches!(self, MandateState::Pending | MandateState::Active)
    }

    /// Installments may be added, paid or annulled while the mandate is still alive.
    pub fn accepts_installment_changes(self) -> bool {
        matches!(self, MandateState::Pending | MandateState::Active)
    }
}

wire_enum!(
    /// The kind of commitment, which decides how its installments come to be.
    MandateType {
        Dynamic = (1, "DYNAMIC"),
        Permanent = (2, "PERMANENT"),
        Subscription = (3, "SUBSCRIPTION"),
        Onepay = (4, "ONEPAY"),
    }
);

wire_enum!(
    /// The life of one installment.
    InstallmentState {
        Pending = (1, "PENDING"),
        InProcess = (9, "IN_PROCESS"),
        InValidation = (6, "IN_VALIDATION"),
        Paid = (2, "PAID"),
        Rejected = (-99, "REJECTED"),
        Annulled = (4, "ANNULLED"),
        Reversed = (5, "REVERSED"),
    }
);

impl InstallmentState {
    /// The state machine of CONTRACT 5; every other move is `INSTALLMENT_STATE_CONFLICT`.
    pub fn can_move_to(self, to: InstallmentState) -> bool {
        use InstallmentState::*;
        matches!(
            (self, to),
            (Pending, InProcess)
                | (InProcess, Paid | Rejected | InValidation)
                | (InValidation, Paid | Rejected)
                | (Rejected, InProcess)
                | (Paid, Reversed)
                | (Pending | Rejected, Paid)
                | (Pending | Rejected, Annulled)
        )
    }

    /// Final for the purpose of finishing a mandate: nothing more will be charged.
    pub fn is_settled(self) -> bool {
        use InstallmentState::*;
        matches!(self, Paid | Annulled | Reversed)
    }

    /// Not yet submitted for charge, so a cancellation annuls it.
    pub fn annulled_on_cancel(self) -> bool {
        matches!(self, InstallmentState::Pending | InstallmentState::Rejected)
    }
}

wire_enum!(
    /// Payment methods that activate a mandate (seed 2.4).
    PaymentMethod {
        CreditCard = (3, "CREDIT_CARD"),
        DebitCard = (4, "DEBIT_CARD"),
        PrepaidCard = (11, "PREPAID_CARD"),
        Pac = (5, "PAC"),
        Epac = (6, "EPAC"),
        DirectEpac = (14, "DIRECT_EPAC"),
    }
);

impl PaymentMethod {
    pub fn is_card(self) -> bool {
        matches!(
            self,
            PaymentMethod::CreditCard | PaymentMethod::DebitCard | PaymentMethod::PrepaidCard
        )
    }
}

#[cfg(test)]
mod tests {
    use super::InstallmentState::*;
    use super::*;

    #[test]
    fn wire_ids_match_the_contract() {
        let cases = [
            (Pending, 1, "PENDING"),
            (InProcess, 9, "IN_PROCESS"),
            (InValidation, 6, "IN_VALIDATION"),
            (Paid, 2, "PAID"),
            (Rejected, -99, "REJECTED"),
            (Annulled, 4, "ANNULLED"),
            (Reversed, 5, "REVERSED"),
        ];
        for (state, id, name) in cases {
            assert_eq!((state.id(), state.name()), (id, name));
            assert_eq!(InstallmentState::from_id(id), Some(state));
        }
        assert_eq!(MandateState::from_id(3), Some(MandateState::Cancelled));
        assert_eq!(PaymentMethod::from_id(14), Some(PaymentMethod::DirectEpac));
        assert_eq!(PaymentMethod::from_id(7), None);
    }

    #[test]
    fn installment_moves_follow_the_contract() {
        let allowed = [
            (Pending, InProcess),
            (InProcess, Paid),
            (InProcess, Rejected),
            (InProcess, InValidation),
            (InValidation, Paid),
            (InValidation, Rejected),
            (Rejected, InProcess),
            (Paid, Reversed),
            (Pending, Paid),
            (Rejected, Paid),
            (Pending, Annulled),
            (Rejected, Annulled),
        ];
        for from in InstallmentState::ALL {
            for to in InstallmentState::ALL {
                let expected = allowed.contains(&(*from, *to));
                assert_eq!(from.can_move_to(*to), expected, "{from:?} -> {to:?}");
            }
        }
    }
}

/// Why a charge was declined. Soft declines may succeed later and are retried per the
/// commerce's policy; hard declines are not retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectionCode {
    InsufficientFunds,
    CardDeclined,
    ExpiredCard,
    AccountClosed,
    BankValidationFailed,
}

impl RejectionCode {
    pub const ALL: &'static [RejectionCode] = &[
        RejectionCode::InsufficientFunds,
        RejectionCode::CardDeclined,
        RejectionCode::ExpiredCard,
        RejectionCode::AccountClosed,
        RejectionCode::BankValidationFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RejectionCode::InsufficientFunds => "INSUFFICIENT_FUNDS",
            RejectionCode::CardDeclined => "CARD_DECLINED",
            RejectionCode::ExpiredCard => "EXPIRED_CARD",
            RejectionCode::AccountClosed => "ACCOUNT_CLOSED",
            RejectionCode::BankValidationFailed => "BANK_VALIDATION_FAILED",
        }
    }

    pub fn parse(s: &str) -> Option<RejectionCode> {
        Self::ALL.iter().copied().find(|c| c.as_str() == s)
    }

    pub fn is_soft(self) -> bool {
        self == RejectionCode::InsufficientFunds
    }

    /// The message shown with the code.
    pub fn message(self) -> &'static str {
        match self {
            RejectionCode::InsufficientFunds => "insufficient funds",
            RejectionCode::CardDeclined => "the card was declined by its issuer",
            RejectionCode::ExpiredCard => "the card has expired",
            RejectionCode::AccountClosed => "the bank account is closed",
            RejectionCode::BankValidationFailed => "the bank refused the debit",
        }
    }
}
