#!/usr/bin/env bash
# Installs what building and testing mandato needs on a bare Debian machine, and nothing that
# is already there. Safe to run any number of times.
set -euo pipefail

# `--browser` also installs Debian's Chromium for the UI's browser tests (scripts/test.sh).
with_browser=false
[ "${1:-}" = "--browser" ] && with_browser=true

# System packages: OpenSSL headers and pkg-config for the JWE crate (josekit links OpenSSL).
apt_packages=(libssl-dev pkg-config)

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

# The UI's npm packages, exactly as ui/package-lock.json pins them, when they are missing or
# the lock file changed since they were installed.
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -f "$here/ui/node_modules/.package-lock.json" ] ||
  [ "$here/ui/package-lock.json" -nt "$here/ui/node_modules/.package-lock.json" ]; then
  echo "setup: installing the UI's npm packages (npm ci)" >&2
  (cd "$here/ui" && npm ci --no-audit --no-fund --loglevel=error)
fi
