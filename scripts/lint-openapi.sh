#!/usr/bin/env bash
# The committed OpenAPI document against Redocly's recommended ruleset: 0 errors required
# (warnings are reported). Installs the pinned Redocly CLI from the npm registry through npx.
set -euo pipefail
cd "$(dirname "$0")/.."
REDOCLY_VERSION="${REDOCLY_VERSION:-2.77.0}"
npx --yes "@redocly/cli@${REDOCLY_VERSION}" lint docs/openapi.json --format=summary
