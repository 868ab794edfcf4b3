"""The report's runner: differentiate every program in every mode, judge and measure it.

For each :class:`~mutagrad.report.corpus.Program` the runner

1. runs the function on plain ndarrays (it must work there) and times that
   plain forward pass: the baseline of the overhead ratio;
2. computes the reference gradient by central finite differences on plain
   ndarrays (:func:`mutagrad.testing.numerical_gradient`);
3. for every mode (strict, poison, snapshot) calls
   :func:`mutagrad.withgradient` once and judges it, giving an
   :class:`Outcome`:

   * ``ok``      – value and gradient match the plain run and the reference;
   * ``error``   – a mutagrad error: a deliberate refusal (``MutationError``,
     ``PoisonedCaptureError``, ``TracerConversionError``, ...);
   * ``wrong``   – a value or gradient that differs. This must never happen:
     mutagrad's promise is an error rather than a wrong number;
   * ``crash``   – any other exception, in mutagrad or in the program;
   * ``timeout`` – the call exceeded the per-call time limit;

4. for a ``PoisonedCaptureError``, repeats the call under the analysis-only
   :data:`mutagrad.core.modes.UNCHECKED` policy, so poisoned captures are read
   anyway, as an engine without the check would read them. If that gradient
   matches the reference the error was a *false alarm* (the overwritten value
   was not needed, or was rewritten unchanged); if it differs the error was
   *genuine* (without the check the gradient would have been silently wrong);
5. times the plain call and every ``ok`` or ``wrong`` gradient call: the
   median over ``repeats`` samples, each of enough consecutive calls to last
   ``sample_seconds``, with the garbage collector paused as ``timeit`` does.
   The samples are taken round-robin (plain, strict, poison, snapshot, plain,
   ...) so a drift of the machine touches every mode alike (:func:`measure`).
   Then it measures each call's peak memory with ``tracemalloc``, in separate
   calls, so tracing never distorts the timing. Snapshot mode's
   ``bytes_copied`` comes from the judged call.

Every call gets fresh copies of the arguments and runs in a copy of the
current context (:func:`mutagrad.report.limits.isolated`), under the per-call
time limit (:func:`mutagrad.report.limits.time_limit`, ``SIGALRM``). A program
that crashes or hangs is recorded as such and the run goes on. If the program
fails on plain ndarrays there is nothing to compare with: every mode is then
recorded as that program's crash or timeout, and mutagrad is not called.
"""

from __future__ import annotations

import datetime
import enum
import gc
import math
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import attrs
import numpy as np

import mutagrad
from mutagrad.core import modes
from mutagrad.core.modes import UNCHECKED
from mutagrad.report.corpus import DEFAULT_ATOL, DEFAULT_RTOL, Program
from mutagrad.report.environment import environment
from mutagrad.report.limits import ProgramTimeout, isolated, limit_available, time_limit
from mutagrad.report.progress import ProgressBar
from mutagrad.testing import numerical_gradient

MODES: tuple[str, ...] = tuple(modes.MODES)
DEFAULT_REPEATS = 5
DEFAULT_TIME_LIMIT = 30.0
DEFAULT_SAMPLE_SECONDS = 0.01
FINITE_DIFFERENCE_STEP = 1e-6
MAX_CALLS_PER_SAMPLE = 200


class Outcome(enum.Enum):
    """The verdict on one program in one mode (see the module docstring)."""

    OK = "ok"
    ERROR = "error"
    WRONG = "wrong"
    CRASH = "crash"
    TIMEOUT = "timeout"


class PoisonVerdict(enum.Enum):
    """Whether a ``PoisonedCaptureError`` protected a gradient or refused a right one."""

    GENUINE = "genuine"
    FALSE_ALARM = "false alarm"
    UNDETERMINED = "undetermined"
    """The unchecked re-run itself failed, so the error cannot be classified."""


@attrs.frozen
class Settings:
    """How a report was run."""

    corpus: str
    modes: tuple[str, ...] = MODES
    repeats: int = DEFAULT_REPEATS
    time_limit: float | None = DEFAULT_TIME_LIMIT
    sample_seconds: float = DEFAULT_SAMPLE_SECONDS
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    finite_difference_step: float = FINITE_DIFFERENCE_STEP
    measure_memory: bool = True


