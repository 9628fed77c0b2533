//! Documents for the customer: the Spanish (Chile) wording of amounts, states and terms shared
//! by the Magic Link pages, the EPAC mandate PDF, and the Helvetica text both PDF writers use.
//! No I/O: inputs in, bytes or text out.

pub mod helvetica;
pub mod mandate_pdf;
mod pdf;
pub mod spanish;

pub use mandate_pdf::{DocumentInstallment, MandateDocument, mandate_document};
