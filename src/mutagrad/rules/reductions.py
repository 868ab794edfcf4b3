"""Derivative rules of reductions: sum, mean, prod, max, min, var, std and average (the
ufuncs' ``reduce`` are in :mod:`mutagrad.rules.ufunc_methods`, with these vjps)."""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from mutagrad.core.jvps import batch_axis, complex_exact, hand, linear, through_gradient
from mutagrad.core.registry import ANS, VjpRule, implements
from mutagrad.traced.dispatch import apply, apply_one, call_without_derivative
from mutagrad.traced.mutation import assign_out
from mutagrad.traced.value import WrappedValue, unwrap

_NoValue = np._NoValue


def reduced_axes(axis, ndim: int) -> tuple[int, ...]:
    """The axes a reduction with ``axis`` removes from an ``ndim``-dimensional array."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(a % ndim for a in axis))
    return (axis % ndim,)


# Below this many elements a filled array is cheaper to make than a broadcast view.
_SMALL = 4096


def expand(g, shape: tuple[int, ...], axis, keepdims: bool):
    """Broadcast a reduction's cotangent (or output) back to the input ``shape``."""
    if axis is None and type(g) is np.float64 and math.prod(shape) <= _SMALL:
        filled = np.empty(shape)  # a full reduction's scalar cotangent, small input
        filled.fill(g)  # (np.full does the same in Python, three times slower)
        return filled
    if not keepdims:
        axes = reduced_axes(axis, len(shape))
        g = np.reshape(g, [1 if i in axes else n for i, n in enumerate(shape)])
    return np.broadcast_to(g, shape)


def _count(shape: tuple[int, ...], axis) -> int:
    if axis is None:
        return math.prod(shape)
    return math.prod(shape[a] for a in reduced_axes(axis, len(shape)))


def _is_mask(where) -> bool:
    return where is not _NoValue and where is not None


def _masked(g, where):
    return np.where(where, g, 0.0) if _is_mask(where) else g


def _sum_vjp(g, ans, x, axis=None, keepdims=False, where=_NoValue, **_):
    return _masked(expand(g, x.shape, axis, keepdims), where)


def _mean_vjp(g, ans, x, axis=None, keepdims=False, where=_NoValue, **_):
    if where is not _NoValue and where is not None:
        count = np.sum(np.broadcast_to(where, x.shape), axis=axis, keepdims=True)
        return np.where(where, expand(g, x.shape, axis, keepdims) / count, 0.0)
    return expand(g / _count(x.shape, axis), x.shape, axis, keepdims)  # divide before broadcasting


def _prod_of_others(x, axis):
    """For each element, the product of the others in its reduction group (exact with zeros)."""
    axes = reduced_axes(axis, np.ndim(x))
    kept = [a for a in range(np.ndim(x)) if a not in axes]
    moved = np.transpose(x, kept + list(axes))
    lead = moved.shape[: len(kept)]
    flat = np.reshape(moved, (*lead, -1))
    ones = np.ones((*lead, 1), dtype=flat.dtype)
    left = np.concatenate([ones, np.cumprod(flat[..., :-1], axis=-1)], axis=-1)
    right = np.concatenate([np.cumprod(flat[..., :0:-1], axis=-1)[..., ::-1], ones], axis=-1)
    others = np.reshape(left * right, moved.shape)
    return np.transpose(others, np.argsort(kept + list(axes)))


def _prod_vjp(g, ans, x, axis=None, keepdims=False, initial=_NoValue, where=_NoValue, **_):
    if _is_mask(where):
        # numpy leaves the masked-out elements out of the product: as factors
        # of 1 they change nothing, and they get no gradient (below).
        x = np.where(where, x, 1)
    g = expand(g, x.shape, axis, keepdims)
    if not np.any(x == 0):
        return _masked(g * expand(ans, x.shape, axis, keepdims) / x, where)
    others = _prod_of_others(x, axis)
    if initial is not _NoValue and initial is not None:
        # numpy multiplies initial= into every product; ans / x above includes
        # it already, the product of the other elements does not.
        others = others * initial
    return _masked(g * others, where)


def _extremum_vjp(g, ans, x, axis=None, keepdims=False, where=_NoValue, **_):
    hit = x == expand(ans, x.shape, axis, keepdims)
    if _is_mask(where):
        hit = hit & where  # a masked-out element equal to the result did not produce it
    # With initial=, a group may have no element equal to the result (the
    # initial value won): its count is 0 and its gradient is 0, not 0/0 = nan.
    count = np.maximum(np.sum(hit, axis=axis, keepdims=True), 1)
    return expand(g, x.shape, axis, keepdims) * hit / count


def _call(function):
    def fun(x, **kwargs):
        return function(x, **kwargs)

    return fun


def _reduced(default_axis):
    """The reduced axes of a reduction's argument (for its forward rule)."""

    def axes_of(ndim, kwargs):
        return reduced_axes(kwargs.get("axis", default_axis), ndim), kwargs.get("keepdims", False)

    return axes_of


