"""Shape functions: views that share memory, and the copies that don't.

Functions for which numpy returns a view (``reshape`` where possible,
``transpose``, ``swapaxes``, ``moveaxis``, ``squeeze``, ``expand_dims``,
``diagonal``, ``broadcast_to``, ``sliding_window_view``, ``flip``, ``rot90``,
``x.view()``) return a WrappedArray
view of the same base, so writes through either are seen by both, as in
numpy. A view needs no derivative rule: reading it records a VIEW_READ node.
Only where numpy copies (``reshape``/``ravel`` of a non-contiguous array) is a
rule recorded. ``concatenate``, ``stack``, ``block``, ``copy`` and ``astype``
always copy.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from mutagrad.core.jvps import linear, passed_on
from mutagrad.core.regions import IMAG_PART, REAL_PART
from mutagrad.core.registry import VjpRule, implements
from mutagrad.errors import NotDifferentiableError
from mutagrad.traced.dispatch import apply
from mutagrad.traced.mutation import assign_out, copy_several_as_numpy_does
from mutagrad.traced.value import (
    DETACHED,
    WrappedArray,
    WrappedValue,
    any_active,
    is_active,
    is_view_of,
    make_view,
    unwrap,
    wrap_constant,
)


def _view_function(numpy_function: Any, name: str, copy_vjp: Any = None):
    """An adapter for a function that returns a view of its first argument.

    ``copy_vjp`` is the rule's vjp for the cases where numpy copies instead.
    """
    copy_rule = None
    if copy_vjp is not None:
        copy_rule = VjpRule(name, numpy_function, (copy_vjp,), ((),), jvp=linear(),
                            handles_complex=True)  # fmt: skip
    # A scalar (a WrappedScalar, or a 0-d array that np.flip turns into a
    # numpy scalar) has no memory to view: numpy copies its one value into
    # every element of the result, so its cotangent is the sum of g.
    scalar_rule = VjpRule(name, numpy_function, (lambda g, ans, x, *a, **k: np.sum(g),), ((),),
                          jvp=linear(), handles_complex=True)  # fmt: skip

    def adapter(a: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(a, WrappedValue):
            return numpy_function(a, *unwrap(args), **unwrap(kwargs))
        args, kwargs = unwrap(args), unwrap(kwargs)
        result = numpy_function(a._raw, *args, **kwargs)
        if result is a._raw:
            return a
        if is_view_of(result, a._raw):
            return make_view(a, result)
        if copy_rule is not None:
            return apply(copy_rule, (a, *args), kwargs or None)
        if np.ndim(a._raw) == 0:
            return apply(scalar_rule, (a, *args), kwargs or None)
        if np.size(result) == 0:
            # An empty view (np.diagonal(x, offset) past the corner) shares no
            # memory with anything: there is nothing to write or differentiate.
            return wrap_constant(result)
        raise AssertionError(f"np.{name} returned a copy where numpy always returns a view")

    adapter.__name__ = name
    return adapter


def _copy_order(order: Any) -> str:
    """The index order of a reshape or ravel that copied.

    "A" means "F" only for an F-contiguous array, which always reshapes to a
    view; so a copy was made in C order. Reading "A" again in the vjp would
    instead follow the layout of the cotangent.
    """
    return "F" if str(order).upper() == "F" else "C"


# ``order`` may be passed by position (np.reshape(x, shape, "F"), np.ravel(x, "F")),
# so the vjps name numpy's positional parameters rather than taking it from **kwargs.
def _reshape_back(g, ans, x, shape=None, order="C", **kwargs):
    return np.reshape(g, x.shape, order=_copy_order(order))


def _ravel_back(g, ans, x, order="C"):
    return np.reshape(g, x.shape, order=_copy_order(order))


for _fn, _vjp in (
    (np.reshape, _reshape_back),
    (np.transpose, None),
    (np.swapaxes, None),
    (np.moveaxis, None),
    (np.rollaxis, None),
    (np.squeeze, None),
    (np.expand_dims, None),
    (np.diagonal, None),
    (np.broadcast_to, None),
    (np.flip, None),
    (np.fliplr, None),
    (np.flipud, None),
    (np.rot90, None),
    (np.matrix_transpose, None),
    (np.linalg.matrix_transpose, None),
    # numpy returns a real array itself, and a complex one's real part when it is close
    (np.real_if_close, None),
):
    implements(_fn)(_view_function(_fn, _fn.__name__, _vjp))

_ravel = _view_function(np.ravel, "ravel", _ravel_back)
_windows = _view_function(sliding_window_view, "sliding_window_view")


@implements(sliding_window_view)
def _sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """numpy's read-only view of overlapping windows, a view of ``x`` as numpy's: a later
    write to ``x`` shows in it, and its cotangent adds up where windows overlap (the view
    machinery scatters overlapping regions with ``np.add.at``)."""
    if writeable and isinstance(x, WrappedValue):
        raise NotDifferentiableError(
            "np.lib.stride_tricks.sliding_window_view(..., writeable=True) of a WrappedArray: "
            "its windows overlap, so one write through them lands in several windows at "
            "once, which mutagrad does not record.\nFix: write to the array itself "
            "(x[...] = ...); the read-only windows (writeable=False, numpy's default) follow "
            "such writes."
        )
    return _windows(x, window_shape, axis=axis, subok=subok)


_real_view = _view_function(np.real, "real")


@implements(np.real)
def real(val):
    # A complex array's real parts are a view (its reads: mutagrad.core.regions.REAL_PART);
    # a complex scalar's are a number.
    complex_scalar = isinstance(val, WrappedValue) and not isinstance(val, WrappedArray)
    if complex_scalar and val.dtype.kind == "c":
        return apply(REAL_PART, (val,))
    return _real_view(val)


@implements(np.imag)
def imag(val):
    if isinstance(val, WrappedValue):
        if val.dtype.kind == "c" and not isinstance(val, WrappedArray):
            return apply(IMAG_PART, (val,))
        return val.imag  # a view of the imaginary parts, or a real array's constant zeros
    return np.imag(val)


@implements(np.ravel)
def ravel(a, order="C"):
    if order in ("K", "k") and isinstance(a, WrappedArray):
        flat = np.ravel(a._raw, order="K")
        if not is_view_of(flat, a._raw):
            # numpy copied in memory order, which no reshape order can invert.
            # A copy with the same layout (np.copy's order "K") ravels to a view
            # in that same order, so the gradient flows through copy + view.
            a = np.copy(a, order="K")
    return _ravel(a, order)


def _at_least(ndim: int, arrays: tuple[Any, ...]) -> Any:
    results = []
    for a in arrays:
        if np.ndim(a) >= ndim:
            results.append(a)
        elif ndim == 1 or np.ndim(a) == 0:
            results.append(np.reshape(a, (1,) * ndim))
        elif ndim == 2:
            results.append(a[np.newaxis, :])
        else:
            results.append(a[np.newaxis, :, np.newaxis] if np.ndim(a) == 1 else a[:, :, np.newaxis])
    return results[0] if len(results) == 1 else tuple(results)


@implements(np.atleast_1d)
def atleast_1d(*arrays):
    return _at_least(1, arrays)


@implements(np.atleast_2d)
def atleast_2d(*arrays):
    return _at_least(2, arrays)


@implements(np.atleast_3d)
def atleast_3d(*arrays):
    return _at_least(3, arrays)


@implements(np.ndarray.view)
def view(x: WrappedArray, dtype: Any = None) -> WrappedArray:
    """``x.view()``: a view of the same memory; a dtype change carries no derivative."""
    if dtype is None or np.dtype(dtype) == x.dtype:
        return make_view(x, x._raw.view())
    if is_active(x):
        raise NotDifferentiableError(
            f"x.view({np.dtype(dtype)}) reinterprets the bits of a traced {x.dtype} array; "
            "that has no derivative.\nFix: use x.astype(...) for a differentiable conversion."
        )
    v = make_view(x, x._raw.view(dtype))
    v._flags |= DETACHED
    return v


# Every rule in this module is linear (a copy, a reshape, a join, a cast): complex
# values need nothing more. A cast from complex to real keeps the real part, whose
# transpose hands back the real cotangent; from real to complex, the engine takes
# the real part of the complex cotangent (JAX's convert_element_type).
COPY = VjpRule("copy", np.copy, (lambda g, ans, x, **kw: g,), ((),), jvp=passed_on,
               handles_complex=True)  # fmt: skip


@implements(np.copy)
def copy(a, order="K", subok=False):
    return apply(COPY, (a,), {"order": order})


ASTYPE = VjpRule(
    "astype",
    lambda x, dtype, **kw: x.astype(dtype, **kw),
    (lambda g, ans, x, dtype, **kw: g,),
    ((),),
    jvp=passed_on,
    handles_complex=True,
)


@implements(np.ndarray.astype)
def astype(x: WrappedArray, dtype: Any, order="K", casting="unsafe", copy=True) -> WrappedArray:
    dtype = np.dtype(dtype)
    if not copy and dtype == x.dtype:
        return x
    if dtype.kind not in "fc":
        # Integers and bools carry no derivative (NoTangent).
        return wrap_constant(x._raw.astype(dtype, order=order, casting=casting))
    return apply(ASTYPE, (x, dtype), {"order": order, "casting": casting})


def _split_along(g, shapes, axis, i):
    if axis is None:
        start = sum(int(np.prod(s, dtype=np.int64)) for s in shapes[:i])
        stop = start + int(np.prod(shapes[i], dtype=np.int64))
        return np.reshape(np.ravel(g)[start:stop], shapes[i])
    axis = axis % len(shapes[i])
    start = sum(s[axis] for s in shapes[:i])
    index = (slice(None),) * axis + (slice(start, start + shapes[i][axis]),)
    return g[index]


def _zero_filled(tangents, arrays):
    """The tangents of joined arrays, zeros (as wide as the others) where one has none."""
    k = next(t for t in tangents if t is not None).shape[0]
    return [
        t if t is not None else np.zeros((k, *np.shape(a)), np.result_type(a))
        for t, a in zip(tangents, arrays)
    ]


def _concatenate_jvp(tangents, ans, arrays, kwargs):
    """The tangents joined along the same axis (after the batch axis)."""
    parts = _zero_filled(tangents, arrays)
    axis = kwargs.get("axis", 0)
    if axis is None:
        parts, axis = [np.reshape(t, (t.shape[0], -1)) for t in parts], 0
    axis = axis % max(np.ndim(arrays[0]), 1)
    kw = {k: v for k, v in kwargs.items() if k == "casting"}
    return np.concatenate(parts, axis=axis + 1, **kw)


def _stack_jvp(tangents, ans, arrays, kwargs):
    """The tangents stacked along the same new axis (after the batch axis)."""
    parts = _zero_filled(tangents, arrays)
    axis = kwargs.get("axis", 0) % (np.ndim(arrays[0]) + 1)
    return np.stack(parts, axis=axis + 1)


@cache
def _concatenate_rule(n: int) -> VjpRule:
    def forward(*arrays, axis=0, **kwargs):
        return np.concatenate(arrays, axis=axis, **kwargs)

    def vjp_for(i):
        return lambda g, ans, *xs, axis=0, **kw: _split_along(g, [x.shape for x in xs], axis, i)

    return VjpRule("concatenate", forward, tuple(vjp_for(i) for i in range(n)), ((),) * n,
                   jvp=linear(_concatenate_jvp), handles_complex=True)  # fmt: skip


def _as_arrays(arrays):
    return tuple(a if isinstance(a, WrappedValue) else np.asarray(a) for a in arrays)


def _join_kwargs(axis, dtype, casting):
    """The keyword arguments np.concatenate and np.stack pass on (dtype only when given)."""
    kwargs = {"axis": axis, "casting": casting}
    if dtype is not None:
        kwargs["dtype"] = dtype
    return kwargs


@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrays = _as_arrays(arrays)
    kwargs = _join_kwargs(axis, dtype, casting)
    if _joined_as_numpy_does(np.concatenate, arrays, out, kwargs, "np.concatenate(..., out=)"):
        return out
    return assign_out(apply(_concatenate_rule(len(arrays)), arrays, kwargs), out, "np.concatenate")


def _joined_as_numpy_does(join, arrays, out, kwargs, operation) -> bool:
    """``join(arrays, out=out)`` (np.concatenate, np.stack) where ``out`` shares memory with
    an input: numpy fills ``out`` one input after the other, so an input may be read after
    an earlier one overwrote it; that order is followed (mutation.copy_several_as_numpy_does).
    False, nothing done, where no input shares ``out``'s memory."""
    if not isinstance(out, WrappedArray):
        return False
    # numpy's own call on copies first: its errors (a shape, a cast) are the program's.
    join([np.array(unwrap(a)) for a in arrays], out=np.array(out._raw), **kwargs)
    order_only = {"axis": kwargs["axis"]}  # (the numbers are of one dtype: no cast to check)
    return copy_several_as_numpy_does(
        out, list(arrays), lambda t, numbered: join(numbered, out=t, **order_only), operation
    )


