#!/usr/bin/env bash
# `just ha-test`: failover on a real HA stack. Installs Patroni and etcd from Debian's packages
# when missing, then scripts/ha_test.py starts etcd, three PostgreSQL 15 nodes under Patroni with
# strict synchronous replication and a relay per node, all on free ports in 25000-26999 (outside
# the ephemeral range) under a temporary work directory, and runs server processes (one, then
# three) over them under a mixed write load while it switches over, kills, stops, freezes and
# blackholes nodes. Every request and answer is recorded; at the end everything acknowledged is
# read back from the final primary, `server ledger-check` runs on it, and a table per fault is
# printed. Exit status 1 if any criterion fails (see scripts/ha_test.py's docstring).
#
# Usage: scripts/ha-test.sh [--short] [--instances 1,3] [FAULT[:COUNT] ...]
#   --short                      one switchover, one kill -9, one freeze, with 3 instances (CI)
#   FAULT[:COUNT]                switchover, kill, stop-primary, stop-sync, freeze, blackhole
#                                (default: HA_RUNS, else 10, 5, 3, 3, 2, 2 of them per round)
#   HA_PROFILE=release|debug     which build to run (default release)
#   HA_BUILD=0                   no build: use $CARGO_TARGET_DIR/<profile>/server
#   SERVER_BIN=PATH              use this binary (no build)
#   HA_KEEP=1                    keep the work directory (removed otherwise, also after a failure)
#   HA_THREADS HA_TTL HA_FREEZE_S HA_BLACKHOLE_S HA_GAP_S HA_REPORT HA_SEED: see ha_test.py
# Needs root (apt-get, and PostgreSQL runs as the postgres OS user). Never touches the machine's
# own PostgreSQL cluster.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

if ! command -v patroni >/dev/null || ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
  # etcd-server's package would start a daemon on the default ports: only ours may run.
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  installed=0
  { apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patroni etcd-server etcd-client >/dev/null; } ||
    installed=$?
  if [ "$made_policy" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
  if [ "$installed" != 0 ]; then
    echo "could not install patroni, etcd-server and etcd-client"
    exit 1
  fi
fi
if [ ! -x /usr/lib/postgresql/15/bin/postgres ]; then
  echo "the PostgreSQL 15 server binaries are missing (/usr/lib/postgresql/15/bin)"
  exit 1
fi

server_binary HA release --locked

work=$(mktemp -d "${TMPDIR:-/tmp}/ha-test.XXXXXX")

# ha_test.py stops everything it started; this is the backstop for when it was killed. Only
# processes of this run: the pids it listed and each node's postmaster and its children, each
# checked to belong to the work directory (command line or working directory) before the signal.
ours() {
  local p=$1
  [ -d "/proc/$p" ] || return 1
  tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$work" && return 0
  case "$(readlink "/proc/$p/cwd" 2>/dev/null)" in "$work"/*) return 0 ;; esac
  return 1
}
backstop() {
  local status=$? p pm pids=()
  trap - EXIT INT TERM
  for pidfile in "$work"/node*/data/postmaster.pid; do
    [ -f "$pidfile" ] || continue
    pm=$(head -1 "$pidfile")
    pids+=("$pm")
    for p in /proc/[0-9]*; do
      p=${p#/proc/}
      [ "$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null)" = "$pm" ] && pids+=("$p")
    done
  done
  if [ -f "$work/pids" ]; then while read -r p; do pids+=("$p"); done <"$work/pids"; fi
  for p in "${pids[@]}"; do
    if ours "$p"; then
      kill -CONT "$p" 2>/dev/null || true
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
  rm -rf "/dev/shm/ha-test-etcd-$$"
  if [ "${HA_KEEP:-0}" != 1 ]; then
    rm -rf "$work"
    if [ "$status" -ne 0 ]; then echo "(HA_KEEP=1 keeps the work directory: every request, node and server log)"; fi
  else
    echo "work directory kept: $work (records.jsonl, faults.jsonl, report.md, node*/patroni.log, servers-*/)"
  fi
  exit "$status"
}
trap backstop EXIT
trap 'exit 130' INT TERM

echo "HA test with $BIN ($(patroni --version 2>&1 | head -1), etcd $(etcd --version | awk 'NR==1{print $3}'))"
python3 scripts/ha_test.py --bin "$BIN" --work "$work" --run-id "$$" "$@"
