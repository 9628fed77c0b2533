//! DNS-rebinding protection: a request must name this machine (or the configured public host)
//! in `Host`, so a web page on another site cannot reach the listener through a name that
//! resolves to loopback.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::ApiError;
use crate::error::Error;

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
        return ApiError(Error::forbidden(
            "HOST_NOT_ALLOWED",
            "this Host is not served here",
        ))
        .into_response();
    }
    next.run(request).await
}

fn host_without_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
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
        ] {
            assert_eq!(is_loopback_name(host_without_port(host)), ok, "{host}");
        }
    }
}
