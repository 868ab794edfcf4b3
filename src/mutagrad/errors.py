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
    """A traced value was converted to a raw ndarray or Python number, losing its gradient."""


class MissingRuleError(MutagradError, NotImplementedError):
    """A numpy function was called on a traced array, and mutagrad has no rule for it."""


class NotDifferentiableError(MutagradError):
    """The program asks for a derivative mutagrad cannot compute correctly."""


class UnsupportedAttributeError(MutagradError, AttributeError):
    """An ``ndarray`` attribute or method that a WrappedArray refuses, named in the message.

    Refused attributes would hand out raw memory (writes through it would
    bypass the version counter) or change an array's memory layout behind the
    tape. It is also an ``AttributeError``, so code that probes arrays with
    ``hasattr`` or ``getattr(x, name, default)`` sees a missing attribute.
    """
