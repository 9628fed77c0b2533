//! mandato-http: the HTTP front doors over the engine. The merchant API under `/api/v1`, the
//! OpenAPI document, the staff API under `/admin/api`, the Magic Link and signing pages, and
//! the staff UI's files.
//!
//! DTOs live here and only here; handlers turn them into validated commands, have the engine
//! run the operation in one transaction and turn the result back into DTOs.
//!
//! Invariants:
//! - Nothing below this crate knows HTTP: status codes, headers and wire names are decided
//!   here (`error.rs` maps `mandato_core::error::Error`; `wire.rs` names the fields).
//! - A bad request is answered 400 naming every bad field, never 500 and never half-written.
//! - No secret reaches a log or an answer: bodies with passwords and files are read as
//!   `Secret`s.
//! - Handlers parse, call the engine and render; the engine opens every transaction. This
//!   crate depends on neither `mandato-store` nor a database driver, and never takes the
//!   engine's store (`tests/api/layering.rs`).

pub mod accept;
pub mod acquirer_webhooks;
pub mod admin;
pub mod auth;
pub mod body_budget;
pub mod calendar;
pub mod common;
pub mod envelope;
pub mod error;
pub mod events;
pub mod fields;
pub mod guard;
pub mod installments;
pub mod json;
pub mod ledger;
pub mod link;
pub mod login;
pub mod mandates;
pub mod openapi;
mod openapi_examples;
pub mod pages;
pub mod receivables;
pub mod replay;
pub mod sandbox;
pub mod sandbox_reset;
pub mod sign;
pub mod signature;
mod stored_shapes;
pub mod ui;
pub mod users;
pub mod webhooks;
pub mod wire;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use utoipa::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use error::ApiError;
use mandato_core::error::Result;
use mandato_engine::Engine;
use mandato_engine::operations::Ctx;
use mandato_engine::records::{Commerce, Db};

pub use mandato_engine::Keys;

/// What every handler can reach: one shared allocation, so the several extractors and layers
/// of a request that take the state each copy one pointer (one atomic count) rather than a
/// dozen.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> AppState {
        AppState(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The engine and what only the front doors keep, behind [`AppState`].
pub struct Shared {
    pub engine: Arc<Engine>,
    /// `http://host:port` as customers reach this installation, for absolute Magic Links.
    pub public_base_url: Arc<str>,
    /// The desktop app's pending single-use sign-in links.
    pub desk_tokens: Arc<admin::desk::DeskTokens>,
    /// The one-time first-visit setup code for other machines, when `serve` made one.
    pub setup_code: Arc<admin::session::SetupCode>,
    /// Portal payments of one installment take turns (see `link::one_at_a_time`).
    pub portal_payments: Arc<link::one_at_a_time::KeyedLocks>,
}

impl Shared {
    pub fn new(engine: Arc<Engine>, public_base_url: String) -> Shared {
        Shared {
            engine,
            public_base_url: public_base_url.into(),
            desk_tokens: Default::default(),
            setup_code: Default::default(),
            portal_payments: Default::default(),
        }
    }
}

/// Handlers reach the engine's parts (`state.config`, `state.clock`, ...) and methods directly.
impl std::ops::Deref for Shared {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl AppState {
    /// Runs a commerce's operation all or nothing through the engine (`Engine::write`).
    pub async fn write<T: Send + 'static>(
        &self,
        commerce: Arc<Commerce>,
        operation: impl Fn(Db<'_>, &Ctx<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T, ApiError> {
        self.engine
            .write(commerce, operation)
            .await
            .map_err(ApiError)
    }

    /// Runs a commerce's read-only operation through the engine (`Engine::read`).
    pub fn read<T>(
        &self,
        commerce: &Commerce,
        operation: impl FnOnce(Db<'_>, &Ctx<'_>) -> Result<T>,
    ) -> Result<T, ApiError> {
        self.engine.read(commerce, operation).map_err(ApiError)
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "mandato merchant API",
        description = "Payment mandates, installments, webhooks and electronic signatures. \
            Every /api/v1 operation except the .well-known keys takes the eight common headers; \
            all but login and the JWE helper also take `Authorization: Bearer <JWT>`. \
            Errors: `{statusCode, name, message, correlationId, errors[{field, code, message, value}]}` \
            (`value` on a 404: the id not found). The staff API is /admin/openapi.json.",
        version = "1.0.0"
    ),
    servers((url = "/api/v1", description = "This installation")),
    modifiers(&SecuritySchemes),
    components(schemas(mandato_core::error::FieldError, error::ErrorBody))
)]
struct ApiDoc;

struct SecuritySchemes;

impl utoipa::Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "apiKey",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("x-api-key"))),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    }
}

