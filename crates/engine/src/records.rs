//! The rows and filters the engine's methods take and answer. They are the store's read
//! models, named here so that front doors depend on the engine only: a front door reads
//! records and builds filters, it never queries.

pub use mandato_store::StoredJson;
pub use mandato_store::audit::{
    AuditEntry, AuditPlace, CORRELATION_CLAIM, CorrelationClaim, DeferredClaim, Refusal,
    RequestKind, Reservation, correlation_reused,
};
pub use mandato_store::charging::RunRow;
pub use mandato_store::commerces::Commerce;
pub use mandato_store::creation_replays::Creation;
pub use mandato_store::customers::{CustomerInput, CustomerRow, Upserted};
pub use mandato_store::db::Db;
pub use mandato_store::deliveries::{
    AttemptRow, CommerceEvent, CommerceEventFilter, EventFilter, EventSummary, ListedEvent,
    SentHeaders,
};
pub use mandato_store::events::EventRow;
pub use mandato_store::installments::Receivable;
pub use mandato_store::installments::{InstallmentRow, NewInstallment, ReceivablesFilter};
pub use mandato_store::instruments::AcceptanceRow;
pub use mandato_store::ledger::{
    EntryFilter, EntryRow, NewReconciliation, ReconciliationRow, SettlementRow,
};
pub use mandato_store::mandate_signatures::MandateSignatureRow;
pub use mandato_store::mandates::MandateRow;
pub use mandato_store::sandbox_reset::{ResetCounts, Scope as ResetScope, TriggerRecord};
pub use mandato_store::signatures::{
    AuditRow, DocumentRow, ProcessFilter, ProcessRow, SignatoryRow,
};
pub use mandato_store::staff::{Role, Session, StaffMember};
pub use mandato_store::staff_audit::{Problem as ChainBreak, Verification};
pub use mandato_store::staff_views::AttemptLine;
pub use mandato_store::staff_views::{ApiKeyLine, CommerceLine, RootLine, StaffLine};
pub use mandato_store::staff_views::{
    CustomerColumn, CustomerFilter, DatedAmount, Keyset, MandateColumn, MandateFilter, MandateLine,
    RequestAuditFilter, Sort, StaffAuditFilter,
};
pub use mandato_store::staff_views::{
    CustomerLine, FailingWebhooks, InstallmentLine, RequestAuditLine, StaffAuditLine,
};
