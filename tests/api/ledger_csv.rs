//! The ledger listing as CSV over real HTTP: `Accept: text/csv` pages with the cursor in
//! `Mandato-Next-Cursor` and `Link`, reaching every entry once; the columns and cells of
//! `mandato ledger export`, formula-like cells neutralised; errors stay JSON; an `Accept` the
//! listing cannot serve is 406; one commerce never sees another's entries.

use reqwest::Method;
use serde_json::json;

use crate::helpers::*;
use crate::ledger::fixture;

const CHANGE: &str = "/installments/status/change";
/// A manual payment's reference that a spreadsheet would run as a formula.
const FORMULA: &str = "=HYPERLINK(\"http://evil.example\",\"pay\")";

async fn get_as(app: &TestApp, path: &str, accept: &str) -> Reply {
    let accept = accept.to_string();
    app.request_with(Method::GET, path, None, |headers| {
        headers.push(("accept".into(), accept));
    })
    .await
}

fn text(reply: &Reply) -> &str {
    reply
        .body
        .as_str()
        .unwrap_or_else(|| panic!("not CSV: {}", reply.body))
}

fn header<'a>(reply: &'a Reply, name: &str) -> Option<&'a str> {
    reply.headers.get(name).map(|v| v.to_str().unwrap())
}

/// Six entries: five annulments (i1..i5) and a manual payment of i6 whose reference looks like
/// a formula.
async fn six_entries() -> TestApp {
    let items: Vec<(String, i64, i64)> = (1..=6).map(|n| (format!("i{n}"), 1000, 30)).collect();
    let refs: Vec<(&str, i64, i64)> = items.iter().map(|(i, a, d)| (i.as_str(), *a, *d)).collect();
    let (app, _) = fixture(&refs).await;
    app.put(
        CHANGE,
        &annulment_body("M-1", &["i1", "i2", "i3", "i4", "i5"]),
    )
    .await
    .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    let mut payment = payment_body(&app, "M-1", &["i6"], 1000);
    set(&mut payment, "/payment/authorizationCode", json!(FORMULA));
    app.put(CHANGE, &payment)
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    app
}

#[tokio::test(flavor = "multi_thread")]
async fn csv_pages_follow_the_cursor_header_and_match_the_cli_export() {
    let app = six_entries().await;
    let header_row = mandato::http::ledger::CSV_COLUMNS.join(",");
    let mut rows: Vec<String> = Vec::new();
    let mut path = "/ledger?limit=4&kind=ANNULMENT".to_string();
    // Only the five annulments, four to a page: two pages.
    let mut pages = 0;
    loop {
        let reply = get_as(&app, &path, "text/csv").await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(
            header(&reply, "content-type"),
            Some("text/csv; charset=utf-8")
        );
        assert_eq!(header(&reply, "vary"), Some("Accept"));
        let mut lines = text(&reply).lines();
        assert_eq!(lines.next(), Some(header_row.as_str()));
        rows.extend(lines.map(str::to_string));
        pages += 1;
        let Some(next) = header(&reply, "mandato-next-cursor") else {
            assert_eq!(
                header(&reply, "link"),
                None,
                "no next link on the last page"
            );
            break;
        };
        let link = header(&reply, "link").expect("a next link beside the cursor");
        assert_eq!(
            link,
            format!("</api/v1/ledger?limit=4&kind=ANNULMENT&cursor={next}>; rel=\"next\"")
        );
        path = link
            .trim_start_matches("</api/v1")
            .trim_end_matches(">; rel=\"next\"")
            .to_string();
    }
    assert_eq!(pages, 2);
    assert_eq!(rows.len(), 5);
    let installments: Vec<&str> = rows.iter().map(|r| r.split(',').nth(11).unwrap()).collect();
    assert_eq!(installments, ["i1", "i2", "i3", "i4", "i5"]);

    // Every entry, a page at a time, is exactly what the CLI exports, line for line.
    let mut all: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/ledger?limit=2&cursor={c}"),
            None => "/ledger?limit=2".to_string(),
        };
        let reply = get_as(&app, &path, "text/csv").await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        all.extend(text(&reply).lines().skip(1).map(str::to_string));
        match header(&reply, "mandato-next-cursor") {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    let out = crate::helpers::cli_command(app.dir.path())
        .args(["ledger", "export", "--commerce", COMMERCE])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exported = String::from_utf8(out.stdout).unwrap();
    let mut exported = exported.lines();
    assert_eq!(exported.next(), Some(header_row.as_str()));
    assert_eq!(all, exported.map(str::to_string).collect::<Vec<_>>());
    assert_eq!(all.len(), 6);

    // The formula-like reference is text, behind a leading quote, in the API and the export.
    let csv_text = format!("{header_row}\n{}\n", all.join("\n"));
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let payment = reader
        .records()
        .map(Result::unwrap)
        .find(|r| &r[1] == "MANUAL_PAYMENT")
        .expect("the manual payment");
    assert_eq!(&payment[12], format!("'{FORMULA}"));
    assert_eq!(&payment[3], "1000");
    assert_eq!(&payment[11], "i6");

    // The JSON listing keeps the reference as sent, and its page matches the CSV page.
    let json_page = app.get("/ledger?limit=2").await;
    json_page.expect(200, "LEDGER_OK");
    let next = json_page.body["payload"]["nextCursor"].as_str().unwrap();
    assert_eq!(header(&json_page, "mandato-next-cursor"), Some(next));
    let csv_page = get_as(&app, "/ledger?limit=2", "text/csv").await;
    assert_eq!(header(&csv_page, "mandato-next-cursor"), Some(next));
    let ids: Vec<String> = json_page.body["payload"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["entryId"].as_str().unwrap().to_string())
        .collect();
    let csv_ids: Vec<String> = text(&csv_page)
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect();
    assert_eq!(ids, csv_ids);
    let last = app.get(&format!("/ledger?cursor={next}&limit=500")).await;
    let items = last.body["payload"]["items"].as_array().unwrap();
    assert_eq!(items.last().unwrap()["acquirerReference"], FORMULA);
}

