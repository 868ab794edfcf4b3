"""The headline of a report: the counts every output format puts at the top.

:func:`summarize` reduces a :class:`~mutagrad.report.runner.Report` to a
:class:`Summary`: how many programs each mutagrad mode and each peer engine
gets right, refuses and gets silently wrong (:class:`SystemCounts`), how many
poison errors were genuine and how many false alarms, which mutagrad results
were silently wrong, crashed or timed out, what was refused in every mode,
which corpus programs do not run on plain numpy at all, and the median time
and overhead over plain numpy. :func:`headline` words it as sentences: first
one sentence that says what was compared and what came of it, then the
details; a sentence marked ``alarm`` (a mutagrad bug: a wrong value or
gradient, a crash, a timeout) is shown in red.

Every median of times and ratios leaves out the measurements too spread to
read (:func:`mutagrad.report.runner.is_noisy`), and :func:`overhead_ratios`
gives the plots the very ratios the medians are taken over, so the headline,
the tables and the plots state the same numbers.

The tables both pages share are built here too: per category
(:func:`category_rows`), per system (:func:`system_rows`), the peers'
refusals (:func:`refusal_rows`) and the known bugs (:func:`known_issue_rows`).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Callable

import attrs

import mutagrad
from mutagrad.core import modes
from mutagrad.report.peers import PEERS, column_title, system_label, timed_label
from mutagrad.report.runner import FORWARD, MeasuredResult, PoisonVerdict, ProgramResult, Report
from mutagrad.report.tables import ratio_text, seconds_text
from mutagrad.testing.fuzz import FuzzFigures
from mutagrad.testing.fuzz.refusals import breakdown_rows
from mutagrad.testing.verdicts import SILENTLY_WRONG, Outcome


@attrs.frozen
class SystemCounts:
    """How one mutagrad mode or peer engine fared over the programs that run on plain numpy."""

    right: int
    refused: int
    value_differs: int
    gradient_wrong: int
    gradient_missing: int
    """Of the wrong gradients, those that were ``None``: no gradient reached an argument."""
    crashed: int
    """Crashes and timeouts."""
    median_seconds: float | None
    """Median wall time of one gradient call, over the programs it gets right."""
    median_overhead: float | None
    """Median of gradient time / plain numpy time, over the programs it gets right."""

    @property
    def silently_wrong(self) -> int:
        return self.value_differs + self.gradient_wrong


def overhead_ratios(report: Report, system: str) -> tuple[list[float], list[float]]:
    """Gradient time / plain numpy time over the programs ``system`` gets right: the ratios
    clear enough to read, and the noisy ones (left out of every median)."""
    readable: list[float] = []
    noisy: list[float] = []
    for p in report.programs:
        ratio = p.overhead(system)
        if ratio is not None:
            (noisy if p.overhead_noisy(system) else readable).append(ratio)
    return readable, noisy


def relative_ratios(report: Report, system: str, baseline: str) -> tuple[list[float], list[float]]:
    """``system``'s time over ``baseline``'s on each program both get right: readable, noisy."""
    readable: list[float] = []
    noisy: list[float] = []
    for p in report.programs:
        mine, base = p.mode(system), p.mode(baseline)
        if mine.accepted and base.accepted and mine.seconds and base.seconds:
            ratio = mine.seconds / base.seconds
            (noisy if mine.noisy or base.noisy else readable).append(ratio)
    return readable, noisy


def _system_counts(report: Report, system: str) -> SystemCounts:
    results = [p.mode(system) for p in report.programs]
    judged = [r for r in results if r.outcome is not Outcome.PROGRAM_ERROR]
    right = [r for r in judged if r.outcome is Outcome.RIGHT]
    seconds = [r.seconds for r in right if r.seconds and not r.noisy]
    ratios, _ = overhead_ratios(report, system)
    return SystemCounts(
        right=len(right),
        refused=sum(r.outcome is Outcome.REFUSED for r in judged),
        value_differs=sum(r.outcome is Outcome.VALUE_DIFFERS for r in judged),
        gradient_wrong=sum(r.outcome is Outcome.WRONG for r in judged),
        gradient_missing=sum(r.gradient_missing for r in judged),
        crashed=sum(r.outcome in (Outcome.CRASH, Outcome.TIMEOUT) for r in judged),
        median_seconds=statistics.median(seconds) if seconds else None,
        median_overhead=statistics.median(ratios) if ratios else None,
    )


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
    peers: tuple[str, ...]
    accepted: dict[str, int]
    """Per mode and peer: the programs whose value and gradient are right."""
    systems: dict[str, SystemCounts]
    """Per mode and peer: right, refused, silently wrong, crashed; median time."""
    genuine: tuple[tuple[str, str], ...]
    """(program, mode) of every poison error whose old value really was needed."""
    false_alarms: tuple[tuple[str, str], ...]
    undetermined: tuple[tuple[str, str], ...]
    wrong: tuple[tuple[str, str], ...]
    """(program, mode) of every mutagrad result whose value or gradient was wrong."""
    crashed: tuple[tuple[str, str], ...]
    timed_out: tuple[tuple[str, str], ...]
    refused_everywhere: tuple[tuple[str, str], ...]
    """(program, error type) of programs every mode refused with the same mutagrad error."""
    known_issues: tuple[str, ...]
    """Programs marked with a known mutagrad bug whose results were wrong, crashed or hung."""
    program_errors: tuple[tuple[str, str], ...]
    """(program, what is wrong) of the corpus programs that do not run on plain numpy."""
    median_overhead: dict[str, float | None]
    """Per mode and peer: median of gradient time / plain forward time, over the programs
    every mode and peer accepts."""
    overhead_programs: int
    median_overhead_accepted: dict[str, float | None]
    """Median of gradient time / plain forward time, over the programs each one accepts."""
    errors_by_mode: dict[str, dict[str, int]]
    """Per mode and peer, how many results ended in each error type."""
    by_category: dict[str, CategoryCounts]
    """Per category, in corpus order: programs, accepted per mode and peer, poison verdicts."""
    fuzz: FuzzFigures | None = None
    """The differential fuzzer's run beside the corpus, when there was one."""
    timed: int = 0
    """Times measured (plain forward and gradient calls, every program and system)."""
    noisy: int = 0
    """Of those, the ones too spread to read, left out of every median."""
    load_average: float | None = None
    """The machine's load average over the minute before the run."""
    cpu_count: int | None = None
    forward_refused: tuple[str, ...] = ()
    """The programs forward mode refuses (when the report has its column)."""
    generated: int = 0
    """Of the programs, those drawn by the fuzzer's generator (:mod:`mutagrad.report.generated`)."""
    seed: int = 0
    """The seed they were drawn with."""

    @property
    def poison_errors(self) -> int:
        return len(self.genuine) + len(self.false_alarms) + len(self.undetermined)

    @property
    def systems_order(self) -> tuple[str, ...]:
        return self.modes + self.peers

    @property
    def judged(self) -> int:
        """Programs that run on plain numpy: what every mode and peer was judged on."""
        return self.programs - len(self.program_errors)

    @property
    def busy(self) -> bool:
        """Whether other work held at least half the CPUs when the run began."""
        if self.load_average is None or not self.cpu_count:
            return False
        return self.load_average >= max(1.0, self.cpu_count / 2)


