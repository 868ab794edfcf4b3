"""Unique values: ``np.unique`` and the Array API's ``unique_values``, ``unique_counts``,
``unique_inverse`` and ``unique_all``.

Each output value is a copy of an input element, so these are rearrangements
(:func:`mutagrad.rules.rearrange.rearranged`): numpy's own function runs on the
raw data, which gives numpy's exact values, order and integer outputs, and the
values are recorded as a gather of the input at one flat position per output
element. The pullback adds the cotangent back into those positions; it reads
no input data, so writing into the input after the call changes nothing.

Which element a value is taken from, when several are equal, is a convention
(the function has no derivative there): its **first occurrence** in the input
(in C order when ``axis=None``; the first slice along ``axis`` otherwise), the
element numpy's ``return_index`` names, as JAX does. Equal elements need not
have the same bits (``0.0`` and ``-0.0``; NaNs with ``equal_nan=True``): the
value is numpy's representative, bit for bit, whichever element that is, and
the gradient still goes to the first occurrence. With ``equal_nan=False``
every NaN is a value of its own, and the k-th NaN of the output is taken from
the k-th NaN of the input.

Integer outputs (``return_index``, ``return_inverse``, ``return_counts``, and
the named tuples' ``indices``, ``inverse_indices``, ``counts``) are numpy's
own raw integer arrays; the named tuples are numpy's types.

``np.union1d``, ``np.intersect1d``, ``np.setdiff1d`` and ``np.setxor1d`` are
numpy's Python code run on traced arrays
(:data:`mutagrad.rules.numpy_source.TRACED`), which reaches ``np.unique`` here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mutagrad.core.registry import implements
from mutagrad.rules.rearrange import index_map, rearranged
from mutagrad.traced.value import WrappedValue, array_like, unwrap, wrap_constant


def first_occurrences(data: np.ndarray, values: np.ndarray, axis: Any, equal_nan: bool) -> Any:
    """The flat position in ``data`` of every element of ``values`` (shaped like ``values``).

    ``values`` is numpy's unique output for ``data`` (its values array), in
    whatever order numpy gave it. Each output value (a slice along ``axis``
    when ``axis`` is an int) comes from the first input element (or slice) equal
    to it, as numpy's ``return_index`` says; ``values`` is matched to numpy's
    sorted unique values by sorting it with numpy's own comparison. The two
    stable sorts (``return_index`` asks numpy for one) keep NaNs, which never
    equal each other with ``equal_nan=False``, in input order.
    """
    kwargs = {"axis": axis, "equal_nan": equal_nan}
    first = np.unique(data, return_index=True, **kwargs)[1]
    rank = np.unique(values, return_index=True, return_inverse=True, **kwargs)[2]
    sources = first[np.ravel(rank)]
    if axis is None or data.ndim == 1:
        return sources.reshape(values.shape)
    return np.take(index_map(data.shape), sources, axis=axis)


def _gathered(name: str, x: WrappedValue, result: Any, axis: Any, equal_nan: bool) -> Any:
    """numpy's ``result`` (values first), its values recorded as a gather of ``x``."""
    several = isinstance(result, tuple)
    values = result[0] if several else result
    if x.size == 0:
        traced = wrap_constant(values)
    else:
        traced = rearranged(name, x, values, first_occurrences(x._raw, values, axis, equal_nan))
    if not several:
        return traced
    items = (traced, *result[1:])
    return type(result)(*items) if hasattr(result, "_fields") else items


@implements(np.unique)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, **keywords):  # fmt: skip
    # ``keywords``: what else this numpy's unique takes (``sorted=`` since numpy 2.3), handed
    # on as given, so each numpy accepts and refuses exactly its own keywords.
    ar = array_like(ar)
    result = np.unique(unwrap(ar), return_index, return_inverse, return_counts, axis,
                       equal_nan=equal_nan, **keywords)  # fmt: skip
    if not isinstance(ar, WrappedValue):
        return result
    return _gathered("unique", ar, result, axis, equal_nan)


def _array_api(numpy_function: Any) -> Any:
    """The rule of ``np.unique_values`` and kin: ``np.unique(x, equal_nan=False)``, flattened."""

    def adapter(x: Any) -> Any:
        x = array_like(x)
        result = numpy_function(unwrap(x))
        if not isinstance(x, WrappedValue):
            return result
        return _gathered(numpy_function.__name__, x, result, None, equal_nan=False)

    adapter.__name__ = adapter.__qualname__ = numpy_function.__name__
    return adapter


for _function in (np.unique_values, np.unique_counts, np.unique_inverse, np.unique_all):
    implements(_function)(_array_api(_function))
