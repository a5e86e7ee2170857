"""Request pools for scripts/bench/replay.lua: one file per route, one request per line
("METHOD<TAB>PATH[<TAB>BODY]"), in the order replay.lua sends them.

  pools.py rows OUT ROWS USER     the reads and writes of the 1,000,000-row sections, for a
                                  database seeded by `server seed` with ROWS rows per table,
                                  and the token routes of USER
  pools.py tokens OUT USER BASE   DELETE and rotate pools over the live tokens of USER, read
                                  page by page from GET BASE/users/{USER}/tokens

Writes that need distinct targets (DELETE, a unique name) walk disjoint id ranges in order, so
a run of fewer requests than POOL never sends one twice; the rest pick ids at random (fixed
seed) from the seeded rows. Note 1 holds every seeded comment: no pool deletes it. Every
update writes content of its own: SQLite leaves a page untouched when a row is set to what it
already holds, so repeated content would time updates that write nothing.
"""
import json
import random
import sys
import urllib.request
from pathlib import Path

POOL = 300_000


def write(out: Path, name: str, lines):
    (out / f"{name}.txt").write_text("".join("\t".join(line) + "\n" for line in lines))


def rows(out: Path, n: int, user: str):
    rnd = random.Random(7)
    pick = lambda: rnd.randint(2, n)  # noqa: E731
    # Distinct ids from the upper part of the seeded range, clear of what the reads pick often.
    distinct = range(n - POOL + 1, n + 1)
    body = lambda **kw: json.dumps(kw, separators=(",", ":"))  # noqa: E731
    write(out, "get_note", (("GET", f"/notes/{pick()}") for _ in range(50_000)))
    write(out, "post_note", (("POST", "/notes", body(title=f"bench {i}", body="written by the load test")) for i in range(POOL)))
    write(out, "put_note", (("PUT", f"/notes/{pick()}", body(title=f"edited {i}", body="edited by the load test")) for i in range(POOL)))
    write(out, "delete_note", (("DELETE", f"/notes/{i}") for i in distinct))
    write(out, "post_tag", (("POST", "/tags", body(name=f"bench-tag-{i}")) for i in range(POOL)))
    write(out, "put_tag", (("PUT", f"/tags/{i - POOL}", body(name=f"renamed-tag-{i}")) for i in distinct))
    write(out, "delete_tag", (("DELETE", f"/tags/{i}") for i in distinct))
    write(out, "post_comment", (("POST", f"/notes/{pick()}/comments", body(body="a comment from the load test")) for _ in range(POOL)))
    write(out, "put_comment", (("PUT", f"/notes/1/comments/{i - POOL}", body(body="edited")) for i in distinct))
    write(out, "delete_comment", (("DELETE", f"/notes/1/comments/{i}") for i in distinct))
    write(out, "post_article", (("POST", "/articles", body(title=f"bench {i}", author="Load Test", category="testing")) for i in range(POOL)))
    write(out, "post_v1_note", (("POST", "/v1/notes", body(title=f"bench {i}", content="v1")) for i in range(POOL)))
    write(out, "post_v2_note", (("POST", "/v2/notes", body(title=f"bench {i}", body="v2", tags=["bench"])) for i in range(POOL)))
    write(out, "post_user", (("POST", "/users", body(name=f"bench-user-{i}")) for i in range(POOL)))
    write(out, "list_tokens", [("GET", f"/users/{user}/tokens?limit=20")])
    write(out, "post_token", (("POST", f"/users/{user}/tokens", '{"scope":"read"}') for _ in range(POOL)))
    write(out, "post_account", (("POST", "/accounts", body(account_id=f"bench-new-{i}", owner="bench")) for i in range(POOL)))


def tokens(out: Path, user: str, base: str):
    # Page by page, as a client would: one unpaged list of the run's ~100,000 tokens would take
    # the server tens of MiB for that one answer, and the run measures its routes, not this.
    live, offset = [], 0
    while True:
        request = urllib.request.Request(f"{base}/users/{user}/tokens?limit=100&offset={offset}",
                                         headers={"X-User-Id": user})
        with urllib.request.urlopen(request) as answer:
            page = json.load(answer)
        live += [t["id"] for t in page["items"] if not t.get("revoked_at")]
        offset += len(page["items"])
        if not page["items"] or offset >= page["total"]:
            break
    half = len(live) // 2
    write(out, "delete_token", (("DELETE", f"/users/{user}/tokens/{i}") for i in live[:half]))
    write(out, "rotate_token", (("POST", f"/users/{user}/tokens/{i}/rotate") for i in live[half:]))


if __name__ == "__main__":
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    if sys.argv[1] == "rows":
        rows(out, int(sys.argv[3]), sys.argv[4])
    else:
        tokens(out, sys.argv[3], sys.argv[4])
