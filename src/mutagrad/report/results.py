"""``results.json``: every measured number of a report, plus its settings and environment.

The file is one JSON object (``schema``: :data:`SCHEMA`)::

    {
      "schema": "mutagrad-report/3",
      "environment": {"python", "numpy", "mutagrad", then each peer's
                      distributions ("jax", "jaxlib", "autograd", "mygrad"),
                      "matplotlib", "platform", "machine", "processor",
                      "cpu_count", "load_average", "date"},
      "settings": {"corpus", "modes", "engines", "peers", "repeats",
                   "time_limit_seconds", "sample_seconds", "rtol", "atol",
                   "finite_difference_step", "measure_memory", "timing",
                   "generated", "seed", "jobs", "scheduler"},
      "started": ISO 8601 date, "seconds": total run time,
      "summary": {"programs", "mutating", "accepted": {system: n},
                  "systems": {system: {"engine", "label", "right", "refused",
                                       "value_differs", "gradient_wrong",
                                       "gradient_missing", "crashed",
                                       "silently_wrong",
                                       "median_seconds", "median_overhead"}},
                  "program_errors": [[program, what is wrong]],
                  "poison_errors": {"total", "genuine", "false_alarm",
                                    "undetermined"},
                  "genuine": [[program, mode]], "false_alarms": [...],
                  "wrong": [...], "crashed": [...], "timed_out": [...],
                  "refused_everywhere": [[program, error type]],
                  "known_issues": [program],
                  "median_overhead": {system: ratio or null},
                  "median_overhead_accepted": {system: ratio or null},
                  "overhead_programs": n, "timed": n, "noisy": n, "busy": bool,
                  "errors_by_mode": {system: {type: n}},
                  "by_category": {category: {"programs", "accepted": {system: n},
                                             "genuine", "false_alarms"}},
                  "headline": [sentence, ...]},
      "programs": [
        {"name", "category", "description", "mutates", "zygote", "source",
         "note", "known_issue", "code", "arguments", "reference_error", "reference_seconds",
         "forward_seconds", "forward_sample_seconds", "forward_spread",
         "forward_noisy", "forward_peak_bytes",
         "modes": {mode: RESULT}, "peers": {peer: RESULT}}
      ]
    }

    RESULT = {"engine", "outcome", "cell", "error_type", "error_message",
              "max_abs_difference", "value_matches", "gradient_missing",
              "bytes_copied", "seconds",
              "sample_seconds", "spread", "noisy", "samples", "calls_per_sample", "peak_bytes",
              "overhead_ratio", "poison_verdict",
              "unchecked_max_abs_difference", "unchecked_error"}

A *system* is one of mutagrad's modes or a peer (``jax``, ``autograd``,
``mygrad``). ``outcome`` is one of ``right``, ``refused``, ``value
differs``, ``wrong`` (the gradient), ``crash``, ``timeout`` and ``program
error`` (the program fails on plain numpy): the values of
:class:`mutagrad.testing.verdicts.Outcome`, the fuzzer's vocabulary too
(schema 2 said ``ok`` and ``error``). ``error_message`` is the result's
``detail``: the first line of the error, or what is wrong with the program.
Times are seconds per call, memory and copies in bytes; a number that was
not measured (a refused call has no timing, a peer no memory or copies,
nothing is timed with ``"timing": false``) is ``null``. ``generated``
programs (category ``generated``) carry their source in ``code`` (empty for
corpus programs) and their draw in ``source``.
``jobs`` is the number of worker processes (1: the report's own process),
``scheduler`` the dask scheduler's address or ``null``. Infinite differences
are written as the string ``"inf"`` so that the file stays strict JSON.
``spread`` is (upper quartile - lower quartile) / median of the samples
(``null`` for fewer than 3), ``noisy`` whether it exceeds
:data:`mutagrad.report.runner.NOISY_SPREAD`: a noisy time is left out of every
median; ``timed`` and ``noisy`` in the summary count them, and ``busy`` says
whether the load average when the run began was at least half the CPUs.
"""

from __future__ import annotations

import json
import math
from typing import Any

import attrs

from mutagrad.report.peers import MUTAGRAD, system_label
from mutagrad.report.runner import MeasuredResult, ProgramResult, Report
from mutagrad.report.summary import Summary, headline, summarize

SCHEMA = "mutagrad-report/3"


def _number(x: float | None) -> float | str | None:
    if x is None:
        return None
    if math.isinf(x) or math.isnan(x):
        return str(x)
    return x


