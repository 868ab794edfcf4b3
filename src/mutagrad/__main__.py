"""mutagrad's command line: ``python -m mutagrad report`` (also the ``mutagrad`` script).

``report`` differentiates every program of a corpus (by default the bundled
one, :mod:`mutagrad.report.programs`) in strict, poison, snapshot and forward mode,
and runs it unchanged on every installed peer AD system (JAX, autograd, MyGrad;
``--engines`` chooses), compares each value with plain numpy and each
gradient with central finite differences, classifies poison errors as genuine
or false alarms, measures time, memory and bytes copied, prints the headline
and a summary table, and writes ``index.html``, ``report.md`` and
``results.json`` into ``--out`` (default ``./mutagrad-report``). The output
directory is checked before any program runs, and the three files are
written together at the end (each to a temporary file, then renamed), so a
run that fails or is interrupted leaves the files of the last complete run,
or none.

Exit status (what the peers do never changes it):

* 0 (:data:`EXIT_OK`): every mutagrad value and gradient was right or refused
  with a mutagrad error;
* 1 (:data:`EXIT_WRONG`): a mutagrad value or gradient was wrong, or a
  mutagrad call crashed or timed out (except in programs marked with a
  ``known_issue``, which the report still shows in red);
* 2 (:data:`EXIT_USAGE`): a usage error: an option out of range (argparse's
  message), a corpus that cannot be loaded or one of whose programs fails on
  plain numpy, ``--engines`` naming an engine that is unknown or not
  installed, ``--generated`` without hypothesis;
* 3 (:data:`EXIT_IO`): the output directory cannot be created or written;
* 130 (:data:`EXIT_INTERRUPTED`): interrupted (Ctrl-C, SIGINT): the programs
  not started are cancelled, the workers stopped, one line is printed;
* 141 (:data:`EXIT_BROKEN_PIPE`): the reader of the output went away
  (``mutagrad coverage | head``), as for a program ended by SIGPIPE; for
  ``report``, whose files are written first, the status is the report's.

At scale: ``--generated N`` adds N random mutating programs drawn from
:func:`mutagrad.testing.strategies.programs` (``--seed S``), ``--no-timing``
skips the timing and memory measurements, ``--jobs N`` runs the programs in
N worker processes (default: the CPU count) and ``--scheduler ADDRESS`` on a
dask.distributed cluster instead (:mod:`mutagrad.report.parallel`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
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
    OutputError,
    check_output,
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
from mutagrad.testing import arguments

# A few seconds' worth: about 1,000 programs a second on this project's machines.
DEFAULT_FUZZ_PROGRAMS = 2000

EXIT_OK = 0
EXIT_WRONG = 1
EXIT_USAGE = 2
EXIT_IO = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def _use_color(choice: str) -> bool:
    """``--color``: auto colours a terminal unless NO_COLOR is set (no-color.org)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _fail(message: str, status: int) -> int:
    print(f"mutagrad report: {message}", file=sys.stderr)
    return status


def report_command(args: argparse.Namespace) -> int:
    try:
        engines = parse_engines(args.engines) if args.engines else default_engines()
        programs = load_corpus(args.corpus)
    except (CorpusError, EngineChoiceError) as error:
        return _fail(str(error), EXIT_USAGE)
    if args.select:
        programs = tuple(
            p for p in programs if any(s in p.name or s == p.category for s in args.select)
        )
        if not programs and not args.generated:
            return _fail("--select matched no program", EXIT_USAGE)
    created = None
    if args.out:
        try:
            created = check_output(args.out)  # before any work: a bad --out costs nothing
        except OutputError as error:
            return _fail(str(error), EXIT_IO)
    try:
        return _report(args, programs, engines)
    finally:
        if created is not None:  # made for this run, and the run wrote nothing into it
            with contextlib.suppress(OSError):
                created.rmdir()


def _report(args: argparse.Namespace, programs: Sequence, engines: tuple[str, ...]) -> int:
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
        return _fail(str(error), EXIT_USAGE)
    try:
        paths = write_report(report, args.out) if args.out else {}
    except OSError as error:
        return _fail(f"cannot write the report into {args.out}: {error}", EXIT_IO)
    n = len(report.programs)
    count = f"{n} program{'s' if n != 1 else ''}"
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    try:
        print(render_text(report, color=_use_color(args.color), width=width))
        if paths:
            print()
            print("wrote " + ", ".join(str(p) for p in paths.values()))
        if not args.engines and len(engines) == 1:
            print(f"To run the same programs on JAX, autograd and MyGrad: {PEERS_EXTRA_HINT}")
        print(f"({count}, {report.seconds:.1f} s)")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (| head): the files are written
        _silence_stdout()
    if report.unexpected_failures:
        return EXIT_WRONG
    return EXIT_USAGE if report.program_errors else EXIT_OK


def _silence_stdout() -> None:
    """Send what is left of standard output nowhere: the reader is gone, and the interpreter's
    last flush would fail again with a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


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
        description="Differentiate every program of a corpus in strict, poison, snapshot and "
        "forward mode and on the installed peer AD systems (JAX, autograd, MyGrad), each running "
        "the program unchanged; compare each value with plain numpy and each gradient with central "
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
        help="comma-separated engines to run: mutagrad (its three modes and forward mode; "
        "required) and "
        f"peers among {', '.join(PEERS)} (default: mutagrad and every installed peer; "
        f"install them with {PEERS_EXTRA_HINT})",
    )
    report.add_argument(
        "--repeats",
        type=arguments.positive,
        default=DEFAULT_REPEATS,
        metavar="N",
        help=f"timing samples per program and mode; the median is reported (default: "
        f"{DEFAULT_REPEATS})",
    )
    report.add_argument(
        "--time-limit",
        type=arguments.seconds,
        default=DEFAULT_TIME_LIMIT,
        metavar="SECONDS",
        help="limit for each call (the plain run and finite differences, each mode's "
        "gradient); a call over it is recorded as a timeout and the run goes on; 0 for no "
        f"limit (default: {DEFAULT_TIME_LIMIT:g})",
    )
    report.add_argument(
        "--fuzz",
        type=arguments.count,
        default=DEFAULT_FUZZ_PROGRAMS,
        metavar="N",
        help="also judge N random mutating programs of the differential fuzzer, whose "
        f"count of silently wrong gradients joins the headline; 0 for none (default: "
        f"{DEFAULT_FUZZ_PROGRAMS})",
    )
    report.add_argument(
        "--generated",
        type=arguments.count,
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
        type=arguments.positive,
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
        help="colour the terminal table (default: auto, when standard output is a terminal "
        "and NO_COLOR is not set)",
    )
    report.set_defaults(run=report_command)
    from mutagrad.coverage import add_command as add_coverage_command

    add_coverage_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command and return its exit status (argparse exits with 2 on a usage error)."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print(f"mutagrad {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