def summarize(report: Report) -> Summary:
    """The numbers of the headline (see the module docstring)."""
    systems = report.systems
    common = [p for p in report.programs if all(p.mode(m).accepted for m in systems)]
    timed = _noisy_flags(report)
    load = report.environment.get("load_average")
    return Summary(
        fuzz=report.fuzz,
        timed=len(timed),
        noisy=sum(timed),
        load_average=load[0] if load else None,
        cpu_count=report.environment.get("cpu_count"),
        generated=report.settings.generated,
        seed=report.settings.seed,
        programs=len(report.programs),
        mutating=sum(1 for p in report.programs if p.program.mutates),
        modes=report.modes,
        peers=report.peers,
        accepted={m: sum(1 for p in report.programs if p.mode(m).accepted) for m in systems},
        systems={m: _system_counts(report, m) for m in systems},
        genuine=_pairs(report, lambda r: r.poison_verdict is PoisonVerdict.GENUINE),
        false_alarms=_pairs(report, lambda r: r.poison_verdict is PoisonVerdict.FALSE_ALARM),
        undetermined=_pairs(report, lambda r: r.poison_verdict is PoisonVerdict.UNDETERMINED),
        wrong=_pairs(report, lambda r: r.outcome in SILENTLY_WRONG),
        crashed=_pairs(report, lambda r: r.outcome is Outcome.CRASH),
        timed_out=_pairs(report, lambda r: r.outcome is Outcome.TIMEOUT),
        refused_everywhere=_refused_everywhere(report),
        known_issues=tuple(
            dict.fromkeys(
                r.program for r in report.failures if report.program(r.program).program.known_issue
            )
        ),
        program_errors=tuple((p.name, str(p.reference_error)) for p in report.program_errors),
        median_overhead={m: _median_overhead(common, m) for m in systems},
        overhead_programs=len(common),
        median_overhead_accepted={
            m: _median_or_none(overhead_ratios(report, m)[0]) for m in systems
        },
        errors_by_mode={m: _errors(report, m) for m in systems},
        by_category=_by_category(report),
        forward_refused=_forward_refused(report),
    )