def _gradient_jvp(vjp, default_axis=None):
    return through_gradient(vjp, _reduced(default_axis))


def _linear_reduction_jvp(function, vjp):
    """sum and mean are linear: the reduction of the tangent along the same axes, the batch
    axis kept (``initial=`` is a constant and ``where=`` is given to the vjp's route)."""
    by_gradient = _gradient_jvp(vjp)

    @complex_exact  # (linear)
    @hand
    def jvp(tangents, ans, args, kwargs):
        kw = kwargs or {}
        if set(kw) - {"axis", "keepdims"}:
            return by_gradient(tangents, ans, args, kwargs)
        axis = batch_axis(kw.get("axis"), np.ndim(args[0]))
        return function(tangents[0], axis=axis, keepdims=kw.get("keepdims", False))

    return jvp


# Sums and means are linear, a product holomorphic, and max/min (numpy orders complex
# numbers by real part, then imaginary part) select: each vjp above is JAX's for
# complex values as written.
SUM = VjpRule("sum", _call(np.sum), (_sum_vjp,), ((),),
              jvp=_linear_reduction_jvp(np.sum, _sum_vjp), handles_complex=True)  # fmt: skip
MEAN = VjpRule("mean", _call(np.mean), (_mean_vjp,), ((),),
               jvp=_linear_reduction_jvp(np.mean, _mean_vjp), handles_complex=True)  # fmt: skip
PROD = VjpRule("prod", _call(np.prod), (_prod_vjp,), ((0, ANS),),
               jvp=_gradient_jvp(_prod_vjp), handles_complex=True)  # fmt: skip
MAX = VjpRule("max", _call(np.max), (_extremum_vjp,), ((0, ANS),),
              jvp=_gradient_jvp(_extremum_vjp), handles_complex=True)  # fmt: skip
MIN = VjpRule("min", _call(np.min), (_extremum_vjp,), ((0, ANS),),
              jvp=_gradient_jvp(_extremum_vjp), handles_complex=True)  # fmt: skip


def _options(**kwargs):
    options = {k: v for k, v in kwargs.items() if v is not _NoValue and v is not None}
    if "where" in options:
        # A mask carries no derivative and must reach numpy raw: a traced one
        # (where=x > 0) would send numpy's own reduction back into
        # WrappedArray.__array_ufunc__, which calls this rule again, forever.
        options["where"] = unwrap(options["where"])
    return options


def _plain(a, dtype, out, where, initial=_NoValue) -> bool:
    """A reduction of a float WrappedArray with only ``axis`` and ``keepdims`` given."""
    return (
        dtype is None
        and out is None
        and where is _NoValue
        and initial is _NoValue
        and isinstance(a, WrappedValue)
        and type(a._raw) is np.ndarray
        and a._raw.dtype.kind == "f"
    )


@implements(np.sum)
def sum_(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=_NoValue):
    if _plain(a, dtype, out, where, initial):
        # What np.sum runs for an ndarray, without its Python layers (every
        # loss ends in a reduction).
        x = a._raw
        result = np.add.reduce(x, axis, None, None, keepdims)
        # A reduction over all axes records no keywords: axis=None and keepdims=False are
        # its vjp's and jvp's defaults, and a vjp called with **keywords costs more.
        kwargs = None if axis is None and not keepdims else {"axis": axis, "keepdims": keepdims}
        return apply_one(SUM, a, kwargs, result)
    kw = _options(dtype=dtype, initial=initial, where=where)
    result = apply(SUM, (a,), {"axis": axis, "keepdims": keepdims, **kw})
    return assign_out(result, out, "np.sum")


@implements(np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=_NoValue):
    if axis is None and not keepdims and _plain(a, dtype, out, where) and a._raw.size:
        x = a._raw
        kind = x.dtype.type
        if kind is np.float64:
            # numpy's _mean over all axes, without its Python layers: the same sum,
            # divided by the count. numpy divides by the count as an intp; a Python
            # int gives the same float64 division (a count below 2**53 converts to
            # float64 exactly) without making the intp.
            result = np.add.reduce(x, None) / x.size
            return apply_one(MEAN, a, None, result)  # (no keywords: as in sum_)
        if kind is np.float32:
            # float32 / intp divides in float64 (a float32 count could round), and numpy
            # casts the quotient back to float32.
            result = kind(np.add.reduce(x, None) / np.intp(x.size))
            return apply_one(MEAN, a, None, result)  # (no keywords: as in sum_)
        # (numpy sums float16 in float32: the general path below.)
    kw = _options(dtype=dtype, where=where)
    result = apply(MEAN, (a,), {"axis": axis, "keepdims": keepdims, **kw})
    return assign_out(result, out, "np.mean")


@implements(np.prod)
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=_NoValue):
    kw = _options(dtype=dtype, initial=initial, where=where)
    result = apply(PROD, (a,), {"axis": axis, "keepdims": keepdims, **kw})
    return assign_out(result, out, "np.prod")


