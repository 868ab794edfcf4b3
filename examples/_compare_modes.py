"""Shared printing helper for the example scripts: run one function under each mode.

``print_modes(f, *args)`` differentiates ``f`` in strict, poison and snapshot
mode and prints one line per mode: the gradient, or the mutagrad error it
raised (its class and the first line of its message). Errors that are not
mutagrad's propagate, so a crash makes the example fail loudly.

Output format (the example tests parse it)::

    ## <section title>
      strict    -> MutationError: Mutating arrays is not supported -- ...
      poison    -> gradient [2. 2. 2.]
      snapshot  -> gradient [2. 2. 2.]   bytes copied: 0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import mutagrad

MODES = ("strict", "poison", "snapshot")


def print_section(title: str) -> None:
    """Start a new section of the example's output."""
    print(f"\n## {title}")


def describe_error(error: BaseException) -> str:
    """``ClassName: first line of the message``."""
    first_line = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {first_line}"


def format_value(value: Any) -> str:
    """A gradient entry, short: arrays are summarised beyond ten elements."""
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=4, threshold=10, edgeitems=3)
    return repr(value)


def format_gradient(grad: tuple[Any, ...]) -> str:
    """One argument's gradient on its own; several joined with commas."""
    return ", ".join(format_value(g) for g in grad)


def print_modes(
    f: Callable[..., Any], *args: Any, modes: tuple[str, ...] = MODES
) -> dict[str, mutagrad.WithGradient | mutagrad.MutagradError]:
    """Differentiate ``f(*args)`` under each mode, print what happened and return it."""
    outcomes: dict[str, mutagrad.WithGradient | mutagrad.MutagradError] = {}
    for mode in modes:
        try:
            result = mutagrad.withgradient(f, *args, mode=mode)
        except mutagrad.MutagradError as error:
            outcomes[mode] = error
            print(f"  {mode:<9} -> {describe_error(error)}")
            continue
        outcomes[mode] = result
        line = f"  {mode:<9} -> gradient {format_gradient(result.grad)}"
        if mode == "snapshot":
            line += f"   bytes copied: {result.bytes_copied}"
        print(line)
    return outcomes
