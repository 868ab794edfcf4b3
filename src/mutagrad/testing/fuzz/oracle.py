"""The oracle: a program's gradient in each mode judged against numpy and finite differences.

:func:`judge` runs a program on plain ndarrays first (the reference: its
value, what it leaves in the caller's arrays, and central finite differences
at two step sizes, which must agree). A program numpy rejects, or one that is
not smooth at its input, is discarded. Then it calls
``mutagrad.withgradient`` in each mode, on fresh copies of the inputs, in an
isolated context and under a time limit, and classifies the call
(:class:`~mutagrad.testing.verdicts.Outcome`): ``right``, ``refused`` (a
MutagradError), ``value differs``, ``wrong`` (the gradient or the caller's
arrays differ), ``crash`` (any other exception) or ``timeout``. A gradient
that disagrees with both estimates is looked at once more with finer steps,
since a kink closer to the input than the steps bends both estimates alike.
"""

from __future__ import annotations

import contextlib
import threading
import traceback
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import numpy as np

import mutagrad
from mutagrad.core import modes
from mutagrad.testing.finite_differences import numerical_gradient
from mutagrad.testing.fuzz.program import PROGRAM_FILENAME, Program
from mutagrad.testing.limits import ProgramTimeout, isolated, time_limit
from mutagrad.testing.verdicts import ModeResult, Outcome

__all__ = ["FORWARD", "MODES", "ModeResult", "Outcome", "Verdict", "discard_reason", "judge"]

MODES: tuple[str, ...] = tuple(modes.MODES)


@attrs.frozen
class Verdict:
    """The judgement of one program.

    ``results`` holds one :class:`~mutagrad.testing.verdicts.ModeResult` per
    mode judged, in order; ``discarded`` says why the program was not judged
    at all (numpy rejects it, its value is not finite, or it is not smooth at
    its input: finite differences cannot be trusted there), and ``results`` is
    then empty.
    """

    program: Program
    results: tuple[ModeResult, ...] = ()
    discarded: str | None = None

    def outcome(self, mode: str) -> Outcome | None:
        """The outcome in ``mode``; ``None`` when it was not judged in ``mode``."""
        return next((r.outcome for r in self.results if r.mode == mode), None)

    @property
    def findings(self) -> tuple[ModeResult, ...]:
        """The calls that failed (:data:`~mutagrad.testing.verdicts.FAILURES`): each is a bug."""
        return tuple(r for r in self.results if r.failed)


@attrs.frozen
class _Tolerance:
    """Finite-difference steps and comparison tolerances for one precision."""

    steps: tuple[float, float]
    # Looked at only when a gradient disagrees with both estimates: a kink
    # closer to the input than the steps (a clip bound 6e-5 away in float32)
    # bends both estimates alike, and finer ones show it (two of them: a
    # maximum 1.9e-5 away bent the first finer float32 step too).
    finer_steps: tuple[float, float]
    gradient_rtol: float
    gradient_atol: float  # scaled by max(1, the largest reference entry)
    value_rtol: float


_FLOAT64_TOLERANCE = _Tolerance(
    steps=(1e-6, 1e-4),
    finer_steps=(1e-7, 1e-8),
    gradient_rtol=1e-5,
    gradient_atol=1e-5,
    value_rtol=1e-9,
)
_FLOAT32_TOLERANCE = _Tolerance(
    steps=(1e-3, 1e-2),
    finer_steps=(1e-4, 1e-5),
    gradient_rtol=1e-2,
    gradient_atol=1e-2,
    value_rtol=1e-5,
)
_LARGEST_VALUE = 1e8


@attrs.frozen
class _Reference:
    """What plain numpy says about a program."""

    value: float
    inputs_after: list[np.ndarray]
    arguments_after: list[Any]
    estimates: tuple[list[np.ndarray], list[np.ndarray]]
    tolerance: _Tolerance


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence numpy's warnings (complex casts, overflow) and the report of an exception that
    ends a thread the program started: the comparisons judge the results."""
    hook = threading.excepthook
    threading.excepthook = _ignore_thread_exception
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            yield
    finally:
        threading.excepthook = hook


def _ignore_thread_exception(args: Any) -> None:
    """A program's thread died (mutagrad refused its work): the gradient call says so."""


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""


