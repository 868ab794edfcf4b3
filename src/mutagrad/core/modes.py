"""What a gradient call does about in-place writes: the mode, as a policy object.

A mode is chosen once per gradient call (``gradient(f, x, mode="strict")`` or
``with mutagrad.mode("snapshot")``), held by the call's :class:`Trace`, and
consulted at the three points where modes differ, each a method:

* :meth:`Mode.check_write` – before an in-place write to a traced array:
  strict mode refuses it, as Zygote does;
* :meth:`Mode.overwrite` – for each saved value (capture) the write overlaps:
  poison it, or keep a copy of its old data (snapshot mode);
* :meth:`Mode.read_poisoned` – when the backward pass reads a poisoned
  capture: raise :class:`PoisonedCaptureError`, or, for the comparison
  report's analysis only, read the overwritten data anyway.

Adding a mode is a subclass here and an entry in :data:`MODES`; the engine,
the write path and the API only call these methods.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from mutagrad.core.engine import Capture, WriteRecord
from mutagrad.diagnostics.advice import poison_message
from mutagrad.diagnostics.sites import Site, format_site
from mutagrad.errors import MutationError, PoisonedCaptureError


class Mode:
    """The default policy (``"poison"``): writes are allowed, overlapped captures poisoned."""

    name = "poison"
    role = "mutagrad's default"  # how reports introduce the mode

    def check_write(
        self, operation: str, where: Callable[[], tuple[str, Site | None]], buffer: bool
    ) -> None:
        """Refuse an in-place write (raise) or allow it (return).

        ``where()`` gives the description of the array written and the user's
        line, for the error only (every traced write asks, few are refused);
        ``buffer`` is true for a :class:`mutagrad.Buffer`, which every mode
        lets its owner write.
        """

    def overwrite(self, capture: Capture, write: WriteRecord) -> None:
        """``write`` changes memory that ``capture`` saved for a pullback."""
        capture.poisoned_by = write

    def read_poisoned(self, capture: Capture) -> Any:
        """What a pullback gets when it reads a poisoned capture."""
        raise PoisonedCaptureError(poison_message(capture))

    def __repr__(self) -> str:
        return f"<mutagrad mode {self.name!r}>"


class Strict(Mode):
    """Zygote's rule (``"strict"``): every in-place write to a traced array is refused."""

    name = "strict"
    role = "Zygote's rule: every in-place write refused"

    def check_write(
        self, operation: str, where: Callable[[], tuple[str, Site | None]], buffer: bool
    ) -> None:
        if not buffer:
            raise MutationError(strict_message(operation, *where()))


class Snapshot(Mode):
    """``"snapshot"``: before a write overwrites a saved value, its old data is copied."""

    name = "snapshot"
    role = "old values copied where still needed"

    def overwrite(self, capture: Capture, write: WriteRecord) -> None:
        capture.keep_old_value(write)


class Unchecked(Mode):
    """Poison mode whose poisoned captures are read anyway, as an engine without checks would.

    For analysis only: the comparison report re-runs a program that raised
    PoisonedCaptureError this way, to tell a genuine poisoning (the gradient
    changes) from a false alarm (it does not). No differentiation API
    selects it by name.
    """

    name = "unchecked"

    def read_poisoned(self, capture: Capture) -> Any:
        return capture.region if capture.region is not None else capture.data


class Forward(Mode):
    """The policy of a forward level that no reverse level encloses (``jvp``, ``jacfwd``).

    Forward mode saves nothing, so no write can overwrite what a derivative
    needs: every write is allowed, and there is nothing to poison. Not a mode
    a gradient call can choose.
    """

    name = "forward"
    role = "nothing saved: every write allowed"


POISON = Mode()
STRICT = Strict()
FORWARD = Forward()
SNAPSHOT = Snapshot()
UNCHECKED = Unchecked()

# The modes a user chooses by name, in the order reports list them.
MODES: dict[str, Mode] = {m.name: m for m in (STRICT, POISON, SNAPSHOT)}

MODE: ContextVar[Mode] = ContextVar("mutagrad_mode", default=POISON)


def mode_named(mode: str | Mode) -> Mode:
    """The policy for a mode name (or the policy itself)."""
    if isinstance(mode, Mode):
        return mode
    try:
        return MODES[mode]
    except (KeyError, TypeError):
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}") from None


def strict_message(operation: str, target: str, site: Site | None) -> str:
    return (
        f"Mutating arrays is not supported -- called {operation} on {target}\n"
        f"{format_site(site)}\n"
        "This error occurs when you ask mutagrad to differentiate, in strict mode, an operation\n"
        "that changes the elements of an array in place (x[i] = ..., x += ..., out=...).\n"
        "Possible fixes:\n"
        "  - avoid mutating operations (preferred): build a new array instead;\n"
        "  - write into a mutagrad.Buffer and call buffer.copy() when it is complete;\n"
        "  - give the mutating function a custom rule (@mutagrad.rrule or mutagrad.defvjp);\n"
        '  - or differentiate with mode="poison" (the default), which accepts a mutation\n'
        "    whenever no gradient needs the overwritten value."
    )


@contextlib.contextmanager
def mode(name: str) -> Iterator[None]:
    """Use mutation mode ``name`` ("poison", "strict" or "snapshot") inside the block."""
    token = MODE.set(mode_named(name))
    try:
        yield
    finally:
        MODE.reset(token)
