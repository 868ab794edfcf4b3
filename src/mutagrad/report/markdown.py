"""``report.md``: the report as Markdown, for reading in a repository or pasting into a proposal.

Sections: the headline (a wrong gradient, crash or timeout in red where the
viewer honours inline HTML, and in bold everywhere), the outcome table
(programs as rows, modes as columns, then Zygote), the overhead per mode, the
poison errors with their verdicts, every measured number per program, the
settings and the environment, and how to regenerate the file.
"""

from __future__ import annotations

from mutagrad.report.runner import Outcome, Report
from mutagrad.report.summary import category_rows, headline, known_issue_rows, summarize, why
from mutagrad.report.tables import REGENERATE, measurement_header, measurement_row, ratio_text


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(_escape(h) for h in header) + " |"]
    lines.append("|" + "|".join(" --- " for _ in header) + "|")
    for row in rows:
        lines.append("| " + " | ".join(_escape(c) for c in row) + " |")
    return "\n".join(lines)


def _cell(result) -> str:
    text = result.cell
    if result.outcome in (Outcome.WRONG, Outcome.CRASH, Outcome.TIMEOUT):
        return f"**{text}**"
    return text


def render_markdown(report: Report) -> str:
    summary = summarize(report)
    parts = ["# mutagrad report: strict (Zygote's rule) vs poison vs snapshot", ""]
    for sentence in headline(summary):
        if sentence.alarm:
            parts.append(f'- <span style="color:#c62828">**{sentence.text}**</span>')
        else:
            parts.append(f"- {sentence.text}")
    parts += ["", "## Outcomes", ""]
    header = ["program", "category", *report.modes, "Zygote"]
    rows = [
        [p.label, p.program.category, *(_cell(p.mode(m)) for m in report.modes),
         p.program.zygote or "–"]
        for p in report.programs
    ]  # fmt: skip
    parts.append(_table(header, rows))
    parts += [
        "",
        "ok: value and gradient match plain numpy and central finite differences. "
        "Poisoned (genuine): the overwritten value was needed; without the check the gradient "
        "would have been wrong. Poisoned (false alarm): with poisoned captures read anyway the "
        "gradient was right. Zygote: what Zygote does with the Julia equivalent (from the seed "
        "documents, and its rule that every array mutation raises).",
        "",
        "## By category",
        "",
        _table(*category_rows(summary)),
        "",
        "## Overhead per mode",
        "",
    ]
    overhead_rows = [
        [
            m,
            f"{summary.accepted[m]}/{summary.programs}",
            ratio_text(summary.median_overhead_accepted[m]),
            ratio_text(summary.median_overhead[m]),
        ]
        for m in report.modes
    ]
    parts.append(
        _table(
            [
                "mode",
                "accepted",
                "median overhead (programs it accepts)",
                f"median overhead (the {summary.overhead_programs} programs every mode accepts)",
            ],
            overhead_rows,
        )
    )
    parts += [
        "",
        "Overhead: median wall time of one gradient call over the median wall time of one "
        "plain numpy call of the same program (both with fresh argument copies).",
        "",
        "## Poison errors",
        "",
    ]
    poisoned = [(p, r) for p in report.programs for r in p.modes if r.poison_verdict is not None]
    if poisoned:
        parts.append(
            _table(
                ["program", "mode", "verdict", "why"],
                [
                    [p.name, r.mode, verdict.value, why(p.program.note, verdict.value)]
                    for p, r in poisoned
                    if (verdict := r.poison_verdict) is not None
                ],
            )
        )
    else:
        parts.append("None.")
    header, known = known_issue_rows(report)
    if known:
        parts += ["", "## Known mutagrad bugs reproduced by the corpus", ""]
        parts.append(_table(header, known))
    parts += ["", "## Measurements", ""]
    parts.append(
        _table(measurement_header(report), [measurement_row(report, p) for p in report.programs])
    )
    settings = report.settings
    parts += [
        "",
        "## Settings and environment",
        "",
        f"- corpus: `{settings.corpus}`; modes: {', '.join(settings.modes)}",
        f"- timing: median of {settings.repeats} samples of ~{settings.sample_seconds * 1e3:g} ms "
        "each; peak memory from tracemalloc in a separate call",
        f"- tolerances: rtol {settings.rtol:g}, atol {settings.atol:g} x max(1, |reference|); "
        f"finite-difference step {settings.finite_difference_step:g}",
        f"- time limit per call: {settings.time_limit:g} s"
        if settings.time_limit
        else "- time limit per call: none",
        f"- run started {report.started}, took {report.seconds:.1f} s",
    ]
    for key, value in report.environment.items():
        parts.append(f"- {key}: {value}")
    parts += ["", f"Regenerate with `{REGENERATE}`.", ""]
    return "\n".join(parts)