#[tokio::test(flavor = "multi_thread")]
async fn accept_chooses_the_form_and_errors_stay_json() {
    let app = six_entries().await;
    for (accept, csv) in [
        ("*/*", false),
        ("application/json", false),
        ("application/*", false),
        ("text/*", true),
        ("text/csv;q=0.9, application/json;q=0.5", true),
        ("application/json, text/csv", false),
        ("application/xml, text/csv;q=0.1", true),
    ] {
        let reply = get_as(&app, "/ledger?limit=500", accept).await;
        assert_eq!(reply.status, 200, "{accept}: {}", reply.body);
        let content_type = header(&reply, "content-type").unwrap();
        if csv {
            assert_eq!(content_type, "text/csv; charset=utf-8", "{accept}");
            assert_eq!(text(&reply).lines().count(), 7, "{accept}");
        } else {
            assert!(content_type.starts_with("application/json"), "{accept}");
            reply.expect(200, "LEDGER_OK");
        }
        assert_eq!(header(&reply, "mandato-next-cursor"), None);
    }
    // Without Accept: JSON.
    app.get("/ledger").await.expect(200, "LEDGER_OK");

    // A bad filter is a JSON 400 naming every bad field, whatever the Accept.
    let bad = get_as(
        &app,
        "/ledger?limit=501&kind=REFUND&from=2026-13-01&cursor=0",
        "text/csv",
    )
    .await;
    bad.expect(400, "VALIDATION_ERROR");
    assert!(
        header(&bad, "content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(
        sorted_fields(&bad),
        ["query.cursor", "query.from", "query.kind", "query.limit"]
    );

    // An Accept the listing cannot serve is a JSON 406.
    for accept in ["application/xml", "text/html, image/*", "text/csv;q=0"] {
        let refused = get_as(&app, "/ledger", accept).await;
        refused.expect(406, "NOT_ACCEPTABLE");
        assert!(
            header(&refused, "content-type")
                .unwrap()
                .starts_with("application/json"),
            "{accept}"
        );
        assert!(refused.body["correlationId"].is_string());
    }

    // Credentials are checked first: a bad key is 403 under any Accept.
    let forbidden = app
        .request_with(Method::GET, "/ledger", None, |headers| {
            headers.push(("accept".into(), "text/csv".into()));
            for (name, value) in headers.iter_mut() {
                if name == "x-api-key" {
                    *value = "mk_test_unknown".into();
                }
            }
        })
        .await;
    assert_eq!(forbidden.status, 403, "{}", forbidden.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn another_commerce_exports_none_of_the_entries() {
    let mut app = six_entries().await;
    let mine = get_as(&app, "/ledger?limit=1", "text/csv").await;
    let cursor = header(&mine, "mandato-next-cursor").unwrap().to_string();

    app.act_as(OTHER_COMMERCE).await;
    let header_row = format!("{}\n", mandato::http::ledger::CSV_COLUMNS.join(","));
    for path in ["/ledger".to_string(), format!("/ledger?cursor={cursor}")] {
        let theirs = get_as(&app, &path, "text/csv").await;
        assert_eq!(theirs.status, 200, "{}", theirs.body);
        assert_eq!(text(&theirs), header_row, "{path}");
        assert_eq!(header(&theirs, "mandato-next-cursor"), None);
        assert_eq!(header(&theirs, "link"), None);
    }
}
