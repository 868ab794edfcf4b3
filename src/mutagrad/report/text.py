"""Plain-text rendering of a :class:`~mutagrad.report.runner.Report` for the terminal.

:func:`render_text` gives an aligned table (one row per scenario, one column
per mode, then what the seeds say Zygote does), a legend, a one-line summary
of counts per mode, and, when there are any, a block listing the wrong
gradients and crashes, which are bugs.
"""

from __future__ import annotations

from mutagrad.report.runner import ATOL, RTOL, Report, Status

WRONG_MARKER = "<<< WRONG GRADIENT"
ZYGOTE_HEADER = "Zygote (seeds)"


def _align(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def render_table(report: Report) -> str:
    """One row per scenario: its cell in each mode, then Zygote's behaviour."""
    rows = [["scenario", *report.modes, ZYGOTE_HEADER]]
    has_wrong = [False]
    for scenario in report.scenarios:
        results = [report.result(scenario.name, mode) for mode in report.modes]
        rows.append([scenario.name, *(r.cell for r in results), scenario.zygote or "-"])
        has_wrong.append(any(r.status is Status.WRONG for r in results))
    lines = _align(rows)
    rule = "-" * max(len(line) for line in lines)
    lines = [f"{line}  {WRONG_MARKER}" if wrong else line for line, wrong in zip(lines, has_wrong)]
    return "\n".join([lines[0], rule, *lines[1:]])


def render_legend() -> str:
    return (
        f"ok: matches central finite differences (rtol {RTOL:g}, atol {ATOL:g}); "
        "an error name: mutagrad refused;\n"
        "WRONG: a gradient that differs from finite differences (a mutagrad bug)."
    )


def render_summary(report: Report) -> str:
    """One line: per mode, how many results are ok, refused (a mutagrad error), crashed, wrong."""
    parts = []
    for mode in report.modes:
        counts = report.status_counts(mode)
        part = f"{mode}: {counts[Status.OK]} ok, {counts[Status.ERROR]} refused"
        if counts[Status.CRASH]:
            part += f", {counts[Status.CRASH]} CRASH"
        part += f", {counts[Status.WRONG]} WRONG"
        parts.append(part)
    return "summary: " + "; ".join(parts)


def render_failures(report: Report) -> str:
    """The wrong gradients and crashes, one per line ("" when there are none)."""
    lines = []
    for r in report.failures:
        if r.status is Status.WRONG:
            lines.append(
                f"  WRONG  {r.scenario} [{r.mode}]: max |gradient - reference| = "
                f"{r.max_abs_difference:.3g}"
            )
        else:
            lines.append(f"  CRASH  {r.scenario} [{r.mode}]: {r.error_type}: {r.error_message}")
    if not lines:
        return ""
    return "\n".join(["BUGS (a wrong gradient or a crash must never happen):", *lines])


def render_text(report: Report) -> str:
    sections = [render_table(report), render_legend(), render_summary(report)]
    failures = render_failures(report)
    if failures:
        sections.append(failures)
    return "\n\n".join(sections)
