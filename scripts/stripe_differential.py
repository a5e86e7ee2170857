#!/usr/bin/env python3
"""Differential test: our webhook verifier's expected outcomes against Stripe's.

Runs every case of crates/webhook-verify/tests/vectors.json through
`stripe.WebhookSignature.verify_header(payload, header, secret, tolerance=300)` (stripe-python)
with `time.time()` pinned to the vector's `now`, and compares Stripe's accept/reject with the
vector's expectation (`expected == "ok"` is accept, anything else is reject).

Stripe's `Stripe-Signature` scheme (`t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`) is ours
in spirit, but not in every detail. Each known disagreement is listed in DIFFERENCES below with
its reason (docs/webhooks.md repeats the list). The script fails on any disagreement that is not
listed, and on any listed vector where the two now agree (a stale entry).

A receiver with a current and a previous secret is modelled the way a Stripe user rotates:
call `verify_header` once per secret and accept if either accepts.

Usage: stripe_differential.py [path/to/vectors.json]   (scripts/stripe-differential.sh sets up
the virtualenv with stripe-python first)
"""

import base64
import json
import pathlib
import sys
import time

import stripe

TOLERANCE = 300

# vector name -> why Stripe's outcome differs from ours. "accepts" / "rejects" is Stripe's side.
DIFFERENCES = {
    # Timestamps in the future: the spec (5.2 item 4) bounds |now - t|; Stripe only bounds the age.
    "age_301_seconds_future": "Stripe accepts: it only rejects old timestamps, never future ones.",
    "t_u64_max": "Stripe accepts: a far-future timestamp is never too old.",
    "t_20_digits_far_future": "Stripe accepts: a far-future timestamp is never too old.",
    # Several values for one key: the spec (5.2 item 3) says a later part overwrites an earlier
    # one; Stripe takes the FIRST t and accepts if ANY v1 matches.
    "dup_v1_valid_then_bad": "Stripe accepts: any of several v1 entries may match (we keep the last).",
    "dup_v1_valid_then_empty": "Stripe accepts: any v1 may match; an empty later v1 does not "
    "overwrite (for us the final v1 is empty: malformed).",
    "dup_t_valid_then_nondigit": "Stripe accepts: it uses the first t (for us the final t=abc is "
    "malformed).",
    "dup_t_nondigit_then_valid": "Stripe rejects: it uses the first t, and int('abc') fails (we use "
    "the final, valid t).",
    "dup_t_signed_then_other": "Stripe accepts: it uses the first t, which is the signed one (we "
    "use the final t: mismatch).",
    "dup_t_other_then_signed": "Stripe rejects: it uses the first t, which is not the signed one.",
    # Header parsing: Stripe ignores parts without '=', so empty parts (stray commas) are harmless;
    # the spec makes every part key=value, so we call such a header malformed.
    "trailing_comma": "Stripe accepts: an empty part is ignored (for us: malformed).",
    "leading_comma": "Stripe accepts: an empty part is ignored (for us: malformed).",
    "double_comma": "Stripe accepts: an empty part is ignored (for us: malformed).",
    "part_without_equals": "Stripe accepts: a part without '=' is ignored (for us: malformed).",
    # Stripe splits each part with split('=', 2) and keeps only the text between the first and the
    # second '='; we split on the first '=' only (spec 5.2 item 3).
    "t_with_equals_inside": "Stripe accepts: t=1700000000=1 reads as t=1700000000 (for us the "
    "value is '1700000000=1': malformed).",
    "equals_inside_v1": "Stripe accepts: v1=<sig>=<junk> reads as v1=<sig> (for us the value "
    "includes '=<junk>': mismatch).",
    # Stripe parses t with Python's int(), which allows surrounding white space, and signs the
    # re-formatted integer ("%d"), not the digits as sent (DECISIONS F: the header's digits).
    "space_after_t_equals": "Stripe accepts: int(' 1700000000') is 1700000000 (for us t must be "
    "digits only: malformed).",
    "space_before_comma": "Stripe accepts: int('1700000000 ') is 1700000000 (for us: malformed).",
    "t_20_digits_leading_zeros": "Stripe rejects: it signs '1700000000.' (leading zeros dropped) "
    "while the sender signed the digits as sent.",
    "t_leading_zeros_signed_without_them": "Stripe accepts: it signs '1700000000.' whatever "
    "zeros the header carries (we sign the header's digits: mismatch).",
    # stripe-python verifies text only: it decodes a bytes payload as UTF-8 first.
    "body_binary_ok": "Stripe rejects (UnicodeDecodeError): stripe-python decodes the payload as "
    "UTF-8 before signing; we sign the raw bytes.",
}


def load(path):
    vectors = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    for v in vectors:
        if v.get("body_base64") is not None:
            v["payload"] = base64.b64decode(v["body_base64"])
        else:
            v["payload"] = v["body"]
    return vectors


def stripe_accepts(v):
    """Stripe's verdict, with time.time() pinned to the vector's `now`."""
    real_time = time.time
    time.time = lambda: float(v["now"])
    try:
        for secret in (v["secret"], v.get("previous_secret")):
            if secret is None:
                continue
            try:
                stripe.WebhookSignature.verify_header(
                    v["payload"], v["header"], secret, tolerance=TOLERANCE
                )
                return True, "accepted"
            except stripe.SignatureVerificationError as e:
                reason = str(e).split(".")[0]
            except Exception as e:  # Stripe's own failure to handle the input is a rejection too
                reason = f"{type(e).__name__}: {e}"
        return False, reason
    finally:
        time.time = real_time


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    path = sys.argv[1] if len(sys.argv) > 1 else root / "crates/webhook-verify/tests/vectors.json"
    vectors = load(path)
    names = {v["name"] for v in vectors}
    unknown = sorted(set(DIFFERENCES) - names)
    failures = [f"documented difference for a vector that does not exist: {n}" for n in unknown]
    agree = differ = 0
    for v in vectors:
        ours = v["expected"] == "ok"
        theirs, reason = stripe_accepts(v)
        documented = DIFFERENCES.get(v["name"])
        if ours == theirs:
            agree += 1
            if documented:
                failures.append(
                    f"{v['name']}: documented as a difference, but Stripe now agrees "
                    f"({'accepts' if theirs else 'rejects'}); remove it from DIFFERENCES"
                )
        else:
            differ += 1
            mark = "documented" if documented else "UNDOCUMENTED"
            print(
                f"  {mark:12} {v['name']}: ours {v['expected']}, Stripe "
                f"{'accepts' if theirs else 'rejects'} ({reason})"
            )
            if not documented:
                failures.append(
                    f"{v['name']}: ours {v['expected']}, Stripe "
                    f"{'accepts' if theirs else 'rejects'} ({reason}) - undocumented disagreement"
                )
    print(
        f"stripe {stripe.VERSION}: {len(vectors)} vectors, {agree} agree, "
        f"{differ} differ ({len(DIFFERENCES)} documented)"
    )
    if failures:
        print("FAILED:")
        for f in failures:
            print(f"  {f}")
        return 1
    print("ok: every disagreement with Stripe is documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
