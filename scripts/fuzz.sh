#!/usr/bin/env bash
# Fuzzes the parsers that read hostile input (fuzz/: RUTs, the mandate and signature bodies,
# the login JWE, uploaded PDFs) with libFuzzer through cargo-fuzz, SECONDS per target
# (default 60, as in CI; by hand, 3600 finds more). Fails when any target crashes, hangs past
# its timeout or outgrows its memory limit; the input that did it is in fuzz/artifacts/TARGET/
# and replays with `RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none --target-dir target/fuzz
# TARGET fuzz/artifacts/TARGET/FILE` (from the repository root, in fuzz/).
#
# cargo-fuzz needs nightly-only compiler flags (-Z...); RUSTC_BOOTSTRAP=1 lets the one stable
# toolchain accept them. The code is safe Rust, so it runs without AddressSanitizer
# (--sanitizer none): faster, and independent of the sanitizer runtime being installed.
# Corpora: the committed seeds in fuzz/corpus/seeds/TARGET, what libFuzzer adds in
# fuzz/corpus/TARGET (kept between runs, not committed).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
case "$seconds" in
  '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS per target]" >&2; exit 2 ;;
esac
scripts/setup.sh --fuzz

export RUSTC_BOOTSTRAP=1
root="$(pwd)"
target_dir="$root/target/fuzz"
logs="$target_dir/logs"
mkdir -p "$logs"
targets=(rut mandate_body signature_body jwe_compact pdf_intake)
common=(--sanitizer none --target-dir "$target_dir")

echo "== fuzz: cargo fmt --check, build (${targets[*]})"
(cd fuzz && cargo fmt -- --check)
(cd fuzz && cargo fuzz build "${common[@]}")

# Per target: the largest input tried, the time one input may take (a slower one is a
# finding), and the memory the process may hold (RSS, MB).
limits() {
  case "$1" in
    pdf_intake) echo "-max_len=65536 -timeout=10 -rss_limit_mb=1024" ;;
    signature_body) echo "-max_len=16384 -timeout=10 -rss_limit_mb=1024" ;;
    mandate_body) echo "-max_len=8192 -timeout=5 -rss_limit_mb=512" ;;
    *) echo "-max_len=4096 -timeout=5 -rss_limit_mb=512" ;;
  esac
}

failed=()
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  log="$logs/$t.log"
  echo "== fuzz: $t for ${seconds}s"
  # shellcheck disable=SC2046 # limits() prints separate flags on purpose.
  if (cd fuzz && cargo fuzz run "${common[@]}" "$t" "corpus/$t" "corpus/seeds/$t" -- \
    -max_total_time="$seconds" -print_final_stats=1 $(limits "$t") \
    -artifact_prefix="artifacts/$t/") >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
    failed+=("$t")
  fi
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  per_second="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)"
  corpus="$(find "fuzz/corpus/$t" -type f | wc -l)"
  echo "fuzz: $t $status: ${execs:-?} executions (${per_second:-?}/s), corpus $corpus inputs"
  if [ "$status" = FAILED ]; then
    grep -E "^(==[0-9]+== ?ERROR|thread .* panicked|SUMMARY|artifact_prefix|Test unit written)" "$log" || true
    tail -n 40 "$log"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]} (inputs in fuzz/artifacts/, logs in $logs/)" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, no findings"
