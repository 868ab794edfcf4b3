"""Rendering a run: the printed tables, their markdown twin, the JSON file and the plot.

Everything here works on the JSON form of a run, so a saved run can be shown
again without measuring: ``python -m benchmarks.report results/<timestamp>.json``
(``--markdown`` prints the tables as markdown, for benchmarks/README.md), and
two runs can be compared: ``python -m benchmarks.report NEW.json --compare OLD.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Callable, Iterable
from typing import Any

from benchmarks.engines import DESCRIPTIONS, ENGINES

SHORT = {
    "numpy-hand": "numpy-hand",
    "mutagrad-poison": "poison",
    "mutagrad-strict": "strict",
    "mutagrad-snapshot": "snapshot",
    "torch": "torch",
    "autograd": "autograd",
    "mygrad": "mygrad",
    "jax": "jax",
    "jax-jit": "jax-jit",
}
# One colour per engine (matplotlib's tab10), the same in both panels of the plot.
COLORS = {engine: f"C{i}" for i, engine in enumerate(ENGINES)}
STATUS_CELL = {"not installed": "n/i", "error": "ERROR", "wrong gradient": "WRONG"}


def format_seconds(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{seconds / 1e-9:.0f} ns"


def format_bytes(count: float | None) -> str:
    if count is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count:.0f} B"


def _engines_in(run: dict[str, Any]) -> list[str]:
    used = {engine for case in run["cases"] for engine in case["engines"]}
    return [engine for engine in ENGINES if engine in used]


def _cell(entry: dict[str, Any] | None, value: Callable[[dict[str, Any]], str]) -> str:
    if entry is None:
        return ""
    if entry["status"] != "ok":
        return STATUS_CELL.get(entry["status"], entry["status"])
    return value(entry)


def _ratio_text(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}×"


def _tables(run: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of the three summary tables."""
    columns = _engines_in(run)
    header = ["case"] + [SHORT[e] for e in columns]
    specs: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("median time per gradient (forward + backward)", lambda e: format_seconds(e["median_s"])),
        ("ratio to PyTorch eager (< 1: faster than torch)", lambda e: _ratio_text(e["vs_torch"])),
        (
            "ratio to mutagrad poison (< 1: faster than mutagrad)",
            lambda e: _ratio_text(e["vs_mutagrad"]),
        ),
    ]
    tables = []
    for title, value in specs:
        rows = []
        for case in run["cases"]:
            rows.append([case["id"]] + [_cell(case["engines"].get(e), value) for e in columns])
        if any(cell not in ("", "-") for row in rows for cell in row[1:]):
            tables.append((title, header, rows))  # a ratio table without its peer is left out
    return tables


def compare(old: dict[str, Any], new: dict[str, Any], markdown: bool = False) -> str:
    """Medians of two runs side by side: new / old per case and engine (< 1: faster now)."""
    header = ["case", "engine", "old", "new", "new/old"]
    rows = []
    old_cases = {case["id"]: case for case in old["cases"]}
    for case in new["cases"]:
        before = old_cases.get(case["id"])
        if before is None:
            continue
        for engine in ENGINES:
            a, b = before["engines"].get(engine), case["engines"].get(engine)
            if not a or not b or a["status"] != "ok" or b["status"] != "ok":
                continue
            ratio = b["median_s"] / a["median_s"] if a["median_s"] else None
            rows.append(
                [
                    case["id"],
                    SHORT[engine],
                    format_seconds(a["median_s"]),
                    format_seconds(b["median_s"]),
                    _ratio_text(ratio),
                ]
            )
    title = f"{old['meta']['timestamp']} -> {new['meta']['timestamp']}"
    return title + "\n" + (_markdown if markdown else _plain)(header, rows)


