//! DNS-rebinding protection: a request must name this machine (or the configured public host)
//! in `Host`, so a web page on another site cannot reach the listener through a name that
//! resolves to loopback. Also the time limit of every request.

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::{ApiError, ErrorBody};
use mandato_core::error::Error;
use mandato_engine::config::HttpLimits;

pub async fn host_guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let mut hosts = request.headers().get_all(axum::http::header::HOST).iter();
    // Two `Host` headers are refused whatever they say: a proxy in front may route by one and
    // this check would pass on the other.
    let host = match (hosts.next(), hosts.next()) {
        (Some(only), None) => only.to_str().ok().map(host_without_port),
        _ => None,
    };
    let allowed = match host {
        Some(h) => {
            is_loopback_name(h)
                || state
                    .config
                    .public_host
                    .as_deref()
                    .is_some_and(|p| p.eq_ignore_ascii_case(h))
        }
        None => false,
    };
    if !allowed {
        state.audit.refused(
            state.clock.now(),
            mandato_engine::records::Refusal::HostNotAllowed,
        );
        return ApiError(Error::forbidden(
            "HOST_NOT_ALLOWED",
            "this Host is not served here",
        ))
        .into_response();
    }
    next.run(request).await
}

/// When the request's time limit runs out, for the layers inside it: one that is dropped can
/// tell a cut request from one whose client left.
#[derive(Clone, Copy, Debug)]
pub struct Deadline(std::time::Instant);

impl Deadline {
    pub fn passed(self) -> bool {
        std::time::Instant::now() >= self.0
    }
}

/// Answers or cuts every request within its time limit (CONTRACT 12, "HTTP"): 60 s, 120 s for
/// `POST /api/v1/signature`. The limit covers reading the body, which the handler does, so a
/// client that trickles its body is cut too. A cut request gets 408 `REQUEST_TIMEOUT` and the
/// connection is closed, since the rest of its body may still be on the way. A write the
/// request had already queued may still commit: look the resource up before repeating it.
pub async fn request_time_limit(
    State(limits): State<HttpLimits>,
    mut request: Request,
    next: Next,
) -> Response {
    let limit = if request.method() == Method::POST && request.uri().path() == "/api/v1/signature" {
        limits.signature_request_timeout
    } else {
        limits.request_timeout
    };
    request
        .extensions_mut()
        .insert(Deadline(std::time::Instant::now() + limit));
    let correlation_id = request
        .headers()
        .get("correlationId")
        .and_then(|v| v.to_str().ok())
        .filter(|c| uuid::Uuid::parse_str(c).is_ok())
        .map(str::to_string);
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            let body = ErrorBody {
                status_code: StatusCode::REQUEST_TIMEOUT.as_u16(),
                name: "REQUEST_TIMEOUT".into(),
                message: format!(
                    "the request was not completed within {} s; send it again at a steady pace",
                    limit.as_secs()
                ),
                correlation_id,
                errors: Vec::new(),
            };
            (
                StatusCode::REQUEST_TIMEOUT,
                [(header::CONNECTION, "close")],
                axum::Json(body),
            )
                .into_response()
        }
    }
}

/// The host of a `Host` header without its port. A "port" that is not digits
/// (`localhost:evil.example`) is no port: the whole value is the host, and it is no loopback
/// name.
fn host_without_port(host: &str) -> &str {
    let is_port = |port: &str| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = host.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((ip, "")) => ip,
            Some((ip, tail)) if tail.strip_prefix(':').is_some_and(is_port) => ip,
            _ => host,
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if is_port(port) => name,
        _ => host,
    }
}

fn is_loopback_name(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_pass_and_others_do_not() {
        for (host, ok) in [
            ("localhost:7420", true),
            ("127.0.0.1:7420", true),
            ("127.8.9.1", true),
            ("[::1]:7420", true),
            ("LOCALHOST", true),
            ("evil.example:7420", false),
            ("localhost.evil.example", false),
            ("10.0.0.1", false),
            ("localhost:evil.example", false),
            ("localhost:", false),
            ("[::1]evil", false),
            ("[::1]:evil", false),
            ("127.0.0.1:80x", false),
        ] {
            assert_eq!(is_loopback_name(host_without_port(host)), ok, "{host}");
        }
    }
}
