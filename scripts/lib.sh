# shellcheck shell=bash
# Shared by the scripts under scripts/: `. "$(dirname "$0")/lib.sh"` before they cd (mcp-env.sh
# sources it too). Definitions only: no cd, set or trap, so sourcing it changes nothing by itself.
# A script builds or names the server as $BIN; every process started here is in PIDS and every
# database created here in CREATED_DBS, and `clean_up` (the usual EXIT trap) stops and drops them.

PIDS=()
CREATED_DBS=()
# .ci/run's build cache, outside the clone: the scripts CI runs default to it so they reuse its build.
CI_TARGET_DIR="$HOME/.cache/notes-service-target"

# Ports are picked free, never fixed, so that runs side by side (CI and a developer) never collide.
# free_port [N]: prints N (default 1) different free ports, all held at once while chosen.
free_port() {
  python3 - "${1:-1}" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# One build line for every script, so that BIN is always where that profile's binary was built.
# build_server debug|release [CARGO_ARGS...]: builds into CARGO_TARGET_DIR (exported; `target`, as
# in the justfile, unless already set) and sets BIN.
build_server() {
  local profile=$1 flag=()
  shift
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
  if [ "$profile" = release ]; then flag=(--release); fi
  cargo build --quiet "${flag[@]}" -p server --bin server "$@"
  BIN="$CARGO_TARGET_DIR/$profile/server"
}

# Which server binary a test script runs, the same way in every script: SERVER_BIN when set
# (no build), else $CARGO_TARGET_DIR/<PREFIX_PROFILE or DEFAULT>/server, built first unless
# PREFIX_BUILD=0.
# server_binary PREFIX DEFAULT_PROFILE [CARGO ARGS...]: sets BIN (an absolute path) or exits.
server_binary() {
  local prefix=$1 default=$2 profile_var="${1}_PROFILE" build_var="${1}_BUILD" profile
  shift 2
  if [ -n "${SERVER_BIN:-}" ]; then
    BIN="$SERVER_BIN"
  else
    profile="${!profile_var:-$default}"
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CI_TARGET_DIR}"
    if [ "${!build_var:-1}" != 0 ]; then build_server "$profile" "$@"; fi
    BIN="$CARGO_TARGET_DIR/$profile/server"
  fi
  if [ ! -x "$BIN" ]; then
    echo "no server binary at $BIN (SERVER_BIN, or ${build_var}=0 after a build)"
    exit 1
  fi
  BIN=$(readlink -f "$BIN")
}

# A server needs a moment to migrate and bind; a run must neither race it nor wait for a dead one.
# wait_up URL [PID]: polls URL for up to 20 s, stopping early if PID exits; fails without a 2xx.
wait_up() {
  local url=$1 pid=${2:-}
  for _ in $(seq 1 400); do
    curl -sf "$url" >/dev/null 2>&1 && return 0
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
    sleep 0.05
  done
  return 1
}

# Every script starts the server the same way, so that a setting they all need is added once.
# spawn_server PORT LOG [NAME=VALUE...]: runs $BIN on 127.0.0.1:PORT with RUST_LOG=warn and the
# given environment, in SERVER_DIR if set, output appended to LOG; sets SERVER_PID and BASE, adds
# the pid to PIDS, and does not wait (start_server does).
spawn_server() {
  local port=$1 log=$2
  shift 2
  (
    cd "${SERVER_DIR:-.}" || exit
    export BIND="127.0.0.1:$port" RUST_LOG=warn
    if [ $# -gt 0 ]; then export "$@"; fi
    exec "$BIN"
  ) >>"$log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  BASE="http://127.0.0.1:$port"
}

# A run against a server that never came up proves nothing, so this fails loudly instead.
# start_server PORT LOG [NAME=VALUE...]: spawn_server, then wait for /health; on failure prints the
# end of LOG and returns 1.
start_server() {
  spawn_server "$@"
  wait_up "$BASE/health" "$SERVER_PID" && return 0
  echo "the server did not start on $BASE; last lines of $2:" >&2
  tail -20 "$2" >&2
  return 1
}

# A stopped server must leave PIDS, so that clean_up never signals a pid reused since.
# stop_server PID [SIGNAL]: signals (TERM by default), reaps and forgets PID; fails as kill does
# when PID had already exited (a server that died under a run is an error).
stop_server() {
  local pid=$1 p kept=()
  kill -"${2:-TERM}" "$pid" || return
  wait "$pid" 2>/dev/null || true
  for p in "${PIDS[@]}"; do [ "$p" = "$pid" ] || kept+=("$p"); done
  PIDS=("${kept[@]}")
}

# A run on PostgreSQL gets a database of its own, so that runs never see each other's rows.
# create_database ADMIN_URL NAME: creates NAME on ADMIN_URL's server, sets DB_URL, and records it
# for drop_databases.
create_database() {
  psql -q "$1" -c "CREATE DATABASE $2"
  CREATED_DBS+=("$1 $2")
  DB_URL="${1%/*}/$2"
}

# Throwaway databases must not pile up on the shared server, even after a failed run.
# drop_databases: drops every database create_database made (FORCE: a killed server's session may
# linger); a failing drop is not an error.
drop_databases() {
  local entry
  for entry in "${CREATED_DBS[@]}"; do
    psql -q "${entry% *}" -c "DROP DATABASE IF EXISTS ${entry##* } WITH (FORCE)" || true
  done
  CREATED_DBS=()
}

# A failed run must not leave servers or databases behind; the usual `trap clean_up EXIT`.
clean_up() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  drop_databases
}

