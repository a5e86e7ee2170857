#!/usr/bin/env bash
# The committed OpenAPI document against two linters: Redocly's recommended ruleset (0 errors
# required; warnings reported) and Spectral's `spectral:oas` ruleset (0 errors and at most
# SPECTRAL_MAX_WARNINGS warnings, 10 by default; among its rules, every example must fit its
# schema). Installs the pinned CLIs from the npm registry through npx.
set -euo pipefail
cd "$(dirname "$0")/.."
REDOCLY_VERSION="${REDOCLY_VERSION:-2.77.0}"
SPECTRAL_VERSION="${SPECTRAL_VERSION:-6.16.3}"
npx --yes "@redocly/cli@${REDOCLY_VERSION}" lint docs/openapi.json --format=summary

ruleset=$(mktemp --suffix=.yaml)
report=$(mktemp)
trap 'rm -f "$ruleset" "$report"' EXIT
echo 'extends: ["spectral:oas"]' >"$ruleset"
npx --yes "@stoplight/spectral-cli@${SPECTRAL_VERSION}" lint docs/openapi.json \
  --ruleset "$ruleset" --format json --quiet --fail-severity=error >"$report" || true
python3 - "$report" "${SPECTRAL_MAX_WARNINGS:-10}" <<'PY'
import collections, json, sys
findings = json.load(open(sys.argv[1]))
errors = [f for f in findings if f["severity"] == 0]
warnings = [f for f in findings if f["severity"] == 1]
for f in errors + warnings:
    where = "/".join(str(p) for p in f["path"])
    print(f"spectral: {'error' if f['severity'] == 0 else 'warning'} {f['code']}: {f['message']} ({where})")
print(f"spectral:oas: {len(errors)} errors, {len(warnings)} warnings "
      f"{dict(collections.Counter(f['code'] for f in warnings))}")
sys.exit(1 if errors or len(warnings) > int(sys.argv[2]) else 0)
PY
