#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests, from Debian's postgresql package.
#
#   scripts/pg.sh start [--owner-pid PID] [--durable] [--set NAME=VALUE]...
#                                           prints MANDATO_TEST_DATABASE_URL=... and
#                                           MANDATO_TEST_PG_DIR=... (for `eval`)
#   scripts/pg.sh stop DIR                  stops the cluster in DIR and removes DIR
#
# The cluster lives in a new temporary directory, listens on a free loopback port (and on a
# socket in that directory, never in /var/run), trusts local connections, and holds one empty
# database, `mandato_test`. With --owner-pid the cluster stops and is removed once that
# process has exited, however it ends (a test binary that panics or is killed).
#
# Tests do not need durability, so the cluster runs without fsync and without synchronous
# commits unless --durable is given (benchmarks measure durable commits: PostgreSQL's
# defaults, every commit flushed). --set passes a server setting (e.g. max_connections=400).
set -euo pipefail

log() { echo "pg.sh: $*" >&2; }

pg_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [[ -z "$dir" || ! -x "$dir/initdb" ]]; then
    if [[ $(id -u) -ne 0 ]]; then
      log "PostgreSQL is not installed: run scripts/setup.sh (or apt-get install postgresql) as root"
      exit 1
    fi
    log "installing Debian's postgresql package"
    DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2 \
      || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2; }
    dir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  echo "$dir"
}

# Runs a server command as the cluster's owner: `postgres` when we are root (initdb refuses
# root), ourselves otherwise.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

port_is_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

start() {
  local owner_pid=""
  local settings="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  local extra=""
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --owner-pid) owner_pid="$2"; shift 2 ;;
      --durable) settings=""; shift ;;
      --set) extra="$extra -c $2"; shift 2 ;;
      *) log "unknown option $1"; exit 2 ;;
    esac
  done
  local bin dir
  bin=$(pg_bin)
  dir=$(mktemp -d /tmp/mandato-pg.XXXXXX)
  chmod 700 "$dir"
  [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$dir"
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 \
    --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; rm -rf "$dir"; exit 1; }
  local port started=false
  for _ in $(seq 1 20); do
    port=$((20000 + RANDOM % 40000))
    port_is_free "$port" || continue
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir $settings$extra" \
      start >/dev/null 2>&1; then
      started=true
      break
    fi
  done
  if ! $started; then
    log "the server did not start:"
    cat "$dir/server.log" >&2 || true
    rm -rf "$dir"
    exit 1
  fi
  "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -qAt \
    -c "CREATE DATABASE mandato_test" >/dev/null
  if [[ -n "$owner_pid" ]]; then
    # Detached from our output, so whoever reads it is not kept waiting.
    nohup bash -c "while kill -0 $owner_pid 2>/dev/null; do sleep 1; done; '$0' stop '$dir'" \
      >/dev/null 2>&1 &
  fi
  echo "MANDATO_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:$port/mandato_test"
  echo "MANDATO_TEST_PG_DIR=$dir"
}

stop() {
  local dir="${1:?usage: pg.sh stop DIR}"
  [[ -d "$dir/data" ]] || { log "no cluster in $dir"; exit 1; }
  local bin
  bin=$(pg_bin)
  as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  *) echo "usage: $0 start [--owner-pid PID] [--durable] [--set NAME=VALUE]... | stop DIR" >&2; exit 2 ;;
esac
