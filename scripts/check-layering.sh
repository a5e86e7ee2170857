#!/usr/bin/env bash
# The crate layering (docs/ARCHITECTURE.md):
# - domain crates do not depend on the web framework or the OpenAPI layer, and name neither
#   nor the environment in their sources;
# - each domain crate builds without its `db` feature, and then compiles no database library;
# - the server's modules import one another without a cycle;
# - the HTTP edge (crates/http-edge) depends on the shared mechanisms only, never on a domain
#   crate or the server, and reads no environment variable: configuration comes in as plain
#   structs.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
for dir in crates/*/; do
  crate=$(basename "$dir")
  case "$crate" in server|tool-gateway|client|http-edge|api-shapes) continue ;; esac
  for framework in actix-web apistos; do
    if cargo tree -p "notesvc-$crate" -e normal -i "$framework" --locked 2>/dev/null | grep -q .; then
      echo "layering: $crate depends on $framework"; fail=1
    fi
  done
  # storage's `testing` module (a dev-only feature) reads TEST_POSTGRES_URL for the tests.
  if grep -rqE 'std::env::var|actix_web|apistos' --exclude=testing.rs "$dir/src" 2>/dev/null; then
    echo "layering: $crate names the environment or the framework in its sources"; fail=1
  fi
done

# The edge's own crates: the leaves it may build on.
edge_may_use="problem-details pagination storage idempotency ownership audit trace-context credentials"
ours=$(ls crates)
for dep in $(cargo tree -p notesvc-http-edge -e normal --depth 1 --prefix none --locked | awk 'NR > 1 {print $1}' | sed 's/^notesvc-//' | sort -u); do
  if grep -qx "$dep" <<<"$ours" && ! grep -qw "$dep" <<<"$edge_may_use"; then
    echo "layering: http-edge depends on $dep (it may use: $edge_may_use)"; fail=1
  fi
done
if grep -rqE 'std::env|env!\(|env::var' crates/http-edge/src; then
  echo "layering: http-edge reads the environment (configuration comes in as plain structs)"; fail=1
fi

# Each domain crate without its `db` feature: its model and rules, and no database library.
for crate in notes articles versioned-notes tokens ledger webhooks idempotency; do
  for engine in libsqlite3-sys pq-sys diesel; do
    # An absent package is an error, or "nothing to print" on stderr: either way no output.
    if cargo tree -p "notesvc-$crate" --no-default-features -e normal -i "$engine" --locked 2>/dev/null | grep -q .; then
      echo "layering: $crate without default features still depends on $engine"; fail=1
    fi
  done
done
# The server's modules import one another without a cycle.
python3 scripts/check-import-cycles.py crates/server/src >/dev/null || {
  python3 scripts/check-import-cycles.py crates/server/src; fail=1; }
[ "$fail" = 0 ] && echo "layering ok"
exit "$fail"
