//! The Magic Link of a signature-gated mandate (`SIGNATURE` activation): the enrolment
//! stores the instrument and starts a signature process over the mandate document, with the
//! customer as its single signatory (FES, on an appended signature page); the customer is sent
//! straight to the signing page. The process's callback is this Magic Link, so after signing
//! (or rejecting) the customer comes back to a page that says where the mandate stands.

use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Utc};

use super::render::{Loaded, Notice, Signing, Submitted};
use super::{
    AppState, Enrolled, InstrumentFacts, PaymentMethod, business_now, failure, mandate_document,
    page, refused_activation, release_attempt, see_other, write,
};
use mandato_core::error::{Error, Result};
use mandato_engine::documents;
use mandato_engine::esign::ceremony::Act;
use mandato_engine::esign::pages::MandateSigning;
use mandato_engine::esign::{
    CreateProcess, DEFAULT_EXPIRY_DAYS, NewDocument, NewSignatory, Placement, SignatureType, pdf,
    sha256_hex,
};
use mandato_engine::operations::activation::{self, Acceptance, Enrolment, PortalClaim};
use mandato_engine::operations::link as link_records;
use mandato_engine::operations::signed_activation;

/// What the customer enrolled, carried from the form to the signature process.
pub(super) struct Enrolling {
    pub method: PaymentMethod,
    pub instrument: InstrumentFacts,
    pub enrolled: Enrolled,
    pub acceptance: Acceptance,
    pub claim: PortalClaim,
    /// The form as sent, for a page that refuses it.
    pub submitted: Submitted,
}

/// Where a signature-gated mandate's signature stands, as its page shows it.
pub(super) fn step_of(signing: MandateSigning) -> Signing {
    match signing {
        MandateSigning::Open { token } => Signing::Open { token },
        MandateSigning::Sealing => Signing::Sealing,
        MandateSigning::Ended(failure) => Signing::Ended(failure),
    }
}

/// The name of the mandate document in its signature process.
fn document_name(mandate_id: &str) -> String {
    format!("mandato-{mandate_id}.pdf")
}

/// Makes the mandate document, starts its signature process and sends the customer to sign.
pub(super) async fn start(
    state: &AppState,
    token: &str,
    loaded: &Loaded,
    enrolling: Enrolling,
    now: DateTime<Utc>,
) -> Response {
    let Enrolling {
        method,
        instrument,
        enrolled,
        acceptance,
        claim,
        submitted,
    } = enrolling;
    let bytes = documents::mandate_document(&mandate_document(
        loaded,
        &instrument,
        &enrolled,
        &acceptance,
        now,
    ));
    let document = match inspect(bytes, &loaded.mandate.external_id).await {
        Ok(document) => document,
        Err(e) => {
            release_attempt(state, claim).await;
            return failure(&e);
        }
    };
    let sha256 = document.sha256.clone();
    let process = CreateProcess {
        name: format!("Mandato {}", loaded.mandate.external_id),
        external_id: Some(loaded.mandate.external_id.clone()),
        request_user: None,
        expiry_days: DEFAULT_EXPIRY_DAYS,
        signatories: vec![NewSignatory {
            customer_seq: loaded.customer.seq,
            order: 1,
            kind: SignatureType::Fes,
        }],
        documents: vec![document],
        callback: format!("{}/link/{token}", state.public_base_url),
        // The process's own events go where the mandate's activation events go (nowhere when
        // the mandate has no activation webhook).
        webhook: loaded
            .mandate
            .url_activation_webhook
            .clone()
            .unwrap_or_default(),
    };
    let commerce = loaded.commerce.clone();
    let seq = loaded.mandate.seq;
    let check_at = business_now(state);
    let sandbox = state.config.environment.is_sandbox();
    let result = write(state, move |tx| {
        let fresh = link_records::fresh(tx, seq)?;
        activation::check_activatable(&fresh, method, check_at)?;
        activation::release_portal_attempt(tx, claim)?;
        let act = Act {
            now,
            business_now: check_at,
            ip: acceptance.ip.as_deref(),
            user_agent: acceptance.user_agent.as_deref(),
            sandbox,
        };
        let enrolment = Enrolment {
            instrument: &instrument,
            enrolled: &enrolled,
            acceptance: &acceptance,
            document: None,
        };
        let view =
            signed_activation::start(tx, &commerce, &fresh, &enrolment, &sha256, process, &act)?;
        view.signatories
            .first()
            .map(|s| s.token.clone())
            .ok_or_else(|| Error::Internal(anyhow::anyhow!("a process without its signatory")))
    })
    .await;
    match result {
        Ok(signing_token) => see_other(&format!("/sign/{signing_token}")).unwrap_or_else(|| {
            failure(&Error::Internal(anyhow::anyhow!(
                "a signing link that is no header"
            )))
        }),
        Err(Error::Refused {
            name: "SIGNATURE_IN_PROGRESS",
            ..
        }) => {
            release_attempt(state, claim).await;
            page(
                state,
                StatusCode::CONFLICT,
                token,
                loaded,
                Some(Notice::Info(
                    "Su firma ya fue recibida y estamos sellando el documento del mandato. \
                     Vuelva a abrir este enlace en unos momentos."
                        .into(),
                )),
                None,
                None,
            )
        }
        Err(e) => {
            release_attempt(state, claim).await;
            refused_activation(state, token, loaded, method, submitted, e)
        }
    }
}

/// Parses the generated document as every upload is parsed (its pages), off the async
/// workers and under the PDF permit.
async fn inspect(bytes: Vec<u8>, mandate_id: &str) -> Result<NewDocument> {
    let name = document_name(mandate_id);
    let permit = pdf::turn(pdf::Party::Installation).await;
    tokio::task::spawn_blocking(move || {
        let inspection = pdf::inspect(&bytes);
        drop(permit);
        let inspection = inspection.map_err(|e| {
            Error::Internal(anyhow::anyhow!("the mandate document does not parse: {e}"))
        })?;
        Ok(NewDocument {
            name,
            sha256: sha256_hex(&bytes),
            page_count: inspection.pages.len() as u32,
            placements: vec![(0, Placement::LastPage)],
            bytes,
        })
    })
    .await
    .map_err(|e| Error::Internal(e.into()))?
}
