#!/usr/bin/env bash
# Generates a Python client from the served /openapi.json with openapi-python-client, then
# drives the README walkthrough with it over real HTTP (tests/python_client/walkthrough.py):
# login with the JWE-encrypted password, a customer, a mandate, its lookup, activation through
# the sandbox, a charging run and its installments. The server is the debug binary on a
# temporary data directory and a free loopback port, with a commerce and an API key made by the
# CLI. Then the README's webhook receiver verifies the events of `mandato trigger payment.paid`.
# openapi-python-client, standardwebhooks and rfc8785 live in a venv under target/, pinned by
# tests/python_client/requirements.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --schemathesis
started=$(date +%s)

venv="$(pwd)/target/python-client-venv"
requirements=tests/python_client/requirements.txt
if [ ! -x "$venv/bin/openapi-python-client" ] || ! cmp -s "$requirements" "$venv/requirements.txt"; then
  echo "== python client: installing $(tr '\n' ' ' <"$requirements")into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/requirements.txt"
fi

cargo build --locked --bin mandato
mandato="$(pwd)/target/debug/mandato"
work="$(pwd)/target/python-client"
rm -rf "$work"
mkdir -p "$work"
data="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$data"
}
trap cleanup EXIT

export MANDATO_DATA_DIR="$data"
export MANDATO_COMMERCE=76123456-0
export MANDATO_PASSWORD="$(python3 -c 'import secrets; print(secrets.token_urlsafe(18))')"
"$mandato" commerce add --code "$MANDATO_COMMERCE" --name "Gimnasio Los Andes" \
  --password-stdin <<<"$MANDATO_PASSWORD" >"$work/setup.log" 2>&1
MANDATO_API_KEY="$("$mandato" --json apikey create 2>>"$work/setup.log" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["apiKey"])')"
export MANDATO_API_KEY

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export MANDATO_URL="http://127.0.0.1:$port"
# The walkthrough charges installments due today and `trigger payment.paid` charges today: on
# a weekend or holiday the Chilean calendar would move those charges to the next business day,
# so this run charges on any date (the calendar has its own tests).
MANDATO_BUSINESS_DAYS=every-day "$mandato" serve --listen "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
server_pid=$!
# The merchant's document (/api/v1); the staff API is documented apart (/admin/openapi.json).
# Paths naming their own server would be another API's: none are expected, any is left out.
python3 - "$MANDATO_URL/openapi.json" "$work/openapi.json" <<'PY'
import json, sys, time, urllib.request
for _ in range(300):
    try:
        document = json.load(urllib.request.urlopen(sys.argv[1], timeout=2))
        break
    except OSError:
        time.sleep(0.2)
else:
    sys.exit("the server did not answer within 60 s")
document["paths"] = {p: i for p, i in document["paths"].items() if "servers" not in i}
json.dump(document, open(sys.argv[2], "w"))
PY

echo "== python client: generating from $MANDATO_URL/openapi.json"
# --fail-on-warning: a part of the document the generator cannot turn into code is a finding.
"$venv/bin/openapi-python-client" generate --path "$work/openapi.json" \
  --config tests/python_client/config.yaml --output-path "$work/mandato_client" \
  --meta none --fail-on-warning
echo "== python client: the README walkthrough against $MANDATO_URL"
status=0
PYTHONPATH="$work" "$venv/bin/python" tests/python_client/walkthrough.py || status=$?
if [ "$status" -ne 0 ]; then
  echo "python client: the walkthrough failed (exit $status); the server's log:" >&2
  tail -n 40 "$work/serve.log" >&2
fi
if [ "$status" -eq 0 ]; then
  # The README's "Receive your first webhook" receiver, taken from the README as it is, gets
  # the events of `mandato trigger payment.paid` and verifies both signatures of each.
  echo "== the README's webhook receiver"
  python3 - README.md "$work/receiver.py" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
block = re.search(r"```python\n(# receiver\.py.*?)```", text, re.S)
if not block:
    sys.exit("README: no receiver.py block")
open(sys.argv[2], "w").write(block.group(1))
PY
  "$mandato" dev-cert >>"$work/setup.log" 2>&1
  "$mandato" commerce set-webhook --code "$MANDATO_COMMERCE" --url https://localhost:8443/hooks \
    >>"$work/setup.log" 2>&1
  WEBHOOK_SECRET="$("$mandato" --json commerce show "$MANDATO_COMMERCE" --secret 2>>"$work/setup.log" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["webhookSecret"])')"
  CERTS="$data/dev-cert" WEBHOOK_SECRET="$WEBHOOK_SECRET" "$venv/bin/python" "$work/receiver.py" \
    >"$work/receiver.log" 2>&1 &
  receiver_pid=$!
  sleep 1
  "$mandato" --json trigger payment.paid 2>>"$work/setup.log" >"$work/trigger.json"
  status=1
  for _ in $(seq 150); do
    if python3 - "$work/trigger.json" "$work/receiver.log" <<'PY'
import json, sys
made = {e["eventId"] for e in json.load(open(sys.argv[1]))["events"]}
verified = {l.split()[0] for l in open(sys.argv[2]) if l.rstrip().endswith(" verified")}
sys.exit(0 if made and made <= verified else 1)
PY
    then
      status=0
      break
    fi
    sleep 0.2
  done
  kill "$receiver_pid" 2>/dev/null || true
  wait "$receiver_pid" 2>/dev/null || true
  if [ "$status" -ne 0 ]; then
    echo "the README's receiver did not verify every event of the trigger; its log:" >&2
    cat "$work/receiver.log" >&2
    tail -n 40 "$work/serve.log" >&2
  else
    echo "README receiver: $(grep -c ' verified$' "$work/receiver.log") events verified"
  fi
fi
echo "python client: done in $(($(date +%s) - started)) s"
exit "$status"