def _mode_entry(result: MeasuredResult, program: ProgramResult) -> dict[str, Any]:
    return {
        "engine": result.engine,
        "outcome": result.outcome.value,
        "cell": result.cell,
        "error_type": result.error_type,
        "error_message": result.detail or None,
        "max_abs_difference": _number(result.max_abs_difference),
        "value_matches": result.value_matches,
        "gradient_missing": result.gradient_missing,
        "bytes_copied": result.bytes_copied,
        "seconds": _number(result.seconds),
        "sample_seconds": list(result.sample_seconds),
        "spread": _number(result.spread),
        "noisy": result.noisy,
        "samples": result.samples,
        "calls_per_sample": result.calls_per_sample,
        "peak_bytes": result.peak_bytes,
        "overhead_ratio": _number(program.overhead(result.mode)),
        "poison_verdict": result.poison_verdict.value if result.poison_verdict else None,
        "unchecked_max_abs_difference": _number(result.unchecked_max_abs_difference),
        "unchecked_error": result.unchecked_error,
    }


def _program_entry(p: ProgramResult) -> dict[str, Any]:
    program = p.program
    return {
        "name": program.name,
        "category": program.category,
        "description": program.description,
        "mutates": program.mutates,
        "zygote": program.zygote,
        "source": program.source,
        "note": program.note,
        "known_issue": program.known_issue,
        "code": program.code,
        "arguments": program.argument_summary,
        "reference_error": p.reference_error,
        "reference_seconds": _number(p.reference_seconds),
        "forward_seconds": _number(p.forward_seconds),
        "forward_sample_seconds": list(p.forward_sample_seconds),
        "forward_spread": _number(p.forward_spread),
        "forward_noisy": p.forward_noisy,
        "forward_peak_bytes": p.forward_peak_bytes,
        "modes": {r.mode: _mode_entry(r, p) for r in p.modes},
        "peers": {r.mode: _mode_entry(r, p) for r in p.peers},
    }


def _pairs(pairs: tuple[tuple[str, str], ...]) -> list[list[str]]:
    return [list(pair) for pair in pairs]


def _summary_entry(summary: Summary) -> dict[str, Any]:
    return {
        "programs": summary.programs,
        "mutating": summary.mutating,
        "accepted": dict(summary.accepted),
        "systems": {
            system: {
                "engine": system if system in summary.peers else MUTAGRAD,
                "label": system_label(system),
                "right": counts.right,
                "refused": counts.refused,
                "value_differs": counts.value_differs,
                "gradient_wrong": counts.gradient_wrong,
                "gradient_missing": counts.gradient_missing,
                "crashed": counts.crashed,
                "silently_wrong": counts.silently_wrong,
                "median_seconds": _number(counts.median_seconds),
                "median_overhead": _number(counts.median_overhead),
            }
            for system, counts in summary.systems.items()
        },
        "program_errors": _pairs(summary.program_errors),
        "poison_errors": {
            "total": summary.poison_errors,
            "genuine": len(summary.genuine),
            "false_alarm": len(summary.false_alarms),
            "undetermined": len(summary.undetermined),
        },
        "genuine": _pairs(summary.genuine),
        "false_alarms": _pairs(summary.false_alarms),
        "undetermined": _pairs(summary.undetermined),
        "wrong": _pairs(summary.wrong),
        "crashed": _pairs(summary.crashed),
        "timed_out": _pairs(summary.timed_out),
        "refused_everywhere": _pairs(summary.refused_everywhere),
        "known_issues": list(summary.known_issues),
        "median_overhead": {m: _number(r) for m, r in summary.median_overhead.items()},
        "median_overhead_accepted": {
            m: _number(r) for m, r in summary.median_overhead_accepted.items()
        },
        "overhead_programs": summary.overhead_programs,
        "timed": summary.timed,
        "noisy": summary.noisy,
        "busy": summary.busy,
        "errors_by_mode": summary.errors_by_mode,
        "by_category": {
            category: {
                "programs": counts.programs,
                "accepted": dict(counts.accepted),
                "genuine": counts.genuine,
                "false_alarms": counts.false_alarms,
            }
            for category, counts in summary.by_category.items()
        },
        "headline": [s.text for s in headline(summary)],
    }


def results_document(report: Report) -> dict[str, Any]:
    """The whole report as a JSON-ready dict (see the module docstring)."""
    settings = report.settings
    return {
        "schema": SCHEMA,
        "environment": dict(report.environment),
        "settings": {
            "corpus": settings.corpus,
            "modes": list(settings.modes),
            "engines": list(settings.engines),
            "peers": list(settings.peers),
            "repeats": settings.repeats,
            "time_limit_seconds": settings.time_limit,
            "sample_seconds": settings.sample_seconds,
            "rtol": settings.rtol,
            "atol": settings.atol,
            "finite_difference_step": settings.finite_difference_step,
            "measure_memory": settings.measure_memory,
            "timing": settings.timing,
            "generated": settings.generated,
            "seed": settings.seed,
            "jobs": settings.jobs,
            "scheduler": settings.scheduler,
        },
        "started": report.started,
        "seconds": report.seconds,
        "summary": _summary_entry(summarize(report)),
        "fuzz": None if report.fuzz is None else attrs.asdict(report.fuzz),
        "programs": [_program_entry(p) for p in report.programs],
    }


def render_json(report: Report) -> str:
    return json.dumps(results_document(report), indent=2, allow_nan=False) + "\n"