# bench.sh and bench-ledger.sh append to the accounts scripts/bench/append_event.lua picks from.
# open_bench_accounts BASE: opens bench-0 ... bench-99 on the server at BASE.
open_bench_accounts() {
  local i
  for i in $(seq 0 99); do
    curl -s -o /dev/null -X POST -H 'content-type: application/json' \
      -d "{\"account_id\":\"bench-$i\",\"owner\":\"bench\"}" "$1/accounts"
  done
}

# The Python tools live in virtualenvs under ~/.cache, never in the checkout or the system Python.
# venv_install VENV SPEC: creates VENV and pip-installs SPEC into it.
venv_install() {
  python3 -m venv "$1"
  "$1/bin/pip" install --quiet --disable-pip-version-check "$2"
}

# hs256_jwt SECRET SUBJECT: an HS256 JWT for SUBJECT, valid for a day (the example route's
# credential, JWT_SECRET=SECRET).
hs256_jwt() {
  python3 - "$1" "$2" <<'PY'
import base64, hashlib, hmac, json, sys, time
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
body = b64(json.dumps({"sub": sys.argv[2], "exp": int(time.time()) + 86400}).encode())
mac = hmac.new(sys.argv[1].encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
print(f"{head}.{body}.{b64(mac)}")
PY
}

# faults.sh and hostile.sh are one runner over two scenario files (scripts/faults.py, hostile.py).
# run_scenarios NAME LABEL [SCENARIO...]: reads NAME_PROFILE, NAME_BUILD, NAME_PG_ADMIN_URL and
# NAME_KEEP (NAME in capitals), builds unless NAME_BUILD=0, runs scripts/NAME.py in a fresh work
# directory (SCENARIO_WORK) and exits with its status through scenario_cleanup.
run_scenarios() {
  local label=$2 knob profile status=0
  SCENARIO_NAME=$1
  shift 2
  knob=$(tr '[:lower:]' '[:upper:]' <<<"$SCENARIO_NAME")
  local profile_var="${knob}_PROFILE" build_var="${knob}_BUILD" admin_var="${knob}_PG_ADMIN_URL"
  SCENARIO_KEEP_VAR="${knob}_KEEP"
  profile="${!profile_var:-debug}"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CI_TARGET_DIR}"
  if [ "${!build_var:-1}" != 0 ]; then build_server "$profile"; fi
  BIN="$CARGO_TARGET_DIR/$profile/server"
  if [ ! -x "$BIN" ]; then
    echo "no server binary at $BIN ($build_var=0 needs a build first)"
    exit 1
  fi
  SCENARIO_WORK=$(mktemp -d "${TMPDIR:-/tmp}/$SCENARIO_NAME.XXXXXX")
  SCENARIO_RUN_ID=$$
  SCENARIO_ADMIN="${!admin_var:-postgres://postgres@127.0.0.1:5432/postgres}"
  trap scenario_cleanup EXIT
  trap 'exit 130' INT TERM
  echo "$label with $BIN ($profile build), work directory $SCENARIO_WORK"
  python3 "scripts/$SCENARIO_NAME.py" --bin "$BIN" --work "$SCENARIO_WORK" --run-id "$SCENARIO_RUN_ID" "$@" ||
    status=$?
  exit "$status"
}

# The Python runners clean up after themselves; this is the backstop for when one was killed.
# As the EXIT trap: kills the servers listed in SCENARIO_WORK/pids, calls undo_NAME if the script
# defines one, drops NAME_<run id>_* databases, and keeps the work directory after a failure or
# with NAME_KEEP=1.
scenario_cleanup() {
  local status=$? bin p db
  trap - EXIT INT TERM
  if [ -f "$SCENARIO_WORK/pids" ]; then
    bin=$(readlink -f "$BIN")
    while read -r p; do
      # Only a server this run started (the pid may have been reused since).
      if [ "$(readlink "/proc/$p/exe" 2>/dev/null || true)" = "$bin" ]; then kill -KILL "$p" || true; fi
    done <"$SCENARIO_WORK/pids"
  fi
  if declare -F "undo_$SCENARIO_NAME" >/dev/null; then "undo_$SCENARIO_NAME"; fi
  if command -v psql >/dev/null; then
    for db in $(PGCONNECT_TIMEOUT=5 psql -X -At -d "$SCENARIO_ADMIN" \
      -c "SELECT datname FROM pg_database WHERE datname LIKE '${SCENARIO_NAME}\\_${SCENARIO_RUN_ID}\\_%'" 2>/dev/null); do
      psql -X -q -d "$SCENARIO_ADMIN" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true
    done
  fi
  if [ "$status" -eq 0 ] && [ "${!SCENARIO_KEEP_VAR:-0}" != 1 ]; then
    rm -rf "$SCENARIO_WORK"
  else
    echo "work directory kept: $SCENARIO_WORK (server logs under each scenario's directory)"
  fi
  exit "$status"
}