@cache
def _stack_rule(n: int) -> VjpRule:
    def forward(*arrays, axis=0, **kwargs):
        return np.stack(arrays, axis=axis, **kwargs)

    def vjp_for(i):
        def vjp(g, ans, *xs, axis=0, **kw):
            axis = axis % (xs[i].ndim + 1)
            return g[(slice(None),) * axis + (i,)]

        return vjp

    return VjpRule("stack", forward, tuple(vjp_for(i) for i in range(n)), ((),) * n,
                   jvp=linear(_stack_jvp), handles_complex=True)  # fmt: skip


@implements(np.stack)
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrays = _as_arrays(arrays)
    kwargs = _join_kwargs(axis, dtype, casting)
    if _joined_as_numpy_does(np.stack, arrays, out, kwargs, "np.stack(..., out=)"):
        return out
    return assign_out(apply(_stack_rule(len(arrays)), arrays, kwargs), out, "np.stack")


def _block_leaves(arrays: Any) -> list[Any]:
    if type(arrays) is list:
        return [leaf for item in arrays for leaf in _block_leaves(item)]
    return [arrays]


def _block_depth(arrays: Any) -> int:
    depth = 0
    while type(arrays) is list and arrays:
        depth += 1
        arrays = arrays[0]
    return depth


@implements(np.block)
def block(arrays):
    # numpy checks the nesting and computes the value; traced leaves are then
    # assembled by the same concatenations (the engine would not look inside
    # nested lists: see WrappedValue.__array_function__'s activity check).
    result = np.block(unwrap(arrays))
    leaves = _block_leaves(arrays)
    if not any_active(leaves):
        return wrap_constant(result)
    depth = _block_depth(arrays)

    def assemble(item: Any, level: int) -> Any:
        if level < depth:
            parts = [assemble(part, level + 1) for part in item]
            return np.concatenate(parts, axis=-(depth - level))
        shape = (1,) * (result.ndim - np.ndim(item)) + np.shape(item)
        return (
            np.reshape(item, shape)
            if isinstance(item, WrappedValue)
            else np.reshape(np.asarray(item), shape)
        )

    if depth == 0:  # numpy copies a lone array rather than return it
        return np.copy(assemble(arrays, 0))
    return assemble(arrays, 0)


