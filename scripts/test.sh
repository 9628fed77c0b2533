#!/usr/bin/env bash
# Every check that must pass before anything lands: formatting, lints, and all tests (unit
# tests and the integration tests over real HTTP, on SQLite and again on PostgreSQL), then the staff UI's: its API types
# regenerated from the built server and checked by tsc, Vitest, and the browser tests; last, the
# desktop app (scripts/desktop-test.sh: its build, lints, and its end-to-end test in a window),
# and its .deb (scripts/package-test.sh: built, installed, launched, removed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --browser

echo "== ui: build"
(cd ui && npm run build --silent)
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --locked
echo "== cargo test: the integration suite again, every engine on PostgreSQL (scripts/pg.sh)"
MANDATO_TEST_BACKEND=postgres cargo test --locked --test api
echo "== ui: API types from the built server's /openapi.json, then tsc"
cargo build --locked --bin mandato
(cd ui && npm run gen:api --silent && npm run typecheck --silent)
echo "== ui: vitest"
(cd ui && npm test --silent)
echo "== ui: browser tests (Chromium against target/debug/mandato)"
(cd ui && npm run e2e --silent)
echo "UI screenshots: $(pwd)/target/ui-screenshots/"
echo "== schemathesis over /openapi.json against target/debug/mandato (scripts/schemathesis.sh)"
scripts/schemathesis.sh 25
echo "== a generated Python client drives the README walkthrough (scripts/python-client.sh)"
scripts/python-client.sh
echo "== fuzzing: every target of fuzz/ for 60 s (scripts/fuzz.sh)"
scripts/fuzz.sh 60
echo "== desktop app: build, clippy, end to end (scripts/desktop-test.sh)"
scripts/desktop-test.sh
echo "== desktop package: build, install, launch, remove the .deb (scripts/package-test.sh)"
scripts/package-test.sh
