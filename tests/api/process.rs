//! The real `mandato` binary as a child process: an installation made with the CLI, `serve` on
//! it (its log read for the URL, optionally kept in a file), the merchant API called from
//! outside, and the two ways a process ends: SIGKILL and SIGTERM.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::cli::{headers, mandato};

const BIN: &str = env!("CARGO_BIN_EXE_mandato");

/// What the CLI made for a commerce: an API key for every commerce, and the development
/// certificate (PEM) a local HTTPS receiver serves.
pub struct Installation {
    pub api_key: String,
    /// The commerce's webhook secret, as `commerce add` printed it.
    pub webhook_secret: String,
    pub cert_pem: String,
    pub key_pem: String,
}

/// Adds the commerce `code` with `password`, an API key and a development certificate.
pub fn install(data: &Path, code: &str, password: &str) -> Installation {
    let added = mandato(
        data,
        &[
            "commerce",
            "add",
            "--code",
            code,
            "--name",
            "Comercio",
            "--password-stdin",
        ],
        Some(&format!("{password}\n")),
    );
    let api_key = mandato(data, &["apikey", "create"], None)["apiKey"]
        .as_str()
        .unwrap()
        .to_string();
    let files = mandato(
        data,
        &["dev-cert", "--out", data.join("tls").to_str().unwrap()],
        None,
    );
    Installation {
        api_key,
        webhook_secret: added["webhookSecret"].as_str().unwrap().to_string(),
        cert_pem: std::fs::read_to_string(files["certificate"].as_str().unwrap()).unwrap(),
        key_pem: std::fs::read_to_string(files["key"].as_str().unwrap()).unwrap(),
    }
}

/// A `serve` process that a failing test does not leave behind: dropped, it is killed.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Starts `mandato serve` with extra environment, copying every line of its log (stderr) to
/// `log`, and returns it with its base URL once it listens.
pub fn serve_logged(data: &Path, env: &[(&str, &str)], log: &Path) -> (Server, String) {
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(data)
        .args(["serve", "--listen", "127.0.0.1:0"])
        // Charges on any date, so that tests do not depend on the weekday they run.
        .env("MANDATO_BUSINESS_DAYS", "every-day")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("serve logs its URL").unwrap();
        writeln!(file, "{line}").unwrap();
        if let Some(rest) = line.split("url=").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    // Keep copying, so that the server never blocks on a full pipe and the log is complete.
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = writeln!(file, "{line}");
        }
    });
    (Server(child), url)
}

/// SIGKILL: the process gets no chance to finish anything.
pub fn kill(child: &mut Child) {
    assert!(
        Command::new("kill")
            .args(["-KILL", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let _ = child.wait();
}

/// SIGTERM, and the process must end cleanly.
pub fn stop(child: &mut Child) {
    assert!(
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "serve stopped with {status}");
}

/// The ids of the outbox events that have somewhere to go.
pub fn expected_events(data: &Path) -> HashSet<String> {
    let conn = rusqlite::Connection::open(data.join("mandato.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT id FROM events WHERE url IS NOT NULL")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The merchant API of a `serve` process, as one commerce.
#[derive(Clone)]
pub struct Api {
    pub base: String,
    pub key: String,
    pub code: String,
    pub token: Option<String>,
    pub client: reqwest::Client,
}

impl Api {
    pub fn new(base: String, key: String, code: &str) -> Api {
        Api {
            base,
            key,
            code: code.to_string(),
            token: None,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()
                .unwrap(),
        }
    }

    /// One request; `Err` when no answer came (the process died, for one).
    pub async fn try_call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(StatusCode, Value), reqwest::Error> {
        let (status, body, _) = self.try_call_echo(method, path, body).await?;
        Ok((status, body))
    }

    /// As `try_call`, with the `correlationId` the answer echoed.
    pub async fn try_call_echo(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(StatusCode, Value, String), reqwest::Error> {
        let mut request = self
            .client
            .request(method, format!("{}/api/v1{path}", self.base))
            .headers(headers(&self.code, &self.key));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await?;
        let status = response.status();
        let correlation = response
            .headers()
            .get("correlationId")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let text = response.text().await?;
        Ok((
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
            correlation,
        ))
    }

    /// One request that must succeed; its body.
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, body) = self
            .try_call(method, path, body.as_ref())
            .await
            .expect("the server answers");
        assert!(status.is_success(), "{path}: {status} {body}");
        body
    }

    /// Encrypts `password` with the sandbox helper; the JWE.
    pub async fn encrypt(&self, password: &str) -> String {
        let key: Value = self
            .client
            .get(format!("{}/api/v1/.well-known/jwe-public-key", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let jwe = self
            .call(
                Method::POST,
                "/jwe/encrypt",
                Some(json!({"password": password, "publicKey": key["payload"]["publicKey"]})),
            )
            .await;
        jwe["payload"]["token"].as_str().unwrap().to_string()
    }

    /// Logs in as the commerce and keeps the session token.
    pub async fn login(&mut self, password: &str) {
        let jwe = self.encrypt(password).await;
        let login = self
            .call(
                Method::POST,
                "/login",
                Some(json!({"username": self.code, "password": jwe})),
            )
            .await;
        self.token = login["payload"]["token"].as_str().map(str::to_string);
    }
}
