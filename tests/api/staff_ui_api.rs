//! The staff API behind the UI's screens: dashboard, customers, mandates (list, detail, staff
//! actions), settings and audit; and that every role is limited on the server.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

/// A signed-in staff member's browser: the session cookie and the CSRF token.
pub struct Desk<'a> {
    app: &'a TestApp,
    pub cookie: Option<String>,
    csrf: Option<String>,
}

impl<'a> Desk<'a> {
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        let mut request = self
            .app
            .client
            .request(method, format!("{}/admin/api{path}", self.app.base));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        if let Some(csrf) = &self.csrf {
            request = request.header("x-csrf-token", csrf);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.json().await.unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.call(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.call(Method::POST, path, Some(body)).await
    }

    /// A browser without a session.
    pub fn anonymous(app: &'a TestApp) -> Desk<'a> {
        Desk {
            app,
            cookie: None,
            csrf: None,
        }
    }

    pub fn adopt(app: &'a TestApp, reply: &Reply) -> Desk<'a> {
        let set_cookie = reply.headers["set-cookie"].to_str().unwrap();
        Desk {
            app,
            cookie: Some(set_cookie.split(';').next().unwrap().to_string()),
            csrf: reply.body["payload"]["csrfToken"]
                .as_str()
                .map(str::to_string),
        }
    }
}

pub async fn owner(app: &TestApp) -> Desk<'_> {
    let anonymous = Desk {
        app,
        cookie: None,
        csrf: None,
    };
    let reply = anonymous
        .post(
            "/setup",
            json!({"email": "owner@merchant.example", "password": "a long password"}),
        )
        .await;
    reply.expect(201, "SETUP_OK");
    Desk::adopt(app, &reply)
}

/// An account of `role` made by the admin, signed in.
pub async fn member<'a>(app: &'a TestApp, admin: &Desk<'_>, role: &str) -> Desk<'a> {
    let email = format!("{role}@merchant.example");
    admin
        .post(
            "/staff",
            json!({"email": email, "password": "ten or more chars", "role": role}),
        )
        .await
        .expect(201, "STAFF_CREATED");
    let anonymous = Desk {
        app,
        cookie: None,
        csrf: None,
    };
    let reply = anonymous
        .post(
            "/session",
            json!({"email": email, "password": "ten or more chars"}),
        )
        .await;
    reply.expect(200, "SESSION_OK");
    Desk::adopt(app, &reply)
}

/// A header tweak: act as `code`, with another API key when given.
fn as_commerce(code: &str, key: Option<String>) -> impl FnOnce(&mut Vec<(String, String)>) {
    let code = code.to_string();
    move |headers| {
        for (name, value) in headers.iter_mut() {
            match (name.as_str(), &key) {
                ("commerce", _) => *value = code.clone(),
                ("x-api-key", Some(key)) => *value = key.clone(),
                _ => {}
            }
        }
    }
}

fn items(reply: &Reply) -> Vec<Value> {
    reply.body["payload"]["items"].as_array().unwrap().clone()
}

fn ids(reply: &Reply, field: &str) -> Vec<String> {
    items(reply)
        .iter()
        .map(|i| i.pointer(field).unwrap().as_str().unwrap().to_string())
        .collect()
}

/// Two customers, a SUBSCRIPTION of three installments and a DYNAMIC mandate through the
/// merchant API; answers their internal ids (subscription, dynamic).
async fn merchant_data(app: &mut TestApp) -> (String, String) {
    app.login().await;
    app.create_customer("cust-1", "12.345.678-5").await;
    let other = customer_body("cust-2", &rut(7654321));
    let mut other = other;
    set(
        &mut other,
        "/customer/personalInformation/firstName",
        json!("Luis"),
    );
    set(
        &mut other,
        "/customer/personalInformation/lastName",
        json!("Soto"),
    );
    app.post("/user", &other)
        .await
        .expect(201, "USER_CREATE_OK");
    let subscription = app
        .create_mandate(&subscription_body(app, "cust-1", "GYM-1", 3))
        .await;
    let dynamic = app
        .create_mandate(&dynamic_body(app, "cust-2", "DYN-1", &[("a", 1000, 5)]))
        .await;
    let id = |p: &Value| p["mandate"]["internalId"].as_str().unwrap().to_string();
    (id(&subscription), id(&dynamic))
}

#[tokio::test(flavor = "multi_thread")]
async fn dashboard_customers_and_mandates_lists() {
    let mut app = spawn_app().await;
    let (subscription, dynamic) = merchant_data(&mut app).await;
    let admin = owner(&app).await;

    let dashboard = admin.get("/dashboard").await;
    dashboard.expect(200, "DASHBOARD_OK");
    let payload = &dashboard.body["payload"];
    let count = |list: &str, name: &str| {
        payload[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["state"]["name"] == name)
            .unwrap()["count"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(count("mandates", "PENDING"), 2);
    assert_eq!(count("mandates", "ACTIVE"), 0);
    assert_eq!(count("installments", "PENDING"), 4);
    assert_eq!(payload["days"].as_array().unwrap().len(), 30);
    assert_eq!(payload["today"], app.today().to_string());
    assert!(payload["failingWebhooks"]["failed"].is_number());
    admin
        .get("/dashboard?commerce=nope")
        .await
        .expect(400, "VALIDATION_ERROR");

    // Customers by name, RUT (any form, or its start), userId and internal id.
    for q in [
        "P%C3%A9rez",
        "12.345.678-5",
        "12345678-5",
        "1234567",
        "cust-1",
    ] {
        let found = admin.get(&format!("/customers?q={q}")).await;
        found.expect(200, "CUSTOMERS_OK");
        assert_eq!(
            ids(&found, "/customer/userId"),
            vec!["cust-1"],
            "search {q}"
        );
    }
    let all = admin.get("/customers").await;
    assert_eq!(ids(&all, "/customer/userId"), vec!["cust-2", "cust-1"]);
    let first = &items(&all)[1];
    assert_eq!(first["commerce"], COMMERCE);
    assert_eq!(first["mandates"], 1);
    let internal_user = first["customer"]["internalUserId"].as_str().unwrap();
    let detail = admin.get(&format!("/customers/{internal_user}")).await;
    detail.expect(200, "CUSTOMER_OK");
    assert_eq!(
        detail.body["payload"]["mandates"][0]["internalId"],
        subscription
    );
    admin
        .get("/customers/usr_nobody")
        .await
        .expect(404, "CUSTOMER_NOT_FOUND");

    // Mandates: filters, then keyset pages.
    let list = |query: &str| {
        let admin = &admin;
        let query = query.to_string();
        async move {
            let reply = admin.get(&format!("/mandates{query}")).await;
            reply.expect(200, "MANDATES_OK");
            ids(&reply, "/internalId")
        }
    };
    assert_eq!(list("").await, vec![dynamic.clone(), subscription.clone()]);
    assert_eq!(list("?type=DYNAMIC").await, vec![dynamic.clone()]);
    assert_eq!(list("?type=3").await, vec![subscription.clone()]);
    assert_eq!(list("?state=PENDING,ACTIVE").await.len(), 2);
    assert!(list("?state=CANCELLED").await.is_empty());
    assert_eq!(list("?customer=cust-2").await, vec![dynamic.clone()]);
    assert_eq!(
        list("?customer=12345678-5").await,
        vec![subscription.clone()]
    );
    assert!(list("?customer=nobody").await.is_empty());
    assert_eq!(list("?id=GYM-1").await, vec![subscription.clone()]);
    assert_eq!(list(&format!("?commerce={COMMERCE}")).await.len(), 2);
    assert!(
        list(&format!("?commerce={OTHER_COMMERCE}"))
            .await
            .is_empty()
    );
    let today = app.today();
    assert_eq!(
        list(&format!("?createdFrom={today}&createdTo={today}"))
            .await
            .len(),
        2
    );
    assert!(
        list(&format!(
            "?createdFrom={}",
            today + chrono::Duration::days(1)
        ))
        .await
        .is_empty()
    );
    let page = admin.get("/mandates?limit=1").await;
    assert_eq!(ids(&page, "/internalId"), vec![dynamic.clone()]);
    let line = &items(&page)[0];
    assert_eq!(line["type"], "DYNAMIC");
    assert_eq!(line["customer"]["userId"], "cust-2");
    assert_eq!(line["amount"], 100000);
    let cursor = page.body["payload"]["nextCursor"].as_str().unwrap();
    let second = admin
        .get(&format!("/mandates?limit=1&cursor={cursor}"))
        .await;
    assert_eq!(ids(&second, "/internalId"), vec![subscription.clone()]);
    assert!(second.body["payload"]["nextCursor"].is_null());

    let bad = admin
        .get("/mandates?state=LOST&limit=0&cursor=x&createdFrom=ayer")
        .await;
    bad.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        bad.error_fields(),
        vec![
            "query.limit",
            "query.state",
            "query.createdFrom",
            "query.cursor"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_mark_paid_annul_add_and_cancel_through_the_merchant_operations() {
    let mut app = spawn_app().await;
    let (subscription, dynamic) = merchant_data(&mut app).await;
    let admin = owner(&app).await;

    let detail = admin.get(&format!("/mandates/{subscription}")).await;
    detail.expect(200, "MANDATE_OK");
    let payload = &detail.body["payload"];
    assert_eq!(payload["commerce"]["code"], COMMERCE);
    assert_eq!(payload["mandate"]["id"], "GYM-1");
    assert!(
        payload["mandate"]["magicLink"]
            .as_str()
            .unwrap()
            .contains("/link/")
    );
    assert_eq!(
        payload["actions"],
        json!({"cancel": true, "addInstallments": false, "shareMagicLink": true})
    );
    let installments = payload["installments"].as_array().unwrap();
    assert_eq!(installments.len(), 3);
    let first = installments[0]["internalId"].as_str().unwrap().to_string();
    let second = installments[1]["internalId"].as_str().unwrap().to_string();
    assert_eq!(installments[0]["history"][0]["state"]["name"], "PENDING");
    assert_eq!(installments[0]["canPay"], true);

    // Evidence is checked as the merchant API checks it, each problem at its field.
    let wrong = admin
        .post(
            &format!("/mandates/{subscription}/payments"),
            json!({"installmentIds": [first],
                   "payment": {"date": app.date_in(1), "amount": 1, "currencyId": "CLP"}}),
        )
        .await;
    wrong.expect(400, "VALIDATION_ERROR");
    assert_eq!(wrong.error_fields(), vec!["payment.amount", "payment.date"]);
    admin
        .post(
            &format!("/mandates/{subscription}/payments"),
            json!({"installmentIds": [first], "payment": {"date": "soon"}}),
        )
        .await
        .expect(400, "VALIDATION_ERROR");
    let paid = admin
        .post(
            &format!("/mandates/{subscription}/payments"),
            json!({"installmentIds": [first],
                   "payment": {"date": app.date_in(0), "amount": 29990, "currencyId": "CLP",
                               "method": "TRANSFER", "authorizationCode": "TRX-1"}}),
        )
        .await;
    paid.expect(200, "MANDATE_OK");
    let paid_installment = &paid.body["payload"]["installments"][0];
    assert_eq!(paid_installment["state"]["name"], "PAID");
    assert_eq!(paid_installment["payment"]["method"], "TRANSFER");
    assert_eq!(paid_installment["canPay"], false);
    let history = paid_installment["history"].as_array().unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[1]["state"]["name"], "PAID");
    let event_id = history[1]["eventId"].as_str().unwrap().to_string();
    assert!(event_id.starts_with("evt_"));
    // The same event the merchant's webhook gets, in the notifications list.
    let events = admin
        .get(&format!("/events?mandateInternalId={subscription}"))
        .await;
    assert_eq!(ids(&events, "/eventId"), vec![event_id.clone()]);
    let body = &app.events_of(&subscription)[0];
    assert_eq!(body["installment"]["state"]["name"], "PAID");
    // Paying it twice is the state machine's refusal.
    admin
        .post(
            &format!("/mandates/{subscription}/payments"),
            json!({"installmentIds": [first],
                   "payment": {"date": app.date_in(0), "amount": 29990, "currencyId": "CLP"}}),
        )
        .await
        .expect(400, "INSTALLMENT_STATE_CONFLICT");
    admin
        .post(
            &format!("/mandates/{subscription}/payments"),
            json!({"installmentIds": ["ins_other"],
                   "payment": {"date": app.date_in(0), "amount": 29990, "currencyId": "CLP"}}),
        )
        .await
        .expect(404, "INSTALLMENT_NOT_FOUND");

    let annulled = admin
        .post(
            &format!("/mandates/{subscription}/annulments"),
            json!({"installmentIds": [second]}),
        )
        .await;
    annulled.expect(200, "MANDATE_OK");
    assert_eq!(
        annulled.body["payload"]["installments"][1]["state"]["name"],
        "ANNULLED"
    );

    // Installments are added to DYNAMIC mandates only.
    let new_items = json!({"installments": [
        {"id": "b", "amount": 5000, "currencyId": "CLP", "installmentDueDate": app.date_in(10)}]});
    admin
        .post(
            &format!("/mandates/{subscription}/installments"),
            new_items.clone(),
        )
        .await
        .expect(400, "MANDATE_TYPE_CONFLICT");
    let added = admin
        .post(&format!("/mandates/{dynamic}/installments"), new_items)
        .await;
    added.expect(200, "MANDATE_OK");
    assert_eq!(
        added.body["payload"]["installments"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let duplicated = admin
        .post(
            &format!("/mandates/{dynamic}/installments"),
            json!({"installments": [
                {"id": "a", "amount": 5000, "currencyId": "CLP", "installmentDueDate": app.date_in(10)}]}),
        )
        .await;
    duplicated.expect(400, "DUPLICATED_INSTALLMENT_ID");

    // Cancel with a reason.
    let short = admin
        .post(
            &format!("/mandates/{subscription}/cancel"),
            json!({"description": "no"}),
        )
        .await;
    short.expect(400, "VALIDATION_ERROR");
    assert_eq!(short.error_fields(), vec!["description"]);
    let cancelled = admin
        .post(
            &format!("/mandates/{subscription}/cancel"),
            json!({"description": "El cliente se retira"}),
        )
        .await;
    cancelled.expect(200, "MANDATE_OK");
    let payload = &cancelled.body["payload"];
    assert_eq!(payload["mandate"]["state"]["name"], "CANCELLED");
    assert_eq!(
        payload["mandate"]["cancellation"]["description"],
        "El cliente se retira"
    );
    assert_eq!(payload["installments"][2]["state"]["name"], "ANNULLED");
    assert_eq!(payload["actions"]["cancel"], false);
    assert_eq!(
        payload["events"].as_array().unwrap().last().unwrap()["kind"],
        "activation"
    );
    admin
        .post(
            &format!("/mandates/{subscription}/cancel"),
            json!({"description": "otra vez"}),
        )
        .await
        .expect(400, "MANDATE_STATE_CONFLICT");
    admin
        .post(
            "/mandates/man_nobody/cancel",
            json!({"description": "nadie"}),
        )
        .await
        .expect(404, "MANDATE_NOT_FOUND");

    // Every change is in the staff audit, with its target.
    let audit = admin.get("/audit/staff?action=mandate.").await;
    audit.expect(200, "STAFF_AUDIT_OK");
    let actions: Vec<(String, String)> = items(&audit)
        .iter()
        .map(|a| {
            (
                a["action"].as_str().unwrap().to_string(),
                a["target"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        vec![
            ("mandate.cancel".to_string(), subscription.clone()),
            ("mandate.add-installments".to_string(), dynamic.clone()),
            ("mandate.annul".to_string(), subscription.clone()),
            ("mandate.pay".to_string(), subscription.clone()),
        ]
    );
    assert_eq!(items(&audit)[3]["email"], "owner@merchant.example");
}

#[tokio::test(flavor = "multi_thread")]
async fn settings_commerces_keys_roots_staff_and_audit() {
    let app = spawn_app().await;
    let admin = owner(&app).await;

    // A commerce, with a generated password, shown once.
    let code = rut(78000111);
    let (body, check) = code.split_once('-').unwrap();
    let dotted = format!("{}.{}.{}-{check}", &body[..2], &body[2..5], &body[5..]);
    let created = admin
        .post(
            "/commerces",
            json!({"code": dotted, "name": "Tienda Nueva", "channels": ["WEB"]}),
        )
        .await;
    created.expect(201, "COMMERCE_CREATED");
    assert_eq!(created.body["payload"]["code"], code);
    assert!(
        created.body["payload"]["webhookSecret"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );
    let password = created.body["payload"]["password"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(password.len() >= 8);
    let duplicate = admin
        .post("/commerces", json!({"code": code, "name": "Otra"}))
        .await;
    duplicate.expect(400, "COMMERCE_EXISTS");
    assert_eq!(duplicate.error_fields(), vec!["code"]);
    let invalid = admin
        .post(
            "/commerces",
            json!({"code": "no spaces", "name": "", "password": "short", "paymentMethods": [3, 99]}),
        )
        .await;
    invalid.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        invalid.error_fields(),
        vec!["code", "name", "password", "paymentMethods[1]"]
    );
    let commerces = admin.get("/commerces").await;
    commerces.expect(200, "COMMERCES_OK");
    let listed = items(&commerces);
    assert_eq!(listed.len(), 3);
    let new = listed.iter().find(|c| c["code"] == code).unwrap();
    assert_eq!(new["channels"], json!(["WEB"]));
    assert_eq!(new["retryPolicy"]["afterDays"], json!([1, 3, 7]));
    assert_eq!(new["customRetryPolicy"], false);

    // The new commerce logs in to the merchant API with its generated password.
    let jwe = app.encrypt(&password).await;
    app.request_with(
        Method::POST,
        "/login",
        Some(&json!({"username": code, "password": jwe})),
        as_commerce(&code, None),
    )
    .await
    .expect(200, "LOGIN_OK");

    // Retry policy.
    let path = format!("/commerces/{code}/retry-policy");
    admin
        .call(Method::PUT, &path, Some(json!({"afterDays": [3, 1]})))
        .await
        .expect(400, "VALIDATION_ERROR");
    admin
        .call(Method::PUT, &path, Some(json!({"afterDays": [2, 5]})))
        .await
        .expect(200, "RETRY_POLICY_OK");
    let stored: Option<String> = app
        .running
        .state
        .store()
        .read(|c| {
            let id = mandato::store::commerces::by_code(c, &code)?.unwrap().id;
            Ok(mandato::store::charging::retry_policy(c, id)?)
        })
        .unwrap();
    assert_eq!(stored.as_deref(), Some(r#"{"afterDays":[2,5]}"#));
    admin
        .call(Method::PUT, &path, Some(json!({})))
        .await
        .expect(200, "RETRY_POLICY_OK");
    admin
        .call(Method::PUT, "/commerces/nope/retry-policy", Some(json!({})))
        .await
        .expect(404, "COMMERCE_NOT_FOUND");

    // An API key for the new commerce only: shown once, works, then revoked.
    let key = admin.post("/api-keys", json!({"commerces": [code]})).await;
    key.expect(201, "API_KEY_CREATED");
    let api_key = key.body["payload"]["apiKey"].as_str().unwrap().to_string();
    let prefix = key.body["payload"]["prefix"].as_str().unwrap().to_string();
    assert!(api_key.starts_with(&prefix));
    admin
        .post("/api-keys", json!({"commerces": ["nope"]}))
        .await
        .expect(400, "COMMERCE_NOT_FOUND");
    let keys = admin.get("/api-keys").await;
    let listed = items(&keys);
    assert_eq!(listed[0]["prefix"], prefix);
    assert_eq!(listed[0]["commerces"], json!([code]));
    assert_eq!(listed[0]["allCommerces"], false);
    assert!(!keys.body.to_string().contains(&api_key), "never listed");
    app.request_with(
        Method::GET,
        "/.well-known/jwe-public-key",
        None,
        as_commerce(&code, Some(api_key.clone())),
    )
    .await
    .expect(200, "JWE_PUBLIC_KEY_OK");
    let jwe = app.encrypt(&password).await;
    app.request_with(
        Method::POST,
        "/login",
        Some(&json!({"username": code, "password": jwe})),
        as_commerce(&code, Some(api_key.clone())),
    )
    .await
    .expect(200, "LOGIN_OK");
    admin
        .call(Method::DELETE, &format!("/api-keys/{prefix}"), None)
        .await
        .expect(200, "API_KEY_REVOKED");
    admin
        .call(Method::DELETE, &format!("/api-keys/{prefix}"), None)
        .await
        .expect(404, "API_KEY_NOT_FOUND");
    let jwe = app.encrypt(&password).await;
    let refused = app
        .request_with(
            Method::POST,
            "/login",
            Some(&json!({"username": code, "password": jwe})),
            as_commerce(&code, Some(api_key)),
        )
        .await;
    assert_eq!(refused.status, 403);

    // The environment and its JWE public key.
    let environment = admin.get("/environment").await;
    environment.expect(200, "ENVIRONMENT_OK");
    assert_eq!(environment.body["payload"]["environment"], "sandbox");
    assert_eq!(
        environment.body["payload"]["jwePublicKey"]["publicKey"],
        app.public_key().await
    );

    // Trusted roots.
    let ca = mandato::notify::tls::DevCa::generate().unwrap();
    admin
        .post("/trusted-roots", json!({"pem": "not a pem"}))
        .await
        .expect(400, "VALIDATION_ERROR");
    let added = admin
        .post("/trusted-roots", json!({"pem": ca.cert_pem}))
        .await;
    added.expect(200, "TRUSTED_ROOTS_ADDED");
    assert_eq!(added.body["payload"]["added"].as_array().unwrap().len(), 1);
    let roots = admin.get("/trusted-roots").await;
    let fingerprint = items(&roots)[0]["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    admin
        .call(
            Method::DELETE,
            &format!("/trusted-roots/{fingerprint}"),
            None,
        )
        .await
        .expect(200, "TRUSTED_ROOT_REMOVED");
    assert!(items(&admin.get("/trusted-roots").await).is_empty());

    // Staff accounts: create, change, and the guards against locking everyone out.
    let operator = member(&app, &admin, "operator").await;
    admin
        .post(
            "/staff",
            json!({"email": "operator@merchant.example", "password": "ten or more chars", "role": "viewer"}),
        )
        .await
        .expect(400, "STAFF_EXISTS");
    let invalid = admin
        .post(
            "/staff",
            json!({"email": "x", "password": "short", "role": "boss"}),
        )
        .await;
    assert_eq!(invalid.error_fields(), vec!["email", "password", "role"]);
    admin
        .call(
            Method::PUT,
            "/staff/owner@merchant.example",
            Some(json!({"role": "viewer"})),
        )
        .await
        .expect(400, "OWN_ACCOUNT");
    let promoted = admin
        .call(
            Method::PUT,
            "/staff/operator@merchant.example",
            Some(json!({"role": "admin"})),
        )
        .await;
    promoted.expect(200, "STAFF_UPDATED");
    assert_eq!(promoted.body["payload"]["role"], "admin");
    // The promoted account can now demote the owner, but not itself.
    operator
        .call(
            Method::PUT,
            "/staff/owner@merchant.example",
            Some(json!({"disabled": true})),
        )
        .await
        .expect(200, "STAFF_UPDATED");
    admin
        .get("/commerces")
        .await
        .expect(401, "SESSION_REQUIRED");
    let staff = operator.get("/staff").await;
    staff.expect(200, "STAFF_OK");
    assert_eq!(items(&staff).len(), 2);
    assert!(items(&staff)[0]["disabledAt"].is_string());

    // Audit: staff actions and API requests, filtered.
    let actions = operator.get("/audit/staff?action=commerce.").await;
    let names: Vec<String> = items(&actions)
        .iter()
        .map(|a| a["action"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        vec![
            "commerce.retry-policy",
            "commerce.retry-policy",
            "commerce.create"
        ]
    );
    let paged = operator.get("/audit/staff?limit=2").await;
    let cursor = paged.body["payload"]["nextCursor"].as_str().unwrap();
    let next = operator
        .get(&format!("/audit/staff?limit=2&cursor={cursor}"))
        .await;
    assert_eq!(items(&next).len(), 2);
    // The audit writer batches; give it a moment. The login with the revoked key was refused
    // before authentication: counted, without a row of its own.
    let mut refused = Value::Null;
    for _ in 0..50 {
        let reply = operator.get("/audit/refusals").await;
        reply.expect(200, "REFUSALS_OK");
        refused = reply.body["payload"]["totals"].clone();
        if refused.as_array().is_some_and(|t| !t.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(refused, json!([{"reason": "INVALID_API_KEY", "count": 1}]));
    let logins = operator
        .get(&format!(
            "/audit/requests?path=/login&status=4xx&commerce={code}"
        ))
        .await;
    logins.expect(200, "REQUEST_AUDIT_OK");
    assert!(items(&logins).is_empty());
    operator
        .get("/audit/requests?status=abc")
        .await
        .expect(400, "VALIDATION_ERROR");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_viewer_changes_nothing_and_an_operator_only_mandates() {
    let mut app = spawn_app().await;
    let (subscription, dynamic) = merchant_data(&mut app).await;
    let admin = owner(&app).await;
    let viewer = member(&app, &admin, "viewer").await;
    let operator = member(&app, &admin, "operator").await;
    let first = admin.get(&format!("/mandates/{subscription}")).await.body["payload"]
        ["installments"][0]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    let payment = json!({"installmentIds": [first],
        "payment": {"date": app.date_in(0), "amount": 29990, "currencyId": "CLP"}});
    let new_installment = json!({"installments": [
        {"id": "z", "amount": 10, "currencyId": "CLP", "installmentDueDate": app.date_in(3)}]});
    let mandate_changes = [
        (
            Method::POST,
            format!("/mandates/{subscription}/payments"),
            payment.clone(),
        ),
        (
            Method::POST,
            format!("/mandates/{subscription}/annulments"),
            json!({"installmentIds": [first]}),
        ),
        (
            Method::POST,
            format!("/mandates/{dynamic}/installments"),
            new_installment.clone(),
        ),
        (
            Method::POST,
            format!("/mandates/{subscription}/cancel"),
            json!({"description": "no debería"}),
        ),
    ];
    let admin_changes = [
        (
            Method::POST,
            "/commerces".to_string(),
            json!({"code": "X-1", "name": "X"}),
        ),
        (
            Method::PUT,
            format!("/commerces/{COMMERCE}/retry-policy"),
            json!({"afterDays": [2]}),
        ),
        (Method::POST, "/api-keys".to_string(), json!({})),
        (Method::DELETE, "/api-keys/mk_00000".to_string(), json!({})),
        (
            Method::POST,
            "/trusted-roots".to_string(),
            json!({"pem": "x"}),
        ),
        (Method::DELETE, "/trusted-roots/00".to_string(), json!({})),
        (
            Method::POST,
            "/staff".to_string(),
            json!({"email": "x@y.cl", "password": "ten or more chars", "role": "admin"}),
        ),
        (
            Method::PUT,
            "/staff/owner@merchant.example".to_string(),
            json!({"disabled": true}),
        ),
    ];
    for (method, path, body) in mandate_changes.iter().chain(admin_changes.iter()) {
        viewer
            .call(method.clone(), path, Some(body.clone()))
            .await
            .expect(403, "ROLE_NOT_ALLOWED");
    }
    for (method, path, body) in admin_changes.iter() {
        operator
            .call(method.clone(), path, Some(body.clone()))
            .await
            .expect(403, "ROLE_NOT_ALLOWED");
    }
    viewer.get("/staff").await.expect(403, "ROLE_NOT_ALLOWED");
    operator.get("/staff").await.expect(403, "ROLE_NOT_ALLOWED");
    // Nothing changed, and the viewer still reads everything else.
    let detail = viewer.get(&format!("/mandates/{subscription}")).await;
    detail.expect(200, "MANDATE_OK");
    assert_eq!(
        detail.body["payload"]["mandate"]["state"]["name"],
        "PENDING"
    );
    assert_eq!(
        detail.body["payload"]["installments"][0]["state"]["name"],
        "PENDING"
    );
    for path in [
        "/dashboard",
        "/customers",
        "/mandates",
        "/commerces",
        "/api-keys",
        "/environment",
        "/trusted-roots",
        "/audit/staff",
        "/audit/requests",
        "/audit/verify",
    ] {
        assert_eq!(viewer.get(path).await.status, 200, "{path}");
    }
    let staff_audit = admin
        .get("/audit/staff?email=viewer@merchant.example")
        .await;
    assert_eq!(
        items(&staff_audit)
            .iter()
            .map(|a| a["action"].as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
        vec!["sign-in"]
    );

    // An operator handles mandates; without the CSRF token, nobody changes anything.
    let no_csrf = Desk {
        app: &app,
        cookie: operator.cookie.clone(),
        csrf: None,
    };
    no_csrf
        .post(
            &format!("/mandates/{subscription}/payments"),
            payment.clone(),
        )
        .await
        .expect(403, "CSRF_TOKEN_INVALID");
    operator
        .post(&format!("/mandates/{subscription}/payments"), payment)
        .await
        .expect(200, "MANDATE_OK");
    operator
        .post(
            &format!("/mandates/{dynamic}/installments"),
            new_installment,
        )
        .await
        .expect(200, "MANDATE_OK");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ui_is_served_at_the_root_and_the_apis_keep_their_404() {
    let app = spawn_app().await;
    let get = |path: &str| app.client.get(format!("{}{path}", app.base)).send();
    // The app, for its own routes too (a refresh on /mandates/man_... loads it).
    for path in ["/", "/mandates/man_1", "/settings"] {
        let response = get(path).await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        assert!(
            headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        assert_eq!(headers["cache-control"], "no-cache");
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
        let text = response.text().await.unwrap();
        assert!(text.contains("<html"), "{path}");
    }
    // An unchanged page answers 304 to its ETag.
    let first = get("/").await.unwrap();
    let etag = first.headers()["etag"].to_str().unwrap().to_string();
    let again = app
        .client
        .get(format!("{}/", app.base))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    // A file the build does not have is a plain 404, not the app.
    assert_eq!(get("/assets/gone-1234.js").await.unwrap().status(), 404);
    // The APIs' unknown paths stay their JSON 404, and the guard still applies.
    for path in ["/api/v1/nothing", "/admin/api/nothing", "/api"] {
        let response = get(path).await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["name"], "ROUTE_NOT_FOUND", "{path}");
    }
    let foreign = app
        .client
        .get(format!("{}/", app.base))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
}

/// The build as the server reads it (debug builds serve `ui/dist` from disk).
fn built_ui(file: &str) -> Option<Vec<u8>> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("ui/dist")
            .join(file),
    )
    .ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ui_is_served_in_the_encoding_accept_encoding_allows() {
    let app = spawn_app().await;
    let get = |path: &str, accept_encoding: Option<&str>| {
        let mut request = app.client.get(format!("{}{path}", app.base));
        if let Some(value) = accept_encoding {
            request = request.header("accept-encoding", value);
        }
        request.send()
    };
    let index =
        String::from_utf8(built_ui("index.html").expect("build.rs writes index.html")).unwrap();
    if index.contains("mandato:ui-placeholder") {
        // Before the UI is built there are no compressed copies: the page itself, said to vary.
        let response = get("/", Some("br, gzip")).await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.headers().get("content-encoding").is_none());
        assert_eq!(response.headers()["vary"], "accept-encoding");
        return;
    }
    let script = index
        .split("src=\"/")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("index.html loads a script")
        .to_string();
    assert!(
        script.starts_with("assets/") && script.ends_with(".js"),
        "{script}"
    );
    let path = format!("/{script}");
    let plain = built_ui(&script).unwrap();
    let brotli = built_ui(&format!("{script}.br")).expect("the build writes a .br copy");

    let check = |response: &reqwest::Response, encoding: Option<&str>| {
        let headers = response.headers();
        assert_eq!(response.status(), 200, "{encoding:?}");
        assert_eq!(
            headers.get("content-encoding").map(|v| v.to_str().unwrap()),
            encoding
        );
        assert_eq!(headers["vary"], "accept-encoding");
        assert_eq!(
            headers["cache-control"],
            "public, max-age=31536000, immutable"
        );
        assert!(
            headers["content-type"]
                .to_str()
                .unwrap()
                .contains("javascript")
        );
    };

    let response = get(&path, Some("gzip, deflate, br, zstd")).await.unwrap();
    check(&response, Some("br"));
    let brotli_etag = response.headers()["etag"].to_str().unwrap().to_string();
    assert_eq!(response.bytes().await.unwrap().as_ref(), brotli.as_slice());

    let response = get(&path, Some("gzip")).await.unwrap();
    check(&response, Some("gzip"));
    let gzipped = response.bytes().await.unwrap();
    let mut inflated = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(gzipped.as_ref()),
        &mut inflated,
    )
    .unwrap();
    assert_eq!(inflated, plain);

    for identity in [None, Some("identity"), Some("br;q=0, gzip;q=0")] {
        let response = get(&path, identity).await.unwrap();
        check(&response, None);
        assert_ne!(response.headers()["etag"], brotli_etag.as_str());
        assert_eq!(response.bytes().await.unwrap().as_ref(), plain.as_slice());
    }
    // Quality decides over the server's preference.
    let response = get(&path, Some("br;q=0.5, gzip;q=0.9")).await.unwrap();
    check(&response, Some("gzip"));

    // Each encoding revalidates against its own ETag.
    let again = app
        .client
        .get(format!("{}{path}", app.base))
        .header("accept-encoding", "br")
        .header("if-none-match", &brotli_etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["vary"], "accept-encoding");

    // The page itself is compressed too, and the copies are not files of their own.
    let page = get("/mandates/man_1", Some("br")).await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["content-encoding"], "br");
    assert_eq!(page.headers()["cache-control"], "no-cache");
    assert_eq!(
        get(&format!("{path}.br"), None).await.unwrap().status(),
        404
    );
    assert_eq!(
        get(&format!("{path}.gz"), None).await.unwrap().status(),
        404
    );
}
