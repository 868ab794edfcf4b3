"""The differentiation API: ``gradient``, ``withgradient``, ``pullback``, ``mode``.

Each call wraps the array arguments in WrappedArrays with fresh input nodes,
runs ``f`` with a :class:`~mutagrad.core.engine.Trace` active, and sweeps the
tape backwards. The caller's arrays are never written: an argument ``f``
mutates is copied on its first write, and the caller's array is read-only
while the call runs so that a closure cannot change it behind the tape.

With implicit parameters (``gradient(lambda: loss(), ps)``, ``ps`` a
:class:`~mutagrad.params.Params`) nothing is wrapped: each parameter, a
WrappedArray the closure uses directly, gets a fresh input node on the call's
tape for the duration of the call, and the result is a
:class:`~mutagrad.params.Grads`.
"""

from __future__ import annotations

import contextlib
import inspect
import weakref
from collections import namedtuple
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import numpy as np

from mutagrad.buffer import check_not_open_buffer
from mutagrad.core.engine import (
    LEAF,
    MODE,
    MODES,
    STATE,
    ZERO,
    BackwardPass,
    Node,
    Rule,
    Tape,
    Trace,
    backward,
    collector_paused,
)
from mutagrad.core.tangents import SparseCotangent, cotangent_dtype, is_dense
from mutagrad.core.trees import flatten
from mutagrad.core.wrapped import (
    BORROWED,
    WrappedArray,
    WrappedValue,
    is_active,
    node_of,
    wrap,
)
from mutagrad.errors import MutagradError
from mutagrad.params import Grads, Params, claim_parameter, release_parameter


class IdentityRule(Rule):
    """An input of a nested gradient call, linked to the outer value it came from."""

    __slots__ = ()

    def backward(self, node: Node, g: Any, owned: bool, bk: BackwardPass) -> None:
        (outer,) = node.inputs
        if outer is not None and outer.tag & bk.bit:
            bk.accumulate(outer, g, owned)


IDENTITY = IdentityRule("input")


@contextlib.contextmanager
def mode(name: str) -> Iterator[None]:
    """Use mutation mode ``name`` ("poison", "strict" or "snapshot") inside the block."""
    _check_mode(name)
    token = MODE.set(name)
    try:
        yield
    finally:
        MODE.reset(token)


def _check_mode(name: str) -> None:
    if name not in MODES:
        raise ValueError(f"unknown mode {name!r}; choose one of {', '.join(MODES)}")


_WithGradientFields = namedtuple("WithGradient", ["val", "grad"])


class WithGradient(_WithGradientFields):
    """``(val, grad)``, with what the call copied to keep the gradient right.

    ``bytes_copied``: old data snapshot mode copied before writes.
    ``bytes_guarded``: raw ndarrays copied because a pullback reads them
    (wrap such a constant with ``mutagrad.array`` to avoid the copy).
    """

    bytes_copied: int = 0
    bytes_guarded: int = 0


