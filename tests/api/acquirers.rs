//! `mandato acquirer set|show|remove` (CONTRACT 13) run as real processes: each rail takes the
//! kinds that serve it, secrets are taken from stdin and never printed again, and production
//! never holds the simulation.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::cli::{assert_refused, mandato};

const BIN: &str = env!("CARGO_BIN_EXE_mandato");
const SECRET: &str = "579B532A7440BB0C9079DED94D31EA1615BACEB56610332264630D42D0A36B1C";

fn transbank_args() -> Vec<&'static str> {
    vec![
        "acquirer",
        "set",
        "--rail",
        "cards",
        "--kind",
        "transbank",
        "--mall-code",
        "597055555541",
        "--child-code",
        "597055555542",
        "--webpay-code",
        "597055555532",
        "--secret-stdin",
    ]
}

fn commerce(dir: &std::path::Path) {
    mandato(
        dir,
        &[
            "commerce",
            "add",
            "--code",
            "76123456-0",
            "--name",
            "Gimnasio",
        ],
        None,
    );
}

#[test]
fn rails_are_set_shown_without_their_secret_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    commerce(data);
    let set = mandato(data, &transbank_args(), Some(SECRET));
    let cards = &set["acquirer"];
    assert_eq!(cards["kind"], "transbank");
    assert_eq!(cards["terms"]["childCode"], "597055555542");
    // A sandbox reaches Transbank's integration environment unless told otherwise.
    assert_eq!(cards["baseUrl"], "https://webpay3gint.transbank.cl");
    assert_eq!(cards["secretSet"], true);
    mandato(
        data,
        &[
            "acquirer",
            "set",
            "--rail",
            "bank",
            "--kind",
            "fintoc",
            "--public-key",
            "pk_test_abc",
            "--secret-stdin",
            "--webhook-secret-stdin",
        ],
        Some("sk_test_secret\nwhsec_test_hook\n"),
    );
    let shown = mandato(data, &["acquirer", "show"], None);
    assert_eq!(shown["acquirers"][1]["secretSet"], true);
    assert_eq!(shown["acquirers"][1]["webhookSecretSet"], true);
    assert_eq!(shown["acquirers"][0]["webhookSecretSet"], false);
    let rails: Vec<&str> = shown["acquirers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["rail"].as_str().unwrap())
        .collect();
    assert_eq!(rails, ["cards", "bank"]);
    let text = shown.to_string();
    assert!(
        !text.contains(SECRET) && !text.contains("sk_test_secret") && !text.contains("whsec_"),
        "{text}"
    );
    let removed = mandato(data, &["acquirer", "remove", "--rail", "bank"], None);
    assert_eq!(removed["removed"], true);
    assert_refused(
        data,
        &["acquirer", "remove", "--rail", "bank"],
        "ACQUIRER_NOT_FOUND",
    );
}

#[test]
fn bad_setups_name_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    commerce(data);
    let message = assert_refused(
        data,
        &[
            "acquirer",
            "set",
            "--rail",
            "bank",
            "--kind",
            "transbank",
            "--mall-code",
            "59705555554X",
        ],
        "VALIDATION_ERROR",
    );
    for field in ["kind", "mallCode", "childCode", "webpayCode", "secret"] {
        assert!(message.contains(field), "{field} named in {message}");
    }
}

/// Runs the installation once as production, so the command line knows it is one.
fn run_as_production(dir: &std::path::Path) {
    use std::io::{BufRead, BufReader};
    let mut server = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--environment",
            "production",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    while !lines
        .next()
        .expect("serve logs its URL")
        .unwrap()
        .contains("url=")
    {}
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn production_refuses_the_simulation_and_plain_http() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    commerce(data);
    run_as_production(data);
    assert_refused(
        data,
        &["acquirer", "set", "--rail", "cards", "--kind", "simulated"],
        "ACQUIRER_NOT_ALLOWED",
    );
    let mut http = transbank_args();
    http.extend(["--base-url", "http://127.0.0.1:9"]);
    let out = crate::cli::json_output(crate::helpers::cli_command(data), &http, Some(SECRET));
    assert_eq!(out.status.code(), Some(1));
    let error: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(error["error"]["name"], "VALIDATION_ERROR");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("baseUrl")
    );
    // The production host by default.
    let set = mandato(data, &transbank_args(), Some(SECRET));
    assert_eq!(set["acquirer"]["baseUrl"], "https://webpay3g.transbank.cl");
}