/// Documents, on every operation, the failures any request can meet: 500 (with the
/// correlationId to quote), 408 past the request time limit and, for operations with a body,
/// 413 beyond the size limit.
struct CommonErrors;

impl utoipa::Modify for CommonErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        let error = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build()
        };
        for (path, item) in openapi.paths.paths.iter_mut() {
            // Staff paths carry their server's prefix here; merchant paths are under /api/v1.
            let served_at = if path.starts_with(openapi::STAFF_SERVER) {
                path.clone()
            } else {
                format!("/api/v1{path}")
            };
            let too_large = if body_budget::is_small_body_route(&served_at) {
                "PAYLOAD_TOO_LARGE: over 16 KiB"
            } else {
                "PAYLOAD_TOO_LARGE: over 1 MiB"
            };
            for operation in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                let has_body = operation.request_body.is_some();
                let responses = &mut operation.responses.responses;
                responses
                    .entry("500".into())
                    .or_insert_with(|| error("INTERNAL_ERROR: quote the correlationId").into());
                responses.entry("408".into()).or_insert_with(|| {
                    error("REQUEST_TIMEOUT: not completed within 60 s (120 s for POST /signature)")
                        .into()
                });
                if has_body {
                    responses
                        .entry("413".into())
                        .or_insert_with(|| error(too_large).into());
                    responses.entry("503".into()).or_insert_with(|| {
                        error(
                            "SERVICE_BUSY (with Retry-After): the memory for request bodies in \
                             flight stayed spent for 10 s, or the database is busy; nothing was done",
                        )
                        .into()
                    });
                }
            }
        }
    }
}

/// OpenAPI wants every `operationId` unique (generated clients name their functions after
/// them), but utoipa takes the handler's name, which repeats across modules (`list`,
/// `detail`) and when one handler serves two methods. Staff operations are named after their
/// method and path (`staff_get_mandates_internalId`); a merchant name that repeats gets its
/// method appended.
fn unique_operation_ids(doc: &mut utoipa::openapi::OpenApi) {
    use std::collections::HashMap;
    fn operations(
        item: &mut utoipa::openapi::PathItem,
    ) -> [(&'static str, &mut Option<utoipa::openapi::path::Operation>); 4] {
        [
            ("get", &mut item.get),
            ("post", &mut item.post),
            ("put", &mut item.put),
            ("delete", &mut item.delete),
        ]
    }
    let mut merchant: HashMap<String, usize> = HashMap::new();
    for item in doc.paths.paths.values_mut() {
        if item.servers.is_none() {
            for (_, operation) in operations(item) {
                if let Some(id) = operation.as_ref().and_then(|o| o.operation_id.clone()) {
                    *merchant.entry(id).or_default() += 1;
                }
            }
        }
    }
    for (path, item) in doc.paths.paths.iter_mut() {
        let staff = item.servers.is_some();
        let path = path.strip_prefix(openapi::STAFF_SERVER).unwrap_or(path);
        let words: Vec<&str> = path
            .split(['/', '{', '}', '-', '.'])
            .filter(|w| !w.is_empty())
            .collect();
        for (method, operation) in operations(item) {
            let Some(operation) = operation else { continue };
            let id = operation.operation_id.clone().unwrap_or_default();
            if staff {
                operation.operation_id = Some(format!("staff_{method}_{}", words.join("_")));
            } else if merchant.get(&id).copied().unwrap_or(0) > 1 {
                operation.operation_id = Some(format!("{id}_{method}"));
            }
        }
    }
}

/// The merchant API, the staff API and their OpenAPI document, built together so that no
/// route can be missing from the document.
pub fn api_routers(
    state: &AppState,
) -> (Router<AppState>, Router<AppState>, utoipa::openapi::OpenApi) {
    #[allow(deprecated)]
    let with_headers = OpenApiRouter::new()
        .routes(small_body(routes!(login::login, login::login_deprecated)))
        .routes(small_body(routes!(login::encrypt)))
        .routes(routes!(users::create_user))
        .routes(routes!(mandates::create_mandate))
        .routes(routes!(mandates::find_mandate))
        .routes(routes!(mandates::find_onepay))
        .routes(routes!(mandates::mandate_document))
        .routes(routes!(mandates::cancel_mandate))
        .routes(routes!(installments::add_installments))
        .routes(routes!(installments::change_status))
        .routes(routes!(receivables::receivables))
        .routes(routes!(calendar::list_holidays))
        .routes(signature::with_body_limit(routes!(
            signature::create_signature
        )))
        .routes(routes!(signature::find_signature))
        .routes(routes!(signature::cancel_signature))
        .routes(routes!(events::list_events))
        .routes(routes!(events::get_event))
        .routes(routes!(events::redeliver_event))
        .routes(routes!(ledger::list_ledger))
        .routes(routes!(ledger::settlements))
        .routes(routes!(ledger::reconcile))
        .routes(routes!(ledger::payout_report))
        .routes(routes!(sandbox::get_faults, sandbox::put_faults))
        .routes(routes!(sandbox::notification))
        .routes(routes!(sandbox::redeliver))
        .routes(routes!(sandbox::get_clock, sandbox::advance_clock))
        .routes(routes!(sandbox::run_charging))
        .routes(routes!(sandbox::activate))
        .routes(routes!(sandbox::outcome))
        .routes(routes!(sandbox_reset::reset))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            common::layer,
        ));
    let public = OpenApiRouter::new()
        .routes(routes!(login::jwe_public_key))
        .routes(routes!(login::jwks));
    let (router, mut doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(with_headers)
        .merge(public)
        .split_for_parts();
    let (admin, admin_doc) = admin::router(state).split_for_parts();
    // The staff API is processed with the merchant's (the rules share component schemas), its
    // paths kept apart under their server's prefix, and served as its own document
    // (`openapi::split`). Its path items name their server too.
    for (path, mut item) in admin_doc.paths.paths {
        item.servers = Some(vec![utoipa::openapi::Server::new(openapi::STAFF_SERVER)]);
        doc.paths
            .paths
            .insert(format!("{}{path}", openapi::STAFF_SERVER), item);
    }
    if let (Some(components), Some(admin_components)) =
        (doc.components.as_mut(), admin_doc.components)
    {
        components.schemas.extend(admin_components.schemas);
    }
    // Applied after the routes are merged in, so it reaches every operation.
    utoipa::Modify::modify(&CommonErrors, &mut doc);
    unique_operation_ids(&mut doc);
    (router, admin, doc)
}

