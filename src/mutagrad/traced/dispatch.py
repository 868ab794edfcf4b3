"""numpy's protocols and the Python operators on traced values: how a call reaches its rule.

:func:`array_ufunc` and :func:`array_function` are the types'
``__array_ufunc__`` and ``__array_function__`` (numpy's NEP 13 and NEP 18
hooks), and :func:`operator_methods` their ``__add__``, ``__mul__``...; the
room's door, :mod:`mutagrad.traced`, binds them. A call goes to

* a ufunc with one or two operands and no keywords (every operator, and
  ``np.tanh(x)``): :func:`binary` and :func:`unary`, the fast path, which
  record it through :func:`~mutagrad.core.record.record2`/``record1``;
* its rule: :func:`apply`, the general path, runs the rule's numpy function on
  the raw data and records it (:func:`~mutagrad.core.record.record`) when an
  argument is traced (``tests/core/test_fast_paths.py`` runs both on the same
  inputs);
* a numpy function with no derivative: :func:`call_without_derivative` runs it
  on read-only views, so it cannot write a WrappedArray behind its version;
* numpy's own Python implementation, traced through (:func:`trace_through`);
* or a MissingRuleError naming the function and the fix.

A rule's function that is not ``trusted`` (a user's) runs under
:func:`refusing_writes_by` on :func:`guarded_arguments`; a result that shares
an argument's memory stays numpy's view of it (:mod:`mutagrad.traced.aliases`).
"""

from __future__ import annotations

import contextlib
import inspect
import operator
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from sys import _getframe, getrefcount
from typing import Any

import numpy as np
from numpy import float64, ndarray  # (by name: see mutagrad.core.record)

from mutagrad.core import engine
from mutagrad.core.engine import RUNNING, CallRule, Node, VjpRule, current_trace
from mutagrad.core.record import owned_value, record, record1, record2, save_output
from mutagrad.core.registry import (
    FUNCTION_RULES,
    NONDIFFERENTIABLE,
    UFUNC_RULES,
    rule_found_on_miss,
)
from mutagrad.diagnostics.messages import (
    PLAIN_SUBCLASSES,
    conversion_message,
    function_name,
    missing_rule_message,
    subclass_message,
)
from mutagrad.diagnostics.sites import (
    describe_site,
    format_site,
    innermost_user_site,
    user_site,
    user_site_from,
)
from mutagrad.errors import (
    MissingRuleError,
    MutagradError,
    NotDifferentiableError,
    TracerConversionError,
)
from mutagrad.traced import mutation
from mutagrad.traced.aliases import (
    aliased_output,
    held_elsewhere,
    shared_argument,
    unowned_output,
    writable_view,
)
from mutagrad.traced.elision import (
    ELIDED,
    MIN_ELIDED_BYTES,
    TEMPORARY_REFERENCES,
    into_temporary,
)
from mutagrad.traced.forward import forward_result
from mutagrad.traced.value import (
    PLAIN_OPERANDS,
    WrappedArray,
    WrappedScalar,
    WrappedValue,
    any_active,
    array_like,
    check_plain,
    holds_wrapped,
    is_active,
    operand,
    tangents_among,
    truncates,
    unwrap,
    wrap,
    wrap_constant,
)


