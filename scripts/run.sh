#!/usr/bin/env bash
# Runs mandato with its embedded defaults: http://127.0.0.1:7420, data in ~/.local/share/mandato.
# Extra arguments go to `mandato serve` (e.g. --listen 127.0.0.1:8080).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec cargo run --release --bin mandato -- serve "$@"
