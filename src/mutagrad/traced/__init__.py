"""The traced array: mutagrad's ``ndarray``, one room with explicit edges.

Layered bottom up, each module importing only those before it::

    value       the types (WrappedValue, WrappedArray, WrappedScalar): their state,
                attributes, conversions, Python's questions, views, and the helpers
                every module here uses (wrap, operand, node_of, is_active)
    indexing    x[i]: reads, and the view-read and gather rules
    mutation    every write: x[i] = v, x += v, out=, and the checks, poisoning and
                recording around it
    elision     forward mode's temporary elision: (y - yh) ** 2 into the difference
    dispatch    numpy's protocols and the Python operators: the operator fast path
                (binary, unary) and the general one (apply), calls without a
                derivative, numpy's own code traced through
    methods     the in-place ndarray methods (fill, partition, setfield, ...)
    flat        x.flat: numpy's flat iterator, read, iterated and written

The methods that index, write or dispatch live in the modules that implement
them; this door binds them to the types, and registers the types with the
engine (:func:`mutagrad.core.engine.register_traced_type`), which knows them
through that registration only. Nothing here knows a numpy function's
derivative: ``x.sort()``, ``x.put()``, ``x.astype()``, ``x.view(dtype)`` and
``ufunc.at`` find theirs in :data:`mutagrad.core.registry.FUNCTION_RULES`.
"""

from typing import Any

import numpy as np

from mutagrad.core.engine import register_traced_type
from mutagrad.core.regions import traced_densify
from mutagrad.traced import dispatch, flat, indexing, methods, mutation
from mutagrad.traced.tangents import region_tangents
from mutagrad.traced.value import (
    WrappedArray,
    WrappedScalar,
    WrappedValue,
    holds_wrapped,
    is_active,
    refuse_missing_ndarray_attributes,
    stack_sequence,
    traced_handle,
)

__all__ = ["WrappedArray", "WrappedScalar", "WrappedValue", "array", "asarray", "is_traced"]

# (Binding methods onto the classes is this door's job, which mypy refuses for methods the
# classes declare: hence the ignores.)
# numpy's protocols and the Python operators: every traced value.
WrappedValue.__array_ufunc__ = dispatch.array_ufunc  # type: ignore[method-assign]
WrappedValue.__array_function__ = dispatch.array_function  # type: ignore[method-assign]
for _name, _method in dispatch.operator_methods().items():
    setattr(WrappedValue, _name, _method)
WrappedValue.byteswap = methods.byteswap  # type: ignore[method-assign]
WrappedValue.real = WrappedValue.real.setter(methods.set_real)  # type: ignore[method-assign, attr-defined]
WrappedValue.imag = WrappedValue.imag.setter(methods.set_imag)  # type: ignore[method-assign, attr-defined]

# +, -, * and ** of arrays: into a large temporary's memory where that is proved safe
# (mutagrad.traced.elision; a scalar is never large).
for _name, _method in dispatch.eliding_operator_methods().items():
    setattr(WrappedArray, _name, _method)

# Indexing and the in-place methods: arrays (scalars are immutable, as numpy's).
WrappedArray.__getitem__ = indexing.getitem  # type: ignore[method-assign]
WrappedArray.__setitem__ = mutation.setitem  # type: ignore[method-assign]
WrappedArray.fill = methods.fill  # type: ignore[method-assign]
WrappedArray.partition = methods.partition  # type: ignore[method-assign]
WrappedArray.setfield = methods.setfield  # type: ignore[method-assign]
WrappedArray.flat = property(flat.flat_iterator, flat.set_flat)  # type: ignore[assignment]

# Every public ndarray attribute the types still lack is refused by name.
refuse_missing_ndarray_attributes(WrappedArray)
refuse_missing_ndarray_attributes(WrappedScalar)

register_traced_type(WrappedValue, dispatch.apply, traced_handle, traced_densify, region_tangents)


# -- making traced values ---------------------------------------------------------


def array(obj: Any, dtype: Any = None, *, copy: bool = True) -> WrappedArray:
    """A WrappedArray holding a copy of ``obj`` (like ``np.array``).

    A (nested) list of traced values is stacked on the tape, so
    ``mutagrad.array([a, b])`` keeps the gradients of ``a`` and ``b``.
    """
    if isinstance(obj, WrappedValue):
        if not copy and (dtype is None or np.dtype(dtype) == obj.dtype):
            return obj  # type: ignore[return-value]  # (a WrappedScalar comes back as itself)
        return obj.copy() if dtype is None else obj.astype(dtype)
    if holds_wrapped(obj):
        return stack_sequence(obj, dtype)
    return WrappedArray(np.array(obj, dtype=dtype, copy=copy))


def asarray(obj: Any, dtype: Any = None) -> WrappedArray:
    """``obj`` as a WrappedArray: ``obj`` itself if it is one, else a copy (as ``jnp.asarray``).

    A raw ndarray is copied rather than shared: the program could write the
    raw array by name, behind the WrappedArray's version number, and a
    pullback reading the WrappedArray would then read the new values.
    """
    if holds_wrapped(obj):
        return array(obj, dtype, copy=False)
    return WrappedArray(np.array(obj, dtype=dtype, copy=True))


def is_traced(x: Any) -> bool:
    """Whether ``x`` carries a gradient in the current gradient call."""
    return isinstance(x, WrappedValue) and is_active(x)
