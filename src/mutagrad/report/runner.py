"""The report's runner: differentiate every program with every engine, judge and measure it.

For each :class:`~mutagrad.report.corpus.Program` the runner

1. runs the function on plain ndarrays (it must work there, returning a
   scalar) and times that plain forward pass: the baseline of the overhead
   ratio. A program that fails there, or returns something else than a
   scalar, is an error in the corpus, not in any engine: every result is then
   ``program error`` with what is wrong (:attr:`ProgramResult.reference_error`),
   and no engine is called;
2. computes the reference gradient by central finite differences on plain
   ndarrays (:func:`mutagrad.testing.numerical_gradient`);
3. for every mutagrad mode (strict, poison, snapshot) calls
   :func:`mutagrad.withgradient` once, for forward mode :func:`mutagrad.jacfwd`
   with respect to every numeric argument (its column is named ``forward``
   like a mode's), and for every peer engine
   (:mod:`mutagrad.report.peers`: JAX, autograd, MyGrad) runs the program
   unchanged on that engine once, and judges the result, giving an
   :class:`~mutagrad.testing.verdicts.Outcome` (the fuzzer's vocabulary too):

   * ``right``         – value and gradient match the plain run and the reference;
   * ``refused``       – mutagrad raised one of its errors (a deliberate
     refusal: ``MutationError``, ``PoisonedCaptureError``, ...), or a peer
     raised any exception while running or differentiating the program;
   * ``value differs`` – the value differs from plain numpy's: the engine ran
     the program but computed something else (JAX's ``v *= 2`` on a slice
     rebinds ``v`` instead of writing through it);
   * ``wrong``         – the value is right, the gradient is not;
   * ``crash``         – for mutagrad any exception that is not a mutagrad
     error; for a peer an internal failure (``AssertionError``,
     ``SystemError``, ``RecursionError``, ``MemoryError``);
   * ``timeout``       – the call exceeded the per-call time limit;
   * ``program error`` – the program itself fails on plain numpy (step 1).

   For mutagrad a differing value or gradient must never happen: its promise
   is an error rather than a wrong number. For the peers they are what the
   comparison is about;
4. for a ``PoisonedCaptureError``, repeats the call under the analysis-only
   :data:`mutagrad.core.modes.UNCHECKED` policy, so poisoned captures are read
   anyway, as an engine without the check would read them. If that gradient
   matches the reference the error was a *false alarm* (the overwritten value
   was not needed, or was rewritten unchanged); if it differs the error was
   *genuine* (without the check the gradient would have been silently wrong);
5. times the plain call and every gradient call that returned (``ok``,
   ``value differs`` or ``wrong``), mutagrad's and the peers': the median over
   ``repeats`` samples, each of enough consecutive calls to last
   ``sample_seconds``, with the garbage collector paused as ``timeit`` does.
   The samples are taken round-robin (plain, strict, poison, snapshot, jax,
   ..., plain, ...) so a drift of the machine touches every engine alike
   (:func:`measure`). Then it measures each mutagrad call's peak memory with
   ``tracemalloc``, in separate calls, so tracing never distorts the timing
   (not the peers': JAX allocates outside Python's allocator, where
   tracemalloc cannot see). Snapshot mode's ``bytes_copied`` comes from the
   judged call.

Every call gets fresh copies of the arguments and runs in a copy of the
current context (:func:`mutagrad.testing.limits.isolated`), under the per-call
time limit (:func:`mutagrad.testing.limits.time_limit`, ``SIGALRM``). A program
that crashes or hangs is recorded as such and the run goes on.

A time is read only as far as its samples agree: :func:`spread` is the
width of their middle half (upper quartile minus lower quartile) over their
median, and a time whose spread exceeds :data:`NOISY_SPREAD` is *noisy* (another
process took the CPU for part of the samples; plain-forward samples of 89,
6.5, 89, 89 and 7.1 µs, say). A ratio is noisy when either of its times is.
The pages mark noisy measurements and leave them out of every median, the
headline's and the plots' alike.

With ``timing=False`` (``--no-timing``) step 5 is skipped, and no duration is
kept at all: every time and memory figure is ``None``.

:func:`run_report` adds the generated programs (:mod:`mutagrad.report.generated`)
and runs :func:`run_program` on each program in this process, in worker
processes or on a dask cluster (:mod:`mutagrad.report.parallel`). A worker
gets a :class:`ProgramTask` (the settings, and the program's name in the
corpus, which the worker loads itself, with the arguments sent along; or a
generated program's text and arguments) and sends back the result's fields
(:func:`run_task`); :func:`attach` joins them to the caller's program. The
verdicts are the same wherever a program runs.
"""

