//! The signatory's pages (CONTRACT 8): `GET /sign/{token}` shows the process's documents and
//! the next step; the steps are forms posted to `/sign/{token}/codigo` (RUT, then a one-time
//! code is issued), `/verificar` (the code), `/identidad` (FEA/FAO: the identity card's serial
//! number, simulated in the sandbox), `/firmar` and `/rechazar` (with a reason). Documents are
//! served at `/sign/{token}/documentos/{n}` (the sealed one once the process is complete).
//!
//! Outside `/api/v1`, no merchant headers, not in the OpenAPI document: the token in the path
//! is the only credential, so the pages are not cached nor sent as a referrer. Every rule
//! (order, expiry, attempts) is checked on the server in `esign::ceremony`, whatever the page
//! showed. After signing or rejecting the browser goes back to the process's `urls.callback`.
//!
//! The last signature's request seals the process through the engine's `esign::sealing`,
//! whose sweep (started with the engine, not here) seals what a crash left owed and expires
//! open processes past their expiry.

mod render;

use std::collections::HashMap;
use std::net::SocketAddr;

use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Form, Router};

use super::AppState;
use mandato_core::clock::timestamp;
use mandato_core::error::{Error, Result};
use mandato_engine::esign::ceremony::{self, Act, Ceremony, Signed, Step, StepError};
use mandato_engine::esign::pages::{self, DocumentLookup};
use mandato_engine::esign::{ProcessState, pdf};
use mandato_engine::records::Db;
use render::{PageView, ceremony_page, message_page};

/// Forms are a few fields; anything larger is not a browser filling them in.
const FORM_LIMIT: usize = 16 * 1024;

/// The signatory's pages, with their body limit and headers.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/sign/{token}", get(show))
        .route("/sign/{token}/documentos/{number}", get(document))
        .route("/sign/{token}/codigo", post(send_code).get(back_to_page))
        .route(
            "/sign/{token}/verificar",
            post(verify_code).get(back_to_page),
        )
        .route("/sign/{token}/identidad", post(identity).get(back_to_page))
        .route("/sign/{token}/firmar", post(sign).get(back_to_page))
        .route("/sign/{token}/rechazar", post(reject).get(back_to_page))
        .layer(DefaultBodyLimit::max(FORM_LIMIT))
        .layer(axum::middleware::map_response(page_headers))
}

async fn page_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let is_pdf = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/pdf"));
    let mut set = vec![
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    if !is_pdf {
        // No form-action: signing redirects to the merchant's callback.
        set.push((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
             frame-ancestors 'none'; base-uri 'none'",
        ));
    }
    for (name, value) in set {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

// ----- responses -----

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

fn unknown_link() -> Response {
    html(
        StatusCode::NOT_FOUND,
        message_page(
            "Enlace no válido",
            "No encontramos un proceso de firma para este enlace. Revise que lo haya copiado \
             completo o pida al comercio un enlace nuevo.",
            None,
            None,
        ),
    )
}

fn failure(error: &Error) -> Response {
    tracing::error!(error = %error, "signing page failed");
    html(
        StatusCode::INTERNAL_SERVER_ERROR,
        message_page(
            "Ocurrió un error",
            "No pudimos completar la operación y nada quedó registrado. Intente nuevamente en \
             unos minutos.",
            None,
            None,
        ),
    )
}

fn bad_form(rejection: &FormRejection) -> Response {
    let (status, text) = if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            "El formulario enviado excede el tamaño permitido.",
        )
    } else {
        (
            StatusCode::BAD_REQUEST,
            "No pudimos leer el formulario enviado. Vuelva a abrir el enlace e inténtelo otra vez.",
        )
    };
    html(
        status,
        message_page("Formulario no válido", text, None, None),
    )
}

/// The page of a closed process (not COMPLETED: that one shows its sealed documents).
fn closed(c: &Ceremony) -> Response {
    let p = &c.view.process;
    let (title, text) = match p.state {
        ProcessState::Cancelled => (
            "Proceso cancelado",
            "El comercio canceló este proceso de firma. Ya no es posible firmar ni rechazar.",
        ),
        ProcessState::Expired => (
            "El enlace ha expirado",
            "El plazo para firmar este proceso terminó. Si aún necesita firmarlo, pida al \
             comercio un proceso nuevo.",
        ),
        _ => (
            "Proceso rechazado",
            "Un firmante rechazó la firma de estos documentos, por lo que el proceso terminó.",
        ),
    };
    html(
        StatusCode::GONE,
        message_page(title, text, Some(&c.commerce.name), Some(&p.url_callback)),
    )
}

