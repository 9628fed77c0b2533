//! The staff UI (Mandato Desk's pages), built by Vite into `ui/dist` and embedded in the binary
//! (debug builds read `ui/dist` from disk instead). Every path that is not an API, the OpenAPI
//! document or a customer page is the single-page app: a file of the build when there is one,
//! `index.html` otherwise, so that the app's own routes (`/mandates/man_...`) load on refresh.
//!
//! The build writes a brotli (`.br`) and a gzip (`.gz`) copy beside each text file
//! (`ui/scripts/precompress.mjs`); a request whose `Accept-Encoding` admits one gets it with its
//! `Content-Encoding`, the others the file itself. Every answer says `Vary: Accept-Encoding`, so
//! a cache never hands one client's encoding to another.

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use super::accept::quality;
use super::error::ApiError;
use mandato_core::error::Error;

#[derive(rust_embed::Embed)]
#[folder = "../../ui/dist/"]
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

/// A precompressed copy the build writes beside a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    Brotli,
    Gzip,
}

impl Encoding {
    /// Best first: on equal quality the smaller brotli copy wins.
    const PREFERRED: [Encoding; 2] = [Encoding::Brotli, Encoding::Gzip];

    fn suffix(self) -> &'static str {
        match self {
            Encoding::Brotli => ".br",
            Encoding::Gzip => ".gz",
        }
    }

    fn token(self) -> &'static str {
        match self {
            Encoding::Brotli => "br",
            Encoding::Gzip => "gzip",
        }
    }

    /// Its quality in `Accept-Encoding` (RFC 9110 section 12.5.3), in thousandths: the item
    /// naming it (`x-gzip` counts as `gzip`) or else `*`; absent, it is not acceptable.
    fn quality_in(self, request: &HeaderMap) -> u16 {
        let mut named = None;
        let mut any = None;
        let items = request
            .get_all(header::ACCEPT_ENCODING)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','));
        for item in items {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let weight = parts
                .filter_map(|p| p.trim().split_once('='))
                .find(|(key, _)| key.trim().eq_ignore_ascii_case("q"))
                .map_or(Some(1000), |(_, value)| quality(value.trim()));
            let Some(weight) = weight else { continue };
            if coding == self.token() || (self == Encoding::Gzip && coding == "x-gzip") {
                named = Some(weight);
            } else if coding == "*" {
                any = Some(weight);
            }
        }
        named.or(any).unwrap_or(0)
    }
}

/// The encodings the request admits, best first: highest quality, then `PREFERRED`'s order.
fn acceptable(request: &HeaderMap) -> Vec<Encoding> {
    let mut admitted: Vec<(Encoding, u16)> = Encoding::PREFERRED
        .iter()
        .map(|&encoding| (encoding, encoding.quality_in(request)))
        .filter(|(_, quality)| *quality > 0)
        .collect();
    admitted.sort_by_key(|(_, quality)| std::cmp::Reverse(*quality));
    admitted.into_iter().map(|(encoding, _)| encoding).collect()
}

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
        // The path is echoed back as the value not found, cut to a readable length.
        let shown: String = path.chars().take(256).collect();
        return ApiError(Error::not_found_at("route", "path", &shown)).into_response();
    }
    let file = path.trim_start_matches('/');
    // The compressed copies are only ever served as an encoding of their file.
    if is_compressed_copy(file) {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    }
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

fn is_compressed_copy(file: &str) -> bool {
    Encoding::PREFERRED
        .iter()
        .any(|encoding| file.ends_with(encoding.suffix()))
}

/// The file's bytes in the best encoding the request admits that the build wrote.
fn representation(
    name: &str,
    asset: rust_embed::EmbeddedFile,
    request: &HeaderMap,
) -> (rust_embed::EmbeddedFile, Option<Encoding>) {
    acceptable(request)
        .into_iter()
        .find_map(|encoding| {
            Assets::get(&format!("{name}{}", encoding.suffix())).map(|copy| (copy, Some(encoding)))
        })
        .unwrap_or((asset, None))
}

fn respond(name: &str, asset: rust_embed::EmbeddedFile, request: &HeaderMap) -> Response {
    let mime = asset.metadata.mimetype().to_string();
    let (asset, encoding) = representation(name, asset, request);
    // Each encoding is its own representation, with its own validator.
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
        let mut mime = mime;
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
    if let Some(encoding) = encoding {
        headers.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(encoding.token()),
        );
    }
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
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
    use super::{Encoding, acceptable, is_ui_path};
    use axum::http::{HeaderMap, HeaderValue, header};

    fn check(accept_encoding: Option<&str>, expected: &[Encoding]) {
        let mut request = HeaderMap::new();
        if let Some(value) = accept_encoding {
            request.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_str(value).unwrap(),
            );
        }
        assert_eq!(acceptable(&request), expected, "{accept_encoding:?}");
    }

    #[test]
    fn encodings_follow_accept_encoding() {
        use Encoding::{Brotli, Gzip};
        check(None, &[]);
        check(Some(""), &[]);
        check(Some("identity"), &[]);
        check(Some("gzip, deflate, br, zstd"), &[Brotli, Gzip]);
        check(Some("gzip"), &[Gzip]);
        check(Some("x-gzip"), &[Gzip]);
        check(Some("BR"), &[Brotli]);
        check(Some("br;q=0.5, gzip"), &[Gzip, Brotli]);
        check(Some("br;q=0, gzip;q=0.1"), &[Gzip]);
        check(Some("*"), &[Brotli, Gzip]);
        check(Some("*;q=0.2, gzip;q=0"), &[Brotli]);
        check(Some("br;q=2, gzip;q=x"), &[]);
    }

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
