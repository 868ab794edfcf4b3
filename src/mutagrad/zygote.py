"""Zygote's names: ``gradient``, ``withgradient``, ``pullback``, ``ignore_derivatives``.

They keep Zygote's conventions: ``gradient`` returns a tuple with one entry per
argument (``None`` where no gradient flows), ``withgradient`` the value and
that tuple, ``pullback`` the value and ``back(dy)``. Each builds one
:class:`~mutagrad.call.GradientCall`. Zygote's ``jacobian(f, x)`` and
``hessian(f, x)`` share their names with the JAX-style transforms, which
decide by the call's form (:mod:`mutagrad.transforms`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from mutagrad.buffer import check_not_open_buffer
from mutagrad.call import (
    GradientCall,
    WithGradient,
    call_with_gradient,
    implicit_parameters,
    nested_output,
    owned_data,
)
from mutagrad.core.engine import STATE, Node, Trace, backward, collector_paused, current_trace
from mutagrad.core.tangents import cotangent_dtype
from mutagrad.core.trees import flatten
from mutagrad.diagnostics.tracebacks import api_boundary
from mutagrad.errors import MutagradError
from mutagrad.freezing import proving_boundary
from mutagrad.params import Grads
from mutagrad.traced.value import DETACHED, WrappedValue, make_view, node_of, wrap


@proving_boundary
def withgradient(
    f: Callable[..., Any], *args: Any, mode: str | None = None, **kwargs: Any
) -> WithGradient:
    """Return ``(val, grad)``: ``f(*args, **kwargs)`` and its gradient for each argument.

    If ``f`` returns a tuple, its first element is differentiated and ``val``
    is the whole tuple (the rest is auxiliary output), as in Zygote. Keyword
    arguments are passed to ``f`` and not differentiated.
    ``withgradient(lambda: loss(), ps)``, with ``ps`` a :class:`Params`,
    returns the gradient as :class:`Grads`.
    """
    return call_with_gradient(f, args, kwargs, mode, "withgradient")


@proving_boundary
def gradient(f: Callable[..., Any], *args: Any, mode: str | None = None, **kwargs: Any) -> Any:
    """The gradient of scalar-valued ``f`` with respect to each argument (Zygote's convention).

    Returns a tuple with one entry per argument, even for one argument
    (``gradient(f, x)[0]``): an array for array arguments, a float for Python
    numbers, ``None`` where no gradient flows (strings, ints used as axes or
    sizes, unused arguments). Keyword arguments are passed to ``f`` and not
    differentiated. ``mode`` selects how in-place writes are handled:
    "poison" (default), "strict" (Zygote's rule) or "snapshot".
    :func:`mutagrad.grad` is the same derivative in JAX's convention.

    ``gradient(lambda: loss(), ps)``, with ``ps`` a :class:`Params` of
    WrappedArrays that ``loss`` uses, returns :class:`Grads`: ``gs[W]``.
    """
    grad = call_with_gradient(f, args, kwargs, mode, "gradient").grad
    return grad if isinstance(grad, Grads) else tuple(grad)


class Pullback:
    """``back(dy)``: the vector-Jacobian product of a recorded call; callable many times."""

    def __init__(self, call: GradientCall, out: Any):
        self._call = call
        self._out = out
        if call.parent is None:  # a nested call's tape is the enclosing call's
            self._finalizer = weakref.finalize(self, call.tape.release)

    @api_boundary
    @collector_paused
    def __call__(self, dy: Any) -> Any:
        call = self._call
        outs, _ = flatten(self._out)
        seeds_in, _ = flatten(dy)
        if len(outs) != len(seeds_in):
            raise MutagradError(
                f"back expects {len(outs)} cotangent(s), one for each array or number f "
                f"returned, but got {len(seeds_in)}.\n"
                "Fix: pass dy with the structure of f's output (None for a part that gets none)."
            )
        if call.parent is not None:
            _check_enclosing_call_open(call.parent)
        seeds = []
        token = STATE.set(call.trace)
        try:
            for y, dy_leaf in zip(outs, seeds_in):
                if dy_leaf is not None and np.shape(dy_leaf) != np.shape(y):
                    raise MutagradError(
                        f"back(dy) needs dy shaped like the output of f, {np.shape(y)}, but "
                        f"got shape {np.shape(dy_leaf)}.\n"
                        "Fix: pass a cotangent of the output's shape, e.g. np.ones_like(y)."
                    )
                node = node_of(y, call.tape) if isinstance(y, WrappedValue) else None
                if node is not None and dy_leaf is not None:
                    seeds.append((node, _seed_of(dy_leaf, node)))
        finally:
            STATE.reset(token)
        bk = None
        if seeds:
            stop = call.stop_nodes()
            # Inside the enclosing call the sweep is recorded at the current level,
            # which differentiates it (dy and the captures may both be traced).
            recording = call.parent is not None
            # (Forward levels around put no bits in tags: every pullback is recorded.)
            everything = recording and bool(call.trace.forward)
            bk = backward(call.tape, seeds, call.start, call.trace.bit, stop, recording,
                          everything)  # fmt: skip
        grads = call.gradients(bk)
        return grads if isinstance(grads, Grads) else tuple(grads)


def _seed_of(dy: Any, node: Node) -> Any:
    """``dy`` as the cotangent of ``node``: cast to its cotangent dtype, still traced if it was."""
    dtype = cotangent_dtype(node.dtype)
    if isinstance(dy, WrappedValue):
        return dy if dy.dtype == dtype else dy.astype(dtype)
    return np.asarray(dy, dtype=dtype)


def _check_enclosing_call_open(parent: Trace) -> None:
    """Refuse a nested pullback's ``back`` once the gradient call around ``pullback`` returned.

    Its tape belongs to that call, and a sweep recorded at any other level would
    not be differentiated by it.
    """
    level = current_trace()
    while level is not None and level is not parent:
        level = level.parent
    if level is None:
        raise MutagradError(
            "back was called after the gradient call in which pullback (or vjp) ran had "
            "returned; its recorded operations belong to that call.\n"
            "Fix: call back inside that same call, or call pullback outside every gradient "
            "call."
        )


@proving_boundary
@collector_paused
def pullback(
    f: Callable[..., Any], *args: Any, mode: str | None = None, **kwargs: Any
) -> tuple[Any, Pullback]:
    """Return ``(y, back)``: ``y = f(*args, **kwargs)`` and ``back(dy)``, its pullback (VJP).

    Keyword arguments are passed to ``f`` and not differentiated.

    Array arguments are copied once, so ``back`` stays valid however the
    caller's arrays change afterwards; writes to WrappedArrays that ``y``'s
    pullback still reads poison it (``back`` then raises).
    ``pullback(lambda: loss(), ps)`` with ``ps`` a :class:`Params`: ``back``
    returns :class:`Grads`. Parameters are not copied: writing one that the
    pullback reads poisons it, as for any WrappedArray.
    """
    params = implicit_parameters(f, args, "pullback")
    call = GradientCall(args if params is None else (), mode, params=params, borrow=False)
    try:
        out = call.run(f, kwargs)
        check_not_open_buffer(out, "f")
    except BaseException:
        call.finish()
        raise
    call.release_parameter_claims()
    call.thaw()  # the arguments were copied: the caller's arrays are theirs again
    # Nested, back(dy) is recorded too: the enclosing call differentiates the pullback.
    return nested_output(out, call, owned_data), Pullback(call, out)


def ignore_derivatives(x: Any) -> Any:
    """A value, or the result of calling ``x()``, through which no gradient flows.

    ``ignore_derivatives(x)`` is a view of ``x`` that reads as a constant.
    ``ignore_derivatives(fn)`` calls ``fn()`` and returns its result as
    constants; writes ``fn`` makes to traced arrays are still recorded, so
    their effect on other values keeps its gradient.
    """
    if callable(x) and not isinstance(x, WrappedValue):
        return _detach_tree(x())
    return _detach_tree(x)


def _detach_tree(value: Any) -> Any:
    if isinstance(value, WrappedValue):
        data = value._raw
        if not isinstance(data, np.ndarray):
            return wrap(data)
        detached = make_view(value, data.view())
        detached._flags |= DETACHED
        return detached
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_detach_tree(v) for v in value)
    if isinstance(value, dict):
        return {k: _detach_tree(v) for k, v in value.items()}
    return value