@implements(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    arrays = _as_arrays(args)
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    if all(np.shape(a) == shape for a in arrays):
        return tuple(arrays)
    return tuple(np.broadcast_to(a, shape) for a in arrays)


@implements(np.column_stack)
def column_stack(tup):
    # numpy turns 0-d and 1-d arrays into columns, then concatenates along axis 1.
    columns = [a if np.ndim(a) >= 2 else np.reshape(a, (-1, 1)) for a in _as_arrays(tup)]
    return np.concatenate(columns, axis=1)


# numpy 2.5 returns a tuple from meshgrid whatever the options; before, a list when sparse
# and not copied. Asked of numpy itself, so the rule follows the numpy it runs on.
_SPARSE_GRIDS_IN_A_LIST = isinstance(np.meshgrid(np.zeros(1), sparse=True, copy=False), list)


@implements(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    ones = (1,) * ndim
    shapes = [(*ones[:i], -1, *ones[i + 1 :]) for i in range(ndim)]
    if indexing == "xy" and ndim > 1:  # the first two axes are swapped
        shapes[0] = (1, -1, *ones[2:])
        shapes[1] = (-1, 1, *ones[2:])
    output = [np.reshape(x, s) for x, s in zip(_as_arrays(xi), shapes)]
    if not sparse:
        output = broadcast_arrays(*output)
    if copy:
        output = tuple(np.copy(x) for x in output)
    return output if _SPARSE_GRIDS_IN_A_LIST else tuple(output)  # the type numpy gives
