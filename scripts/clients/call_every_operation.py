"""Calls every operation of docs/openapi.json through the client openapi-python-client generated.

Run by scripts/generated-clients.sh against a live server in tokens mode (API_AUTH=tokens). Each
call goes through the generated function of its operation (`<package>.api.<tag>.<operationId>`,
never raw HTTP) and is checked: the status is one the document lists for the operation, it is the
happy-path status this program expects, and where the document gives that status a body the
parsed model is there (not None, not an error model). The operations are read from the document,
so an operation this program does not call (a new route) fails the run, as does a generated
module that cannot be imported (a schema the generator dropped).

Environment: OPENAPI_DOC (the document), BASE_URL, API_KEY (an operator key of API_KEYS),
JWT (an HS256 token signed with JWT_SECRET), WEBHOOK_SECRET, CLIENT_PACKAGE (default
notes_client, importable from PYTHONPATH).
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
import os
import pathlib
import secrets
import sys
import time
import traceback
from typing import Any, Callable

import httpx

PKG = os.environ.get("CLIENT_PACKAGE", "notes_client")
DOC = json.loads(pathlib.Path(os.environ["OPENAPI_DOC"]).read_text())
BASE = os.environ["BASE_URL"]
API_KEY = os.environ["API_KEY"]
JWT = os.environ["JWT"]
WEBHOOK_SECRET = os.environ["WEBHOOK_SECRET"].encode()
RUN = "py-" + secrets.token_hex(4)

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")

def schema_name(response: dict[str, Any]) -> str | None:
    """The component a documented answer's body refers to (its title names the generated class)."""
    for media in response.get("content", {}).values():
        ref = media.get("schema", {}).get("$ref", "")
        if ref.startswith("#/components/schemas/"):
            name = ref.rsplit("/", 1)[1]
            return DOC["components"]["schemas"][name].get("title", name)
    return None


# operationId -> {"method", "path", "statuses": {status: has_body}, "schemas": {status: name}}
OPERATIONS: dict[str, dict[str, Any]] = {}
for path, item in DOC["paths"].items():
    for method, op in item.items():
        if method in METHODS:
            OPERATIONS[op["operationId"]] = {
                "method": method.upper(),
                "path": path,
                "statuses": {int(s): bool(r.get("content")) for s, r in op["responses"].items()},
                "schemas": {int(s): schema_name(r) for s, r in op["responses"].items()},
            }

called: set[str] = set()
failures: list[tuple[str | None, str]] = []  # (operationId or None, message)

models = importlib.import_module(f"{PKG}.models")
client_mod = importlib.import_module(f"{PKG}.client")
types_mod = importlib.import_module(f"{PKG}.types")
errors_mod = importlib.import_module(f"{PKG}.errors")
UNSET = types_mod.UNSET

# The generator writes each operation to <package>/api/<tag>/<operationId>.py.
API_DIR = pathlib.Path(importlib.import_module(f"{PKG}.api").__file__).parent
MODULES = {p.stem: f"{PKG}.api.{p.parent.name}.{p.stem}" for p in API_DIR.glob("*/*.py") if p.stem != "__init__"}


def fail(message: str, op_id: str | None = None) -> None:
    failures.append((op_id, message))
    print(f"python: FAIL {op_id + ': ' if op_id else ''}{message}", file=sys.stderr, flush=True)


for _op in OPERATIONS:
    if _op not in MODULES:
        fail("the generator wrote no module for it", _op)


def model(name: str) -> Any:
    """A generated model class; a missing one (a dropped schema) fails the run."""
    try:
        return getattr(models, name)
    except AttributeError:
        fail(f"model {name} is missing from the generated client (the generator dropped its schema)")
        return None


def error_models() -> tuple[type, ...]:
    return tuple(c for c in (getattr(models, "Problem", None), getattr(models, "TokenError", None)) if c)


