"""Measuring one case: gradient checks first, then interleaved median timing.

Protocol, per case:

1. The hand-written numpy gradient (the reference) is checked against a
   central finite difference along a random direction.
2. Every engine's first call is its warm-up *and* its correctness check: its
   gradient must match the reference (``rtol=1e-6``). A mismatch or an
   exception is reported loudly and that engine is not timed.
3. A second warm-up call (skipped in ``--quick`` mode for calls slower than
   ``slow_call``) sizes the sample: ``calls`` consecutive calls make
   one sample of at least ``target_sample`` seconds; ``rounds`` samples fit
   the engine's time budget (clamped to ``[min_rounds, max_rounds]``; an
   engine slower than ``slow_call`` seconds per call gets ``slow_rounds``,
   and one slower than ``VERY_SLOW`` a single timed call after its warm-up).
4. Rounds are interleaved over the engines (their order rotating, and
   reversed every other round), so drift on a shared machine hits them all
   alike and no engine always runs on caches warmed by the same neighbour.
   The garbage collector runs before every sample and stays enabled inside
   it, as in real use. Objects alive before timing starts are frozen
   (``gc.freeze``), so an engine's collections scan what it allocates itself,
   not the harness's heap (after JAX has compiled thousands of kernels a full
   collection takes over 0.3 s). mutagrad's modes share ``calls`` and
   ``rounds`` so that their samples pair up round by round.

The figure reported is the median sample (seconds per call).
"""

from __future__ import annotations

import dataclasses
import gc
import math
import statistics
import time
import traceback
from typing import Any

import numpy as np

from benchmarks import engines
from benchmarks.workloads import (
    SCRATCH_ITERATIONS,
    Case,
    Runner,
    build_runner,
    bytes_copied,
    to_numpy,
)

RTOL = 1e-6
VERY_SLOW = 5.0  # seconds per call (after warm-up): a single timed call
NO_SECOND_WARMUP = 60.0  # a first call slower than this is not repeated as a warm-up


@dataclasses.dataclass(frozen=True)
class Settings:
    """How long to measure."""

    engine_budget: float = 1.0  # seconds of samples per engine per case (mutagrad: twice)
    target_sample: float = 0.01  # seconds per sample, at least
    min_rounds: int = 5
    max_rounds: int = 25
    slow_call: float = 1.0  # an engine slower than this per call ...
    slow_rounds: int = 3  # ... gets this many rounds of one call
    second_warmup: bool = True

    @classmethod
    def quick(cls) -> Settings:
        return cls(
            engine_budget=0.05,
            target_sample=0.002,
            min_rounds=2,
            max_rounds=3,
            slow_call=0.5,
            slow_rounds=1,
            second_warmup=False,
        )


@dataclasses.dataclass
class EngineResult:
    """One engine on one case."""

    engine: str
    status: str  # ok | not installed | error | wrong gradient
    note: str = ""
    error: str = ""
    max_rel_err: float | None = None
    first_call_s: float | None = None
    calls_per_sample: int = 0
    samples: list[float] = dataclasses.field(default_factory=list)

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None

    def summary(self) -> dict[str, Any]:
        samples = sorted(self.samples)
        quartiles = (
            statistics.quantiles(samples, n=4, method="inclusive") if len(samples) >= 2 else None
        )
        return {
            "status": self.status,
            "note": self.note,
            "error": self.error,
            "max_rel_err": self.max_rel_err,
            "first_call_s": self.first_call_s,
            "median_s": self.median,
            "min_s": samples[0] if samples else None,
            "iqr_s": (quartiles[2] - quartiles[0]) if quartiles else None,
            "rounds": len(samples),
            "calls_per_sample": self.calls_per_sample,
            "samples_s": self.samples,
        }


@dataclasses.dataclass
class CaseResult:
    case: Case
    engines: dict[str, EngineResult]
    reference_fd_rel_err: float
    probes: dict[str, str] = dataclasses.field(default_factory=dict)
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def median(self, engine: str) -> float | None:
        result = self.engines.get(engine)
        return result.median if result is not None and result.status == "ok" else None


# ---------------------------------------------------------------------------
# Gradient checks.


def relative_error(got: list[Any], want: list[np.ndarray]) -> float:
    """Largest elementwise error, relative to the reference's magnitude (inf on a shape change)."""
    if len(got) != len(want):
        return math.inf
    worst = 0.0
    for g, w in zip(got, want):
        g = to_numpy(g)
        if g.shape != w.shape:
            return math.inf
        scale = max(1.0, float(np.max(np.abs(w))) if w.size else 1.0)
        err = float(np.max(np.abs(g - w))) / scale if w.size else 0.0
        worst = max(worst, err if np.isfinite(err) else math.inf)
    return worst


def directional_error(case: Case, flat: list[np.ndarray], grads: list[np.ndarray]) -> float:
    """|<g, v> - (L(x + ev) - L(x - ev)) / 2e| relative to their size, for a random v."""
    rng = np.random.default_rng(12345)
    directions = [rng.standard_normal(a.shape) for a in flat]
    eps = 1e-6
    plus = case.loss([a + eps * v for a, v in zip(flat, directions)])
    minus = case.loss([a - eps * v for a, v in zip(flat, directions)])
    numeric = (plus - minus) / (2 * eps)
    analytic = sum(float(np.sum(g * v)) for g, v in zip(grads, directions))
    return abs(numeric - analytic) / max(1.0, abs(analytic))


def _describe(error: BaseException) -> str:
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {first}"[:200]


