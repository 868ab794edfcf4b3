"""The verdict vocabulary shared by the fuzzer's oracle and the comparison report.

A gradient call of a program, in one mode of mutagrad or on one peer engine,
is judged against plain numpy (the value, what the caller's arrays hold
afterwards) and central finite differences (the gradient), and gets one
:class:`Outcome`. :class:`ModeResult` is that judgement for one call:
:func:`mutagrad.testing.fuzz.judge` gives one per mode, and the report
(:mod:`mutagrad.report.runner`) extends it with what the call cost.

mutagrad promises that every call is ``RIGHT`` or ``REFUSED``: the outcomes
in :data:`FAILURES` each mean a bug, and those in :data:`SILENTLY_WRONG` the
one mutagrad exists to rule out, a number that is not the true one.
"""

from __future__ import annotations

import enum

import attrs

__all__ = ["FAILURES", "MUTAGRAD", "SILENTLY_WRONG", "ModeResult", "Outcome"]

#: The engine name of mutagrad's own results (a peer's is its name: ``jax``).
MUTAGRAD = "mutagrad"


class Outcome(enum.Enum):
    """What one gradient call did with one program."""

    RIGHT = "right"
    """The value and the gradient match numpy and finite differences, and the caller's
    arrays hold what numpy leaves in them."""
    REFUSED = "refused"
    """mutagrad raised one of its errors (a MutagradError); a peer raised any exception."""
    VALUE_DIFFERS = "value differs"
    """A value came back and it is not numpy's."""
    WRONG = "wrong"
    """The value is right but the gradient is not, or the caller's arrays were changed."""
    CRASH = "crash"
    """mutagrad raised an exception that is not a MutagradError; a peer failed inside
    (an AssertionError, a SystemError, ...)."""
    TIMEOUT = "timeout"
    """The call exceeded its time limit."""
    PROGRAM_ERROR = "program error"
    """The program itself fails on plain numpy: there is nothing to compare with."""


SILENTLY_WRONG = (Outcome.VALUE_DIFFERS, Outcome.WRONG)
"""Outcomes where a number came back and it was not the right one."""
FAILURES = (*SILENTLY_WRONG, Outcome.CRASH, Outcome.TIMEOUT)
"""Outcomes that must never happen to mutagrad: each is a bug."""


@attrs.frozen
class ModeResult:
    """The judgement of one gradient call: in which mode (or peer), the outcome, and why.

    ``detail`` says what happened beyond the outcome: the first line of the
    error (``REFUSED``, ``CRASH``), or what differs (``VALUE_DIFFERS``,
    ``WRONG``). ``error_type`` is the exception's class name when one was
    raised. ``engine`` is ``"mutagrad"`` or the peer's name (then ``mode`` is
    the peer's name too: the column the result belongs to).
    """

    mode: str
    outcome: Outcome
    detail: str = ""
    error_type: str | None = None
    engine: str = MUTAGRAD

    @property
    def failed(self) -> bool:
        """Whether the outcome is one of :data:`FAILURES`."""
        return self.outcome in FAILURES
