"""The report's plots as inline SVG, drawn with matplotlib when it is installed.

matplotlib comes from the optional extra ``report`` (``pip install
'mutagrad[report]'``, which ``make report`` does) and is imported only here,
only when plots are drawn: :func:`render_plots` returns ``None`` without it,
and the HTML page then says how to get the plots.

Two plots:

* ``accepted`` – per mode, the programs it accepts and how the rest end
  (poison errors split into genuine and false alarms), as stacked bars;
* ``overhead`` – per program and mode, the gradient's wall time over the plain
  numpy forward time, on a log scale (accepted results only).

Both use the colours of :data:`OUTCOME_COLOURS`, shared with the HTML table.
"""

from __future__ import annotations

import io
import re
from typing import Any

from mutagrad.report.runner import ModeResult, Outcome, PoisonVerdict, Report

INSTALL_HINT = (
    "The plots need matplotlib: pip install 'mutagrad[report]' (or run make report, "
    "which installs it), then run mutagrad report again."
)

# outcome class -> (label, colour)
OUTCOME_COLOURS: dict[str, tuple[str, str]] = {
    "ok": ("accepted, gradient right", "#2e7d32"),
    "genuine": ("poison error, genuine", "#f9a825"),
    "false-alarm": ("poison error, false alarm", "#ef6c00"),
    "mutation": ("MutationError (strict)", "#9e9e9e"),
    "refused": ("other refusal", "#795548"),
    "wrong": ("SILENTLY WRONG", "#c62828"),
    "crash": ("crash or timeout", "#6a1b9a"),
}
MODE_MARKERS = {
    "strict": ("o", "#546e7a"),
    "poison": ("s", "#1565c0"),
    "snapshot": ("^", "#ad1457"),
}


def outcome_class(result: ModeResult) -> str:
    """The key of :data:`OUTCOME_COLOURS` for a result."""
    if result.outcome is Outcome.OK:
        return "ok"
    if result.outcome is Outcome.WRONG:
        return "wrong"
    if result.outcome in (Outcome.CRASH, Outcome.TIMEOUT):
        return "crash"
    if result.poison_verdict is PoisonVerdict.GENUINE:
        return "genuine"
    if result.poison_verdict is PoisonVerdict.FALSE_ALARM:
        return "false-alarm"
    if result.error_type == "MutationError":
        return "mutation"
    return "refused"


def load_matplotlib() -> Any | None:
    """matplotlib's ``Figure`` class, or None when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401  (fails first when matplotlib is absent)
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure


def _prefix_ids(svg: str, prefix: str) -> str:
    """Make the SVG's element ids (and references to them) unique within the page."""
    ids = set(re.findall(r'id="([^"]+)"', svg))

    def rename(match: re.Match[str]) -> str:
        lead, name = match.group(1), match.group(2)
        return f"{lead}{prefix}-{name}" if name in ids else match.group(0)

    return re.sub(r'(id="|"#|url\(#)([^")]+)', rename, svg)


def _svg(figure: Any, name: str) -> str:
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mutagrad-report"}):
        figure.savefig(
            buffer,
            format="svg",
            bbox_inches="tight",
            metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
        )
    text = buffer.getvalue()
    text = text[text.index("<svg") :]  # drop the XML declaration and the DOCTYPE
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)
    return _prefix_ids(text, f"plot-{name}")


def accepted_plot(report: Report, figure_class: Any) -> str:
    """Stacked horizontal bars: per mode, how many programs end in each outcome class."""
    modes = list(report.modes)
    counts = {key: [0] * len(modes) for key in OUTCOME_COLOURS}
    for i, mode in enumerate(modes):
        for p in report.programs:
            counts[outcome_class(p.mode(mode))][i] += 1
    figure = figure_class(figsize=(7.5, 0.6 + 0.55 * len(modes)))
    axes = figure.add_subplot()
    left = [0] * len(modes)
    positions = list(range(len(modes)))[::-1]
    for key, (label, colour) in OUTCOME_COLOURS.items():
        values = counts[key]
        if not any(values):
            continue
        bars = axes.barh(positions, values, left=left, color=colour, label=label, height=0.6)
        for bar, value in zip(bars, values):
            if value:
                axes.text(
                    bar.get_x() + bar.get_width() / 2,
                    bar.get_y() + bar.get_height() / 2,
                    str(value),
                    ha="center",
                    va="center",
                    color="white",
                    fontsize=8,
                )
        left = [a + b for a, b in zip(left, values)]
    axes.set_yticks(positions, modes)
    axes.set_xlabel(f"programs (of {len(report.programs)})")
    axes.set_title("Programs accepted per mode, and how the others end")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=3, fontsize=8, frameon=False)
    axes.spines[["top", "right"]].set_visible(False)
    return _svg(figure, "accepted")


def overhead_plot(report: Report, figure_class: Any) -> str | None:
    """Per program (rows) and mode (markers): gradient time / plain forward time, log scale."""
    rows = [p for p in report.programs if any(p.overhead(m) is not None for m in report.modes)]
    if not rows:
        return None
    figure = figure_class(figsize=(7.5, 1.2 + 0.16 * len(rows)))
    axes = figure.add_subplot()
    positions = list(range(len(rows)))[::-1]
    for mode in report.modes:
        marker, colour = MODE_MARKERS.get(mode, ("D", "#000000"))
        xs, ys = [], []
        for y, p in zip(positions, rows):
            ratio = p.overhead(mode)
            if ratio is not None:
                xs.append(ratio)
                ys.append(y)
        axes.scatter(xs, ys, marker=marker, color=colour, label=mode, s=14, alpha=0.85, zorder=3)
    axes.set_xscale("log")
    axes.set_yticks(positions, [p.name for p in rows], fontsize=6.5)
    axes.set_ylim(-1, len(rows))
    axes.grid(axis="both", which="both", color="#e4e4e4", linewidth=0.5, zorder=0)
    axes.set_xlabel("gradient wall time / plain numpy forward time (log scale)")
    axes.set_title("Overhead per program and mode (accepted results)")
    axes.legend(loc="lower right", fontsize=8)
    return _svg(figure, "overhead")


def render_plots(report: Report) -> dict[str, str] | None:
    """``{"accepted": svg, "overhead": svg}``, or None when matplotlib is not installed."""
    figure_class = load_matplotlib()
    if figure_class is None:
        return None
    plots = {"accepted": accepted_plot(report, figure_class)}
    overhead = overhead_plot(report, figure_class)
    if overhead is not None:
        plots["overhead"] = overhead
    return plots
