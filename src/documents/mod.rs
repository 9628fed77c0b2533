//! Documents for the customer: the Spanish (Chile) wording of amounts, states and terms shared
//! by the Magic Link pages, and the EPAC mandate PDF. No I/O: inputs in, bytes or text out.

pub mod mandate_pdf;
mod pdf;
pub mod spanish;

pub use mandate_pdf::{DocumentInstallment, MandateDocument, mandate_document};
