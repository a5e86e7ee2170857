"""Pagination cost as the table grows: offset vs cursor pages at three depths, per backend.

Reads the wrk runs named `curve: <kind> <depth> page @ <rows>` (kind offset|cursor, depth
first|middle|last, rows an integer) and draws them as a deterministic SVG plus a markdown table.
"""
import math
import re
from xml.sax.saxutils import escape, quoteattr

from report import millis

NAME = re.compile(r"curve: (offset|cursor) (first|middle|last) page @ (\d+)")
PREFIX = "curve: "
KINDS = ("offset", "cursor")
DEPTHS = ("first", "middle", "last")
SERIES = [(k, d) for k in KINDS for d in DEPTHS]
BACKENDS = ("sqlite", "postgres")
TITLES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
# Offset in warm colours, cursor in cool ones; lighter = shallower page.
COLOURS = {
    ("offset", "first"): "#e8a200",
    ("offset", "middle"): "#e8590c",
    ("offset", "last"): "#c92a2a",
    ("cursor", "first"): "#15aabf",
    ("cursor", "middle"): "#1c7ed6",
    ("cursor", "last"): "#5f3dc4",
}
TITLE = "Page latency by depth: offset grows with the offset, cursor stays flat"

WIDTH, HEIGHT = 900, 380
PLOT_TOP, PLOT_BOTTOM = 64, 290
PLOT_LEFT, PLOT_RIGHT = 70, 20  # margins inside each panel


def is_curve(name):
    return name.startswith(PREFIX)


def _backend_order(backends):
    return [b for b in BACKENDS if b in backends] + sorted(b for b in backends if b not in BACKENDS)


def collect(rows):
    """{backend: {(kind, depth): [(rows, p50_ms, rps), ...] sorted by rows}} from report.py's rows."""
    found = {}
    for name, by_backend in rows.items():
        m = NAME.fullmatch(name)
        if not m:
            continue
        kind, depth, size = m.group(1), m.group(2), int(m.group(3))
        for backend, r in by_backend.items():
            p50 = millis(r["p50"])
            # A run without a usable latency (wrk failed, or 0us) has no place on a log scale.
            if p50 is None or p50 <= 0:
                continue
            found.setdefault(backend, {}).setdefault((kind, depth), []).append((size, p50, r["rps"]))
    return {
        b: {s: sorted(found[b][s]) for s in SERIES if s in found[b]}
        for b in _backend_order(found)
    }


def _sizes(points):
    return sorted({p[0] for series in points.values() for pts in series.values() for p in pts})


def size_label(n):
    if n >= 1_000_000:
        return f"{n / 1_000_000:g}M"
    if n >= 1000:
        return f"{n / 1000:g}k"
    return str(n)


def ms_label(v):
    if v < 0.1:
        return f"{v:.3f} ms"
    if v < 10:
        return f"{v:.2f} ms"
    if v < 100:
        return f"{v:.1f} ms"
    return f"{v:,.0f} ms"


def _decade_label(k):
    return f"{10.0 ** k:.{-k}f}" if k < 0 else str(10 ** k)


def _n(v):
    return f"{v:.1f}"


def _text(x, y, s, size=12, anchor="middle", extra=""):
    return (f'<text x="{_n(x)}" y="{_n(y)}" font-size="{size}" text-anchor="{anchor}"{extra}>'
            f"{escape(s)}</text>")


