#!/usr/bin/env bash
# Builds Mandato Desk (src-tauri/) and drives it end to end in its real window: installs the
# Debian packages Tauri needs and tauri-driver when they are missing (scripts/setup.sh
# --desktop), builds the UI and the desktop binary, lints the desktop crate, then runs
# src-tauri/e2e/desk.mjs under Xvfb and a D-Bus session. Safe to run any number of times; scripts/test.sh ends with it.
set -euo pipefail
cd "$(dirname "$0")/.."
here="$(pwd)"

# The Debian packages Tauri needs, tauri-driver, and the UI's npm packages.
scripts/setup.sh --desktop
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

# The engine embeds ui/dist (rust-embed; debug builds read it from disk at run time).
echo "== desk: ui build"
(cd ui && npm run build --silent)

echo "== desk: cargo build -p mandato-desk"
started=$(date +%s)
cargo build --locked -p mandato-desk
echo "desk: debug build took $(($(date +%s) - started)) s; binary $(du -h target/debug/mandato-desk | cut -f1)"
# The test takes a backup with the mandato command line beside the app, then restores it.
cargo build --locked --bin mandato

echo "== desk: cargo clippy -p mandato-desk"
cargo clippy -p mandato-desk --all-targets --locked -- -D warnings

echo "== desk: end to end in the real window (Xvfb, tauri-driver, WebKitWebDriver)"
export TAURI_DRIVER="$(command -v tauri-driver)"
xvfb-run -a -s "-screen 0 1280x800x24" \
  dbus-run-session -- node src-tauri/e2e/desk.mjs "$here/target/debug/mandato-desk"
echo "Desktop screenshots: $here/target/desk-screenshots/"
