"""``mutagrad.scipy.special``: ``scipy.special`` for traced values.

The ufuncs are SciPy's own objects: called on a traced array they reach
mutagrad through numpy's ``__array_ufunc__``, and their rules
(:mod:`mutagrad.rules.scipy_special`, loaded by importing this module or on
first use) differentiate them. The Python functions that convert their input
(``logsumexp``, ``softmax``, ``log_softmax``, ``polygamma``, ``multigammaln``)
are replaced by functions that take traced values and give SciPy's value.
Every other name is ``scipy.special``'s.
"""

from __future__ import annotations

from typing import Any

import scipy.special as _special

from mutagrad.rules.scipy_special import (
    log_softmax,
    logsumexp,
    multigammaln,
    polygamma,
    softmax,
)


def __getattr__(name: str) -> Any:
    return getattr(_special, name)


def __dir__() -> list[str]:
    return sorted(set(dir(_special)))


__all__ = ["log_softmax", "logsumexp", "multigammaln", "polygamma", "softmax"]