@attrs.frozen
class ModeResult:
    """What differentiating one program in one mode gave, and what it cost."""

    program: str
    mode: str
    outcome: Outcome
    error_type: str | None = None
    error_message: str | None = None
    """The first line of the error's message."""
    max_abs_difference: float | None = None
    """Largest |gradient - reference| over all arguments, when a gradient came back."""
    value_matches: bool | None = None
    """Whether the value equals the plain numpy run's (a differing value is WRONG too)."""
    bytes_copied: int | None = None
    """Snapshot mode: old data copied before writes (0 in the other modes)."""
    seconds: float | None = None
    """Median wall time of one gradient call (only for ok and wrong outcomes)."""
    sample_seconds: tuple[float, ...] = ()
    """Every timing sample (seconds per call); ``seconds`` is their median."""
    samples: int = 0
    calls_per_sample: int = 0
    peak_bytes: int | None = None
    """Peak memory traced by tracemalloc during one gradient call."""
    poison_verdict: PoisonVerdict | None = None
    unchecked_max_abs_difference: float | None = None
    unchecked_error: str | None = None

    @property
    def accepted(self) -> bool:
        return self.outcome is Outcome.OK

    @property
    def cell(self) -> str:
        """Short text for tables: "ok", an error's class name, "WRONG", "crash: X", "timeout"."""
        if self.outcome is Outcome.OK:
            return "ok"
        if self.outcome is Outcome.WRONG:
            return "WRONG"
        if self.outcome is Outcome.TIMEOUT:
            return "timeout"
        if self.outcome is Outcome.CRASH:
            return f"crash: {self.error_type}"
        if self.poison_verdict is PoisonVerdict.GENUINE:
            return "Poisoned (genuine)"
        if self.poison_verdict is PoisonVerdict.FALSE_ALARM:
            return "Poisoned (false alarm)"
        if self.poison_verdict is PoisonVerdict.UNDETERMINED:
            return "Poisoned (undetermined)"
        return str(self.error_type)


@attrs.frozen
class ProgramResult:
    """A program's reference, its plain numpy cost and its result in every mode."""

    program: Program
    modes: tuple[ModeResult, ...]
    reference_error: str | None = None
    """Why the program has no reference (it failed on plain ndarrays), or None."""
    reference_seconds: float | None = None
    forward_seconds: float | None = None
    """Median wall time of one plain numpy call of the program."""
    forward_sample_seconds: tuple[float, ...] = ()
    forward_peak_bytes: int | None = None

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def label(self) -> str:
        """The name for tables: marked when the program reproduces a known mutagrad bug."""
        return f"{self.name} [known bug]" if self.program.known_issue else self.name

    def mode(self, name: str) -> ModeResult:
        for r in self.modes:
            if r.mode == name:
                return r
        raise KeyError(name)

    def overhead(self, mode: str) -> float | None:
        """Gradient time in ``mode`` over the plain forward time (accepted results only)."""
        r = self.mode(mode)
        if r.outcome is not Outcome.OK or not r.seconds or not self.forward_seconds:
            return None
        return r.seconds / self.forward_seconds


@attrs.frozen
class Report:
    """Every program's results, how they were obtained, and on what machine."""

    settings: Settings
    programs: tuple[ProgramResult, ...]
    environment: dict[str, Any]
    started: str
    seconds: float

    @property
    def modes(self) -> tuple[str, ...]:
        return self.settings.modes

    def program(self, name: str) -> ProgramResult:
        for p in self.programs:
            if p.name == name:
                return p
        raise KeyError(name)

    def result(self, program: str, mode: str) -> ModeResult:
        return self.program(program).mode(mode)

    @property
    def results(self) -> tuple[ModeResult, ...]:
        return tuple(r for p in self.programs for r in p.modes)

    @property
    def failures(self) -> tuple[ModeResult, ...]:
        """Wrong gradients, crashes and timeouts: results that mean a bug somewhere."""
        bad = (Outcome.WRONG, Outcome.CRASH, Outcome.TIMEOUT)
        return tuple(r for r in self.results if r.outcome in bad)

    @property
    def unexpected_failures(self) -> tuple[ModeResult, ...]:
        """The failures of programs not marked with a ``known_issue``."""
        return tuple(r for r in self.failures if not self.program(r.program).program.known_issue)