fn business_act<'a>(state: &AppState, ip: Option<&'a str>, user_agent: Option<&'a str>) -> Act<'a> {
    let now = state.clock.now();
    Act {
        now,
        business_now: state.calendar.now(now),
        ip,
        user_agent,
        sandbox: state.config.environment.is_sandbox(),
    }
}

fn client(
    headers: &HeaderMap,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
) -> (Option<String>, Option<String>) {
    let ip = connect.map(|Extension(ConnectInfo(addr))| addr.ip().to_string());
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.chars().take(512).collect());
    (ip, agent)
}

fn plausible(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 64
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Runs `f` in one write transaction off the async workers, then wakes the deliverer for the
/// events it may have written.
async fn write<T: Send + 'static>(
    state: &AppState,
    f: impl FnOnce(Db<'_>) -> Result<T> + Send + 'static,
) -> Result<T> {
    state.write_unscoped(f).await
}

async fn render(
    state: &AppState,
    status: StatusCode,
    token: &str,
    c: &Ceremony,
    notice: Option<(bool, String)>,
) -> Response {
    if !c.view.process.state.is_open() && c.view.process.state != ProcessState::Completed {
        return closed(c);
    }
    let sealed_pages = match sealed_page_counts(state, c).await {
        Ok(counts) => counts,
        Err(e) => return failure(&e),
    };
    let now = timestamp(state.clock.now());
    html(
        status,
        ceremony_page(&PageView {
            ceremony: c,
            token,
            notice,
            sandbox: state.config.environment.is_sandbox(),
            now: &now,
            time_zone: state.calendar.time_zone(),
            sealed_pages: &sealed_pages,
        }),
    )
}

/// Each sealed document's page count, read from the sealed PDF itself (the seal appends the
/// signature and certificate pages, so the upload's count no longer holds); empty until the
/// process is complete. Parsed off the async workers, under the PDF permit like every parse.
async fn sealed_page_counts(state: &AppState, c: &Ceremony) -> Result<Vec<Option<u32>>> {
    if c.view.process.state != ProcessState::Completed {
        return Ok(Vec::new());
    }
    let seqs: Vec<i64> = c.view.documents.iter().map(|d| d.seq).collect();
    let sealed = state.read_unscoped(|conn| pages::sealed_documents(conn, &seqs))?;
    let _permit = pdf::turn(pdf::Party::Installation).await;
    tokio::task::spawn_blocking(move || {
        sealed
            .into_iter()
            .map(|bytes| bytes.and_then(|b| pdf::page_count(&b).ok()))
            .collect()
    })
    .await
    .map_err(|e| Error::Internal(e.into()))
}

// ----- handlers -----

/// The banners after a step, by the `aviso` the step redirected with.
fn notice_of(query: &HashMap<String, String>) -> Option<(bool, String)> {
    let text = match query.get("aviso").map(String::as_str)? {
        "codigo" => "Le enviamos un código de un solo uso.",
        "identidad" => "Su identidad quedó confirmada. Ya puede firmar.",
        "codigo-ok" => "Código verificado.",
        _ => return None,
    };
    Some((true, text.to_string()))
}

async fn show(
    State(state): State<AppState>,
    Path(token): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
) -> Response {
    if !plausible(&token) {
        return unknown_link();
    }
    // Unknown links are answered from a read, without taking the writer.
    match state.read_unscoped(|c| pages::token_known(c, &token)) {
        Ok(true) => {}
        Ok(false) => return unknown_link(),
        Err(e) => return failure(&e),
    }
    let (ip, agent) = client(&headers, connect);
    let act_state = state.clone();
    let t = token.clone();
    let opened = write(&state, move |tx| {
        let act = business_act(&act_state, ip.as_deref(), agent.as_deref());
        ceremony::open(tx, &t, &act)
    })
    .await;
    match opened {
        Ok(Some(c)) => render(&state, StatusCode::OK, &token, &c, notice_of(&query)).await,
        Ok(None) => unknown_link(),
        Err(e) => failure(&e),
    }
}

async fn back_to_page(Path(token): Path<String>) -> Response {
    if !plausible(&token) {
        return unknown_link();
    }
    Redirect::to(&format!("/sign/{token}")).into_response()
}

/// A document of the process: the original, or the sealed one once the process is complete.
async fn document(
    State(state): State<AppState>,
    Path((token, number)): Path<(String, String)>,
) -> Response {
    if !plausible(&token) {
        return unknown_link();
    }
    let t = token.clone();
    let found = state.read_unscoped(|conn| pages::signatory_document(conn, &t, &number));
    match found {
        Ok(DocumentLookup::Found { name, bytes }) => {
            let safe: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._-".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let disposition = format!("inline; filename=\"{safe}\"");
            (
                [
                    (header::CONTENT_TYPE, "application/pdf".to_string()),
                    (header::CONTENT_DISPOSITION, disposition),
                ],
                bytes,
            )
                .into_response()
        }
        Ok(DocumentLookup::Closed(c)) => closed(&c),
        Ok(DocumentLookup::Unknown) => unknown_link(),
        Err(e) => failure(&e),
    }
}

