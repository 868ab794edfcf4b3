"""``check_rule``: test a registered derivative rule as a whole, the way a rule author needs.

A rule is registered with ``mutagrad.defvjp`` (vjps plus what each reads),
``@mutagrad.rrule`` (a closure returning the output and a pullback), or is one
of mutagrad's own numpy rules. :func:`check_rule` calls ``fn`` through the
rule inside gradient calls (poison mode, then snapshot mode) and reports
every way the rule can be wrong:

1. **Forward value.** The output through the rule equals ``fn`` called on
   plain ndarrays without the rule (shape, dtype, values up to rounding);
   the rule does not write into its arguments (the engine cannot see writes
   made inside a rule); its output does not share memory with an argument
   (a write to one would silently change the other).
2. **Pullback against finite differences.** For a random output cotangent
   ``dy``, the vector-Jacobian product through the engine equals the
   gradient of ``<dy, fn(args)>`` by central differences, for all
   differentiated arguments together and for each one alone (the others
   constants). A vjp that reads an argument its ``reads`` declaration leaves
   out receives a shape-only stand-in (``Meta``) and fails when that
   argument is constant; the report names the declaration to fix.
3. **Structural zeros.** ``None``, ``NoTangent()`` and ``ZeroTangent()``
   are accepted where they are right: for arguments that are not
   differentiated (integers, booleans, strings, or positions left out of
   ``wrt``), and ``ZeroTangent()``/``None`` for an argument whose
   derivative is zero. The engine drops ``None`` and ``NoTangent()`` without
   complaint, so check_rule refuses them (and ``ZeroTangent()``) for a
   differentiated argument whose finite-difference derivative is not zero.
   Wrong cotangent counts and shapes the engine refuses are reported too.
4. **Overwrites after the forward pass.** Each array argument, then the
   output, is overwritten in place after the forward pass, and ``fn`` is
   called a second time; the pullback must then give the same answer or
   raise ``PoisonedCaptureError`` (snapshot mode: the same answer, or
   ``SnapshotUnavailableError`` for an rrule). A different answer means the
   rule reads memory the engine does not track: a vjp reading a primal
   through a closure, global or cache instead of a declared read; an rrule
   holding a plain ndarray constant without a copy; scratch memory shared
   between calls. The report says which write changed which cotangent, and
   the fix.

5. **The forward rule**, where the rule has one (a ``defjvp``, or
   mutagrad's own; an rrule's is its pullback transposed): along a random direction ``v`` of
   the differentiated arguments, ``<dy, J v>`` by forward mode (``jvp``)
   equals ``<J^T dy, v>`` from the pullback checked in 2. A rule without a
   forward rule is no finding (forward mode refuses it by name).

Everything found is raised as one ``AssertionError``.
"""

from __future__ import annotations

import os
import textwrap
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from mutagrad.core.engine import ANS, Rule, VjpRule
from mutagrad.core.registry import FUNCTION_RULES, NONDIFFERENTIABLE, UFUNC_RULES
from mutagrad.custom import ClosureRule
from mutagrad.diagnostics.messages import function_name
from mutagrad.errors import (
    MissingForwardRuleError,
    MutagradError,
    NotDifferentiableError,
    PoisonedCaptureError,
    SnapshotUnavailableError,
)
from mutagrad.forward import jvp
from mutagrad.testing.finite_differences import fresh_copies, fresh_copy
from mutagrad.testing.gradient_check import (
    ELEMENTWISE_LIMIT,
    DifferenceReference,
    argument_label,
    reference_line,
    reference_precision,
    with_rounding,
)
from mutagrad.traced.value import WrappedArray, WrappedValue
from mutagrad.zygote import withgradient

__all__ = ["RegisteredRule", "RuleCheck", "check_rule", "find_rule"]

_MUTAGRAD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))


# ---------------------------------------------------------------------------
# Which rule fn has.


@attrs.frozen
class RegisteredRule:
    """What mutagrad uses to differentiate a function.

    ``kind`` is ``"defvjp"`` (vjps with declared reads, registered with
    ``mutagrad.defvjp``), ``"rrule"`` (a closure rule), ``"numpy"`` (one of
    mutagrad's own rules for a numpy function or ufunc), ``"non-differentiable"``
    or ``"none"``. ``rule`` is the rule object when there is exactly one.
    """

    kind: str
    rule: Rule | None = None


