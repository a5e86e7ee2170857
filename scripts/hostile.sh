#!/usr/bin/env bash
# Hostile traffic (issue 18): what one client without a credential can do to the server. Each
# scenario starts a fresh server on a fresh database, on SQLite and then on PostgreSQL, attacks
# it (a decompression bomb, slow bodies, many slow connections, oversized deposit payloads and
# the pages they make, huge webhook pages, an unauthenticated V1 flood, rate-limited V1 calls,
# X-Forwarded-For rotation, 15,000 distinct clients, cross-site non-JSON POSTs, percent-encoded
# V1 paths, 192 connections pipelining without reading, 100 MiB of chunked framing) and checks the bounded outcome: the status and problem document, rows written, open
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
#   HOSTILE_FLOOD=5000  HOSTILE_CLIENTS=15000  HOSTILE_PIPELINE_S=30  HOSTILE_RUST_LOG=warn
#   HOSTILE_KEEP=1                 keep the work directory (always kept when a scenario failed)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

run_scenarios hostile "hostile traffic" "$@"