def _is_differentiable_leaf(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (int, float, np.integer, np.floating, WrappedValue)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "iuf"


def _can_freeze(x: np.ndarray) -> bool:
    """Whether making ``x`` and the arrays it views read-only can be undone afterwards.

    numpy refuses to make a view writeable again while an array it views is
    read-only; so a writeable view of an array that is already read-only (an
    enclosing call froze it) is copied rather than borrowed.
    """
    seen_writeable = False
    a: Any = x
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            seen_writeable = True
        elif seen_writeable:
            return False
        a = a.base
    return True


class _Call:
    """One differentiation call: wrapped inputs, the trace, and the caller's arrays.

    With ``params`` (implicit parameters) the call has no arguments; each
    parameter gets an input node instead, and :meth:`gradients` returns Grads.
    Every gradient call builds one, so construction keeps to plain loops.
    """

    __slots__ = (
        "_claimed",
        "_rebound",
        "args",
        "borrowed",
        "frozen",
        "inputs",
        "leaves",
        "param_nodes",
        "params",
        "parent",
        "rebuild",
        "start",
        "tape",
        "trace",
    )

    def __init__(
        self,
        args: tuple[Any, ...],
        mode_name: str | None,
        copy_inputs: bool,
        params: Params | None = None,
    ):
        if mode_name is None:
            mode_name = MODE.get()  # mutagrad.mode() checked it
        else:
            _check_mode(mode_name)
        parent = self.parent = STATE.get()
        if parent is None:
            tape = Tape()
            trace = Trace(tape, 1, mode_name, None)
        else:
            tape = parent.tape
            trace = Trace(tape, parent.depth + 1, mode_name, parent)
        self.tape = tape
        self.trace = trace
        self.start = len(tape.nodes)
        self.frozen: list[np.ndarray] = []
        self.borrowed: list[WrappedArray] = []  # inputs sharing the caller's memory
        leaves, self.rebuild = flatten(args)
        self.leaves = leaves
        self.inputs: list[Node | None] = []
        self.args = self.rebuild([self._wrap(x, copy_inputs) for x in leaves])
        self.params = params
        self.param_nodes: list[Node] = []
        self._rebound: list[tuple[WrappedArray, Node | None, Node]] = []
        self._claimed: list[WrappedArray] = []
        if params:
            try:
                for w in params:
                    self.param_nodes.append(self._bind_parameter(w))
            except BaseException:
                self.finish()
                raise

    def _wrap(self, x: Any, copy_inputs: bool) -> Any:
        outer = None
        if type(x) is np.ndarray and x.dtype.kind in "iuf":
            flags = x.flags
            if (
                not copy_inputs
                and x.base is None
                and flags.writeable
                and (flags.c_contiguous or flags.f_contiguous)
            ):  # the common case, _freeze(x) spelled out: the caller's own array
                w = self._borrow(x)
                flags.writeable = False
                self.frozen.append(x)
            elif copy_inputs or not is_dense(x) or not _can_freeze(x):
                w = WrappedArray(np.copy(x))
            else:
                w = self._borrow(x)
                self._freeze(x)
        elif not _is_differentiable_leaf(x):
            self.inputs.append(None)
            return x
        elif isinstance(x, WrappedValue):
            outer = node_of(x, self.tape) if self.parent is not None else None
            w = wrap(np.copy(x._data) if isinstance(x._data, np.ndarray) else x._data)
        elif isinstance(x, np.ndarray):  # an ndarray subclass
            w = WrappedArray(np.array(x, copy=True))
        elif isinstance(x, (int, np.integer)):
            w = wrap(np.int64(x))
        else:
            w = wrap(np.float64(x) if isinstance(x, float) else x)
        data = w._data
        tape = self.tape
        if outer is None:
            node = Node(LEAF, (), tape, self.trace.bit, data.shape, data.dtype, None)
        else:
            node = Node(IDENTITY, (outer,), tape, self.trace.bit | outer.tag, data.shape,
                        data.dtype, None)  # fmt: skip
        tape.nodes.append(node)
        w._node = node
        self.inputs.append(node)
        return w

    def _borrow(self, x: np.ndarray) -> WrappedArray:
        """A WrappedArray over the caller's memory, copied on its first write.

        Made before ``x`` is frozen, so that its view of ``x`` stays writeable.
        """
        w = WrappedArray(x.view())
        w._flags = BORROWED
        w._views = []
        self.borrowed.append(w)
        return w

    def _bind_parameter(self, w: WrappedArray) -> Node:
        """Give parameter ``w`` (used directly by the closure, never copied) an input node."""
        claim_parameter(w, self.tape)
        self._claimed.append(w)
        outer = node_of(w, self.tape) if self.parent is not None else None
        data = w._data
        tag = self.trace.bit | (outer.tag if outer is not None else 0)
        node = Node(IDENTITY if outer is not None else LEAF, (outer,) if outer else (), self.tape,
                    tag, data.shape, data.dtype, None)  # fmt: skip
        self.tape.nodes.append(node)
        self._rebound.append((w, w._node, node))
        w._node = node
        self.tape.touch(w)
        return node

    def _unbind_parameters(self) -> None:
        """Give parameters back the node they had before the call, unless ``f`` wrote them.

        A parameter ``f`` wrote keeps its new node: inside an enclosing call
        that node is the parameter's current value there too.
        """
        for w, previous, node in reversed(self._rebound):
            if w._node is node:
                w._node = previous
        self._rebound = []
        self.release_parameter_claims()

    def release_parameter_claims(self) -> None:
        """Let other calls bind the parameters (a pullback keeps their nodes, not the claim)."""
        for w in self._claimed:
            release_parameter(w, self.tape)
        self._claimed = []

    def _freeze(self, x: np.ndarray) -> None:
        """Make the caller's array (and the arrays it views) read-only for the call."""
        a: Any = x
        frozen = self.frozen
        while isinstance(a, np.ndarray):
            if a.flags.writeable:  # not frozen by this call already
                a.flags.writeable = False
                frozen.append(a)
            a = a.base

    def thaw(self) -> None:
        for a in reversed(self.frozen):
            a.flags.writeable = True
        self.frozen = []

    def run(self, f: Callable[..., Any]) -> Any:
        token = STATE.set(self.trace)
        try:
            return f(*self.args)
        finally:
            STATE.reset(token)

    def stop_nodes(self) -> set[Node]:
        """The nodes a sweep stops at: the call's inputs and parameters."""
        stop = {n for n in self.inputs if n is not None}
        stop.update(self.param_nodes)
        return stop

    def output_node(self, out: Any, what: str) -> Node | None:
        """The node of the scalar ``f`` returned (None for a constant); raises for non-scalars."""
        check_not_open_buffer(out, what)
        if not isinstance(out, WrappedValue):
            if isinstance(out, (int, float, np.number)) or (
                isinstance(out, np.ndarray) and out.shape == ()
            ):
                return None
            raise MutagradError(
                f"{what} needs f to return a scalar, but it returned {type(out).__name__}. "
                "Use mutagrad.jacobian for array outputs."
            )
        if out.shape != ():
            raise MutagradError(
                f"{what} needs f to return a scalar, but it returned an array of shape "
                f"{out.shape}. Reduce it (np.sum(y)) or use mutagrad.jacobian for array outputs."
            )
        return node_of(out, self.tape)

    def sweep(self, out_node: Node | None, seed: Any) -> BackwardPass | None:
        if out_node is None:
            return None
        stop = self.stop_nodes()
        parent = self.parent
        if parent is None:  # STATE is already None outside every call
            return backward(self.tape, [(out_node, seed)], self.start, self.trace.bit, stop, False)
        token = STATE.set(parent)  # a nested sweep is recorded by the enclosing level
        try:
            return backward(self.tape, [(out_node, seed)], self.start, self.trace.bit, stop, True)
        finally:
            STATE.reset(token)

    def gradients(self, bk: BackwardPass | None) -> Any:
        """The arguments' gradients in their structure, or Grads for implicit parameters."""
        if self.params is not None:
            values = [None if bk is None else _input_gradient(w, node, bk)
                      for w, node in zip(self.params, self.param_nodes)]  # fmt: skip
            return Grads(self.params, values)
        grads = []
        for leaf, node in zip(self.leaves, self.inputs):
            grads.append(None if node is None or bk is None else _input_gradient(leaf, node, bk))
        return self.rebuild(grads)

    def finish(self) -> None:
        if self.frozen:
            self.thaw()
        for w in self.borrowed:
            if w._views:  # views of an input and the input point at each other:
                w._views = []  # break the cycle, so that they are freed at once
        if self._rebound or self._claimed:
            self._unbind_parameters()
        if self.parent is None:
            self.tape.release()


def _input_gradient(leaf: Any, node: Node, bk: BackwardPass) -> Any:
    cot = bk.cots.get(node)
    if type(cot) is np.ndarray and cot.dtype is node.dtype and cot.shape:
        # The common case: a dense cotangent of an array argument. One the
        # sweep allocated is handed over; any other (a pullback's g, a
        # broadcast view) may be shared, so the caller gets a copy.
        return cot if node in bk.owned else cot.copy(order="K")
    if cot is None:
        return None
    dtype = cotangent_dtype(node.dtype)
    if cot is ZERO:
        cot = np.zeros(node.shape, dtype=dtype)
    elif type(cot) is SparseCotangent:
        cot = (
            cot.dense()
            if not any(isinstance(v, WrappedValue) for _, _, v in cot.entries)
            else _traced_dense(cot)
        )
    if isinstance(cot, WrappedValue):
        return cot
    if isinstance(leaf, (int, float)) and not isinstance(leaf, np.generic):
        return float(cot)
    if node.shape == () and not isinstance(leaf, (np.ndarray, WrappedValue)):
        return dtype.type(cot)
    return np.array(cot, dtype=dtype, copy=node not in bk.owned or None)


def _traced_dense(sparse: SparseCotangent) -> Any:
    from mutagrad.core import engine

    return engine.traced_densify(sparse)


def _unwrap_output(value: Any) -> Any:
    if isinstance(value, WrappedValue):
        return value._data
    if isinstance(value, tuple):
        return (
            type(value)(*map(_unwrap_output, value))
            if hasattr(value, "_fields")
            else tuple(map(_unwrap_output, value))
        )
    if isinstance(value, list):
        return [_unwrap_output(v) for v in value]
    if type(value) is dict:
        return {k: _unwrap_output(v) for k, v in value.items()}
    if attrs.has(type(value)):
        fields = [f for f in attrs.fields(type(value)) if f.init]
        changes = {f.alias: _unwrap_output(getattr(value, f.name)) for f in fields}
        return attrs.evolve(value, **changes)
    return value


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, tuple) and not isinstance(out, WrappedValue) else out


