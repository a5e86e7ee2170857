#!/usr/bin/env bash
# `just backup-test`: PostgreSQL backups restore. A server on a throwaway database takes a write
# load (notes and deposits); pg_dump runs in the middle of it; the dump is restored with
# pg_restore into a fresh database, which must pass `server ledger-check` and hold every note
# acknowledged before the dump began. (SQLite's `server backup`/`restore` are tested by
# crates/server/tests/cli.rs.) Uses the PostgreSQL client tools of the machine's server.
# BACKUP_BUILD=0 uses the debug binary already built; BACKUP_PG_ADMIN_URL names the server.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

admin=${BACKUP_PG_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CI_TARGET_DIR}"
if [ "${BACKUP_BUILD:-1}" != 0 ]; then build_server debug; fi
BIN="$CARGO_TARGET_DIR/debug/server"

work=$(mktemp -d)
trap 'clean_up; rm -rf "$work"' EXIT
suffix="$$_$(date +%s)"
create_database "$admin" "backup_live_$suffix"
live=$DB_URL
create_database "$admin" "backup_restored_$suffix"
restored=$DB_URL
read -r port <<<"$(free_port)"
start_server "$port" "$work/server.log" DATABASE_URL="$live"

curl -sf -o /dev/null -X POST -H 'content-type: application/json' \
  -d '{"account_id":"acc","owner":"Ann"}' "$BASE/accounts"
load() {  # writes until $work/stop exists; one acknowledged note id per line in $work/acked
  while [ ! -e "$work/stop" ]; do
    curl -s -X POST -H 'content-type: application/json' -d '{"title":"t","body":"b"}' \
      -w '\n%{http_code}\n' "$BASE/notes" |
      python3 -c 'import json,sys; b,c=sys.stdin.read().split("\n")[:2]; c=="201" and print(json.loads(b)["id"])' \
      >>"$work/acked"
    curl -s -o /dev/null -X POST -H 'content-type: application/json' \
      -d '{"event_type":"MoneyDeposited","payload":{"amount_cents":100}}' "$BASE/accounts/acc/events"
  done
}
load & loader=$!
sleep 2
cp "$work/acked" "$work/acked-before"
pg_dump --format=custom --file="$work/live.dump" "$live"
sleep 1
touch "$work/stop"
wait "$loader"

pg_restore --no-owner --exit-on-error --dbname="$restored" "$work/live.dump"
DATABASE_URL="$restored" RUST_LOG=warn "$BIN" ledger-check
before=$(wc -l <"$work/acked-before")
[ "$before" -gt 0 ] || { echo "backup-test: the load wrote nothing before the dump" >&2; exit 1; }
missing=$(python3 - "$work/acked-before" "$restored" <<'PY'
import subprocess, sys
want = {int(line) for line in open(sys.argv[1]) if line.strip()}
rows = subprocess.run(["psql", "-qAt", sys.argv[2], "-c", "SELECT id FROM notes"],
                      capture_output=True, text=True, check=True).stdout.split()
print(len(want - {int(r) for r in rows}))
PY
)
[ "$missing" = 0 ] || { echo "backup-test: $missing acknowledged notes missing from the restore" >&2; exit 1; }
# The restored database serves: a server starts on it (migrations already applied) and reads.
read -r port2 <<<"$(free_port)"
start_server "$port2" "$work/restored.log" DATABASE_URL="$restored"
curl -sf "$BASE/accounts/acc" >/dev/null
echo "backup-test: pg_dump under load restored; ledger-check consistent; all $before notes acknowledged before the dump present"