from __future__ import annotations

import datetime
import enum
import functools
import gc
import math
import statistics
import sys
import time
import traceback
import tracemalloc
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import attrs
import numpy as np

import mutagrad
from mutagrad.core import modes
from mutagrad.core.modes import UNCHECKED
from mutagrad.report.corpus import DEFAULT_ATOL, DEFAULT_RTOL, Program, load_corpus
from mutagrad.report.environment import environment
from mutagrad.report.generated import DEFAULT_SEED, Draw, as_program, draw
from mutagrad.report.parallel import task_map
from mutagrad.report.peers import MUTAGRAD, PEERS, PeerEngine, first_output
from mutagrad.report.progress import Progress
from mutagrad.testing import numerical_gradient
from mutagrad.testing.finite_differences import is_numeric
from mutagrad.testing.fuzz import FuzzFigures, fuzz_figures
from mutagrad.testing.limits import ProgramTimeout, isolated, limit_available, time_limit
from mutagrad.testing.verdicts import FAILURES, ModeResult, Outcome

FORWARD = modes.FORWARD.name
MODES: tuple[str, ...] = (*modes.MODES, FORWARD)
"""mutagrad's columns: its three reverse modes, then forward mode (``jacfwd``)."""
DEFAULT_REPEATS = 5
DEFAULT_TIME_LIMIT = 30.0
DEFAULT_SAMPLE_SECONDS = 0.01
FINITE_DIFFERENCE_STEP = 1e-6
MAX_CALLS_PER_SAMPLE = 200
NOISY_SPREAD = 0.5
"""A time whose samples' middle half spans more than this fraction of their median is noisy."""

# A peer failing with one of these broke inside; any other exception is the peer refusing.
PEER_INTERNAL_FAILURES = (AssertionError, SystemError, RecursionError, MemoryError)


def spread(samples: Sequence[float]) -> float | None:
    """(upper quartile - lower quartile) / median of timing samples; None for fewer than 3.

    Robust to one outlier among five samples (a single slow sample moves a
    quartile only past the median's neighbour), wide when the samples disagree.
    """
    if len(samples) < 3:
        return None
    low, middle, high = statistics.quantiles(samples, n=4, method="inclusive")
    return (high - low) / middle if middle > 0 else None


def is_noisy(samples: Sequence[float]) -> bool:
    """Whether a time of these samples is too spread to read (see :data:`NOISY_SPREAD`)."""
    width = spread(samples)
    return width is not None and width > NOISY_SPREAD


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
    engines: tuple[str, ...] = (MUTAGRAD,)
    """mutagrad, then the peers (:data:`mutagrad.report.peers.PEERS`) that run beside it."""
    repeats: int = DEFAULT_REPEATS
    time_limit: float | None = DEFAULT_TIME_LIMIT
    sample_seconds: float = DEFAULT_SAMPLE_SECONDS
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    finite_difference_step: float = FINITE_DIFFERENCE_STEP
    measure_memory: bool = True
    fuzz_programs: int = 0
    """Random programs the differential fuzzer judges besides the corpus (0: none)."""
    timing: bool = True
    """Whether the calls are timed and their memory measured (``--no-timing``: neither)."""
    generated: int = 0
    """Programs drawn by the fuzzer's generator (:mod:`mutagrad.report.generated`) besides the
    corpus."""
    seed: int = DEFAULT_SEED
    """Seed of the generated programs and of the differential fuzzer's."""
    jobs: int = 1
    """Worker processes the programs ran in (1: this process)."""
    scheduler: str | None = None
    """Address of the dask.distributed scheduler whose cluster ran the programs, if one did."""

    @property
    def peers(self) -> tuple[str, ...]:
        return tuple(e for e in self.engines if e != MUTAGRAD)


