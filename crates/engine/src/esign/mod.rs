//! Electronic signature processes (CONTRACT 8, seed 2.5 and 4.13-4.14).
//!
//! A merchant creates a process: one or more documents (real PDFs, parsed) and one or more
//! signatories (customers of the commerce), each with an `order` and a type (`FES` simple,
//! `FEA` advanced, `FAO` advanced with an online identity check), and where each signatory signs
//! each document (`MANUAL` boxes or the `LAST_PAGE` signature page). Every signatory gets a
//! signing link (`/sign/{token}`), where the ceremony runs:
//!
//! 1. the signatory opens the link and sees the documents (audited `VIEWED`);
//! 2. confirms identity: the RUT of the customer, then a one-time code (`CODE_SENT`,
//!    `CODE_VERIFIED`); `FEA` and `FAO` add a second step (`IDENTITY_CONFIRMED` comes after
//!    it), simulated in the sandbox with [`sandbox::SERIAL_APPROVED`] (approved) and
//!    [`sandbox::SERIAL_DENIED`] (refused by the simulated provider);
//! 3. signs (`SIGNED`, event `SIGNATORY_SIGNED`) or rejects with a reason (`REJECTED`, event
//!    `SIGNATURE_REJECTED`, the process ends REJECTED).
//!
//! Order is enforced here, on the server: a signatory may act only when no pending signatory
//! has a lower `order`; equal orders sign in parallel. When the last one signs, every document
//! is sealed ([`pdf::seal`]): stamped at its boxes, a signature page appended for `LAST_PAGE`,
//! then a completion certificate with the audit trail; the sealed SHA-256 is recorded and the
//! original kept. The seal runs after the last signature's transaction, never inside one
//! ([`ceremony::prepare_seal`], [`ceremony::SealJob::run`], [`ceremony::complete_seal`]); the
//! process becomes COMPLETED only with its sealed documents. Every PDF is measured by
//! [`budget`] before it is parsed (CONTRACT 12). Each act is written to a hash chain ([`audit`]) that detects a changed record.
//!
//! A process expires (by business time, so the sandbox clock moves it) after
//! [`DEFAULT_EXPIRY_DAYS`] or the `process.expirationDays` of its request; a page, a lookup or
//! the periodic sweep that meets an expired open process makes it EXPIRED (event
//! `SIGNATURE_EXPIRED`).
//!
//! In the sandbox the one-time code is shown to staff (`GET /admin/api/signatures/{id}`), never
//! in the signing page. In production the code would go to the customer's e-mail; this
//! installation has no mail channel, so production signing needs one to be added.

pub mod audit;
pub mod budget;
pub mod ceremony;
pub mod events;
pub mod pages;
pub mod pdf;
pub mod sealing;

pub use mandato_core::signature::*;
