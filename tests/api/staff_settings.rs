//! Settings a clerk cannot hurt themselves with: commerce codes written as RUTs, own and reset
//! passwords, API keys with a name and their last use, the UF table, the rotation overlap.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::staff_ui_api::{Desk, member, owner};

async fn sign_in<'a>(app: &'a TestApp, email: &str, password: &str) -> (Reply, Option<Desk<'a>>) {
    let reply = Desk::anonymous(app)
        .post("/session", json!({"email": email, "password": password}))
        .await;
    let desk = (reply.status == 200).then(|| Desk::adopt(app, &reply));
    (reply, desk)
}

async fn put(desk: &Desk<'_>, path: &str, body: Value) -> Reply {
    desk.call(Method::PUT, path, Some(body)).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_commerce_code_written_as_a_rut_needs_its_check_digit() {
    let app = spawn_app().await;
    let admin = owner(&app).await;
    let commerce = |code: &str| json!({"code": code, "name": "Gimnasio Sur"});

    let wrong = admin.post("/commerces", commerce("76.123.456-1")).await;
    wrong.expect(400, "VALIDATION_ERROR");
    assert_eq!(wrong.error_fields(), ["code"]);
    assert_eq!(wrong.body["errors"][0]["code"], "INVALID_RUT");
    assert!(
        wrong.body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("it is 0"),
        "the message tells the right digit: {}",
        wrong.body
    );

    let right = admin.post("/commerces", commerce("76.543.210-3")).await;
    right.expect(201, "COMMERCE_CREATED");
    assert_eq!(right.body["payload"]["code"], "76543210-3");

    let issued = admin.post("/commerces", commerce("GYM-SUR")).await;
    issued.expect(201, "COMMERCE_CREATED");
    assert_eq!(issued.body["payload"]["code"], "GYM-SUR");
}

#[tokio::test(flavor = "multi_thread")]
async fn changing_your_own_password_checks_the_current_one_and_ends_your_other_sessions() {
    let app = spawn_app().await;
    let admin = owner(&app).await;
    let operator = member(&app, &admin, "operator").await;
    let (_, elsewhere) = sign_in(&app, "operator@merchant.example", "ten or more chars").await;
    let elsewhere = elsewhere.expect("a second session");

    let refused = put(
        &operator,
        "/session/password",
        json!({"currentPassword": "not the one", "newPassword": "short"}),
    )
    .await;
    refused.expect(400, "VALIDATION_ERROR");
    assert_eq!(refused.error_fields(), ["newPassword"]);

    let wrong = put(
        &operator,
        "/session/password",
        json!({"currentPassword": "not the one", "newPassword": "a brand new secret"}),
    )
    .await;
    wrong.expect(400, "VALIDATION_ERROR");
    assert_eq!(wrong.error_fields(), ["currentPassword"]);
    assert_eq!(wrong.body["errors"][0]["code"], "WRONG_PASSWORD");

    let same = put(
        &operator,
        "/session/password",
        json!({"currentPassword": "ten or more chars", "newPassword": "ten or more chars"}),
    )
    .await;
    assert_eq!(same.body["errors"][0]["code"], "SAME_PASSWORD");

    put(
        &operator,
        "/session/password",
        json!({"currentPassword": "ten or more chars", "newPassword": "a brand new secret"}),
    )
    .await
    .expect(200, "PASSWORD_CHANGED");

    operator.get("/dashboard").await.expect(200, "DASHBOARD_OK");
    elsewhere
        .get("/dashboard")
        .await
        .expect(401, "SESSION_REQUIRED");
    let (old, _) = sign_in(&app, "operator@merchant.example", "ten or more chars").await;
    old.expect(403, "INVALID_CREDENTIALS");
    let (new, _) = sign_in(&app, "operator@merchant.example", "a brand new secret").await;
    new.expect(200, "SESSION_OK");
    assert_eq!(new.body["payload"]["passwordChangeRequired"], false);

    let audit = admin.get("/audit/staff?action=password.change").await;
    assert_eq!(
        audit.body["payload"]["items"][0]["target"],
        "operator@merchant.example"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reset_password_works_once_and_must_be_replaced_at_sign_in() {
    let app = spawn_app().await;
    let admin = owner(&app).await;
    let viewer = member(&app, &admin, "viewer").await;
    let operator = member(&app, &admin, "operator").await;

    operator
        .post("/staff/viewer@merchant.example/password-reset", json!({}))
        .await
        .expect(403, "ROLE_NOT_ALLOWED");
    admin
        .post("/staff/owner@merchant.example/password-reset", json!({}))
        .await
        .expect(400, "OWN_ACCOUNT");
    admin
        .post("/staff/nobody@merchant.example/password-reset", json!({}))
        .await
        .expect(404, "STAFF_MEMBER_NOT_FOUND");

    let reset = admin
        .post("/staff/viewer@merchant.example/password-reset", json!({}))
        .await;
    reset.expect(200, "STAFF_PASSWORD_RESET");
    let temporary = reset.body["payload"]["temporaryPassword"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(temporary.chars().count() >= 10, "{temporary}");
    viewer
        .get("/dashboard")
        .await
        .expect(401, "SESSION_REQUIRED");
    let staff = admin.get("/staff").await;
    let listed = staff.body["payload"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["email"] == "viewer@merchant.example")
        .unwrap()
        .clone();
    assert_eq!(listed["passwordChangeRequired"], true);

    let (old, _) = sign_in(&app, "viewer@merchant.example", "ten or more chars").await;
    old.expect(403, "INVALID_CREDENTIALS");
    let (signed, desk) = sign_in(&app, "viewer@merchant.example", &temporary).await;
    signed.expect(200, "SESSION_OK");
    assert_eq!(signed.body["payload"]["passwordChangeRequired"], true);
    let desk = desk.unwrap();
    desk.get("/dashboard")
        .await
        .expect(403, "PASSWORD_CHANGE_REQUIRED");
    let current = desk.get("/session").await;
    current.expect(200, "SESSION_OK");
    assert_eq!(current.body["payload"]["passwordChangeRequired"], true);

    let changed = put(
        &desk,
        "/session/password",
        json!({"currentPassword": temporary, "newPassword": "my own password"}),
    )
    .await;
    changed.expect(200, "PASSWORD_CHANGED");
    assert_eq!(changed.body["payload"]["passwordChangeRequired"], false);
    desk.get("/dashboard").await.expect(200, "DASHBOARD_OK");

    // Used once: the temporary password no longer signs in.
    let (again, _) = sign_in(&app, "viewer@merchant.example", &temporary).await;
    again.expect(403, "INVALID_CREDENTIALS");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_role_change_is_recorded_with_the_old_and_new_role() {
    let app = spawn_app().await;
    let admin = owner(&app).await;
    let _operator = member(&app, &admin, "operator").await;
    put(
        &admin,
        "/staff/operator@merchant.example",
        json!({"role": "viewer"}),
    )
    .await
    .expect(200, "STAFF_UPDATED");
    let audit = admin.get("/audit/staff?action=staff.update").await;
    assert_eq!(
        audit.body["payload"]["items"][0]["detail"],
        "role=operator->viewer"
    );
    put(
        &admin,
        "/staff/owner@merchant.example",
        json!({"role": "viewer"}),
    )
    .await
    .expect(400, "OWN_ACCOUNT");
}

#[tokio::test(flavor = "multi_thread")]
async fn api_keys_show_their_name_and_last_use() {
    let mut app = spawn_app().await;
    // The test installation's own key serves a merchant request.
    app.login().await;
    app.running.state.audit.flush();
    let admin = owner(&app).await;
    let created = admin
        .post("/api-keys", json!({"name": "Checkout web"}))
        .await;
    created.expect(201, "API_KEY_CREATED");
    assert_eq!(created.body["payload"]["name"], "Checkout web");
    let bad = admin
        .post("/api-keys", json!({"name": "x".repeat(101)}))
        .await;
    bad.expect(400, "VALIDATION_ERROR");
    assert_eq!(bad.error_fields(), ["name"]);

    let listed = admin.get("/api-keys").await;
    let keys = listed.body["payload"]["items"].as_array().unwrap().clone();
    let used: Vec<&Value> = keys.iter().filter(|k| !k["lastUsedAt"].is_null()).collect();
    assert_eq!(used.len(), 1, "{keys:?}");
    assert_eq!(used[0]["prefix"].as_str().unwrap(), &app.api_key[..8]);
    assert_eq!(keys[0]["name"], "Checkout web");
    assert!(
        keys[0]["lastUsedAt"].is_null(),
        "the new key was never used"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_uf_table_is_listed_newest_first_in_pages() {
    let app = spawn_app().await;
    let admin = owner(&app).await;
    let empty = admin.get("/uf").await;
    empty.expect(200, "UF_VALUES_OK");
    assert_eq!(empty.body["payload"]["total"], 0);
    admin
        .post(
            "/uf",
            json!({"csv": "date,value\n2026-12-01,39123.45\n2026-12-02,39130.1\n2026-12-03,39140"}),
        )
        .await
        .expect(200, "UF_IMPORT_OK");

    let page = admin.get("/uf?limit=2").await;
    page.expect(200, "UF_VALUES_OK");
    let p = &page.body["payload"];
    assert_eq!(p["total"], 3);
    assert_eq!(p["firstDate"], "2026-12-01");
    assert_eq!(p["lastDate"], "2026-12-03");
    assert_eq!(
        p["items"][0],
        json!({"date": "2026-12-03", "value": "39140"})
    );
    assert_eq!(p["items"][1]["date"], "2026-12-02");
    assert_eq!(p["nextBefore"], "2026-12-02");
    let rest = admin.get("/uf?limit=2&before=2026-12-02").await;
    assert_eq!(
        rest.body["payload"]["items"],
        json!([{"date": "2026-12-01", "value": "39123.45"}])
    );
    assert!(rest.body["payload"]["nextBefore"].is_null());

    let bad = admin.get("/uf?limit=0&before=yesterday").await;
    bad.expect(400, "VALIDATION_ERROR");
    assert_eq!(sorted_fields(&bad), ["query.before", "query.limit"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rotation_overlap_is_chosen_within_its_bounds() {
    let app = spawn_app().await;
    let admin = owner(&app).await;
    let path = format!("/commerces/{COMMERCE}/rotate-secret");
    let refused = admin.post(&path, json!({"overlapHours": 721})).await;
    refused.expect(400, "VALIDATION_ERROR");
    assert_eq!(refused.error_fields(), ["overlapHours"]);

    let rotated = admin.post(&path, json!({"overlapHours": 72})).await;
    rotated.expect(200, "SECRET_ROTATED");
    let until = chrono::DateTime::parse_from_rfc3339(
        rotated.body["payload"]["previousValidUntil"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let hours = (until.with_timezone(&chrono::Utc) - app.clock_now()).num_minutes() as f64 / 60.0;
    assert!((71.9..=72.0).contains(&hours), "{hours}");

    let doc: Value = app
        .client
        .get(format!("{}/admin/openapi.json", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let overlap = &doc["components"]["schemas"]["RotateRequest"]["properties"]["overlapHours"];
    assert_eq!(overlap["minimum"], 0);
    assert_eq!(overlap["maximum"], 720);
}

#[tokio::test(flavor = "multi_thread")]
async fn acquirers_are_set_by_admins_their_secret_write_only() {
    let app = spawn_app().await;
    let admin = owner(&app).await;
    let operator = member(&app, &admin, "operator").await;
    let path = format!("/commerces/{COMMERCE}/acquirers/cards");
    let secret = "579B532A7440BB0C9079DED94D31EA1615BACEB56610332264630D42D0A36B1C";
    let transbank = json!({"kind": "transbank", "mallCode": "597055555541",
        "childCode": "597055555542", "webpayCode": "597055555532", "secret": secret});

    put(&operator, &path, transbank.clone())
        .await
        .expect(403, "ROLE_NOT_ALLOWED");
    let bad = put(
        &admin,
        &path,
        json!({"kind": "transbank", "mallCode": "ABC", "childCode": "1234567890123"}),
    )
    .await;
    bad.expect(400, "VALIDATION_ERROR");
    let mut fields = bad.error_fields();
    fields.sort();
    assert_eq!(fields, ["childCode", "mallCode", "secret", "webpayCode"]);

    let set = put(&admin, &path, transbank).await;
    set.expect(200, "ACQUIRER_SET_OK");
    assert!(
        !set.body.to_string().contains(secret),
        "the secret is never answered"
    );
    let cards = &set.body["payload"]["acquirers"][0];
    assert_eq!(cards["kind"], "transbank");
    assert_eq!(cards["secretSet"], true);
    // A change that keeps the kind may leave the secret out: the stored one stays.
    let kept = put(
        &admin,
        &path,
        json!({"kind": "transbank", "mallCode": "597055555541",
               "childCode": "597055555543", "webpayCode": "597055555532"}),
    )
    .await;
    kept.expect(200, "ACQUIRER_SET_OK");
    assert_eq!(kept.body["payload"]["acquirers"][0]["secretSet"], true);
    assert_eq!(
        kept.body["payload"]["acquirers"][0]["terms"]["childCode"],
        "597055555543"
    );
    let listed = admin.get(&format!("/commerces/{COMMERCE}/acquirers")).await;
    listed.expect(200, "ACQUIRERS_OK");
    assert!(!listed.body.to_string().contains(secret));

    let removed = admin.call(Method::DELETE, &path, None).await;
    removed.expect(200, "ACQUIRER_REMOVE_OK");
    assert_eq!(removed.body["payload"]["acquirers"], json!([]));
    admin
        .call(Method::DELETE, &path, None)
        .await
        .expect(404, "ACQUIRER_NOT_FOUND");
    // The sandbox's dashboard has no unserved commerce: the simulation serves every rail.
    let dashboard = admin.get("/dashboard").await;
    assert_eq!(dashboard.body["payload"]["unserved"], json!([]));
}