def svg(points):
    """One log-log panel per backend: x = rows in the table, y = p50 latency in ms."""
    sizes = _sizes(points)
    latencies = [p[1] for series in points.values() for pts in series.values() for p in pts]
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif">',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        _text(WIDTH / 2, 26, TITLE, size=16, extra=' font-weight="bold"'),
    ]
    if not sizes:
        out.append("</svg>")
        return "\n".join(out) + "\n"

    # Both axes are shared by the panels, so the backends compare at a glance.
    x_lo, x_hi = math.log10(sizes[0]), math.log10(sizes[-1])
    pad = 0.5 if x_hi == x_lo else (x_hi - x_lo) * 0.08
    x_lo, x_hi = x_lo - pad, x_hi + pad
    y_lo = math.floor(math.log10(min(latencies)))
    y_hi = math.ceil(math.log10(max(latencies)))
    if y_hi == y_lo:
        y_hi += 1

    panel_w = WIDTH / len(points)
    for i, (backend, series) in enumerate(points.items()):
        left = i * panel_w + PLOT_LEFT
        right = (i + 1) * panel_w - PLOT_RIGHT

        def x_of(n):
            return left + (math.log10(n) - x_lo) / (x_hi - x_lo) * (right - left)

        def y_of(ms):
            return PLOT_BOTTOM - (math.log10(ms) - y_lo) / (y_hi - y_lo) * (PLOT_BOTTOM - PLOT_TOP)

        out.append(f'<g id={quoteattr("panel-" + backend)}>')
        out.append(_text((left + right) / 2, PLOT_TOP - 12, TITLES.get(backend, backend), size=14,
                         extra=' font-weight="bold"'))
        out.append(f'<rect x="{_n(left)}" y="{PLOT_TOP}" width="{_n(right - left)}" '
                   f'height="{PLOT_BOTTOM - PLOT_TOP}" fill="none" stroke="#868e96"/>')
        for k in range(y_lo, y_hi + 1):
            y = y_of(10.0 ** k)
            out.append(f'<line x1="{_n(left)}" y1="{_n(y)}" x2="{_n(right)}" y2="{_n(y)}" stroke="#e9ecef"/>')
            out.append(_text(left - 6, y + 4, _decade_label(k), size=11, anchor="end"))
        for n in sizes:
            x = x_of(n)
            out.append(f'<line x1="{_n(x)}" y1="{PLOT_TOP}" x2="{_n(x)}" y2="{PLOT_BOTTOM}" stroke="#e9ecef"/>')
            out.append(_text(x, PLOT_BOTTOM + 16, size_label(n), size=11))
        out.append(_text((left + right) / 2, PLOT_BOTTOM + 36, "rows in the table"))
        y_mid = (PLOT_TOP + PLOT_BOTTOM) / 2
        out.append(_text(left - 46, y_mid, "p50 latency (ms)",
                         extra=f' transform="rotate(-90 {_n(left - 46)} {_n(y_mid)})"'))
        for (kind, depth), pts in series.items():
            colour = COLOURS[(kind, depth)]
            dash = ' stroke-dasharray="6 4"' if kind == "cursor" else ""
            coords = " ".join(f"{_n(x_of(n))},{_n(y_of(ms))}" for n, ms, _ in pts)
            out.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
            for n, ms, _ in pts:
                out.append(f'<circle cx="{_n(x_of(n))}" cy="{_n(y_of(ms))}" r="3.5" fill="{colour}"/>')
        out.append("</g>")

    # One legend for both panels, in a centred row under them.
    out.append("<g>")
    entry_w = 130
    start = (WIDTH - entry_w * len(SERIES)) / 2
    for j, (kind, depth) in enumerate(SERIES):
        x = start + j * entry_w
        dash = ' stroke-dasharray="6 4"' if kind == "cursor" else ""
        colour = COLOURS[(kind, depth)]
        out.append(f'<line x1="{_n(x)}" y1="362" x2="{_n(x + 28)}" y2="362" stroke="{colour}" stroke-width="2"{dash}/>')
        out.append(f'<circle cx="{_n(x + 14)}" cy="362" r="3.5" fill="{colour}"/>')
        out.append(_text(x + 34, 366, f"{kind}, {depth}", anchor="start"))
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def table(points):
    """Markdown: a row per (backend, kind, depth), a column per table size, cells 'p50 (req/s)'."""
    sizes = _sizes(points)
    out = [
        "| Backend | Page | " + " | ".join(f"{n:,} rows" for n in sizes) + " |",
        "|---|---|" + "---|" * len(sizes),
    ]
    for backend, series in points.items():
        for kind, depth in SERIES:
            by_size = {n: (ms, rps) for n, ms, rps in series.get((kind, depth), [])}
            cells = [f"{ms_label(by_size[n][0])} ({by_size[n][1]:,.0f}/s)" if n in by_size else "–"
                     for n in sizes]
            out.append(f"| {TITLES.get(backend, backend)} | {kind}, {depth} page | " + " | ".join(cells) + " |")
    return "\n".join(out)