# ---------------------------------------------------------------------------
# Calls


def fresh_args(args: Sequence[Any]) -> tuple[Any, ...]:
    """Private copies of the arrays among ``args`` (a program may mutate them)."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""


def as_float(value: Any) -> float:
    """A program's scalar result as a float (a tuple result: its first element)."""
    if isinstance(value, tuple):
        value = value[0]
    return float(np.asarray(value))


def compare(
    gradient: Sequence[Any], reference: Sequence[Any], rtol: float, atol: float
) -> tuple[bool, float]:
    """Whether ``gradient`` matches ``reference``, and the largest |difference|.

    A gradient entry ``None`` (no gradient flows) counts as zeros; a reference
    entry ``None`` (an argument without a derivative) is skipped. ``atol``
    scales with the largest reference entry when that exceeds one. A wrong
    number of entries or shape is a mismatch with an infinite difference.
    """
    if len(gradient) != len(reference):
        return False, math.inf
    matches, worst = True, 0.0
    for got, want in zip(gradient, reference):
        if want is None:
            continue
        want = np.asarray(want, dtype=float)
        got = np.zeros(want.shape) if got is None else np.asarray(got, dtype=float)
        if got.shape != want.shape:
            return False, math.inf
        scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
        if not np.allclose(got, want, rtol=rtol, atol=atol * scale):
            matches = False
        if got.size:
            difference = np.abs(got - want)
            worst = max(worst, float(np.max(np.where(np.isnan(difference), np.inf, difference))))
    return matches, worst


def values_match(got: float, want: float, rtol: float) -> bool:
    return bool(np.isclose(got, want, rtol=rtol, atol=1e-12 * max(1.0, abs(want))))


def _gradient_call(program: Program, mode: str, unchecked: bool = False) -> Any:
    policy = UNCHECKED if unchecked else mode

    def call() -> Any:
        return mutagrad.withgradient(program.function, *fresh_args(program.args), mode=policy)

    return call


def _forward_call(program: Program) -> Callable[[], Any]:
    return lambda: program.function(*fresh_args(program.args))


def calls_per_sample(first_seconds: float, sample_seconds: float) -> int:
    """How many consecutive calls make one timing sample of about ``sample_seconds``."""
    return int(min(MAX_CALLS_PER_SAMPLE, max(1, sample_seconds / max(first_seconds, 1e-7))))


def sample_seconds_per_call(run: Callable[[], Any], calls: int) -> float:
    """One timing sample: ``calls`` consecutive calls of ``run``, seconds per call.

    Each call builds fresh arguments inside ``run``; that copying is part of
    the time, equally for the plain and the differentiated runs. The garbage
    collector is paused during the sample, as ``timeit`` does.
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(calls):
            isolated(run)
        return (time.perf_counter() - start) / calls
    finally:
        if gc_was_enabled:
            gc.enable()


def peak_bytes(run: Callable[[], Any]) -> int:
    """Peak memory traced by ``tracemalloc`` while ``run`` runs, above what was live before."""
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        isolated(run)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not already:
            tracemalloc.stop()
    return max(0, peak - before)


@attrs.define
class _Timed:
    """A call being measured: its first duration, its samples, its peak memory."""

    run: Callable[[], Any]
    first_seconds: float
    calls: int = 0
    samples: list[float] = attrs.Factory(list)
    peak_bytes: int | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else self.first_seconds


def measure(timed: list[_Timed], settings: Settings) -> None:
    """Time every call in ``timed`` round-robin, then measure each one's peak memory.

    Round ``k`` takes sample ``k`` of every call in turn, so a slow drift of
    the machine (another process, the CPU clock) touches all modes alike and
    the ratios between them stay fair. A sample over the time limit ends that
    call's timing (the samples so far are kept). Memory is measured afterwards,
    one call each, so tracing never distorts the timing.
    """
    for t in timed:
        t.calls = calls_per_sample(t.first_seconds, settings.sample_seconds)
    active = list(timed)
    for _ in range(max(settings.repeats, 1)):
        for t in list(active):
            try:
                with time_limit(settings.time_limit):
                    t.samples.append(sample_seconds_per_call(t.run, t.calls))
            except ProgramTimeout:
                active.remove(t)
    if settings.measure_memory:
        for t in timed:
            try:
                with time_limit(settings.time_limit):
                    t.peak_bytes = peak_bytes(t.run)
            except ProgramTimeout:
                pass


# ---------------------------------------------------------------------------
# One program


@attrs.frozen
class _Reference:
    value: float | None = None
    gradient: list[Any] | None = None
    error: str | None = None
    timed_out: bool = False
    seconds: float | None = None
    forward_seconds: float | None = None
    """The first plain call's duration (the median comes from :func:`measure`)."""


