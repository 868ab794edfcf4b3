"""``mutagrad report``: which programs strict mode (Zygote's rule), poison and snapshot accept,
and what the AD systems people use (JAX, autograd, MyGrad) do with the same programs.

The parts:

* :mod:`mutagrad.report.corpus` – the corpus format (:class:`Program`) and
  :func:`load_corpus` for ``--corpus path_or_module``;
* :mod:`mutagrad.report.programs` – the bundled corpus, built on
  :mod:`mutagrad.report.scenarios` (the seed documents' scenarios);
* :mod:`mutagrad.report.runner` – differentiates every program in every mode
  and on every peer, judges the result against finite differences, classifies
  poison errors as genuine or false alarms, and measures time, memory and
  bytes copied;
* :mod:`mutagrad.report.peers` – the peer AD systems (optional extra
  ``peers``) and how each runs an unchanged numpy program;
* :mod:`mutagrad.report.summary` – the headline counts;
* :mod:`mutagrad.report.text`, :mod:`~mutagrad.report.markdown`,
  :mod:`~mutagrad.report.html_page`, :mod:`~mutagrad.report.results` – the
  terminal summary, report.md, index.html and results.json
  (:func:`write_report` writes the three files);
* :mod:`mutagrad.report.plots` – matplotlib plots (optional extra ``report``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from mutagrad.report.corpus import (
    CATEGORIES,
    DEFAULT_CORPUS,
    CorpusError,
    Program,
    add_to,
    load_corpus,
)
from mutagrad.report.html_page import render_html
from mutagrad.report.markdown import render_markdown
from mutagrad.report.peers import (
    MUTAGRAD,
    PEERS,
    EngineChoiceError,
    default_engines,
    installed_peers,
    parse_engines,
)
from mutagrad.report.results import SCHEMA, render_json, results_document
from mutagrad.report.runner import (
    DEFAULT_REPEATS,
    DEFAULT_TIME_LIMIT,
    MODES,
    MeasuredResult,
    PoisonVerdict,
    ProgramResult,
    Report,
    run_program,
    run_report,
)
from mutagrad.report.summary import Summary, headline, summarize
from mutagrad.report.text import render_text
from mutagrad.testing.verdicts import ModeResult, Outcome

DEFAULT_OUT = "mutagrad-report"
REPORT_FILES = ("index.html", "report.md", "results.json")


class OutputError(OSError):
    """The report's output directory cannot be created or written."""


def check_output(out: str | Path) -> Path | None:
    """Make sure the report's files can be written into ``out``, before any work.

    Creates the directory if needed and writes (and removes) a file in it.
    Returns the directory when this call created it (so that a run that ends
    without writing can remove it again), else None; raises
    :class:`OutputError` saying what is wrong.
    """
    directory = Path(out)
    if directory.exists() and not directory.is_dir():
        raise OutputError(f"--out {out}: exists and is not a directory")
    created = None if directory.exists() else directory
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        raise OutputError(f"--out {out}: cannot write there ({error.strerror or error})") from error
    return created


def write_report(report: Report, out: str | Path = DEFAULT_OUT) -> dict[str, Path]:
    """Write index.html, report.md and results.json into ``out`` (created if needed).

    The three are rendered first, then each is written to a temporary file
    beside its place and renamed over it: a failure leaves the files of the
    last complete report, or none, never a half-written set.
    """
    texts = {
        "index.html": render_html(report),
        "report.md": render_markdown(report),
        "results.json": render_json(report),
    }
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    mode = 0o666 & ~_umask()  # what open() would have given the files
    written: list[Path] = []
    try:
        for name, text in texts.items():
            handle, path = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
            written.append(Path(path))
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
            os.chmod(path, mode)
        for name, temporary in zip(texts, written):
            os.replace(temporary, directory / name)
    finally:
        for temporary in written:  # left over only when something failed
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
    return {name: directory / name for name in REPORT_FILES}


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


__all__ = [
    "CATEGORIES",
    "DEFAULT_CORPUS",
    "DEFAULT_OUT",
    "DEFAULT_REPEATS",
    "DEFAULT_TIME_LIMIT",
    "MODES",
    "MUTAGRAD",
    "PEERS",
    "REPORT_FILES",
    "SCHEMA",
    "CorpusError",
    "EngineChoiceError",
    "MeasuredResult",
    "ModeResult",
    "Outcome",
    "OutputError",
    "PoisonVerdict",
    "Program",
    "ProgramResult",
    "Report",
    "Summary",
    "add_to",
    "check_output",
    "default_engines",
    "headline",
    "installed_peers",
    "load_corpus",
    "parse_engines",
    "render_html",
    "render_json",
    "render_markdown",
    "render_text",
    "results_document",
    "run_program",
    "run_report",
    "summarize",
    "write_report",
]