@attrs.frozen
class MeasuredResult(ModeResult):
    """What differentiating one program in one mutagrad mode, or on one peer, gave and cost.

    The judgement (:class:`~mutagrad.testing.verdicts.ModeResult`: ``mode``,
    ``outcome``, ``detail``, ``error_type``, ``engine``), and what the report
    measured besides. For a peer, ``engine`` and ``mode`` are both the peer's
    name (``jax``): ``mode`` is the column the result belongs to in every table.
    """

    program: str = ""
    max_abs_difference: float | None = None
    """Largest |gradient - reference| over all arguments, when a gradient came back."""
    value_matches: bool | None = None
    """Whether the value equals the plain numpy run's (else the outcome is VALUE_DIFFERS)."""
    bytes_copied: int | None = None
    """Snapshot mode: old data copied before writes (0 in the other modes; None for peers)."""
    seconds: float | None = None
    """Median wall time of one gradient call (when the call returned a gradient)."""
    sample_seconds: tuple[float, ...] = ()
    """Every timing sample (seconds per call); ``seconds`` is their median."""
    samples: int = 0
    calls_per_sample: int = 0
    peak_bytes: int | None = None
    """Peak memory traced by tracemalloc during one gradient call (mutagrad only)."""
    gradient_missing: bool = False
    """A wrong gradient that is ``None`` (no gradient reached the argument) where the
    reference is not zero: MyGrad's ``.grad`` after a graph was cut."""
    poison_verdict: PoisonVerdict | None = None
    unchecked_max_abs_difference: float | None = None
    unchecked_error: str | None = None

    @property
    def accepted(self) -> bool:
        return self.outcome is Outcome.RIGHT

    @property
    def spread(self) -> float | None:
        """The spread of the timing samples (:func:`spread`), None without enough of them."""
        return spread(self.sample_seconds)

    @property
    def noisy(self) -> bool:
        """Whether the time is too spread to read (:data:`NOISY_SPREAD`)."""
        return is_noisy(self.sample_seconds)

    @property
    def is_peer(self) -> bool:
        return self.engine != MUTAGRAD

    @property
    def cell(self) -> str:
        """Short text for tables: "ok", an error's class name, "WRONG gradient", "timeout", ..."""
        if self.outcome is Outcome.RIGHT:
            return "ok"
        if self.outcome is Outcome.WRONG:
            return "WRONG gradient"
        if self.outcome is Outcome.VALUE_DIFFERS:
            return "WRONG value"
        if self.outcome is Outcome.TIMEOUT:
            return "timeout"
        if self.outcome is Outcome.PROGRAM_ERROR:
            return "program error"
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
    """A program's reference, its plain numpy cost and its result in every mode and peer."""

    program: Program
    modes: tuple[MeasuredResult, ...]
    peers: tuple[MeasuredResult, ...] = ()
    reference_error: str | None = None
    """What is wrong with the program itself (it fails on plain ndarrays), or None."""
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

    @property
    def results(self) -> tuple[MeasuredResult, ...]:
        """mutagrad's results, then the peers'."""
        return self.modes + self.peers

    def mode(self, name: str) -> MeasuredResult:
        """The result in mutagrad mode ``name``, or of peer ``name``."""
        for r in self.results:
            if r.mode == name:
                return r
        raise KeyError(name)

    def overhead(self, mode: str) -> float | None:
        """Gradient time in ``mode`` (or peer) over the plain forward time (accepted results)."""
        r = self.mode(mode)
        if r.outcome is not Outcome.RIGHT or not r.seconds or not self.forward_seconds:
            return None
        return r.seconds / self.forward_seconds

    @property
    def forward_spread(self) -> float | None:
        """The spread of the plain forward timing samples (:func:`spread`)."""
        return spread(self.forward_sample_seconds)

    @property
    def forward_noisy(self) -> bool:
        """Whether the plain forward time is too spread to read."""
        return is_noisy(self.forward_sample_seconds)

    def overhead_noisy(self, mode: str) -> bool:
        """Whether :meth:`overhead` is too spread to read (either of its times is)."""
        return self.forward_noisy or self.mode(mode).noisy


