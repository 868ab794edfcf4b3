"""``index.html``: the report as one self-contained page.

Everything is inline: the stylesheet, the plots (SVG from
:mod:`mutagrad.report.plots`), no scripts, no external ``src`` or ``href``,
so the file can be mailed or archived alone. Without matplotlib the page says
how to get the plots instead.

Order: the headline (wrong gradients, crashes and timeouts in red), the plots,
the outcome table (programs as rows, modes as columns, colour-coded, the error
message or note as a tooltip), the overhead per mode, the poison errors with
their verdicts, every measured number, the settings and the environment.
"""

from __future__ import annotations

from html import escape

from mutagrad.report.plots import INSTALL_HINT, OUTCOME_COLOURS, outcome_class, render_plots
from mutagrad.report.runner import ModeResult, Report
from mutagrad.report.summary import category_rows, headline, known_issue_rows, summarize, why
from mutagrad.report.tables import REGENERATE, measurement_header, measurement_row, ratio_text

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 96em; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
.headline { border: 1px solid #ccc; background: #fafafa; padding: 0.6em 1.2em; }
.headline li { margin: 0.3em 0; }
.alarm { color: #c62828; font-weight: bold; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; position: sticky; top: 0; }
td.num { text-align: right; white-space: nowrap; }
.legend span { display: inline-block; padding: 0.1em 0.5em; margin: 0.1em; }
.plot svg { max-width: 100%; height: auto; }
.note { color: #555; font-size: 0.9em; }
#outcomes td { white-space: nowrap; }
#outcomes td:last-child { white-space: normal; min-width: 22em; }
"""

# Light backgrounds for table cells, one per outcome class of plots.OUTCOME_COLOURS.
CELL_BACKGROUNDS = {
    "ok": "#c8e6c9",
    "genuine": "#fff59d",
    "false-alarm": "#ffcc80",
    "mutation": "#e0e0e0",
    "refused": "#d7ccc8",
    "wrong": "#ef9a9a",
    "crash": "#ce93d8",
}


def _style() -> str:
    rules = [STYLE]
    for key, background in CELL_BACKGROUNDS.items():
        rules.append(f"td.{key}, span.{key} {{ background: {background}; }}")
    rules.append("td.wrong, td.crash { font-weight: bold; }")
    return "\n".join(rules)


def _cell(result: ModeResult) -> str:
    kind = outcome_class(result)
    tooltip = result.error_message or ""
    if result.unchecked_max_abs_difference is not None:
        tooltip += (
            f" (unchecked re-run: max |gradient - reference| = "
            f"{result.unchecked_max_abs_difference:.3g})"
        )
    if result.max_abs_difference is not None:
        tooltip = f"max |gradient - reference| = {result.max_abs_difference:.3g}"
    title = f' title="{escape(tooltip)}"' if tooltip else ""
    return f'<td class="{kind}"{title}>{escape(result.cell)}</td>'


def _table(header: list[str], rows: list[list[str]], numeric_from: int = 99) -> str:
    out = ["<table>", "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = ' class="num"' if i >= numeric_from else ""
            cells.append(f"<td{cls}>{escape(cell)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _outcome_table(report: Report) -> str:
    header = ["program", "category", *report.modes, "Zygote", "what it does"]
    out = [
        '<table id="outcomes">',
        "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>",
    ]
    for p in report.programs:
        program = p.program
        explanation = program.known_issue or program.note
        note = f' title="{escape(explanation)}"' if explanation else ""
        out.append(
            "<tr>"
            f"<td{note}>{escape(p.label)}</td><td>{escape(program.category)}</td>"
            + "".join(_cell(p.mode(m)) for m in report.modes)
            + f"<td>{escape(program.zygote or '–')}</td>"
            f"<td>{escape(program.description)}</td></tr>"
        )
    out.append("</table>")
    return "\n".join(out)


def _legend() -> str:
    items = "".join(
        f'<span class="{key}">{escape(label)}</span>' for key, (label, _) in OUTCOME_COLOURS.items()
    )
    return f'<p class="legend">{items}</p>'


def render_html(report: Report, plots: dict[str, str] | bool | None = True) -> str:
    """The page. ``plots``: SVGs to embed, ``True`` to draw them here, ``None`` for none."""
    if plots is True:
        plots = render_plots(report)
    summary = summarize(report)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>mutagrad report</title>",
        f"<style>{_style()}</style>",
        "</head><body>",
        "<h1>mutagrad report: strict (Zygote's rule) vs poison vs snapshot</h1>",
        '<ul class="headline">',
    ]
    for sentence in headline(summary):
        cls = ' class="alarm"' if sentence.alarm else ""
        parts.append(f"<li{cls}>{escape(sentence.text)}</li>")
    parts.append("</ul>")

    parts.append("<h2>Plots</h2>")
    if plots:
        for name in ("accepted", "overhead"):
            if name in plots:
                parts.append(f'<div class="plot" id="plot-{name}">{plots[name]}</div>')
    else:
        parts.append(f'<p class="note" id="no-plots">{escape(INSTALL_HINT)}</p>')

    parts += ["<h2>Outcomes</h2>", _legend(), _outcome_table(report)]
    parts.append(
        '<p class="note">Hover a cell for the error message or the distance from the '
        "reference, a program's name for why its poison error is genuine or a false alarm. "
        "ok: value and gradient match plain numpy and central finite differences. A poison "
        "error is genuine when re-running with poisoned captures read anyway gives a wrong "
        "gradient, a false alarm when it gives the right one. Zygote: what Zygote does with the "
        "Julia equivalent (from the seed documents, and its rule that every array mutation "
        "raises).</p>"
    )

    parts.append("<h2>By category</h2>")
    parts.append(_table(*category_rows(summary), numeric_from=1))

    parts.append("<h2>Overhead per mode</h2>")
    parts.append(
        _table(
            [
                "mode",
                "accepted",
                "median overhead (programs it accepts)",
                f"median overhead (the {summary.overhead_programs} programs every mode accepts)",
            ],
            [
                [
                    m,
                    f"{summary.accepted[m]}/{summary.programs}",
                    ratio_text(summary.median_overhead_accepted[m]),
                    ratio_text(summary.median_overhead[m]),
                ]
                for m in report.modes
            ],
            numeric_from=1,
        )
    )

    parts.append("<h2>Poison errors</h2>")
    poisoned = [(p, r) for p in report.programs for r in p.modes if r.poison_verdict is not None]
    if poisoned:
        parts.append(
            _table(
                ["program", "mode", "verdict", "why", "error"],
                [
                    [
                        p.name,
                        r.mode,
                        r.poison_verdict.value,
                        why(p.program.note, r.poison_verdict.value),
                        r.error_message or "",
                    ]
                    for p, r in poisoned
                ],
            )
        )
    else:
        parts.append("<p>None.</p>")

    header, known = known_issue_rows(report)
    if known:
        parts.append('<h2 class="alarm">Known mutagrad bugs reproduced by the corpus</h2>')
        parts.append(_table(header, known))

    parts.append("<h2>Measurements</h2>")
    parts.append(
        _table(
            measurement_header(report),
            [measurement_row(report, p) for p in report.programs],
            numeric_from=1,
        )
    )

    settings = report.settings
    limit = f"{settings.time_limit:g} s" if settings.time_limit else "none"
    facts = [
        ("corpus", settings.corpus),
        ("modes", ", ".join(settings.modes)),
        (
            "timing",
            f"median of {settings.repeats} samples of ~{settings.sample_seconds * 1e3:g} ms",
        ),
        ("memory", "tracemalloc peak, in a separate call"),
        ("tolerances", f"rtol {settings.rtol:g}, atol {settings.atol:g} x max(1, |reference|)"),
        ("finite-difference step", f"{settings.finite_difference_step:g}"),
        ("time limit per call", limit),
        ("started", report.started),
        ("run time", f"{report.seconds:.1f} s"),
        *((key, str(value)) for key, value in report.environment.items()),
    ]
    parts.append("<h2>Settings and environment</h2>")
    parts.append(_table(["", ""], [[k, v] for k, v in facts]))
    parts.append(f'<p class="note">Regenerate with <code>{escape(REGENERATE)}</code>.</p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
