//! Helpers shared by the benchmarks: environment knobs, reproducible ids for bulk fills, the
//! machine's load and disk, rounding, and where results are written.
//!
//! Each benchmark is its own binary and uses a part of this module.
#![allow(dead_code)]

pub mod pg;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, TimeZone, Utc};

pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// SplitMix64: spreads sequence numbers into well-mixed bits, so ids are reproducible from
/// their sequence number instead of held in memory.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A UUIDv7 id as `ids::new_id` makes them (`man_0193...`), reproducible from its inputs.
pub fn id7(prefix: &str, ms: i64, kind: u8, a: u64, b: u8) -> String {
    let h = mix(a ^ ((kind as u64) << 56));
    let mut r = [0u8; 10];
    r[0] = kind;
    r[1] = b; // kept whole by the UUIDv7 layout: installments of one mandate share `ms`.
    r[2..10].copy_from_slice(&h.to_be_bytes());
    let u = uuid::Builder::from_unix_timestamp_millis(ms as u64, &r).into_uuid();
    format!("{prefix}_{}", u.simple())
}

/// An RFC 3339 timestamp with milliseconds, as the store writes them.
pub fn ts(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .expect("valid time")
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// utime + stime of a `/proc/.../stat` line.
pub fn stat_ticks(stat: &str) -> Option<u64> {
    // Fields after the command name start at field 3 (state); utime and stime are 14 and 15.
    let v: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(v.get(11)?.parse::<u64>().ok()? + v.get(12)?.parse::<u64>().ok()?)
}

/// Busy ticks of the whole machine since boot (user, nice, system, irq, softirq, steal).
pub fn machine_busy_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let get = |i: usize| f.get(i).copied().unwrap_or(0);
    get(0) + get(1) + get(2) + get(5) + get(6) + get(7)
}

/// Ticks per second of the `/proc` CPU counters (USER_HZ).
pub const TICKS_PER_S: f64 = 100.0;

/// Waits (up to `limit`) until the rest of the machine is nearly idle, so that figures are not
/// taken while another build runs. `other_cores` measures the other processes' load over about
/// a second; the load seen last is returned, in cores.
pub fn wait_for_quiet(limit: Duration, mut other_cores: impl FnMut() -> f64) -> f64 {
    let started = Instant::now();
    loop {
        let other = other_cores();
        if other < 0.15 || started.elapsed() >= limit {
            return other;
        }
        eprintln!("waiting for a quiet machine: other processes use {other:.2} cores");
    }
}

/// Median latency of a 4 KiB write + fdatasync in `dir`, over about `secs`: the price of one
/// durable commit on this disk right now (SQLite with synchronous=FULL in WAL mode syncs the
/// WAL once per commit).
pub fn fsync_probe(dir: &Path, secs: f64) -> f64 {
    use std::io::{Seek, SeekFrom, Write};
    let path = dir.join("bench-fsync-probe");
    let mut f = std::fs::File::create(&path).expect("probe file");
    let block = [7u8; 4096];
    let mut lat = Vec::new();
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < secs && lat.len() < 5000 {
        let t = Instant::now();
        f.seek(SeekFrom::Start((lat.len() % 64) as u64 * 4096))
            .unwrap();
        f.write_all(&block).unwrap();
        f.sync_data().unwrap();
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    drop(f);
    let _ = std::fs::remove_file(&path);
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    lat[lat.len() / 2]
}

pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// `target/<file_name>` (or under `CARGO_TARGET_DIR`).
pub fn results_path(file_name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join(file_name)
}
