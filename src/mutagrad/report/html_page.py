"""``index.html``: the report as one self-contained page.

Everything is inline: the stylesheet, the plots (SVG from
:mod:`mutagrad.report.plots`), no scripts, no external ``src`` or ``href``,
so the file can be mailed or archived alone. Without matplotlib the page says
how to get the plots instead.

Order: the headline (mutagrad's wrong results, crashes and timeouts in red),
the plots, the outcome table (programs as rows, mutagrad's modes and the peers
as columns, colour-coded with the plots' colours, the error message or note
as a tooltip), the corpus programs that fail on plain numpy, the generated
programs' source (``--generated N``: one folded block each), the counts and
timings per system, how each peer runs a program and how the peers refuse
(and why PyTorch is not among them), the counts per category, the poison
errors with their verdicts, every measured number, the settings and the
environment.
"""

from __future__ import annotations

import re
from html import escape

from mutagrad.report.generated import GENERATED_CATEGORY, listing
from mutagrad.report.peers import (
    PEERS,
    PEERS_EXTRA_HINT,
    PYTORCH_NOTE,
    column_title,
    system_label,
)
from mutagrad.report.plots import (
    INSTALL_HINT,
    OUTCOME_COLOURS,
    PLOTS,
    outcome_class,
    render_plots,
)
from mutagrad.report.runner import MeasuredResult, Report
from mutagrad.report.summary import (
    category_rows,
    fuzz_refusal_rows,
    headline,
    known_issue_rows,
    refusal_rows,
    summarize,
    system_rows,
    why,
)
from mutagrad.report.tables import (
    MEMORY_NOTE,
    NOISY_MARK,
    NOT_TIMED,
    REGENERATE,
    TIMES_NOTE,
    generated_text,
    memory_header,
    memory_row,
    time_header,
    time_row,
    timing_text,
    workers_text,
)
from mutagrad.testing.verdicts import Outcome

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 96em; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
.headline { border: 1px solid #ccc; background: #fafafa; padding: 0.6em 1.2em; }
.headline p.lead { font-size: 1.1em; margin: 0.3em 0 0.6em; }
.headline li { margin: 0.3em 0; }
.alarm { color: #c62828; font-weight: bold; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; position: sticky; top: 0; }
td.num { text-align: right; white-space: nowrap; }
td.time { text-align: right; white-space: nowrap; }
td.time small { color: #666; }
td.noisy { color: #999; font-style: italic; }
.legend span { display: inline-block; padding: 0.1em 0.5em; margin: 0.1em; }
.plot svg { max-width: 100%; height: auto; }
.plot { max-width: 60em; }
.note { color: #555; font-size: 0.9em; max-width: 60em; }
#outcomes td.result, #outcomes td:first-child { white-space: normal; }
#outcomes th, #outcomes td { padding: 0.2em 0.3em; }
"""


def _style() -> str:
    rules = [STYLE]
    for key, (_, colour, text_colour) in OUTCOME_COLOURS.items():
        rules.append(f"td.{key}, span.{key} {{ background: {colour}; color: {text_colour}; }}")
    rules.append("td.wrong, td.value-differs, td.crash { font-weight: bold; }")
    return "\n".join(rules)


def _breakable(text: str) -> str:
    """``text`` escaped, with line-break opportunities inside CamelCase and snake_case names.

    A long error name (``TracerArrayConversionError``) may then wrap in its cell instead of
    widening its column, which keeps the outcome table within a 1400 px window.
    """
    pieces = re.split(r"(?<=[a-z_])(?=[A-Z])|(?<=_)", text)
    return "<wbr>".join(escape(piece) for piece in pieces)


def _cell(result: MeasuredResult) -> str:
    kind = outcome_class(result)
    tooltip = result.detail or ""
    if result.error_type and result.outcome is not Outcome.PROGRAM_ERROR:
        tooltip = f"{result.error_type}: {tooltip}"
    if result.unchecked_max_abs_difference is not None:
        tooltip += (
            f" (unchecked re-run: max |gradient - reference| = "
            f"{result.unchecked_max_abs_difference:.3g})"
        )
    if result.max_abs_difference is not None:
        tooltip = f"max |gradient - reference| = {result.max_abs_difference:.3g}"
        if result.value_matches is False:
            tooltip = "the value differs from plain numpy's; " + tooltip
        if result.gradient_missing:
            tooltip = "no gradient (None) reached an argument; " + tooltip
    title = f' title="{escape(tooltip)}"' if tooltip else ""
    return f'<td class="result {kind}"{title}>{_breakable(result.cell)}</td>'


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


def _time_table(report: Report) -> str:
    """The times, one program a row: each cell the time over its spread and ratio."""
    header = time_header(report)
    out = ['<table id="measurements">', "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header)]
    for p in report.programs:
        name, *times = time_row(report, p)
        cells = [f"<td>{_breakable(name[0])}</td>"]
        for lines in times:
            noisy = lines[0].startswith(NOISY_MARK)
            cls = "time noisy" if noisy else "time"
            title = ' title="too spread to read: left out of every median"' if noisy else ""
            below = "".join(f"<br><small>{escape(line)}</small>" for line in lines[1:])
            cells.append(f'<td class="{cls}"{title}>{escape(lines[0])}{below}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


ZYGOTE_HEADER = "Zygote (not measured)"
ZYGOTE_EXPLAINED = (
    "Zygote (not measured): what Zygote does with the Julia equivalent, taken from the seed "
    "documents and from Zygote's rule that every array mutation raises."
)


def _outcome_table(report: Report) -> str:
    """Programs as rows, systems as columns; what a program does is its name's tooltip.

    The description lives in the tooltip, and the cells are padded less than other tables'
    so that the table, with four columns of mutagrad's and three peers, fits a 1024 px
    window.
    """
    header = ["program", "category", *(column_title(s) for s in report.systems)]
    out = [
        '<table id="outcomes">',
        "<tr>"
        + "".join(f"<th>{escape(h)}</th>" for h in header)
        + f'<th title="{escape(ZYGOTE_EXPLAINED)}">{escape(ZYGOTE_HEADER)}</th></tr>',
    ]
    for p in report.programs:
        program = p.program
        about = " ".join(
            text for text in (program.description, program.known_issue or program.note) if text
        )
        if program.code:
            about += "\n\n" + program.code
        out.append(
            "<tr>"
            f'<td title="{escape(about)}">{_breakable(p.label)}</td>'
            f"<td>{escape(program.category)}</td>"
            + "".join(_cell(p.mode(m)) for m in report.systems)
            + f"<td>{escape(program.zygote or '–')}</td></tr>"
        )
    out.append("</table>")
    return "\n".join(out)


def _legend() -> str:
    items = "".join(
        f'<span class="{key}">{escape(label)}</span>'
        for key, (label, _, _) in OUTCOME_COLOURS.items()
    )
    return f'<p class="legend">{items}</p>'


def _peers_section(report: Report) -> list[str]:
    """How each peer runs a program, how they refuse, and why PyTorch is not among them."""
    parts = ["<h2>The peers: how they run the programs</h2>"]
    if report.peers:
        parts.append("<ul>")
        for name in report.peers:
            peer = PEERS[name]
            parts.append(f"<li><b>{escape(system_label(name))}</b>: {escape(peer.how)}.</li>")
        parts.append("</ul>")
    else:
        parts.append(
            f'<p class="note" id="no-peers">No peer AD system ran in this report. To run the '
            f"same programs on JAX, autograd and MyGrad: {escape(PEERS_EXTRA_HINT)}.</p>"
        )
    parts.append(f'<p class="note">{escape(PYTORCH_NOTE)}</p>')
    header, rows = refusal_rows(report)
    if rows:
        parts.append("<h2>How the peers refuse</h2>")
        parts.append(_table(header, rows, numeric_from=3))
        parts[-1] = parts[-1].replace('<td class="num">', "<td>")  # only the count is a number
    return parts


def _program_errors(report: Report) -> list[str]:
    if not report.program_errors:
        return []
    return [
        '<h2 id="program-errors">Program errors: corpus programs that fail on plain numpy</h2>',
        '<p class="note">These are errors in the corpus, not in mutagrad or a peer: nothing '
        "was compared for them. Fix the program so that it runs on plain ndarrays and returns "
        "a scalar.</p>",
        _table(
            ["program", "what is wrong"],
            [[p.name, str(p.reference_error)] for p in report.program_errors],
        ),
    ]


def _generated_programs(report: Report) -> list[str]:
    """Every generated program's source and arguments, folded, with its outcomes."""
    generated = [p for p in report.programs if p.program.category == GENERATED_CATEGORY]
    if not generated:
        return []
    parts = [
        '<h2 id="generated">Generated programs</h2>',
        f'<p class="note">{escape(generated_text(report))}: random straight-line numpy programs '
        "with views and in-place writes, each judged like a corpus program. Open one for its "
        "source and arguments (a0, a1, ...).</p>",
    ]
    for p in generated:
        outcomes = ", ".join(f"{column_title(m)}: {p.mode(m).cell}" for m in report.systems)
        code = "\n".join(listing(p.program))
        parts.append(
            f'<details id="{escape(p.name)}"><summary><b>{escape(p.name)}</b> '
            f"{escape(outcomes)}</summary><pre>{escape(code)}</pre></details>"
        )
    return parts


def render_html(report: Report, plots: dict[str, str] | bool | None = True) -> str:
    """The page. ``plots``: SVGs to embed, ``True`` to draw them here, ``None`` for none."""
    if plots is True:
        plots = render_plots(report)
    summary = summarize(report)
    title = "mutagrad report: strict (Zygote's rule) vs poison vs snapshot"
    if report.peers:
        title += " vs " + ", ".join(column_title(peer) for peer in report.peers)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>mutagrad report</title>",
        f"<style>{_style()}</style>",
        "</head><body>",
        f"<h1>{escape(title)}</h1>",
    ]
    lead, *details = headline(summary)
    alarm = " alarm" if lead.alarm else ""
    parts += ['<div class="headline">', f'<p class="lead{alarm}">{escape(lead.text)}</p>', "<ul>"]
    for sentence in details:
        cls = ' class="alarm"' if sentence.alarm else ""
        parts.append(f"<li{cls}>{escape(sentence.text)}</li>")
    parts.append("</ul></div>")

    parts.append("<h2>Plots</h2>")
    if plots:
        for name in PLOTS:
            if name in plots:
                parts.append(f'<div class="plot" id="plot-{name}">{plots[name]}</div>')
    else:
        parts.append(f'<p class="note" id="no-plots">{escape(INSTALL_HINT)}</p>')
    if not report.settings.timing:
        parts.append(f'<p class="note" id="not-timed">{escape(NOT_TIMED)}</p>')

    parts += ["<h2>Outcomes</h2>", _legend(), _outcome_table(report)]
    parts.append(
        '<p class="note">Hover a program\'s name for what it does (and why its poison error is '
        "genuine or a false alarm), a cell for the error message or the distance from the "
        "reference. "
        "ok: value and gradient match plain numpy and central finite differences. WRONG "
        "value: the engine returned a value that differs from plain numpy's; WRONG gradient: "
        "the value is right and the gradient is not. A poison error is genuine when re-running "
        "with poisoned captures read anyway gives a wrong gradient, a false alarm when it gives "
        f"the right one. {escape(ZYGOTE_EXPLAINED)}</p>"
    )
    parts += _program_errors(report)
    parts += _generated_programs(report)

    parts.append("<h2>Per system</h2>")
    parts.append(_table(*system_rows(summary), numeric_from=2))
    parts.append(
        '<p class="note">Counts over the programs that run on plain numpy. Times: the median '
        "over programs of each program's median gradient call; overhead: that time over the "
        "plain numpy call of the same program (both with fresh argument copies).</p>"
    )
    parts += _peers_section(report)

    parts.append("<h2>By category</h2>")
    parts.append(_table(*category_rows(summary), numeric_from=1))
    header, rows = fuzz_refusal_rows(report)
    if rows:
        parts.append("<h2>What the differential fuzzer's programs were refused for</h2>")
        parts.append(_table(header, rows, numeric_from=1))

    parts.append("<h2>Poison errors</h2>")
    poisoned = [
        (p, r, verdict)
        for p in report.programs
        for r in p.modes
        if (verdict := r.poison_verdict) is not None
    ]
    if poisoned:
        parts.append(
            _table(
                ["program", "mode", "verdict", "why", "error"],
                [
                    [
                        p.name,
                        r.mode,
                        verdict.value,
                        why(p.program.note, verdict.value),
                        r.detail or "",
                    ]
                    for p, r, verdict in poisoned
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
    if not report.settings.timing:
        parts.append(f'<p class="note">{escape(NOT_TIMED)}</p>')
    parts.append(f'<p class="note">{escape(TIMES_NOTE)}</p>')
    parts.append(_time_table(report))
    parts.append(f'<p class="note">{escape(MEMORY_NOTE)}</p>')
    memory = _table(
        memory_header(report), [memory_row(report, p) for p in report.programs], numeric_from=1
    )
    parts.append(memory.replace("<table>", '<table id="memory">', 1))

    settings = report.settings
    limit = f"{settings.time_limit:g} s" if settings.time_limit else "none"
    facts = [
        ("corpus", settings.corpus),
        ("modes", ", ".join(settings.modes)),
        ("peers", ", ".join(settings.peers) or "none"),
        ("generated programs", generated_text(report)),
        ("timing", timing_text(settings)),
        ("run in", workers_text(settings)),
        ("memory", "tracemalloc peak, in a separate call (mutagrad's modes only)"),
        ("tolerances", f"rtol {settings.rtol:g}, atol {settings.atol:g} x max(1, |reference|)"),
        ("finite-difference step", f"{settings.finite_difference_step:g}"),
        ("time limit per call", limit),
        ("started", report.started),
        ("run time", f"{report.seconds:.1f} s"),
        *((key, str(value)) for key, value in report.environment.items()),
    ]
    parts.append("<h2>Settings and environment</h2>")
    parts.append(_table(["setting", "value"], [[k, v] for k, v in facts]))
    parts.append(f'<p class="note">Regenerate with <code>{escape(REGENERATE)}</code>.</p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