@attrs.frozen
class Report:
    """Every program's results, how they were obtained, and on what machine."""

    settings: Settings
    programs: tuple[ProgramResult, ...]
    environment: dict[str, Any]
    started: str
    seconds: float
    fuzz: FuzzFigures | None = None
    """The differential fuzzer's run beside the corpus, when there was one."""

    @property
    def modes(self) -> tuple[str, ...]:
        """mutagrad's modes."""
        return self.settings.modes

    @property
    def peers(self) -> tuple[str, ...]:
        return self.settings.peers

    @property
    def systems(self) -> tuple[str, ...]:
        """Every column of the comparison: mutagrad's modes, then the peers."""
        return self.modes + self.peers

    def program(self, name: str) -> ProgramResult:
        for p in self.programs:
            if p.name == name:
                return p
        raise KeyError(name)

    def result(self, program: str, mode: str) -> MeasuredResult:
        return self.program(program).mode(mode)

    @property
    def results(self) -> tuple[MeasuredResult, ...]:
        """mutagrad's results (the peers' are in :attr:`peer_results`)."""
        return tuple(r for p in self.programs for r in p.modes)

    @property
    def peer_results(self) -> tuple[MeasuredResult, ...]:
        return tuple(r for p in self.programs for r in p.peers)

    @property
    def failures(self) -> tuple[MeasuredResult, ...]:
        """mutagrad's wrong values and gradients, crashes and timeouts: each means a bug."""
        return tuple(r for r in self.results if r.outcome in FAILURES)

    @property
    def unexpected_failures(self) -> tuple[MeasuredResult, ...]:
        """The failures of programs not marked with a ``known_issue``."""
        return tuple(r for r in self.failures if not self.program(r.program).program.known_issue)

    @property
    def program_errors(self) -> tuple[ProgramResult, ...]:
        """Programs that fail on plain numpy: errors in the corpus, compared with nothing."""
        return tuple(p for p in self.programs if p.reference_error is not None)


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
    return float(np.asarray(first_output(value)))


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


@attrs.frozen
class _ForwardOutcome:
    """What a forward-mode call gave, as a gradient call's result reads (no snapshot copies)."""

    val: Any
    grad: list[Any]
    bytes_copied: int = 0


def _forward_mode_call(program: Program) -> Callable[[], _ForwardOutcome]:
    """The value and gradient of ``program`` by ``jacfwd`` (every unit direction of every
    numeric argument in one run; a scalar output's Jacobian is its gradient)."""

    def value_twice(*args: Any) -> Any:
        out = first_output(program.function(*args))
        return out, out  # (the second as jacfwd's aux: the value, unwrapped)

    def call() -> _ForwardOutcome:
        args = fresh_args(program.args)
        positions = tuple(k for k, a in enumerate(args) if is_numeric(a))
        if not positions:
            return _ForwardOutcome(program.function(*args), [None] * len(args))
        jacobians, value = mutagrad.jacfwd(value_twice, positions, has_aux=True)(*args)
        gradient: list[Any] = [None] * len(args)
        for k, j in zip(positions, jacobians):
            gradient[k] = j
        return _ForwardOutcome(value, gradient)

    return call


def _gradient_call(program: Program, mode: str, unchecked: bool = False) -> Any:
    if mode == FORWARD:
        return _forward_mode_call(program)
    # A mode's name, or the analysis-only policy object, which withgradient takes too.
    policy: Any = UNCHECKED if unchecked else mode

    def call() -> Any:
        return mutagrad.withgradient(program.function, *fresh_args(program.args), mode=policy)

    return call


def _peer_call(
    peer: PeerEngine, function: Callable[..., Any], program: Program, wrt: Sequence[int]
) -> Callable[[], tuple[float, list[Any]]]:
    """One gradient call of ``function`` (the program as ``peer.prepare`` made it) on ``peer``."""

    def call() -> tuple[float, list[Any]]:
        # A peer's own warnings (autograd's "output seems independent of input", overflow
        # inside MyGrad's pullbacks) say nothing the judged result does not, and flood a log.
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return peer.value_and_gradient(function, fresh_args(program.args), wrt)

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
    traced_memory: bool = True
    """Whether tracemalloc sees what the call allocates (not for JAX's buffers)."""
    calls: int = 0
    samples: list[float] = attrs.Factory(list)
    peak_bytes: int | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else self.first_seconds


