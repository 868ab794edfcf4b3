"""Argument types of mutagrad's command lines (``mutagrad report``, ``python -m
mutagrad.testing.fuzz``): a count that may be 0, a number of at least 1, a
duration in seconds. A value out of range is argparse's usage error (exit
status 2, the usage and what is wrong), before any work starts.
"""

from __future__ import annotations

import argparse
import math


def count(text: str) -> int:
    """An integer of 0 or more (programs to add, where 0 means none)."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def positive(text: str) -> int:
    """An integer of 1 or more (samples, worker processes, statements)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def seconds(text: str) -> float:
    """A finite duration of 0 or more seconds (0: no limit)."""
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds, 0 or more (0 for no limit), not {text}"
        )
    return value
