#!/usr/bin/env bash
# Runs mandato with its embedded defaults: http://127.0.0.1:7420, data in ~/.local/share/mandato.
# Extra arguments go to `mandato serve` (e.g. --listen 127.0.0.1:8080).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The staff UI is embedded in the release binary: build it first.
(cd ui && npm run build --silent)
exec cargo run --release --bin mandato -- serve "$@"