def _plain(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    left = {0} | {i for i, name in enumerate(header) if name in ("note", "engine", "method")}
    lines = []
    for row in [header, *rows]:
        cells = [
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _detail_rows(case: dict[str, Any]) -> list[list[str]]:
    rows = []
    for engine in ENGINES:
        entry = case["engines"].get(engine)
        if entry is None:
            continue
        if entry["status"] == "ok":
            median = entry["median_s"]
            iqr = entry["iqr_s"]
            spread = f"{100 * iqr / median:.0f}%" if iqr is not None and median else "-"
            err = entry["max_rel_err"]
            rows.append(
                [
                    SHORT[engine],
                    format_seconds(median),
                    format_seconds(entry["min_s"]),
                    spread,
                    f"{entry['rounds']}×{entry['calls_per_sample']}",
                    f"{err:.0e}" if err is not None else "-",
                    entry["note"],
                ]
            )
        else:
            problem = entry["error"] or entry["status"]
            if entry["status"] == "wrong gradient":
                problem = f"WRONG GRADIENT (max rel err {entry['max_rel_err']:.3g})"
            rows.append(
                [
                    SHORT[engine],
                    STATUS_CELL.get(entry["status"], entry["status"]),
                    "",
                    "",
                    "",
                    "",
                    f"{problem} {entry['note']}".strip(),
                ]
            )
    return rows


DETAIL_HEADER = ["engine", "median", "min", "IQR", "rounds×calls", "grad err", "note"]


def _memory_rows(run: dict[str, Any]) -> list[list[str]]:
    rows = []
    for m in run.get("memory", []):
        peak = format_bytes(m["peak_bytes"]) if m["peak_bytes"] is not None else m["error"]
        rows.append(
            [
                m["workload"],
                str(m["size"]),
                SHORT.get(m["engine"], m["engine"]),
                m["method"],
                peak,
                format_seconds(m["seconds"]),
            ]
        )
    return rows


def _growth_rows(run: dict[str, Any]) -> list[list[str]]:
    return [
        [
            g["workload"],
            SHORT.get(g["engine"], g["engine"]),
            g["method"],
            f"{g['peak_ratio']:.2f}" if g["peak_ratio"] is not None else "-",
            f"{g['size_ratio']:g}",
            f"{g['exponent']:.2f}" if g["exponent"] is not None else "-",
        ]
        for g in run.get("memory_growth", [])
    ]


MEMORY_HEADER = ["workload", "N", "engine", "method", "peak", "call time (traced)"]
GROWTH_HEADER = ["workload", "engine", "method", "peak ratio", "size ratio", "exponent"]


def _loop_scaling(run: dict[str, Any]) -> str:
    cases = {case["id"]: case for case in run["cases"]}
    small, large = cases.get("mse_loop/N=300"), cases.get("mse_loop/N=3000")
    if small is None or large is None:
        return ""
    parts = []
    for engine in ENGINES:
        a, b = small["engines"].get(engine), large["engines"].get(engine)
        if a and b and a["status"] == b["status"] == "ok" and a["median_s"]:
            parts.append(f"{SHORT[engine]} {b['median_s'] / a['median_s']:.1f}")
    return ", ".join(parts)


def render(run: dict[str, Any], markdown: bool = False, details: bool = True) -> str:
    """The whole report as text (or markdown)."""
    table = _markdown if markdown else _plain
    out: list[str] = []

    def section(title: str) -> None:
        out.append("")
        out.append(f"### {title}" if markdown else f"== {title} ==")

    meta = run["meta"]
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items() if v)
    out.append(f"benchmark run {meta['timestamp']} ({'quick' if meta['quick'] else 'full'})")
    out.append(
        f"machine: {meta['machine']['cpu_model']}, {meta['machine']['cpu_count']} cores, "
        f"{meta['machine']['platform']}"
    )
    out.append(f"versions: {versions}")
    source = meta.get("mutagrad_source") or {}
    if source:
        commit = (source.get("commit") or "")[:12] or "an unknown commit"
        dirty = source.get("dirty")
        state = f", {len(dirty)} uncommitted change(s)" if dirty else ""
        out.append(f"mutagrad measured: {source.get('path')} at {commit}{state}")
    load = meta.get("load_average")
    if load:
        out.append(f"load average (1, 5, 15 min): start {load['start']}, end {load['end']}")
    for title, header, rows in _tables(run):
        section(title)
        out.append(table(header, rows))
    section("target checks (issue 6)")
    for check in run["targets"]:
        out.append(("- " if markdown else "  ") + check["text"])
    scaling = _loop_scaling(run)
    if scaling:
        out.append("")
        out.append("workload 1, time(3000) / time(300) on every engine (10 = linear): " + scaling)
    if run.get("memory"):
        section("peak memory of one gradient call")
        out.append(table(MEMORY_HEADER, _memory_rows(run)))
        section("memory growth between the two sizes")
        out.append(table(GROWTH_HEADER, _growth_rows(run)))
    if details:
        for case in run["cases"]:
            section(f"{case['id']}: {case['title']} (workload {case['workload']})")
            out.append(table(DETAIL_HEADER, _detail_rows(case)))
            fd = case["reference_fd_rel_err"]
            out.append(f"reference gradient vs central finite difference: rel err {fd:.1e}")
            for engine, outcome in case.get("probes", {}).items():
                out.append(f"with the buffer reused, {engine} {outcome}")
            if "bytes_copied" in case.get("extra", {}):
                extra = case["extra"]
                out.append(
                    f"snapshot bytes copied per call: {extra['bytes_copied']:,} "
                    f"(expected {extra['bytes_expected']:,})"
                )
        section("engines")
        for engine in _engines_in(run):
            out.append(("- " if markdown else "  ") + f"{SHORT[engine]}: {DESCRIPTIONS[engine]}")
    if run.get("problems"):
        section("PROBLEMS")
        out.extend(("!!! " + p) for p in run["problems"])
    return "\n".join(out)


def plot(run: dict[str, Any], path: str) -> str | None:
    """Medians per case (log bars) and peak memory against N; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import NullFormatter, ScalarFormatter
    except ImportError:
        return None
    columns = _engines_in(run)
    cases = run["cases"]
    has_memory = bool(run.get("memory"))
    fig, axes = plt.subplots(
        1,
        2 if has_memory else 1,
        figsize=(16 if has_memory else 12, 6),
        gridspec_kw={"width_ratios": [3, 1]} if has_memory else None,
        squeeze=False,
    )
    ax = axes[0][0]
    width = 0.8 / max(1, len(columns))
    for k, engine in enumerate(columns):
        xs, ys = [], []
        for i, case in enumerate(cases):
            entry = case["engines"].get(engine)
            if entry and entry["status"] == "ok" and entry["median_s"]:
                xs.append(i + (k - (len(columns) - 1) / 2) * width)
                ys.append(entry["median_s"])
        ax.bar(xs, ys, width=width, label=SHORT[engine], color=COLORS[engine])
    ax.set_yscale("log")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([c["id"] for c in cases], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("median seconds per gradient (log)")
    ax.set_title(f"mutagrad benchmarks, {run['meta']['timestamp']}")
    ax.legend(fontsize=8, ncol=3)
    ax.grid(axis="y", which="both", alpha=0.3)
    if has_memory:
        mem_ax = axes[0][1]
        series: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
        for m in run["memory"]:
            if m["peak_bytes"]:
                key = (m["workload"], m["engine"], m["method"])
                series.setdefault(key, []).append((m["size"], m["peak_bytes"]))
        for (workload, engine, method), points in sorted(series.items()):
            points.sort()
            style = ("-" if workload == "mse_loop" else "--") + ("o" if method == "rss" else "s")
            mem_ax.plot(
                [p[0] for p in points],
                [p[1] / 1e6 for p in points],
                style,
                color=COLORS.get(engine),
                label=f"{workload} {SHORT.get(engine, engine)} ({method})",
            )
        mem_ax.set_xscale("log")
        mem_ax.set_yscale("log")
        sizes = sorted({m["size"] for m in run["memory"]})
        mem_ax.xaxis.set_minor_formatter(NullFormatter())
        mem_ax.set_xticks(sizes)
        mem_ax.xaxis.set_major_formatter(ScalarFormatter())
        mem_ax.tick_params(axis="x", labelrotation=45, labelsize=8)
        mem_ax.set_xlabel("N")
        mem_ax.set_ylabel("peak MB (log)")
        mem_ax.set_title("peak memory of one call (slope 1 = linear)")
        mem_ax.legend(fontsize=6)
        mem_ax.grid(which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_json(run: dict[str, Any], path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(run, handle, indent=1, default=_json_default)
        handle.write("\n")


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _load(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Show a saved benchmark run again.")
    parser.add_argument("json", help="a run written by python -m benchmarks")
    parser.add_argument("--markdown", action="store_true", help="markdown tables")
    parser.add_argument("--no-details", action="store_true", help="summary tables only")
    parser.add_argument("--plot", metavar="PNG", help="also draw the plot to this file")
    parser.add_argument(
        "--compare",
        metavar="OLD_JSON",
        help="instead, compare medians with an earlier run (new/old per engine)",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    run = _load(args.json)
    if args.compare:
        print(compare(_load(args.compare), run, markdown=args.markdown))
        return 0
    print(render(run, markdown=args.markdown, details=not args.no_details))
    if args.plot:
        plot(run, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