def call(op_id: str, expect: int, client: Any, **kwargs: Any) -> Any:
    """Calls op_id's generated sync_detailed and checks the answer; returns the Response or None."""
    called.add(op_id)
    spec = OPERATIONS.get(op_id)
    if spec is None:
        fail("not an operation of the document", op_id)
        return None
    try:
        module = importlib.import_module(MODULES[op_id])
    except Exception as exc:  # noqa: BLE001 - a generated module that does not import is the finding
        fail(f"the generated module {MODULES.get(op_id)} does not import: {type(exc).__name__}: {exc}",
             op_id)
        return None
    try:
        response = module.sync_detailed(client=client, **kwargs)
    except errors_mod.UnexpectedStatus as exc:
        fail(f"status {exc.status_code} is not documented for {spec['method']} {spec['path']}: "
             f"{exc.content[:300]!r}", op_id)
        return None
    except Exception as exc:  # noqa: BLE001 - e.g. the generated parser rejecting a documented answer
        fail(f"the generated client raised {type(exc).__name__}: {exc}", op_id)
        traceback.print_exc()
        return None
    status = int(response.status_code)
    if status not in spec["statuses"]:
        fail(f"status {status} is not documented ({sorted(spec['statuses'])})", op_id)
    elif status != expect:
        fail(f"expected {expect}, got {status}: {response.content[:300]!r}", op_id)
    elif spec["statuses"][status]:
        if response.parsed is None:
            fail(f"{status} has a documented body but the generated client parsed None", op_id)
        elif isinstance(response.parsed, error_models()):
            fail(f"{status} parsed as an error model {type(response.parsed).__name__}", op_id)
        elif (want := spec["schemas"].get(status)) and norm(type(response.parsed).__name__) != norm(want):
            fail(f"{status} parsed as {type(response.parsed).__name__}, the document says {want}", op_id)
    return response if status == expect else None


def norm(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())


def clients() -> tuple[Any, Any]:
    def make(headers: dict[str, str]) -> Any:
        return client_mod.Client(base_url=BASE, headers=headers, raise_on_unexpected_status=True,
                                 timeout=httpx.Timeout(30.0))

    return make({}), make({"X-API-Key": API_KEY})


def etag(response: Any) -> str:
    return response.headers.get("etag", "")