def measure(timed: list[_Timed], settings: Settings) -> None:
    """Time every call in ``timed`` round-robin, then measure each one's peak memory.

    Round ``k`` takes sample ``k`` of every call in turn, so a slow drift of
    the machine (another process, the CPU clock) touches all engines alike and
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
            if not t.traced_memory:
                continue
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
    seconds: float | None = None
    forward_seconds: float | None = None
    """The first plain call's duration (the median comes from :func:`measure`)."""

    @property
    def differentiated(self) -> tuple[int, ...]:
        """Positions of the arguments that have a derivative (what the peers differentiate)."""
        return tuple(k for k, g in enumerate(self.gradient or ()) if g is not None)


def _where(error: BaseException, program: Program) -> str:
    """`` (file.py, line 12)``: the innermost line of the program's own code that raised."""
    code = getattr(program.function, "__code__", None)
    if code is None:
        return ""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.filename == code.co_filename
    ]
    if not frames:
        return ""
    frame = frames[-1]
    return f" ({frame.filename.rsplit('/', 1)[-1]}, line {frame.lineno})"


def _scalar_problem(value: Any) -> str | None:
    """Why a program's result is not a scalar the report can compare, or None if it is."""
    value = first_output(value)
    try:
        array = np.asarray(value)
    except Exception:
        return f"returns a {type(value).__name__}; programs must return a scalar"
    if array.ndim != 0:
        return f"returns shape {array.shape}; programs must return a scalar"
    if array.dtype.kind not in "fiu":
        return f"returns a {array.dtype} value; programs must return a real scalar"
    return None


def _reference(program: Program, settings: Settings) -> _Reference:
    """Run ``program`` on plain ndarrays and take finite differences."""
    name = program.name
    try:
        with time_limit(settings.time_limit):
            start = time.perf_counter()
            result = isolated(_forward_call(program))
            first = time.perf_counter() - start
        problem = _scalar_problem(result)
        if problem is not None:
            return _Reference(error=f"{name} {problem}")
        value = as_float(result)
        if not math.isfinite(value):
            return _Reference(error=f"{name} returns {value} on plain ndarrays")
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
        return _Reference(error=f"{name} on plain ndarrays {timeout}")
    except Exception as error:
        return _Reference(
            error=f"{name} fails on plain ndarrays{_where(error, program)}: "
            f"{type(error).__name__}: {first_line(error)}"
        )
    for g in gradient:
        if g is not None and not np.all(np.isfinite(g)):
            return _Reference(error=f"{name}: finite differences give a non-finite gradient")
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


def _judged(
    program: Program,
    column: str,
    engine: str,
    value: Any,
    gradient: Sequence[Any],
    reference: _Reference,
    settings: Settings,
    seconds: float,
    **fields: Any,
) -> MeasuredResult:
    """The verdict on a call that returned: value first, then the gradient."""
    assert reference.gradient is not None and reference.value is not None
    rtol, atol = _tolerances(program, settings)
    matches, difference = compare(tuple(gradient), reference.gradient, rtol, atol)
    try:
        value_ok = values_match(as_float(value), reference.value, rtol)
    except (TypeError, ValueError):
        value_ok = False
    outcome = Outcome.RIGHT if matches else Outcome.WRONG
    if not value_ok:  # the forward pass already went astray: the gradient says no more
        outcome = Outcome.VALUE_DIFFERS
    missing = outcome is Outcome.WRONG and any(
        got is None and want is not None and np.any(want != 0)
        for got, want in zip(gradient, reference.gradient)
    )
    return MeasuredResult(
        program=program.name,
        mode=column,
        engine=engine,
        outcome=outcome,
        max_abs_difference=difference,
        value_matches=value_ok,
        gradient_missing=missing,
        seconds=seconds,
        samples=1,
        calls_per_sample=1,
        **fields,
    )


def _not_run(program: Program, column: str, engine: str, reference: _Reference) -> MeasuredResult:
    return MeasuredResult(
        program=program.name,
        mode=column,
        engine=engine,
        outcome=Outcome.PROGRAM_ERROR,
        detail=reference.error or "",
    )