def binary(ufunc: np.ufunc, pyop: Any, a: Any, b: Any) -> Any:
    """``a <op> b`` where at least one side is a WrappedArray (the operator fast path).

    The same as ``apply`` followed by ``record``, unrolled for two operands:
    every arithmetic operator in a traced loop comes through here.
    """
    trace = current_trace()
    tape = trace.tape if trace is not None else None
    # operand, inlined for the common case of a traced value that is not a view (told by
    # its type: isinstance of anything else looks up its __class__).
    kind = type(a)
    if (kind is WrappedArray or kind is WrappedScalar) and a._base is None and tape is not None:
        ra = a._raw
        na = a._node
        if na is not None and na.tape is not tape:
            na = None
    else:
        ra, na = operand(a, tape)
    kind = type(b)
    if (kind is WrappedArray or kind is WrappedScalar) and b._base is None and tape is not None:
        rb = b._raw
        nb = b._node
        if nb is not None and nb.tape is not tape:
            nb = None
    elif kind in PLAIN_OPERANDS:  # (operand's first test: x ** 2, x * 0.5)
        rb, nb = b, None
    else:
        rb, nb = operand(b, tape)
    result = pyop(ra, rb)
    kind = type(result)
    if kind is complex:
        # 1j * np.float64(x): Python's complex.__mul__ answers first, with a Python
        # complex (np.float64 is a float, not a complex); the node needs a dtype.
        result = np.complex128(result)
    if na is None and nb is None and not (
        trace is not None and trace.forward and tangents_among((a, b), trace.forward)
    ):
        return wrap_constant(result, (a, b), (ra, rb))
    # (truncates' first test, spelled out: a float64 scalar or float array never truncates)
    floating = kind is float64 or (kind is ndarray and result.dtype.kind == "f")
    if not floating:
        if kind is bytes:
            # b"ab" + v: Python's concatenation read the traced scalar's memory (its
            # buffer), as bytes(v) would (refused: bytes carry no gradient).
            raise TracerConversionError(conversion_message("bytes concatenation"))
        if truncates(result, (ra, rb), (na, nb)):
            return wrap_constant(result, (a, b), (ra, rb))
    rule = UFUNC_RULES.get(ufunc)
    if type(rule) is not VjpRule:
        if rule is not None:
            return rule.call((a, b), None)
        if ufunc in NONDIFFERENTIABLE:
            return wrap_constant(result, (a, b), (ra, rb))
        if rule_found_on_miss(ufunc):  # SciPy's, registered when first met
            return binary(ufunc, pyop, a, b)
        raise MissingRuleError(missing_rule_message(f"np.{ufunc.__name__}"))
    assert trace is not None
    if na is None and nb is None:  # forward levels only: nothing to record
        return forward_result(rule, (a, b), (ra, rb), wrap(result), None, trace)
    # Frame 1 is an operator or __array_ufunc__; frame 2 the user's, usually.
    # (An operand has a node on the trace's tape: trace is not None.)
    node, need_ans = record2(rule, a, b, ra, rb, na, nb, result, None, trace,
                             user_site_from(_getframe(2)))  # fmt: skip
    out = WrappedArray(result, node) if kind is ndarray else WrappedScalar(result, node)
    if need_ans:
        save_output(node, out, trace.mode)
    if trace.forward:
        forward_result(rule, (a, b), (ra, rb), out, None, trace)
    return out


def unary(ufunc: np.ufunc, pyop: Any, a: WrappedArray) -> Any:
    """``<op> a`` or ``ufunc(a)``: :func:`binary` for one operand."""
    trace = current_trace()
    ra, na = operand(a, trace.tape if trace is not None else None)
    result = pyop(ra)
    kind = type(result)
    if na is None and not (
        trace is not None and trace.forward and tangents_among((a,), trace.forward)
    ):
        return wrap_constant(result, (a,), (ra,))
    floating = kind is float64 or (kind is ndarray and result.dtype.kind == "f")  # (as in binary)
    if not floating and truncates(result, (ra,), (na,)):
        return wrap_constant(result, (a,), (ra,))
    rule = UFUNC_RULES.get(ufunc)
    if type(rule) is not VjpRule:
        if rule is not None:
            return rule.call((a,), None)
        if ufunc in NONDIFFERENTIABLE:
            return wrap_constant(result, (a,), (ra,))
        if rule_found_on_miss(ufunc):  # as in binary
            return unary(ufunc, pyop, a)
        raise MissingRuleError(missing_rule_message(f"np.{ufunc.__name__}"))
    assert trace is not None
    if na is None:  # forward levels only: nothing to record
        return forward_result(rule, (a,), (ra,), wrap(result), None, trace)
    site = user_site_from(_getframe(2))  # as in binary
    # (a has a node on the trace's tape: trace is not None)
    node, need_ans = record1(rule, a, ra, na, result, None, trace, site)
    out = WrappedArray(result, node) if kind is ndarray else WrappedScalar(result, node)
    if need_ans:
        save_output(node, out, trace.mode)
    if trace.forward:
        forward_result(rule, (a,), (ra,), out, None, trace)
    return out



def array_ufunc(self: WrappedValue, ufunc: np.ufunc, method: str, *inputs: Any,
                **kwargs: Any) -> Any:  # fmt: skip
    """``__array_ufunc__``: ``ufunc.method(*inputs, **kwargs)`` with a traced value among them."""
    if method == "__call__" and not kwargs:
        # np.tanh(x), np.add(x, y): the same fast path as the operators.
        if len(inputs) == 2:
            return binary(ufunc, ufunc, inputs[0], inputs[1])
        if len(inputs) == 1:
            return unary(ufunc, ufunc, inputs[0])
    return ufunc_method(ufunc, method, inputs, kwargs)