def _extremum(rule, name):
    def adapter(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=_NoValue):
        kw = _options(initial=initial, where=where)
        result = apply(rule, (a,), {"axis": axis, "keepdims": keepdims, **kw})
        return assign_out(result, out, f"np.{name}")

    return adapter


implements(np.max, np.amax)(_extremum(MAX, "max"))
implements(np.min, np.amin)(_extremum(MIN, "min"))


def _group_sizes(shape, axis, keepdims, where):
    """How many elements each group of a reduction holds: those ``where`` selects, if given."""
    if not _is_mask(where):
        return _count(shape, axis)
    selected = np.broadcast_to(unwrap(where), shape)
    return np.sum(selected, axis=axis, dtype=np.intp, keepdims=keepdims)


@implements(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NoValue,
        mean=_NoValue, correction=_NoValue):  # fmt: skip
    if correction is not _NoValue:
        ddof = correction
    mask = {"where": unwrap(where)} if _is_mask(where) else {}
    if mean is _NoValue or mean is None:
        mean = np.mean(a, axis=axis, dtype=dtype, keepdims=True, **mask)
    centred = a - mean
    if np.result_type(centred).kind == "c":
        # numpy's |c|^2 of a complex value: re * re + im * im, real
        squared = centred.real * centred.real + centred.imag * centred.imag
    else:
        squared = centred * centred
    total = np.sum(squared, axis=axis, dtype=dtype, keepdims=keepdims, **mask)
    count = _group_sizes(np.shape(a), axis, keepdims, where)
    if not mask:
        return assign_out(total / max(count - ddof, 0), out, "np.var")
    variance = total / np.maximum(count - ddof, 0)
    if variance.dtype != total.dtype:
        # numpy divides by the intp counts into the sum itself (casting="unsafe"):
        # a float32 variance stays float32.
        variance = variance.astype(total.dtype)
    return assign_out(variance, out, "np.var")


@implements(np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NoValue,
        mean=_NoValue, correction=_NoValue):  # fmt: skip
    variance = var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where,
                   mean=mean, correction=correction)  # fmt: skip
    sizes = _group_sizes(np.shape(a), axis, keepdims, where)
    if (mean is _NoValue or mean is None) and np.any(sizes == 1):
        # A group of one (selected) element has a variance identically 0, so its
        # std is 0 with gradient 0, where sqrt's vjp would give 0 * inf = nan.
        # (With mean= given the variance is not constant there.)
        alone = (sizes == 1) & (variance == 0)
        if np.all(alone):
            return assign_out(variance, out, "np.std")
        if np.any(alone):
            root = np.sqrt(np.where(alone, 1.0, variance))
            return assign_out(np.where(alone, variance, root), out, "np.std")
    return assign_out(np.sqrt(variance), out, "np.std")


@implements(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=_NoValue):
    # numpy's own steps (its implementation converts a to a raw array first).
    if not isinstance(a, WrappedValue):
        a = np.asanyarray(a)
    if axis is not None:
        axis = normalize_axis_tuple(axis, np.ndim(a), argname="axis")
    options = {} if keepdims is _NoValue else {"keepdims": keepdims}
    if weights is None:
        mean_ = np.mean(a, axis, **options)
        scale = np.result_type(mean_).type(np.size(a) / max(np.size(mean_), 1))
    else:
        w = weights if isinstance(weights, WrappedValue) else np.asanyarray(weights)
        if np.issubdtype(np.result_type(a), np.integer) or np.result_type(a) == np.bool_:
            result_dtype = np.result_type(a, w, "f8")
        else:
            result_dtype = np.result_type(a, w)
        if np.shape(a) != np.shape(w):
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if np.shape(w) != tuple(np.shape(a)[ax] for ax in axis):
                raise ValueError(
                    "Shape of weights must be consistent with shape of a along specified axis."
                )
            w = np.transpose(w, np.argsort(axis))
            w = np.reshape(w, tuple(n if ax in axis else 1 for ax, n in enumerate(np.shape(a))))
        scale = np.sum(w, axis=axis, dtype=result_dtype, **options)
        if np.any(scale == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        mean_ = np.sum(np.multiply(a, w, dtype=result_dtype), axis, **options) / scale
    if returned:
        if np.shape(scale) != np.shape(mean_):
            scale = np.copy(np.broadcast_to(scale, np.shape(mean_)))
        return mean_, scale
    return mean_


# -- bincount: the counts carry no derivative, the weighted sums do -----------------------


def _bincount_raw(weights, index=None, minlength=0):
    return np.bincount(index, weights, minlength)


BINCOUNT = VjpRule(
    "bincount",
    _bincount_raw,
    # Each weight went into the bin its index names: its cotangent is that bin's.
    (lambda g, ans, weights, index=None, minlength=0: g[index],),
    ((),),
    jvp=linear(),
)


@implements(np.bincount)
def bincount(x, weights=None, minlength=0):
    if weights is None:
        return call_without_derivative(np.bincount, (x,), {"minlength": minlength})
    index = np.array(unwrap(x))  # integers: no derivative, and a private copy for the pullback
    return apply(BINCOUNT, (weights,), {"index": index, "minlength": minlength})