def find_rule(fn: Any) -> RegisteredRule:
    """The rule registered for ``fn`` (a ``mutagrad.primitive``, numpy function or ufunc)."""
    try:
        if fn in NONDIFFERENTIABLE:
            return RegisteredRule("non-differentiable")
    except TypeError:  # unhashable: cannot carry a rule
        return RegisteredRule("none")
    if isinstance(fn, np.ufunc):
        return _classify(UFUNC_RULES.get(fn))
    adapter = FUNCTION_RULES.get(fn)
    if adapter is None:
        return RegisteredRule("none")
    # defvjp and rrule register ``lambda *args: apply(rule, args)``: find that rule.
    for cell in getattr(adapter, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, Rule):
            return _classify(value)
    code = getattr(adapter, "__code__", None)
    if code is not None and "call_without_derivative" in code.co_names:
        return RegisteredRule("non-differentiable")
    return RegisteredRule("numpy")


def _classify(rule: Rule | None) -> RegisteredRule:
    if rule is None:
        return RegisteredRule("none")
    if isinstance(rule, ClosureRule):
        return RegisteredRule("rrule", rule)
    if isinstance(rule, VjpRule):
        # mutagrad's own rules have their vjps written in mutagrad.rules.
        own = any(
            (getattr(vjp, "__module__", "") or "").startswith("mutagrad.rules") for vjp in rule.vjps
        )
        return RegisteredRule("numpy" if own else "defvjp", rule)
    return RegisteredRule("numpy", rule)


# ---------------------------------------------------------------------------
# The result and the runs.


@attrs.frozen
class RuleCheck:
    """What a passing :func:`check_rule` computed.

    ``output_cotangent`` is the ``dy`` used (a tuple for a tuple output);
    ``vjp`` has one entry per argument: the cotangent through the rule, or
    ``None`` for an argument that was not differentiated.
    """

    output_cotangent: Any
    vjp: tuple[Any, ...]


@attrs.define
class _Forward:
    """What the recorded run saw: the outputs, the arguments after the call."""

    outputs: list[Any] = attrs.field(factory=list)
    arguments_after: list[Any] = attrs.field(factory=list)


@attrs.define
class _Outcome:
    grads: dict[int, Any] | None = None
    error: BaseException | None = None
    skipped: bool = False  # the disturbance could not be applied (read-only output)
    forward: _Forward | None = None


# A disturbance applied after the forward pass: ("argument", i), ("output", -1)
# or ("second call", -1).
_Disturbance = tuple[str, int]

_SAME_RTOL = 1e-9  # two runs of the same pullback on the same values


def _outputs(result: Any) -> list[Any]:
    return list(result) if isinstance(result, tuple) else [result]


def _raw(value: Any) -> Any:
    return value._raw if isinstance(value, WrappedValue) else value


def _is_float(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (float, complex, np.inexact)):
        return True
    data = _raw(value)
    return isinstance(data, np.ndarray) and data.dtype.kind in "fc"


def _overwritten(value: np.ndarray) -> np.ndarray:
    """Values to overwrite an array with: different, and valid where the original was.

    Floats become ``0.5 * x + 0.25`` (inside most functions' domains when
    ``x`` is); integers and booleans are reversed (indices stay in range,
    masks keep their count).
    """
    if value.dtype.kind in "fc":
        return (0.5 * value + 0.25).astype(value.dtype)
    return np.flip(value).copy() if value.ndim else value.copy()


def _forward_close(got: Any, want: Any) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "fc":
        tol = float(np.sqrt(np.finfo(want.dtype).eps))
        scale = max(1.0, float(np.max(np.abs(want), initial=0.0, where=np.isfinite(want))))
        return bool(np.allclose(got, want, rtol=tol, atol=tol * scale, equal_nan=True))
    return bool(np.array_equal(got, want))


def _same_answer(a: dict[int, Any], b: dict[int, Any]) -> list[int]:
    """Argument positions whose cotangents differ between two runs."""
    changed = []
    for k, ga in a.items():
        gb = b.get(k)
        if ga is None or gb is None:
            same = ga is None and gb is None
        else:
            a_values, b_values = _numbers(ga), _numbers(gb)
            same = np.allclose(a_values, b_values, rtol=_SAME_RTOL, atol=1e-12, equal_nan=True)
        if not same:
            changed.append(k)
    return changed


def _numbers(value: Any) -> np.ndarray:
    """``value`` as float64, or complex128 when complex."""
    data = np.asarray(value)
    return data.astype(np.complex128 if data.dtype.kind == "c" else np.float64)