def main() -> int:
    anon, operator = clients()

    # Service, problems, health, metrics.
    call("service_info", 200, anon)
    call("problem_type", 200, anon, slug="not-found")
    r = call("metrics", 200, operator)
    if r is not None and not isinstance(r.parsed, str):
        fail(f"parsed as {type(r.parsed).__name__}, not text", "metrics")
    call("health", 200, anon)
    call("health_live", 200, anon)
    call("health_ready", 200, anon)
    call("example_ping", 200, anon)
    call("machine_health", 200, operator)
    call("example_protected", 200, client_mod.AuthenticatedClient(
        base_url=BASE, token=JWT, raise_on_unexpected_status=True))

    # Users and tokens (area D): the operator makes the user and its admin token.
    UserBody, IssueBody, ScopeDto, VerifyBody = (model(n) for n in ("UserBody", "IssueBody", "ScopeDto", "VerifyBody"))
    r = call("create_user", 201, operator, body=UserBody(name=f"{RUN}-user"), idempotency_key=f"{RUN}-user")
    if r is None:
        print("cannot go on without a user", file=sys.stderr)
        return summary()
    uid = r.parsed.id
    r = call("issue_token", 201, operator, user_id=uid, x_user_id=uid,
             body=IssueBody(scope=ScopeDto.ADMIN, label=f"{RUN}-admin"))
    if r is None:
        print("cannot go on without a token", file=sys.stderr)
        return summary()
    token = r.parsed.token
    user = client_mod.AuthenticatedClient(base_url=BASE, token=token, raise_on_unexpected_status=True,
                                          timeout=httpx.Timeout(30.0))
    r = call("verify_token", 200, anon, body=VerifyBody(token=token))
    if r is not None and not r.parsed.valid:
        fail("the fresh admin token is not valid", "verify_token")
    r = call("list_tokens", 200, user, user_id=uid, x_user_id=uid)
    if r is not None and r.parsed.total < 1:
        fail("the issued token is not listed", "list_tokens")
    # A second token to rotate (old one revoked, a new one issued), then revoke the new one.
    second = call("issue_token", 201, user, user_id=uid, x_user_id=uid,
                  body=IssueBody(scope=ScopeDto.READ, label=f"{RUN}-rotate"))
    if second is not None:
        r = call("rotate_token", 201, user, user_id=uid, token_id=second.parsed.id, x_user_id=uid)
        if r is not None:
            call("revoke_token", 204, user, user_id=uid, token_id=r.parsed.id, x_user_id=uid)

    # Notes and their comments (area A).
    NoteBody, CommentBody, TagBody = model("NoteBody"), model("CommentBody"), model("TagBody")
    r = call("create_note", 201, user, body=NoteBody(title=f"{RUN} note", body="first"),
             idempotency_key=f"{RUN}-note")
    if r is not None:
        note_id = r.parsed.id
        call("list_notes", 200, user, limit=5, offset=0)
        r = call("get_note", 200, user, note_id=note_id)
        tag = etag(r) if r is not None else ""
        call("get_note", 304, user, note_id=note_id, if_none_match=tag)
        r = call("update_note", 200, user, note_id=note_id, body=NoteBody(title=f"{RUN} note", body="second"),
                 if_match=tag)
        if r is not None and r.parsed.body != "second":
            fail("the answer does not show the update", "update_note")
        r = call("create_comment", 201, user, note_id=note_id, body=CommentBody(body="a comment"),
                 idempotency_key=f"{RUN}-comment")
        if r is not None:
            comment_id = r.parsed.id
            call("list_comments", 200, user, note_id=note_id)
            r = call("get_comment", 200, user, note_id=note_id, comment_id=comment_id)
            call("update_comment", 200, user, note_id=note_id, comment_id=comment_id,
                 body=CommentBody(body="an edited comment"), if_match=etag(r) if r is not None else UNSET)
            call("delete_comment", 204, user, note_id=note_id, comment_id=comment_id)
        call("delete_note", 204, user, note_id=note_id)

    # Tags.
    r = call("create_tag", 201, user, body=TagBody(name=f"{RUN}-tag"), idempotency_key=f"{RUN}-tag")
    if r is not None:
        tag_id = r.parsed.id
        call("list_tags", 200, user, limit=100)
        r = call("get_tag", 200, user, tag_id=tag_id)
        call("update_tag", 200, user, tag_id=tag_id, body=TagBody(name=f"{RUN}-tag2"),
             if_match=etag(r) if r is not None else UNSET)
        call("delete_tag", 204, user, tag_id=tag_id)

    # Event-sourced accounts (area E): open, then every event type append_event takes, then the list.
    endpoint = register_endpoint(user)
    accounts(user, operator)
    if endpoint is not None:
        endpoint_log(user, endpoint)

    # Articles (area B).
    ArticleBody = model("ArticleBody")
    call("create_article", 201, user, body=ArticleBody(title=f"{RUN} article", author="Ann", category="tests"),
         idempotency_key=f"{RUN}-article")
    call("list_articles_offset", 200, user, limit=2, offset=0)
    r = call("list_articles_cursor", 200, user, limit=1)
    if r is not None and r.parsed.has_more and isinstance(r.parsed.next_cursor, int):
        call("list_articles_cursor", 200, user, limit=1, after=r.parsed.next_cursor)

    # Versioned notes (area C).
    NoteV1Body, NoteV2Body = model("NoteV1Body"), model("NoteV2Body")
    r = call("create_note_v1", 201, user, body=NoteV1Body(title=f"{RUN} v1", content="old shape"),
             idempotency_key=f"{RUN}-v1")
    if r is not None:
        call("get_note_v1", 200, user, id=r.parsed.id)
    call("list_notes_v1", 200, user, limit=5)
    r = call("create_note_v2", 201, user, body=NoteV2Body(title=f"{RUN} v2", body="new shape", tags=["a", "b"]),
             idempotency_key=f"{RUN}-v2")
    if r is not None:
        call("get_note_v2", 200, user, id=r.parsed.data.id)
    call("list_notes_v2", 200, user, limit=5)
    call("v1_usage", 200, operator)

    # The example routes (area H) over the same store.
    r = call("example_create_note", 201, user, body=NoteBody(title=f"{RUN} example", body="x"),
             idempotency_key=f"{RUN}-example-note")
    if r is not None:
        nid = r.parsed.id
        call("example_list_notes", 200, user)
        r = call("example_get_note", 200, user, id=nid)
        call("example_update_note", 200, user, id=nid, body=NoteBody(title=f"{RUN} example", body="y"),
             if_match=etag(r) if r is not None else UNSET)
        call("example_delete_note", 204, user, id=nid)
    r = call("example_create_tag", 201, user, body=TagBody(name=f"{RUN}-example-tag"),
             idempotency_key=f"{RUN}-example-tag")
    if r is not None:
        tid = r.parsed.id
        call("example_list_tags", 200, user)
        r = call("example_get_tag", 200, user, id=tid)
        call("example_update_tag", 200, user, id=tid, body=TagBody(name=f"{RUN}-example-tag2"),
             if_match=etag(r) if r is not None else UNSET)
        call("example_delete_tag", 204, user, id=tid)

    # Signed webhook intake (area F): sign exactly the bytes the generated client will send.
    webhook(anon)
    call("list_webhook_events", 200, operator, limit=5)
    r = call("list_audit", 200, operator, limit=10, user_id=uid)
    if r is not None and not r.parsed.items:
        fail("no entry for the run's user", "list_audit")
    return summary()


