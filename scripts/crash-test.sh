#!/usr/bin/env bash
# Crash test of the ledger (area E) on SQLite: concurrent appends with curl, the server killed
# with SIGKILL at a random moment, then `server ledger-check` must pass (every projection equals
# the replay of its events) and every event acknowledged with a 201 must be stored exactly as it
# was answered. Repeated N rounds on the same database.
#
# Usage: scripts/crash-test.sh [ROUNDS]          (default 5)
#   CRASH_PROFILE=debug|release  which build to run (default debug)
#   CRASH_WRITERS=8              concurrent curl loops
#   CRASH_ACCOUNTS=4             accounts the writers spread over
#   CRASH_MIN_S=0.5 CRASH_MAX_S=3  the random kill moment after start, in seconds
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

rounds="${1:-${CRASH_ROUNDS:-5}}"
profile="${CRASH_PROFILE:-debug}"
writers="${CRASH_WRITERS:-8}"
accounts="${CRASH_ACCOUNTS:-4}"
min_s="${CRASH_MIN_S:-0.5}"
max_s="${CRASH_MAX_S:-3}"

build_server "$profile"

work=$(mktemp -d)
export DATABASE_URL="sqlite://$work/ledger.db"
acks="$work/acks"
mkdir -p "$acks"
# Every restart binds the same port: the writers and verify_acks keep talking to $base.
port=$(free_port)
base="http://127.0.0.1:$port"
trap clean_up EXIT

# Appends until the server goes away; every 201 body is recorded as acknowledged.
writer() {
  local w=$1 round=$2 out code body acct amount ty
  while :; do
    acct="crash-$((RANDOM % accounts))"
    amount=$((RANDOM % 1000 + 1))
    if ((RANDOM % 3 == 0)); then ty=MoneyWithdrawn; else ty=MoneyDeposited; fi
    out=$(curl -s -w '\n%{http_code}' -X POST -H 'content-type: application/json' \
      -d "{\"event_type\":\"$ty\",\"payload\":{\"amount_cents\":$amount}}" \
      "$base/accounts/$acct/events") || break
    code=${out##*$'\n'}
    body=${out%$'\n'*}
    case "$code" in
      201) printf '%s\n' "$body" >>"$acks/r$round-w$w" ;;
      422) case "$body" in *insufficient-funds*) ;; *) echo "unexpected 422: $body" >>"$work/unexpected" ;; esac ;;
      000) break ;;
      *) echo "unexpected $code: $body" >>"$work/unexpected" ;;
    esac
  done
}

verify_acks() {
  python3 - "$base" "$acks" <<'PY'
import json, os, sys, urllib.request
base, acks = sys.argv[1], sys.argv[2]
acked = []
for name in os.listdir(acks):
    with open(os.path.join(acks, name)) as f:
        acked += [json.loads(line) for line in f if line.strip()]
stored = {}
for acct in sorted({e["aggregate_id"] for e in acked}):
    after = 0
    while True:
        with urllib.request.urlopen(f"{base}/accounts/{acct}/events?after_sequence={after}") as r:
            page = json.load(r)
        if not page["items"]:
            break
        for e in page["items"]:
            stored[(e["aggregate_id"], e["sequence"])] = e
        after = page["items"][-1]["sequence"]
missing = [e for e in acked if stored.get((e["aggregate_id"], e["sequence"])) != e]
if missing:
    print(f"{len(missing)} acknowledged events are missing or changed, e.g. {missing[:3]}")
    sys.exit(1)
print(f"all {len(acked)} acknowledged events are stored as answered ({len(stored)} events checked)")
PY
}

start_server "$port" "$work/server.log"
for a in $(seq 0 $((accounts - 1))); do
  curl -sf -X POST -H 'content-type: application/json' \
    -d "{\"account_id\":\"crash-$a\",\"owner\":\"crash test\"}" "$base/accounts" >/dev/null
done

for round in $(seq 1 "$rounds"); do
  writer_pids=()
  for w in $(seq 1 "$writers"); do
    writer "$w" "$round" &
    writer_pids+=($!)
  done
  delay=$(python3 -c "import random; print(round(random.uniform($min_s, $max_s), 2))")
  sleep "$delay"
  stop_server "$SERVER_PID" KILL
  for p in "${writer_pids[@]}"; do wait "$p" || true; done
  acked=$(cat "$acks"/* 2>/dev/null | wc -l)
  echo "round $round: killed after ${delay}s; $acked events acknowledged so far"
  "$BIN" ledger-check
  start_server "$port" "$work/server.log"
  verify_acks
done

if [ -s "$work/unexpected" ]; then
  echo "unexpected answers:"; head -20 "$work/unexpected"; exit 1
fi
echo "crash test passed: $rounds rounds"
