"""numpy's Python-level library functions that cannot be traced through, run as numpy's steps.

numpy implements these in Python, but their first step turns the input into a
raw ndarray (``np.asarray``, ``np.asanyarray``) or their result is built in a
raw buffer (``np.empty``) that cannot hold a traced value, so mutagrad would
refuse them. Each adapter below takes numpy's steps on the traced arrays
themselves, through functions that have rules, so values are numpy's and
the derivative follows:

* ``np.astype``: the method ``x.astype``;
* ``np.fft.fftshift``, ``np.fft.ifftshift``: ``np.roll`` by half of each axis;
* ``np.apply_along_axis``: the function on each 1-d slice, the results stacked
  (numpy fills a raw buffer); ``np.apply_over_axes``: numpy's loop;
* ``np.vander``: the columns' running products, ``np.cumprod`` (numpy's
  ``multiply.accumulate`` into a raw buffer); ``np.polymul`` (``np.convolve``
  of the coefficients, leading zeros trimmed as numpy's ``poly1d`` trims
  them), ``np.polyder``, ``np.polyint`` (numpy's recursions, as loops);
* ``np.linalg.outer``, ``np.linalg.cross``: their argument checks, then
  ``np.outer`` and ``np.cross``;
* ``np.linalg.tensorinv``, ``np.linalg.tensorsolve``: a reshape to a square
  matrix, ``np.linalg.inv`` or ``np.linalg.solve``, and a reshape back.
"""

from __future__ import annotations

import math
from itertools import product

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from mutagrad.core.registry import implements
from mutagrad.traced.value import WrappedValue, unwrap


def _array(value):
    """A traced value as it is; anything else as numpy's ``asanyarray`` makes it."""
    return value if isinstance(value, WrappedValue) else np.asanyarray(value)


@implements(np.astype)
def astype(x, dtype, /, *, copy=True, device=None):
    if device not in (None, "cpu"):
        return np.astype(np.asarray([]), dtype, device=device)  # numpy's error
    return x.astype(dtype, copy=copy)