def judge_mode(
    program: Program, mode: str, reference: _Reference, settings: Settings
) -> tuple[MeasuredResult, float | None]:
    """Differentiate ``program`` once in ``mode`` and judge it against ``reference``.

    Returns the result (not yet timed) and the call's duration when it gave a
    gradient (``None`` otherwise: there is nothing to time).
    """
    if reference.error is not None:
        return _not_run(program, mode, MUTAGRAD, reference), None
    start = time.perf_counter()
    try:
        with time_limit(settings.time_limit):
            outcome = isolated(_gradient_call(program, mode))
    except ProgramTimeout as timeout:
        result = MeasuredResult(
            program=program.name, mode=mode, outcome=Outcome.TIMEOUT, detail=str(timeout)
        )
        return result, None
    except Exception as error:
        fields: dict[str, Any] = {}
        if isinstance(error, mutagrad.PoisonedCaptureError):
            fields = _classify_poison(program, mode, reference, settings)
        result = MeasuredResult(
            program=program.name,
            mode=mode,
            outcome=Outcome.REFUSED if isinstance(error, mutagrad.MutagradError) else Outcome.CRASH,
            error_type=type(error).__name__,
            detail=first_line(error),
            **fields,
        )
        return result, None
    first = time.perf_counter() - start
    result = _judged(
        program, mode, MUTAGRAD, outcome.val, outcome.grad, reference, settings, first,
        bytes_copied=int(outcome.bytes_copied),
    )  # fmt: skip
    return result, first


def judge_peer(
    peer: PeerEngine,
    function: Callable[..., Any],
    program: Program,
    reference: _Reference,
    settings: Settings,
) -> tuple[MeasuredResult, float | None]:
    """Run ``program`` once on ``peer`` (``function`` as ``peer.prepare`` made it) and judge it."""
    if reference.error is not None:
        return _not_run(program, peer.name, peer.name, reference), None
    call = _peer_call(peer, function, program, reference.differentiated)
    start = time.perf_counter()
    try:
        with time_limit(settings.time_limit):
            value, gradient = isolated(call)
    except ProgramTimeout as timeout:
        result = MeasuredResult(
            program=program.name,
            mode=peer.name,
            engine=peer.name,
            outcome=Outcome.TIMEOUT,
            detail=str(timeout),
        )
        return result, None
    except Exception as error:
        internal = isinstance(error, PEER_INTERNAL_FAILURES)
        result = MeasuredResult(
            program=program.name,
            mode=peer.name,
            engine=peer.name,
            outcome=Outcome.CRASH if internal else Outcome.REFUSED,
            error_type=type(error).__name__,
            detail=first_line(error),
        )
        return result, None
    first = time.perf_counter() - start
    result = _judged(program, peer.name, peer.name, value, gradient, reference, settings, first)
    return result, first


def _with_timing(result: MeasuredResult, timed: _Timed | None) -> MeasuredResult:
    if timed is None:
        return result
    return attrs.evolve(
        result,
        seconds=timed.median,
        sample_seconds=tuple(timed.samples),
        samples=max(len(timed.samples), 1),
        calls_per_sample=timed.calls if timed.samples else 1,
        peak_bytes=timed.peak_bytes,
    )


def _untimed(result: MeasuredResult) -> MeasuredResult:
    return attrs.evolve(result, seconds=None, samples=0, calls_per_sample=0)


def run_program(program: Program, settings: Settings) -> ProgramResult:
    """The reference, every mode's and peer's verdict, then the timing and memory of what ran."""
    reference = _reference(program, settings)
    judged = [judge_mode(program, mode, reference, settings) for mode in settings.modes]
    prepared = {name: PEERS[name].prepare(program.function) for name in settings.peers}
    judged_peers = [
        judge_peer(PEERS[name], prepared[name], program, reference, settings)
        for name in settings.peers
    ]
    if reference.error is not None:
        return ProgramResult(
            program=program,
            modes=tuple(r for r, _ in judged),
            peers=tuple(r for r, _ in judged_peers),
            reference_error=reference.error,
        )
    if not settings.timing:  # --no-timing: not even the judged calls' durations are kept
        return ProgramResult(
            program=program,
            modes=tuple(_untimed(r) for r, _ in judged),
            peers=tuple(_untimed(r) for r, _ in judged_peers),
        )
    assert reference.forward_seconds is not None
    forward = _Timed(_forward_call(program), reference.forward_seconds)
    timed = {
        result.mode: _Timed(_gradient_call(program, result.mode), first)
        for result, first in judged
        if first is not None
    }
    for result, first in judged_peers:
        if first is not None:
            call = _peer_call(
                PEERS[result.mode], prepared[result.mode], program, reference.differentiated
            )
            timed[result.mode] = _Timed(call, first, traced_memory=False)
    measure([forward, *timed.values()], settings)
    return ProgramResult(
        program=program,
        modes=tuple(_with_timing(r, timed.get(r.mode)) for r, _ in judged),
        peers=tuple(_with_timing(r, timed.get(r.mode)) for r, _ in judged_peers),
        reference_seconds=reference.seconds,
        forward_seconds=forward.median,
        forward_sample_seconds=tuple(forward.samples),
        forward_peak_bytes=forward.peak_bytes,
    )


