#!/usr/bin/env bash
# Installs what building and testing mandato needs on a bare Debian machine, and nothing that
# is already there. Safe to run any number of times.
set -euo pipefail

# `--browser` also installs Debian's Chromium for the UI's browser tests (scripts/test.sh);
# `--desktop` what building and testing Mandato Desk needs (scripts/desktop-test.sh).
with_browser=false
with_desktop=false
# `--package` what building and testing its installers needs (scripts/package.sh,
# scripts/package-test.sh): the Tauri command line from npm and desktop-file-validate.
with_package=false
# `--fuzz` installs cargo-fuzz (scripts/fuzz.sh); `--schemathesis` Python's venv module
# (scripts/schemathesis.sh installs schemathesis itself into a venv under target/).
with_fuzz=false
with_schemathesis=false
for arg in "$@"; do
  case "$arg" in
    --browser) with_browser=true ;;
    --desktop) with_desktop=true ;;
    --package) with_package=true ;;
    --fuzz) with_fuzz=true ;;
    --schemathesis) with_schemathesis=true ;;
    *) echo "setup: unknown option $arg" >&2; exit 2 ;;
  esac
done

# System packages: OpenSSL headers and pkg-config for the JWE crate (josekit links OpenSSL);
# poppler-utils (pdftotext, pdfinfo, pdffonts, pdftoppm) for the tests that read the PDFs back.
apt_packages=(libssl-dev pkg-config poppler-utils)
# PostgreSQL's server for the tests of the PostgreSQL backend (scripts/pg.sh starts a
# throwaway cluster of its own; the package's default cluster is not used).
apt_packages+=(postgresql)
# Mandato Desk: GTK, WebKitGTK and the tray's AppIndicator to build and run it; Xvfb,
# ImageMagick (screenshots and their colour count), WebKitWebDriver, a D-Bus session and
# xwininfo (its native dialogs) to test it in a window.
if $with_desktop; then
  apt_packages+=(
    libwebkit2gtk-4.1-dev libgtk-3-dev libsoup-3.0-dev libjavascriptcoregtk-4.1-dev
    librsvg2-dev libayatana-appindicator3-dev
    xvfb xauth imagemagick webkit2gtk-driver dbus-daemon x11-utils
  )
fi

if $with_package; then
  apt_packages+=(desktop-file-utils binutils)
fi

missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
# Node.js and npm build the staff UI (machines of this project ship Node 20 with npm).
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# The browser tests drive Debian's Chromium; a test tool never downloads a browser of its own.
if $with_browser && ! command -v chromium >/dev/null 2>&1; then
  missing+=(chromium)
fi
# The audit-chain browser test tampers with the database through the sqlite3 shell.
if $with_browser && ! command -v sqlite3 >/dev/null 2>&1; then
  missing+=(sqlite3)
fi
# Debian's python3 makes venvs only with python3-venv (ensurepip) installed.
if $with_schemathesis && ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  missing+=(python3-venv)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

# The Rust toolchain's own components used by the checks.
if ! cargo fmt --version >/dev/null 2>&1; then
  rustup component add rustfmt
fi
if ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add clippy
fi
# tauri-driver (a Rust crate) drives Debian's WebKitWebDriver for the desktop test.
if $with_desktop && ! command -v tauri-driver >/dev/null 2>&1 &&
  [ ! -x "${CARGO_HOME:-$HOME/.cargo}/bin/tauri-driver" ]; then
  echo "setup: cargo install tauri-driver" >&2
  cargo install tauri-driver --locked
fi

# cargo-fuzz drives libFuzzer for scripts/fuzz.sh.
if $with_fuzz && ! cargo fuzz --version >/dev/null 2>&1; then
  echo "setup: cargo install cargo-fuzz" >&2
  cargo install cargo-fuzz --locked
fi

# The UI's npm packages, exactly as ui/package-lock.json pins them, when they are missing or
# the lock file changed since they were installed.
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -f "$here/ui/node_modules/.package-lock.json" ] ||
  [ "$here/ui/package-lock.json" -nt "$here/ui/node_modules/.package-lock.json" ]; then
  echo "setup: installing the UI's npm packages (npm ci)" >&2
  (cd "$here/ui" && npm ci --no-audit --no-fund --loglevel=error)
fi

# The Tauri command line that bundles the installers: prebuilt, from npm, exactly as
# src-tauri/package-lock.json pins it.
if $with_package && { [ ! -f "$here/src-tauri/node_modules/.package-lock.json" ] ||
  [ "$here/src-tauri/package-lock.json" -nt "$here/src-tauri/node_modules/.package-lock.json" ]; }; then
  echo "setup: installing the Tauri command line (npm ci in src-tauri/)" >&2
  (cd "$here/src-tauri" && npm ci --no-audit --no-fund --loglevel=error)
fi