def _forward_refused(report: Report) -> tuple[str, ...]:
    """The programs forward mode refuses (none when the report has no forward column)."""
    if FORWARD not in report.modes:
        return ()
    return tuple(p.name for p in report.programs if p.mode(FORWARD).outcome is Outcome.REFUSED)


def _pairs(report: Report, select: Callable[[MeasuredResult], bool]) -> tuple[tuple[str, str], ...]:
    """(program, mode) of mutagrad's results that ``select`` picks."""
    return tuple((r.program, r.mode) for r in report.results if select(r))


def _median_or_none(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _refused_everywhere(report: Report) -> tuple[tuple[str, str], ...]:
    """(program, error type) of the programs every mode refused with the same error."""
    refused = []
    for p in report.programs:
        types = {r.error_type for r in p.modes}
        if all(r.outcome is Outcome.REFUSED for r in p.modes) and len(types) == 1:
            refused.append((p.name, str(next(iter(types)))))
    return tuple(refused)


def _median_overhead(common: list[ProgramResult], system: str) -> float | None:
    """The median overhead of ``system`` over ``common``, leaving out noisy ratios."""
    known = [
        r for p in common if (r := p.overhead(system)) is not None and not p.overhead_noisy(system)
    ]
    return _median_or_none(known)


def _noisy_flags(report: Report) -> list[bool]:
    """One flag per time measured (plain forward and gradient calls): whether it is noisy."""
    return [
        noisy
        for p in report.programs
        if p.forward_sample_seconds
        for noisy in (p.forward_noisy, *(r.noisy for r in p.results if r.sample_seconds))
    ]


def _errors(report: Report, system: str) -> dict[str, int]:
    """How many of ``system``'s refusals ended in each error type."""
    return dict(
        Counter(
            str(p.mode(system).error_type)
            for p in report.programs
            if p.mode(system).outcome is Outcome.REFUSED
        )
    )


def _by_category(report: Report) -> dict[str, CategoryCounts]:
    """Per category, in corpus order: programs, accepted per system, poison verdicts."""
    by_category: dict[str, CategoryCounts] = {}
    for category in dict.fromkeys(p.program.category for p in report.programs):
        members = [p for p in report.programs if p.program.category == category]
        verdicts = [r.poison_verdict for p in members for r in p.modes]
        by_category[category] = CategoryCounts(
            programs=len(members),
            accepted={m: sum(p.mode(m).accepted for p in members) for m in report.systems},
            genuine=verdicts.count(PoisonVerdict.GENUINE),
            false_alarms=verdicts.count(PoisonVerdict.FALSE_ALARM),
        )
    return by_category


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
        *(f"{m} accepts" for m in summary.systems_order),
        "poison errors: genuine",
        "false alarms",
    ]
    rows = []
    for category, counts in summary.by_category.items():
        rows.append(
            [
                category,
                str(counts.programs),
                *(str(counts.accepted[m]) for m in summary.systems_order),
                str(counts.genuine),
                str(counts.false_alarms),
            ]
        )
    rows.append(
        [
            "all",
            str(summary.programs),
            *(str(summary.accepted[m]) for m in summary.systems_order),
            str(len(summary.genuine)),
            str(len(summary.false_alarms)),
        ]
    )
    return header, rows


