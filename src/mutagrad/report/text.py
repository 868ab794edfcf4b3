"""Plain-text rendering of a :class:`~mutagrad.report.runner.Report` for the terminal.

:func:`render_text` gives the headline (wrong gradients, crashes and timeouts
in red when ``color`` is on), an aligned table (one row per program, one
column per mode, then what Zygote does), a legend, and, when there are any, a
block listing the results that mean a bug. Given the terminal's ``width``,
the table's widest columns are cut (``…``) until a row fits it; in a pipe or
a log (no width) every cell is whole. Generated programs
(``--generated N``, maybe thousands) get no row of the table, only their
counts in the per-mode and per-category tables; one that means a bug is
listed with its source.
"""

from __future__ import annotations

from mutagrad.report.corpus import DEFAULT_ATOL, DEFAULT_RTOL
from mutagrad.report.generated import GENERATED_CATEGORY, listing
from mutagrad.report.runner import MeasuredResult, Report
from mutagrad.report.summary import category_rows, headline, summarize
from mutagrad.testing.verdicts import SILENTLY_WRONG, Outcome

WRONG_MARKER = "<<< WRONG GRADIENT"
ZYGOTE_HEADER = "Zygote (not measured)"

RED = "\033[31;1m"
GREEN = "\033[32m"
YELLOW = "\033[33m"
RESET = "\033[0m"


def _paint(text: str, colour: str, color: bool) -> str:
    return f"{colour}{text}{RESET}" if color and text.strip() else text


def _colour_of(result: MeasuredResult) -> str:
    if result.outcome is Outcome.RIGHT:
        return GREEN
    if result.outcome in (Outcome.REFUSED, Outcome.PROGRAM_ERROR):
        return YELLOW
    return RED


MIN_COLUMN = 8
"""The narrowest a column of the table is cut to when it does not fit the terminal."""


def _align(rows: list[list[str]], width: int | None = None) -> list[list[str]]:
    """``rows`` padded into columns; cut (``…``) widest first to fit ``width`` characters."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    if width is not None:
        while sum(widths) + 2 * (len(widths) - 1) > width:
            widest = max(range(len(widths)), key=widths.__getitem__)
            if widths[widest] <= MIN_COLUMN:
                break
            widths[widest] -= 1
    return [[_cut(cell, w).ljust(w) for cell, w in zip(row, widths)] for row in rows]


def _cut(cell: str, width: int) -> str:
    return cell if len(cell) <= width else cell[: width - 1] + "…"


def render_headline(report: Report, color: bool = False) -> str:
    """The lead sentence on its own line, then each detail after a dash."""
    lines = []
    for k, sentence in enumerate(headline(summarize(report))):
        text = sentence.text if k == 0 else f"- {sentence.text}"
        lines.append(_paint(text, RED, color) if sentence.alarm else text)
    return "\n".join(lines)


def render_table(report: Report, color: bool = False, width: int | None = None) -> str:
    """One row per program: its category, its cell in each mode and peer, then Zygote's.

    ``width``: the terminal's columns, which the table is cut to fit (None: whole cells).
    """
    header = ["program", "category", *report.systems, ZYGOTE_HEADER]
    rows = [header]
    results = []
    shown = [p for p in report.programs if p.program.category != GENERATED_CATEGORY]
    for p in shown:
        row_results = [p.mode(m) for m in report.systems]
        results.append(row_results)
        rows.append(
            [p.label, p.program.category, *(r.cell for r in row_results), p.program.zygote or "-"]
        )
    aligned = _align(rows, width)
    cut = any("…" in a and "…" not in c for r, cs in zip(rows, aligned) for a, c in zip(cs, r))
    ruler = len("  ".join(aligned[0]).rstrip())
    lines = ["  ".join(aligned[0]).rstrip(), "-" * ruler]
    for p, cells, row_results in zip(shown, aligned[1:], results):
        first = len(cells) - len(report.systems) - 1
        painted = list(cells)
        for i, r in enumerate(row_results):
            painted[first + i] = _paint(cells[first + i], _colour_of(r), color)
        line = "  ".join(painted).rstrip()
        if any(r.outcome in SILENTLY_WRONG for r in p.modes):
            line += "  " + _paint(WRONG_MARKER, RED, color)
        lines.append(line)
    if cut:
        lines.append(
            f"(cells cut to fit {width} columns: index.html and report.md show them whole)"
        )
    generated = len(report.programs) - len(shown)
    if generated:
        lines.append(
            f"(and {generated} generated programs, counted in the tables below; "
            "each one's row and source are in index.html and report.md)"
        )
    return "\n".join(lines)


def render_legend() -> str:
    return (
        f"ok: value and gradient match plain numpy and central finite differences "
        f"(rtol {DEFAULT_RTOL:g}, atol {DEFAULT_ATOL:g} x max(1, |reference|));\n"
        "an error name: refused. Poisoned (genuine): the overwritten value was needed;\n"
        "Poisoned (false alarm): re-run with poisoned captures read anyway, the gradient was\n"
        "right. WRONG value: the value differs from plain numpy's; WRONG gradient: the value\n"
        "is right, the gradient is not (in a mutagrad mode either is a bug). crash: an\n"
        "unexpected exception. program error: the program fails on plain numpy. Zygote: not\n"
        "measured; what Zygote does with the Julia equivalent (from the seed documents, and\n"
        "its rule that every array mutation raises)."
    )


def render_failures(report: Report) -> str:
    """mutagrad's wrong results, crashes and timeouts, one line per program ("" when none)."""
    groups: dict[tuple[str, str], list[MeasuredResult]] = {}
    for r in report.failures:
        groups.setdefault((r.program, r.outcome.value), []).append(r)
    lines = []
    for (program, _), results in groups.items():
        r = results[0]
        modes = ", ".join(x.mode for x in results)
        issue = report.program(program).program.known_issue
        if issue:
            what = r.outcome.value
            if r.error_type:
                what += f" ({r.error_type}: {r.detail})"
            lines.append(f"  KNOWN    {program} [{modes}]: {what}; {issue}")
        elif r.outcome in SILENTLY_WRONG:
            what = "value differs" if r.outcome is Outcome.VALUE_DIFFERS else "gradient differs"
            worst = max(x.max_abs_difference or 0.0 for x in results)
            lines.append(
                f"  WRONG    {program} [{modes}]: {what}; max |gradient - reference| = {worst:.3g}"
            )
        elif r.outcome is Outcome.TIMEOUT:
            lines.append(f"  TIMEOUT  {program} [{modes}]: {r.detail}")
        else:
            lines.append(f"  CRASH    {program} [{modes}]: {r.error_type}: {r.detail}")
        code = report.program(program).program.code
        if code:
            lines += ["           " + line for line in _reproduction(report, program)]
    if not lines:
        return ""
    return "\n".join(["BUGS (a wrong gradient, a crash or a hang must never happen):", *lines])


