//! Benchmark of session-token issuing and verifying (see `bench/README.md`, "JWT issue and
//! verify").
//!
//! `cargo bench --bench jwt` (release). A plain loop over the library's `JwtSigner`, timed with
//! `Instant`, printing microseconds per operation:
//! - `issue`: N tokens issued (ES256 signature, fresh `jti`);
//! - `verify, first use`: each of N distinct tokens verified once, i.e. the full check (header,
//!   signature, claims) plus remembering the token;
//! - `verify, reused`: one token verified N times, i.e. the path of a client that keeps its
//!   token (the remembered-token lookup and the time checks).
//!
//! `MANDATO_BENCH_JWT_N` overrides N (default 20,000).

use std::hint::black_box;
use std::time::Instant;

use chrono::{TimeZone, Utc};
use mandato::auth::jwt::JwtSigner;

const AUDIENCE: &str = "sandbox";
const COMMERCE: &str = "76123456-7";
const LIFETIME_SECS: i64 = 3_600;

fn main() {
    let n: usize = std::env::var("MANDATO_BENCH_JWT_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let signer = JwtSigner::generate().expect("a P-256 key");
    let now = Utc
        .with_ymd_and_hms(2026, 3, 1, 12, 0, 0)
        .single()
        .expect("a valid date");

    // Warm-up, so that the first timed operations do not pay for lazy initialisation.
    for _ in 0..200 {
        let issued = signer
            .issue(COMMERCE, AUDIENCE, now, LIFETIME_SECS)
            .expect("issue");
        black_box(signer.verify(issued.token.expose(), AUDIENCE, now)).expect("verify");
    }

    let started = Instant::now();
    let mut tokens = Vec::with_capacity(n);
    for _ in 0..n {
        let issued = signer
            .issue(COMMERCE, AUDIENCE, now, LIFETIME_SECS)
            .expect("issue");
        tokens.push(issued.token.expose().clone());
    }
    let issue = started.elapsed();

    let started = Instant::now();
    for token in &tokens {
        black_box(signer.verify(token, AUDIENCE, now)).expect("verify");
    }
    let first_use = started.elapsed();

    let reused_token = &tokens[0];
    let started = Instant::now();
    for _ in 0..n {
        black_box(signer.verify(reused_token, AUDIENCE, now)).expect("verify");
    }
    let reused = started.elapsed();

    let per_op = |d: std::time::Duration| d.as_secs_f64() * 1e6 / n as f64;
    println!("JWT issue and verify, N = {n}");
    println!("{:<20} {:>10}", "operation", "us/op");
    println!("{:<20} {:>10.2}", "issue", per_op(issue));
    println!("{:<20} {:>10.2}", "verify, first use", per_op(first_use));
    println!("{:<20} {:>10.2}", "verify, reused", per_op(reused));
}