def system_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """Per mutagrad mode and peer: version, outcome counts, median time and overhead."""
    header = [
        "system",
        "version",
        "right",
        "refused",
        "WRONG value",
        "WRONG gradient",
        "crash or timeout",
        "median gradient call",
        "median overhead (programs it gets right)",
        f"median overhead (the {summary.overhead_programs} programs all get right)",
    ]
    rows = []
    for system in summary.systems_order:
        counts = summary.systems[system]
        peer = PEERS.get(system)
        rows.append(
            [
                f"mutagrad {system}" if peer is None else peer.title,
                mutagrad.__version__ if peer is None else peer.version,
                str(counts.right),
                str(counts.refused),
                str(counts.value_differs),
                str(counts.gradient_wrong)
                + (f" ({counts.gradient_missing} None)" if counts.gradient_missing else ""),
                str(counts.crashed),
                seconds_text(counts.median_seconds),
                ratio_text(summary.median_overhead_accepted[system]),
                ratio_text(summary.median_overhead[system]),
            ]
        )
    return header, rows


REFUSAL_MESSAGE_LENGTH = 110
"""Refusal messages are grouped on their first this many characters (they end in details)."""


def refusal_kind(message: str) -> str:
    """A refusal's message without the data it quotes (array contents, class lists)."""
    general = re.split(r"array\(|\[<class", message, maxsplit=1)[0].rstrip(" ,:")
    return general[:REFUSAL_MESSAGE_LENGTH]


def refusal_rows(report: Report) -> tuple[list[str], list[list[str]]]:
    """Per peer, each kind of refusal: error type, first line, how many programs, which."""
    rows = []
    for peer in report.peers:
        groups: dict[tuple[str, str], list[str]] = {}
        for p in report.programs:
            r = p.mode(peer)
            if r.outcome is Outcome.REFUSED:
                message = refusal_kind(r.detail or "")
                groups.setdefault((str(r.error_type), message), []).append(p.name)
        ordered = sorted(groups.items(), key=lambda item: -len(item[1]))
        for (error_type, message), names in ordered:
            rows.append(
                [PEERS[peer].title, error_type, message, str(len(names)), _shorten(names, 4)]
            )
    return ["peer", "error", "first line", "programs", "which"], rows


def fuzz_refusal_rows(report: Report) -> tuple[list[str], list[list[str]]]:
    """The differential fuzzer's refusals by reason: a row per reason, a count per mode."""
    fuzz = report.fuzz
    if fuzz is None or not fuzz.refusals:
        return [], []
    modes = list(fuzz.wrong)
    rows = breakdown_rows(fuzz.refusals, modes)
    return ["reason", *modes], [[reason, *map(str, counts)] for reason, counts in rows]


@attrs.frozen
class Sentence:
    """One sentence of the headline; ``alarm`` ones are shown in red."""

    text: str
    alarm: bool = False


LISTED = 12  # a longer list ends with "and N more"


def _shorten(items: list[str], limit: int = LISTED) -> str:
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"


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


def _peer_sentence(summary: Summary, peer: str) -> Sentence:
    """How one peer fared, in a sentence that starts with its name and version."""
    counts = summary.systems[peer]
    text = (
        f"{system_label(peer)}: {counts.right} right, {counts.refused} refused, "
        f"{counts.silently_wrong} silently wrong ({counts.value_differs} with a value that "
        f"differs from numpy's, {counts.gradient_wrong} with a wrong gradient"
    )
    if counts.gradient_missing:
        text += f", {counts.gradient_missing} of them None: no gradient reached the argument"
    text += ")"
    if counts.crashed:
        text += f", {counts.crashed} crashed or timed out"
    return Sentence(text + ".")