def _seed(node: Node) -> Any:
    return cotangent_dtype(node.dtype).type(1.0)


def implicit_parameters(f: Callable[..., Any], args: tuple[Any, ...], what: str) -> Params | None:
    """``ps`` when ``args`` is ``(ps,)`` with ``ps`` a Params (implicit style), else None."""
    if len(args) != 1 or not isinstance(args[0], Params):
        return None
    try:
        signature = inspect.signature(f)
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return args[0]
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if required:
        raise TypeError(
            f"{what}(f, ps) with ps a Params differentiates a function of no arguments, "
            f"lambda: loss(...), that uses the parameters directly; but f takes "
            f"{', '.join(required)}. Close over the values instead, or pass them explicitly: "
            f"{what}(f, *args)."
        )
    return args[0]


@collector_paused
def withgradient(f: Callable[..., Any], *args: Any, mode: str | None = None) -> WithGradient:
    """Return ``(val, grad)``: ``f(*args)`` and its gradient with respect to each argument.

    If ``f`` returns a tuple, its first element is differentiated and ``val``
    is the whole tuple (the rest is auxiliary output), as in Zygote.
    ``withgradient(lambda: loss(), ps)``, with ``ps`` a :class:`Params`,
    returns the gradient as :class:`Grads`.
    """
    params = implicit_parameters(f, args, "withgradient")
    call = _Call(args if params is None else (), mode, copy_inputs=False, params=params)
    try:
        out = call.run(f)
        if not isinstance(out, WrappedValue):  # else output_node checks it
            check_not_open_buffer(out, "f")
        node = call.output_node(_first(out), "withgradient")
        grads = call.gradients(call.sweep(node, _seed(node) if node is not None else None))
        bytes_copied = call.tape.bytes_copied
        bytes_guarded = call.tape.guard_bytes
    finally:
        call.finish()
    result = WithGradient(_nested_output(out, call), grads)
    result.bytes_copied = bytes_copied
    result.bytes_guarded = bytes_guarded
    return result


