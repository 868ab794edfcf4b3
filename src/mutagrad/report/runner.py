"""The report's runner: differentiate every scenario in every mode and judge the result.

For each :class:`~mutagrad.report.scenarios.Scenario` the runner computes a
reference gradient by central finite differences on plain ndarrays
(:func:`mutagrad.testing.numerical_gradient`), then calls
:func:`mutagrad.withgradient` once per mode. Each call becomes a
:class:`ModeResult`:

* ``ok``     – a gradient that matches the reference within tolerance;
* ``error``  – a mutagrad error (a deliberate refusal such as MutationError);
* ``crash``  – any other exception: a bug in mutagrad or in the scenario;
* ``wrong``  – a gradient that differs from the reference. This must never
  happen: mutagrad's promise is an error rather than a wrong gradient.
"""

from __future__ import annotations

import enum
import time
from collections import Counter
from typing import Any

import attrs
import numpy as np

import mutagrad
from mutagrad.report.scenarios import CORPUS, Scenario
from mutagrad.testing import numerical_gradient

MODES: tuple[str, ...] = ("strict", "poison", "snapshot")
RTOL = 1e-4
ATOL = 1e-5


class Status(enum.Enum):
    """The verdict on one scenario in one mode (see the module docstring)."""

    OK = "ok"
    ERROR = "error"
    CRASH = "crash"
    WRONG = "wrong"


@attrs.frozen
class ModeResult:
    """What differentiating one scenario in one mode gave."""

    scenario: str
    mode: str
    status: Status
    error_type: str | None = None
    error_message: str | None = None
    """The first line of the error's message."""
    max_abs_difference: float | None = None
    """Largest |gradient - reference| over all arguments, when a gradient came back."""
    bytes_copied: int | None = None
    seconds: float = 0.0

    @property
    def cell(self) -> str:
        """The table's text: "ok", the error's class name, or "WRONG"."""
        if self.status is Status.OK:
            return "ok"
        if self.status is Status.WRONG:
            return "WRONG"
        if self.status is Status.CRASH:
            return f"{self.error_type} (crash)"
        return str(self.error_type)


@attrs.frozen
class Report:
    """Every scenario's result in every mode, in corpus order."""

    scenarios: tuple[Scenario, ...]
    modes: tuple[str, ...]
    results: tuple[ModeResult, ...]

    def result(self, scenario: str, mode: str) -> ModeResult:
        for r in self.results:
            if r.scenario == scenario and r.mode == mode:
                return r
        raise KeyError((scenario, mode))

    def status_counts(self, mode: str) -> Counter[Status]:
        return Counter(r.status for r in self.results if r.mode == mode)

    @property
    def failures(self) -> tuple[ModeResult, ...]:
        """Wrong gradients and crashes: results that mean a bug."""
        return tuple(r for r in self.results if r.status in (Status.WRONG, Status.CRASH))


def _fresh_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _first_line(error: BaseException) -> str:
    lines = str(error).splitlines()
    return lines[0] if lines else ""


def _compare(
    gradient: tuple[Any, ...], reference: list[Any], rtol: float, atol: float
) -> tuple[bool, float]:
    """Whether ``gradient`` matches ``reference``, and the largest |difference|.

    A missing gradient entry (None) counts as zeros; a wrong number of entries
    or a wrong shape is a mismatch with an infinite difference.
    """
    if len(gradient) != len(reference):
        return False, float("inf")
    matches, worst = True, 0.0
    for got, want in zip(gradient, reference):
        if want is None:
            continue
        got = np.zeros(np.shape(want)) if got is None else np.asarray(got, dtype=float)
        if got.shape != np.shape(want):
            return False, float("inf")
        matches = matches and bool(np.allclose(got, want, rtol=rtol, atol=atol))
        if got.size:
            worst = max(worst, float(np.max(np.abs(got - want))))
    return matches, worst


def _run_mode(
    scenario: Scenario, mode: str, reference: list[Any], rtol: float, atol: float
) -> ModeResult:
    start = time.perf_counter()
    try:
        outcome = mutagrad.withgradient(scenario.function, *_fresh_args(scenario.args), mode=mode)
    except Exception as error:
        return ModeResult(
            scenario=scenario.name,
            mode=mode,
            status=Status.ERROR if isinstance(error, mutagrad.MutagradError) else Status.CRASH,
            error_type=type(error).__name__,
            error_message=_first_line(error),
            seconds=time.perf_counter() - start,
        )
    seconds = time.perf_counter() - start
    matches, difference = _compare(tuple(outcome.grad), reference, rtol, atol)
    return ModeResult(
        scenario=scenario.name,
        mode=mode,
        status=Status.OK if matches else Status.WRONG,
        max_abs_difference=difference,
        bytes_copied=outcome.bytes_copied,
        seconds=seconds,
    )


def run_scenario(
    scenario: Scenario,
    modes: tuple[str, ...] = MODES,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> list[ModeResult]:
    """Differentiate ``scenario`` in each mode and compare with finite differences."""
    reference = numerical_gradient(scenario.function, *_fresh_args(scenario.args))
    return [_run_mode(scenario, mode, reference, rtol, atol) for mode in modes]


def run_report(
    scenarios: tuple[Scenario, ...] = CORPUS,
    modes: tuple[str, ...] = MODES,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> Report:
    """Run every scenario in every mode."""
    results: list[ModeResult] = []
    for scenario in scenarios:
        results.extend(run_scenario(scenario, modes, rtol, atol))
    return Report(scenarios=tuple(scenarios), modes=tuple(modes), results=tuple(results))