def _worst_change(before: Any, after: Any) -> str:
    if before is None or after is None:
        return f"{before!r} before, {after!r} after"
    b, a = _numbers(before), _numbers(after)
    err = np.abs(a - b)
    err = np.where(np.isnan(err), np.inf, err)
    flat = int(np.argmax(err)) if err.size else 0
    index = [int(i) for i in np.unravel_index(flat, err.shape)] if err.ndim else []
    return f"element {index}: {b.flat[flat].item()!r} before, {a.flat[flat].item()!r} after"


def _where_raised(error: BaseException) -> str:
    """The innermost frame of the user's code in the traceback, as ``file:line: source``."""
    frames = traceback.extract_tb(error.__traceback__)
    for frame in reversed(frames):
        path = os.path.abspath(frame.filename)
        if not path.startswith((_MUTAGRAD_DIR, _NUMPY_DIR)):
            text = f"{frame.filename}:{frame.lineno}"
            return f"{text}: {frame.line.strip()}" if frame.line else text
    return ""


# ---------------------------------------------------------------------------
# The checker.


class _RuleChecker:
    def __init__(
        self,
        fn: Any,
        args: tuple[Any, ...],
        fn_kwargs: dict[str, Any] | None,
        wrt: Sequence[int] | None,
        output_cotangent: Any,
        atol: float | None,
        rtol: float | None,
        eps: float | None,
        elementwise_limit: int,
        directions: int,
        seed: int,
    ):
        __tracebackhide__ = True  # pytest shows the caller's line, not this helper
        self.fn = fn
        self.args = args
        self.kwargs = dict(fn_kwargs or {})
        self.seed = seed
        self.name = _display_name(fn)
        self.registered = find_rule(fn)
        self.problems: list[str] = []
        self._reported: set[Any] = set()
        if self.registered.kind == "none":
            raise AssertionError(
                f"check_rule({self.name}): no rule is registered for {self.name}. Register one "
                f"with mutagrad.defvjp({self.name}, ...) or @mutagrad.rrule({self.name}) (on a "
                "@mutagrad.primitive), or use check_gradient for a function differentiated by "
                "tracing through it."
            )
        if self.registered.kind == "non-differentiable":
            raise AssertionError(
                f"check_rule({self.name}): {self.name} is declared non-differentiable, so it "
                "has no pullback to check."
            )
        self.wrt = self._resolve_wrt(wrt)
        expected = fn(*fresh_copies(args), **self.kwargs)
        self.expected = [np.array(_raw(o), copy=True) for o in _outputs(expected)]
        self.tuple_output = isinstance(expected, tuple)
        self.float_outputs = [j for j, o in enumerate(self.expected) if o.dtype.kind in "fc"]
        if not self.float_outputs:
            raise AssertionError(
                f"check_rule({self.name}): the output has no floating-point part to differentiate"
            )
        self.cotangents = self._cotangents(output_cotangent, seed)
        self.drawn_cotangent = output_cotangent is None
        self.precision = reference_precision(
            lambda *call_args: fn(*call_args, **self.kwargs), args, eps, atol, rtol
        )
        self.reference = DifferenceReference(
            self._pairing,
            args,
            eps=self.precision.eps,
            elementwise_limit=elementwise_limit,
            directions=directions,
            seed=seed + 1,
            dtype=self.precision.dtype,
        )
        self.atol = with_rounding(self.precision.atol, self.reference.rounding())
        self.rtol = self.precision.rtol

    # -- setup -------------------------------------------------------------------

    def label(self, k: int) -> str:
        return argument_label(self.fn, k)

    def _resolve_wrt(self, wrt: Sequence[int] | None) -> tuple[int, ...]:
        if wrt is None:
            chosen = tuple(k for k, a in enumerate(self.args) if _is_float(a))
        else:
            chosen = tuple(sorted(set(wrt)))
            for k in chosen:
                if not 0 <= k < len(self.args):
                    raise ValueError(f"wrt={tuple(wrt)}: there is no argument {k}")
        sequences = [k for k in chosen if isinstance(self.args[k], (list, tuple))]
        if sequences or not chosen:
            raise ValueError(
                f"check_rule({self.name}): no argument to differentiate: check_rule "
                "differentiates array and number arguments (by default the floating-point ones), "
                "not lists or tuples of arrays. For a function of a sequence, check a wrapper "
                "with check_gradient, e.g. check_gradient(lambda a, b: np.sum(np.concatenate("
                "(a, b)) * dy), a, b)."
            )
        return chosen

    def _cotangents(self, given: Any, seed: int) -> list[np.ndarray]:
        if given is not None:
            parts = list(given) if self.tuple_output else [given]
            if len(parts) != len(self.float_outputs):
                raise ValueError(
                    f"output_cotangent: expected {len(self.float_outputs)} cotangent(s), one per "
                    "floating-point output"
                )
            return [_numbers(p) for p in parts]
        rng = np.random.default_rng(seed)
        drawn = []
        for j in self.float_outputs:
            shape = self.expected[j].shape
            dy = rng.standard_normal(shape)
            if self.expected[j].dtype.kind == "c":
                dy = dy + 1j * rng.standard_normal(shape)
            drawn.append(dy)
        return drawn

    def _pairing(self, *call_args: Any) -> Any:
        """``<dy, fn(*call_args)>``: a scalar whose gradient is the vjp of ``dy``."""
        return self._pair(self.fn(*call_args, **self.kwargs))

    def _pair(self, result: Any) -> Any:
        """``Re(sum(y * dy))`` over the outputs: its gradient is the vjp of ``dy``, for complex
        outputs too (JAX's convention: the pairing Re(u * v))."""
        outputs = _outputs(result)
        total: Any = 0.0
        for j, dy in zip(self.float_outputs, self.cotangents):
            paired = np.sum(outputs[j] * dy)
            total = total + (np.real(paired) if np.iscomplexobj(dy) else paired)
        return total

    # -- running fn through the rule -------------------------------------------------

    def run(
        self,
        active: tuple[int, ...],
        mode: str = "poison",
        disturbance: _Disturbance | None = None,
        record: bool = False,
    ) -> _Outcome:
        """Differentiate ``<dy, fn(args)>`` with respect to the ``active`` arguments.

        Inside the gradient call every array argument is a fresh copy: the
        active ones traced (and owning their memory, so a write really
        overwrites what the rule received), the others plain ndarrays.
        ``disturbance`` is applied after the forward pass.
        """
        outcome = _Outcome()

        def objective(*traced: Any) -> Any:
            call_args = fresh_copies(self.args)
            for k, t in zip(active, traced):
                call_args[k] = np.copy(t) if isinstance(t, WrappedArray) else t
            result = self.fn(*call_args, **self.kwargs)
            total = self._pair(result)
            if record:
                outcome.forward = self._observe(result, call_args)
            if disturbance is not None:
                # The values written are arbitrary: whatever numpy thinks of them is no finding.
                with np.errstate(all="ignore"):
                    outcome.skipped = not self._disturb(disturbance, call_args, result)
            return total

        try:
            grads = withgradient(objective, *[fresh_copy(self.args[k]) for k in active], mode=mode)
        except Exception as error:  # reported by the caller, with what it means
            outcome.error = error
            return outcome
        outcome.grads = dict(zip(active, grads.grad))
        return outcome

    def _observe(self, result: Any, call_args: list[Any]) -> _Forward:
        forward = _Forward()
        outputs = _outputs(result)
        forward.outputs = [np.array(_raw(o), copy=True) for o in outputs]
        forward.arguments_after = [
            np.array(_raw(a), copy=True) if isinstance(_raw(a), np.ndarray) else None
            for a in call_args
        ]
        return forward

    def _disturb(self, disturbance: _Disturbance, call_args: list[Any], result: Any) -> bool:
        """Apply a write after the forward pass; False if it cannot be applied."""
        what, i = disturbance
        if what == "argument":
            target = call_args[i]
            target[...] = _overwritten(np.asarray(fresh_copy(self.args[i])))
            return True
        if what == "output":
            written = False
            for out in _outputs(result):
                if isinstance(out, WrappedArray) and out._raw.flags.writeable:
                    out[...] = _overwritten(np.array(out._raw))
                    written = True
            return written
        # A second call, with other values, of fn through its rule.
        other = fresh_copies(self.args)
        for k, a in enumerate(call_args):
            if isinstance(a, WrappedValue) and _is_float(a):
                other[k] = 0.5 * a + 0.25
            elif isinstance(other[k], np.ndarray):
                other[k] = _overwritten(other[k])
        self.fn(*other, **self.kwargs)
        return True

    # -- the checks ------------------------------------------------------------------

    def check(self, check_overwrites: bool) -> RuleCheck:
        __tracebackhide__ = True  # pytest shows the caller's line, not this helper
        everything = self.wrt
        full = self.run(everything, record=True)
        self.check_forward(full)
        self.check_tangents(full)
        # All differentiated arguments together, then (when there are several) each
        # one alone: a vjp's undeclared read only shows when the others are constants.
        baselines = {everything: full}
        if len(everything) > 1:
            baselines.update({(k,): self.run((k,)) for k in everything})
        for active, outcome in baselines.items():
            self.check_outcome(outcome, active)
        if check_overwrites:
            for active, outcome in baselines.items():
                if outcome.grads is not None:
                    self.check_overwrites(active, outcome)
        if self.problems:
            count = len(self.problems)
            raise AssertionError(
                f"check_rule({self.name}) found {count} problem{'s' if count > 1 else ''} "
                f"(rule kind: {self.registered.kind}):\n\n"
                + "\n\n".join(_numbered(n, p) for n, p in enumerate(self.problems, 1))
            )
        assert full.grads is not None
        vjp = tuple(full.grads.get(k) for k in range(len(self.args)))
        dy = tuple(self.cotangents) if self.tuple_output else self.cotangents[0]
        return RuleCheck(dy, vjp)

    def report(self, key: Any, text: str) -> None:
        if key not in self._reported:
            self._reported.add(key)
            self.problems.append(text)

    def check_tangents(self, outcome: _Outcome) -> None:
        """The forward rule against the pullback: ``<dy, J v> == <J^T dy, v>``."""
        if outcome.grads is None or not self.wrt or self.registered.kind == "rrule":
            return  # (an rrule's forward rule is its pullback transposed: the same numbers)
        rng = np.random.default_rng(self.seed + 1)
        directions = {k: rng.normal(size=np.shape(self.args[k])) for k in self.wrt}

        def objective(*traced: Any) -> Any:
            call_args = fresh_copies(self.args)
            for k, t in zip(self.wrt, traced):
                call_args[k] = t
            return self._pair(self.fn(*call_args, **self.kwargs))

        try:
            _, got = jvp(objective, [fresh_copy(self.args[k]) for k in self.wrt],
                         [directions[k] for k in self.wrt])  # fmt: skip
        except MissingForwardRuleError:
            return  # no forward rule: forward mode refuses it by name
        except Exception as error:
            self.report("tangent", f"forward rule: jvp through the rule {self.name} raised "
                        f"{type(error).__name__}: {str(error).splitlines()[0]}")  # fmt: skip
            return
        parts = [np.sum(np.asarray(outcome.grads[k], dtype=np.float64) * directions[k])
                 for k in self.wrt if outcome.grads.get(k) is not None]  # fmt: skip
        want = float(sum(parts))
        got = float(got)
        single = any(np.result_type(self.args[k]) != np.float64 for k in self.wrt)
        tolerance = (1e-4 if single else 1e-8) * (abs(want) + sum(abs(p) for p in parts) + 1e-12)
        if not abs(got - want) <= tolerance:
            self.report(
                "tangent",
                f"forward rule: along a random direction v (seed={self.seed + 1}), "
                f"<dy, J v> by jvp through the rule {self.name} is {got!r}, but the pullback "
                f"gives <J^T dy, v> = {want!r}.\nFix: correct the forward rule (defjvp), or "
                "the pullback if the finite differences above disagree with it too.",
            )

    def check_forward(self, outcome: _Outcome) -> None:
        forward = outcome.forward
        if forward is None:  # the forward pass itself raised: reported with the gradient
            return
        if len(forward.outputs) != len(self.expected):
            self.report(
                "forward",
                f"forward value: through the rule {self.name} returns {len(forward.outputs)} "
                f"output(s), without it {len(self.expected)}",
            )
            return
        for j, (got, want) in enumerate(zip(forward.outputs, self.expected)):
            which = f"output {j}" if self.tuple_output else "the output"
            if got.shape != want.shape or got.dtype != want.dtype:
                self.report(
                    ("forward", j),
                    f"forward value: through the rule, {which} has shape {got.shape} and dtype "
                    f"{got.dtype}; calling {self.name} without the rule gives shape {want.shape} "
                    f"and dtype {want.dtype}",
                )
            elif not _forward_close(got, want):
                self.report(
                    ("forward", j),
                    f"forward value: through the rule, {which} differs from calling {self.name} "
                    f"on plain ndarrays without the rule:\n"
                    f"  through the rule: {np.array2string(got, separator=', ')}\n"
                    f"  without the rule: {np.array2string(want, separator=', ')}",
                )
        for k, after in enumerate(forward.arguments_after):
            before = np.asarray(fresh_copy(self.args[k]))
            if after is not None and not np.array_equal(after, before, equal_nan=True):
                self.report(
                    ("writes argument", k),
                    f"the forward pass wrote into {self.label(k)}: it was "
                    f"{np.array2string(before, separator=', ')} and became "
                    f"{np.array2string(after, separator=', ')}. A rule (and the function a "
                    "defvjp rule calls) receives the arrays' own memory and must not modify it: "
                    "the engine cannot see writes made inside a rule, so versions, captures and "
                    "other gradients go wrong. Fix: compute into a new array (y = x * 2, "
                    "not x *= 2), or copy the argument first.",
                )

    def check_outcome(self, outcome: _Outcome, active: tuple[int, ...]) -> None:
        """The pullback against finite differences, and structural zeros."""
        if outcome.error is not None:
            self.report_error(outcome.error, active)
            return
        assert outcome.grads is not None
        alone = len(active) == 1 and len(self.wrt) > 1
        for k in active:
            got = outcome.grads[k]
            problem = self.reference.compare(k, got, self.label(k), self.atol, self.rtol)
            if problem is None:
                continue
            context = (
                f" (differentiating {self.label(k)} alone; the other arguments are constants)"
                if alone
                else ""
            )
            self.report(
                ("pullback", k),
                self._structural_zero_note(k, got)
                + f"pullback vs finite differences{context}, {self._cotangent_text()}: "
                f"{problem}\n" + reference_line(self.precision, self.atol),
            )

    def _cotangent_text(self) -> str:
        """The output cotangent, printed (summarised beyond a dozen elements), and where from."""
        shown = [
            np.array2string(dy, separator=", ", precision=6, threshold=12, edgeitems=3)
            for dy in self.cotangents
        ]
        text = ", ".join(shown) if self.tuple_output else shown[0]
        origin = (
            f"standard normal, seed={self.seed}; pass output_cotangent= to choose it"
            if self.drawn_cotangent
            else "output_cotangent"
        )
        return f"output cotangent dy = {text} ({origin})"

    def _structural_zero_note(self, k: int, got: Any) -> str:
        reference = self.reference.derivative(k)
        if reference is None:
            return (
                f"{self.label(k)} has no derivative, but the pullback returns a nonzero cotangent "
                "for it. Fix: return mutagrad.NoTangent() for it.\n"
            )
        if got is None:
            return (
                f"the pullback returns no cotangent for {self.label(k)} (None or NoTangent(): "
                "the engine drops both without complaint, and gradient() reports None), but its "
                "derivative is not zero. Fix: return its cotangent. NoTangent() is only right "
                "for an argument without a derivative (an integer index, a flag), and "
                "ZeroTangent() only where the derivative is zero.\n"
            )
        if not np.any(_numbers(got)):
            return (
                f"the pullback returns a zero cotangent for {self.label(k)} (ZeroTangent() or "
                "zeros), but its derivative is not zero. Fix: return its cotangent.\n"
            )
        return ""

    def report_error(self, error: BaseException, active: tuple[int, ...]) -> None:
        where = _where_raised(error)
        where_text = f"\nraised at {where}" if where else ""
        message = f"{type(error).__name__}: {error}"
        alone = (
            f" with only {self.label(active[0])} differentiated (the other arguments constants)"
            if len(active) == 1 and len(self.wrt) > 1
            else ""
        )
        if isinstance(error, NotDifferentiableError) and "no derivative with respect" in str(error):
            fix = (
                "The rule has no vjp (None) for a differentiated argument, so the engine refuses "
                "it. Fix: give that argument a vjp if it has a derivative; if it has none, leave "
                "it out of wrt= (integers, booleans and strings are left out by default)."
            )
        elif isinstance(error, MutagradError) and "cotangents for" in str(error):
            fix = (
                "Fix: the pullback must return one cotangent per positional argument "
                "(NoTangent() for those without a derivative), optionally preceded by "
                "NoTangent() for the function itself."
            )
        elif "Meta" in str(error):
            fix = self._meta_fix(active)
        elif "NoneType" in str(error) and self._ans_undeclared(active):
            fix = (
                "A vjp used the output (ans), which is None because no vjp of a differentiated "
                "argument lists mutagrad.ANS in its reads. Fix: add mutagrad.ANS to reads[k] of "
                "the vjp that reads the output."
            )
        elif isinstance(error, ValueError) and "read-only" in str(error):
            fix = (
                "The rule wrote into one of its arguments. The engine hands rules read-only "
                "views of traced arrays, since such a write would bypass their version "
                "counters. Fix: compute into a new array (y = 2 * x, or x.copy() first)."
            )
        elif "unbroadcast" in str(error) or "does not broadcast" in str(error):
            fix = (
                "The pullback returned a cotangent whose shape does not match its argument. "
                "Fix: return one cotangent with each argument's shape."
            )
        else:
            fix = "The rule (or fn) raised while the engine differentiated it."
        self.report(
            ("error", type(error), str(error)),
            f"differentiating through the rule{alone} raised {message}{where_text}\n{fix}",
        )

    def _declared(self, active: tuple[int, ...]) -> tuple[set[int], bool]:
        rule = self.registered.rule
        assert isinstance(rule, VjpRule)
        positions: set[int] = set()
        ans = False
        for k in active:
            for item in _reads_of(rule, k):
                if item == ANS:
                    ans = True
                else:
                    positions.add(int(item))
        return positions, ans

    def _ans_undeclared(self, active: tuple[int, ...]) -> bool:
        return isinstance(self.registered.rule, VjpRule) and not self._declared(active)[1]

    def _meta_fix(self, active: tuple[int, ...]) -> str:
        stand_in = "a Meta stand-in (shape and dtype only)"
        rule = self.registered.rule
        if not isinstance(rule, VjpRule):
            return f"A vjp received {stand_in} for an argument its reads do not list."
        declared, _ = self._declared(active)
        missing = [
            k
            for k, a in enumerate(self.args)
            if isinstance(fresh_copy(a), np.ndarray) and k not in declared
        ]
        reads_text = ", ".join(f"reads[{k}]={_reads_of(rule, k)!r}" for k in active)
        return (
            f"A vjp received {stand_in} in place of an array its reads declaration leaves "
            f"out ({reads_text}; arrays not saved: "
            f"{', '.join(self.label(k) for k in missing) or 'none'}). The engine saves exactly "
            "what the vjps of the differentiated arguments declare, so a vjp that reads an "
            "undeclared argument only works while another differentiated argument's vjp "
            "happens to declare it. Fix: add the argument position to reads[k] of the vjp "
            "that reads it."
        )

    def check_overwrites(self, active: tuple[int, ...], baseline: _Outcome) -> None:
        """Overwrite each array, then the output, and call fn again, after the forward pass."""
        arrays = [i for i, a in enumerate(self.args) if isinstance(fresh_copy(a), np.ndarray)]
        targets: list[_Disturbance] = [("argument", i) for i in arrays]
        targets += [("output", -1), ("second call", -1)]
        for target in targets:
            poisoned = self.run(active, "poison", target)
            if poisoned.skipped:
                continue
            if isinstance(poisoned.error, PoisonedCaptureError):
                snapshot = self.run(active, "snapshot", target)
                if not isinstance(snapshot.error, SnapshotUnavailableError):
                    self._judge(active, target, baseline, snapshot, "snapshot")
                continue
            self._judge(active, target, baseline, poisoned, "poison")

    def _judge(
        self,
        active: tuple[int, ...],
        target: _Disturbance,
        baseline: _Outcome,
        outcome: _Outcome,
        mode: str,
    ) -> None:
        assert baseline.grads is not None
        what = self._describe_target(target, active)
        expected = (
            "instead of giving the same gradient or raising PoisonedCaptureError"
            if mode == "poison"
            else "although snapshot mode copies what pullbacks read before a write"
        )
        when = "after the forward pass" if mode == "poison" else "in snapshot mode"
        if outcome.error is not None:
            where = _where_raised(outcome.error)
            self.report(
                ("overwrite", target, mode),
                f"{when}, {what} made the pullback raise {type(outcome.error).__name__}: "
                f"{outcome.error}" + (f"\nraised at {where}" if where else "") + f"\n{expected}: "
                "the pullback reads memory that the write changed.\n" + self._fix(target, active),
            )
            return
        assert outcome.grads is not None
        changed = _same_answer(baseline.grads, outcome.grads)
        if changed:
            details = "; ".join(
                f"{self.label(k)}, {_worst_change(baseline.grads[k], outcome.grads[k])}"
                for k in changed
            )
            self.report(
                ("overwrite", target, mode),
                f"{when}, {what} changed the gradient {expected} ({details}). The pullback reads "
                "memory the engine does not track.\n" + self._fix(target, active),
            )

    def _describe_target(self, target: _Disturbance, active: tuple[int, ...]) -> str:
        what, i = target
        if what == "argument":
            kind = "a traced array" if i in active else "a plain ndarray constant"
            return f"overwriting {self.label(i)} in place ({kind})"
        if what == "output":
            return "overwriting the output in place"
        return f"calling {self.name} again with other arguments"

    def _fix(self, target: _Disturbance, active: tuple[int, ...]) -> str:
        what, i = target
        kind = self.registered.kind
        if kind == "numpy":
            return (
                f"This is a defect of mutagrad's own rule for {self.name}; please report it "
                "with this message."
            )
        if what == "second call":
            return (
                "The rule keeps state between calls (a cache or scratch buffer shared by calls) "
                "and its pullback reads it, so a later call changes an earlier call's gradient. "
                "Fix: allocate per call whatever the pullback reads, or hand it to the vjp "
                "through its arguments and output."
            )
        read = f"argument {i}" if what == "argument" else "the output"
        declare = str(i) if what == "argument" else "mutagrad.ANS"
        if kind == "rrule":
            if what == "argument" and i not in active:
                return (
                    f"The rrule's pullback holds {self.label(i)}, a plain ndarray, without a "
                    "copy: mutagrad copies plain ndarrays a pullback reads only for defvjp rules, "
                    "whose reads it knows. Fix: copy it in the rule before the pullback closes "
                    f"over it ({{name}} = np.array({{name}})), or register the rule with "
                    "mutagrad.defvjp(..., reads=...)."
                ).replace("{name}", _parameter_name(self.label(i)))
            return (
                f"The pullback reads {read} through something the engine does not see (a "
                "global, a cache, an attribute) rather than through the rule's own arguments and "
                "output, which the engine saves for a closure. Fix: let the pullback close over "
                "the rule's arguments and output only."
            )
        rule = self.registered.rule
        reads = ""
        if isinstance(rule, VjpRule):
            reads = "; now " + ", ".join(f"reads[{k}]={_reads_of(rule, k)!r}" for k in active)
        return (
            f"A vjp reads {read} without declaring it: it reaches it through a closure, a global "
            "or a cache instead of its own parameter, so the engine neither saved it nor can "
            f"tell that it changed. Fix: read it through the vjp's parameter and list {declare} "
            f"in reads[k] of that vjp{reads}."
        )


