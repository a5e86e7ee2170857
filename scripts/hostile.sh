#!/usr/bin/env bash
# Hostile traffic (issue 18): what one client without a credential can do to the server. Each
# scenario starts a fresh server on a fresh database, on SQLite and then on PostgreSQL, attacks
# it (a decompression bomb, slow bodies, many slow connections, oversized deposit payloads and
# the pages they make, huge webhook pages, an unauthenticated V1 flood, rate-limited V1 calls,
# X-Forwarded-For rotation, 15,000 distinct clients, cross-site non-JSON POSTs, percent-encoded
# V1 paths) and checks the bounded outcome: the status and problem document, rows written, open
# descriptors, and the server's peak memory from /proc (under 128 MiB). scripts/hostile.py does
# the work; see its docstring for every scenario. Each prints one PASS/FAIL/SKIPPED line, then a
# summary table. Exit status 1 if any scenario FAILED (SKIPPED does not fail: it says why).
#
# Usage: scripts/hostile.sh [SCENARIO ...]       (default: all; names as in the summary)
#   HOSTILE_PROFILE=debug|release  which build to run (default debug)
#   HOSTILE_BUILD=0                use the binary already built (no cargo)
#   HOSTILE_REPORT=FILE            also write the summary as Markdown to FILE
#   HOSTILE_BACKENDS=sqlite,postgres
#   HOSTILE_PG_ADMIN_URL           the shared PostgreSQL where throwaway databases are created
#                                  and dropped (default postgres://postgres@127.0.0.1:5432/postgres)
#   HOSTILE_RSS_GUARD_MIB=1536     a server past this is killed (and its scenario fails)
#   HOSTILE_FLOOD=5000  HOSTILE_CLIENTS=15000  HOSTILE_RUST_LOG=warn
#   HOSTILE_KEEP=1                 keep the work directory (always kept when a scenario failed)
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${HOSTILE_PROFILE:-debug}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/notes-service-target}"
if [ "${HOSTILE_BUILD:-1}" != 0 ]; then
  if [ "$profile" = release ]; then
    cargo build --quiet --release -p server --bin server
  else
    cargo build --quiet -p server --bin server
  fi
fi
BIN="$CARGO_TARGET_DIR/$profile/server"
if [ ! -x "$BIN" ]; then
  echo "no server binary at $BIN (HOSTILE_BUILD=0 needs a build first)"
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/hostile.XXXXXX")
run_id=$$
admin="${HOSTILE_PG_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

# hostile.py stops its servers and drops its databases; these are backstops for when it was killed.
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
  if command -v psql >/dev/null; then
    for db in $(PGCONNECT_TIMEOUT=5 psql -X -At -d "$admin" \
      -c "SELECT datname FROM pg_database WHERE datname LIKE 'hostile\\_${run_id}\\_%'" 2>/dev/null); do
      psql -X -q -d "$admin" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true
    done
  fi
  if [ "$status" -eq 0 ] && [ "${HOSTILE_KEEP:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "work directory kept: $work (server logs under each scenario's directory)"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "hostile traffic with $BIN ($profile build), work directory $work"
status=0
python3 scripts/hostile.py --bin "$BIN" --work "$work" --run-id "$run_id" "$@" || status=$?
exit "$status"
