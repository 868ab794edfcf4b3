"""The headline of a report: the counts every output format puts at the top.

:func:`summarize` reduces a :class:`~mutagrad.report.runner.Report` to a
:class:`Summary`: how many programs each mode accepts, how many poison errors
were genuine and how many false alarms, which results were silently wrong,
crashed or timed out, what was refused in every mode, and the median overhead
over plain numpy. :func:`headline` words it as a few sentences; a sentence
marked ``alarm`` (a wrong gradient, a crash, a timeout) is shown in red.
"""

from __future__ import annotations

import statistics
from collections import Counter

import attrs

from mutagrad.report.runner import Outcome, PoisonVerdict, Report

MODE_ROLES = {
    "strict": "Zygote's rule: every in-place write refused",
    "poison": "mutagrad's default",
    "snapshot": "old values copied where still needed",
}


@attrs.frozen
class CategoryCounts:
    """How one category of programs fared."""

    programs: int
    accepted: dict[str, int]
    genuine: int
    false_alarms: int


@attrs.frozen
class Summary:
    """The numbers of the headline."""

    programs: int
    mutating: int
    modes: tuple[str, ...]
    accepted: dict[str, int]
    genuine: tuple[tuple[str, str], ...]
    """(program, mode) of every poison error whose old value really was needed."""
    false_alarms: tuple[tuple[str, str], ...]
    undetermined: tuple[tuple[str, str], ...]
    wrong: tuple[tuple[str, str], ...]
    crashed: tuple[tuple[str, str], ...]
    timed_out: tuple[tuple[str, str], ...]
    refused_everywhere: tuple[tuple[str, str], ...]
    """(program, error type) of programs every mode refused with the same mutagrad error."""
    known_issues: tuple[str, ...]
    """Programs marked with a known mutagrad bug whose results were wrong, crashed or hung."""
    median_overhead: dict[str, float | None]
    """Median of gradient time / plain forward time, over programs every mode accepted."""
    overhead_programs: int
    median_overhead_accepted: dict[str, float | None]
    """Median of gradient time / plain forward time, over the programs each mode accepts."""
    errors_by_mode: dict[str, dict[str, int]]
    """Per mode, how many results ended in each mutagrad error type."""
    by_category: dict[str, CategoryCounts]
    """Per category, in corpus order: programs, accepted per mode, poison verdicts."""

    @property
    def poison_errors(self) -> int:
        return len(self.genuine) + len(self.false_alarms) + len(self.undetermined)


def summarize(report: Report) -> Summary:
    results = report.results
    accepted = {m: sum(1 for r in results if r.mode == m and r.accepted) for m in report.modes}

    def pairs(select) -> tuple[tuple[str, str], ...]:
        return tuple((r.program, r.mode) for r in results if select(r))

    refused_everywhere = []
    for p in report.programs:
        types = {r.error_type for r in p.modes}
        if all(r.outcome is Outcome.ERROR for r in p.modes) and len(types) == 1:
            refused_everywhere.append((p.name, str(next(iter(types)))))
    common = [p for p in report.programs if all(r.accepted for r in p.modes)]
    median_overhead: dict[str, float | None] = {}
    for mode in report.modes:
        ratios = [p.overhead(mode) for p in common]
        known = [r for r in ratios if r is not None]
        median_overhead[mode] = statistics.median(known) if known else None
    median_overhead_accepted: dict[str, float | None] = {}
    for mode in report.modes:
        known = [r for r in (p.overhead(mode) for p in report.programs) if r is not None]
        median_overhead_accepted[mode] = statistics.median(known) if known else None
    errors_by_mode = {
        m: dict(
            Counter(
                str(r.error_type) for r in results if r.mode == m and r.outcome is Outcome.ERROR
            )
        )
        for m in report.modes
    }
    by_category: dict[str, CategoryCounts] = {}
    for category in dict.fromkeys(p.program.category for p in report.programs):
        members = [p for p in report.programs if p.program.category == category]
        verdicts = [r.poison_verdict for p in members for r in p.modes]
        by_category[category] = CategoryCounts(
            programs=len(members),
            accepted={m: sum(p.mode(m).accepted for p in members) for m in report.modes},
            genuine=verdicts.count(PoisonVerdict.GENUINE),
            false_alarms=verdicts.count(PoisonVerdict.FALSE_ALARM),
        )
    return Summary(
        programs=len(report.programs),
        mutating=sum(1 for p in report.programs if p.program.mutates),
        modes=report.modes,
        accepted=accepted,
        genuine=pairs(lambda r: r.poison_verdict is PoisonVerdict.GENUINE),
        false_alarms=pairs(lambda r: r.poison_verdict is PoisonVerdict.FALSE_ALARM),
        undetermined=pairs(lambda r: r.poison_verdict is PoisonVerdict.UNDETERMINED),
        wrong=pairs(lambda r: r.outcome is Outcome.WRONG),
        crashed=pairs(lambda r: r.outcome is Outcome.CRASH),
        timed_out=pairs(lambda r: r.outcome is Outcome.TIMEOUT),
        refused_everywhere=tuple(refused_everywhere),
        known_issues=tuple(
            dict.fromkeys(
                r.program for r in report.failures if report.program(r.program).program.known_issue
            )
        ),
        median_overhead=median_overhead,
        overhead_programs=len(common),
        median_overhead_accepted=median_overhead_accepted,
        errors_by_mode=errors_by_mode,
        by_category=by_category,
    )