def register_endpoint(user: Any) -> int | None:
    """An outbound webhook endpoint, registered before the account events so that it gets
    them: this server's own /webhook (allowed by WEBHOOK_ENDPOINT_ALLOW), which refuses them
    (no intake signature), so the log fills with failed attempts."""
    EndpointBody, EndpointPatchBody = model("EndpointBody"), model("EndpointPatchBody")
    if None in (EndpointBody, EndpointPatchBody):
        return None
    r = call("create_webhook_endpoint", 201, user, body=EndpointBody(url=f"{BASE}/webhook"))
    if r is None:
        return None
    eid = r.parsed.id
    if not r.parsed.secret.startswith("whsec_"):
        fail(f"secret {r.parsed.secret[:8]}...", "create_webhook_endpoint")
    r = call("list_webhook_endpoints", 200, user)
    if r is not None and eid not in [e.id for e in r.parsed.items]:
        fail("the new endpoint is not listed", "list_webhook_endpoints")
    call("get_webhook_endpoint", 200, user, id=str(eid))
    r = call("update_webhook_endpoint", 200, user, id=str(eid), body=EndpointPatchBody(enabled=True))
    if r is not None and not r.parsed.enabled:
        fail("not enabled", "update_webhook_endpoint")
    r = call("rotate_webhook_endpoint_secret", 200, user, id=str(eid))
    if r is not None and r.parsed.secret_version != 2:
        fail(f"secret_version {r.parsed.secret_version}", "rotate_webhook_endpoint_secret")
    return eid


