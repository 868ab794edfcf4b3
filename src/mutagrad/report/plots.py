"""The report's plots as inline SVG, drawn with matplotlib when it is installed.

matplotlib comes from the optional extra ``report`` (``pip install -e
'.[report]'`` in a clone, which ``make report`` does) and is imported only here,
only when plots are drawn: :func:`render_plots` returns ``None`` without it,
and the HTML page then says how to get the plots.

Three plots, each with one row per *system* (mutagrad's modes, then the
peers that ran):

* ``accepted`` – how many programs each system gets right and how the rest
  end (poison errors split into genuine and false alarms, refusals, wrong
  values, wrong gradients, crashes), as stacked bars;
* ``overhead`` – per system, the distribution over the programs it gets right
  of gradient time / plain numpy time: one dot per program, the median
  marked and written out;
* ``relative`` – per system, the distribution of its time over poison mode's
  (mutagrad's default) on each program both get right: strict's row is the
  cost of the check, the peers' rows compare engines program by program.

Both timing plots use a log scale with plain tick labels (``1×``, ``10×``,
``20×``). A ratio whose times are too spread to read is a hollow ring, left
out of the median; the medians are the ones the headline and the tables
state (:func:`mutagrad.report.summary.overhead_ratios`). Every outcome has
one colour (:data:`OUTCOME_COLOURS`), the same in the bars and in the HTML
table's cells.
"""

from __future__ import annotations

import io
import math
import re
import statistics
from typing import Any

from mutagrad.report.peers import system_label, timed_label
from mutagrad.report.runner import MeasuredResult, PoisonVerdict, Report
from mutagrad.report.summary import overhead_ratios, relative_ratios
from mutagrad.testing.verdicts import Outcome

INSTALL_HINT = (
    "The plots need matplotlib: pip install matplotlib (in a clone of mutagrad, make report "
    "installs it with the extra report), then run mutagrad report again."
)

DARK_TEXT = "#212121"
LIGHT_TEXT = "#ffffff"

# outcome class -> (label, colour, colour of text on it)
OUTCOME_COLOURS: dict[str, tuple[str, str, str]] = {
    "ok": ("right: value and gradient", "#81c784", DARK_TEXT),
    "genuine": ("poison error, genuine", "#ffd54f", DARK_TEXT),
    "false-alarm": ("poison error, false alarm", "#ffb74d", DARK_TEXT),
    "mutation": ("MutationError (strict)", "#bdbdbd", DARK_TEXT),
    "refused": ("other refusal", "#a1887f", DARK_TEXT),
    "value-differs": ("WRONG value (differs from numpy)", "#f06292", DARK_TEXT),
    "wrong": ("WRONG gradient", "#c62828", LIGHT_TEXT),
    "crash": ("crash or timeout", "#7b1fa2", LIGHT_TEXT),
    "program-error": ("program error (fails on numpy)", "#eceff1", DARK_TEXT),
}

BASELINE_MODE = "poison"
"""The mode the ``relative`` plot divides by: mutagrad's default."""

# Tick mantissas per decade, densest first: a reader sees 2×, 5×, 10× rather than 10^0.3.
TICK_STEPS = ((1, 2, 5), (1, 3), (1,))
MAX_TICKS = 8


def outcome_class(result: MeasuredResult) -> str:
    """The key of :data:`OUTCOME_COLOURS` for a result."""
    if result.outcome is Outcome.RIGHT:
        return "ok"
    if result.outcome is Outcome.WRONG:
        return "wrong"
    if result.outcome is Outcome.VALUE_DIFFERS:
        return "value-differs"
    if result.outcome in (Outcome.CRASH, Outcome.TIMEOUT):
        return "crash"
    if result.outcome is Outcome.PROGRAM_ERROR:
        return "program-error"
    if result.poison_verdict is PoisonVerdict.GENUINE:
        return "genuine"
    if result.poison_verdict is PoisonVerdict.FALSE_ALARM:
        return "false-alarm"
    if result.error_type == "MutationError" and not result.is_peer:
        return "mutation"
    return "refused"


def ratio_label(ratio: float) -> str:
    """``20×``, ``1.5×``, ``0.5×``: a ratio as a plain number."""
    return f"{ratio:.2g}×" if ratio < 10 else f"{ratio:.0f}×"


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
    """Stacked horizontal bars: per system, how many programs end in each outcome class."""
    systems = list(report.systems)
    counts = {key: [0] * len(systems) for key in OUTCOME_COLOURS}
    for i, system in enumerate(systems):
        for p in report.programs:
            counts[outcome_class(p.mode(system))][i] += 1
    figure = figure_class(figsize=(8, 1.4 + 0.45 * len(systems)))
    axes = figure.add_subplot()
    left = [0] * len(systems)
    positions = list(range(len(systems)))[::-1]
    for key, (label, colour, text_colour) in OUTCOME_COLOURS.items():
        values = counts[key]
        if not any(values):
            continue
        bars = axes.barh(positions, values, left=left, color=colour, label=label, height=0.65)
        for bar, value in zip(bars, values):
            if value:
                axes.text(
                    bar.get_x() + bar.get_width() / 2,
                    bar.get_y() + bar.get_height() / 2,
                    str(value),
                    ha="center",
                    va="center",
                    color=text_colour,
                    fontsize=8,
                )
        left = [a + b for a, b in zip(left, values)]
    axes.set_yticks(positions, [system_label(s) for s in systems], fontsize=9)
    axes.set_xlim(0, len(report.programs))
    axes.set_xlabel(f"programs (of {len(report.programs)})")
    axes.set_title("How each system ends on every program, run as written")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3, fontsize=8, frameon=False)
    axes.spines[["top", "right"]].set_visible(False)
    return _svg(figure, "accepted")


