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
    ModeResult,
    Outcome,
    PoisonVerdict,
    ProgramResult,
    Report,
    run_program,
    run_report,
)
from mutagrad.report.summary import Summary, headline, summarize
from mutagrad.report.text import render_text

DEFAULT_OUT = "mutagrad-report"
REPORT_FILES = ("index.html", "report.md", "results.json")


def write_report(report: Report, out: str | Path = DEFAULT_OUT) -> dict[str, Path]:
    """Write index.html, report.md and results.json into ``out`` (created if needed)."""
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {name: directory / name for name in REPORT_FILES}
    paths["index.html"].write_text(render_html(report), encoding="utf-8")
    paths["report.md"].write_text(render_markdown(report), encoding="utf-8")
    paths["results.json"].write_text(render_json(report), encoding="utf-8")
    return paths


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
    "ModeResult",
    "Outcome",
    "PoisonVerdict",
    "Program",
    "ProgramResult",
    "Report",
    "Summary",
    "add_to",
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
