"""The exceptions mutagrad raises.

Every error mutagrad raises derives from :class:`MutagradError`, so a caller can
catch them all at once. Each message says what happened, where in the user's
code (file:line), and how to fix it.

::

    MutagradError
    ├── MutationError            strict mode: an in-place write on a traced array
    ├── PoisonedCaptureError     a value a pullback needs was overwritten
    ├── SnapshotUnavailableError snapshot mode cannot redirect a closure rule
    ├── FrozenBufferError        a write to a Buffer after buffer.copy()
    ├── TracerConversionError    a traced value turned into a raw ndarray/float
    ├── MissingRuleError         a numpy function with no derivative rule
    ├── NotDifferentiableError   a construct mutagrad refuses to differentiate
    └── UnsupportedAttributeError  an ndarray attribute or method a traced array refuses
"""

from __future__ import annotations

import sys
from contextvars import ContextVar
from types import CodeType, FrameType


class MutagradError(Exception):
    """Base class of every error mutagrad raises."""


class MutationError(MutagradError):
    """Strict mode refused an in-place write on a traced array (Zygote's rule)."""


class PoisonedCaptureError(MutagradError):
    """A pullback needed a value that an in-place write overwrote after it was saved."""


class SnapshotUnavailableError(MutagradError):
    """Snapshot mode had to copy a value that a closure-style rule holds privately."""


class FrozenBufferError(MutagradError):
    """A Buffer was written after ``buffer.copy()`` froze it."""


class TracerConversionError(MutagradError, TypeError):
    """A traced value was converted to a raw ndarray or Python number, losing its gradient.

    The last one made is remembered (:func:`last_conversion_error`): numpy's C
    code sometimes replaces it with an error of its own and no context
    (``raw.flat[0] = traced`` raises ``ValueError: Error setting single item
    of array``), and the gradient call raises this one instead.
    """

    def __init__(self, *args: object):
        super().__init__(*args)
        # numpy drops the traceback of an error it replaces: where it was made is kept
        # here, as (code, offset) pairs, innermost first.
        stack: list[tuple[CodeType, int]] = []
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and len(stack) < 40:
            stack.append((frame.f_code, frame.f_lasti))
            frame = frame.f_back
        self.stack = stack
        _LAST_CONVERSION.set(self)


_LAST_CONVERSION: ContextVar[TracerConversionError | None] = ContextVar(
    "mutagrad_last_conversion", default=None
)


def last_conversion_error() -> TracerConversionError | None:
    """The TracerConversionError made last in this context (None before any)."""
    return _LAST_CONVERSION.get()


def forget_conversion_errors() -> None:
    """Forget the last TracerConversionError (a gradient call ended)."""
    if _LAST_CONVERSION.get() is not None:  # (a get costs less than a set, which most calls skip)
        _LAST_CONVERSION.set(None)


class MissingRuleError(MutagradError, NotImplementedError):
    """A numpy function was called on a traced array, and mutagrad has no rule for it."""


class MissingForwardRuleError(MissingRuleError):
    """Forward mode (jvp, jacfwd, hvp, hessian) met an operation with a reverse rule only."""


class NotDifferentiableError(MutagradError):
    """The program asks for a derivative mutagrad cannot compute correctly."""


class UnsupportedAttributeError(MutagradError, AttributeError):
    """An ``ndarray`` attribute or method that a WrappedArray refuses, named in the message.

    Refused attributes would hand out raw memory (writes through it would
    bypass the version counter) or change an array's memory layout behind the
    tape. It is also an ``AttributeError``, so code that probes arrays with
    ``hasattr`` or ``getattr(x, name, default)`` sees a missing attribute.
    """