def _as_float(value: Any) -> float:
    if np.iscomplexobj(value):
        raise TypeError(f"a complex result {value!r}")
    return float(np.asarray(value))


def _plain_value(program: Program, inputs: Sequence[np.ndarray]) -> float:
    f, args = program.build(list(inputs))
    return _as_float(f(*args))


def _close(got: np.ndarray, want: np.ndarray, tolerance: _Tolerance) -> bool:
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    return bool(
        np.allclose(got, want, rtol=tolerance.gradient_rtol, atol=tolerance.gradient_atol * scale)
    )


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def _reference(program: Program) -> _Reference | str:
    """numpy's value and two finite-difference gradients, or why the program is discarded."""
    tolerance = _FLOAT32_TOLERANCE if program.low_precision else _FLOAT64_TOLERANCE
    try:
        with _quiet():
            inputs = program.fresh_inputs()
            f, args = program.build(inputs)
            # A forward pass that overflows, or divides by zero, computes from inf:
            # tanh(inf) = 1 hides it from the value and the finite differences, while
            # every AD system's chain rule meets 0 * inf = nan. No derivative can be
            # judged there.
            with np.errstate(over="raise", divide="raise"):
                value = _as_float(f(*args))
            estimates = tuple(
                [
                    np.asarray(g, dtype=float)
                    for g in numerical_gradient(
                        lambda *xs: _plain_value(program, xs), *program.inputs, eps=step
                    )
                ]
                for step in tolerance.steps
            )
    except FloatingPointError as error:
        if "divide by zero" in str(error):
            return "the forward pass divides by zero (an intermediate is inf)"
        return "the forward pass overflows (an intermediate is inf)"
    except Exception as error:
        return f"numpy raised {type(error).__name__}: {_first_line(error)}"
    if not np.isfinite(value) or abs(value) > _LARGEST_VALUE:
        return "the value is not finite or too large"
    if not all(np.all(np.isfinite(g)) for estimate in estimates for g in estimate):
        return "a finite-difference estimate is not finite"
    if not all(_close(a, b, tolerance) for a, b in zip(*estimates)):
        return "not smooth at the input: the two finite-difference estimates disagree"
    return _Reference(value, inputs, [_copy(a) for a in args], estimates, tolerance)  # type: ignore[arg-type]


