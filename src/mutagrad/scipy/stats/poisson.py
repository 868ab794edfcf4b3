"""``mutagrad.scipy.stats.poisson``: ``scipy.stats.poisson``'s functions for traced values.

``logpmf``, ``pmf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` take ``(k, mu, loc)``
as SciPy's do and give SciPy's value, differentiable in ``mu`` (``k`` and
``loc`` are counts). Every other name is the SciPy distribution's.
"""

from __future__ import annotations

from typing import Any

from mutagrad.rules.scipy_stats import poisson as _distribution

logpmf = _distribution.logpmf
pmf = _distribution.pmf
cdf = _distribution.cdf
logcdf = _distribution.logcdf
sf = _distribution.sf
logsf = _distribution.logsf


def __getattr__(name: str) -> Any:
    return getattr(_distribution.scipy, name)


__all__ = ["cdf", "logcdf", "logpmf", "logsf", "pmf", "sf"]
