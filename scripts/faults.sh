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
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

# faults.py undoes every fault it injects; scenario_cleanup (lib.sh) calls this as a backstop for
# when it was killed: unmount its tmpfs, stop its private PostgreSQL clusters, lift chattr +i.
undo_faults() {
  awk -v w="$SCENARIO_WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" || true
  done
  find "$SCENARIO_WORK" -name postmaster.pid 2>/dev/null | while read -r pidfile; do
    data=$(dirname "$pidfile")
    ctl=$(ls /usr/lib/postgresql/*/bin/pg_ctl 2>/dev/null | tail -1)
    ctl=${ctl:-pg_ctl}
    if [ "$(id -u)" = 0 ]; then
      runuser -u postgres -- "$ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
    else
      "$ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
    fi
  done
  if [ "$(id -u)" = 0 ]; then chattr -R -i "$SCENARIO_WORK" 2>/dev/null || true; fi
}

run_scenarios faults "fault injection" "$@"