def _positions(view: np.ndarray, base: np.ndarray) -> np.ndarray:
    """For each element of ``view``, its flat position in C-contiguous ``base``."""
    itemsize = base.itemsize
    start = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    positions = np.full(view.shape, start // itemsize, dtype=np.intp)
    for axis, (length, stride) in enumerate(zip(view.shape, view.strides)):
        steps = np.arange(length) * (stride // itemsize)
        positions = positions + steps.reshape(
            [length if k == axis else 1 for k in range(view.ndim)]
        )
    return positions


def _input_gradients(
    program: Program, inputs: list[np.ndarray], args: tuple[Any, ...], grads: Sequence[Any]
) -> list[np.ndarray] | str:
    """The gradient with respect to the inputs, or what is wrong with ``grads``.

    An argument that views an input adds its gradient where it looks into
    that input; one that copies it (another layout or precision) adds it
    element by element.
    """
    if len(grads) != len(args):
        return f"{len(grads)} gradients for {len(args)} arguments"
    totals = [np.zeros(x.shape) for x in inputs]
    for k, (arg, g, source) in enumerate(zip(args, grads, program.argument_sources)):
        if source is None or g is None:
            continue
        if not isinstance(arg, np.ndarray):  # a container argument: its array is field w
            arg, g = _field_w(arg), _field_w(g)
            if g is None:
                continue
        if np.iscomplexobj(g):
            return f"the gradient of argument {k} is complex: {g!r}"
        g = np.asarray(g, dtype=float)
        if g.shape != np.shape(arg):
            return f"the gradient of argument {k} has shape {g.shape}, the argument {np.shape(arg)}"
        x = inputs[source]
        if np.shares_memory(arg, x):
            np.add.at(totals[source].reshape(-1), _positions(arg, x).ravel(), g.ravel())
        else:  # a copy in another layout or precision: same shape, same elements
            totals[source] += g
    return totals


def _field_w(value: Any) -> Any:
    """The array a container argument holds (or its gradient): ``value["w"]`` or ``value.w``."""
    return value["w"] if isinstance(value, dict) else value.w


def _caller_problem(
    program: Program,
    reference: _Reference,
    after: tuple[list[np.ndarray], tuple[Any, ...]],
    before: tuple[list[np.ndarray], list[Any]],
    completed: bool,
) -> str | None:
    """Whether the call left the caller's arrays as it should: unchanged, or as numpy left them.

    ``f`` writing the caller's array through a view made before the call
    changes it under numpy as under mutagrad; nothing else may change it. A
    refused call may have stopped before that write, so the arrays are then
    not compared. An argument without a derivative (a mask, an index array)
    may be left unchanged or as numpy left it.
    """
    inputs, args = after
    if program.writes_caller_memory and not completed:
        return None
    expected_inputs = reference.inputs_after if program.writes_caller_memory else before[0]
    for k, (x, want) in enumerate(zip(inputs, expected_inputs)):
        if not x.flags.writeable:
            return f"the caller's a{k} was left read-only"
        if not np.array_equal(x, want):
            return f"the caller's a{k} changed: {x.tolist()} (expected {want.tolist()})"
    for k, (arg, source) in enumerate(zip(args, program.argument_sources)):
        if not isinstance(arg, np.ndarray):
            continue
        if source is None and not completed:
            continue
        expected = [before[1][k]]
        if program.writes_caller_memory or source is None:
            expected = [reference.arguments_after[k]]
        if source is None:
            expected.append(before[1][k])
        if not any(np.array_equal(arg, want) for want in expected):
            return f"argument {k} changed: {arg.tolist()} (expected {expected[0].tolist()})"
    return None


def _where(error: BaseException, source: str) -> str:
    """Where ``error`` was raised: inside mutagrad, or else on which line of the program.

    An exception numpy raises on a program line (writing a read-only array
    mutagrad handed out) names that line; one raised inside mutagrad names
    its innermost frame there.
    """
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "?"
    inside = [fr for fr in frames if "mutagrad" in fr.filename and "testing" not in fr.filename]
    innermost = frames[-1]
    if innermost.filename == PROGRAM_FILENAME or not inside:
        program_frames = [fr for fr in frames if fr.filename == PROGRAM_FILENAME]
        if program_frames:
            line = program_frames[-1].lineno or 0
            return f"program line {line}: {source.splitlines()[line - 1].strip()}"
    frame = (inside or frames)[-1]
    return f"{frame.filename.split('src/')[-1]}:{frame.lineno} in {frame.name}"


def _judge_mode(program: Program, mode: str, reference: _Reference, seconds: float) -> ModeResult:
    inputs = program.fresh_inputs()
    f, args = program.build(inputs)
    before = ([x.copy() for x in inputs], [_copy(a) for a in args])
    refusal: ModeResult | None = None
    result = None
    try:
        with _quiet(), time_limit(seconds):
            result = isolated(mutagrad.withgradient, f, *args, mode=mode)
    except mutagrad.MutagradError as error:
        refusal = ModeResult(mode, Outcome.REFUSED, _first_line(error), type(error).__name__)
    except ProgramTimeout as error:
        return ModeResult(mode, Outcome.TIMEOUT, str(error))
    except Exception as error:
        detail = f"{_first_line(error)} (at {_where(error, program.source)})"
        return ModeResult(mode, Outcome.CRASH, detail, type(error).__name__)
    problem = _caller_problem(program, reference, (inputs, args), before, result is not None)
    if problem is not None:
        return ModeResult(mode, Outcome.WRONG, problem)
    if refusal is not None:
        return refusal
    return _judge_result(program, mode, reference, (inputs, args), result)


def _judge_result(
    program: Program,
    mode: str,
    reference: _Reference,
    called: tuple[list[np.ndarray], tuple[Any, ...]],
    result: Any,
) -> ModeResult:
    """The value and the gradient a call returned, against numpy's and finite differences'."""
    tolerance = reference.tolerance
    try:
        value = _as_float(result.val)
    except (TypeError, ValueError):
        detail = f"the value {result.val!r} is not a real number"
        return ModeResult(mode, Outcome.VALUE_DIFFERS, detail)
    if not abs(value - reference.value) <= tolerance.value_rtol * max(1.0, abs(reference.value)):
        detail = f"value {value!r}, numpy gives {reference.value!r}"
        return ModeResult(mode, Outcome.VALUE_DIFFERS, detail)
    gradients = _input_gradients(program, *called, result.grad)
    if isinstance(gradients, str):
        return ModeResult(mode, Outcome.WRONG, gradients)
    for k, got in enumerate(gradients):
        estimates = [estimate[k] for estimate in reference.estimates]
        if not any(_close(got, want, tolerance) for want in estimates):
            detail = (
                f"gradient of a{k}: {np.round(got, 6).tolist()}, "
                f"finite differences give {np.round(estimates[0], 6).tolist()}"
            )
            return ModeResult(mode, Outcome.WRONG, detail)
    return ModeResult(mode, Outcome.RIGHT)


#: The forward-mode column (``--forward``): not a mode of a gradient call, ``jvp`` itself.
FORWARD = "forward"


def _judge_forward(program: Program, reference: _Reference, seconds: float) -> ModeResult:
    """``jvp`` of the program, as a function of its inputs, along a random direction, against
    the finite-difference directional derivative (the two estimates' gradients times it).

    The program's arguments (views of the inputs, containers) are made inside
    the forward call, from the traced inputs, so the caller's arrays are not
    compared here: a view made outside ``f`` is made inside ``jvp``.
    """
    inputs = program.fresh_inputs()
    rng = np.random.default_rng(sum(map(ord, program.source)))
    directions = [rng.normal(size=x.shape) for x in inputs]
    try:
        with _quiet(), time_limit(seconds):
            value, tangent = isolated(mutagrad.jvp, program.fn, inputs, directions)
    except mutagrad.MutagradError as error:
        return ModeResult(FORWARD, Outcome.REFUSED, _first_line(error), type(error).__name__)
    except ProgramTimeout as error:
        return ModeResult(FORWARD, Outcome.TIMEOUT, str(error))
    except Exception as error:
        detail = f"{_first_line(error)} (at {_where(error, program.source)})"
        return ModeResult(FORWARD, Outcome.CRASH, detail, type(error).__name__)
    tolerance = reference.tolerance
    try:
        value, tangent = _as_float(value), _as_float(tangent)
    except (TypeError, ValueError):
        return ModeResult(FORWARD, Outcome.VALUE_DIFFERS, f"the value {value!r} is not real")
    if not abs(value - reference.value) <= tolerance.value_rtol * max(1.0, abs(reference.value)):
        detail = f"value {value!r}, numpy gives {reference.value!r}"
        return ModeResult(FORWARD, Outcome.VALUE_DIFFERS, detail)
    # The directional derivative sums the gradient's entries: its scale is theirs.
    scale = sum(float(np.sum(np.abs(g * d))) for g, d in zip(reference.estimates[0], directions))
    wanted = [sum(float(np.sum(g * d)) for g, d in zip(estimate, directions))
              for estimate in reference.estimates]  # fmt: skip
    atol = tolerance.gradient_atol * max(1.0, scale)
    rtol = tolerance.gradient_rtol
    if not any(abs(tangent - want) <= atol + rtol * abs(want) for want in wanted):
        detail = f"jvp {tangent!r}, finite differences give {wanted[0]!r} along a random direction"
        return ModeResult(FORWARD, Outcome.WRONG, f"gradient of the inputs: {detail}")
    return ModeResult(FORWARD, Outcome.RIGHT)


def discard_reason(program: Program) -> str | None:
    """Why :func:`judge` would discard ``program`` (numpy rejects it, it is not smooth at its
    input, ...), or ``None`` when plain numpy gives a reference to judge it by."""
    reference = _reference(program)
    return reference if isinstance(reference, str) else None


def judge(program: Program, modes: Sequence[str] = MODES, seconds: float = 10.0) -> Verdict:
    """Judge ``program`` in each mode (see the module docstring); ``seconds`` limits each call."""
    reference = _reference(program)
    if isinstance(reference, str):
        return Verdict(program, discarded=reference)
    results = tuple(
        _judge_forward(program, reference, seconds) if m == FORWARD
        else _judge_mode(program, m, reference, seconds)
        for m in modes
    )  # fmt: skip
    disputed = any(
        r.outcome is Outcome.WRONG and r.detail.startswith("gradient of") for r in results
    )
    if disputed and not _smooth_within_the_steps(program, reference):
        return Verdict(program, discarded=_KINK_WITHIN_THE_STEPS)
    if disputed and _rounding_noise(program, results, reference, seconds):
        return Verdict(program, discarded=_ROUNDING_NOISE)
    return Verdict(program, results)


_ROUNDING_NOISE = (
    "ill-conditioned: the disputed gradient changes beyond the tolerance when the inputs "
    "move by 4 ulps (rounding noise times a huge chain-rule factor)"
)


def _rounding_noise(
    program: Program, results: Sequence[ModeResult], reference: _Reference, seconds: float
) -> bool:
    """Whether a disputed reverse-mode gradient is rounding noise, not a derivative.

    Found by the 100,000-program run of seed 4242: |exp(1j * t)| with t ~ 1e29 (a
    power.accumulate) has derivative 0 in t, computed as a rounding error ~1e-17
    that dt/dx ~ 1e30 turns into 4.7e13 (HIPS autograd gives -4.7e13). Such a
    gradient changes completely when the inputs move by a few ulps; a wrong rule's
    gradient does not. The call is repeated at inputs 4 ulps up, in the first
    disputed mode; forward mode's disputes are not re-checked.
    """
    disputed = [r.mode for r in results
                if r.outcome is Outcome.WRONG and r.detail.startswith("gradient of")
                and r.mode != FORWARD]  # fmt: skip
    if not disputed:
        return False
    gradients = []
    for nudge in (0, 4):
        inputs = program.fresh_inputs()
        for x in inputs:
            for _ in range(nudge):
                np.nextafter(x, np.inf, out=x)
        f, args = program.build(inputs)
        try:
            with _quiet(), time_limit(seconds):
                result = isolated(mutagrad.withgradient, f, *args, mode=disputed[0])
        except Exception:
            return False
        mapped = _input_gradients(program, inputs, args, result.grad)
        if isinstance(mapped, str):
            return False
        gradients.append(mapped)
    return not all(_close(a, b, reference.tolerance) for a, b in zip(*gradients))


_KINK_WITHIN_THE_STEPS = (
    "not smooth at the input: a finer finite-difference estimate differs from the two"
)


def _smooth_within_the_steps(program: Program, reference: _Reference) -> bool:
    """Whether the estimates at the finer steps agree with the first of the two estimates."""
    tolerance = reference.tolerance
    for step in tolerance.finer_steps:
        with _quiet():
            finer = numerical_gradient(
                lambda *xs: _plain_value(program, xs), *program.inputs, eps=step
            )
        if not all(
            _close(np.asarray(g, dtype=float), coarse, tolerance)
            for g, coarse in zip(finer, reference.estimates[0])
        ):
            return False
    return True
