//! `mandato audit verify`: recomputes the staff audit's hash chain and names the first record
//! that does not hold, then the audit trail of every signature process. Exit 0 when all of
//! them hold, 1 otherwise.

use serde_json::{Value, json};

use super::out;
use crate::config::Config;
use crate::esign::audit::{self as signature_audit, Trails};
use crate::store::staff_audit::{self, Verification};

pub fn verify(config: &Config, json_mode: bool) -> anyhow::Result<()> {
    let database = config.database_path();
    // Opening a missing database would make an empty one, whose chain is trivially intact.
    if !config.uses_postgres() && !database.exists() {
        return Err(super::dev::fail(
            "DATABASE_NOT_FOUND",
            format!("no database at {}", database.display()),
        ));
    }
    let store = config.open_store()?;
    // One read transaction: both checks see the same state of the file.
    let (staff, trails) = store.read(|c| {
        let staff = staff_audit::verify(c)?;
        Ok((staff, signature_audit::verify_all(c)?))
    })?;
    let ok = staff.broken.is_none() && trails.broken.is_empty();
    if json_mode {
        out(format_args!("{}", report_json(ok, &staff, &trails)));
    } else {
        out(format_args!("{}", staff_text(&staff)));
        out(format_args!("{}", trails_text(&trails)));
    }
    if !ok {
        // The report above is the command's answer; a broken chain is its failure.
        std::process::exit(1);
    }
    Ok(())
}

/// `{"ok": true, "records": N, "signatureProcesses": {...}}`; when something does not hold,
/// `ok: false`, the staff chain's first broken record (`broken`), the processes whose trail is
/// broken, and an `error` named like every command's refusal.
fn report_json(ok: bool, staff: &Verification, trails: &Trails) -> Value {
    let mut report = json!({
        "ok": ok,
        "records": staff.records,
        "signatureProcesses": {
            "checked": trails.processes,
            "broken": trails.broken.iter().map(|b| json!({
                "processId": b.process_id,
                "position": b.position,
            })).collect::<Vec<_>>(),
        },
    });
    if let Some(b) = &staff.broken {
        report["broken"] = json!({
            "seq": b.seq,
            "at": b.at,
            "problem": b.problem.name(),
            "message": b.problem.describe(),
        });
    }
    if !ok {
        let message = match staff.broken {
            Some(_) => staff_text(staff),
            None => trails_text(trails),
        };
        report["error"] = json!({"name": "AUDIT_CHAIN_BROKEN", "message": message});
    }
    report
}

fn staff_text(v: &Verification) -> String {
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

fn trails_text(trails: &Trails) -> String {
    let mut text = format!(
        "signature process trails: {} checked, {} broken",
        trails.processes,
        trails.broken.len()
    );
    for b in &trails.broken {
        text.push_str(&format!(
            "\nsignature process {}: trail broken at act {}",
            b.process_id, b.position
        ));
    }
    text
}
