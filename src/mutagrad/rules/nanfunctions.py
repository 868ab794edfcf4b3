"""numpy's NaN-ignoring functions: nansum, nanprod, nanmean, nanvar, nanstd, nanmax, nanmin,
nancumsum, nancumprod.

numpy's own implementations convert their input to a raw array first, so
mutagrad cannot trace through them. These adapters do what they do, with the
same operations in the same order (so the values are numpy's, bit for bit):
replace NaNs by the reduction's neutral value (``np.where``, whose pullback
sends nothing to the replaced elements), then reduce with the rules of
mutagrad.rules.reductions and cumulative. An all-NaN group gives NaN, with
numpy's warning (nanmax and nanmin with ``initial=`` give the initial value, as
numpy does); no gradient flows from it. ``where=`` is passed to the reductions.
"""

from __future__ import annotations

import warnings

import numpy as np

from mutagrad.core.registry import implements
from mutagrad.traced.mutation import assign_out

_NoValue = np._NoValue


def _replace_nan(a, value):
    """``a`` with NaNs replaced by ``value``, and the NaN mask (None for exact dtypes)."""
    if not np.issubdtype(np.result_type(a), np.inexact):
        return a, None
    mask = np.isnan(a)
    return np.where(mask, value, a), mask


def _keepdims(keepdims):
    return {} if keepdims is _NoValue else {"keepdims": keepdims}


def _given(**options):
    """The keyword arguments the caller gave (numpy marks the others with ``np._NoValue``)."""
    return {k: v for k, v in options.items() if v is not _NoValue}


def _as(value, dtype):
    """``value`` in ``dtype``, as numpy's in-place division (casting='unsafe') leaves it."""
    return value if np.result_type(value) == dtype else value.astype(dtype)


@implements(np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=_NoValue, initial=_NoValue,
           where=_NoValue):  # fmt: skip
    a, _ = _replace_nan(a, 0)
    extra = _given(keepdims=keepdims, initial=initial, where=where)
    total = np.sum(a, axis=axis, dtype=dtype, **extra)
    return assign_out(total, out, "np.nansum")


@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=_NoValue, initial=_NoValue,
            where=_NoValue):  # fmt: skip
    a, _ = _replace_nan(a, 1)
    extra = _given(keepdims=keepdims, initial=initial, where=where)
    product = np.prod(a, axis=axis, dtype=dtype, **extra)
    return assign_out(product, out, "np.nanprod")


@implements(np.nancumsum)
def nancumsum(a, axis=None, dtype=None, out=None):
    a, _ = _replace_nan(a, 0)
    return np.cumsum(a, axis=axis, dtype=dtype, out=out)


@implements(np.nancumprod)
def nancumprod(a, axis=None, dtype=None, out=None):
    a, _ = _replace_nan(a, 1)
    return np.cumprod(a, axis=axis, dtype=dtype, out=out)


def _extremum(name, reduce, fill):
    def adapter(a, axis=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue):
        extra = _given(keepdims=keepdims, initial=initial, where=where)
        arr, mask = _replace_nan(a, fill)
        result = reduce(arr, axis=axis, **extra)
        # numpy reduces with np.fmax/np.fmin, which skip NaNs: a group of NaNs
        # only is NaN, unless initial= gives it a value (where= needs initial=).
        if mask is not None and initial is _NoValue:
            all_nan = np.all(mask, axis=axis, **_keepdims(keepdims))
            if np.any(all_nan):
                warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=2)
                result = np.where(all_nan, np.nan, result)
        return assign_out(result, out, f"np.{name}")

    adapter.__name__ = name
    return adapter


implements(np.nanmax)(_extremum("nanmax", np.max, -np.inf))
implements(np.nanmin)(_extremum("nanmin", np.min, np.inf))


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=_NoValue, *, where=_NoValue):
    arr, mask = _replace_nan(a, 0)
    extra = _given(keepdims=keepdims, where=where)
    if mask is None:
        return np.mean(arr, axis=axis, dtype=dtype, out=out, **extra)
    count = np.sum(~mask, axis=axis, dtype=np.intp, **extra)
    total = np.sum(arr, axis=axis, dtype=dtype, **extra)
    empty = count == 0
    # Dividing by a count of 1 where it is 0 keeps the pullback finite; the value there
    # is NaN, as numpy's 0 / 0.
    mean = _as(total / np.where(empty, 1, count), np.result_type(total))
    if np.any(empty):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
        mean = np.where(empty, np.nan, mean)
    return assign_out(mean, out, "np.nanmean")


@implements(np.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NoValue, *, where=_NoValue,
           mean=_NoValue, correction=_NoValue):  # fmt: skip
    if correction is not _NoValue:
        ddof = correction
    arr, mask = _replace_nan(a, 0)
    selected = _given(where=where)
    if mask is None:
        variance = np.var(arr, axis=axis, dtype=dtype, ddof=ddof, **_keepdims(keepdims),
                          **selected, **_given(mean=mean))  # fmt: skip
        return assign_out(variance, out, "np.nanvar")
    count = np.sum(~mask, axis=axis, dtype=np.intp, keepdims=True, **selected)
    if mean is _NoValue:
        total = np.sum(arr, axis=axis, dtype=dtype, keepdims=True, **selected)
        # Empty groups and dof <= 0 give NaN, as in numpy; dividing by 1 there instead
        # keeps the pullback finite.
        average = _as(total / np.where(count == 0, 1, count), np.result_type(total))
    else:
        average = mean
    # numpy subtracts into arr itself (a given float64 mean leaves float32 deviations).
    # Elements where= leaves out get a deviation too, but the sum skips them.
    deviation = np.where(mask, 0, _as(arr - average, np.result_type(arr)))
    squares = np.sum(deviation * deviation, axis=axis, dtype=dtype, **_keepdims(keepdims),
                     **selected)  # fmt: skip
    if np.ndim(squares) < np.ndim(count):
        count = np.squeeze(count, axis)
    dof = count - ddof
    bad = dof <= 0
    variance = _as(squares / np.where(bad, 1, dof), np.result_type(squares))
    if np.any(bad):
        warnings.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning, stacklevel=2)
        variance = np.where(bad, np.nan, variance)
    return assign_out(variance, out, "np.nanvar")


@implements(np.nanstd)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NoValue, *, where=_NoValue,
           mean=_NoValue, correction=_NoValue):  # fmt: skip
    variance = nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where,
                      mean=mean, correction=correction)  # fmt: skip
    # Where the variance is exactly 0 (a group of one), sqrt's derivative is infinite
    # but the std is identically 0: its gradient is 0 there, not 0 * inf.
    zero = variance == 0
    std = np.where(zero, 0.0, np.sqrt(np.where(zero, 1.0, variance)))
    return assign_out(_as(std, np.result_type(variance)), out, "np.nanstd")