def _reproduction(report: Report, name: str) -> list[str]:
    """A generated program's source and arguments, to paste into a bug report."""
    program = report.program(name).program
    return [*listing(program), f"# {program.source}"]


def render_program_errors(report: Report) -> str:
    """The corpus programs that fail on plain numpy, with what is wrong ("" when none)."""
    if not report.program_errors:
        return ""
    lines = ["PROGRAM ERRORS (the corpus program fails on plain numpy; nothing was compared):"]
    lines += [f"  {p.reference_error}" for p in report.program_errors]
    return "\n".join(lines)


def render_verdict_counts(report: Report) -> str:
    """One line per mode and peer: how its results split into outcomes, in a fixed order."""
    order = ["right", "poisoned, genuine", "poisoned, false alarm", "poisoned, undetermined"]
    lines = []
    for mode in report.systems:
        counts: dict[str, int] = {}
        for p in report.programs:
            r = p.mode(mode)
            if r.poison_verdict is not None:
                key = f"poisoned, {r.poison_verdict.value}"
            elif r.outcome is Outcome.REFUSED:
                key = str(r.error_type)
            elif r.outcome in SILENTLY_WRONG:
                key = r.cell
            else:
                key = r.outcome.value
            counts[key] = counts.get(key, 0) + 1
        keys = [k for k in order if k in counts]
        keys += sorted(k for k in counts if k not in order)
        lines.append(f"  {mode:<9} " + ", ".join(f"{counts[k]} {k}" for k in keys))
    return "per mode and peer:\n" + "\n".join(lines)


def render_categories(report: Report) -> str:
    """Per category: programs, how many each mode accepts, poison verdicts."""
    header, rows = category_rows(summarize(report))
    aligned = _align([header, *rows])
    lines = ["  ".join(row).rstrip() for row in aligned]
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:-1], "-" * len(lines[0]), lines[-1]])


def render_text(report: Report, color: bool = False, width: int | None = None) -> str:
    """The terminal summary; ``width``: the terminal's columns (None in a pipe or a log)."""
    sections = [
        render_headline(report, color),
        render_table(report, color, width),
        render_legend(),
        render_verdict_counts(report),
        render_categories(report),
    ]
    program_errors = render_program_errors(report)
    if program_errors:
        sections.append(_paint(program_errors, YELLOW, color))
    failures = render_failures(report)
    if failures:
        sections.append(_paint(failures, RED, color))
    return "\n\n".join(sections)
