#!/usr/bin/env bash
# Builds Mandato Desk (src-tauri/) and drives it end to end in its real window: installs the
# Debian packages Tauri needs and tauri-driver when they are missing, builds the UI and the
# desktop binary, lints the desktop crate, then runs src-tauri/e2e/desk.mjs under Xvfb and a
# D-Bus session. Safe to run any number of times; scripts/test.sh ends with it.
set -euo pipefail
cd "$(dirname "$0")/.."
here="$(pwd)"

# GTK, WebKitGTK and the tray's AppIndicator to build and run the app; Xvfb, ImageMagick
# (screenshots and their colour count), WebKitWebDriver and a D-Bus session to test it.
apt_packages=(
  libwebkit2gtk-4.1-dev libgtk-3-dev libsoup-3.0-dev libjavascriptcoregtk-4.1-dev
  librsvg2-dev libayatana-appindicator3-dev
  xvfb xauth imagemagick webkit2gtk-driver dbus-daemon
  libssl-dev pkg-config
)
missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  echo "desktop-test: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

# tauri-driver is a Rust crate; it runs Debian's WebKitWebDriver.
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
if ! command -v tauri-driver >/dev/null 2>&1; then
  echo "desktop-test: cargo install tauri-driver" >&2
  cargo install tauri-driver --locked
fi

# The UI's npm packages, then the UI itself: the engine embeds ui/dist (rust-embed; debug
# builds read it from disk at run time).
scripts/setup.sh
echo "== desk: ui build"
(cd ui && npm run build --silent)

echo "== desk: cargo build -p mandato-desk"
started=$(date +%s)
cargo build --locked -p mandato-desk
echo "desk: debug build took $(($(date +%s) - started)) s; binary $(du -h target/debug/mandato-desk | cut -f1)"

echo "== desk: cargo clippy -p mandato-desk"
cargo clippy -p mandato-desk --all-targets --locked -- -D warnings

echo "== desk: end to end in the real window (Xvfb, tauri-driver, WebKitWebDriver)"
export TAURI_DRIVER="$(command -v tauri-driver)"
xvfb-run -a -s "-screen 0 1280x800x24" \
  dbus-run-session -- node src-tauri/e2e/desk.mjs "$here/target/debug/mandato-desk"
echo "Desktop screenshots: $here/target/desk-screenshots/"
