"""The Jacobian machinery, and Zygote's ``withjacobian``, ``hessian_reverse``, ``diaghessian``.

:func:`call_with_jacobian` runs ``f`` once, on one tape, and sweeps that tape
backwards once per element of the output, seeding a one-hot cotangent each
time (reverse mode: cheap when the output is small compared with the inputs).
Row ``k`` of the Jacobian of an argument ``a`` is the gradient of
``y.flat[k]`` with respect to ``a.flat[i]``, in row-major order for both.
``jacobian`` and ``hessian`` themselves, with both their forms (Zygote's
``jacobian(f, x)``, JAX's ``jacobian(f)``), are in :mod:`mutagrad.transforms`.

Second derivatives are reverse over reverse: :func:`zygote_hessian` is the
Jacobian of the gradient. The inner ``gradient`` call records its backward sweep on the
outer call's tape (pullbacks are traceable numpy), and in-place writes inside
it follow the same ``mode`` (strict, poison or snapshot) as anywhere else.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mutagrad.buffer import check_not_open_buffer
from mutagrad.call import (
    GradientCall,
    call_with_gradient,
    implicit_parameters,
    input_gradient,
    nested_output,
    passes_through,
)
from mutagrad.core.engine import STATE, ZERO, BackwardPass, Node, collector_paused
from mutagrad.core.tangents import SparseCotangent, cotangent_dtype
from mutagrad.core.trees import flatten
from mutagrad.diagnostics.messages import complex_jacobian_message, leaf_message
from mutagrad.diagnostics.sites import with_article
from mutagrad.errors import MutagradError, NotDifferentiableError
from mutagrad.freezing import proving_boundary
from mutagrad.params import Grads
from mutagrad.traced import array
from mutagrad.traced.value import WrappedValue, node_of, unwrap

WithJacobian = namedtuple("WithJacobian", ["val", "grad"])
WithJacobian.__doc__ = "``(val, grad)``: the value of ``f`` and one Jacobian per argument."

# What an argument's Jacobian looks like: a matrix, a vector, or nothing.
_MATRIX, _VECTOR, _NONE = "matrix", "vector", "none"


def _argument_kind(x: Any) -> str:
    """Arrays give a matrix, numbers a vector (Zygote: ``x::Number``), anything else None."""
    if isinstance(x, (bool, np.bool_)):
        return _NONE
    data = x._raw if isinstance(x, WrappedValue) else x
    if isinstance(data, np.ndarray):
        return _MATRIX if data.dtype.kind in "biufc" else _NONE
    if isinstance(data, (int, float, complex, np.integer, np.floating, np.complexfloating)):
        return _VECTOR
    return _NONE


def _output(
    call: GradientCall, out: Any, caller: str, holomorphic: bool = False
) -> tuple[Node | None, tuple[int, ...], np.dtype]:
    """The output's node (None for a constant), shape and dtype.

    Refuses what has no Jacobian: an output that is not an array or a number,
    and a boolean or integer output that carries no derivative although the
    inputs do (a comparison, an index), which would give a Jacobian of zeros.
    """
    check_not_open_buffer(out, "f")
    if isinstance(out, WrappedValue):
        token = STATE.set(call.trace)
        try:
            node = node_of(out, call.tape)
        finally:
            STATE.reset(token)
        shape, dtype = out.shape, out.dtype
    elif isinstance(out, (bool, np.bool_, int, float, np.number, np.ndarray)):
        data = np.asarray(out)
        node, shape, dtype = None, data.shape, data.dtype
    else:
        raise MutagradError(
            f"{caller} needs f to return an array or a number, but it returned "
            f"{type(out).__name__}.\n"
            "Fix: return one array (np.concatenate the parts), or take the Jacobian of each "
            "output separately."
        )
    if node is None and dtype.kind in "biu" and call.inputs_active():
        raise NotDifferentiableError(
            f"{caller} needs f to return floating-point values, but it returned "
            f"{with_article(str(dtype))} result, which has no derivative (a comparison, a "
            "count, an index).\n"
            "Fix: return the quantity itself, e.g. x rather than x > 0."
        )
    if dtype.kind == "c" and not holomorphic and (node is not None or call.inputs_active()):
        raise NotDifferentiableError(complex_jacobian_message(caller))
    return node, shape, dtype


def _dtype_of(x: Any) -> np.dtype:
    return x.dtype if isinstance(x, WrappedValue) else np.asarray(x).dtype


def _one_hot(shape: tuple[int, ...], dtype: np.dtype, k: int) -> np.ndarray:
    seed = np.zeros(shape, dtype=dtype)
    seed.flat[k] = 1
    return seed


def _fill_row(row: np.ndarray, node: Node, bk: BackwardPass) -> None:
    """Write the cotangent of ``node`` into ``row`` (zeros already), flattened row-major."""
    cot = bk.cots.get(node)
    if cot is None or cot is ZERO:
        return
    if type(cot) is SparseCotangent and cot.layout is None:
        cot.add_to(row.reshape(node.shape))  # straight into the row: no dense temporary
        return
    if type(cot) is SparseCotangent:
        cot = cot.dense()
    row[...] = np.ravel(cot)


def _traced_row(target: Any, node: Node, bk: BackwardPass, size: int) -> Any:
    """One row as a (possibly traced) flat array, inside an enclosing gradient call."""
    grad = input_gradient(target, node, bk)
    if grad is None:
        return np.zeros(size)
    return np.reshape(grad, (size,))


def _jacobians(
    call: GradientCall,
    out: Any,
    targets: list[Any],
    nodes: list[Node | None],
    kinds: list[str],
    caller: str,
    holomorphic: bool = False,
) -> list[Any]:
    """One sweep per output element; the Jacobian of each target (None for kind _NONE).

    At top level the rows are written into preallocated matrices; inside an
    enclosing gradient call (a Hessian's outer call) they are traced values,
    stacked on the outer tape. ``holomorphic``: see :func:`_check_holomorphic_rows`.
    """
    out_node, out_shape, out_dtype = _output(call, out, caller, holomorphic)
    rows = int(np.prod(out_shape, dtype=np.int64))
    seed_dtype = cotangent_dtype(out_dtype)
    sizes = [int(np.size(t._raw if isinstance(t, WrappedValue) else t)) for t in targets]
    dtypes = [
        None if kind == _NONE else np.result_type(seed_dtype, cotangent_dtype(_dtype_of(t)))
        for t, kind in zip(targets, kinds)
    ]
    wanted = [(i, node) for i, (kind, node) in enumerate(zip(kinds, nodes))
              if kind != _NONE and node is not None]  # fmt: skip

    def sweeps() -> Iterator[BackwardPass | None]:
        """Each output element's backward pass (None where no target is reached)."""
        for k in range(rows):
            reached = out_node is not None and wanted
            yield call.sweep(out_node, _one_hot(out_shape, seed_dtype, k)) if reached else None

    if call.parent is None:
        results: list[Any] = [
            None if kind == _NONE else np.zeros((rows, size), dtype=dtype)
            for kind, size, dtype in zip(kinds, sizes, dtypes)
        ]
        for k, bk in enumerate(sweeps()):
            for i, node in wanted:
                if bk is not None:
                    _fill_row(results[i][k], node, bk)
    else:
        traced_rows: list[list[Any]] = [[] for _ in targets]
        for bk in sweeps():
            for i, kind in enumerate(kinds):
                if kind == _NONE:
                    continue
                reaches = nodes[i]
                if bk is None or reaches is None:
                    traced_rows[i].append(np.zeros(sizes[i], dtype=dtypes[i]))
                else:
                    traced_rows[i].append(_traced_row(targets[i], reaches, bk, sizes[i]))
        results = [
            None if kind == _NONE else _stack_rows(traced_rows[i], sizes[i], dtypes[i])
            for i, kind in enumerate(kinds)
        ]
    if holomorphic:
        _check_holomorphic_rows(call, out_node, out_shape, seed_dtype, targets, nodes, kinds,
                                results, caller)  # fmt: skip
    return [r[:, 0] if kind == _VECTOR and r is not None else r for r, kind in zip(results, kinds)]


def _check_holomorphic_rows(
    call: GradientCall,
    out_node: Node | None,
    out_shape: tuple[int, ...],
    seed_dtype: np.dtype,
    targets: list[Any],
    nodes: list[Node | None],
    kinds: list[str],
    results: list[Any],
    caller: str,
) -> None:
    """Refuse ``holomorphic=True`` for real arguments, or where ``f`` is not holomorphic.

    Row ``k`` is the pullback ``L`` of the one-hot seed ``e_k``: ``df_k/dz`` when ``f`` is
    holomorphic, which is exactly when ``L(1j * c) = 1j * L(c)`` for every ``c``. ``L`` is
    real-linear, so one sweep of ``1j * c``, ``c`` a random real combination of the
    ``e_k``, compared with ``1j`` times the same combination of the rows, finds any part
    of ``L`` that is not complex-linear (but on a set of ``c`` of measure zero).
    """
    if any(n is not None and n.dtype.kind != "c" for n in nodes) or call.param_nodes:
        raise NotDifferentiableError(
            f"{caller}(..., holomorphic=True) differentiates a complex function of complex "
            "arguments, but an argument is real.\n"
            "Fix: pass complex arguments (x.astype(complex)), or drop holomorphic=True for "
            "a real-valued f."
        )
    if out_node is None or not any(n is not None for n in nodes):
        return
    weights = np.random.default_rng(0).standard_normal(int(np.prod(out_shape, dtype=np.int64)))
    turned = call.sweep(out_node, (1j * weights).reshape(out_shape).astype(seed_dtype))
    assert turned is not None  # (a sweep from a node)
    for target, node, kind, rows in zip(targets, nodes, kinds, results):
        if node is None or kind == _NONE:
            continue
        expected = 1j * (weights @ np.asarray(unwrap(rows)))
        got = input_gradient(target, node, turned)
        got = np.zeros_like(expected) if got is None else np.ravel(unwrap(got))
        scale = max(float(np.max(np.abs(unwrap(rows)), initial=0.0)), np.finfo(float).tiny)
        if not np.all(np.abs(got - expected) <= 1e-8 * scale * max(1.0, np.abs(weights).sum())):
            raise NotDifferentiableError(
                f"{caller}(..., holomorphic=True): f is not holomorphic at these arguments "
                "(its change depends on the direction of the change in z, as that of np.conj, "
                "np.abs or z.real does), so it has no complex Jacobian df/dz.\n"
                "Fix: take the Jacobians of np.real(f(z)) and np.imag(f(z)) (holomorphic=False), "
                "which together are all of the derivative."
            )


def _stack_rows(rows: list[Any], size: int, dtype: Any) -> Any:
    if not rows:
        return np.zeros((0, size), dtype=dtype)
    if not any(isinstance(r, WrappedValue) for r in rows):
        return np.stack(rows).astype(dtype, copy=False)
    return array(rows)  # traced rows: stacked on the tape


@proving_boundary
def withjacobian(
    f: Callable[..., Any], *args: Any, mode: str | None = None, **kwargs: Any
) -> WithJacobian:
    """``(val, grad)``: ``f(*args, **kwargs)`` and, for each argument, the Jacobian of ``f``.

    For an array argument ``a`` (any number of dimensions) the Jacobian is a
    matrix ``J[k, i] = ∂y.flat[k] / ∂a.flat[i]``; for a number ``x`` a vector
    ``J[k] = ∂y.flat[k] / ∂x``; for any other argument (a string, a tuple)
    None. ``f`` returns an array (of any shape) or a number, which gives one
    row. ``f`` runs once; the tape is swept once per element of its output.

    ``withjacobian(lambda: ..., ps)`` with ``ps`` a :class:`Params` gives the
    Jacobians as :class:`Grads`, keyed by parameter. Keyword arguments are
    passed to ``f`` and not differentiated.
    """
    return call_with_jacobian(f, args, kwargs, mode, "withjacobian")


@collector_paused
def call_with_jacobian(
    f: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None,
    mode: str | None,
    caller: str,
    holomorphic: bool = False,
) -> WithJacobian:
    """:func:`withjacobian`'s work; ``caller`` is the entry point its error messages name.

    ``holomorphic``: ``f`` is a complex function of complex arguments and each row is
    ``df_k/dz`` (JAX's ``jacrev(f, holomorphic=True)``), checked to be one.
    """
    params = implicit_parameters(f, args, caller)
    call = GradientCall(args if params is None else (), mode, params=params)
    try:
        out = call.run(f, kwargs)
        if params is not None:
            targets: list[Any] = list(params)
            nodes: list[Node | None] = list(call.param_nodes)
            kinds = [_MATRIX] * len(targets)
        else:
            targets, nodes, kinds = [], [], []
            position = 0
            for a in args:
                count = len(flatten(a)[0])
                kind = _argument_kind(a) if count == 1 else _NONE
                targets.append(call.leaves[position] if kind != _NONE else None)
                nodes.append(call.inputs[position] if kind != _NONE else None)
                kinds.append(kind)
                position += count
        jacobians = _jacobians(call, out, targets, nodes, kinds, caller, holomorphic)
    finally:
        call.finish()
    grad: Any = Grads(params, jacobians) if params is not None else tuple(jacobians)
    return WithJacobian(nested_output(out, call), grad)


def refuse_complex_arguments(args: Any, caller: str) -> None:
    """A Hessian is of real functions of real variables: refuse complex arguments by name."""
    leaves = flatten(args)[0]
    if any(isinstance(leaf, (WrappedValue, np.ndarray, np.number, complex))
           and _dtype_of(leaf).kind == "c" for leaf in leaves):  # fmt: skip
        raise NotDifferentiableError(
            f"{caller} of a function of complex arguments: its gradient is complex, and a "
            "Jacobian of complex values from real sweeps would miss half of it.\n"
            "Fix: pass the real and imaginary parts as real arguments, "
            "f(x + 1j * y), and take the Hessian in (x, y)."
        )


def zygote_hessian(
    f: Callable[..., Any], x: Any, mode: str | None, kwargs: dict[str, Any], caller: str
) -> Any:
    """Zygote's ``hessian(f, x)``: for an array ``x`` (any shape) a square matrix of side
    ``x.size``, ``H[i, j] = ∂²f / ∂x.flat[i] ∂x.flat[j]``; for a number a number. The
    Jacobian of the gradient: one forward pass and one sweep per element of ``x``."""
    refuse_complex_arguments((x,), caller)
    if _argument_kind(x) == _NONE:
        if not passes_through(x):
            raise NotDifferentiableError(leaf_message(x, f"the argument of {caller}"))
        raise TypeError(f"{caller} needs an array or a number, got {type(x).__name__}")

    def gradient_of_f(x: Any) -> Any:
        (g,) = call_with_gradient(f, (x,), kwargs, mode, caller).grad
        return g if g is not None else np.zeros(np.shape(x))

    h: Any = call_with_jacobian(gradient_of_f, (x,), None, mode, caller).grad[0]
    if _argument_kind(x) == _VECTOR:
        return float(h[0]) if type(h) is np.ndarray else h[0]  # (a traced row inside a call)
    return h


@proving_boundary
def hessian_reverse(
    f: Callable[..., Any], x: Any, *, mode: str | None = None, **kwargs: Any
) -> Any:
    """The Hessian by reverse over reverse: the Jacobian of the gradient.

    Identical to ``hessian(f, x)`` here; Zygote's ``hessian`` uses forward mode
    over reverse and ``hessian_reverse`` this, and mutagrad keeps both names.
    """
    return zygote_hessian(f, x, mode, kwargs, "hessian_reverse")


@proving_boundary
def diaghessian(
    f: Callable[..., Any], *args: Any, mode: str | None = None, **kwargs: Any
) -> tuple[Any, ...]:
    """The diagonal of the Hessian of scalar-valued ``f``, for each argument: a tuple.

    For an array argument an array of its shape with ``h.flat[i] =
    ∂²f / ∂a.flat[i]²``; for a number a float; None for other arguments. Only
    second derivatives within one argument appear (the cross terms between
    arguments are not part of any diagonal). One forward pass; one sweep per
    element of the array and number arguments. Keyword arguments are passed
    to ``f`` and not differentiated.
    """
    refuse_complex_arguments(args, "diaghessian")
    kinds = [_argument_kind(a) for a in args]
    sizes = [int(np.size(a._raw if isinstance(a, WrappedValue) else a)) for a in args]
    shapes = [np.shape(a._raw if isinstance(a, WrappedValue) else a) for a in args]

    def all_gradients(*xs: Any) -> Any:
        grads = call_with_gradient(f, xs, kwargs, mode, "diaghessian").grad
        parts = []
        for g, kind, size in zip(grads, kinds, sizes):
            if kind == _NONE:
                continue
            parts.append(np.zeros(size) if g is None else np.reshape(g, (size,)))
        return np.concatenate(parts) if parts else np.zeros(0)

    jacobians = call_with_jacobian(all_gradients, args, None, mode, "diaghessian").grad
    result: list[Any] = []
    offset = 0
    for j, kind, size, shape in zip(jacobians, kinds, sizes, shapes):
        if kind == _NONE:
            result.append(None)
            continue
        block = np.reshape(j, (-1, size))[offset : offset + size]
        diagonal = np.diagonal(block).copy()
        offset += size
        if kind == _VECTOR:
            traced = isinstance(diagonal, WrappedValue)
            result.append(diagonal[0] if traced else float(diagonal[0]))
        else:
            result.append(np.reshape(diagonal, shape))
    return tuple(result)


__all__ = ["WithJacobian", "call_with_jacobian", "diaghessian", "hessian_reverse", "withjacobian",
           "zygote_hessian"]  # fmt: skip