# ---------------------------------------------------------------------------
# Tasks: one program, run in any process (:mod:`mutagrad.report.parallel`)


@attrs.frozen
class ProgramTask:
    """One program to run anywhere: found by name in ``corpus``, or generated from ``drawn``."""

    settings: Settings
    name: str
    args: tuple[Any, ...] = attrs.field(eq=False)
    corpus: str | None = None
    drawn: Draw | None = None


def corpus_reference(corpus: str) -> str:
    """``corpus`` as another process finds it: a file's absolute path, or the module name."""
    path = Path(corpus)
    if corpus.endswith(".py") or path.is_file():
        return str(path.resolve())
    return corpus


def make_tasks(
    programs: Sequence[Program], drawn: dict[str, Draw], settings: Settings
) -> list[ProgramTask]:
    """The tasks for ``programs``: generated ones by their draw, the others by name in the corpus.

    Raises ``ValueError`` for a program that is neither generated nor found by
    its name in the corpus ``settings.corpus`` (built by hand, say): another
    process could not find its function.
    """
    tasks = []
    names: set[str] | None = None
    for program in programs:
        if program.name in drawn:
            tasks.append(
                ProgramTask(settings, program.name, program.args, drawn=drawn[program.name])
            )
            continue
        if names is None:
            try:
                names = {p.name for p in load_corpus(settings.corpus)} if settings.corpus else set()
            except Exception:
                names = set()
        if program.name not in names:
            raise ValueError(
                f"program {program.name!r} is not in the corpus {settings.corpus!r}, so a worker "
                "process cannot load it: run it with jobs=1"
            )
        reference = corpus_reference(settings.corpus)
        tasks.append(ProgramTask(settings, program.name, program.args, corpus=reference))
    return tasks


@functools.lru_cache(maxsize=8)
def _corpus_programs(corpus: str, version: int | None) -> dict[str, Program]:
    return {p.name: p for p in load_corpus(corpus)}


def task_program(task: ProgramTask) -> Program:
    """The program a task names, built in this process (a corpus is loaded once per version)."""
    if task.drawn is not None:
        return as_program(task.drawn)
    assert task.corpus is not None
    path = Path(task.corpus)
    version = path.stat().st_mtime_ns if path.is_file() else None  # a long-lived dask worker
    program = _corpus_programs(task.corpus, version)[task.name]
    return attrs.evolve(program, args=task.args)


def detach(result: ProgramResult) -> dict[str, Any]:
    """A result's fields but the program, whose function may not travel between processes."""
    fields = attrs.asdict(result, recurse=False)
    del fields["program"]
    return fields


def attach(fields: dict[str, Any], program: Program) -> ProgramResult:
    """The result again, with the caller's own program record."""
    return ProgramResult(program=program, **fields)


def run_task(task: ProgramTask) -> dict[str, Any]:
    """Run one program (in a worker): :func:`run_program`, the result detached from the program."""
    return detach(run_program(task_program(task), task.settings))


def run_fuzz(task: tuple[int, int]) -> FuzzFigures:
    """The differential fuzzer's figures for ``task = (programs, seed)`` (in a worker)."""
    programs, seed = task
    return fuzz_figures(programs, seed=seed)


