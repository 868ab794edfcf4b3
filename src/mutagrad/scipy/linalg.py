"""``mutagrad.scipy.linalg``: ``scipy.linalg`` for traced values.

``solve_triangular``, ``solve``, ``inv``, ``det``, ``solve_sylvester``,
``solve_banded``, ``cholesky``, ``cho_factor``/``cho_solve``,
``lu_factor``/``lu_solve``, ``expm``, ``sqrtm``, ``logm``, ``eigh`` and ``svd``
take traced values and give SciPy's value (see
:mod:`mutagrad.rules.scipy_linalg`). Every other name is ``scipy.linalg``'s.
"""

from __future__ import annotations

from typing import Any

import scipy.linalg as _linalg

from mutagrad.rules.scipy_linalg import (
    cho_factor,
    cho_solve,
    cholesky,
    det,
    eigh,
    expm,
    inv,
    logm,
    lu_factor,
    lu_solve,
    solve,
    solve_banded,
    solve_sylvester,
    solve_triangular,
    sqrtm,
    svd,
)


def __getattr__(name: str) -> Any:
    return getattr(_linalg, name)


__all__ = [
    "cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm", "inv", "logm", "lu_factor",
    "lu_solve", "solve", "solve_banded", "solve_sylvester", "solve_triangular", "sqrtm", "svd",
]  # fmt: skip
