"""numpy's protocols on WrappedArrays: how a numpy call reaches its rule.

``WrappedValue.__array_ufunc__`` and ``__array_function__`` (numpy's NEP 13
and NEP 18 hooks) take their fast paths in :mod:`mutagrad.core.wrapped` and
hand everything else to :func:`array_ufunc` and :func:`array_function`
here, through the array's method table. From there a call goes to

* its rule: :func:`apply` runs the rule's numpy function on the raw data and
  records it (:mod:`mutagrad.core.record`) when an argument is traced;
* a numpy function with no derivative: :func:`call_without_derivative` runs it
  on read-only views, so it cannot write a WrappedArray behind its version;
* numpy's own Python implementation, traced through (:func:`trace_through`);
* or a MissingRuleError naming the function and the fix.

A rule's function that is not ``trusted`` (a user's) runs under
:func:`refusing_writes_by` on :func:`guarded_arguments`, and its result is
checked not to alias its inputs (:func:`unaliased`).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import numpy as np

from mutagrad.core import engine
from mutagrad.core.engine import STATE, Node, VjpRule
from mutagrad.core.messages import function_name, missing_rule_message
from mutagrad.core.record import owned_value, record, save_output
from mutagrad.core.sites import describe_site, format_site, innermost_user_site, user_site
from mutagrad.core.wrapped import (
    FUNCTION_RULES,
    METHOD_RULES,
    NONDIFFERENTIABLE,
    UFUNC_RULES,
    WrappedArray,
    WrappedValue,
    any_active,
    array_like,
    array_method,
    check_plain,
    holds_wrapped,
    operand,
    truncates,
    unwrap,
    wrap,
    wrap_constant,
)
from mutagrad.errors import (
    MissingRuleError,
    MutagradError,
    NotDifferentiableError,
    TracerConversionError,
)


@array_method("array_ufunc")
def array_ufunc(
    ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``ufunc.method(*inputs, **kwargs)`` on traced values, past the operator fast path."""
    if method == "at":
        return METHOD_RULES["ufunc.at"](ufunc, *inputs, **kwargs)
    out = kwargs.get("out")
    if out is not None:
        return METHOD_RULES["ufunc_with_out"](ufunc, method, inputs, kwargs)
    key = ufunc if method == "__call__" else (ufunc, method)
    rule = UFUNC_RULES.get(key)
    if kwargs:
        kwargs = unwrap(kwargs)  # a traced where= mask is just data to numpy
    if rule is not None:
        if method == "__call__" and "where" in kwargs and any_active(inputs):
            raise NotDifferentiableError(
                f"{ufunc.__name__}(..., where=...) without out= leaves unwritten elements "
                "uninitialised.\nFix: pass out= (an array holding the other values), or "
                "use np.where(mask, result, other)."
            )
        return apply(rule, inputs, kwargs or None)
    if key in NONDIFFERENTIABLE or not any_active(inputs):
        return call_without_derivative(getattr(ufunc, method), inputs, kwargs)
    if METHOD_RULES["rules_on_first_use"](key):  # SciPy's, registered when first met
        return array_ufunc(ufunc, method, inputs, kwargs)
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    raise MissingRuleError(missing_rule_message(f"np.{name}"))


@array_method("array_function")
def array_function(func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    """``func(*args, **kwargs)``, a numpy function called on traced values (NEP 18)."""
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


def _wrapped_arrays(values: Any) -> list[WrappedArray]:
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


def call_without_derivative(func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    """Run ``func`` on the data; results are constants (views stay views).

    An ``out=`` WrappedArray is written through the mutation machinery, so
    its version and the captures on it see the write.
    """
    if _wrapped_out(kwargs.get("out")):
        kwargs = dict(kwargs)
        out = kwargs.pop("out")
        result = call_without_derivative(func, args, kwargs)
        return METHOD_RULES["assign_out"](result, out, f"{function_name(func)}(..., out=)")
    result = func(*_read_only(tuple(args)), **_read_only(kwargs))
    wrapped = tuple(_wrapped_arrays(args))
    return wrap_constant(result, wrapped, tuple(w._raw for w in wrapped))


@array_method("apply")
def apply(
    rule: VjpRule,
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None = None,
    result: Any = None,
) -> Any:
    """Call ``rule.fun`` on the raw data of ``args`` and record it if any argument is active.

    ``result``, when given, is the already computed primal value.
    """
    if type(rule) is not VjpRule:
        return rule.call(args, kwargs)  # a user's closure rule (mutagrad.custom.ClosureRule)
    trace = STATE.get()
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
            if type(a) is not np.ndarray and isinstance(a, np.ndarray):
                check_plain(a)
            raw.append(a)
            nodes.append(None)
    if result is None:
        if rule.trusted:
            result = rule.fun(*raw, **kwargs) if kwargs else rule.fun(*raw)
        else:
            with refusing_writes_by(rule.name):
                result = rule.fun(*guarded_arguments(args, raw), **(kwargs or {}))
            result = unaliased(result, raw)
    if not active or truncates(result, raw, nodes):
        return wrap_constant(result, args, raw)
    assert trace is not None
    node, need_ans = record(rule, args, raw, nodes, result, kwargs, trace, user_site())
    out = wrap(result, node)
    if need_ans:
        save_output(node, out, trace.mode)
    return out


# How engine.call_rule records a rule applied to a traced value: the value's type says.


def guarded_arguments(args: Any, raw: list[Any]) -> list[Any]:
    """What a user's rule receives: read-only views of traced arrays' memory (its
    writes would bypass their versions) and private copies of raw ndarrays (the
    rule may keep them for its pullback, and nothing tracks writes to them)."""
    guarded = []
    for a, r in zip(args, raw):
        if type(r) is np.ndarray:
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


def unaliased(result: Any, raw: list[Any]) -> Any:
    """A user rule's output, copied if it shares memory with an argument.

    Wrapped as a new array, an alias would let a write to the output change
    the argument behind its version counter.
    """
    if type(result) is np.ndarray:
        for r in raw:
            if type(r) is np.ndarray and np.may_share_memory(result, r):
                return result.copy()
    return result


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
