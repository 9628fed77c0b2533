//! The test harness: `spawn_app()` starts the real engine on port 0 with a fresh database in a
//! temporary directory, and talks to it over loopback HTTP like any client.
#![allow(dead_code)] // Not every test module uses every helper.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, LazyLock, Mutex};

use chrono::{Duration, Utc};
use mandato::app::{self, Running};
use mandato::auth::{api_key, password};
use mandato::clock::{Clock, ShiftedClock};
use mandato::config::{Config, Environment};
use mandato::domain::state::PaymentMethod;
use mandato::secret::Secret;
use mandato::store::commerces::{self, NewCommerce};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

pub const COMMERCE: &str = "76123456-0";
pub const OTHER_COMMERCE: &str = "77000111-2";
pub const PASSWORD: &str = "correct horse battery";

/// The PostgreSQL database of each test engine's data directory: a CLI command or a second
/// store opened on that directory must reach the engine's database, as an operator passes
/// the same `--database-url` to both.
static DATABASES: LazyLock<Mutex<HashMap<PathBuf, String>>> = LazyLock::new(Mutex::default);

/// The database URL of the engine whose data directory is `dir`, if it runs on PostgreSQL.
pub fn database_url_of(dir: &Path) -> Option<String> {
    DATABASES.lock().unwrap().get(dir).cloned()
}

/// `mandato --data-dir DIR`, on the database of the engine that runs there.
pub fn cli_command(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mandato"));
    command.arg("--data-dir").arg(dir);
    if let Some(url) = database_url_of(dir) {
        command.env("MANDATO_DATABASE_URL", url);
    }
    command
}

/// A second store on the database of the engine that runs in `dir`, as another process
/// would open it.
pub fn store_of(dir: &Path) -> mandato::store::Store {
    let mut config = Config::new(dir.to_path_buf());
    config.database_url = database_url_of(dir).map(Secret::new);
    config.open_store().expect("the engine's database opens")
}

pub struct TestApp {
    pub running: Running,
    pub base: String,
    pub client: reqwest::Client,
    pub clock: Arc<ShiftedClock>,
    pub api_key: String,
    pub dir: tempfile::TempDir,
    /// The commerce the requests act for, and its session token once logged in.
    pub commerce: String,
    pub token: Option<String>,
}

pub struct Options {
    pub environment: Environment,
    pub authorization_required: bool,
    pub delivery: mandato::notify::delivery::DeliveryConfig,
    /// The daily charging time; `None` (the default) leaves runs to `run_charging`.
    pub charge_at: Option<chrono::NaiveTime>,
    /// `serve --allow-private-webhooks`.
    pub allow_private_webhooks: bool,
    /// The listener's limits (the contract's by default).
    pub http: mandato::config::HttpLimits,
    /// Daily backups (off unless a test is about them).
    pub backups: bool,
    /// The days charges are made on: every day unless a test is about the calendar, so that
    /// tests charging on "today + n" do not depend on the weekday they run.
    pub business_days: mandato::config::BusinessDays,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            environment: Environment::Sandbox,
            authorization_required: false,
            delivery: mandato::notify::delivery::DeliveryConfig::default(),
            charge_at: None,
            allow_private_webhooks: false,
            http: mandato::config::HttpLimits::default(),
            backups: false,
            business_days: mandato::config::BusinessDays::EveryDay,
        }
    }
}

fn test_config(dir: &std::path::Path, options: &Options) -> Config {
    let mut config = Config::new(dir.to_path_buf());
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.environment = options.environment;
    config.delivery = options.delivery.clone();
    config.charge_at = options.charge_at;
    config.allow_private_webhooks = options.allow_private_webhooks;
    config.http = options.http.clone();
    config.backups.enabled = options.backups;
    config.business_days = options.business_days;
    config
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(Options::default()).await
}