/// The Spanish text and status of a refused step.
fn refusal(e: &StepError) -> (StatusCode, String) {
    let (status, text) = match e {
        StepError::NotYourTurn => (
            StatusCode::CONFLICT,
            "Aún no es su turno: primero deben firmar quienes le anteceden.".to_string(),
        ),
        StepError::Locked => (
            StatusCode::FORBIDDEN,
            "El enlace está bloqueado por intentos fallidos.".to_string(),
        ),
        StepError::WrongRut => (
            StatusCode::BAD_REQUEST,
            "El RUT no coincide con el del firmante de este enlace.".to_string(),
        ),
        StepError::TooManyCodes => (
            StatusCode::TOO_MANY_REQUESTS,
            "Ya se enviaron demasiados códigos. Contacte al comercio.".to_string(),
        ),
        StepError::NoCode => (
            StatusCode::BAD_REQUEST,
            "Primero solicite un código ingresando su RUT.".to_string(),
        ),
        StepError::CodeExpired => (
            StatusCode::BAD_REQUEST,
            "El código venció. Solicite uno nuevo.".to_string(),
        ),
        StepError::WrongCode { remaining } => (
            StatusCode::BAD_REQUEST,
            format!("Código incorrecto. Le quedan {remaining} intento(s) con este código."),
        ),
        StepError::CodeAttemptsExhausted => (
            StatusCode::BAD_REQUEST,
            "Agotó los intentos de este código. Solicite uno nuevo.".to_string(),
        ),
        StepError::CodeNotVerified => (
            StatusCode::BAD_REQUEST,
            "Primero verifique el código enviado a su correo.".to_string(),
        ),
        StepError::IdentityDenied => (
            StatusCode::BAD_REQUEST,
            "El proveedor de identidad no pudo confirmar su identidad.".to_string(),
        ),
        StepError::IdentityMismatch => (
            StatusCode::BAD_REQUEST,
            "El número de serie no coincide con la cédula del firmante.".to_string(),
        ),
        StepError::IdentityUnavailable => (
            StatusCode::SERVICE_UNAVAILABLE,
            "La verificación avanzada de identidad no está disponible en este ambiente. \
             Contacte al comercio."
                .to_string(),
        ),
        StepError::IdentityRequired => (
            StatusCode::BAD_REQUEST,
            "Primero confirme su identidad.".to_string(),
        ),
        StepError::MustAccept => (
            StatusCode::BAD_REQUEST,
            "Para firmar, marque la casilla de aceptación.".to_string(),
        ),
        StepError::InvalidReason => (
            StatusCode::BAD_REQUEST,
            "Indique el motivo del rechazo (3 a 500 caracteres).".to_string(),
        ),
        StepError::AlreadySigned => (StatusCode::CONFLICT, "Usted ya firmó.".to_string()),
        StepError::AlreadyRejected | StepError::Closed(_) | StepError::UnknownLink => (
            StatusCode::CONFLICT,
            "El proceso ya no admite esta acción.".to_string(),
        ),
    };
    (status, text)
}

/// Answers a step: a redirect when it happened, the page with the problem when it did not.
async fn after_step(state: &AppState, token: &str, outcome: Result<Step<String>>) -> Response {
    let error = match outcome {
        Ok(Ok(location)) => {
            return match HeaderValue::from_str(&location) {
                Ok(_) => Redirect::to(&location).into_response(),
                Err(_) => Redirect::to(&format!("/sign/{token}")).into_response(),
            };
        }
        Ok(Err(StepError::UnknownLink)) => return unknown_link(),
        Ok(Err(e)) => e,
        Err(e) => return failure(&e),
    };
    let t = token.to_string();
    match state.read_unscoped(|conn| ceremony::peek(conn, &t)) {
        Ok(Some(c)) => {
            if matches!(error, StepError::Closed(_)) {
                return render(state, StatusCode::GONE, token, &c, None).await;
            }
            let (status, text) = refusal(&error);
            render(state, status, token, &c, Some((false, text))).await
        }
        Ok(None) => unknown_link(),
        Err(e) => failure(&e),
    }
}

