//! `mandato audit verify`: recomputes the staff audit's hash chain and names the first record
//! that does not hold. Exit 0 when the chain is intact, 1 when it is broken.

use serde_json::{Value, json};

use super::out;
use crate::config::Config;
use crate::store::Store;
use crate::store::staff_audit::{self, Verification};

pub fn verify(config: &Config, json_mode: bool) -> anyhow::Result<()> {
    let store = Store::open(&config.database_path())?;
    let staff = store.read(|c| Ok(staff_audit::verify(c)?))?;
    if json_mode {
        out(format_args!("{}", verification_json(&staff)));
    } else {
        out(format_args!("{}", verification_text(&staff)));
    }
    if staff.broken.is_some() {
        // The report above is the command's answer; a broken chain is its failure.
        std::process::exit(1);
    }
    Ok(())
}

/// `{"ok": true, "records": N}`, or with `ok: false` the first broken record and an `error`
/// named like every command's refusal.
fn verification_json(v: &Verification) -> Value {
    match &v.broken {
        None => json!({"ok": true, "records": v.records}),
        Some(b) => json!({
            "ok": false,
            "records": v.records,
            "broken": {
                "seq": b.seq,
                "at": b.at,
                "problem": b.problem.name(),
                "message": b.problem.describe(),
            },
            "error": {"name": "AUDIT_CHAIN_BROKEN", "message": verification_text(v)},
        }),
    }
}

fn verification_text(v: &Verification) -> String {
    match &v.broken {
        None => format!("staff audit chain intact ({} records)", v.records),
        Some(b) => format!(
            "staff audit chain broken at record {}{}: {} ({}); {} records before it hold",
            b.seq,
            b.at.as_deref()
                .map(|at| format!(" ({at})"))
                .unwrap_or_default(),
            b.problem.describe(),
            b.problem.name(),
            v.records,
        ),
    }
}