def endpoint_log(user: Any, eid: int) -> None:
    """The delivery log once the dispatcher has tried, one redelivery, then the endpoint goes."""
    items: list[Any] = []
    for _ in range(100):
        r = call("list_webhook_deliveries", 200, user, id=str(eid))
        items = r.parsed.items if r is not None else []
        if items:
            break
        time.sleep(0.1)
    if not items:
        fail("no delivery attempt within 10 s", "list_webhook_deliveries")
        called.add("redeliver_webhook")
    else:
        r = call("redeliver_webhook", 201, user, id=str(eid), delivery_id=items[0].id)
        if r is not None and (not r.parsed.manual or r.parsed.message_id != items[0].message_id):
            fail(f"redelivery {r.parsed.to_dict()}", "redeliver_webhook")
    call("delete_webhook_endpoint", 204, user, id=str(eid))


def accounts(user: Any, operator: Any) -> None:
    OpenAccountBody, AmountPayload = model("OpenAccountBody"), model("AmountPayload")
    account_id = f"{RUN}-acc"
    r = call("open_account", 201, user, body=OpenAccountBody(account_id=account_id, owner="Ann Lee"),
             idempotency_key=f"{RUN}-open")
    if r is None:
        return
    call("list_accounts", 200, user)
    r = call("get_account", 200, user, id=account_id)
    appended: list[str] = []

    def append(name: str, build: Callable[[Any], Any], **extra: Any) -> None:
        cls = model(name)
        if cls is None:
            called.add("append_event")  # counted, and failed above
            return
        if call("append_event", 201, user, id=account_id, body=build(cls), **extra) is not None:
            appended.append(name)

    deposit_type = model("MoneyDepositedEventType")
    withdraw_type = model("MoneyWithdrawnEventType")
    closed_type = model("AccountClosedEventType")
    if deposit_type is not None and AmountPayload is not None:
        append("MoneyDeposited", lambda c: c(event_type=deposit_type.MONEYDEPOSITED,
                                              payload=AmountPayload(amount_cents=2500)),
               idempotency_key=f"{RUN}-deposit", if_match=etag(r) if r is not None else UNSET)
        append("MoneyWithdrawn", lambda c: c(event_type=withdraw_type.MONEYWITHDRAWN,
                                              payload=AmountPayload(amount_cents=1000), expected_sequence=2))
    payload_cls = closed_payload_class()
    if closed_type is not None and payload_cls is not None:
        append("AccountClosed", lambda c: c(event_type=closed_type.ACCOUNTCLOSED,
                                             payload=payload_cls.from_dict({"reason": "done"})))
    else:
        called.add("append_event")
        fail("no generated model for AccountClosed or its payload: that event cannot be sent", "append_event")
    r = call("list_events", 200, user, id=account_id, limit=10)
    if r is not None and len(appended) == 3:
        seen = [e.event_type.value for e in r.parsed.items]
        want = ["AccountOpened", "MoneyDeposited", "MoneyWithdrawn", "AccountClosed"]
        if seen != want:
            fail(f"events {seen}, expected {want}", "list_events")
        elif r.parsed.items[3].payload.to_dict() != {"reason": "done"}:
            stored = r.parsed.items[3].payload.to_dict()
            fail(f"AccountClosed stored {stored}, sent {{'reason': 'done'}}", "list_events")
    r = call("get_account", 200, operator, id=account_id)
    if r is not None and len(appended) == 3 and (r.parsed.is_open or r.parsed.balance_cents != 1500):
        fail(f"after the four events expected closed with 1500, got {r.parsed.to_dict()}", "get_account")
    transfer(user, OpenAccountBody, AmountPayload)
    # The live streams: the server runs with EVENT_STREAM_MAX_AGE_MS=1000, so each answer ends.
    r = call("stream_account_events", 200, user, id=f"{RUN}-to")
    if r is not None and b"id: 2\n" not in r.content:
        fail(f"the stream of {RUN}-to: {r.content[:300]!r}", "stream_account_events")
    r = call("stream_all_events", 200, operator)
    if r is not None and b"event: end" not in r.content:
        fail(f"the feed: {r.content[-300:]!r}", "stream_all_events")


