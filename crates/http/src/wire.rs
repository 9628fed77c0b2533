//! The response DTOs: the only place that knows the wire JSON of customers, mandates and
//! installments. Fields without a value are written as `null`, never omitted.

use mandato_core::domain::holidays::ChargeDates;
use serde::Serialize;
use utoipa::ToSchema;

use mandato_core::domain::activation::{ActivationFailure, ActivationMode};
use mandato_core::domain::state::MandateState;
use mandato_engine::operations::mandates::MandateView;
use mandato_engine::records::{
    CustomerRow, InstallmentRow, MandateRow, MandateSignatureRow, StoredJson,
};

/// Every state, everywhere: `{"id": 2, "name": "PAID"}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct StateDto {
    pub id: i64,
    pub name: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdentificationDocumentDto {
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Normalized RUT, `12345678-5`.
    pub number: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersonalInformationDto {
    pub first_name: String,
    pub last_name: String,
    pub second_last_name: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactsDto {
    pub email: String,
    pub phone: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomerDto {
    pub internal_user_id: String,
    pub user_id: String,
    pub identification_document: IdentificationDocumentDto,
    pub personal_information: PersonalInformationDto,
    #[schema(value_type = Option<crate::stored_shapes::AddressShape>)]
    pub address: Option<StoredJson>,
    pub contacts: ContactsDto,
    pub created_at: String,
    pub updated_at: String,
}

impl From<CustomerRow> for CustomerDto {
    fn from(c: CustomerRow) -> Self {
        CustomerDto {
            internal_user_id: c.id,
            user_id: c.user_id,
            identification_document: IdentificationDocumentDto {
                kind: "RUT",
                number: c.rut,
            },
            personal_information: PersonalInformationDto {
                first_name: c.first_name,
                last_name: c.last_name,
                second_last_name: c.second_last_name,
            },
            address: c.address,
            contacts: ContactsDto {
                email: c.email,
                phone: c.phone,
            },
            created_at: c.created_at,
            updated_at: c.updated_at,
        }
    }
}

impl From<&CustomerRow> for CustomerDto {
    fn from(c: &CustomerRow) -> Self {
        CustomerDto::from(c.clone())
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RejectionDto {
    pub code: String,
    pub message: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallmentDto {
    pub internal_id: String,
    pub id: String,
    /// Exact decimal in the currency's major unit, shortest form.
    #[schema(value_type = f64)]
    pub amount: serde_json::Number,
    pub currency_id: &'static str,
    /// The contractual due date.
    pub installment_due_date: String,
    /// The business day the installment is charged: the due date moved off weekends and
    /// holidays by the commerce's charging rule.
    pub charge_date: String,
    pub state: StateDto,
    /// Time of the latest state.
    pub date_time: String,
    pub attempts: i64,
    pub payment_method_id: Option<i64>,
    pub authorization_code: Option<String>,
    pub rejection: Option<RejectionDto>,
    /// Manual payment evidence, when marked paid by the merchant.
    #[schema(value_type = Option<crate::stored_shapes::ManualPaymentShape>)]
    pub payment: Option<StoredJson>,
}

impl InstallmentDto {
    pub fn new(i: &InstallmentRow, dates: &ChargeDates) -> Self {
        InstallmentDto::from_row(i.clone(), dates)
    }

    /// The row's own strings move into the answer; a lookup answers ten or more of these.
    pub fn from_row(i: InstallmentRow, dates: &ChargeDates) -> Self {
        InstallmentDto {
            amount: i.amount.to_json_number(),
            currency_id: i.amount.currency().code(),
            installment_due_date: i.due_date.to_string(),
            charge_date: dates.of(i.due_date).to_string(),
            state: StateDto {
                id: i.state.id(),
                name: i.state.name(),
            },
            internal_id: i.id,
            id: i.external_id,
            date_time: i.state_at,
            attempts: i.attempts,
            payment_method_id: i.payment_method_id,
            authorization_code: i.authorization_code,
            rejection: i.rejection_code.map(|code| RejectionDto {
                code,
                message: i.rejection_message,
            }),
            payment: i.payment,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UrlsDto {
    pub callback: Option<String>,
    pub activation_webhook: Option<String>,
    pub payment_webhook: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CancellationDto {
    pub description: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandateDto {
    pub internal_id: String,
    pub id: String,
    #[serde(rename = "type")]
    pub mandate_type: &'static str,
    pub name: String,
    pub detail: Option<String>,
    pub state: StateDto,
    pub terminate_when_charged: bool,
    /// The accepted charges: `currencyId`, `amount`, `periodicity`, `startDate`, `count`,
    /// `endDate`, `dueDate`, `maxAmount` (null where the type has none).
    #[schema(value_type = crate::stored_shapes::ChargesShape)]
    pub charges: StoredJson,
    pub payment_methods: Vec<i64>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<StoredJson>,
    pub urls: UrlsDto,
    /// Absolute URL of the customer's activation page.
    pub magic_link: String,
    pub magic_link_expires_at: String,
    pub cancellation: Option<CancellationDto>,
    pub created_at: String,
    pub updated_at: String,
    /// How the mandate is activated (fixed at creation).
    pub activation: ActivationModeDto,
    /// `SIGNATURE` mandates: the latest signature process the Magic Link started; null
    /// before the customer enrols, and for `DIRECT` mandates.
    pub signature: Option<MandateSignatureDto>,
    /// Why the latest signature process ended without activating the mandate; null while
    /// none did. The customer can start again from the Magic Link.
    pub activation_failure: Option<ActivationFailureDto>,
    /// `IN_VALIDATION` while a PENDING mandate's bank account is being validated by the bank
    /// (Fintoc Direct Debit): the customer authorized the debit, and the mandate activates
    /// when the bank confirms. Null otherwise.
    pub activation_status: Option<ActivationStatusDto>,
}

/// Where a PENDING mandate's activation stands.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ActivationStatusDto {
    InValidation,
}

/// `DIRECT` or `SIGNATURE`.
#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ActivationModeDto {
    Direct,
    Signature,
}

impl From<ActivationModeDto> for ActivationMode {
    fn from(mode: ActivationModeDto) -> Self {
        match mode {
            ActivationModeDto::Direct => ActivationMode::Direct,
            ActivationModeDto::Signature => ActivationMode::Signature,
        }
    }
}

impl From<ActivationMode> for ActivationModeDto {
    fn from(mode: ActivationMode) -> Self {
        match mode {
            ActivationMode::Direct => ActivationModeDto::Direct,
            ActivationMode::Signature => ActivationModeDto::Signature,
        }
    }
}

/// The signature process of a signature-gated activation.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandateSignatureDto {
    /// The process (`sig_...`), also readable at `GET /signature/internalId/{internalId}`.
    pub internal_id: String,
    pub state: StateDto,
    /// SHA-256 of the sealed mandate document once the process is COMPLETED (the document is
    /// at `GET /mandate/internalId/{internalId}/document`).
    pub sealed_sha256: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ActivationFailureReason {
    SignatureRejected,
    SignatureExpired,
    SignatureCancelled,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ActivationFailureDto {
    pub reason: ActivationFailureReason,
    /// When the process ended.
    pub at: String,
}

impl MandateDto {
    pub fn new(m: &MandateRow, public_base_url: &str) -> Self {
        MandateDto {
            internal_id: m.id.clone(),
            id: m.external_id.clone(),
            mandate_type: m.mandate_type.name(),
            name: m.name.clone(),
            detail: m.detail.clone(),
            state: StateDto {
                id: m.state.id(),
                name: m.state.name(),
            },
            terminate_when_charged: m.terminate_when_charged,
            charges: m.charges.clone(),
            payment_methods: m.payment_methods.clone(),
            metadata: m.metadata.clone(),
            urls: UrlsDto {
                callback: m.url_callback.clone(),
                activation_webhook: m.url_activation_webhook.clone(),
                payment_webhook: m.url_payment_webhook.clone(),
            },
            magic_link: format!("{public_base_url}/link/{}", m.magic_link_token),
            magic_link_expires_at: m.magic_link_expires_at.clone(),
            cancellation: m.cancel_description.as_ref().map(|d| CancellationDto {
                description: d.clone(),
            }),
            created_at: m.created_at.clone(),
            updated_at: m.updated_at.clone(),
            activation: m.activation_mode.into(),
            signature: None,
            activation_failure: None,
            activation_status: None,
        }
    }

    /// Adds what the mandate's latest signature process says.
    pub fn with_signature(mut self, signature: Option<&MandateSignatureRow>) -> Self {
        let Some(row) = signature else {
            return self;
        };
        self.signature = Some(MandateSignatureDto {
            internal_id: row.process_id.clone(),
            state: StateDto {
                id: row.process_state.id(),
                name: row.process_state.name(),
            },
            sealed_sha256: row.sealed_sha256.clone(),
        });
        // Why the mandate is still PENDING: a mandate that moved on has no activation failure.
        let pending = self.state.id == MandateState::Pending.id();
        self.activation_failure = match (row.failure, &row.failed_at) {
            (Some(failure), Some(at)) if pending => Some(ActivationFailureDto {
                reason: match failure {
                    ActivationFailure::SignatureRejected => {
                        ActivationFailureReason::SignatureRejected
                    }
                    ActivationFailure::SignatureExpired => {
                        ActivationFailureReason::SignatureExpired
                    }
                    ActivationFailure::SignatureCancelled => {
                        ActivationFailureReason::SignatureCancelled
                    }
                },
                at: at.clone(),
            }),
            _ => None,
        };
        self
    }
}

/// The payload of every mandate lookup, and of creation and cancellation.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandatePayload {
    pub mandate: MandateDto,
    pub customer: CustomerDto,
    /// The enrolled method (`id`, `name`, masked `instrument`); null before activation.
    #[schema(value_type = Option<crate::stored_shapes::EnrolledMethodShape>)]
    pub payment_method: Option<StoredJson>,
    /// Ordered by due date.
    pub installments: Vec<InstallmentDto>,
}

impl MandatePayload {
    pub fn new(view: MandateView, public_base_url: &str) -> Self {
        let MandateView {
            mut mandate,
            customer,
            installments,
            signature,
            charge_dates,
            bank_validating,
        } = view;
        let payment_method = mandate.enrolled_method.take();
        let mut dto = MandateDto::new(&mandate, public_base_url).with_signature(signature.as_ref());
        dto.activation_status = bank_validating.then_some(ActivationStatusDto::InValidation);
        MandatePayload {
            mandate: dto,
            customer: CustomerDto::from(customer),
            payment_method,
            installments: installments
                .into_iter()
                .map(|i| InstallmentDto::from_row(i, &charge_dates))
                .collect(),
        }
    }
}