def _nested_output(out: Any, call: _Call) -> Any:
    # Inside an enclosing gradient call the value stays traced.
    return out if call.parent is not None else _unwrap_output(out)


def gradient(f: Callable[..., Any], *args: Any, mode: str | None = None) -> Any:
    """The gradient of scalar-valued ``f`` with respect to each argument.

    Returns a tuple with one entry per argument: an array for array arguments,
    a float for Python numbers, ``None`` where no gradient flows (strings, ints
    used as axes or sizes, unused arguments). ``mode`` selects how in-place
    writes are handled: "poison" (default), "strict" (Zygote's rule) or
    "snapshot".

    ``gradient(lambda: loss(), ps)``, with ``ps`` a :class:`Params` of
    WrappedArrays that ``loss`` uses, returns :class:`Grads`: ``gs[W]``.
    """
    grad = withgradient(f, *args, mode=mode).grad
    return grad if isinstance(grad, Grads) else tuple(grad)


class Pullback:
    """``back(dy)``: the vector-Jacobian product of a recorded call; callable many times."""

    def __init__(self, call: _Call, out: Any):
        self._call = call
        self._out = out
        self._finalizer = weakref.finalize(self, call.tape.release)

    @collector_paused
    def __call__(self, dy: Any) -> Any:
        call = self._call
        outs, _ = flatten(self._out)
        seeds_in, _ = flatten(dy)
        if len(outs) != len(seeds_in):
            raise MutagradError(f"back expects {len(outs)} cotangent(s), got {len(seeds_in)}")
        seeds = []
        token = STATE.set(call.trace)
        try:
            for y, dy_leaf in zip(outs, seeds_in):
                node = node_of(y, call.tape) if isinstance(y, WrappedValue) else None
                if node is not None and dy_leaf is not None:
                    seeds.append((node, np.asarray(dy_leaf, dtype=cotangent_dtype(node.dtype))))
        finally:
            STATE.reset(token)
        bk = None
        if seeds:
            stop = call.stop_nodes()
            bk = backward(call.tape, seeds, call.start, call.trace.bit, stop, recording=False)
        grads = call.gradients(bk)
        return grads if isinstance(grads, Grads) else tuple(grads)


