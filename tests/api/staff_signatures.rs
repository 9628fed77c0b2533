//! The staff Signatures screen's API: the list's filters (commerce, state, creation dates) and
//! its search without accents or case (names, e-mails, RUTs, ids), its count and pages; one
//! process's detail (signatories in signing order, the sealed PDF with its page count read
//! back, the trail's actors, the mandate a signature-gated activation started it for); the
//! sandbox codes withheld from viewers; and the per-process chain check, intact and then with
//! a record changed in the database file.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::helpers::*;
use crate::link::{get_page, post_form, terms_sha};
use crate::signatures::{create, simple_body};

const JOSE_RUT: &str = "11.111.111-1";
const ANA_RUT: &str = "22.222.222-2";
const NUNEZ_RUT: &str = "15.555.555-6";

/// A signed-in staff member.
struct Desk<'a> {
    app: &'a TestApp,
    cookie: String,
}

impl<'a> Desk<'a> {
    /// The installation's owner (an admin), made by the first-start setup.
    async fn owner(app: &'a TestApp) -> Desk<'a> {
        let response = app
            .client
            .post(format!("{}/admin/api/setup", app.base))
            .json(&json!({"email": "owner@merchant.example", "password": "a long password"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        Desk::adopt(app, &response)
    }

    /// A member with `role`, added to the store, then signed in.
    async fn member(app: &'a TestApp, role: &str) -> Desk<'a> {
        let email = format!("{role}@merchant.example");
        app.running
            .state
            .store()
            .write(|tx| {
                let hash = mandato::auth::password::hash_password(&mandato::secret::Secret::new(
                    "a long password".into(),
                ));
                mandato::store::commerces::insert_staff(
                    tx,
                    &email,
                    &hash,
                    role,
                    "2026-01-01T00:00:00.000Z",
                )
            })
            .unwrap();
        let response = app
            .client
            .post(format!("{}/admin/api/session", app.base))
            .json(&json!({"email": email, "password": "a long password"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        Desk::adopt(app, &response)
    }

    fn adopt(app: &'a TestApp, response: &reqwest::Response) -> Desk<'a> {
        let cookie = response.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        Desk { app, cookie }
    }

    async fn raw(&self, path: &str) -> reqwest::Response {
        self.app
            .client
            .request(Method::GET, format!("{}/admin/api{path}", self.app.base))
            .header("cookie", &self.cookie)
            .send()
            .await
            .unwrap()
    }

    async fn get(&self, path: &str) -> Reply {
        let response = self.raw(path).await;
        Reply {
            status: response.status(),
            headers: response.headers().clone(),
            body: response.json().await.unwrap_or(Value::Null),
        }
    }

    /// The list's payload for a query string.
    async fn list(&self, query: &str) -> Value {
        let reply = self.get(&format!("/signatures?{query}")).await;
        reply.expect(200, "SIGNATURES_OK");
        reply.body["payload"].clone()
    }

    async fn detail(&self, id: &str) -> Value {
        let reply = self.get(&format!("/signatures/{id}")).await;
        reply.expect(200, "SIGNATURE_OK");
        reply.body["payload"].clone()
    }

    async fn verify(&self, id: &str) -> Value {
        let reply = self.get(&format!("/signatures/{id}/audit/verify")).await;
        reply.expect(200, "SIGNATURE_CHAIN_CHECKED");
        reply.body["payload"].clone()
    }
}

/// Registers a customer of the current commerce with this name and e-mail.
async fn customer(app: &TestApp, user_id: &str, rut: &str, first: &str, last: &str, email: &str) {
    let mut body = customer_body(user_id, rut);
    set(
        &mut body,
        "/customer/personalInformation/firstName",
        json!(first),
    );
    set(
        &mut body,
        "/customer/personalInformation/lastName",
        json!(last),
    );
    remove(&mut body, "/customer/personalInformation/secondLastName");
    set(&mut body, "/customer/contacts/email", json!(email));
    app.post("/user", &body).await.expect(201, "USER_CREATE_OK");
}

/// Creates a process named `name` for `signers` (userId, order), all FES; answers its id.
async fn process(app: &TestApp, name: &str, signers: &[(&str, i64)]) -> String {
    let typed: Vec<(&str, i64, &str)> = signers.iter().map(|(u, o)| (*u, *o, "FES")).collect();
    let mut body = simple_body(&typed);
    set(&mut body, "/process/processName", json!(name));
    let created = create(app, &body).await;
    created["process"]["internalId"]
        .as_str()
        .unwrap()
        .to_string()
}

fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["internalId"].as_str().unwrap().to_string())
        .collect()
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Signs as the signatory of `signing_url` on the real signing pages, reading the sandbox code
/// the way staff do.
async fn sign(desk: &Desk<'_>, process: &str, signatory: &Value, rut: &str) {
    let url = signatory["signingUrl"].as_str().unwrap();
    let page = get_page(url).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    let sent = post_form(&format!("{url}/codigo"), &[("rut", rut)]).await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.html);
    let detail = desk.detail(process).await;
    let code = detail["signatories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["internalId"] == signatory["internalId"])
        .and_then(|s| s["sandboxCode"]["code"].as_str())
        .expect("the sandbox code")
        .to_string();
    let verified = post_form(&format!("{url}/verificar"), &[("codigo", &code)]).await;
    assert_eq!(verified.status, StatusCode::SEE_OTHER, "{}", verified.html);
    let signed = post_form(&format!("{url}/firmar"), &[("acepto", "si")]).await;
    assert_eq!(signed.status, StatusCode::SEE_OTHER, "{}", signed.html);
}

/// Two commerces: José Muñoz and Ana Pérez at the first, Núñez at the other.
async fn two_commerces() -> (TestApp, [String; 4]) {
    let mut app = spawn_app().await;
    app.act_as(OTHER_COMMERCE).await;
    customer(
        &app,
        "cust-n",
        NUNEZ_RUT,
        "Martina",
        "Núñez",
        "martina@otra.example",
    )
    .await;
    let other = process(&app, "Arriendo bodega", &[("cust-n", 1)]).await;
    app.act_as(COMMERCE).await;
    customer(
        &app,
        "cust-jose",
        JOSE_RUT,
        "José",
        "Muñoz",
        "Jose.Munoz@example.cl",
    )
    .await;
    customer(&app, "cust-ana", ANA_RUT, "Ana", "Pérez", "ana@example.cl").await;
    let jose = process(&app, "Contrato de arriendo", &[("cust-jose", 1)]).await;
    let ana = process(&app, "Anexo de contrato", &[("cust-ana", 1)]).await;
    let both = process(
        &app,
        "Contrato conjunto",
        &[("cust-ana", 1), ("cust-jose", 1)],
    )
    .await;
    app.delete(
        "/signature/cancel",
        Some(&json!({"process": {"internalId": ana}})),
    )
    .await
    .expect(200, "SIGNATURE_CANCEL_OK");
    (app, [other, jose, ana, both])
}

#[tokio::test(flavor = "multi_thread")]
async fn the_list_filters_searches_without_accents_and_counts() {
    let (app, processes) = two_commerces().await;
    let [other, jose, ana, both] = processes.each_ref().map(String::as_str);
    let desk = Desk::owner(&app).await;

    let all = desk.list("").await;
    assert_eq!(ids(&all), [both, ana, jose, other], "newest first");
    assert_eq!(all["total"], 4);
    assert_eq!(all["nextCursor"], Value::Null);
    let listed = &all["items"][0];
    assert_eq!(listed["commerce"], COMMERCE);
    assert_eq!(listed["processName"], "Contrato conjunto");
    assert_eq!(listed["documentNames"], json!(["contrato.pdf"]));
    assert_eq!(
        (listed["signatories"].as_i64(), listed["signed"].as_i64()),
        (Some(2), Some(0))
    );
    assert_eq!(listed["state"], json!({"id": 1, "name": "PENDING"}));
    assert!(listed["expiresAt"].is_string() && listed["createdAt"].is_string());

    // Names, e-mails and RUTs, whatever the accents, case, dots and dash.
    for q in [
        "munoz",
        "MUÑOZ",
        "jose mu",
        "josé",
        "jose.munoz@",
        "11111111",
        "11.111.111-1",
        "111111111",
    ] {
        let found = desk.list(&format!("q={}", encode(q))).await;
        assert_eq!(ids(&found), [both, jose], "{q}");
        assert_eq!(found["total"], 2, "{q}");
    }
    for (q, expected) in [
        ("perez", vec![both, ana]),
        ("nunez", vec![other]),
        ("ANEXO", vec![ana]),
        ("P-001", vec![both, ana, jose, other]),
        ("nadie", vec![]),
    ] {
        assert_eq!(
            ids(&desk.list(&format!("q={}", encode(q))).await),
            expected,
            "{q}"
        );
    }
    // A process by its id, whole or in part.
    assert_eq!(ids(&desk.list(&format!("q={jose}")).await), [jose]);
    assert_eq!(
        ids(&desk
            .list(&format!("q={}", jose[..jose.len() - 4].to_uppercase()))
            .await),
        [jose]
    );
    // LIKE's wildcards are plain characters.
    assert_eq!(desk.list("q=%25").await["total"], 0);
    assert_eq!(desk.list("q=j_se").await["total"], 0);

    // One commerce: the other's processes never show, whatever the search.
    let mine = desk.list(&format!("commerce={COMMERCE}")).await;
    assert_eq!(ids(&mine), [both, ana, jose]);
    assert_eq!(
        desk.list(&format!("commerce={COMMERCE}&q=nunez")).await["total"],
        0
    );
    assert_eq!(
        ids(&desk.list(&format!("commerce={OTHER_COMMERCE}")).await),
        [other]
    );

    // By state, and with the search.
    let cancelled = desk.list("state=CANCELLED").await;
    assert_eq!(ids(&cancelled), [ana]);
    assert_eq!(
        cancelled["items"][0]["state"],
        json!({"id": 4, "name": "CANCELLED"})
    );
    assert_eq!(desk.list("state=PENDING&q=perez").await["total"], 1);

    // Creation dates: today (in the environment's zone) has them all; instants cut exactly.
    let today = app
        .clock_now()
        .with_timezone(&chrono_tz::America::Santiago)
        .date_naive()
        .to_string();
    assert_eq!(
        desk.list(&format!("from={today}&to={today}")).await["total"],
        4
    );
    let later = (app.clock_now() + chrono::Duration::hours(1)).to_rfc3339();
    let earlier = (app.clock_now() - chrono::Duration::hours(1)).to_rfc3339();
    assert_eq!(
        desk.list(&format!("from={}", encode(&later))).await["total"],
        0
    );
    assert_eq!(
        desk.list(&format!("to={}", encode(&earlier))).await["total"],
        0
    );
    assert_eq!(
        desk.list(&format!("from={}", encode(&earlier))).await["total"],
        4
    );

    // Pages of two: the count is the whole selection's on each.
    let first = desk.list("limit=2").await;
    assert_eq!(ids(&first), [both, ana]);
    assert_eq!(first["total"], 4);
    let cursor = first["nextCursor"].as_str().expect("a next page");
    let second = desk.list(&format!("limit=2&cursor={cursor}")).await;
    assert_eq!(ids(&second), [jose, other]);
    assert_eq!(second["total"], 4);
    assert_eq!(second["nextCursor"], Value::Null);

    // Every bad filter is named at once.
    let long = "a".repeat(201);
    let reply = desk
        .get(&format!(
            "/signatures?state=SIGNED&limit=0&cursor=x&from=ayer&to=2026-13-01&commerce=nope&q={long}"
        ))
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        sorted_fields(&reply),
        [
            "query.commerce",
            "query.cursor",
            "query.from",
            "query.limit",
            "query.q",
            "query.state",
            "query.to"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_detail_shows_signatories_in_order_and_the_sealed_pdf_read_back() {
    let mut app = spawn_app().await;
    app.login().await;
    customer(
        &app,
        "cust-jose",
        JOSE_RUT,
        "José",
        "Muñoz",
        "jose@example.cl",
    )
    .await;
    customer(&app, "cust-ana", ANA_RUT, "Ana", "Pérez", "ana@example.cl").await;
    // Listed second in the request, but signing first.
    let id = process(
        &app,
        "Contrato de arriendo",
        &[("cust-ana", 2), ("cust-jose", 1)],
    )
    .await;
    let desk = Desk::owner(&app).await;

    let detail = desk.detail(&id).await;
    assert_eq!(detail["commerce"], COMMERCE);
    assert_eq!(detail["sandbox"], true);
    assert_eq!(detail["codesVisible"], true);
    assert_eq!(detail["mandate"], Value::Null);
    let names: Vec<&str> = detail["signatories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["José Muñoz", "Ana Pérez"]);
    let jose = &detail["signatories"][0];
    assert_eq!(
        (jose["order"].as_i64(), jose["kind"].as_str()),
        (Some(1), Some("FES"))
    );
    assert_eq!(jose["rut"], "11111111-1", "as stored: normalized");
    assert_eq!(jose["email"], "jose@example.cl");
    assert_eq!(jose["state"], json!({"id": 1, "name": "PENDING"}));
    assert_eq!(jose["signedAt"], Value::Null);
    assert_eq!(jose["sandboxCode"], Value::Null, "no code was sent yet");
    let document = &detail["documents"][0];
    assert_eq!(document["documentName"], "contrato.pdf");
    assert_eq!(document["pageCount"], 1);
    assert_eq!(document["sealed"], Value::Null);

    // Each signs on the real pages, in turn; the signing links come from the merchant's view.
    let signing: Vec<Value> = detail["signature"]["signatories"]
        .as_array()
        .unwrap()
        .clone();
    let url_of = |internal_id: &Value| {
        signing
            .iter()
            .find(|s| &s["internalId"] == internal_id)
            .unwrap()
            .clone()
    };
    sign(
        &desk,
        &id,
        &url_of(&detail["signatories"][0]["internalId"]),
        JOSE_RUT,
    )
    .await;
    sign(
        &desk,
        &id,
        &url_of(&detail["signatories"][1]["internalId"]),
        ANA_RUT,
    )
    .await;

    let done = desk.detail(&id).await;
    assert_eq!(
        done["signature"]["process"]["state"],
        json!({"id": 3, "name": "COMPLETED"})
    );
    for s in done["signatories"].as_array().unwrap() {
        assert_eq!(s["state"], json!({"id": 2, "name": "SIGNED"}));
        assert!(s["signedAt"].is_string());
        assert_eq!(s["sandboxCode"]["used"], true);
    }
    let document = &done["documents"][0];
    let doc_id = document["internalId"].as_str().unwrap();
    let sealed = desk
        .raw(&format!("/signatures/{id}/documents/{doc_id}/sealed"))
        .await;
    assert_eq!(sealed.status(), StatusCode::OK);
    let bytes = sealed.bytes().await.unwrap();
    let pages = lopdf::Document::load_mem(&bytes).unwrap().get_pages().len();
    assert!(pages > 1, "the certificate follows the original's page");
    assert_eq!(document["sealed"]["pageCount"], pages);
    assert_eq!(document["sealed"]["sha256"], sha256(&bytes));
    assert_eq!(document["sealed"]["sizeBytes"], bytes.len());
    assert_eq!(
        done["signature"]["documents"][0]["sealedSha256"],
        sha256(&bytes)
    );
    let original = desk
        .raw(&format!("/signatures/{id}/documents/{doc_id}/original"))
        .await;
    assert_eq!(
        sha256(&original.bytes().await.unwrap()),
        document["sha256"].as_str().unwrap()
    );

    // Who did each act: the merchant's requestUser, each signatory by name, the engine.
    let records = done["audit"]["records"].as_array().unwrap();
    assert_eq!(done["audit"]["valid"], true);
    let actor_of = |action: &str| {
        records
            .iter()
            .filter(|r| r["action"] == action)
            .map(|r| r["actor"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        actor_of("CREATED"),
        [json!({"kind": "MERCHANT", "name": "ops@merchant.example"})]
    );
    assert_eq!(
        actor_of("SIGNED"),
        [
            json!({"kind": "SIGNATORY", "name": "José Muñoz"}),
            json!({"kind": "SIGNATORY", "name": "Ana Pérez"})
        ]
    );
    assert_eq!(
        actor_of("COMPLETED"),
        [json!({"kind": "SYSTEM", "name": null})]
    );

    desk.get("/signatures/sig_nope")
        .await
        .expect(404, "SIGNATURE_PROCESS_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_codes_are_for_operators_and_admins_only() {
    let mut app = spawn_app().await;
    app.login().await;
    customer(
        &app,
        "cust-jose",
        JOSE_RUT,
        "José",
        "Muñoz",
        "jose@example.cl",
    )
    .await;
    let id = process(&app, "Contrato de arriendo", &[("cust-jose", 1)]).await;
    let owner = Desk::owner(&app).await;
    let operator = Desk::member(&app, "operator").await;
    let viewer = Desk::member(&app, "viewer").await;
    let url = owner.detail(&id).await["signature"]["signatories"][0]["signingUrl"]
        .as_str()
        .unwrap()
        .to_string();
    get_page(&url).await;
    let sent = post_form(&format!("{url}/codigo"), &[("rut", JOSE_RUT)]).await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER);

    let shown = owner.detail(&id).await;
    let code = shown["signatories"][0]["sandboxCode"]["code"]
        .as_str()
        .unwrap();
    assert_eq!(code.len(), 6);
    let to_operator = operator.detail(&id).await;
    assert_eq!(to_operator["codesVisible"], true);
    assert_eq!(to_operator["signatories"][0]["sandboxCode"]["code"], code);

    let to_viewer = viewer.detail(&id).await;
    assert_eq!(to_viewer["codesVisible"], false);
    assert_eq!(to_viewer["sandbox"], true);
    assert_eq!(to_viewer["signatories"][0]["sandboxCode"], Value::Null);
    assert_eq!(to_viewer["signatories"][0]["codesSent"], 1);
    let raw = viewer
        .raw(&format!("/signatures/{id}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(!raw.contains(code), "the viewer's answer holds the code");
    // The rest stays readable to a viewer.
    assert_eq!(viewer.list("").await["total"], 1);
    assert_eq!(viewer.verify(&id).await["valid"], true);

    // Without a session, nothing.
    let anonymous = app
        .client
        .get(format!("{}/admin/api/signatures/{id}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_chain_check_finds_a_record_changed_in_the_file() {
    let mut app = spawn_app().await;
    app.login().await;
    customer(
        &app,
        "cust-jose",
        JOSE_RUT,
        "José",
        "Muñoz",
        "jose@example.cl",
    )
    .await;
    let id = process(&app, "Contrato de arriendo", &[("cust-jose", 1)]).await;
    let other = process(&app, "Otro contrato", &[("cust-jose", 1)]).await;
    let desk = Desk::owner(&app).await;
    let url = desk.detail(&id).await["signature"]["signatories"][0]["signingUrl"]
        .as_str()
        .unwrap()
        .to_string();
    get_page(&url).await;
    post_form(&format!("{url}/codigo"), &[("rut", JOSE_RUT)]).await;

    let intact = desk.verify(&id).await;
    assert_eq!(intact["internalId"], id.as_str());
    assert_eq!(intact["valid"], true);
    assert_eq!(intact["brokenAt"], Value::Null);
    let records = intact["records"].as_i64().unwrap();
    assert!(records >= 3, "created, viewed, code sent");
    let head = intact["head"].as_str().unwrap().to_string();
    assert_eq!(desk.detail(&id).await["audit"]["head"], head.as_str());
    assert!(intact["checkedAt"].is_string());

    // The viewing act's IP, changed behind the engine's back.
    let database = crate::helpers::store_of(app.dir.path());
    let changed = database
        .write(|db| {
            Ok(db.execute(
                "UPDATE signature_audit SET ip = '203.0.113.9'
                 WHERE position = 2
                   AND process_seq = (SELECT seq FROM signature_processes WHERE id = ?1)",
                &[id.as_str().into()],
            )?)
        })
        .unwrap();
    assert_eq!(changed, 1);
    let broken = desk.verify(&id).await;
    assert_eq!(broken["valid"], false);
    assert_eq!(broken["brokenAt"], 2);
    assert_eq!(broken["records"], records);
    let detail = desk.detail(&id).await;
    assert_eq!(detail["audit"]["valid"], false);
    assert_eq!(detail["audit"]["brokenAt"], 2);
    // Another process's chain is its own.
    assert_eq!(desk.verify(&other).await["valid"], true);

    // A trail without any record does not hold either.
    database
        .write(|db| {
            Ok(db.execute(
                "DELETE FROM signature_audit
                 WHERE process_seq = (SELECT seq FROM signature_processes WHERE id = ?1)",
                &[other.as_str().into()],
            )?)
        })
        .unwrap();
    let emptied = desk.verify(&other).await;
    assert_eq!(
        (emptied["valid"].as_bool(), emptied["brokenAt"].as_i64()),
        (Some(false), Some(1))
    );
    assert_eq!(emptied["records"], 0);

    desk.get("/signatures/sig_nope/audit/verify")
        .await
        .expect(404, "SIGNATURE_PROCESS_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signature_gated_activation_names_its_mandate() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-001", "12.345.678-5").await;
    let mut body = subscription_body(&app, "cust-001", "GYM-FIRMA", 3);
    set(&mut body, "/mandate/activation", json!("SIGNATURE"));
    let created = app.create_mandate(&body).await;
    let mandate = created["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    let link = created["mandate"]["magicLink"]
        .as_str()
        .unwrap()
        .to_string();
    let page = get_page(&link).await;
    let enrolled = post_form(
        &link,
        &[
            ("method", "3"),
            ("number", "4111111111111111"),
            ("expiry", "12/35"),
            ("cvv", "123"),
            ("accept", "1"),
            ("termsSha256", &terms_sha(&page.html, 3)),
        ],
    )
    .await;
    assert_eq!(enrolled.status, StatusCode::SEE_OTHER, "{}", enrolled.html);
    let desk = Desk::owner(&app).await;
    let all = desk.list("").await;
    let id = all["items"][0]["internalId"].as_str().unwrap().to_string();

    let detail = desk.detail(&id).await;
    assert_eq!(
        detail["mandate"],
        json!({"internalId": mandate, "id": "GYM-FIRMA", "name": "Plan mensual",
               "state": {"id": 1, "name": "PENDING"}, "failure": null})
    );
    let signatory = detail["signature"]["signatories"][0].clone();
    sign(&desk, &id, &signatory, "12.345.678-5").await;
    let done = desk.detail(&id).await;
    assert_eq!(done["mandate"]["state"], json!({"id": 2, "name": "ACTIVE"}));
    assert!(
        done["documents"][0]["sealed"]["pageCount"]
            .as_i64()
            .unwrap()
            >= 2
    );
}