def _plain_log_axis(axes: Any, values: list[float], label: str) -> None:
    """A log x axis whose ticks are 1-2-5 steps labelled as plain ratios (``20×``)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    low, high = min(values) / 1.3, max(values) * 1.3
    axes.set_xscale("log")
    axes.set_xlim(low, high)
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    for steps in TICK_STEPS:  # the densest ticks that stay few enough to read
        ticks = [m * 10.0**e for e in decades for m in steps if low <= m * 10.0**e <= high]
        if len(ticks) <= MAX_TICKS:
            break
    axes.xaxis.set_major_locator(FixedLocator(ticks))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}×"))
    axes.xaxis.set_minor_locator(NullLocator())
    axes.grid(axis="x", color="#e0e0e0", linewidth=0.6, zorder=0)
    axes.set_xlabel(label)
    axes.spines[["top", "right"]].set_visible(False)


Strip = tuple[str, list[float], list[float]]
"""A row of a timing plot: its label, the readable ratios, the noisy ones."""


def _strips(axes: Any, rows: list[Strip], colour: str, reference: float | None = None) -> None:
    """One row of dots per strip, the readable ratios' median drawn as a bar and written beside
    it; the noisy ratios as hollow rings."""
    positions = list(range(len(rows)))[::-1]
    for y, (_, values, noisy) in zip(positions, rows):
        # Spread the dots over the row's height in a fixed pattern, so they do not hide
        # each other and the plot is the same on every run.
        offsets = [((i * 7) % 11 - 5) / 22 for i in range(len(values) + len(noisy))]
        axes.scatter(
            values, [y + o for o in offsets[: len(values)]], s=12, color=colour, alpha=0.45,
            zorder=3, linewidths=0,
        )  # fmt: skip
        if noisy:
            axes.scatter(
                noisy, [y + o for o in offsets[len(values) :]], s=14, facecolors="none",
                edgecolors="#9e9e9e", zorder=3, linewidths=0.8,
            )  # fmt: skip
        if not values:
            continue
        median = statistics.median(values)
        axes.plot([median, median], [y - 0.35, y + 0.35], color=DARK_TEXT, linewidth=2, zorder=4)
        axes.annotate(
            f"median {ratio_label(median)}",
            (median, y + 0.36),
            textcoords="offset points",
            xytext=(0, 1),
            ha="center",
            va="bottom",
            fontsize=7.5,
            color=DARK_TEXT,
        )
    if reference is not None:
        axes.axvline(reference, color="#757575", linewidth=1, linestyle="--", zorder=2)
    axes.set_yticks(positions, [label for label, _, _ in rows], fontsize=9)
    axes.set_ylim(-0.7, len(rows) - 0.2)


def overhead_plot(report: Report, figure_class: Any) -> str | None:
    """Per system: gradient time / plain numpy time over the programs it gets right."""
    rows: list[Strip] = []
    for system in report.systems:
        ratios, noisy = overhead_ratios(report, system)
        if ratios or noisy:
            rows.append((f"{timed_label(system)} ({len(ratios)})", ratios, noisy))
    if not rows:
        return None
    figure = figure_class(figsize=(8, 1.2 + 0.55 * len(rows)))
    axes = figure.add_subplot()
    _strips(axes, rows, "#1565c0")
    _plain_log_axis(
        axes,
        [v for _, values, noisy in rows for v in (*values, *noisy)],
        "gradient call / plain numpy call (one dot per program the system gets right; "
        "hollow: too spread to read)",
    )
    axes.set_title("Overhead over plain numpy (programs in the median in brackets)")
    return _svg(figure, "overhead")


def relative_plot(report: Report, figure_class: Any) -> str | None:
    """Per system but poison mode: its time over poison mode's, per program both get right."""
    if BASELINE_MODE not in report.modes:
        return None
    rows: list[Strip] = []
    for system in report.systems:
        if system == BASELINE_MODE:
            continue
        ratios, noisy = relative_ratios(report, system, BASELINE_MODE)
        if ratios or noisy:
            rows.append((f"{timed_label(system)} ({len(ratios)})", ratios, noisy))
    if not rows:
        return None
    figure = figure_class(figsize=(8, 1.2 + 0.55 * len(rows)))
    axes = figure.add_subplot()
    _strips(axes, rows, "#6a1b9a", reference=1.0)
    _plain_log_axis(
        axes,
        [1.0, *(v for _, values, noisy in rows for v in (*values, *noisy))],
        "gradient time / mutagrad poison's (one dot per program both get right)",
    )
    axes.set_title("Time relative to mutagrad poison mode, program by program (dashed: equal)")
    return _svg(figure, "relative")


PLOTS = ("accepted", "overhead", "relative")


def render_plots(report: Report) -> dict[str, str] | None:
    """``{name: svg}`` for each plot of :data:`PLOTS` with data; None without matplotlib."""
    figure_class = load_matplotlib()
    if figure_class is None:
        return None
    plots = {"accepted": accepted_plot(report, figure_class)}
    for name, draw in (("overhead", overhead_plot), ("relative", relative_plot)):
        svg = draw(report, figure_class)
        if svg is not None:
            plots[name] = svg
    return plots
