#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) against the gateway's
# streamable HTTP transport, with the real service behind it and catalog/conformance.json.
# Runs the 2025-11-25 and the 2026-07-28 requirement sets; scenarios the gateway cannot serve
# by design (prompts, resources, sampling, ...) are in scripts/mcp-conformance-expected-failures-<revision>.yml
# and docs/mcp.md. Exit 0 when every other scenario passes.
#
#   scripts/conformance.sh                     # both requirement sets
#   scripts/conformance.sh 2025-11-25          # one set
set -euo pipefail
source "$(dirname "$0")/mcp-env.sh"
trap mcp_cleanup EXIT

mcp_up "$ROOT/catalog/conformance.json"

SUITE="$MCP_CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js"

status=0
for revision in "${@:-2025-11-25 2026-07-28}"; do
  for r in $revision; do
    echo "== MCP conformance, requirements $r, against $MCP_URL"
    (cd "$MCP_TMP" && "$NODE" "$SUITE" server --url "$MCP_URL" --requirements "$r" \
      --expected-failures "$ROOT/scripts/mcp-conformance-expected-failures-$r.yml") || status=1
  done
done
exit $status
