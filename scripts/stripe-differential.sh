#!/usr/bin/env bash
# Differential test of our webhook signature rules against Stripe's reference implementation:
# every vector of crates/webhook-verify/tests/vectors.json through stripe-python's
# WebhookSignature.verify_header (tolerance 300, clock pinned to the vector's "now"). Fails on any
# disagreement not listed (with its reason) in scripts/stripe_differential.py and
# docs/webhooks.md. Installs stripe-python into a virtualenv under ~/.cache first.
# STRIPE_VENV and STRIPE_VERSION override the defaults.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

VENV="${STRIPE_VENV:-$HOME/.cache/stripe-differential-venv}"
VERSION="${STRIPE_VERSION:-16.1.0}"
if ! "$VENV/bin/python" -c "import stripe, sys; sys.exit(stripe.VERSION != '$VERSION')" 2>/dev/null; then
  venv_install "$VENV" "stripe==$VERSION"
fi
exec "$VENV/bin/python" scripts/stripe_differential.py crates/webhook-verify/tests/vectors.json
