"""``mutagrad.scipy.stats``: SciPy's distributions for traced values, one module each (as in JAX).

``mutagrad.scipy.stats.norm.logpdf(x, loc, scale)`` is SciPy's
``scipy.stats.norm.logpdf`` with derivatives in every argument; the modules
``norm``, ``t``, ``gamma``, ``beta``, ``chi2``, ``poisson``,
``multivariate_normal`` and ``dirichlet`` hold the functions of
:mod:`mutagrad.rules.scipy_stats`, and hand every other name (``rvs``,
``ppf``...) to SciPy's distribution. Names that are not those modules are
``scipy.stats``'s own.
"""

from __future__ import annotations

import importlib
from typing import Any

import scipy.stats as _stats

DISTRIBUTIONS = ("beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm", "poisson",
                 "t")  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in DISTRIBUTIONS:
        return importlib.import_module(f"{__name__}.{name}")
    return getattr(_stats, name)


def __dir__() -> list[str]:
    return sorted(set(dir(_stats)) | set(DISTRIBUTIONS))


__all__ = list(DISTRIBUTIONS)
