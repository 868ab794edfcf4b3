"""``mutagrad.scipy.stats.multivariate_normal``: SciPy's multivariate normal for traced values.

``logpdf(x, mean, cov, allow_singular)``, ``pdf`` and ``entropy(mean, cov)``
give SciPy's value, differentiable in ``x``, ``mean`` and ``cov`` (SciPy reads
the lower triangle of ``cov``: only it gets a gradient, as for
``np.linalg.eigh``). Every other name is SciPy's ``multivariate_normal``'s.
"""

from __future__ import annotations

from typing import Any

from mutagrad.rules.scipy_stats import multivariate_normal as _distribution

logpdf = _distribution.logpdf
pdf = _distribution.pdf
entropy = _distribution.entropy


def __getattr__(name: str) -> Any:
    return getattr(_distribution.scipy, name)


__all__ = ["entropy", "logpdf", "pdf"]
