"""What a function can reach: the values ``checkpointed`` watches.

Every WrappedArray, WrappedScalar and ndarray reachable from a function
through closure cells, defaults, the globals its code names, a bound
method's object, ``functools.partial`` arguments, and the attributes and
items of those, a bounded number of levels and objects deep.
"""

from __future__ import annotations

import contextlib
import functools
import types
from typing import Any

import numpy as np

from mutagrad.diagnostics.sites import global_names
from mutagrad.traced.value import (
    WrappedArray,
    WrappedScalar,
)

_MAX_DEPTH = 6
_MAX_OBJECTS = 20_000
_ATOMS = (str, bytes, int, float, complex, bool, type(None), np.generic, type, range, slice)


def _is_library(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] in ("numpy", "mutagrad", "builtins", "functools", "attr", "attrs")


def children(obj: Any) -> list[Any]:
    """The objects ``obj`` refers to that code running it could reach."""
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)
    if isinstance(obj, dict):
        return list(obj.values())
    if isinstance(obj, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    if isinstance(obj, types.MethodType):
        return [obj.__self__, obj.__func__]
    if isinstance(obj, types.FunctionType):
        if _is_library(obj):
            return []
        found: list[Any] = list(obj.__defaults__ or ())
        found += list((obj.__kwdefaults__ or {}).values())
        for cell in obj.__closure__ or ():
            with contextlib.suppress(ValueError):  # an empty cell
                found.append(cell.cell_contents)
        names = global_names(obj.__code__)
        for name in names:
            if name in obj.__globals__:
                value = obj.__globals__[name]
                if isinstance(value, types.ModuleType):
                    # module.attribute: only the attributes this code names
                    found += [getattr(value, n) for n in names if n in vars(value)]
                else:
                    found.append(value)
        wrapped = getattr(obj, "__wrapped__", None)
        if wrapped is not None:
            found.append(wrapped)
        return found
    if isinstance(obj, (types.ModuleType, types.BuiltinFunctionType, np.ufunc)) or _is_library(
        type(obj)
    ):
        return []
    found = []
    if hasattr(obj, "__dict__"):
        found += list(vars(obj).values())
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if isinstance(slot, str) and hasattr(obj, slot):
                found.append(getattr(obj, slot))
    call_method = vars(type(obj)).get("__call__")
    if isinstance(call_method, types.FunctionType):
        found.append(call_method)
    return found


def reachable_values(
    root: Any,
) -> tuple[list[WrappedArray], list[WrappedScalar], list[np.ndarray]]:
    """WrappedArray bases, WrappedScalars and raw ndarrays reachable from ``root`` (bounded)."""
    wrapped: dict[int, WrappedArray] = {}
    scalars: dict[int, WrappedScalar] = {}
    raw: dict[int, np.ndarray] = {}
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack and len(seen) < _MAX_OBJECTS:
        obj, depth = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, WrappedArray):
            base = obj._base if obj._base is not None else obj
            wrapped[id(base)] = base
            continue
        if isinstance(obj, WrappedScalar):
            scalars[id(obj)] = obj
            continue
        if isinstance(obj, np.ndarray) and obj.dtype != object:
            raw[id(obj)] = obj
            continue
        if isinstance(obj, _ATOMS) or depth >= _MAX_DEPTH:
            continue
        stack.extend((child, depth + 1) for child in children(obj))
    return list(wrapped.values()), list(scalars.values()), list(raw.values())
