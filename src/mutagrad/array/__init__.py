"""The traced array: mutagrad's ``ndarray``, one room with explicit edges.

Layered bottom up, each module importing only those before it::

    value       the types (WrappedValue, WrappedArray, WrappedScalar): their state,
                attributes, conversions, Python's questions, views, and the helpers
                every module here uses (wrap, operand, node_of, is_active)
    indexing    x[i]: reads, and the view-read and gather rules
    mutation    every write: x[i] = v, x += v, out=, and the checks, poisoning and
                recording around it
    dispatch    numpy's protocols and the Python operators: the operator fast path
                (binary, unary) and the general one (apply), calls without a
                derivative, numpy's own code traced through
    methods     the in-place ndarray methods (fill, partition, setfield, ...)

The methods that index, write or dispatch live in the modules that implement
them; this door binds them to the types, and registers the types with the
engine (:func:`mutagrad.core.engine.register_traced_type`), which knows them
through that registration only. Nothing here knows a numpy function's
derivative: ``x.sort()``, ``x.put()``, ``x.astype()``, ``x.view(dtype)`` and
``ufunc.at`` find theirs in :data:`mutagrad.core.registry.FUNCTION_RULES`.
"""

from mutagrad.array import dispatch, indexing, methods, mutation
from mutagrad.array.value import WrappedArray, WrappedScalar, WrappedValue, traced_handle
from mutagrad.core.engine import register_traced_type
from mutagrad.core.regions import traced_densify

__all__ = ["WrappedArray", "WrappedScalar", "WrappedValue"]

# numpy's protocols and the Python operators: every traced value.
WrappedValue.__array_ufunc__ = dispatch.array_ufunc  # type: ignore[method-assign]
WrappedValue.__array_function__ = dispatch.array_function  # type: ignore[method-assign]
for _name, _method in dispatch.operator_methods().items():
    setattr(WrappedValue, _name, _method)
WrappedValue.byteswap = methods.byteswap  # type: ignore[method-assign]
WrappedValue.real = WrappedValue.real.setter(methods.set_real)  # type: ignore[attr-defined]
WrappedValue.imag = WrappedValue.imag.setter(methods.set_imag)  # type: ignore[attr-defined]

# Indexing and the in-place methods: arrays (scalars are immutable, as numpy's).
WrappedArray.__getitem__ = indexing.getitem  # type: ignore[method-assign]
WrappedArray.__setitem__ = mutation.setitem  # type: ignore[method-assign]
WrappedArray.fill = methods.fill  # type: ignore[method-assign]
WrappedArray.partition = methods.partition  # type: ignore[method-assign]
WrappedArray.setfield = methods.setfield  # type: ignore[method-assign]

register_traced_type(WrappedValue, dispatch.apply, traced_handle, traced_densify)