def ufunc_method(
    ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``ufunc.method(*inputs, **kwargs)`` on traced values, past the operator fast path."""
    if method == "at":
        return FUNCTION_RULES[np.ufunc.at](ufunc, *inputs, **kwargs)  # (rules.inplace)
    out = kwargs.get("out")
    if out is not None:
        return mutation.ufunc_with_out(ufunc, method, inputs, kwargs)
    key = ufunc if method == "__call__" else (ufunc, method)
    rule = UFUNC_RULES.get(key)
    traced_initial = False
    if kwargs:
        # A traced where= mask is just data to numpy; a traced initial= of a reduce is a
        # value with a derivative, which its rule (rules.ufunc_methods) takes as such.
        initial = kwargs.get("initial")
        kwargs = unwrap(kwargs)
        if isinstance(initial, WrappedValue) and is_active(initial):
            kwargs["initial"] = initial
            traced_initial = True
    if rule is not None:
        if (
            method == "__call__"
            and "where" in kwargs
            and (traced_initial or any_active(inputs))
        ):
            raise NotDifferentiableError(
                f"{ufunc.__name__}(..., where=...) without out= leaves unwritten elements "
                "uninitialised.\nFix: pass out= (an array holding the other values), or "
                "use np.where(mask, result, other)."
            )
        return apply(rule, inputs, kwargs or None)
    if key in NONDIFFERENTIABLE or not (traced_initial or any_active(inputs)):
        return call_without_derivative(getattr(ufunc, method), inputs, kwargs)
    if rule_found_on_miss(key):  # SciPy's, registered when first met; a method derived
        return ufunc_method(ufunc, method, inputs, kwargs)
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    _raise_numpy_s_own_error(getattr(ufunc, method), inputs, kwargs)
    raise MissingRuleError(missing_rule_message(f"np.{name}"))


def _raise_numpy_s_own_error(call: Any, args: Any, kwargs: dict[str, Any]) -> None:
    """Raise the error numpy raises for ``call`` on plain copies of the data, if it does
    (``np.sin.reduce``: a method a ufunc of one input does not have)."""
    try:
        call(*owned_value(unwrap(tuple(args))), **owned_value(unwrap(kwargs)))
    except Exception as error:
        raise error from None


def array_function(self: WrappedValue, func: Any, types: Any, args: Any,
                   kwargs: dict[str, Any]) -> Any:  # fmt: skip
    """``__array_function__``: ``func(*args, **kwargs)``, a numpy function on traced values:
    its rule, numpy without a derivative, or traced through."""
    if len(types) > 1:  # another array type among the arguments (np.ma, np.matrix)
        for kind in types:
            if kind is not ndarray and issubclass(kind, ndarray) and (
                kind not in PLAIN_SUBCLASSES
            ):
                raise NotDifferentiableError(subclass_message(kind, "an argument"))
    try:
        adapter = FUNCTION_RULES.get(func)
        if adapter is not None:
            return adapter(*args, **kwargs)
        if func in NONDIFFERENTIABLE or not (any_active(args) or any_active(kwargs.values())):
            return call_without_derivative(func, args, kwargs)
        impl = getattr(func, "_implementation", None)
        if impl is not None and inspect.isfunction(impl):
            return trace_through(func, impl, args, kwargs)
    except MutagradError:
        raise
    except Exception as error:
        raise_as_numpy_would(function_name(func), func, args, kwargs, error)
    raise MissingRuleError(missing_rule_message(function_name(func)))


def _wrapped_arrays(values: Any) -> list[WrappedValue]:
    found = []
    for v in values:
        if isinstance(v, WrappedValue):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(item for item in v if isinstance(item, WrappedValue))
    return found


def _read_only(value: Any) -> Any:
    """Like :func:`unwrap`, but arrays come as read-only views.

    A numpy function reached without a rule must not write into a
    WrappedArray's memory behind its version counter: if it tries, numpy
    raises "assignment destination is read-only" instead.
    """
    if isinstance(value, WrappedValue):
        return engine.read_only(value._raw)
    if type(value) in (list, tuple):
        return type(value)(_read_only(v) for v in value)
    if type(value) is dict:
        return {k: _read_only(v) for k, v in value.items()}
    return value


def _wrapped_out(value: Any) -> bool:
    """Whether an ``out=`` value (an array, or a tuple of arrays as numpy takes it) is ours.

    Not :func:`holds_wrapped`: numpy takes no list or nested sequence for ``out=``.
    """
    if isinstance(value, WrappedValue):
        return True
    return isinstance(value, tuple) and any(isinstance(v, WrappedValue) for v in value)


def call_without_derivative(
    func: Any, args: Any, kwargs: dict[str, Any], users: bool = False
) -> Any:  # fmt: skip
    """Run ``func`` on the data; results are constants (views stay views).

    An ``out=`` WrappedArray is written through the mutation machinery, so
    its version and the captures on it see the write. ``users``: ``func`` is a
    user's (non_differentiable), whose result may be memory it did not allocate
    (:func:`mutagrad.traced.aliases.held_elsewhere`).
    """
    if _wrapped_out(kwargs.get("out")):
        kwargs = dict(kwargs)
        out = kwargs.pop("out")
        result = call_without_derivative(func, args, kwargs, users)
        return mutation.assign_out(result, out, f"{function_name(func)}(..., out=)")
    result = func(*_read_only(tuple(args)), **_read_only(kwargs))
    unowned = users and held_elsewhere(result)
    wrapped = tuple(_wrapped_arrays(args))
    out = wrap_constant(result, wrapped, tuple(w._raw for w in wrapped))
    return unowned_output(out) if unowned else out


def apply(
    rule: VjpRule | CallRule,
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None = None,
    result: Any = None,
) -> Any:
    """Call ``rule.fun`` on the raw data of ``args`` and record it if any argument is active.

    ``result``, when given, is the already computed primal value.
    """
    if type(rule) is not VjpRule:
        return rule.call(args, kwargs)  # a user's closure rule (mutagrad.custom.ClosureRule)
    trace = current_trace()
    tape = trace.tape if trace is not None else None
    raw = []
    nodes: list[Node | None] = []
    active = False
    for a in args:
        if isinstance(a, WrappedValue):
            r, n = operand(a, tape)
            raw.append(r)
            if n is not None:
                active = True
            nodes.append(n)
        elif (type(a) is list or type(a) is tuple) and holds_wrapped(a):
            # A sequence of traced values where numpy takes an array: stack it
            # (and start again with the stacked array among the arguments).
            return apply(rule, tuple(array_like(b) for b in args), kwargs, result)
        else:
            if type(a) is not ndarray and isinstance(a, ndarray):
                check_plain(a)
            raw.append(a)
            nodes.append(None)
    source = None  # the argument whose memory a user's rule returned (numpy's view of it)
    unowned = False  # whether it returned memory something else holds (a global's...)
    if result is None:  # (a rule without fun is applied with its result: mypy cannot know)
        if rule.trusted:
            result = rule.fun(*raw, **kwargs) if kwargs else rule.fun(*raw)  # type: ignore[misc]
        else:
            guarded = guarded_arguments(args, raw)
            with refusing_writes_by(rule.name):
                result = rule.fun(*guarded, **(kwargs or {}))  # type: ignore[misc]
            source = shared_argument(rule.name, result, args, guarded)
            unowned = source is None and held_elsewhere(result)
    if (
        not active
        and not (trace is not None and trace.forward and tangents_among(args, trace.forward))
    ) or truncates(result, raw, nodes):
        if source is not None:
            result = writable_view(result, source)
        out = wrap_constant(result, args, raw)
        return unowned_output(out) if unowned else out
    assert trace is not None
    if not active:  # forward levels only: nothing to record
        out = wrap(result) if source is None else aliased_output(result, source, None, rule.name)
        if unowned:
            unowned_output(out)
        return forward_result(rule, args, raw, out, kwargs, trace)
    node, need_ans = record(rule, args, raw, nodes, result, kwargs, trace, user_site())
    out = wrap(result, node) if source is None else aliased_output(result, source, node, rule.name)
    if unowned:
        unowned_output(out)
    if need_ans:
        save_output(node, out, trace.mode)
    if trace.forward:
        forward_result(rule, args, raw, out, kwargs, trace)
    return out


def apply_one(
    rule: VjpRule, a: WrappedValue, kwargs: dict[str, Any] | None, result: Any
) -> Any:
    """:func:`apply` of one of mutagrad's rules to one traced value, ``result`` computed: the
    reductions' fast path (``np.sum(x)``, ``np.mean(x)``, which end nearly every loss).

    :func:`apply` unrolled for a recorded operation without forward levels; anything
    else goes there (``tests/core/test_fast_paths.py`` runs both on the same programs).
    """
    trace = current_trace()
    if trace is None or trace.forward:
        return apply(rule, (a,), kwargs, result)
    ra, na = operand(a, trace.tape)
    if na is None:
        return apply(rule, (a,), kwargs, result)
    kind = type(result)
    # (truncates' first test and wrap's, spelled out as in binary)
    floating = kind is float64 or (kind is ndarray and result.dtype.kind == "f")
    if not floating and truncates(result, (ra,), (na,)):
        return apply(rule, (a,), kwargs, result)
    node, need_ans = record1(rule, a, ra, na, result, kwargs, trace, user_site())
    out = (
        WrappedScalar(result, node) if kind is float64
        else WrappedArray(result, node) if kind is ndarray
        else wrap(result, node)
    )  # fmt: skip
    if need_ans:
        save_output(node, out, trace.mode)
    return out


def guarded_arguments(args: Any, raw: list[Any]) -> list[Any]:
    """What a user's rule receives: read-only views of traced arrays' memory (its
    writes would bypass their versions) and private copies of raw ndarrays (the
    rule may keep them for its pullback, and nothing tracks writes to them)."""
    guarded = []
    for a, r in zip(args, raw):
        if type(r) is ndarray:
            r = engine.read_only(r) if isinstance(a, WrappedValue) else r.copy()
        guarded.append(r)
    return guarded


@contextlib.contextmanager
def refusing_writes_by(name: str) -> Iterator[None]:
    """Turn numpy's "read-only" error from a user's rule into an explanation."""
    try:
        yield
    except ValueError as error:
        if "read-only" not in str(error):
            raise
        raise NotDifferentiableError(
            f"the rule for {name} wrote into one of its arguments, at\n"
            f"{format_site(innermost_user_site(error.__traceback__))}\n"
            "A rule cannot tell the tape about a write to its argument, so the engine hands "
            "rules read-only views.\nFix: write the rule for a version of the function that "
            "does not mutate its arguments, or give the mutating function no rule at all: "
            "mutagrad then traces its body, writes included."
        ) from error


def raise_as_numpy_would(
    name: str, func: Any, args: Any, kwargs: dict[str, Any], error: Exception
) -> None:
    """Re-raise ``error``, raised while ``func`` ran on traced arrays, as numpy would.

    If numpy raises too on the same call with plain copies of the data (a
    wrong shape, a bad keyword), the error is the program's: it propagates as
    it is. Otherwise mutagrad failed where numpy works, which must never pass
    for numpy's own error: it becomes a MutagradError naming the function.
    """
    try:
        func(*owned_value(unwrap(tuple(args))), **owned_value(unwrap(kwargs)))
    except Exception:
        raise error from None
    raise NotDifferentiableError(
        f"mutagrad could not run {name} on traced arrays, at\n"
        f"    {describe_site(user_site())}\n"
        f"(numpy runs it; mutagrad failed with {type(error).__name__}: {error}).\n"
        "Fixes: register a rule for it (mutagrad.defvjp / mutagrad.rrule), or, if no "
        "gradient should flow through it, pass mutagrad.ignore_derivatives(x)."
    ) from error


_TRACING_THROUGH: ContextVar[frozenset[Any]] = ContextVar("mutagrad_tracing_through",
                                                          default=frozenset())  # fmt: skip


def trace_through(func: Any, impl: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    """Differentiate ``func`` by running numpy's Python implementation on traced arrays.

    numpy functions that forward to a method of their argument (``np.cumsum``
    calls ``a.cumsum()``) would come straight back here: a function already
    being traced through is a missing rule, not a loop.
    """
    active = _TRACING_THROUGH.get()
    if func in active:
        raise MissingRuleError(missing_rule_message(function_name(func)))
    token = _TRACING_THROUGH.set(active | {func})
    try:
        return impl(*args, **kwargs)
    except TracerConversionError as error:
        raise MissingRuleError(
            missing_rule_message(function_name(func))
            + "\n(numpy's own implementation of it converts its input to a raw array, so "
            "mutagrad cannot trace through it.)"
        ) from error
    finally:
        _TRACING_THROUGH.reset(token)


def operator_methods() -> dict[str, Callable[..., Any]]:
    """The types' Python operators, by name: each a ufunc through :func:`binary`/:func:`unary`.

    ``x += v`` writes into ``x`` (:func:`mutagrad.traced.mutation.ufunc_into`); a
    WrappedScalar, immutable like a numpy scalar, rebinds instead.
    """
    methods: dict[str, Callable[..., Any]] = {}
    pyop: Callable[..., Any]  # (of two operands, then of one)
    arithmetic = [
        ("add", np.add, operator.add),
        ("sub", np.subtract, operator.sub),
        ("mul", np.multiply, operator.mul),
        ("truediv", np.true_divide, operator.truediv),
        ("floordiv", np.floor_divide, operator.floordiv),
        ("mod", np.remainder, operator.mod),
        ("pow", np.power, operator.pow),
        ("matmul", np.matmul, operator.matmul),
        ("and", np.bitwise_and, operator.and_),
        ("or", np.bitwise_or, operator.or_),
        ("xor", np.bitwise_xor, operator.xor),
        ("lshift", np.left_shift, operator.lshift),
        ("rshift", np.right_shift, operator.rshift),
    ]
    for name, ufunc, pyop in arithmetic:

        def forward(self, other, ufunc=ufunc, pyop=pyop):
            return binary(ufunc, pyop, self, other)

        def reflected(self, other, ufunc=ufunc, pyop=pyop):
            return binary(ufunc, pyop, other, self)

        def in_place(self, other, ufunc=ufunc, pyop=pyop):
            if not isinstance(self._raw, ndarray):
                return binary(ufunc, pyop, self, other)  # numpy scalars are immutable
            # Frame 1 is the user's, usually: the walk to the write's site starts there
            # (taken while a gradient call runs only, as in mutation.setitem).
            mutation.ufunc_into(ufunc, (self, other), self, {}, _getframe(1) if RUNNING else None)
            return self

        for prefix, fn in (("", forward), ("r", reflected), ("i", in_place)):
            fn.__name__ = f"__{prefix}{name}__"
            methods[fn.__name__] = fn
    for name, ufunc, pyop in [
        ("eq", np.equal, operator.eq),
        ("ne", np.not_equal, operator.ne),
        ("lt", np.less, operator.lt),
        ("le", np.less_equal, operator.le),
        ("gt", np.greater, operator.gt),
        ("ge", np.greater_equal, operator.ge),
    ]:

        def compare(self, other, ufunc=ufunc, pyop=pyop):
            return binary(ufunc, pyop, self, other)

        compare.__name__ = f"__{name}__"
        methods[compare.__name__] = compare
    one_operand: list[tuple[str, np.ufunc, Callable[..., Any]]] = [
        ("neg", np.negative, operator.neg),
        ("pos", np.positive, operator.pos),
        ("abs", np.absolute, operator.abs),
        ("invert", np.invert, operator.invert),
    ]
    for name, ufunc, pyop in one_operand:

        def one(self, ufunc=ufunc, pyop=pyop):
            return unary(ufunc, pyop, self)

        one.__name__ = f"__{name}__"
        methods[one.__name__] = one

    def divmod_(self, other):
        return np.divmod(self, other)

    methods["__divmod__"] = divmod_
    return methods


def eliding_operator_methods() -> dict[str, Callable[..., Any]]:
    """WrappedArray's ``+``, ``-``, ``*`` and ``**``: into a large temporary left operand's own
    memory where :mod:`mutagrad.traced.elision` proves it safe, else :func:`binary` (none
    where the interpreter's reference counts cannot tell a temporary)."""
    methods: dict[str, Callable[..., Any]] = {}
    for name, ufunc, pyop in [
        ("add", np.add, operator.add),
        ("sub", np.subtract, operator.sub),
        ("mul", np.multiply, operator.mul),
        ("pow", np.power, operator.pow),
    ]:
        if ufunc not in ELIDED:
            continue

        def forward(self, other, ufunc=ufunc, pyop=pyop):
            # The cheapest tests here, and the reference count in this frame: the one
            # TEMPORARY_REFERENCES was measured in.
            if self._raw.nbytes >= MIN_ELIDED_BYTES and getrefcount(self) == TEMPORARY_REFERENCES:
                out = into_temporary(ufunc, self, other)
                if out is not None:
                    return out
            return binary(ufunc, pyop, self, other)

        forward.__name__ = f"__{name}__"
        methods[forward.__name__] = forward
    return methods
