"""``import mutagrad.scipy``: SciPy for traced values, as ``autograd.scipy`` and ``jax.scipy`` are.

SciPy is an optional extra (``pip install -e '.[scipy]'``): ``import mutagrad``
never imports it, and this package imports it on first use of a submodule.

* ``mutagrad.scipy.special``: every ``scipy.special`` ufunc is SciPy's own
  object (a ufunc reaches mutagrad through numpy's protocol; its rule is
  registered on first use), and the Python functions ``logsumexp``,
  ``softmax``, ``log_softmax``, ``polygamma``, ``multigammaln`` take traced
  values.
* ``mutagrad.scipy.stats``: ``norm``, ``t``, ``gamma``, ``beta``, ``chi2``,
  ``poisson``, ``multivariate_normal``, ``dirichlet`` as modules of functions
  (``mutagrad.scipy.stats.norm.logpdf(x, loc, scale)``), as in JAX.
* ``mutagrad.scipy.signal``: ``convolve``, ``correlate``, ``convolve2d``, ``correlate2d``.
* ``mutagrad.scipy.linalg``: ``solve_triangular``, ``cho_factor``/``cho_solve``,
  ``cholesky``, ``lu_factor``/``lu_solve``, ``expm``, ``sqrtm``, ``logm``,
  ``solve``, ``inv``, ``det``, ``eigh``, ``svd``, ``solve_sylvester``, ``solve_banded``.
* ``mutagrad.scipy.integrate``: ``odeint`` and ``solve_ivp``, differentiated by
  the adjoint method, with traced parameters in ``args=``.

Every value is SciPy's own, bit for bit: each function runs SciPy on the raw
data and gives the result a derivative rule (the table in the README's
"SciPy coverage" section says what each one is). Names not provided here are
SciPy's own objects, which refuse traced arrays (naming the caller's line).
"""

from __future__ import annotations

import importlib
from typing import Any

SUBMODULES = ("integrate", "linalg", "signal", "special", "stats")


def __getattr__(name: str) -> Any:
    if name in SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(SUBMODULES)


__all__ = list(SUBMODULES)