def _lead(summary: Summary) -> Sentence:
    """The first sentence: what was compared, and what came of it."""
    n = summary.programs
    what = f"{n} program{'s' if n != 1 else ''}"
    if summary.fuzz is not None:
        what += f" and {summary.fuzz.judged:,} random ones of the differential fuzzer"
    were = "was" if n == 1 and summary.fuzz is None else "were"
    text = f"{what} {were} differentiated in mutagrad's " + _and([*summary.modes]) + " modes"
    if summary.peers:
        text += " and run unchanged on " + _and([column_title(p) for p in summary.peers])
    text += (
        ", every value checked against plain numpy's and every gradient against finite "
        "differences: "
    )
    fuzz_failed = summary.fuzz is not None and summary.fuzz.failures
    failed = summary.wrong or summary.crashed or summary.timed_out or fuzz_failed
    if failed:
        text += "MUTAGRAD FAILED (a bug; see below)"
    else:
        text += "no mutagrad value or gradient was silently wrong"
    judged = summary.judged
    by_right = sorted(summary.modes, key=summary.accepted.__getitem__)[::-1]
    right = ", ".join(f"{m} {summary.accepted[m]}" for m in by_right)
    details = [f"of the {judged} programs, right in {right}"]
    if summary.peers:
        details.append(
            "silently wrong on "
            + ", ".join(
                f"{column_title(p)} {summary.systems[p].silently_wrong}" for p in summary.peers
            )
        )
    return Sentence(f"{text} ({'; '.join(details)}).", alarm=bool(failed))


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _timing_sentence(summary: Summary) -> Sentence | None:
    """How far the times can be read: the noisy ones, a busy machine."""
    if not summary.timed:
        return None
    text = (
        f"Times are medians of each call's samples; {summary.noisy} of the {summary.timed} "
        "measured are too spread to read (marked ~ in the tables, hollow in the plots) and "
        "left out of every median"
    )
    if summary.busy:
        text += (
            f". The machine was busy when the run began (load average {summary.load_average:g} "
            f"on {summary.cpu_count} CPUs): other work shared the CPUs, so every time is "
            "less certain"
        )
    return Sentence(text + ".")


def headline(summary: Summary) -> list[Sentence]:
    """The headline: the lead sentence (:func:`_lead`), then the details, most important first."""
    sentences = [
        _lead(summary),
        _wrong_sentence(summary),
        _programs_sentence(summary),
        _generated_sentence(summary),
        _program_errors_sentence(summary),
        Sentence(
            "Accepted (value and gradient match plain numpy and finite differences): "
            + ", ".join(f"{m} {summary.accepted[m]}/{summary.judged}" for m in summary.modes)
            + "."
        ),
        _forward_sentence(summary),
        _poison_sentence(summary),
        _fuzz_sentence(summary),
        _crash_sentence(summary),
        _refused_everywhere_sentence(summary),
        *(_peer_sentence(summary, peer) for peer in summary.peers),
        _overhead_sentence(summary),
        _timing_sentence(summary),
    ]
    return [sentence for sentence in sentences if sentence is not None]


def _wrong_sentence(summary: Summary) -> Sentence | None:
    if not summary.wrong:
        return None
    text = f"SILENTLY WRONG values or gradients: {_listing(summary.wrong)}."
    return Sentence(text + _known_suffix(summary.wrong, summary), alarm=True)


def _programs_sentence(summary: Summary) -> Sentence:
    n = summary.programs
    text = (
        f"The {n} program{'s' if n != 1 else ''}: {summary.mutating} write arrays in place, "
        f"{n - summary.mutating} do not; the modes: "
        + ", ".join(f"{m} ({_role(m)})" for m in summary.modes)
    )
    if summary.peers:
        text += "; PyTorch cannot run numpy code unchanged"
    return Sentence(text + ".")


