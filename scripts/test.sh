#!/usr/bin/env bash
# Every check that must pass before anything lands: formatting, lints, and all tests (unit
# tests and the integration tests over real HTTP).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --locked
