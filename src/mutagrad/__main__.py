"""mutagrad's command line: ``python -m mutagrad report`` (also the ``mutagrad`` script).

``report`` differentiates the seed scenarios in strict, poison and snapshot
mode, compares each gradient with finite differences and prints a table. It
exits with status 1 if any gradient is wrong or any call crashed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mutagrad.report import render_text, run_report


def report_command(args: argparse.Namespace) -> int:
    report = run_report()
    print(render_text(report))
    return 1 if report.failures else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mutagrad", description="Reverse-mode AD for NumPy code that mutates arrays."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    report = commands.add_parser(
        "report",
        help="differentiate the seed scenarios in every mode and print a table",
        description="Differentiate the seed scenarios in strict, poison and snapshot mode "
        "and compare each gradient with central finite differences.",
    )
    report.set_defaults(run=report_command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
