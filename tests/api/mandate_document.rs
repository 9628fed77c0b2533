//! The EPAC mandate document as it leaves the service (the activation event's `fileBase64`),
//! read back with poppler-utils (`pdftotext`, `pdfinfo`, `pdffonts`, `pdftoppm`; installed by
//! `scripts/setup.sh`): a reader independent of the library that wrote it.

use std::path::Path;
use std::process::Command;

use base64::Engine;
use chrono::NaiveDate;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::link::{get_page, post_form, terms_sha};

/// Runs a poppler tool and returns its standard output.
fn poppler(tool: &str, args: &[&str], pdf: &Path) -> String {
    let output = Command::new(tool)
        .args(args)
        .arg(pdf)
        .args(if tool == "pdftotext" {
            &["-"][..]
        } else {
            &[][..]
        })
        .output()
        .unwrap_or_else(|e| panic!("{tool} (poppler-utils, scripts/setup.sh): {e}"));
    assert!(
        output.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `2026-12-02` as the document writes dates: `02-12-2026`.
fn spanish_date(iso: &str) -> String {
    NaiveDate::parse_from_str(iso, "%Y-%m-%d")
        .unwrap()
        .format("%d-%m-%Y")
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_epac_document_reads_back_in_spanish_with_every_accent() {
    let mut app = spawn_app().await;
    app.login().await;
    let mut customer = customer_body("cust-jm", "12.345.678-5");
    customer["customer"]["personalInformation"] =
        json!({"firstName": "José", "lastName": "Muñoz", "secondLastName": "Ñúñez"});
    app.post("/user", &customer)
        .await
        .expect(201, "USER_CREATE_OK");
    let mut body = changed(
        &subscription_body(&app, "cust-jm", "GIM-NUNOA-1", 3),
        &[
            ("/paymentMethods", Some(json!([6]))),
            (
                "/mandate/detail",
                Some(json!("¿Plan año? ¡Sí! 1º piso, 2ª sala")),
            ),
        ],
    );
    body["mandate"]["charges"]["amount"] = json!(1_234_567);
    let payload = app.create_mandate(&body).await;
    let link = payload["mandate"]["magicLink"]
        .as_str()
        .unwrap()
        .to_string();
    let internal_id = payload["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();

    let page = get_page(&link).await;
    let sha = terms_sha(&page.html, 6);
    let page = post_form(
        &link,
        &[
            ("method", "6"),
            ("bankCode", "012"),
            ("accountType", "CHECKING"),
            ("accountNumber", "123450000"),
            ("holderRut", "12.345.678-5"),
            ("accept", "on"),
            ("termsSha256", &sha),
        ],
    )
    .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.html);

    let activation: Value = app
        .events_of(&internal_id)
        .into_iter()
        .find(|e| e["event"] == "activation")
        .expect("the activation event");
    let pdf = base64::engine::general_purpose::STANDARD
        .decode(activation["fileBase64"].as_str().expect("fileBase64"))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mandato.pdf");
    std::fs::write(&path, &pdf).unwrap();

    let text = flat(&poppler("pdftotext", &["-layout", "-enc", "UTF-8"], &path));
    let first_due = spanish_date(&app.date_in(7));
    for expected in [
        "Mandato de cargo en cuenta",
        "Nombre José Muñoz Ñúñez",
        "RUT 12.345.678-5",
        "N° de mandato GIM-NUNOA-1",
        "Detalle ¿Plan año? ¡Sí! 1º piso, 2ª sala",
        "Comercio de prueba",
        "Código 76.123.456-0",
        &format!("Cuota 1 $1.234.567 · vence el {first_due}"),
        "$1.234.567 mensual",
        "Cuenta BancoEstado **** 0000",
        "RUT del titular 12.345.678-5",
        "MANDATO ELECTRÓNICO DE CARGO EN CUENTA (EPAC)",
        &sha,
    ] {
        assert!(text.contains(expected), "{expected:?} missing from {text}");
    }
    assert!(
        !text.contains("123450000"),
        "the full account never appears"
    );

    let info = poppler("pdfinfo", &[], &path);
    let pages: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("a page count");
    assert!(
        text.contains(&format!("Página {pages} de {pages}")),
        "every page counted in its footer ({pages}): {text}"
    );
    assert!(!text.contains(&format!("Página {} de", pages + 1)));

    let fonts = flat(&poppler("pdffonts", &[], &path));
    assert!(
        fonts.contains("LiberationSans CID TrueType Identity-H yes yes yes"),
        "the font is embedded, subset, with its Unicode map: {fonts}"
    );

    let root = dir.path().join("page");
    let status = Command::new("pdftoppm")
        .args(["-png", "-r", "60", "-f", "1", "-l", "1", "-singlefile"])
        .arg(&path)
        .arg(&root)
        .status()
        .expect("pdftoppm (poppler-utils)");
    assert!(status.success());
    let png = std::fs::read(dir.path().join("page.png")).expect("page 1 as PNG");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
}