def _reference(program: Program, settings: Settings) -> _Reference:
    """Run ``program`` on plain ndarrays and take finite differences."""
    try:
        with time_limit(settings.time_limit):
            start = time.perf_counter()
            value = as_float(isolated(_forward_call(program)))
            first = time.perf_counter() - start
        if not math.isfinite(value):
            return _Reference(error=f"the program returns {value} on plain ndarrays")
        with time_limit(settings.time_limit):
            start = time.perf_counter()
            gradient = isolated(
                numerical_gradient,
                program.function,
                *fresh_args(program.args),
                eps=settings.finite_difference_step,
            )
            reference_seconds = time.perf_counter() - start
    except ProgramTimeout as timeout:
        return _Reference(error=f"on plain ndarrays: {timeout}", timed_out=True)
    except Exception as error:
        return _Reference(error=f"on plain ndarrays: {type(error).__name__}: {first_line(error)}")
    for g in gradient:
        if g is not None and not np.all(np.isfinite(g)):
            return _Reference(error="finite differences give a non-finite gradient")
    return _Reference(
        value=value, gradient=gradient, seconds=reference_seconds, forward_seconds=first
    )


def _classify_poison(
    program: Program, mode: str, reference: _Reference, settings: Settings
) -> dict[str, Any]:
    """Re-run with poisoned captures read anyway: genuine or false alarm?"""
    assert reference.gradient is not None
    try:
        with time_limit(settings.time_limit):
            unchecked = isolated(_gradient_call(program, mode, unchecked=True))
    except (Exception, ProgramTimeout) as error:
        return {
            "poison_verdict": PoisonVerdict.UNDETERMINED,
            "unchecked_error": f"{type(error).__name__}: {first_line(error)}",
        }
    matches, difference = compare(
        tuple(unchecked.grad), reference.gradient, *_tolerances(program, settings)
    )
    return {
        "poison_verdict": PoisonVerdict.FALSE_ALARM if matches else PoisonVerdict.GENUINE,
        "unchecked_max_abs_difference": difference,
    }


def _tolerances(program: Program, settings: Settings) -> tuple[float, float]:
    rtol = program.rtol if program.rtol is not None else settings.rtol
    atol = program.atol if program.atol is not None else settings.atol
    return rtol, atol


