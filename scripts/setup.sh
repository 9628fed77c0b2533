#!/usr/bin/env bash
# Installs what building and testing mandato needs on a bare Debian machine, and nothing that
# is already there. Safe to run any number of times.
set -euo pipefail

# System packages: OpenSSL headers and pkg-config for the JWE crate (josekit links OpenSSL).
apt_packages=(libssl-dev pkg-config)

missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
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