/// The whole listener.
pub fn router(state: AppState) -> Router {
    // Paths are documented relative to the `/api/v1` server.
    let (api, admin, doc) = api_routers(&state);
    let (merchant_doc, staff_doc) = openapi::split(openapi::document(&doc, &state.config));
    let (merchant_doc, staff_doc) = (Arc::new(merchant_doc), Arc::new(staff_doc));
    Router::new()
        .nest("/api/v1", api)
        .nest("/admin/api", admin)
        .merge(link::routes())
        .merge(sign::routes())
        .merge(acquirer_webhooks::routes())
        .route(
            "/openapi.json",
            get(move || {
                let doc = Arc::clone(&merchant_doc);
                async move { axum::Json(doc.as_ref().clone()) }
            }),
        )
        .route(
            "/admin/openapi.json",
            get(move || {
                let doc = Arc::clone(&staff_doc);
                async move { axum::Json(doc.as_ref().clone()) }
            }),
        )
        .fallback(ui::fallback)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::host_guard,
        ))
        .layer(DefaultBodyLimit::max(1024 * 1024))
        .layer(axum::middleware::from_fn(body_budget::layer))
        .layer(axum::middleware::map_response(close_after_refused_body))
        .with_state(state)
}

/// An unauthenticated route's body cap ([`body_budget::SMALL_BODY`]): a crowd of strangers
/// holding bodies open costs kilobytes each, not a megabyte.
pub fn small_body(
    route: utoipa_axum::router::UtoipaMethodRouter<AppState>,
) -> utoipa_axum::router::UtoipaMethodRouter<AppState> {
    use utoipa_axum::router::UtoipaMethodRouterExt;
    route.layer(DefaultBodyLimit::max(body_budget::SMALL_BODY))
}

/// A 413 is given before the body was read to its end, so the connection cannot carry another
/// request: saying so in `Connection: close` keeps the client from sending its next request on
/// a connection the server is closing (it would fail as an incomplete message).
async fn close_after_refused_body(
    mut response: axum::response::Response,
) -> axum::response::Response {
    if response.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        response.headers_mut().insert(
            axum::http::header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
    response
}
