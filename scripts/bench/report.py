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
    for b in backends:
        ours = rows.get("GET /notes/{id}", {}).get(b)
        bare = rows.get("ceiling: bare GET /notes/{id}", {}).get(b)
        if ours and bare and bare["rps"]:
            ratios.append(f"- {b}: `GET /notes/{{id}}` = **{ours['rps'] / bare['rps']:.2f}×** the bare actix-web + Diesel ceiling ({ours['rps']:,.0f} vs {bare['rps']:,.0f} req/s)")
    print(meta["header"])
    print("\n".join(out))
    print()
    print("Ratio to the ceiling (target ≥ 0.8× on SQLite):")
    print()
    print("\n".join(ratios))
    errors = [f"{n} ({b}): {r['non2xx']}" for n, bb in rows.items() for b, r in bb.items() if r["non2xx"]]
    if errors:
        print()
        print("Non-2xx answers during the runs: " + ", ".join(errors))


main()
