//! The staff UI (Mandato Desk's pages), built by Vite into `ui/dist` and embedded in the binary
//! (debug builds read `ui/dist` from disk instead). Every path that is not an API, the OpenAPI
//! document or a customer page is the single-page app: a file of the build when there is one,
//! `index.html` otherwise, so that the app's own routes (`/mandates/man_...`) load on refresh.

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use crate::error::Error;

#[derive(rust_embed::Embed)]
#[folder = "ui/dist/"]
struct Assets;

/// Paths that belong to the APIs and pages: an unknown one is the JSON 404 of the API.
const NOT_UI: &[&str] = &["/api", "/admin/api", "/openapi.json", "/link", "/sign"];

/// Vite names the files under `assets/` by their content hash: they never change.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The app loads only its own scripts and talks only to this origin. Mantine sets styles
/// inline, hence `'unsafe-inline'` for styles (never for scripts).
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
    img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; \
    base-uri 'self'; form-action 'self'";

fn is_ui_path(path: &str) -> bool {
    !NOT_UI.iter().any(|prefix| {
        path == *prefix
            || path
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// The router's fallback: the UI for its paths, the API's 404 for the rest.
pub async fn fallback(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let path = uri.path();
    if !is_ui_path(path) || !(method == Method::GET || method == Method::HEAD) {
        return ApiError(Error::not_found("route")).into_response();
    }
    let file = path.trim_start_matches('/');
    if !file.is_empty() {
        if let Some(asset) = Assets::get(file) {
            return respond(file, asset, &headers);
        }
        // A missing file of the build (an old hashed name) is a plain 404, not the app.
        let last = file.rsplit('/').next().unwrap_or(file);
        if last.contains('.') {
            return (StatusCode::NOT_FOUND, "not found").into_response();
        }
    }
    match Assets::get("index.html") {
        Some(asset) => respond("index.html", asset, &headers),
        // Only a debug build whose ui/dist was removed after compiling gets here.
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "The UI is not built: cd ui && npm ci && npm run build",
        )
            .into_response(),
    }
}

fn respond(name: &str, asset: rust_embed::EmbeddedFile, request: &HeaderMap) -> Response {
    let etag = format!("\"{}\"", hex::encode(asset.metadata.sha256_hash()));
    let cache = if name.starts_with("assets/") {
        IMMUTABLE
    } else {
        "no-cache"
    };
    let mut response = if request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|tag| tag.trim() == etag))
    {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut mime = asset.metadata.mimetype().to_string();
        if (mime.starts_with("text/") || mime.ends_with("javascript") || mime.ends_with("json"))
            && !mime.contains("charset")
        {
            mime.push_str("; charset=utf-8");
        }
        let mut response = asset.data.into_owned().into_response();
        if let Ok(value) = HeaderValue::from_str(&mime) {
            response.headers_mut().insert(header::CONTENT_TYPE, value);
        }
        response
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if name == "index.html" {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        );
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::is_ui_path;

    #[test]
    fn api_and_page_paths_are_not_the_app() {
        for (path, ui) in [
            ("/", true),
            ("/mandates/man_1", true),
            ("/assets/index-abc.js", true),
            ("/administration", true),
            ("/apix", true),
            ("/api", false),
            ("/api/v1/nothing", false),
            ("/admin/api/nothing", false),
            ("/openapi.json", false),
            ("/link/abc", false),
            ("/sign/abc", false),
        ] {
            assert_eq!(is_ui_path(path), ui, "{path}");
        }
    }
}
