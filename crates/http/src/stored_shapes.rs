//! The shapes of the JSON members the engine stores once and the API serves byte for byte
//! (`StoredJson`): described here for the OpenAPI document only, so that a generated client
//! types them. Each mirrors the single place that writes it, named on the type; the response
//! tests validate every served answer against these schemas.
//!
//! Never constructed: the served value is the stored text, not a re-serialisation of these.
#![allow(dead_code)]

use utoipa::ToSchema;

/// `customer.address`, as `POST /user` stores it (every member present, null when not given).
#[derive(serde::Serialize, ToSchema)]
#[schema(as = Address)]
pub struct AddressShape {
    street: Option<String>,
    number: Option<String>,
    apartment: Option<String>,
    commune: Option<String>,
    city: Option<String>,
    region: Option<String>,
    country: Option<String>,
}

/// `mandate.charges` (`Charges::to_json`): what the mandate accepts. Members the type has no
/// use for are null: `amount`, `periodicity` and `startDate` for SUBSCRIPTION and PERMANENT
/// (`count` or `endDate` ends a SUBSCRIPTION), `amount` and `dueDate` for ONEPAY,
/// `maxAmount` (optional) for DYNAMIC.
#[derive(serde::Serialize, ToSchema)]
#[schema(as = Charges)]
#[serde(rename_all = "camelCase")]
pub struct ChargesShape {
    #[schema(pattern = "^(CLP|CLF|USD)$")]
    currency_id: String,
    /// Exact, in the currency's major unit.
    amount: Option<f64>,
    #[schema(pattern = "^(WEEKLY|MONTHLY|BIMONTHLY|QUARTERLY|SEMIANNUAL|ANNUAL)$")]
    periodicity: Option<String>,
    start_date: Option<String>,
    #[schema(minimum = 1)]
    count: Option<i64>,
    end_date: Option<String>,
    due_date: Option<String>,
    max_amount: Option<f64>,
}

/// The mandate's `paymentMethod` once a method is enrolled (`activation::enrolled_method`).
#[derive(serde::Serialize, ToSchema)]
#[schema(as = EnrolledMethod)]
pub struct EnrolledMethodShape {
    /// 3 credit card, 4 debit card, 5 PAC, 6 EPAC, 11 prepaid card, 14 direct EPAC.
    id: i64,
    /// `CREDIT_CARD`, `DEBIT_CARD`, `PAC`, `EPAC`, `PREPAID_CARD`, `DIRECT_EPAC`.
    name: String,
    /// The brand or bank and the last four digits, e.g. `VISA **** 4242`.
    instrument: String,
}

/// `installment.payment`: the evidence of a payment the merchant marked
/// (`PUT /installments/status`, `operations::installments::change_state`).
#[derive(serde::Serialize, ToSchema)]
#[schema(as = ManualPayment)]
#[serde(rename_all = "camelCase")]
pub struct ManualPaymentShape {
    /// The business date the customer paid.
    date: String,
    /// Exact, in the currency's major unit.
    amount: f64,
    #[schema(pattern = "^(CLP|CLF|USD)$")]
    currency_id: String,
    authorization_code: Option<String>,
    /// How it was paid, as the merchant wrote it (e.g. `TRANSFER`).
    method: Option<String>,
}