def transfer(user: Any, OpenAccountBody: Any, AmountPayload: Any) -> None:
    """Two fresh accounts, a deposit into the first, then 700 moved to the second."""
    src, dst = f"{RUN}-from", f"{RUN}-to"
    for account in (src, dst):
        call("open_account", 201, user, body=OpenAccountBody(account_id=account, owner="Ann Lee"))
    deposit_type, TransferBody = model("MoneyDepositedEventType"), model("TransferBody")
    deposit = model("MoneyDeposited")
    if None in (deposit_type, TransferBody, deposit, AmountPayload):
        called.add("create_transfer")
        fail("no generated model for TransferBody or a deposit", "create_transfer")
        return
    call("append_event", 201, user, id=src,
         body=deposit(event_type=deposit_type.MONEYDEPOSITED, payload=AmountPayload(amount_cents=1000)))
    body = TransferBody.from_dict({"from": src, "to": dst, "amount_cents": 700})
    r = call("create_transfer", 201, user, body=body, idempotency_key=f"{RUN}-transfer")
    if r is not None and (r.parsed.withdrawn.sequence != 3 or r.parsed.deposited.sequence != 2):
        fail(f"transfer events {r.parsed.to_dict()}", "create_transfer")
    balances = [call("get_account", 200, user, id=a) for a in (src, dst)]
    if all(b is not None for b in balances) and [b.parsed.balance_cents for b in balances] != [300, 700]:
        fail(f"after the transfer balances {[b.parsed.balance_cents for b in balances]}", "create_transfer")


def closed_payload_class() -> Any:
    """The model of AccountClosed's `payload` (its name depends on the document's shape)."""
    import typing

    cls = getattr(models, "AccountClosed", None)
    if cls is None:
        return None
    module = sys.modules[cls.__module__]
    try:
        hints = typing.get_type_hints(cls.__init__, globalns=vars(module) | vars(models))
    except Exception as exc:  # noqa: BLE001
        fail(f"cannot read the type of AccountClosed.payload: {exc}", "append_event")
        return None
    for arg in typing.get_args(hints.get("payload")) or (hints.get("payload"),):
        if isinstance(arg, type) and hasattr(arg, "from_dict"):
            return arg
    return None


def webhook(anon: Any) -> None:
    WebhookBody = model("WebhookBody")
    if WebhookBody is None:
        called.add("receive_webhook")
        return
    body = WebhookBody(event_type="invoice.paid")
    body.additional_properties = {"run": RUN}
    module_name = MODULES.get("receive_webhook")
    raw = b""
    if module_name:
        try:
            kwargs = importlib.import_module(module_name)._get_kwargs(body=body, x_webhook_signature="")
            raw = httpx.Request(kwargs["method"], BASE + kwargs["url"], json=kwargs.get("json")).content
        except Exception as exc:  # noqa: BLE001
            fail(f"cannot build the request to sign: {exc}", "receive_webhook")
    t = str(int(time.time()))
    sig = hmac.new(WEBHOOK_SECRET, f"{t}.".encode() + raw, hashlib.sha256).hexdigest()
    r = call("receive_webhook", 202, anon, body=body, x_webhook_signature=f"t={t},v1={sig}")
    if r is not None and r.parsed.status.value != "accepted":
        fail(f"status {r.parsed.status}", "receive_webhook")


def summary() -> int:
    for op_id in sorted(set(OPERATIONS) - called):
        fail("never called (add it to scripts/clients/call_every_operation.py)", op_id)
    failed = {op for op, _ in failures if op}
    done = set(OPERATIONS) & called
    if failures:
        print(f"python: {len(failures)} failures:")
        for op_id, message in failures:
            print(f"python:   {op_id + ': ' if op_id else ''}{message}")
    print(f"python: {len(done)}/{len(OPERATIONS)} operations called, "
          f"{len(done - failed)} passed, {len(failed & done)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