/// Where the browser goes after signing or rejecting: the merchant's callback, told which
/// process and what happened.
fn callback_location(done: &Signed, signatory: &str, result: &str) -> String {
    match url::Url::parse(&done.callback) {
        Ok(mut url) => {
            url.query_pairs_mut()
                .append_pair("internalId", &done.process_id)
                .append_pair("signatoryId", signatory)
                .append_pair("result", result)
                .append_pair("completed", if done.completed { "true" } else { "false" });
            url.to_string()
        }
        Err(_) => done.callback.clone(),
    }
}

macro_rules! step_handler {
    ($name:ident, $field:literal, |$tx:ident, $token:ident, $act:ident, $value:ident| $body:expr) => {
        async fn $name(
            State(state): State<AppState>,
            Path(token): Path<String>,
            headers: HeaderMap,
            connect: Option<Extension<ConnectInfo<SocketAddr>>>,
            form: std::result::Result<Form<HashMap<String, String>>, FormRejection>,
        ) -> Response {
            if !plausible(&token) {
                return unknown_link();
            }
            let Form(form) = match form {
                Ok(f) => f,
                Err(rejection) => return bad_form(&rejection),
            };
            let $value = form.get($field).cloned().unwrap_or_default();
            let (ip, agent) = client(&headers, connect);
            let act_state = state.clone();
            let $token = token.clone();
            let outcome = write(&state, move |$tx| {
                let $act = business_act(&act_state, ip.as_deref(), agent.as_deref());
                $body
            })
            .await;
            after_step(&state, &token, outcome).await
        }
    };
}

step_handler!(send_code, "rut", |tx, token, act, rut| {
    Ok(
        ceremony::send_code(tx, &token, &act, &rut)?
            .map(|()| format!("/sign/{token}?aviso=codigo")),
    )
});

step_handler!(verify_code, "codigo", |tx, token, act, code| {
    Ok(ceremony::verify_code(tx, &token, &act, &code)?
        .map(|()| format!("/sign/{token}?aviso=codigo-ok")))
});

step_handler!(identity, "serie", |tx, token, act, serial| {
    Ok(ceremony::confirm_identity(tx, &token, &act, &serial)?
        .map(|()| format!("/sign/{token}?aviso=identidad")))
});

/// Signs; the last signature is followed by the seal, outside the signature's transaction,
/// before the browser is sent back (so `completed=true` means sealed).
async fn sign(
    State(state): State<AppState>,
    Path(token): Path<String>,
    headers: HeaderMap,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    form: std::result::Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    if !plausible(&token) {
        return unknown_link();
    }
    let Form(form) = match form {
        Ok(f) => f,
        Err(rejection) => return bad_form(&rejection),
    };
    let accepted = form.get("acepto").cloned().unwrap_or_default();
    let (ip, agent) = client(&headers, connect);
    let act_state = state.clone();
    let t = token.clone();
    let outcome = write(&state, move |tx| {
        let act = business_act(&act_state, ip.as_deref(), agent.as_deref());
        let signatory = signatory_id(tx, &t)?;
        Ok(ceremony::sign(tx, &t, &act, !accepted.is_empty())?.map(|done| (done, signatory)))
    })
    .await;
    let outcome = match outcome {
        Ok(Ok((mut done, signatory))) => {
            if done.completed {
                done.completed = state.sealer.seal(done.process_seq).await;
            }
            Ok(Ok(callback_location(&done, &signatory, "SIGNED")))
        }
        Ok(Err(e)) => Ok(Err(e)),
        Err(e) => Err(e),
    };
    after_step(&state, &token, outcome).await
}

step_handler!(reject, "motivo", |tx, token, act, reason| {
    let signatory = signatory_id(tx, &token)?;
    Ok(ceremony::reject(tx, &token, &act, &reason)?
        .map(|done| callback_location(&done, &signatory, "REJECTED")))
});

fn signatory_id(conn: Db<'_>, token: &str) -> Result<String> {
    pages::signatory_id(conn, token)
}
