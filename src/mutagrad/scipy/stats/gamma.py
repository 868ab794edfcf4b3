"""``mutagrad.scipy.stats.gamma``: ``scipy.stats.gamma``'s functions for traced values.

``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` take
``(x, a, loc, scale)`` as SciPy's do and give SciPy's value,
differentiable in every argument (the distribution functions not in a shape
parameter: see :mod:`mutagrad.rules.scipy_stats`).
Every other name is the SciPy distribution's (``rvs``, ``ppf``...).
"""

from __future__ import annotations

from typing import Any

from mutagrad.rules.scipy_stats import gamma as _distribution

logpdf = _distribution.logpdf
pdf = _distribution.pdf
cdf = _distribution.cdf
logcdf = _distribution.logcdf
sf = _distribution.sf
logsf = _distribution.logsf


def __getattr__(name: str) -> Any:
    return getattr(_distribution.scipy, name)


__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
