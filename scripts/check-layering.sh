#!/usr/bin/env bash
# Domain crates must not depend on the web framework or the OpenAPI layer.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
for dir in crates/*/; do
  crate=$(basename "$dir")
  case "$crate" in server|tool-gateway|client) continue ;; esac
  for framework in actix-web apistos; do
    if cargo tree -p "$crate" -e normal -i "$framework" --locked >/dev/null 2>&1; then
      echo "layering: $crate depends on $framework"; fail=1
    fi
  done
  # storage's `testing` module (a dev-only feature) reads TEST_POSTGRES_URL for the tests.
  if grep -rqE 'std::env::var|actix_web|apistos' --exclude=testing.rs "$dir/src" 2>/dev/null; then
    echo "layering: $crate names the environment or the framework in its sources"; fail=1
  fi
done
[ "$fail" = 0 ] && echo "layering ok"
exit "$fail"
