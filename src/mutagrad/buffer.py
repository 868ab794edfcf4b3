"""``mutagrad.Buffer``: Zygote's Buffer, an array that may be written in every mode.

A Buffer is filled in place (even in strict mode, where writes to other
arrays raise) and then frozen by ``buf.copy()``, which returns an ordinary
WrappedArray sharing the Buffer's memory without copying it. Writes through
the Buffer after that raise :class:`~mutagrad.FrozenBufferError`. Returning a
Buffer that was never frozen from a differentiated function raises too: in
Zygote that case silently drops gradients (Zygote #177).

Reading a Buffer is an ordinary traced read, so gradients flow through it
whether or not it is frozen.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mutagrad.core.trees import flatten
from mutagrad.errors import MutagradError
from mutagrad.traced.value import BUFFER, FROZEN, THAWED, WrappedArray, WrappedValue, make_view


class Buffer(WrappedArray):
    """An array to fill in place; ``Buffer(x)`` is like ``np.zeros_like(x)``, ``Buffer(shape)``
    like ``np.zeros(shape)``.

    Unlike Zygote's (uninitialised, as ``similar``), a new Buffer holds zeros,
    so reading an element before writing it gives the same answer every run.
    """

    __slots__ = ()

    def __init__(self, like_or_shape: Any, dtype: Any = None):
        if isinstance(like_or_shape, (int, np.integer, tuple, list)) and not (
            isinstance(like_or_shape, list) and like_or_shape and not np.isscalar(like_or_shape[0])
        ):
            data = np.zeros(like_or_shape, dtype=dtype if dtype is not None else np.float64)
        else:
            like = like_or_shape._raw if isinstance(like_or_shape, WrappedValue) else like_or_shape
            like = np.asarray(like)
            data = np.zeros(like.shape, dtype=dtype if dtype is not None else like.dtype)
        super().__init__(data)
        self._flags = BUFFER

    @property
    def frozen(self) -> bool:
        return bool(self._flags & FROZEN)

    def copy(self, order: str = "C") -> WrappedArray:
        """Freeze the Buffer and return its contents as a WrappedArray, without copying."""
        self._flags |= FROZEN
        result = make_view(self, self._raw.view())
        result._flags |= THAWED
        return result

    def __copy__(self) -> WrappedArray:
        return self.copy()

    def __repr__(self) -> str:
        state = "frozen" if self.frozen else "open"
        return f"Buffer({np.array2string(self._raw, separator=', ')}, {state})"


def check_not_open_buffer(value: Any, what: str) -> None:
    """Raise if ``value`` (or a leaf of it) is a Buffer that was never frozen."""
    leaves = (value,) if isinstance(value, WrappedValue) else flatten(value)[0]
    for leaf in leaves:
        if isinstance(leaf, WrappedValue):
            base = leaf._base if leaf._base is not None else leaf
            if base._flags & BUFFER and not base._flags & FROZEN and not leaf._flags & THAWED:
                raise MutagradError(
                    f"{what} returned a mutagrad.Buffer that was never frozen.\nFix: return "
                    "buf.copy() instead: it freezes the Buffer and hands over its contents "
                    "without copying (Zygote would silently drop gradients here, issue #177)."
                )
