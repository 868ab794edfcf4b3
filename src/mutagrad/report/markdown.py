"""``report.md``: the report as Markdown, for reading in a repository or pasting into a proposal.

Sections: the headline (a mutagrad wrong result, crash or timeout in red
where the viewer honours inline HTML, and in bold everywhere), the outcome
table (programs as rows, mutagrad's modes and the peers as columns, then
Zygote), the corpus programs that fail on plain numpy, the generated
programs' source (``--generated N``), the counts and timings
per system, how each peer runs a program and how the peers refuse, the
counts per category, the poison errors with their verdicts, every measured
number per program, the settings and the environment, and how to regenerate
the file.
"""

from __future__ import annotations

from mutagrad.report.generated import GENERATED_CATEGORY, listing
from mutagrad.report.peers import PEERS, PEERS_EXTRA_HINT, PYTORCH_NOTE, column_title, system_label
from mutagrad.report.runner import Report
from mutagrad.report.summary import (
    Summary,
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
from mutagrad.testing.verdicts import SILENTLY_WRONG, Outcome


def _alarmed(text: str) -> str:
    """Red where the viewer honours inline HTML, bold everywhere."""
    return f'<span style="color:#c62828">**{text}**</span>'


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
    if result.outcome in (*SILENTLY_WRONG, Outcome.CRASH, Outcome.TIMEOUT):
        return f"**{text}**"
    return text


def _peers_section(report: Report) -> list[str]:
    parts = ["", "## The peers: how they run the programs", ""]
    if report.peers:
        parts += [f"- {system_label(name)}: {PEERS[name].how}." for name in report.peers]
    else:
        parts.append(
            "No peer AD system ran in this report. To run the same programs on JAX, autograd "
            f"and MyGrad: {PEERS_EXTRA_HINT}."
        )
    parts += ["", PYTORCH_NOTE]
    header, rows = refusal_rows(report)
    if rows:
        parts += ["", "## How the peers refuse", "", _table(header, rows)]
    return parts


def _fuzz_refusals_section(report: Report) -> list[str]:
    header, rows = fuzz_refusal_rows(report)
    if not rows:
        return []
    return ["", "## What the differential fuzzer's programs were refused for", "",
            _table(header, rows)]  # fmt: skip


def _generated_programs(report: Report) -> list[str]:
    generated = [p for p in report.programs if p.program.category == GENERATED_CATEGORY]
    if not generated:
        return []
    parts = [
        "",
        "## Generated programs",
        "",
        f"{generated_text(report)}: random straight-line numpy programs with views and in-place "
        "writes, each judged like a corpus program; its source and arguments (a0, a1, ...).",
    ]
    for p in generated:
        outcomes = ", ".join(f"{column_title(m)}: {_cell(p.mode(m))}" for m in report.systems)
        parts += ["", f"**{p.name}**: {outcomes}", "", "```python", *listing(p.program), "```"]
    return parts


def render_markdown(report: Report) -> str:
    """report.md: the headline, then every table of the HTML page, as GitHub Markdown."""
    summary = summarize(report)
    parts = [
        *_headline_section(report, summary),
        *_outcomes_section(report),
        *_program_errors_section(report),
        *_generated_programs(report),
        "",
        "## Per system",
        "",
        _table(*system_rows(summary)),
        "",
        "Counts over the programs that run on plain numpy. Times: the median over programs of "
        "each program's median gradient call; overhead: that time over the plain numpy call of "
        "the same program (both with fresh argument copies).",
        *_peers_section(report),
        "",
        "## By category",
        "",
        _table(*category_rows(summary)),
        *_fuzz_refusals_section(report),
        *_poison_section(report),
        *_known_issues_section(report),
        *_measurements_section(report),
        *_settings_section(report),
        "",
        f"Regenerate with `{REGENERATE}`.",
        "",
    ]
    return "\n".join(parts)


def _headline_section(report: Report, summary: Summary) -> list[str]:
    title = "# mutagrad report: strict (Zygote's rule) vs poison vs snapshot"
    if report.peers:
        title += " vs " + ", ".join(column_title(peer) for peer in report.peers)
    parts = [title, ""]
    lead, *details = headline(summary)
    parts += [_alarmed(lead.text) if lead.alarm else f"**{lead.text}**", ""]
    for sentence in details:
        parts.append(f"- {_alarmed(sentence.text) if sentence.alarm else sentence.text}")
    return parts


def _outcomes_section(report: Report) -> list[str]:
    header = [
        "program",
        "category",
        *(column_title(s) for s in report.systems),
        "Zygote (not measured)",
    ]
    rows = [
        [p.label, p.program.category, *(_cell(p.mode(m)) for m in report.systems),
         p.program.zygote or "–"]
        for p in report.programs
    ]  # fmt: skip
    return [
        "",
        "## Outcomes",
        "",
        _table(header, rows),
        "",
        "ok: value and gradient match plain numpy and central finite differences. "
        "WRONG value: the engine returned a value that differs from plain numpy's; WRONG "
        "gradient: the value is right and the gradient is not. "
        "Poisoned (genuine): the overwritten value was needed; without the check the gradient "
        "would have been wrong. Poisoned (false alarm): with poisoned captures read anyway the "
        "gradient was right. Zygote (not measured): what Zygote does with the Julia equivalent "
        "(from the seed documents, and its rule that every array mutation raises).",
    ]


def _program_errors_section(report: Report) -> list[str]:
    if not report.program_errors:
        return []
    return [
        "",
        "## Program errors: corpus programs that fail on plain numpy",
        "",
        "Errors in the corpus, not in mutagrad or a peer: nothing was compared for them.",
        "",
        _table(
            ["program", "what is wrong"],
            [[p.name, str(p.reference_error)] for p in report.program_errors],
        ),
    ]


def _poison_section(report: Report) -> list[str]:
    rows = [
        [p.name, r.mode, verdict.value, why(p.program.note, verdict.value)]
        for p in report.programs
        for r in p.modes
        if (verdict := r.poison_verdict) is not None
    ]
    return ["", "## Poison errors", "", _table(["program", "mode", "verdict", "why"], rows)
            if rows else "None."]  # fmt: skip


def _known_issues_section(report: Report) -> list[str]:
    header, known = known_issue_rows(report)
    if not known:
        return []
    return ["", "## Known mutagrad bugs reproduced by the corpus", "", _table(header, known)]


def _measurements_section(report: Report) -> list[str]:
    parts = ["", "## Measurements", ""]
    if not report.settings.timing:
        parts += [NOT_TIMED, ""]
    times = [[" ".join(cell) for cell in time_row(report, p)] for p in report.programs]
    parts += [TIMES_NOTE, "", _table(time_header(report), times), "", MEMORY_NOTE, ""]
    parts.append(_table(memory_header(report), [memory_row(report, p) for p in report.programs]))
    return parts


def _settings_section(report: Report) -> list[str]:
    settings = report.settings
    parts = [
        "",
        "## Settings and environment",
        "",
        f"- corpus: `{settings.corpus}`; modes: {', '.join(settings.modes)}; "
        f"peers: {', '.join(settings.peers) or 'none'}",
        f"- generated programs: {generated_text(report)}",
        f"- timing: {timing_text(settings)}"
        + (
            "; peak memory from tracemalloc in a separate call (mutagrad's modes only)"
            if settings.timing
            else ""
        ),
        f"- run in: {workers_text(settings)}",
        f"- tolerances: rtol {settings.rtol:g}, atol {settings.atol:g} x max(1, |reference|); "
        f"finite-difference step {settings.finite_difference_step:g}",
        f"- time limit per call: {settings.time_limit:g} s"
        if settings.time_limit
        else "- time limit per call: none",
        f"- run started {report.started}, took {report.seconds:.1f} s",
    ]
    parts += [f"- {key}: {value}" for key, value in report.environment.items()]
    return parts
