//! `mandato trigger` (CONTRACT 12) against a real `serve` on the same data directory: every
//! scenario writes the real events of a throwaway mandate or signature process, and the running
//! engine delivers them, signed, to the commerce's webhook URL (an HTTPS receiver here, with the
//! installation's development certificate).

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use crate::cli::mandato;
use crate::process::{install, serve_logged};
use crate::receiver::{Receiver, body_signature_valid, standard_signature_valid};

/// The scenario, and what its events must say, in order (type and detail's start).
const EXPECTED: &[(&str, &[(&str, &str)])] = &[
    ("activation", &[("activation", "mandate trigger-")]),
    (
        "payment.paid",
        &[
            ("activation", "mandate"),
            ("payment", "installment trigger-1 IN_PROCESS"),
            ("payment", "installment trigger-1 PAID"),
        ],
    ),
    (
        "payment.rejected",
        &[
            ("activation", "mandate"),
            ("payment", "installment trigger-1 IN_PROCESS"),
            (
                "payment",
                "installment trigger-1 REJECTED INSUFFICIENT_FUNDS, retry on ",
            ),
        ],
    ),
    (
        "payment.reversed",
        &[
            ("activation", "mandate"),
            ("payment", "installment trigger-1 IN_PROCESS"),
            ("payment", "installment trigger-1 PAID"),
            ("payment", "installment trigger-1 REVERSED"),
        ],
    ),
    (
        "mandate.cancelled",
        &[
            ("activation", "mandate"),
            ("payment", "installment trigger-1 ANNULLED"),
            ("activation", "mandate"),
        ],
    ),
    (
        "signature.completed",
        &[
            ("signature", "SIGNATORY_SIGNED"),
            ("signature", "SIGNATURE_COMPLETED"),
        ],
    ),
    ("signature.rejected", &[("signature", "SIGNATURE_REJECTED")]),
];

#[tokio::test(flavor = "multi_thread")]
async fn every_scenario_delivers_its_real_events_signed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let installation = install(data, "76.123.456-0", "s3cret-pass");
    let receiver = Receiver::start(&installation.cert_pem, &installation.key_pem).await;
    let url = receiver.url("/hooks");
    mandato(
        data,
        &[
            "commerce",
            "set-webhook",
            "--code",
            "76123456-0",
            "--url",
            &url,
        ],
        None,
    );
    let listed = mandato(data, &["trigger", "--list"], None);
    let names: Vec<&str> = listed["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, EXPECTED.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    let (_server, _base) = serve_logged(data, &[], &data.join("serve.log"));

    let mut printed: Vec<(String, Value)> = Vec::new();
    for (scenario, expected) in EXPECTED {
        // One commerce: --commerce may be left out.
        let made = mandato(data, &["trigger", scenario], None);
        assert_eq!(made["scenario"], *scenario);
        assert_eq!(made["webhookUrl"], url.as_str());
        assert!(made["customer"].as_str().unwrap().starts_with("trigger-"));
        let events = made["events"].as_array().unwrap();
        let got: Vec<(String, String)> = events
            .iter()
            .map(|e| {
                (
                    e["type"].as_str().unwrap().to_string(),
                    e["detail"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(got.len(), expected.len(), "{scenario}: {got:?}");
        for ((kind, detail), (want_kind, want_detail)) in got.iter().zip(expected.iter()) {
            assert_eq!(kind, want_kind, "{scenario}: {got:?}");
            assert!(
                detail.starts_with(want_detail),
                "{scenario}: {detail:?} should start with {want_detail:?}"
            );
        }
        if *scenario == "mandate.cancelled" {
            assert!(got[2].1.ends_with("CANCELLED"), "{got:?}");
        }
        for e in events {
            assert_eq!(e["url"], url.as_str(), "sent to the commerce's webhook URL");
            printed.push((scenario.to_string(), e.clone()));
        }
    }

    // The running engine delivers every printed event, signed both ways.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let by_id: HashMap<String, crate::receiver::Received> = loop {
        let received: HashMap<String, crate::receiver::Received> = receiver
            .received()
            .into_iter()
            .map(|r| (r.header("webhook-id").to_string(), r))
            .collect();
        if printed
            .iter()
            .all(|(_, e)| received.contains_key(e["eventId"].as_str().unwrap()))
        {
            break received;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not every triggered event arrived: {} received",
            received.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for (scenario, e) in &printed {
        let id = e["eventId"].as_str().unwrap();
        let received = &by_id[id];
        assert!(
            body_signature_valid(received, &installation.webhook_secret),
            "{scenario} {id}: body signature"
        );
        assert!(
            standard_signature_valid(received, &installation.webhook_secret),
            "{scenario} {id}: webhook-signature"
        );
        let body = received.json();
        assert_eq!(body["eventId"], id);
        assert_eq!(body["sequence"], e["sequence"]);
    }
    let rejected = printed
        .iter()
        .find(|(s, e)| {
            s == "payment.rejected" && e["detail"].as_str().unwrap().contains("REJECTED")
        })
        .map(|(_, e)| by_id[e["eventId"].as_str().unwrap()].json())
        .unwrap();
    assert_eq!(
        rejected["installment"]["rejection"]["code"],
        "INSUFFICIENT_FUNDS"
    );
    assert_eq!(rejected["installment"]["retryScheduled"], true);

    // The throwaway data is the commerce's like any other: a reset removes it.
    let reset = mandato(data, &["sandbox", "reset"], None);
    assert_eq!(reset["mandates"], 5);
    assert_eq!(reset["signatureProcesses"], 2);
    assert_eq!(reset["customers"], 7);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_payment_scenario_on_a_weekend_charges_only_its_mandate_on_the_next_business_day() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    install(data, "76.123.456-0", "s3cret-pass");
    mandato(
        data,
        &[
            "commerce",
            "set-webhook",
            "--code",
            "76123456-0",
            "--url",
            "https://127.0.0.1:9/hooks",
        ],
        None,
    );
    // Chile's business days (stored by `serve` at start, which the CLI then follows).
    let (_server, _base) = serve_logged(
        data,
        &[("MANDATO_BUSINESS_DAYS", "chile")],
        &data.join("serve.log"),
    );
    let today: chrono::NaiveDate = mandato(data, &["sandbox", "clock"], None)["today"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let saturday = (1..8)
        .map(|n| today + chrono::Duration::days(n))
        .find(|d| chrono::Datelike::weekday(d) == chrono::Weekday::Sat)
        .unwrap();
    let saturday_text = saturday.to_string();
    mandato(
        data,
        &["sandbox", "clock", "advance", "--to", &saturday_text],
        None,
    );
    let next = mandato(data, &["charge-run", "--date", &saturday_text], None)["nextBusinessDay"]
        .as_str()
        .unwrap()
        .to_string();

    // Another mandate due today, active: a trigger must not charge it.
    mandato(data, &["trigger", "activation"], None);
    let made = mandato(data, &["trigger", "payment.paid"], None);
    let details: Vec<&str> = made["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    assert_eq!(details.len(), 3, "{details:?}");
    assert_eq!(
        details[2],
        format!("installment trigger-1 PAID, charge date {next}")
    );
    // The other mandate's installment waits for the next business day's run.
    let run = mandato(data, &["charge-run", "--date", &next], None);
    assert_eq!(run["attempted"], 1, "{run}");
    assert_eq!(run["paid"], 1, "{run}");
}