def _role(mode: str) -> str:
    """How the report introduces a column of mutagrad's: a mode's role, or forward mode's."""
    return modes.FORWARD.role if mode == FORWARD else modes.mode_named(mode).role


def _forward_sentence(summary: Summary) -> Sentence | None:
    """Forward mode against the reverse modes: how many programs each accepts, and which
    programs forward mode refuses."""
    if FORWARD not in summary.modes:
        return None
    reverse = [m for m in summary.modes if m != FORWARD]
    text = (
        f"Forward mode (jacfwd, every direction in one run) accepts {summary.accepted[FORWARD]} "
        f"of the {summary.judged} programs"
    )
    if reverse:
        text += ", against " + ", ".join(f"{m} {summary.accepted[m]}" for m in reverse)
    if summary.forward_refused:
        text += "; it refuses " + _shorten(list(summary.forward_refused))
    return Sentence(text + ".")


def _generated_sentence(summary: Summary) -> Sentence | None:
    if not summary.generated:
        return None
    return Sentence(
        f"{summary.generated} of them are random mutating programs drawn by the "
        f"differential fuzzer's generator with seed {summary.seed} (their source "
        "is under Generated programs)."
    )


def _program_errors_sentence(summary: Summary) -> Sentence | None:
    if not summary.program_errors:
        return None
    return Sentence(
        f"{len(summary.program_errors)} of the corpus programs do not run on plain "
        "numpy, so nothing was compared for them (see Program errors): "
        + _shorten([name for name, _ in summary.program_errors])
        + "."
    )


def _poison_sentence(summary: Summary) -> Sentence:
    if not summary.poison_errors:
        return Sentence("Poison errors: none.")
    text = (
        f"Poison errors: {summary.poison_errors}, of which {len(summary.genuine)} genuine "
        "(the overwritten value was needed: without the check the gradient would have been "
        f"silently wrong) and {len(summary.false_alarms)} false alarms (the gradient would "
        "have been right"
    )
    text += f": {_names(summary.false_alarms)})" if summary.false_alarms else ")"
    if summary.undetermined:
        text += f"; {len(summary.undetermined)} undetermined ({_names(summary.undetermined)})"
    return Sentence(text + ".")


def _fuzz_sentence(summary: Summary) -> Sentence | None:
    fuzz = summary.fuzz
    if fuzz is None:
        return None
    failures = ", ".join(
        f"{m} {fuzz.wrong[m]} wrong and {fuzz.crashed[m]} crashed" for m in fuzz.wrong
    )
    return Sentence(
        f"The differential fuzzer judged {fuzz.judged} random mutating numpy programs "
        f"(seed {fuzz.seed}, python -m mutagrad.testing.fuzz) the same way: "
        + (failures if fuzz.failures else "none silently wrong, none crashed, in any mode")
        + ".",
        alarm=bool(fuzz.failures),
    )


def _crash_sentence(summary: Summary) -> Sentence:
    if not (summary.crashed or summary.timed_out):
        return Sentence("No crash, no timeout.")
    parts = []
    if summary.crashed:
        parts.append(f"crashed: {_listing(summary.crashed)}")
    if summary.timed_out:
        parts.append(f"timed out: {_listing(summary.timed_out)}")
    text = "; ".join(parts).capitalize() + "."
    failed = summary.crashed + summary.timed_out
    return Sentence(text + _known_suffix(failed, summary), alarm=True)


def _refused_everywhere_sentence(summary: Summary) -> Sentence | None:
    if not summary.refused_everywhere:
        return None
    return Sentence(
        "Refused in every mode: "
        + ", ".join(f"{p} ({e})" for p, e in summary.refused_everywhere)
        + "."
    )


def _overhead_sentence(summary: Summary) -> Sentence | None:
    known = {m: r for m, r in summary.median_overhead_accepted.items() if r is not None}
    if not known:
        return None
    return Sentence(
        "Median gradient time over plain numpy time, over the programs each one gets "
        "right (the overhead plot's medians): "
        + ", ".join(f"{timed_label(m)} {r:.1f}x" for m, r in known.items())
        + "."
    )