def _shifted(x, axes, sign):
    x = _array(x)
    if axes is None:
        axes = tuple(range(np.ndim(x)))
        shift = [sign * (n // 2) for n in np.shape(x)]
    elif isinstance(axes, (int, np.integer)):
        shift = sign * (np.shape(x)[axes] // 2)
    else:
        shift = [sign * (np.shape(x)[axis] // 2) for axis in axes]
    return np.roll(x, shift, axes)


@implements(np.fft.fftshift)
def fftshift(x, axes=None):
    return _shifted(x, axes, 1)


@implements(np.fft.ifftshift)
def ifftshift(x, axes=None):
    return _shifted(x, axes, -1)


@implements(np.apply_along_axis)
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    arr = _array(arr)
    axis = normalize_axis_index(axis, np.ndim(arr))
    moved = np.moveaxis(arr, axis, -1)
    batch = np.shape(moved)[:-1]
    if not all(batch):
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = [
        _array(func1d(moved[index], *args, **kwargs)) for index in product(*map(range, batch))
    ]
    # numpy puts the function's result dimensions where the axis was.
    stacked = np.reshape(np.stack(results), batch + np.shape(results[0]))
    result_ndim = np.ndim(results[0])
    return np.moveaxis(
        stacked,
        tuple(range(len(batch), len(batch) + result_ndim)),
        tuple(range(axis, axis + result_ndim)),
    )


@implements(np.apply_over_axes)
def apply_over_axes(func, a, axes):
    value = _array(a)
    n = np.ndim(a)
    for axis in np.atleast_1d(axes).tolist():
        axis = axis + n if axis < 0 else axis
        result = func(value, axis)
        if np.ndim(result) != np.ndim(value):
            result = np.expand_dims(result, axis)
            if np.ndim(result) != np.ndim(value):
                raise ValueError("function is not returning an array of the correct shape")
        value = result
    return value


@implements(np.vander)
def vander(x, N=None, increasing=False):
    x = _array(x)
    if np.ndim(x) != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = len(x) if N is None else N
    dtype = np.promote_types(x.dtype, int)
    if n == 0:
        return np.zeros_like(x, dtype=dtype, shape=(len(x), 0))
    # Column k is x**k, computed as numpy does: the running product of k copies of x.
    ones = np.ones_like(x, dtype=dtype, shape=(len(x), 1))
    columns = ones
    if n > 1:
        repeated = np.broadcast_to(np.expand_dims(x.astype(dtype), 1), (len(x), n - 1))
        columns = np.concatenate([ones, np.cumprod(repeated, axis=1)], axis=1)
    return columns if increasing else np.flip(columns, axis=1).copy()


def _coefficients(p):
    """A polynomial's coefficients as numpy's poly1d keeps them: 1-d, leading zeros trimmed."""
    p = np.atleast_1d(_array(p))
    nonzero = np.flatnonzero(unwrap(p))
    return p[nonzero[0] :] if len(nonzero) else p[-1:] * 0


@implements(np.polymul)
def polymul(a1, a2):
    if isinstance(a1, np.poly1d) or isinstance(a2, np.poly1d):
        return np.poly1d(polymul(np.asarray(a1), np.asarray(a2)))
    return np.convolve(_coefficients(a1), _coefficients(a2))


@implements(np.polyder)
def polyder(p, m=1):
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    p = _array(p)
    for _ in range(m):
        p = p[:-1] * np.arange(len(p) - 1, 0, -1)
    return p


@implements(np.polyint)
def polyint(p, m=1, k=None):
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = np.zeros(m) if k is None else np.atleast_1d(_array(k))
    if len(k) == 1 and m > 1:
        k = k[0] * np.ones(m)
    if len(k) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    p = _array(p)
    for i in range(m):
        p = np.concatenate((p / np.arange(len(p), 0, -1), k[i : i + 1]))
    return p


@implements(np.linalg.outer)
def linalg_outer(x1, x2, /):
    x1, x2 = _array(x1), _array(x2)
    if np.ndim(x1) != 1 or np.ndim(x2) != 1:
        raise ValueError(
            "Input arrays must be one-dimensional, but they are "
            f"x1.ndim={np.ndim(x1)} and x2.ndim={np.ndim(x2)}."
        )
    return np.outer(x1, x2)


@implements(np.linalg.cross)
def linalg_cross(x1, x2, /, *, axis=-1):
    x1, x2 = _array(x1), _array(x2)
    if np.shape(x1)[axis] != 3 or np.shape(x2)[axis] != 3:
        raise ValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, but they are "
            f"{np.shape(x1)[axis]} and {np.shape(x2)[axis]} dimensional instead."
        )
    return np.cross(x1, x2, axis=axis)


@implements(np.linalg.tensorinv)
def tensorinv(a, ind=2):
    a = _array(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    shape = np.shape(a)
    rows = math.prod(shape[ind:])
    inverse = np.linalg.inv(np.reshape(a, (rows, -1)))
    return np.reshape(inverse, shape[ind:] + shape[:ind])


@implements(np.linalg.tensorsolve)
def tensorsolve(a, b, axes=None):
    a, b = _array(a), _array(b)
    n = np.ndim(a)
    if axes is not None:
        order = list(range(n))
        for k in axes:  # numpy's loop, and its errors
            order.remove(k)
            order.insert(n, k)
        a = np.transpose(a, order)
    shape = np.shape(a)[-(n - np.ndim(b)) :]
    size = math.prod(shape)
    if np.size(a) != size**2:
        raise np.linalg.LinAlgError(
            "Input arrays must satisfy the requirement "
            "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])"
        )
    solution = np.linalg.solve(np.reshape(a, (size, size)), np.ravel(b))
    return np.reshape(solution, shape)
