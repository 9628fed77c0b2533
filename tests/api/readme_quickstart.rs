//! The README's "Receive your first webhook" block, run as written against the real binary on
//! a Saturday of the sandbox clock (CONTRACT 14): the commerce is added, `serve` and `listen`
//! start, and `listen` verifies the three events of `mandato trigger payment.paid` although no
//! charge can happen on that day (the trigger charges on the next business date).
//!
//! Each `mandato ...` line of the block runs in bash, with `mandato` the built binary and the
//! data directory (and a free port for `serve`) given through the environment, as a reader's
//! alias and defaults would. The alias line itself is the only line not run.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use chrono::Datelike;

use crate::cli::mandato;

const BIN: &str = env!("CARGO_BIN_EXE_mandato");

/// The shell commands of the README's quickstart block, comments removed.
fn quickstart_commands() -> Vec<String> {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("## Receive your first webhook")
        .nth(1)
        .expect("the README has its quickstart section");
    let block = section
        .split("```bash\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the section opens with a bash block");
    block
        .lines()
        .filter(|line| line.starts_with("mandato "))
        .map(|line| match line.find("  #").or_else(|| line.find(" # ")) {
            Some(comment) => line[..comment].trim_end().to_string(),
            None => line.to_string(),
        })
        .collect()
}

/// `bash -c LINE` with `mandato` the built binary (first on the `PATH`, from a `-bin` folder beside the
/// data directory) on the test's data directory.
fn shell(data: &std::path::Path, line: &str) -> Command {
    let bin = data.with_file_name(format!(
        "{}-bin",
        data.file_name().unwrap().to_string_lossy()
    ));
    if !bin.join("mandato").exists() {
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(BIN, bin.join("mandato")).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(line)
        .env("PATH", path)
        .env("MANDATO_DATA_DIR", data)
        .env("MANDATO_LISTEN", "127.0.0.1:0")
        .env_remove("MANDATO_BUSINESS_DAYS");
    command
}

/// A background command whose stdout lines arrive on a channel; killed when dropped.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Running {
    fn start(data: &std::path::Path, line: &str) -> Running {
        let mut child = shell(data, &format!("exec {line}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the command starts");
        let (tx, lines) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        Running { child, lines }
    }

    /// Lines printed until `enough` says so, or the deadline.
    fn wait_for(&self, what: &str, enough: impl Fn(&[String]) -> bool) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        while !enough(&seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(_) => panic!("waited 30 s for {what}; printed: {seen:#?}"),
            }
        }
        seen
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_quickstart_runs_as_written_on_a_saturday() {
    let commands = quickstart_commands();
    let verbs: Vec<&str> = commands
        .iter()
        .map(|c| c.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(
        verbs,
        ["commerce", "serve", "listen", "trigger"],
        "{commands:#?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let data = &dir.path().join("data");

    let added = shell(data, &commands[0]).output().unwrap();
    assert!(added.status.success(), "{added:?}");
    // A Saturday of the sandbox clock: today's when it is one, else the next.
    let today: chrono::NaiveDate = mandato(data, &["sandbox", "clock"], None)["today"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let saturday = (0..7)
        .map(|n| today + chrono::Duration::days(n))
        .find(|d| d.weekday() == chrono::Weekday::Sat)
        .unwrap();
    if saturday != today {
        let to = saturday.to_string();
        mandato(data, &["sandbox", "clock", "advance", "--to", &to], None);
    }

    let serve = Running::start(data, &commands[1]);
    serve.wait_for("serve to listen", |seen| {
        seen.iter().any(|l| l.contains("url="))
    });
    let listen = Running::start(data, &commands[2]);
    listen.wait_for("listen to start", |seen| {
        seen.iter().any(|l| l.starts_with("listening"))
    });
    let triggered = shell(data, &commands[3]).output().unwrap();
    assert!(
        triggered.status.success(),
        "the trigger refused on a Saturday: {}",
        String::from_utf8_lossy(&triggered.stderr)
    );
    let verified = |seen: &[String]| {
        seen.iter()
            .filter(|l| l.ends_with("  verified"))
            .cloned()
            .collect::<Vec<_>>()
    };
    let seen = listen.wait_for("three verified events", |seen| verified(seen).len() >= 3);
    // Deliveries run in parallel: the lines come in any order, `seq` gives the mandate's.
    let mut events = verified(&seen);
    events.sort_by_key(|l| l.split("  seq ").nth(1).map(|rest| rest[..1].to_string()));
    assert!(
        events[0].contains("activation") && events[0].contains("seq 1"),
        "{events:#?}"
    );
    assert!(
        events[1].contains("payment") && events[1].contains("seq 2"),
        "{events:#?}"
    );
    assert!(
        events[2].contains("payment") && events[2].contains("seq 3"),
        "{events:#?}"
    );
    // The PAID event says the charge date is the next business date, not the Saturday.
    let printed = String::from_utf8_lossy(&triggered.stdout);
    assert!(printed.contains("PAID, charge date"), "{printed}");
    assert!(
        !printed.contains(&format!("charge date {saturday}")),
        "{printed}"
    );
}