def why(note: str, verdict: str) -> str:
    """A program's note without the verdict it starts with ("genuine: ..." -> "...")."""
    prefix = verdict + ": "
    return note[len(prefix) :] if note.startswith(prefix) else note or "–"


def known_issue_rows(report: Report) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the table of corpus programs that reproduce a known mutagrad bug."""
    rows = [
        [p.name, ", ".join(f"{r.mode}: {r.cell}" for r in p.modes), p.program.known_issue]
        for p in report.programs
        if p.program.known_issue
    ]
    return ["program", "outcomes", "issue"], rows


def category_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """The per-category table (header, rows, then a total row), as text cells."""
    header = [
        "category",
        "programs",
        *(f"{m} accepts" for m in summary.modes),
        "poison errors: genuine",
        "false alarms",
    ]
    rows = []
    for category, counts in summary.by_category.items():
        rows.append(
            [
                category,
                str(counts.programs),
                *(str(counts.accepted[m]) for m in summary.modes),
                str(counts.genuine),
                str(counts.false_alarms),
            ]
        )
    rows.append(
        [
            "all",
            str(summary.programs),
            *(str(summary.accepted[m]) for m in summary.modes),
            str(len(summary.genuine)),
            str(len(summary.false_alarms)),
        ]
    )
    return header, rows


@attrs.frozen
class Sentence:
    """One sentence of the headline; ``alarm`` ones are shown in red."""

    text: str
    alarm: bool = False


LISTED = 12  # a longer list ends with "and N more"


def _shorten(items: list[str]) -> str:
    if len(items) <= LISTED:
        return ", ".join(items)
    return ", ".join(items[:LISTED]) + f" and {len(items) - LISTED} more"


def _listing(pairs: tuple[tuple[str, str], ...]) -> str:
    """``program [mode, mode], ...``: one entry per program, in order."""
    modes: dict[str, list[str]] = {}
    for program, mode in pairs:
        modes.setdefault(program, []).append(mode)
    return _shorten([f"{program} [{', '.join(ms)}]" for program, ms in modes.items()])


def _names(pairs: tuple[tuple[str, str], ...]) -> str:
    return _shorten(list(dict.fromkeys(program for program, _ in pairs)))


def _known_suffix(pairs: tuple[tuple[str, str], ...], summary: Summary) -> str:
    """ " Each reproduces a known mutagrad bug ..." when the listed programs are marked so."""
    programs = set(p for p, _ in pairs)
    known = [p for p in summary.known_issues if p in programs]
    if not known:
        return ""
    if len(known) == len(programs):
        return " Each reproduces a known mutagrad bug (its known_issue in the corpus)."
    return f" Known mutagrad bugs among them: {', '.join(known)}."


def headline(summary: Summary) -> list[Sentence]:
    """The headline as sentences, most important first."""
    n = summary.programs
    sentences = [
        Sentence(
            f"{n} program{'s' if n != 1 else ''} ({summary.mutating} write arrays in place, "
            f"{n - summary.mutating} do not), each differentiated in "
            + ", ".join(f"{m} ({MODE_ROLES.get(m, m)})" for m in summary.modes)
            + "."
        ),
        Sentence(
            "Accepted (value and gradient match plain numpy and finite differences): "
            + ", ".join(f"{m} {summary.accepted[m]}/{n}" for m in summary.modes)
            + "."
        ),
    ]
    if summary.poison_errors:
        text = (
            f"Poison errors: {summary.poison_errors}, of which {len(summary.genuine)} genuine "
            "(the overwritten value was needed: without the check the gradient would have been "
            f"silently wrong) and {len(summary.false_alarms)} false alarms (the gradient would "
            "have been right"
        )
        text += f": {_names(summary.false_alarms)})" if summary.false_alarms else ")"
        if summary.undetermined:
            text += f"; {len(summary.undetermined)} undetermined ({_names(summary.undetermined)})"
        sentences.append(Sentence(text + "."))
    else:
        sentences.append(Sentence("Poison errors: none."))
    if summary.wrong:
        text = f"SILENTLY WRONG gradients: {_listing(summary.wrong)}."
        sentences.append(Sentence(text + _known_suffix(summary.wrong, summary), alarm=True))
    else:
        sentences.append(Sentence("No gradient was silently wrong, in any mode."))
    if summary.crashed or summary.timed_out:
        parts = []
        if summary.crashed:
            parts.append(f"crashed: {_listing(summary.crashed)}")
        if summary.timed_out:
            parts.append(f"timed out: {_listing(summary.timed_out)}")
        text = "; ".join(parts).capitalize() + "."
        failed = summary.crashed + summary.timed_out
        sentences.append(Sentence(text + _known_suffix(failed, summary), alarm=True))
    else:
        sentences.append(Sentence("No crash, no timeout."))
    if summary.refused_everywhere:
        sentences.append(
            Sentence(
                "Refused in every mode: "
                + ", ".join(f"{p} ({e})" for p, e in summary.refused_everywhere)
                + "."
            )
        )
    known = {m: r for m, r in summary.median_overhead.items() if r is not None}
    if known:
        sentences.append(
            Sentence(
                "Median gradient time over plain numpy forward time, on the "
                f"{summary.overhead_programs} programs every mode accepts: "
                + ", ".join(f"{m} {r:.1f}x" for m, r in known.items())
                + "."
            )
        )
    return sentences