pub async fn spawn_app_with(options: Options) -> TestApp {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = test_config(dir.path(), &options);
    if crate::postgres::chosen() {
        // A database of its own; the synchronous client connects off the test's runtime.
        let url = std::thread::spawn(crate::postgres::fresh_database)
            .join()
            .expect("a fresh PostgreSQL database");
        DATABASES
            .lock()
            .unwrap()
            .insert(dir.path().to_path_buf(), url.clone());
        config.database_url = Some(Secret::new(url));
    }
    let clock = Arc::new(ShiftedClock::new());
    let running = app::start(config, clock.clone() as Arc<dyn Clock>)
        .await
        .expect("engine starts");
    let store = &running.state.store();
    for code in [COMMERCE, OTHER_COMMERCE] {
        let hash = password::hash_password(&Secret::new(PASSWORD.to_string()));
        let secret = api_key::generate_webhook_secret();
        store
            .write(|tx| {
                commerces::insert(
                    tx,
                    &NewCommerce {
                        code,
                        name: "Comercio de prueba",
                        password_hash: &hash,
                        channels: None,
                        payment_methods: PaymentMethod::ALL,
                        webhook_secret: &secret,
                        authorization_required: options.authorization_required,
                        created_at: "2026-01-01T00:00:00.000Z",
                    },
                )
            })
            .expect("commerce");
    }
    let key = api_key::generate();
    store
        .write(|tx| {
            commerces::insert_api_key(tx, &key.prefix, &key.hash, &[], "2026-01-01T00:00:00.000Z")
        })
        .expect("api key");
    let base = running.base_url();
    TestApp {
        running,
        base,
        client: reqwest::Client::new(),
        clock,
        api_key: key.key.expose().clone(),
        dir,
        commerce: COMMERCE.to_string(),
        token: None,
    }
}

