#!/usr/bin/env bash
# `just webhook-delivery-test`: outbound webhooks end to end (scripts/webhook_delivery_test.py):
# a server process delivers to a receiver that verifies every request with the Standard
# Webhooks reference library from PyPI, through failures, stalls, a SIGKILL and a restart, on
# SQLite and on PostgreSQL; the events received must be exactly the events committed.
# DELIVERY_BUILD=0 uses the debug binary already built.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CI_TARGET_DIR}"
if [ "${DELIVERY_BUILD:-1}" != 0 ]; then build_server debug; fi
venv="${DELIVERY_VENV:-$HOME/.cache/notes-service-delivery-venv}"
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
"$venv/bin/pip" install -q --disable-pip-version-check "standardwebhooks==1.0.1"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
PYTHONPATH=scripts "$venv/bin/python" scripts/webhook_delivery_test.py \
  --bin "$CARGO_TARGET_DIR/debug/server" --work "$work" "$@"
