//! Documents for the customer: the Spanish (Chile) wording of amounts, states and terms shared
//! by the Magic Link pages, the EPAC mandate PDF, and the embedded typeface both PDF writers
//! (the mandate and the signature seal) use. No I/O: inputs in, bytes or text out.

mod layout;
pub mod mandate_pdf;
pub mod of_mandate;
#[cfg(test)]
pub(crate) mod poppler;
pub mod spanish;
pub mod typeface;

pub use mandate_pdf::{
    ChargedInstrument, DocumentInstallment, LastFour, MandateDocument, mandate_document,
};
