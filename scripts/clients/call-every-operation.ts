// Calls every operation of docs/openapi.json through openapi-fetch typed by the types that
// openapi-typescript generated from the document (./openapi.d.ts, written by
// scripts/generated-clients.sh beside this file before `tsc --strict`).
//
// Each call is checked: the status is one the document lists for the operation (a middleware
// maps method + path template to the operationId and records it), it is the happy-path status
// this program expects, and where the document gives that status a body, the client returns
// it as `data`. The operations are read from the document, so one this program never calls (a
// new route) fails the run.
//
// Environment: OPENAPI_DOC, BASE_URL, API_KEY (an operator key), JWT (HS256, JWT_SECRET),
// WEBHOOK_SECRET.
import { createHmac, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import createClient, { type Middleware } from "openapi-fetch";
import type { paths } from "./openapi.js";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const BASE = env("BASE_URL");
const API_KEY = env("API_KEY");
const JWT = env("JWT");
const WEBHOOK_SECRET = env("WEBHOOK_SECRET");
const RUN = `ts-${randomBytes(4).toString("hex")}`;

interface Operation {
  method: string;
  path: string;
  statuses: Map<number, boolean>; // status -> the document gives it a body
}

interface DocOperation {
  operationId: string;
  responses: Record<string, { content?: Record<string, unknown> }>;
}

const doc = JSON.parse(readFileSync(env("OPENAPI_DOC"), "utf8")) as {
  paths: Record<string, Record<string, DocOperation>>;
};
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];
const operations = new Map<string, Operation>();
const byRoute = new Map<string, string>();
for (const [path, item] of Object.entries(doc.paths)) {
  for (const [method, op] of Object.entries(item)) {
    if (!METHODS.includes(method)) continue;
    const statuses = new Map<number, boolean>();
    for (const [status, response] of Object.entries(op.responses)) {
      statuses.set(Number(status), Object.keys(response.content ?? {}).length > 0);
    }
    operations.set(op.operationId, { method: method.toUpperCase(), path, statuses });
    byRoute.set(`${method.toUpperCase()} ${path}`, op.operationId);
  }
}

const called = new Set<string>();
const failures: [string | undefined, string][] = [];

function fail(message: string, opId?: string): void {
  failures.push([opId, message]);
  console.error(`typescript: FAIL ${opId ? `${opId}: ` : ""}${message}`);
}

// Records which operation each request was and checks its status against the document.
const lastOperation: { id?: string } = {};
const recorder: Middleware = {
  onRequest({ request, schemaPath }) {
    const opId = byRoute.get(`${request.method} ${schemaPath}`);
    if (!opId) {
      fail(`${request.method} ${schemaPath} is not an operation of the document`);
      return undefined;
    }
    called.add(opId);
    lastOperation.id = opId;
    return undefined;
  },
  onResponse({ request, response, schemaPath }) {
    const opId = byRoute.get(`${request.method} ${schemaPath}`);
    const op = opId ? operations.get(opId) : undefined;
    if (opId && op && !op.statuses.has(response.status)) {
      fail(`status ${response.status} is not documented (${[...op.statuses.keys()].join(", ")})`, opId);
    }
    return undefined;
  },
};

function client(headers: Record<string, string> = {}) {
  const c = createClient<paths>({ baseUrl: BASE, headers });
  c.use(recorder);
  return c;
}

const anon = client();
const operator = client({ "X-API-Key": API_KEY });

// The answer of one call, as openapi-fetch returns it.
interface Answer<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

// Checks the answer of the call just made; returns its data when the status was the expected one.
function expect<D>(answer: Answer<D>, status: number): D | undefined {
  const opId = lastOperation.id ?? "?";
  const op = operations.get(opId);
  if (answer.response.status !== status) {
    fail(`expected ${status}, got ${answer.response.status}: ${JSON.stringify(answer.error ?? answer.data)}`, opId);
    return undefined;
  }
  if (op?.statuses.get(status) && (answer.data === undefined || answer.data === null)) {
    fail(`${status} has a documented body but the client returned no data`, opId);
    return undefined;
  }
  return answer.data;
}