/// The eight common headers, fresh (new correlationId, current time) for every request.
pub fn common_headers(app: &TestApp) -> Vec<(String, String)> {
    vec![
        ("country".into(), "CL".into()),
        ("commerce".into(), app.commerce.clone()),
        ("channel".into(), "WEB".into()),
        ("requestDateTime".into(), (app.clock.now()).to_rfc3339()),
        ("correlationId".into(), uuid::Uuid::new_v4().to_string()),
        ("processId".into(), "HYBRID".into()),
        ("salesExecutiveId".into(), "SE-01".into()),
        ("x-api-key".into(), app.api_key.clone()),
    ]
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Reply {
    /// The `field`s of the error body, in order.
    pub fn error_fields(&self) -> Vec<String> {
        self.body["errors"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| e["field"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn name(&self) -> &str {
        self.body["name"].as_str().unwrap_or("")
    }

    #[track_caller]
    pub fn expect(&self, status: u16, name: &str) -> &Self {
        assert_eq!(
            (self.status.as_u16(), self.name()),
            (status, name),
            "unexpected reply: {}",
            serde_json::to_string_pretty(&self.body).unwrap()
        );
        self
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}/api/v1{}", self.base, path)
    }

    /// A request with every header right; `tweak` may change or remove headers.
    pub async fn request_with(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        tweak: impl FnOnce(&mut Vec<(String, String)>),
    ) -> Reply {
        let mut headers = common_headers(self);
        if let Some(token) = &self.token {
            headers.push(("Authorization".into(), format!("Bearer {token}")));
        }
        tweak(&mut headers);
        let mut request = self.client.request(method, self.url(path));
        for (name, value) in &headers {
            request = request.header(name.as_str(), value.as_str());
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.expect("request sent");
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body read");
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn request(&self, method: Method, path: &str, body: Option<&Value>) -> Reply {
        self.request_with(method, path, body, |_| {}).await
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.request(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        self.request(Method::POST, path, Some(body)).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Reply {
        self.request(Method::PUT, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str, body: Option<&Value>) -> Reply {
        self.request(Method::DELETE, path, body).await
    }

    pub async fn public_key(&self) -> String {
        let reply = self.get("/.well-known/jwe-public-key").await;
        reply.body["payload"]["publicKey"]
            .as_str()
            .expect("public key")
            .to_string()
    }

    /// Encrypts `password` with the environment's key through the sandbox helper.
    pub async fn encrypt(&self, password: &str) -> String {
        let key = self.public_key().await;
        let reply = self
            .post(
                "/jwe/encrypt",
                &json!({"password": password, "publicKey": key}),
            )
            .await;
        reply.expect(200, "JWE_ENCRYPT_OK");
        reply.body["payload"]["token"].as_str().unwrap().to_string()
    }

    /// Logs in as the current commerce and keeps the token for the next requests.
    pub async fn login(&mut self) {
        let jwe = self.encrypt(PASSWORD).await;
        let reply = self
            .post(
                "/login",
                &json!({"username": self.commerce, "password": jwe}),
            )
            .await;
        reply.expect(200, "LOGIN_OK");
        self.token = Some(reply.body["payload"]["token"].as_str().unwrap().to_string());
    }

    /// Switches to acting as another commerce, logged in.
    pub async fn act_as(&mut self, commerce: &str) {
        self.commerce = commerce.to_string();
        self.token = None;
        self.login().await;
    }

    pub fn advance_clock(&self, by: Duration) {
        self.clock.advance(by);
    }

    /// Registers a customer and returns its `internalUserId`.
    pub async fn create_customer(&self, user_id: &str, rut: &str) -> String {
        let reply = self.post("/user", &customer_body(user_id, rut)).await;
        reply.expect(201, "USER_CREATE_OK");
        reply.body["payload"]["customer"]["internalUserId"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Creates a mandate from a body and returns the payload.
    pub async fn create_mandate(&self, body: &Value) -> Value {
        let reply = self.post("/mandate", body).await;
        reply.expect(201, "MANDATE_CREATE_OK");
        reply.body["payload"].clone()
    }

    /// The outbox events of a mandate, as stored (body parsed).
    /// The mandate document (`fileBase64`) of the mandate's activation event, checked to be
    /// a PDF that parses with at least one page.
    pub fn activation_document(&self, mandate_internal_id: &str) -> Vec<u8> {
        use base64::Engine;
        let activation = self
            .events_of(mandate_internal_id)
            .into_iter()
            .find(|e| e["event"] == "activation")
            .expect("an activation event");
        let pdf = base64::engine::general_purpose::STANDARD
            .decode(activation["fileBase64"].as_str().expect("fileBase64"))
            .unwrap();
        assert!(pdf.starts_with(b"%PDF-"), "a PDF document");
        let document = lopdf::Document::load_mem(&pdf).expect("a PDF that parses");
        assert!(!document.get_pages().is_empty());
        pdf
    }

    pub fn events_of(&self, mandate_internal_id: &str) -> Vec<Value> {
        let store = &self.running.state.store();
        store
            .read(|db| {
                let seq: i64 = db.query_row(
                    "SELECT seq FROM mandates WHERE id = ?1",
                    &[mandate_internal_id.into()],
                    |r| r.get(0),
                )?;
                let events = mandato::store::events::for_mandate(db, seq)?;
                Ok(events
                    .into_iter()
                    .map(|e| serde_json::from_str(&e.body).unwrap())
                    .collect())
            })
            .expect("events")
    }

    pub fn clock_now(&self) -> chrono::DateTime<Utc> {
        self.clock.now()
    }

    /// Stops the engine gracefully and starts it again on the same database and clock, as a
    /// merchant closing and reopening the app. The session token is dropped: log in again.
    pub async fn restarted(self, options: Options) -> TestApp {
        let TestApp {
            running,
            client,
            clock,
            api_key,
            dir,
            commerce,
            ..
        } = self;
        // The same database: the data directory's file, or the PostgreSQL database.
        let database_url = running.state.config.database_url.clone();
        running.shutdown().await.expect("graceful shutdown");
        let mut config = test_config(dir.path(), &options);
        config.database_url = database_url;
        let running = app::start(config, clock.clone() as Arc<dyn Clock>)
            .await
            .expect("engine starts again");
        TestApp {
            base: running.base_url(),
            running,
            client,
            clock,
            api_key,
            dir,
            commerce,
            token: None,
        }
    }

    /// Runs the charging engine for a business date, as the daily schedule would.
    pub async fn run_charging(
        &self,
        date: chrono::NaiveDate,
    ) -> mandato::charging::run::RunSummary {
        let charger = Arc::clone(&self.running.state.charger);
        tokio::task::spawn_blocking(move || {
            charger.run(date, mandato::charging::run::Trigger::Manual)
        })
        .await
        .unwrap()
        .expect("the run completes")
    }

    pub fn today(&self) -> chrono::NaiveDate {
        self.running.state.today()
    }

    /// A date `days` after the business date, as the API writes it.
    pub fn date_in(&self, days: i64) -> String {
        (self.today() + Duration::days(days)).to_string()
    }
}

pub fn customer_body(user_id: &str, rut: &str) -> Value {
    json!({"customer": {
        "userId": user_id,
        "identificationDocument": {"type": "RUT", "number": rut},
        "personalInformation": {"firstName": "Ana", "lastName": "Pérez", "secondLastName": "Soto"},
        "address": {"street": "Av. Providencia", "number": "1234", "commune": "Providencia",
                    "city": "Santiago", "region": "RM", "country": "CL"},
        "contacts": {"email": "ana@example.cl", "phone": "+56912345678"}
    }})
}

/// A SUBSCRIPTION of `count` monthly installments of 29990 CLP starting in a week.
pub fn subscription_body(app: &TestApp, user_id: &str, mandate_id: &str, count: u32) -> Value {
    json!({
        "customer": {"userId": user_id},
        "mandate": {"id": mandate_id, "type": "SUBSCRIPTION", "name": "Plan mensual", "detail": "Gimnasio",
                    "charges": {"currencyId": "CLP", "amount": 29990, "periodicity": "MONTHLY",
                                "startDate": app.date_in(7), "count": count}},
        "paymentMethods": [3, 4, 5],
        "metadata": {"plan": "gold"},
        "urls": {"callback": "https://merchant.example/return",
                 "activationWebhook": "https://merchant.example/hooks/activation",
                 "paymentWebhook": "https://merchant.example/hooks/payment"}
    })
}

/// A DYNAMIC mandate in CLP with the given installments (`[id, amount, days from today]`).
pub fn dynamic_body(
    app: &TestApp,
    user_id: &str,
    mandate_id: &str,
    installments: &[(&str, i64, i64)],
) -> Value {
    let items: Vec<Value> = installments
        .iter()
        .map(|(id, amount, days)| json!({"id": id, "amount": amount, "currencyId": "CLP", "installmentDueDate": app.date_in(*days)}))
        .collect();
    json!({
        "customer": {"userId": user_id},
        "mandate": {"id": mandate_id, "type": "DYNAMIC", "name": "Cuenta corriente",
                    "charges": {"currencyId": "CLP", "maxAmount": 100000}},
        "installments": items,
        "urls": {"activationWebhook": "https://merchant.example/hooks/activation",
                 "paymentWebhook": "https://merchant.example/hooks/payment"}
    })
}

// Helpers of the resource tests (customers, mandates, installments, receivables, isolation).

/// A valid RUT for `body`, in the normalized form, its check digit computed here (modulo 11)
/// independently of the product.
pub fn rut(body: u32) -> String {
    let mut rest = body;
    let mut weight = 2;
    let mut sum = 0;
    while rest > 0 {
        sum += (rest % 10) * weight;
        rest /= 10;
        weight = if weight == 7 { 2 } else { weight + 1 };
    }
    let check = match 11 - sum % 11 {
        11 => "0".to_string(),
        10 => "K".to_string(),
        d => d.to_string(),
    };
    format!("{body}-{check}")
}

/// Sets the member a JSON pointer names (its parent must exist).
pub fn set(value: &mut Value, pointer: &str, new: Value) {
    let (parent, key) = pointer.rsplit_once('/').expect("a JSON pointer");
    let target = value
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("no {parent} in the body"));
    match target {
        Value::Object(map) => {
            map.insert(key.to_string(), new);
        }
        Value::Array(items) => items[key.parse::<usize>().unwrap()] = new,
        other => panic!("{parent} is not a container: {other}"),
    }
}

/// Removes the member a JSON pointer names.
pub fn remove(value: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("a JSON pointer");
    if let Some(Value::Object(map)) = value.pointer_mut(parent) {
        map.shift_remove(key);
    }
}

/// `body` with the changes applied: `Some(v)` sets, `None` removes.
pub fn changed(body: &Value, changes: &[(&str, Option<Value>)]) -> Value {
    let mut body = body.clone();
    for (pointer, value) in changes {
        match value {
            Some(v) => set(&mut body, pointer, v.clone()),
            None => remove(&mut body, pointer),
        }
    }
    body
}

/// A ONEPAY mandate of `amount` CLP; `installment` is the optional single one (`id`, days).
pub fn onepay_body(
    app: &TestApp,
    user_id: &str,
    mandate_id: &str,
    amount: i64,
    installment: Option<(&str, i64)>,
) -> Value {
    let installments: Vec<Value> = installment
        .iter()
        .map(|(id, days)| json!({"id": id, "amount": amount, "currencyId": "CLP", "installmentDueDate": app.date_in(*days)}))
        .collect();
    json!({
        "customer": {"userId": user_id},
        "mandate": {"id": mandate_id, "type": "ONEPAY", "name": "Compra única",
                    "charges": {"currencyId": "CLP", "amount": amount}},
        "installments": installments,
        "urls": {"callback": "https://merchant.example/return",
                 "activationWebhook": "https://merchant.example/hooks/activation",
                 "paymentWebhook": "https://merchant.example/hooks/payment"}
    })
}

/// A `POST /installments` body for a CLP mandate (`[id, amount, days from today]`).
pub fn installments_body(
    app: &TestApp,
    user_id: &str,
    mandate_id: &str,
    installments: &[(&str, i64, i64)],
) -> Value {
    let items: Vec<Value> = installments
        .iter()
        .map(|(id, amount, days)| json!({"id": id, "amount": amount, "currencyId": "CLP", "installmentDueDate": app.date_in(*days)}))
        .collect();
    json!({
        "customer": {"userId": user_id},
        "product": {"id": mandate_id},
        "installmentsNumber": items.len(),
        "installments": items,
    })
}

/// A PAYMENT status change of the listed installments (by their external ids), paid today.
pub fn payment_body(app: &TestApp, mandate_id: &str, ids: &[&str], amount: i64) -> Value {
    json!({
        "product": {"id": mandate_id},
        "installments": {"ids": ids},
        "action": "PAYMENT",
        "payment": {"date": app.date_in(0), "amount": amount, "currencyId": "CLP",
                    "authorizationCode": "TRX-889", "method": "TRANSFER"}
    })
}

/// An ANNULMENT status change of the listed installments (by their external ids).
pub fn annulment_body(mandate_id: &str, ids: &[&str]) -> Value {
    json!({"product": {"id": mandate_id}, "installments": {"ids": ids}, "action": "ANNULMENT"})
}

/// `errors[].field` of a reply, sorted, for comparisons that do not depend on order.
pub fn sorted_fields(reply: &Reply) -> Vec<String> {
    let mut fields = reply.error_fields();
    fields.sort();
    fields
}

/// `errors[].code` of a reply, in order.
pub fn error_codes(reply: &Reply) -> Vec<String> {
    reply.body["errors"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["code"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// `(id, state id)` of each installment in a list, in order.
pub fn id_states(installments: &Value) -> Vec<(String, i64)> {
    installments
        .as_array()
        .expect("an installment list")
        .iter()
        .map(|i| {
            (
                i["id"].as_str().unwrap().to_string(),
                i["state"]["id"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Percent-encodes a query value.
pub fn encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

impl TestApp {
    /// A request whose body is sent byte for byte (JSON or not), with every header right.
    pub async fn request_raw(&self, method: Method, path: &str, body: &str) -> Reply {
        let mut request = self.client.request(method, self.url(path));
        for (name, value) in common_headers(self) {
            request = request.header(name, value);
        }
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let response = request
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("request sent");
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body read");
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply {
            status,
            headers,
            body,
        }
    }

    /// The lookup payload of a mandate by the merchant's id, which must exist.
    pub async fn mandate(&self, external_id: &str) -> Value {
        let reply = self.get(&format!("/mandate/id/{external_id}")).await;
        reply.expect(200, "MANDATE_DETAIL_OK");
        reply.body["payload"].clone()
    }

    /// `(id, state id)` of a mandate's installments, by the lookup.
    pub async fn installment_states(&self, external_id: &str) -> Vec<(String, i64)> {
        id_states(&self.mandate(external_id).await["installments"])
    }

    /// The webhook secret of a commerce, as stored.
    pub fn webhook_secret(&self, code: &str) -> String {
        self.running
            .state
            .store()
            .read(|conn| Ok(commerces::by_code(conn, code)?))
            .expect("commerce read")
            .expect("commerce exists")
            .webhook_secret
            .expose()
            .clone()
    }
}

/// The changes `changed` applies: JSON pointer, and the value to set (`None` removes).
pub type Changes<'a> = Vec<(&'a str, Option<Value>)>;

/// Resident memory (VmRSS) of a process in bytes: `"self"` (this test process, which hosts the
/// engines `spawn_app` starts) or a pid; 0 once the process is gone.
pub fn resident_bytes(process: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{process}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}