def run_report(
    programs: Sequence[Program],
    *,
    corpus: str = "",
    modes: tuple[str, ...] = MODES,
    engines: Sequence[str] = (MUTAGRAD,),
    repeats: int = DEFAULT_REPEATS,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    sample_seconds: float = DEFAULT_SAMPLE_SECONDS,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    measure_memory: bool = True,
    fuzz_programs: int = 0,
    generated: int = 0,
    seed: int = DEFAULT_SEED,
    timing: bool = True,
    jobs: int = 1,
    scheduler: str | None = None,
    progress: TextIO | None = None,
) -> Report:
    """Run every program in every mode and on every peer of ``engines``; show progress.

    ``engines`` is mutagrad followed by peer names (:data:`mutagrad.report.peers.PEERS`);
    it defaults to mutagrad alone. ``generated`` programs drawn by the
    fuzzer's generator with ``seed`` (:mod:`mutagrad.report.generated`)
    follow ``programs``; ``seed`` also
    seeds the differential fuzzer's ``fuzz_programs``. ``timing=False``
    measures neither time nor memory. The programs run in this process
    (``jobs`` 1), in ``jobs`` worker processes, or on the dask.distributed
    cluster of ``scheduler`` (:mod:`mutagrad.report.parallel`); a program a
    worker runs must be one of the corpus ``corpus`` (found there by its name)
    or a generated one. The verdicts are the same either way. Progress goes to
    ``progress`` (default: standard error): a bar redrawn in place on a
    terminal, one line per category (and at least every few dozen programs)
    elsewhere.
    """
    unknown = [e for e in engines if e != MUTAGRAD and e not in PEERS]
    if unknown:
        raise ValueError(f"unknown engines: {', '.join(unknown)}")
    engines = (MUTAGRAD, *(e for e in dict.fromkeys(engines) if e != MUTAGRAD))
    total = len(programs) + max(generated, 0)
    workers = 1 if scheduler else max(1, min(jobs, total))
    settings = Settings(
        corpus=corpus,
        modes=tuple(modes),
        engines=engines,
        repeats=repeats,
        time_limit=time_limit if limit_available() else None,
        sample_seconds=sample_seconds,
        rtol=rtol,
        atol=atol,
        measure_memory=measure_memory and timing,
        fuzz_programs=fuzz_programs,
        timing=timing,
        generated=max(generated, 0),
        seed=seed,
        jobs=workers,
        scheduler=scheduler or None,
    )
    started = datetime.datetime.now(datetime.UTC)
    machine = environment(settings.peers)  # before the run: the load average says how busy
    clock = time.perf_counter()
    results: list[ProgramResult] = []
    with task_map(workers, scheduler) as mapper:
        # The fuzzer's run is one task, submitted first: in worker processes or on a cluster
        # it runs beside the programs (here, after them). It gets no jobs of its own: the
        # fuzzer's pool forks, which a process that has imported a peer (JAX's threads) must
        # not do.
        fuzzing = mapper(run_fuzz, [(fuzz_programs, seed)]) if fuzz_programs > 0 else None
        drawn: dict[str, Draw] = {}
        if settings.generated:
            _say(progress, f"drawing {settings.generated} programs with the fuzzer's "
                 f"generator (seed {seed})")  # fmt: skip
            draws = mapper(draw, [(seed, k) for k in range(settings.generated)])
            drawn = {d.name: d for d in draws}
        everything = (*programs, *(as_program(d) for d in drawn.values()))
        clash = {p.name for p in programs} & drawn.keys()
        if clash:
            raise ValueError(
                f"corpus programs are named like generated ones: {', '.join(sorted(clash))}"
            )
        shown = Progress([p.category for p in everything], progress)
        try:
            if workers == 1 and not scheduler:
                for program in everything:
                    shown.running(program.name)
                    results.append(run_program(program, settings))
                    shown.advance(program.name, program.category)
            else:
                outcomes = mapper(run_task, make_tasks(everything, drawn, settings))
                for program in everything:
                    results.append(attach(next(outcomes), program))
                    shown.advance(program.name, program.category)
        finally:
            shown.close()  # also on an error or Ctrl-C: nothing is printed over the bar
        # Beyond the corpus: random programs, judged the same way (numpy's value, finite
        # differences), so that "no gradient silently wrong" is not a claim about 117 programs.
        fuzz = next(fuzzing) if fuzzing is not None else None
    return Report(
        settings=settings,
        programs=tuple(results),
        environment=machine,
        started=started.isoformat(timespec="seconds"),
        seconds=time.perf_counter() - clock,
        fuzz=fuzz,
    )


def _say(stream: TextIO | None, line: str) -> None:
    stream = stream if stream is not None else sys.stderr
    stream.write(line + "\n")
    stream.flush()
