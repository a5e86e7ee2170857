#!/usr/bin/env bash
# `just replica-test`: reads from a real PostgreSQL streaming standby with Consistency-Token
# (DATABASE_REPLICA_URLS). scripts/replica_test.py starts a private primary and a streaming
# standby (PostgreSQL 15 from /usr/lib/postgresql/15/bin, as the postgres OS user, on free ports
# in 27000-27999, under a temporary work directory; never the machine's own cluster), migrates,
# and runs write->read pairs over notes, the ledger and webhooks through the server: with tokens
# under load (0 stale, >= 95% served by the standby), with 300 ms of injected replay delay (0
# stale, the primary answers within the budget), a revoked token verified with an older token,
# the standby stopped and started under load, REPLICA_READS=eventual (its stale reads detected),
# and a switchover (primary stopped, standby promoted behind a relay). A table per phase is
# printed; exit status 1 if any check fails (see scripts/replica_test.py's docstring).
#
# Usage: scripts/replica-test.sh [replica_test.py options, e.g. --phases tokens,delay --pairs 3000]
#   REPLICA_PROFILE=release|debug   which build to run (default release)
#   REPLICA_BUILD=0                 no build: use $CARGO_TARGET_DIR/<profile>/server
#   SERVER_BIN=PATH                 use this binary (no build)
#   REPLICA_KEEP=1                  keep the work directory (always kept when the run failed)
# Needs root (PostgreSQL runs as the postgres OS user through runuser) and psql.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

pg_bin=/usr/lib/postgresql/15/bin
for tool in initdb pg_ctl pg_basebackup postgres; do
  if [ ! -x "$pg_bin/$tool" ]; then
    echo "the PostgreSQL 15 server binaries are missing ($pg_bin/$tool)"
    exit 1
  fi
done
if ! command -v psql >/dev/null || ! id postgres >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
  echo "needs root, psql and the postgres OS user"
  exit 1
fi

server_binary REPLICA release --locked

work=$(mktemp -d "${TMPDIR:-/tmp}/replica-test.XXXXXX")
chown postgres: "$work"

# replica_test.py stops everything it started; this is the backstop for when it was killed. Only
# processes of this run: the servers it listed (checked to be $BIN) and each cluster's postmaster
# and its children (checked to run from the work directory).
backstop() {
  local status=$? p pm pidfile pids=()
  trap - EXIT INT TERM
  if [ -f "$work/pids" ]; then
    while read -r p; do
      [ "$(readlink "/proc/$p/exe" 2>/dev/null || true)" = "$BIN" ] && kill -KILL "$p" 2>/dev/null
    done <"$work/pids"
  fi
  for pidfile in "$work"/primary/postmaster.pid "$work"/standby/postmaster.pid; do
    [ -f "$pidfile" ] || continue
    pm=$(head -1 "$pidfile")
    tr '\0' ' ' <"/proc/$pm/cmdline" 2>/dev/null | grep -qF "$work" || continue
    pids+=("$pm")
    for p in /proc/[0-9]*; do
      p=${p#/proc/}
      [ "$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null)" = "$pm" ] && pids+=("$p")
    done
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  if [ "$status" -eq 0 ] && [ "${REPLICA_KEEP:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "work directory kept: $work (server-*.log, primary.log, standby.log)"
  fi
  exit "$status"
}
trap backstop EXIT
trap 'exit 130' INT TERM

echo "replica test with $BIN, work directory $work"
python3 scripts/replica_test.py --bin "$BIN" --work "$work" "$@"