def _reads_of(rule: VjpRule, k: int) -> tuple[Any, ...]:
    return tuple(rule.reads[k]) if k < len(rule.reads) else ()


def _numbered(n: int, problem: str) -> str:
    """``n. problem``, prose wrapped and indented under the number; array lines kept whole."""
    lines = []
    for k, line in enumerate(problem.split("\n")):
        first = f"{n}. " if k == 0 else "   "
        if line.startswith("  "):
            lines.append("   " + line)
        else:
            lines.append(textwrap.fill(line, 96, initial_indent=first, subsequent_indent="   "))
    return "\n".join(lines)


def _display_name(fn: Any) -> str:
    """``np.sin``, ``np.linalg.solve``, or a user function's own name."""
    if isinstance(fn, np.ufunc):
        return f"np.{fn.__name__}"
    if (getattr(fn, "__module__", "") or "").startswith("numpy"):
        return function_name(fn)
    return getattr(fn, "__name__", None) or repr(fn)


def _parameter_name(label: str) -> str:
    return label.split("(")[1].rstrip(")") if "(" in label else "c"


def check_rule(
    fn: Callable[..., Any],
    *args: Any,
    fn_kwargs: dict[str, Any] | None = None,
    wrt: Sequence[int] | None = None,
    output_cotangent: Any = None,
    atol: float | None = None,
    rtol: float | None = None,
    eps: float | None = None,
    check_overwrites: bool = True,
    elementwise_limit: int = ELEMENTWISE_LIMIT,
    directions: int = 3,
    seed: int = 0,
) -> RuleCheck:
    """Check the rule registered for ``fn`` at ``args``; raise ``AssertionError`` listing problems.

    ``fn`` is a ``mutagrad.primitive`` with a ``defvjp``/``rrule`` rule, or a
    numpy function or ufunc (mutagrad's own rule, or one registered for it).
    ``fn_kwargs`` are passed to every call. ``wrt`` lists the argument
    positions to differentiate (default: the floating-point ones); the other
    arguments are passed as plain constants, as when a caller closes over
    them. ``output_cotangent`` is ``dy`` (default: random normal, seeded by
    ``seed``; a report prints it). ``atol``/``rtol``/``eps``/``elementwise_limit``/
    ``directions`` configure the finite-difference comparison as in
    :func:`check_gradient`, whose defaults follow the arguments' precision: a
    float32 rule's pullback is compared with differences taken in float64.
    ``check_overwrites=False`` skips the overwrite checks.

    See the module docstring for what is checked. Returns a :class:`RuleCheck`
    with the cotangent used and the vector-Jacobian product.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper
    checker = _RuleChecker(
        fn,
        args,
        fn_kwargs,
        wrt,
        output_cotangent,
        atol,
        rtol,
        eps,
        elementwise_limit,
        directions,
        seed,
    )
    return checker.check(check_overwrites)