def judge_mode(
    program: Program, mode: str, reference: _Reference, settings: Settings
) -> tuple[ModeResult, float | None]:
    """Differentiate ``program`` once in ``mode`` and judge it against ``reference``.

    Returns the result (not yet timed) and the call's duration when it gave a
    gradient (``None`` otherwise: there is nothing to time).
    """
    if reference.error is not None:
        result = ModeResult(
            program=program.name,
            mode=mode,
            outcome=Outcome.TIMEOUT if reference.timed_out else Outcome.CRASH,
            error_type=None if reference.timed_out else "program",
            error_message=reference.error,
        )
        return result, None
    assert reference.gradient is not None and reference.value is not None
    start = time.perf_counter()
    try:
        with time_limit(settings.time_limit):
            outcome = isolated(_gradient_call(program, mode))
    except ProgramTimeout as timeout:
        result = ModeResult(
            program=program.name, mode=mode, outcome=Outcome.TIMEOUT, error_message=str(timeout)
        )
        return result, None
    except Exception as error:
        fields: dict[str, Any] = {}
        if isinstance(error, mutagrad.PoisonedCaptureError):
            fields = _classify_poison(program, mode, reference, settings)
        result = ModeResult(
            program=program.name,
            mode=mode,
            outcome=Outcome.ERROR if isinstance(error, mutagrad.MutagradError) else Outcome.CRASH,
            error_type=type(error).__name__,
            error_message=first_line(error),
            **fields,
        )
        return result, None
    first = time.perf_counter() - start
    rtol, atol = _tolerances(program, settings)
    matches, difference = compare(tuple(outcome.grad), reference.gradient, rtol, atol)
    try:
        value_ok = values_match(as_float(outcome.val), reference.value, rtol)
    except (TypeError, ValueError):
        value_ok = False
    result = ModeResult(
        program=program.name,
        mode=mode,
        outcome=Outcome.OK if matches and value_ok else Outcome.WRONG,
        max_abs_difference=difference,
        value_matches=value_ok,
        bytes_copied=int(outcome.bytes_copied),
        seconds=first,
        samples=1,
        calls_per_sample=1,
    )
    return result, first


def run_program(program: Program, settings: Settings) -> ProgramResult:
    """The reference, every mode's verdict, then the timing and memory of what ran."""
    reference = _reference(program, settings)
    judged = [judge_mode(program, mode, reference, settings) for mode in settings.modes]
    if reference.error is not None:
        return ProgramResult(
            program=program, modes=tuple(r for r, _ in judged), reference_error=reference.error
        )
    assert reference.forward_seconds is not None
    forward = _Timed(_forward_call(program), reference.forward_seconds)
    timed = {
        result.mode: _Timed(_gradient_call(program, result.mode), first)
        for result, first in judged
        if first is not None
    }
    measure([forward, *timed.values()], settings)
    modes = []
    for result, _ in judged:
        t = timed.get(result.mode)
        if t is not None:
            result = attrs.evolve(
                result,
                seconds=t.median,
                sample_seconds=tuple(t.samples),
                samples=max(len(t.samples), 1),
                calls_per_sample=t.calls if t.samples else 1,
                peak_bytes=t.peak_bytes,
            )
        modes.append(result)
    return ProgramResult(
        program=program,
        modes=tuple(modes),
        reference_seconds=reference.seconds,
        forward_seconds=forward.median,
        forward_sample_seconds=tuple(forward.samples),
        forward_peak_bytes=forward.peak_bytes,
    )


def run_report(
    programs: Sequence[Program],
    *,
    corpus: str = "",
    modes: tuple[str, ...] = MODES,
    repeats: int = DEFAULT_REPEATS,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    sample_seconds: float = DEFAULT_SAMPLE_SECONDS,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    measure_memory: bool = True,
    progress: TextIO | None = None,
) -> Report:
    """Run every program in every mode; show a progress bar on ``progress`` if it is a TTY.

    ``progress`` defaults to standard error; nothing is drawn when it is not a
    terminal.
    """
    settings = Settings(
        corpus=corpus,
        modes=tuple(modes),
        repeats=repeats,
        time_limit=time_limit if limit_available() else None,
        sample_seconds=sample_seconds,
        rtol=rtol,
        atol=atol,
        measure_memory=measure_memory,
    )
    started = datetime.datetime.now(datetime.timezone.utc)
    machine = environment()  # before the run: the load average says how busy the machine was
    clock = time.perf_counter()
    bar = ProgressBar(len(programs), progress)
    results = []
    try:
        for done, program in enumerate(programs):
            bar.update(done, program.name)
            results.append(run_program(program, settings))
        bar.update(len(programs), "done")
    finally:
        bar.close()
    return Report(
        settings=settings,
        programs=tuple(results),
        environment=machine,
        started=started.isoformat(timespec="seconds"),
        seconds=time.perf_counter() - clock,
    )