def probe_outcome(run: Runner, want: list[np.ndarray]) -> str:
    """What an engine does with a program it cannot be timed on: raises, or which gradient."""
    try:
        got = run()
    except Exception as error:
        return f"raises {_describe(error)}"
    err = relative_error(got, want)
    return "correct gradient" if err <= RTOL else f"WRONG GRADIENT (rel err {err:.2g})"


# ---------------------------------------------------------------------------
# Timing.


def _timed_call(run: Runner) -> tuple[float, list[Any]]:
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


def _sample(run: Runner, calls: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(calls):
        run()
    return (time.perf_counter() - start) / calls


def measure_case(
    case: Case, selected: list[str], settings: Settings, log: Any = print
) -> CaseResult:
    """Check and time ``case`` on the ``selected`` engines it applies to."""
    flat = case.inputs()
    reference = case.hand(*case.structure(flat))[1]
    fd_err = directional_error(case, flat, reference)
    if fd_err > 1e-5:
        log(
            f"!!! {case.id}: the hand-written reference gradient disagrees with finite "
            f"differences (rel err {fd_err:.2g}); every comparison below is suspect"
        )
    results: dict[str, EngineResult] = {}
    runners: dict[str, Runner] = {}
    single: dict[str, float] = {}
    for engine in case.engines():
        if engine not in selected:
            continue
        note = case.impl(engine).note
        if not engines.installed(engine):
            results[engine] = EngineResult(engine, "not installed", note)
            continue
        result = results[engine] = EngineResult(engine, "ok", note)
        try:
            run = build_runner(case, engine, flat)
            first, got = _timed_call(run)
        except Exception as error:
            result.status, result.error = "error", _describe(error)
            log(f"!!! {case.id} on {engine}: {result.error}")
            log(traceback.format_exc(limit=-3))
            continue
        result.first_call_s = first
        result.max_rel_err = relative_error(got, reference)
        if not result.max_rel_err <= RTOL:
            result.status = "wrong gradient"
            log(
                f"!!! GRADIENT MISMATCH: {case.id} on {engine}: max relative error "
                f"{result.max_rel_err:.3g} against the hand-written gradient; not timed"
            )
            continue
        # The second call sizes the samples: the first may include compiling
        # (eager JAX compiles a kernel per static index on first use).
        if first < settings.slow_call or (settings.second_warmup and first < NO_SECOND_WARMUP):
            first = _timed_call(run)[0]
        runners[engine] = run
        single[engine] = first
    # Everything alive now (imported modules, JAX's kernel cache, the inputs) is
    # moved out of the collector's sight: a full collection then costs
    # microseconds instead of a fraction of a second, and no engine pays, inside
    # its timed calls, for scanning objects that other engines left behind.
    gc.collect()
    gc.freeze()
    try:
        _time_interleaved(runners, single, results, settings)
    finally:
        gc.unfreeze()
    case_result = CaseResult(case, results, fd_err)
    for engine, impl in case.probes.items():
        if engine in selected and engines.installed(engine):
            outcome = probe_outcome(build_runner(case, engine, flat, impl), reference)
            case_result.probes[engine] = outcome
    if case.snapshot and "mutagrad-snapshot" in runners:
        copied = bytes_copied(case, flat)
        # Every iteration but the last overwrites a value the next pullback reads.
        expected = case.size * 8 * (SCRATCH_ITERATIONS - 1)
        case_result.extra = {"bytes_copied": copied, "bytes_expected": expected}
    return case_result


def _plan(seconds: float, budget: float, settings: Settings) -> tuple[int, int]:
    """(calls per sample, rounds) for an engine taking ``seconds`` per call."""
    if seconds >= VERY_SLOW:
        return 1, 1
    if seconds >= settings.slow_call:
        return 1, settings.slow_rounds
    calls = max(1, min(100_000, math.ceil(settings.target_sample / max(seconds, 1e-9))))
    rounds = int(budget / (calls * max(seconds, 1e-9)))
    return calls, max(settings.min_rounds, min(settings.max_rounds, rounds))


def _time_interleaved(
    runners: dict[str, Runner],
    single: dict[str, float],
    results: dict[str, EngineResult],
    settings: Settings,
) -> None:
    plans: dict[str, tuple[int, int]] = {}
    for engine, seconds in single.items():
        mutagrad = engine in engines.MUTAGRAD_ENGINES
        plans[engine] = _plan(seconds, settings.engine_budget * (2 if mutagrad else 1), settings)
    # mutagrad's modes share one plan, so their samples pair up round by round.
    modes = [e for e in plans if e in engines.MUTAGRAD_ENGINES]
    if modes:
        shared = (max(plans[e][0] for e in modes), max(plans[e][1] for e in modes))
        for engine in modes:
            plans[engine] = shared
    order = list(runners)
    total_rounds = max((rounds for _, rounds in plans.values()), default=0)
    for r in range(total_rounds):
        shift = r % len(order)
        this_round = order[shift:] + order[:shift]
        if r % 2:
            # Reversed every other round: each engine follows each neighbour as
            # often as it precedes it. Without this, mutagrad-strict always ran
            # right after mutagrad-poison, on caches warmed by the same code, and
            # the two modes (identical code when nothing mutates) differed by 2-6%.
            this_round.reverse()
        for engine in this_round:
            calls, rounds = plans[engine]
            if r < rounds:
                results[engine].samples.append(_sample(runners[engine], calls))
                results[engine].calls_per_sample = calls
