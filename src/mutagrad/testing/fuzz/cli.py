"""The command line, ``python -m mutagrad.testing.fuzz``, and the fuzzer's figures for the report.

A run judges ``--count`` programs, program ``k`` of seed ``S`` drawn from
``random.Random(f"{S}:{k}")`` (:func:`program_rng`), so any program of any
run can be drawn again alone; it prints the outcomes per mode
(:func:`summary_table`), what mutagrad refused grouped by reason
(:mod:`.refusals`), and, for every WRONG or crashing program, a script
reproducing it, minimised (:func:`finding_report`).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import attrs

from mutagrad.testing import arguments
from mutagrad.testing.fuzz.grammar import generate
from mutagrad.testing.fuzz.minimise import minimise
from mutagrad.testing.fuzz.oracle import FORWARD, MODES, Verdict, judge
from mutagrad.testing.fuzz.refusals import breakdown_table, refusal_breakdown
from mutagrad.testing.verdicts import SILENTLY_WRONG, ModeResult, Outcome

#: The rows of the outcome table: a program numpy rejects is discarded, never judged.
JUDGED_OUTCOMES = tuple(o for o in Outcome if o is not Outcome.PROGRAM_ERROR)

__all__ = ["FuzzFigures", "finding_report", "fuzz_figures", "main", "program_rng", "summary_table"]


@attrs.frozen
class _Run:
    """One judged program of a fuzzing run, with its minimised version when it failed."""

    index: int
    verdict: Verdict
    minimised: Verdict | None = None


def program_rng(seed: int, index: int) -> random.Random:
    """The random source of program ``index`` of a run with ``seed``."""
    return random.Random(f"{seed}:{index}")


_Task = tuple[int, int, int, float, bool, tuple[str, ...]]


def _run_one(task: _Task) -> _Run:
    seed, index, max_statements, seconds, shrink, modes = task
    program = generate(program_rng(seed, index), max_statements)
    verdict = judge(program, modes, seconds)
    if not (shrink and verdict.findings):
        return _Run(index, verdict)
    small = minimise(program, verdict.findings[0].mode, seconds)
    return _Run(index, verdict, judge(small, modes, seconds))


def _runs(tasks: list[_Task], jobs: int) -> Iterator[_Run]:
    if jobs <= 1:
        yield from map(_run_one, tasks)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(_run_one, tasks, chunksize=4)


@attrs.frozen
class FuzzFigures:
    """What a fuzzing run found, per mode: for the comparison report's headline.

    ``wrong`` counts the silently wrong calls (a value or a gradient that
    differs), ``crashed`` the crashes and timeouts; ``refusals`` the refused
    calls of each mode by reason (:func:`~.refusals.refusal_reason`).
    """

    programs: int
    judged: int
    seed: int
    wrong: dict[str, int]
    crashed: dict[str, int]
    refusals: dict[str, dict[str, int]] = attrs.field(factory=dict)

    @property
    def failures(self) -> int:
        return sum(self.wrong.values()) + sum(self.crashed.values())


def fuzz_figures(
    count: int, seed: int = 0, jobs: int = 1, max_statements: int = 10, seconds: float = 10.0
) -> FuzzFigures:
    """Judge ``count`` random programs (unminimised) and count the failures per mode."""
    tasks = [(seed, index, max_statements, seconds, False, MODES) for index in range(count)]
    verdicts = [run.verdict for run in _runs(tasks, jobs)]
    judged = [v for v in verdicts if v.discarded is None]

    def counting(outcomes: tuple[Outcome, ...]) -> dict[str, int]:
        return {mode: sum(v.outcome(mode) in outcomes for v in judged) for mode in MODES}

    wrong, crashed = counting(SILENTLY_WRONG), counting((Outcome.CRASH, Outcome.TIMEOUT))
    refusals = refusal_breakdown(r for v in judged for r in v.results)
    return FuzzFigures(count, len(judged), seed, wrong, crashed, refusals)


def summary_table(verdicts: Sequence[Verdict], modes: Sequence[str] = MODES) -> str:
    """Counts of each outcome in each mode (and forward mode's column, where it was judged),
    of discarded programs by reason, and of refusals by reason in each mode."""
    judged = [v for v in verdicts if v.discarded is None]
    lines = [
        f"programs: {len(verdicts)} ({len(judged)} judged, {len(verdicts) - len(judged)} discarded)"
    ]
    lines.append(f"{'outcome':<14}" + "".join(f"{mode:>10}" for mode in modes))
    for outcome in JUDGED_OUTCOMES:
        counts = [sum(v.outcome(mode) is outcome for v in judged) for mode in modes]
        lines.append(f"{outcome.value:<14}" + "".join(f"{n:>10}" for n in counts))
    reasons = Counter(v.discarded.split(":")[0] for v in verdicts if v.discarded is not None)
    lines += [f"discarded: {n:>5}  {reason}" for reason, n in reasons.most_common()]
    breakdown = refusal_breakdown(r for v in judged for r in v.results)
    return "\n".join(lines + breakdown_table(breakdown, tuple(modes)))


def _describe(verdict: Verdict) -> str:
    return "\n".join(f"#   {r.mode}: {_result_text(r)}" for r in verdict.results)


def _result_text(r: ModeResult) -> str:
    """``refused (MutationError: ...)``, ``wrong (gradient of a0: ...)``, ``right``."""
    detail = f"{r.error_type}: {r.detail}" if r.error_type else r.detail
    return f"{r.outcome.value} ({detail})" if detail else r.outcome.value


def finding_report(run: _Run, seed: int) -> str:
    """A WRONG or crashing program: a script reproducing it (minimised), and how it was drawn."""
    verdict = run.verdict
    failing = ", ".join(f"{r.outcome.value} in {r.mode}" for r in verdict.findings)
    smallest = run.minimised if run.minimised is not None else verdict
    mode = (smallest.findings or verdict.findings)[0].mode
    parts = [
        f"## program {run.index} (seed {seed}): {failing}",
        f"tags: {', '.join(verdict.program.tags)}",
        "```python",
        smallest.program.script(mode),
        _describe(smallest),
        "```",
    ]
    if smallest is not verdict:
        parts += ["as drawn:", "```python", str(verdict.program), _describe(verdict), "```"]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mutagrad.testing.fuzz",
        description="Judge random mutating numpy programs in every mode of mutagrad.",
    )
    parser.add_argument(
        "--count", type=arguments.count, default=1000, help="programs to run (default 1000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the run (default 0)")
    parser.add_argument(
        "--jobs", type=arguments.positive, default=1, help="worker processes (default 1)"
    )
    parser.add_argument("--out", type=Path, help="write the WRONG and crashing programs here")
    parser.add_argument(
        "--max-statements", type=arguments.positive, default=10, help="per program (default 10)"
    )
    parser.add_argument(
        "--time-limit",
        type=arguments.seconds,
        default=10.0,
        help="seconds per call, 0 for none (default 10)",
    )
    parser.add_argument(
        "--no-minimise", action="store_true", help="report failing programs as drawn"
    )
    parser.add_argument(
        "--forward",
        action="store_true",
        help="judge forward mode too: jvp along a random direction against finite differences",
    )
    options = parser.parse_args(argv)
    modes = (*MODES, FORWARD) if options.forward else MODES
    tasks = [
        (options.seed, index, options.max_statements, options.time_limit,
         not options.no_minimise, modes)
        for index in range(options.count)
    ]  # fmt: skip
    runs: list[_Run] = []
    for run in _runs(tasks, options.jobs):
        runs.append(run)
        if len(runs) % 100 == 0:
            print(f"judged {len(runs)} of {options.count}", file=sys.stderr)
    failing = [run for run in runs if run.verdict.findings]
    reports = [finding_report(run, options.seed) for run in failing]
    summary = summary_table([run.verdict for run in runs], modes)
    print("\n\n".join([*reports, summary]))
    if options.out is not None:
        options.out.write_text("\n\n".join([summary, *reports]) + "\n")
    return 1 if failing else 0
