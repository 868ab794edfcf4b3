"""mutagrad's command line: ``python -m mutagrad report`` (also the ``mutagrad`` script).

``report`` differentiates every program of a corpus (by default the bundled
one, :mod:`mutagrad.report.programs`) in strict, poison and snapshot mode, and
runs it unchanged on every installed peer AD system (JAX, autograd, MyGrad;
``--engines`` chooses), compares each value with plain numpy and each
gradient with central finite differences, classifies poison errors as genuine
or false alarms, measures time, memory and bytes copied, prints the headline
and a summary table, and writes ``index.html``, ``report.md`` and
``results.json`` into ``--out`` (default ``./mutagrad-report``). It exits with
status 1 if a mutagrad value or gradient is wrong or a mutagrad call crashed
or timed out (except in programs marked with a ``known_issue``, which the
report still shows in red); 2 if the corpus cannot be loaded, ``--engines``
names an engine that is unknown or not installed, or a corpus program fails
on plain numpy. What the peers do never changes the status.

At scale: ``--generated N`` adds N random mutating programs drawn from
:func:`mutagrad.testing.strategies.programs` (``--seed S``), ``--no-timing``
skips the timing and memory measurements, ``--jobs N`` runs the programs in
N worker processes (default: the CPU count) and ``--scheduler ADDRESS`` on a
dask.distributed cluster instead (:mod:`mutagrad.report.parallel`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from mutagrad import __version__
from mutagrad.report import (
    DEFAULT_CORPUS,
    DEFAULT_OUT,
    DEFAULT_REPEATS,
    DEFAULT_TIME_LIMIT,
    PEERS,
    CorpusError,
    EngineChoiceError,
    default_engines,
    load_corpus,
    parse_engines,
    render_text,
    run_report,
    write_report,
)
from mutagrad.report.generated import DEFAULT_SEED, GenerationError
from mutagrad.report.parallel import SchedulerError, default_jobs
from mutagrad.report.peers import PEERS_EXTRA_HINT

# A few seconds' worth: about 1,000 programs a second on this project's machines.
DEFAULT_FUZZ_PROGRAMS = 2000


def _use_color(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    return sys.stdout.isatty()


def report_command(args: argparse.Namespace) -> int:
    try:
        engines = parse_engines(args.engines) if args.engines else default_engines()
        programs = load_corpus(args.corpus)
    except (CorpusError, EngineChoiceError) as error:
        print(f"mutagrad report: {error}", file=sys.stderr)
        return 2
    if args.select:
        programs = tuple(
            p for p in programs if any(s in p.name or s == p.category for s in args.select)
        )
        if not programs and not args.generated:
            print("mutagrad report: --select matched no program", file=sys.stderr)
            return 2
    try:
        report = run_report(
            programs,
            corpus=args.corpus,
            engines=engines,
            repeats=args.repeats,
            time_limit=args.time_limit if args.time_limit > 0 else None,
            fuzz_programs=args.fuzz,
            generated=args.generated,
            seed=args.seed,
            timing=args.timing,
            jobs=args.jobs,
            scheduler=args.scheduler,
        )
    except (SchedulerError, GenerationError) as error:
        print(f"mutagrad report: {error}", file=sys.stderr)
        return 2
    paths = write_report(report, args.out) if args.out else {}
    n = len(report.programs)
    count = f"{n} program{'s' if n != 1 else ''}"
    try:
        print(render_text(report, color=_use_color(args.color)))
        if paths:
            print()
            print("wrote " + ", ".join(str(p) for p in paths.values()))
        if not args.engines and len(engines) == 1:
            print(f"To run the same programs on JAX, autograd and MyGrad: {PEERS_EXTRA_HINT}")
        print(f"({count}, {report.seconds:.1f} s)")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (| head): the files are written
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (keep interpreter exit quiet)
    if report.unexpected_failures:
        return 1
    return 2 if report.program_errors else 0


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mutagrad", description="Reverse-mode AD for NumPy code that mutates arrays."
    )
    parser.add_argument("--version", action="version", version=f"mutagrad {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    report = commands.add_parser(
        "report",
        help="compare strict (Zygote's rule), poison and snapshot mode, and peer AD systems, "
        "on a corpus",
        description="Differentiate every program of a corpus in strict, poison and snapshot "
        "mode and on the installed peer AD systems (JAX, autograd, MyGrad), each running the "
        "program unchanged; compare each value with plain numpy and each gradient with central "
        "finite differences, classify poison errors as genuine or false alarms, measure time, "
        "memory and bytes copied, print a summary and write index.html, report.md and "
        "results.json.",
    )
    report.add_argument(
        "--out",
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"directory for index.html, report.md and results.json (default: ./{DEFAULT_OUT}; "
        "an empty string writes no files)",
    )
    report.add_argument(
        "--corpus",
        default=DEFAULT_CORPUS,
        metavar="PATH_OR_MODULE",
        help="a .py file or an importable module with a module-level CORPUS "
        f"(see mutagrad.report.corpus; default: {DEFAULT_CORPUS})",
    )
    report.add_argument(
        "--engines",
        metavar="LIST",
        help="comma-separated engines to run: mutagrad (its three modes; required) and "
        f"peers among {', '.join(PEERS)} (default: mutagrad and every installed peer; "
        f"install them with {PEERS_EXTRA_HINT})",
    )
    report.add_argument(
        "--repeats",
        type=int,
        default=DEFAULT_REPEATS,
        metavar="N",
        help=f"timing samples per program and mode; the median is reported (default: "
        f"{DEFAULT_REPEATS})",
    )
    report.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        metavar="SECONDS",
        help="limit for each call (the plain run and finite differences, each mode's "
        "gradient); a call over it is recorded as a timeout and the run goes on; 0 for no "
        f"limit (default: {DEFAULT_TIME_LIMIT:g})",
    )
    report.add_argument(
        "--fuzz",
        type=int,
        default=DEFAULT_FUZZ_PROGRAMS,
        metavar="N",
        help="also judge N random mutating programs of the differential fuzzer, whose "
        f"count of silently wrong gradients joins the headline; 0 for none (default: "
        f"{DEFAULT_FUZZ_PROGRAMS})",
    )
    report.add_argument(
        "--generated",
        type=_count,
        default=0,
        metavar="N",
        help="also run N random mutating programs drawn from "
        "mutagrad.testing.strategies.programs() (needs hypothesis), each judged like a corpus "
        "program and shown with its source; --select does not filter them (default: 0)",
    )
    report.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        metavar="S",
        help="seed of the --generated programs and of the --fuzz programs: the same seed draws "
        f"the same programs (default: {DEFAULT_SEED})",
    )
    report.add_argument(
        "--no-timing",
        dest="timing",
        action="store_false",
        help="judge every program but measure neither time nor memory (the time cells of the "
        "report are then empty): for large --generated runs",
    )
    report.add_argument(
        "--jobs",
        type=_positive,
        default=default_jobs(),
        metavar="N",
        help="run the programs in N worker processes, 1 for this process; the verdicts do not "
        "depend on it, the timings do (default: the CPU count, here %(default)s)",
    )
    report.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the programs on the dask.distributed cluster of this scheduler "
        '(tcp://host:8786) instead of local processes; needs pip install "dask[distributed]" '
        "here and on the workers, which also need mutagrad",
    )
    report.add_argument(
        "--select",
        action="append",
        metavar="TEXT",
        help="run only programs whose name contains TEXT or whose category is TEXT (repeatable)",
    )
    report.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the terminal table (default: auto, when standard output is a terminal)",
    )
    report.set_defaults(run=report_command)
    from mutagrad.coverage import add_command as add_coverage_command

    add_coverage_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
