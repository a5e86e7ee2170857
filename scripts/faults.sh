#!/usr/bin/env bash
# Fault injection: each scenario starts a fresh server on a fresh database under mixed writes on
# every write route, injects one fault (SIGKILL, SIGTERM, a replaced SQLite file, `chattr +i`, a
# read-only start, a full disk, a PostgreSQL outage, terminated sessions, a table lock), removes
# it and checks what the server promised: every 2xx was committed and reads back as answered,
# storage faults are 503/507 problem documents with Retry-After (never a 500, never a hang),
# /health says 503 while writes would be refused, and the same process takes writes again once
# the fault is gone. scripts/faults.py does the work; see its docstring for every scenario.
# Scenarios run one after the other; each prints one PASS/FAIL/SKIPPED line, then a summary.
# Exit status 1 if any scenario FAILED (SKIPPED does not fail: it says why on its line).
#
# Usage: scripts/faults.sh [SCENARIO ...]        (default: all; names as in the summary)
#   FAULTS_PROFILE=debug|release   which build to run (default debug)
#   FAULTS_BUILD=0                 use the binary already built (no cargo)
#   FAULTS_REPORT=FILE             also write the summary as Markdown to FILE
#   FAULTS_PG_ADMIN_URL            the shared PostgreSQL where throwaway databases are created
#                                  and dropped (default postgres://postgres@127.0.0.1:5432/postgres)
#   FAULTS_THREADS=4  FAULTS_KILL_ROUNDS=3  FAULTS_SEED  FAULTS_RUST_LOG=warn
#   FAULTS_KEEP=1                  keep the work directory (always kept when a scenario failed)
# Root is needed for chattr +i and the tmpfs mount (those scenarios are SKIPPED otherwise); the
# private PostgreSQL cluster of postgres-outage runs as the postgres OS user when root.
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${FAULTS_PROFILE:-debug}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/notes-service-target}"
if [ "${FAULTS_BUILD:-1}" != 0 ]; then
  if [ "$profile" = release ]; then
    cargo build --quiet --release -p server --bin server
  else
    cargo build --quiet -p server --bin server
  fi
fi
BIN="$CARGO_TARGET_DIR/$profile/server"
if [ ! -x "$BIN" ]; then
  echo "no server binary at $BIN (FAULTS_BUILD=0 needs a build first)"
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/faults.XXXXXX")
run_id=$$
admin="${FAULTS_PG_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

# faults.py undoes every fault it injects; these are backstops for when it was killed.
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [ -f "$work/pids" ]; then
    local bin p
    bin=$(readlink -f "$BIN")
    while read -r p; do
      # Only a server this run started (the pid may have been reused since).
      if [ "$(readlink "/proc/$p/exe" 2>/dev/null || true)" = "$bin" ]; then kill -KILL "$p" || true; fi
    done <"$work/pids"
  fi
  awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/mounts | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" || true
  done
  find "$work" -name postmaster.pid 2>/dev/null | while read -r pidfile; do
    data=$(dirname "$pidfile")
    ctl=$(ls /usr/lib/postgresql/*/bin/pg_ctl 2>/dev/null | tail -1)
    ctl=${ctl:-pg_ctl}
    if [ "$(id -u)" = 0 ]; then
      runuser -u postgres -- "$ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
    else
      "$ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
    fi
  done
  if command -v psql >/dev/null; then
    for db in $(PGCONNECT_TIMEOUT=5 psql -X -At -d "$admin" \
      -c "SELECT datname FROM pg_database WHERE datname LIKE 'faults\\_${run_id}\\_%'" 2>/dev/null); do
      psql -X -q -d "$admin" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true
    done
  fi
  if [ "$(id -u)" = 0 ]; then chattr -R -i "$work" 2>/dev/null || true; fi
  if [ "$status" -eq 0 ] && [ "${FAULTS_KEEP:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "work directory kept: $work (server logs under each scenario's directory)"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "fault injection with $BIN ($profile build), work directory $work"
status=0
python3 scripts/faults.py --bin "$BIN" --work "$work" --run-id "$run_id" "$@" || status=$?
exit "$status"
