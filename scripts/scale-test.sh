#!/usr/bin/env bash
# Multi-instance test on PostgreSQL (issue 10 item 3): three servers on different ports over one
# throwaway database, requests spread round-robin across them by scripts/scale_test.py (ledger
# writers on one hot account, token revoke/verify across instances, cursor paging under
# concurrent inserts, concurrent identical webhook deliveries), then `server ledger-check`.
# Only correctness checks decide the exit status; the timings are printed in the summary.
#
# Usage: scripts/scale-test.sh [scale_test.py options, e.g. --writers 16 --phases ledger]
#   SCALE_PROFILE=release|debug   which build to run (default release)
#   SCALE_INSTANCES=3             how many servers
#   SCALE_ADMIN_URL               where to CREATE/DROP the database (default $TEST_POSTGRES_URL,
#                                 else postgres://postgres@127.0.0.1:5432/test)
#   SCALE_WORKERS                 WORKERS of each server (default: the server's, one per core)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

profile="${SCALE_PROFILE:-release}"
instances="${SCALE_INSTANCES:-3}"
admin="${SCALE_ADMIN_URL:-${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}}"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CI_TARGET_DIR}"
build_server "$profile" --locked

work=$(mktemp -d)
db="scale_$$"

cleanup() {
  local status=$?
  clean_up
  if [ "$status" -ne 0 ]; then
    for log in "$work"/server-*.log; do
      [ -s "$log" ] && { echo "--- last lines of $log"; tail -20 "$log"; }
    done
  fi
  rm -rf "$work"
}
trap cleanup EXIT

create_database "$admin" "$db"
export DATABASE_URL="$DB_URL"
export WEBHOOK_SECRET="whsec_scale_$$_$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export RUST_LOG="${RUST_LOG:-warn}"
# The token phase issues 300 tokens to one user (it measures revocation across instances, not
# the per-user cap, which tests/api/tokens.rs proves under concurrency).
export TOKEN_MAX_ACTIVE="${TOKEN_MAX_ACTIVE:-1000}"
if [ -n "${SCALE_WORKERS:-}" ]; then export WORKERS="$SCALE_WORKERS"; fi

started=$(date +%s%N)
"$BIN" migrate

# Free ports, all held at once so that no two are the same.
read -r -a ports <<<"$(free_port "$instances")"

# All instances start at once, then each is waited for.
bases=()
pids=()
for i in "${!ports[@]}"; do
  spawn_server "${ports[$i]}" "$work/server-$i.log" RUST_LOG="$RUST_LOG"
  pids+=("$SERVER_PID")
  bases+=("$BASE")
done
for i in "${!bases[@]}"; do
  wait_up "${bases[$i]}/health" "${pids[$i]}" && continue
  echo "instance $i (${bases[$i]}) did not become healthy"
  exit 1
done
echo "database $db, $instances instances ($profile build): ${bases[*]};" \
  "migrate and start-up $(( ($(date +%s%N) - started) / 1000000 )) ms"

python3 scripts/scale_test.py --bin "$BIN" "${bases[@]}" "$@"

errors=$(cat "$work"/server-*.log | grep -c ' ERROR ' || true)
if [ "$errors" -gt 0 ]; then
  echo "the servers logged $errors ERROR lines:"
  grep -h ' ERROR ' "$work"/server-*.log | head -20
  exit 1
fi
