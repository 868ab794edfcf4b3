"""``mutagrad.scipy.stats.dirichlet``: SciPy's Dirichlet distribution for traced values.

``logpdf(x, alpha)`` and ``pdf(x, alpha)`` give SciPy's value, differentiable
in ``x`` and ``alpha`` (``x`` has the categories on its first axis, and must
sum to one as SciPy checks). Every other name is SciPy's ``dirichlet``'s.
"""

from __future__ import annotations

from typing import Any

from mutagrad.rules.scipy_stats import dirichlet as _distribution

logpdf = _distribution.logpdf
pdf = _distribution.pdf


def __getattr__(name: str) -> Any:
    return getattr(_distribution.scipy, name)


__all__ = ["logpdf", "pdf"]
