"""Turns wrk outputs (one file per run) into docs/PERFORMANCE.md tables."""
import json
import re
import sys
from pathlib import Path


def parse(path: Path):
    text = path.read_text()
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    lat = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", text, re.M))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return {
        "rps": float(rps.group(1)) if rps else 0.0,
        "p50": lat.get("50", "?"),
        "p99": lat.get("99", "?"),
        "non2xx": int(errors.group(1)) if errors else 0,
    }


def millis(text):
    m = re.match(r"([\d.]+)(us|ms|s)$", text or "")
    if not m:
        return None
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def main():
    results_dir = Path(sys.argv[1])
    meta = json.loads((results_dir / "meta.json").read_text())
    rows = {}
    for f in sorted(results_dir.glob("*.txt")):
        backend = f.stem.split("__", 1)[1]
        name = f.read_text().splitlines()[0].removeprefix("# route: ")
        rows.setdefault(name, {})[backend] = parse(f)
    backends = ["sqlite", "postgres"]
    out = []
    out.append("| Route | " + " | ".join(f"{b} req/s | {b} p50 | {b} p99" for b in backends) + " |")
    out.append("|---|" + "---|---|---|" * len(backends))
    for name, by_backend in rows.items():
        cells = []
        for b in backends:
            r = by_backend.get(b)
            cells.append(f"{r['rps']:,.0f} | {r['p50']} | {r['p99']}" if r else "– | – | –")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    ratios = []
    targets = [
        ("GET /notes/{id}", "ceiling: bare GET /notes/{id}", "the bare actix-web + Diesel ceiling", 0.8),
        ("POST /tokens/verify", "GET /notes/{id}", "our `GET /notes/{id}`", 0.7),
        ("POST /webhook (1 KB, signed)", "GET /notes/{id}", "our `GET /notes/{id}`", 0.6),
    ]
    for b in backends:
        for route, base, label, target in targets:
            ours = rows.get(route, {}).get(b)
            ref = rows.get(base, {}).get(b)
            if ours and ref and ref["rps"]:
                ratio = ours["rps"] / ref["rps"]
                mark = "meets" if ratio >= target else "misses"
                ratios.append(f"- {b}: `{route}` = **{ratio:.2f}×** {label} ({ours['rps']:,.0f} vs {ref['rps']:,.0f} req/s; target ≥ {target}×, {mark} it)")
    # Ledger appends (issue 6): absolute targets with 16 connections, per backend.
    ledger_targets = {"sqlite": 2500, "postgres": 3000}
    for b in backends:
        for n in ("1 account", "100 accounts"):
            r = rows.get(f"POST /accounts/{{id}}/events ({n})", {}).get(b)
            target = ledger_targets.get(b)
            if r and target:
                mark = "meets" if r["rps"] >= target else "misses"
                ratios.append(f"- {b}: ledger appends to {n} = **{r['rps']:,.0f}/s** (target ≥ {target:,}/s, {mark} it)")
    print(meta["header"])
    print("\n".join(out))
    for b in backends:
        first = rows.get("GET /articles/cursor first page", {}).get(b)
        last = rows.get("GET /articles/cursor last page", {}).get(b)
        off_first = rows.get("GET /articles/offset first page", {}).get(b)
        off_last = rows.get("GET /articles/offset last page", {}).get(b)
        if first and last and millis(first["p50"]) and millis(last["p50"]):
            ratio = millis(last["p50"]) / millis(first["p50"])
            mark = "meets" if ratio <= 1.2 else "misses"
            line = f"- {b}: cursor route, deepest page p50 = **{ratio:.2f}×** its first page (target ≤ 1.2×, {mark} it)"
            if off_first and off_last and millis(off_first["p50"]) and millis(off_last["p50"]):
                line += f"; the offset route's deepest page is {millis(off_last['p50']) / millis(off_first['p50']):.1f}× its first"
            ratios.append(line)
    # Issue 17: what synchronous=FULL (the default) costs against the opt-out, same run.
    for route in ("POST /notes", "POST /accounts/{id}/events (100 accounts)"):
        full = rows.get(route, {}).get("sqlite")
        normal_name = route[:-1] + ", synchronous=normal)" if route.endswith(")") else route + " (synchronous=normal)"
        normal = rows.get(normal_name, {}).get("sqlite")
        if full and normal and normal["rps"]:
            ratios.append(f"- sqlite: `{route}` with synchronous=FULL = **{full['rps'] / normal['rps']:.2f}×** synchronous=normal "
                          f"({full['rps']:,.0f} vs {normal['rps']:,.0f} req/s; p99 {full['p99']} vs {normal['p99']}): the price of a 2xx that survives power loss")
    print()
    print("Ratios within this run:")
    print()
    print("\n".join(ratios))
    errors = [f"{n} ({b}): {r['non2xx']}" for n, bb in rows.items() for b, r in bb.items() if r["non2xx"]]
    if errors:
        print()
        print("Non-2xx answers during the runs: " + ", ".join(errors))
    # scripts/bench-mcp.sh writes its own markdown section (MCP gateway vs direct API).
    mcp = results_dir / "mcp.md"
    if mcp.exists():
        print()
        print(mcp.read_text().rstrip("\n"))


main()