function etag(answer: Answer<unknown>): string {
  return answer.response.headers.get("etag") ?? "";
}

async function main(): Promise<number> {
  // Service, problems, health, metrics.
  expect(await anon.GET("/"), 200);
  expect(await anon.GET("/problems/{slug}", { params: { path: { slug: "not-found" } } }), 200);
  const metrics = expect(await operator.GET("/metrics", { parseAs: "text" }), 200);
  if (metrics !== undefined && !metrics.includes("# TYPE")) fail("not Prometheus text", "metrics");
  expect(await anon.GET("/health"), 200);
  expect(await anon.GET("/health/live"), 200);
  expect(await anon.GET("/health/ready"), 200);
  expect(await anon.GET("/examples/ping"), 200);
  expect(await operator.GET("/machine/health"), 200);
  expect(await client({ Authorization: `Bearer ${JWT}` }).GET("/examples/protected"), 200);

  // Users and tokens: the operator makes the user and its admin token.
  const created = expect(
    await operator.POST("/users", {
      body: { name: `${RUN}-user` },
      params: { header: { "Idempotency-Key": `${RUN}-user` } },
    }),
    201,
  );
  if (!created) return summary();
  const uid = created.id;
  const issued = expect(
    await operator.POST("/users/{userId}/tokens", {
      params: { path: { userId: uid }, header: { "X-User-Id": uid } },
      body: { scope: "admin", label: `${RUN}-admin` },
    }),
    201,
  );
  if (!issued) return summary();
  const user = client({ Authorization: `Bearer ${issued.token}` });
  const verified = expect(await anon.POST("/tokens/verify", { body: { token: issued.token } }), 200);
  if (verified && (!verified.valid || verified.scope !== "admin")) fail("the admin token is not valid", "verify_token");
  const listed = expect(
    await user.GET("/users/{userId}/tokens", { params: { path: { userId: uid }, header: { "X-User-Id": uid } } }),
    200,
  );
  if (listed && listed.total < 1) fail("the issued token is not listed", "list_tokens");
  const second = expect(
    await user.POST("/users/{userId}/tokens", {
      params: { path: { userId: uid }, header: { "X-User-Id": uid } },
      body: { scope: "read", label: `${RUN}-rotate` },
    }),
    201,
  );
  if (second) {
    const rotated = expect(
      await user.POST("/users/{userId}/tokens/{tokenId}/rotate", {
        params: { path: { userId: uid, tokenId: second.id }, header: { "X-User-Id": uid } },
      }),
      201,
    );
    if (rotated) {
      expect(
        await user.DELETE("/users/{userId}/tokens/{tokenId}", {
          params: { path: { userId: uid, tokenId: rotated.id }, header: { "X-User-Id": uid } },
        }),
        204,
      );
    }
  }

  // Notes and their comments.
  const note = expect(
    await user.POST("/notes", {
      body: { title: `${RUN} note`, body: "first" },
      params: { header: { "Idempotency-Key": `${RUN}-note` } },
    }),
    201,
  );
  if (note) {
    const note_id = note.id;
    expect(await user.GET("/notes", { params: { query: { limit: 5, offset: 0 } } }), 200);
    const got = await user.GET("/notes/{note_id}", { params: { path: { note_id } } });
    expect(got, 200);
    expect(
      await user.GET("/notes/{note_id}", { params: { path: { note_id }, header: { "If-None-Match": etag(got) } } }),
      304,
    );
    const updated = expect(
      await user.PUT("/notes/{note_id}", {
        params: { path: { note_id }, header: { "If-Match": etag(got) } },
        body: { title: `${RUN} note`, body: "second" },
      }),
      200,
    );
    if (updated && updated.body !== "second") fail("the answer does not show the update", "update_note");
    const comment = expect(
      await user.POST("/notes/{note_id}/comments", {
        params: { path: { note_id }, header: { "Idempotency-Key": `${RUN}-comment` } },
        body: { body: "a comment" },
      }),
      201,
    );
    if (comment) {
      const path = { note_id, comment_id: comment.id };
      expect(await user.GET("/notes/{note_id}/comments", { params: { path: { note_id } } }), 200);
      const c = await user.GET("/notes/{note_id}/comments/{comment_id}", { params: { path } });
      expect(c, 200);
      expect(
        await user.PUT("/notes/{note_id}/comments/{comment_id}", {
          params: { path, header: { "If-Match": etag(c) } },
          body: { body: "an edited comment" },
        }),
        200,
      );
      expect(await user.DELETE("/notes/{note_id}/comments/{comment_id}", { params: { path } }), 204);
    }
    expect(await user.DELETE("/notes/{note_id}", { params: { path: { note_id } } }), 204);
  }

  // Tags.
  const tag = expect(
    await user.POST("/tags", { body: { name: `${RUN}-tag` }, params: { header: { "Idempotency-Key": `${RUN}-tag` } } }),
    201,
  );
  if (tag) {
    const path = { tag_id: tag.id };
    expect(await user.GET("/tags", { params: { query: { limit: 100 } } }), 200);
    const t = await user.GET("/tags/{tag_id}", { params: { path } });
    expect(t, 200);
    expect(
      await user.PUT("/tags/{tag_id}", { params: { path, header: { "If-Match": etag(t) } }, body: { name: `${RUN}-tag2` } }),
      200,
    );
    expect(await user.DELETE("/tags/{tag_id}", { params: { path } }), 204);
  }

  // An outbound webhook endpoint, registered before the account events so that it gets them:
  // this server's own /webhook (allowed by WEBHOOK_ENDPOINT_ALLOW), which refuses them.
  const endpoint = expect(await user.POST("/webhook-endpoints", { body: { url: `${BASE}/webhook` } }), 201);
  if (endpoint) {
    const path = { id: String(endpoint.id) };
    if (!endpoint.secret.startsWith("whsec_")) fail("no whsec_ secret", "create_webhook_endpoint");
    expect(await user.GET("/webhook-endpoints", {}), 200);
    expect(await user.GET("/webhook-endpoints/{id}", { params: { path } }), 200);
    const changed = expect(
      await user.PATCH("/webhook-endpoints/{id}", { params: { path }, body: { enabled: true } }),
      200,
    );
    if (changed && !changed.enabled) fail("not enabled", "update_webhook_endpoint");
    const rotated = expect(await user.POST("/webhook-endpoints/{id}/rotate-secret", { params: { path } }), 200);
    if (rotated && rotated.secret_version !== 2) fail(`version ${rotated.secret_version}`, "rotate_webhook_endpoint_secret");
  }

  // Event-sourced accounts: open, every event type append_event takes, then the list.
  const id = `${RUN}-acc`;
  const opened = expect(
    await user.POST("/accounts", {
      body: { account_id: id, owner: "Ann Lee" },
      params: { header: { "Idempotency-Key": `${RUN}-open` } },
    }),
    201,
  );
  if (opened) {
    expect(await user.GET("/accounts"), 200);
    const acc = await user.GET("/accounts/{id}", { params: { path: { id } } });
    expect(acc, 200);
    expect(
      await user.POST("/accounts/{id}/events", {
        params: { path: { id }, header: { "Idempotency-Key": `${RUN}-deposit`, "If-Match": etag(acc) } },
        body: { event_type: "MoneyDeposited", payload: { amount_cents: 2500 } },
      }),
      201,
    );
    expect(
      await user.POST("/accounts/{id}/events", {
        params: { path: { id } },
        body: { event_type: "MoneyWithdrawn", payload: { amount_cents: 1000 }, expected_sequence: 2 },
      }),
      201,
    );
    expect(
      await user.POST("/accounts/{id}/events", {
        params: { path: { id } },
        body: { event_type: "AccountClosed", payload: { reason: "done" } },
      }),
      201,
    );
    const events = expect(await user.GET("/accounts/{id}/events", { params: { path: { id }, query: { limit: 10 } } }), 200);
    const want = ["AccountOpened", "MoneyDeposited", "MoneyWithdrawn", "AccountClosed"];
    if (events && events.items.map((e) => e.event_type).join() !== want.join()) {
      fail(`events ${events.items.map((e) => e.event_type).join()}, expected ${want.join()}`, "list_events");
    } else if (events && JSON.stringify(events.items[3]?.payload) !== JSON.stringify({ reason: "done" })) {
      fail(`AccountClosed stored ${JSON.stringify(events.items[3]?.payload)}, sent {"reason":"done"}`, "list_events");
    }
    // A transfer between two fresh accounts: a deposit into the first, then 700 moved.
    const [from, to] = [`${RUN}-from`, `${RUN}-to`];
    for (const account_id of [from, to]) {
      expect(await user.POST("/accounts", { body: { account_id, owner: "Ann Lee" } }), 201);
    }
    expect(
      await user.POST("/accounts/{id}/events", {
        params: { path: { id: from } },
        body: { event_type: "MoneyDeposited", payload: { amount_cents: 1000 } },
      }),
      201,
    );
    const moved = expect(
      await user.POST("/transfers", {
        params: { header: { "Idempotency-Key": `${RUN}-transfer` } },
        body: { from, to, amount_cents: 700 },
      }),
      201,
    );
    if (moved && (moved.withdrawn.sequence !== 3 || moved.deposited.sequence !== 2)) {
      fail(`transfer events ${JSON.stringify(moved)}`, "create_transfer");
    }
    // The live streams: the server runs with EVENT_STREAM_MAX_AGE_MS=1000, so each answer ends.
    const stream = expect(
      await user.GET("/accounts/{id}/events/stream", { params: { path: { id: to } }, parseAs: "text" }),
      200,
    );
    if (stream !== undefined && !stream.includes("id: 2\n")) {
      fail(`the stream of ${to}: ${stream.slice(0, 300)}`, "stream_account_events");
    }
    const feed = expect(await operator.GET("/events/stream", { parseAs: "text" }), 200);
    if (feed !== undefined && !feed.includes("event: end")) {
      fail(`the feed: ${feed.slice(-300)}`, "stream_all_events");
    }
    const closed = expect(await operator.GET("/accounts/{id}", { params: { path: { id } } }), 200);
    if (closed && (closed.is_open || closed.balance_cents !== 1500)) {
      fail(`after the four events expected closed with 1500, got ${JSON.stringify(closed)}`, "get_account");
    }
  }

  // Articles.
  expect(
    await user.POST("/articles", {
      body: { title: `${RUN} article`, author: "Ann", category: "tests" },
      params: { header: { "Idempotency-Key": `${RUN}-article` } },
    }),
    201,
  );
  expect(await user.GET("/articles/offset", { params: { query: { limit: 2, offset: 0 } } }), 200);
  const page = expect(await user.GET("/articles/cursor", { params: { query: { limit: 1 } } }), 200);
  if (page?.has_more && typeof page.next_cursor === "number") {
    expect(await user.GET("/articles/cursor", { params: { query: { limit: 1, after: page.next_cursor } } }), 200);
  }

  // Versioned notes.
  const v1 = expect(
    await user.POST("/v1/notes", {
      body: { title: `${RUN} v1`, content: "old shape" },
      params: { header: { "Idempotency-Key": `${RUN}-v1` } },
    }),
    201,
  );
  if (v1) expect(await user.GET("/v1/notes/{id}", { params: { path: { id: v1.id } } }), 200);
  expect(await user.GET("/v1/notes", { params: { query: { limit: 5 } } }), 200);
  const v2 = expect(
    await user.POST("/v2/notes", {
      body: { title: `${RUN} v2`, body: "new shape", tags: ["a", "b"] },
      params: { header: { "Idempotency-Key": `${RUN}-v2` } },
    }),
    201,
  );
  if (v2) expect(await user.GET("/v2/notes/{id}", { params: { path: { id: v2.data.id } } }), 200);
  expect(await user.GET("/v2/notes", { params: { query: { limit: 5 } } }), 200);
  expect(await operator.GET("/metrics/v1-usage"), 200);

  // The example routes over the same store.
  const en = expect(
    await user.POST("/examples/notes", {
      body: { title: `${RUN} example`, body: "x" },
      params: { header: { "Idempotency-Key": `${RUN}-example-note` } },
    }),
    201,
  );
  if (en) {
    const path = { id: en.id };
    expect(await user.GET("/examples/notes"), 200);
    const g = await user.GET("/examples/notes/{id}", { params: { path } });
    expect(g, 200);
    expect(
      await user.PUT("/examples/notes/{id}", {
        params: { path, header: { "If-Match": etag(g) } },
        body: { title: `${RUN} example`, body: "y" },
      }),
      200,
    );
    expect(await user.DELETE("/examples/notes/{id}", { params: { path } }), 204);
  }
  const et = expect(
    await user.POST("/examples/tags", {
      body: { name: `${RUN}-example-tag` },
      params: { header: { "Idempotency-Key": `${RUN}-example-tag` } },
    }),
    201,
  );
  if (et) {
    const path = { id: et.id };
    expect(await user.GET("/examples/tags"), 200);
    const g = await user.GET("/examples/tags/{id}", { params: { path } });
    expect(g, 200);
    expect(
      await user.PUT("/examples/tags/{id}", {
        params: { path, header: { "If-Match": etag(g) } },
        body: { name: `${RUN}-example-tag2` },
      }),
      200,
    );
    expect(await user.DELETE("/examples/tags/{id}", { params: { path } }), 204);
  }

  // The endpoint's delivery log once the dispatcher has tried; a redelivery; then it goes.
  if (endpoint) {
    const path = { id: String(endpoint.id) };
    let first: { id: number; message_id: string } | undefined;
    for (let i = 0; i < 100 && !first; i++) {
      const log = expect(await user.GET("/webhook-endpoints/{id}/deliveries", { params: { path } }), 200);
      first = log?.items[0];
      if (!first) await new Promise((done) => setTimeout(done, 100));
    }
    if (!first) {
      fail("no delivery attempt within 10 s", "list_webhook_deliveries");
    } else {
      const again = expect(
        await user.POST("/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver", {
          params: { path: { ...path, delivery_id: first.id } },
        }),
        201,
      );
      if (again && (!again.manual || again.message_id !== first.message_id)) {
        fail(`redelivery ${JSON.stringify(again)}`, "redeliver_webhook");
      }
    }
    expect(await user.DELETE("/webhook-endpoints/{id}", { params: { path } }), 204);
  }

  // Signed webhook intake: the signature covers exactly the bytes sent, so the body is
  // serialised once, signed, and sent as that string.
  const body = { event_type: "invoice.paid", run: RUN };
  const raw = JSON.stringify(body);
  const t = Math.floor(Date.now() / 1000).toString();
  const sig = createHmac("sha256", WEBHOOK_SECRET).update(`${t}.${raw}`).digest("hex");
  const receipt = expect(
    await anon.POST("/webhook", {
      params: { header: { "X-Webhook-Signature": `t=${t},v1=${sig}` } },
      body,
      bodySerializer: () => raw,
    }),
    202,
  );
  if (receipt && receipt.status !== "accepted") fail(`status ${receipt.status}`, "receive_webhook");
  expect(await operator.GET("/webhook/events", { params: { query: { limit: 5 } } }), 200);
  const audit = expect(await operator.GET("/audit", { params: { query: { limit: 10, user_id: uid } } }), 200);
  if (audit && audit.items.length === 0) fail("no entry for the run's user", "list_audit");
  return summary();
}

function summary(): number {
  for (const opId of operations.keys()) {
    if (!called.has(opId)) fail("never called (add it to scripts/clients/call-every-operation.ts)", opId);
  }
  const failed = new Set(failures.map(([op]) => op).filter((op): op is string => op !== undefined));
  const done = [...operations.keys()].filter((op) => called.has(op));
  if (failures.length > 0) {
    console.log(`typescript: ${failures.length} failures:`);
    for (const [op, message] of failures) console.log(`typescript:   ${op ? `${op}: ` : ""}${message}`);
  }
  const passed = done.filter((op) => !failed.has(op)).length;
  console.log(
    `typescript: ${done.length}/${operations.size} operations called, ${passed} passed, ${done.length - passed} failed`,
  );
  return failures.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error("typescript: the run stopped:", err);
    summary();
    process.exit(1);
  },
);