@collector_paused
def pullback(f: Callable[..., Any], *args: Any, mode: str | None = None) -> tuple[Any, Pullback]:
    """Return ``(y, back)`` with ``y = f(*args)`` and ``back(dy)`` its vector-Jacobian product.

    Array arguments are copied once, so ``back`` stays valid however the
    caller's arrays change afterwards; writes to WrappedArrays that ``y``'s
    pullback still reads poison it (``back`` then raises).
    ``pullback(lambda: loss(), ps)`` with ``ps`` a :class:`Params`: ``back``
    returns :class:`Grads`. Parameters are not copied: writing one that the
    pullback reads poisons it, as for any WrappedArray.
    """
    if STATE.get() is not None:
        raise MutagradError("pullback inside a gradient call is not supported; use gradient")
    params = implicit_parameters(f, args, "pullback")
    call = _Call(args if params is None else (), mode, copy_inputs=True, params=params)
    try:
        out = call.run(f)
        check_not_open_buffer(out, "f")
    except BaseException:
        call.finish()
        raise
    call.release_parameter_claims()
    back = Pullback(call, out)
    value = _unwrap_output(out)
    return _copy_if_captured(out, value), back


def _copy_if_captured(out: Any, value: Any) -> Any:
    """The returned value must not alias memory the pullback reads."""
    if isinstance(out, WrappedValue) and isinstance(value, np.ndarray):
        base = out._base if out._base is not None else out
        if base._captures:
            return value.copy()
    return value


def _contains_wrapped(obj: Any) -> bool:
    if isinstance(obj, WrappedValue):
        return True
    return isinstance(obj, (list, tuple)) and any(_contains_wrapped(o) for o in obj)


def _stack_nested(obj: Any, dtype: Any) -> Any:
    """``np.array`` of a nested list holding WrappedArrays, built with traced stacking."""
    if isinstance(obj, (list, tuple)):
        parts = [_stack_nested(o, dtype) for o in obj]
        parts = [p if isinstance(p, WrappedValue) else wrap(np.asarray(p)) for p in parts]
        stacked = np.stack(parts)
        return stacked if dtype is None else stacked.astype(dtype)
    if isinstance(obj, WrappedValue):
        return obj.copy() if dtype is None else obj.astype(dtype)
    return np.asarray(obj, dtype=dtype)


def array(obj: Any, dtype: Any = None, *, copy: bool = True) -> WrappedArray:
    """A WrappedArray holding a copy of ``obj`` (like ``np.array``).

    A (nested) list of traced values is stacked on the tape, so
    ``mutagrad.array([a, b])`` keeps the gradients of ``a`` and ``b``.
    """
    if isinstance(obj, WrappedValue):
        if not copy and (dtype is None or np.dtype(dtype) == obj.dtype):
            return obj
        return obj.copy() if dtype is None else obj.astype(dtype)
    if _contains_wrapped(obj):
        return _stack_nested(obj, dtype)
    return WrappedArray(np.array(obj, dtype=dtype, copy=copy))


def asarray(obj: Any, dtype: Any = None) -> WrappedArray:
    """``obj`` as a WrappedArray, sharing memory with it where numpy would."""
    if isinstance(obj, WrappedValue) or _contains_wrapped(obj):
        return array(obj, dtype, copy=False)
    data = np.asarray(obj, dtype=dtype)
    if not is_dense(data):
        data = np.copy(data)
    return WrappedArray(data)


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
    from mutagrad.core.wrapped import DETACHED, make_view

    if isinstance(value, WrappedValue):
        data = value._data
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


def is_traced(x: Any) -> bool:
    """Whether ``x`` carries a gradient in the current gradient call."""
    return isinstance(x, WrappedValue) and is_active(x)
