"""``mutagrad.scipy.signal``: ``scipy.signal``'s convolutions for traced values.

``convolve``, ``correlate`` (modes 'full', 'same', 'valid'; any number of
axes), ``convolve2d`` and ``correlate2d`` take traced values and give SciPy's
value (see :mod:`mutagrad.rules.scipy_signal`). Every other name is
``scipy.signal``'s.
"""

from __future__ import annotations

from typing import Any

import scipy.signal as _signal

from mutagrad.rules.scipy_signal import convolve, convolve2d, correlate, correlate2d


def __getattr__(name: str) -> Any:
    return getattr(_signal, name)


__all__ = ["convolve", "convolve2d", "correlate", "correlate2d"]
