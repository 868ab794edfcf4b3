"""Derivative rules of ``scipy.linalg``: solvers, factorizations and matrix functions.

Each function runs SciPy on the raw data (its value is SciPy's own; an
``overwrite_a=True`` hint is dropped, so SciPy never writes into a traced
array's memory) and has a rule whose vjps call these same functions, so
they differentiate again:

* ``solve_triangular``, ``solve`` (general, or symmetric/positive from one
  triangle), ``inv``, ``det``, ``solve_sylvester``, ``solve_banded``;
* ``cholesky``, ``cho_factor``/``cho_solve``, ``lu_factor``/``lu_solve``: a
  factor's cotangent reaches the triangle SciPy reads (``cho_factor``'s other
  triangle is the input's own entries, passed through);
* ``expm``, ``sqrtm``, ``logm``: the adjoint of a primary matrix function
  ``f`` at ``A`` applied to ``G`` is the upper right block of
  ``f([[A^T, G], [0, A^T]])``;
* ``eigh`` (one triangle read, distinct eigenvalues for the vectors) and
  ``svd``, whose factors are one node with numpy's ``svd``'s pullback (it
  reads the factors themselves, so their signs are those of the output).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg as linalg

from mutagrad.core.jvps import TRANSPOSED
from mutagrad.core.registry import ANS, VjpRule
from mutagrad.rules.factorizations import (
    columns_read,
    gap_weighted,
    pack_svd,
    singular_values_vjp,
    svd_factors,
    svd_vjp,
)
from mutagrad.rules.linalg import cholesky_vjp, from_triangle, symmetric_part
from mutagrad.rules.scipy_support import refuse_derivative, with_rule
from mutagrad.traced.dispatch import apply
from mutagrad.traced.value import unwrap, wrap_constant


def _mT(a):
    return np.swapaxes(a, -1, -2)


def _as_column(b):
    return np.expand_dims(b, -1) if np.ndim(b) == 1 else b


def _outer(u, v):
    """``u v^T`` for vectors or (matrices of) columns."""
    return np.matmul(_as_column(u), _mT(_as_column(v)))


def _triangle(m, lower, unit_diagonal=False):
    kept = np.tril(m) if lower else np.triu(m)
    return kept - m * np.eye(np.shape(m)[-1]) if unit_diagonal else kept


# -- solve_triangular -------------------------------------------------------------------


def _solve_triangular_vjp_b(g, ans, a, b, trans=0, lower=False, unit_diagonal=False,
                            check_finite=True):
    # x = op(a)^-1 b, so b's cotangent is op(a)^-T g: the other transposition.
    return solve_triangular(a, g, trans=1 - _trans(trans), lower=lower,
                            unit_diagonal=unit_diagonal, check_finite=check_finite)


def _solve_triangular_vjp_a(g, ans, a, b, trans=0, lower=False, unit_diagonal=False,
                            check_finite=True):
    gb = _solve_triangular_vjp_b(g, ans, a, b, trans, lower, unit_diagonal, check_finite)
    ga = -_outer(gb, ans) if _trans(trans) == 0 else -_outer(ans, gb)
    return _triangle(ga, lower, unit_diagonal)  # only the triangle SciPy reads


def _trans(trans):
    return {"N": 0, "T": 1, "C": 1}.get(trans, trans) if isinstance(trans, str) else int(trans)


SOLVE_TRIANGULAR = VjpRule(
    "scipy.linalg.solve_triangular",
    lambda a, b, **params: linalg.solve_triangular(a, b, **params),
    (_solve_triangular_vjp_a, _solve_triangular_vjp_b),
    ((0, ANS), (0,)),
    jvp=TRANSPOSED,
)
solve_triangular = with_rule(
    linalg.solve_triangular,
    SOLVE_TRIANGULAR,
    lambda a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True: (
        (a, b),
        {"trans": trans, "lower": lower, "unit_diagonal": unit_diagonal,
         "check_finite": check_finite},
    ),
)


# -- solve, inv, det --------------------------------------------------------------------

_GENERAL = (None, "gen", "general")
_SYMMETRIC = ("sym", "symmetric", "her", "hermitian", "pos", "positive definite")


def _read_matrix(a, assume_a, lower):
    """The matrix SciPy solves with: ``a``, or the symmetric one of the triangle it reads."""
    if assume_a in _GENERAL:
        return a
    kept = np.tril(a) if lower else np.triu(a)
    return kept + _mT(kept) - kept * np.eye(np.shape(a)[-1])


def _solve_vjp_b(g, ans, a, b, lower=False, assume_a=None, transposed=False, check_finite=True):
    m = _read_matrix(a, assume_a, lower)
    return np.linalg.solve(m if transposed else _mT(m), _as_column(g)).reshape(np.shape(g))


def _solve_vjp_a(g, ans, a, b, lower=False, assume_a=None, transposed=False, check_finite=True):
    gb = _solve_vjp_b(g, ans, a, b, lower, assume_a, transposed, check_finite)
    gm = -_outer(gb, ans) if not transposed else -_outer(ans, gb)
    if assume_a in _GENERAL:
        return gm
    return from_triangle(symmetric_part(gm), lower=lower)


SOLVE = VjpRule(
    "scipy.linalg.solve",
    lambda a, b, **params: linalg.solve(a, b, **params),
    (_solve_vjp_a, _solve_vjp_b),
    ((0, ANS), (0,)),
    jvp=TRANSPOSED,
)


def _bind_solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
                assume_a=None, transposed=False):
    if assume_a not in _GENERAL + _SYMMETRIC:
        refuse_derivative("scipy.linalg.solve", "a", f"assume_a={assume_a!r} is not implemented")
    return (a, b), {"lower": lower, "assume_a": assume_a, "transposed": transposed,
                    "check_finite": check_finite}


solve = with_rule(linalg.solve, SOLVE, _bind_solve)

INV = VjpRule(
    "scipy.linalg.inv",
    lambda a, check_finite=True: linalg.inv(a, check_finite=check_finite),
    (lambda g, ans, a, **params: -np.matmul(_mT(ans), np.matmul(g, _mT(ans))),),
    ((ANS,),),
    jvp=TRANSPOSED,
)
inv = with_rule(
    linalg.inv, INV,
    lambda a, overwrite_a=False, check_finite=True: ((a,), {"check_finite": check_finite}),
)

DET = VjpRule(
    "scipy.linalg.det",
    lambda a, check_finite=True: linalg.det(a, check_finite=check_finite),
    # Jacobi's formula: d det(a) = det(a) tr(a^-1 da).
    (lambda g, ans, a, **params: np.expand_dims(g * ans, (-1, -2)) * _mT(np.linalg.inv(a)),),
    ((0, ANS),),
    jvp=TRANSPOSED,
)
det = with_rule(
    linalg.det, DET,
    lambda a, overwrite_a=False, check_finite=True: ((a,), {"check_finite": check_finite}),
)


# -- solve_sylvester and solve_banded ------------------------------------------------------


def _sylvester_adjoint(g, a, b):
    """Y with a^T Y + Y b^T = g: q's cotangent of x = solve_sylvester(a, b, q)."""
    return solve_sylvester(_mT(a), _mT(b), g)


SOLVE_SYLVESTER = VjpRule(
    "scipy.linalg.solve_sylvester",
    linalg.solve_sylvester,
    (
        # a x + x b = q: da x + a dx + dx b + x db = 0.
        lambda g, ans, a, b, q: -np.matmul(_sylvester_adjoint(g, a, b), _mT(ans)),
        lambda g, ans, a, b, q: -np.matmul(_mT(ans), _sylvester_adjoint(g, a, b)),
        lambda g, ans, a, b, q: _sylvester_adjoint(g, a, b),
    ),
    ((0, 1, ANS), (0, 1, ANS), (0, 1)),
    jvp=TRANSPOSED,
)
solve_sylvester = with_rule(linalg.solve_sylvester, SOLVE_SYLVESTER,
                            lambda a, b, q: ((a, b, q), None))


def _band_positions(lower, upper, n):
    """For the dense (i, j): the row of the banded storage holding it, and whether it is in
    the band (SciPy's diagonal ordered form: ``ab[upper + i - j, j] == a[i, j]``)."""
    i, j = np.indices((n, n))
    row = upper + i - j
    return np.clip(row, 0, lower + upper), (row >= 0) & (row <= lower + upper)


def _dense(ab, lower, upper):
    n = np.shape(ab)[-1]
    row, inside = _band_positions(lower, upper, n)
    return np.where(inside, ab[row, np.arange(n)], 0.0)


def _solve_banded_vjp_b(g, ans, ab, b, lower=0, upper=0, check_finite=True):
    a = _dense(ab, lower, upper)
    return np.linalg.solve(_mT(a), _as_column(g)).reshape(np.shape(g))


def _solve_banded_vjp_ab(g, ans, ab, b, lower=0, upper=0, check_finite=True):
    ga = -_outer(_solve_banded_vjp_b(g, ans, ab, b, lower, upper, check_finite), ans)
    n = np.shape(ab)[-1]
    # ab[r, j] holds a[r - upper + j, j]: gather the dense cotangent into that layout.
    r, j = np.indices(np.shape(ab))
    i = r - upper + j
    inside = (i >= 0) & (i < n)
    return np.where(inside, ga[np.clip(i, 0, n - 1), j], 0.0)


SOLVE_BANDED = VjpRule(
    "scipy.linalg.solve_banded",
    lambda ab, b, lower=0, upper=0, check_finite=True: linalg.solve_banded(
        (lower, upper), ab, b, check_finite=check_finite
    ),
    (_solve_banded_vjp_ab, _solve_banded_vjp_b),
    ((0, ANS), (0,)),
    jvp=TRANSPOSED,
)
solve_banded = with_rule(
    linalg.solve_banded,
    SOLVE_BANDED,
    lambda l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True: (
        (ab, b),
        {"lower": int(l_and_u[0]), "upper": int(l_and_u[1]), "check_finite": check_finite},
    ),
)


# -- Cholesky ---------------------------------------------------------------------------


CHOLESKY = VjpRule(
    "scipy.linalg.cholesky",
    lambda a, lower=False, check_finite=True: linalg.cholesky(a, lower=lower,
                                                               check_finite=check_finite),
    # numpy's rule: SciPy reads the triangle it factors (upper unless lower=True).
    (lambda g, ans, a, lower=False, check_finite=True: cholesky_vjp(g, ans, a, upper=not lower),),
    ((ANS,),),
    jvp=TRANSPOSED,
)
cholesky = with_rule(
    linalg.cholesky,
    CHOLESKY,
    lambda a, lower=False, overwrite_a=False, check_finite=True: (
        (a,), {"lower": lower, "check_finite": check_finite}),
)


def _cho_factor_vjp(g, ans, a, lower=False, check_finite=True):
    # The factor's triangle holds the Cholesky factor; the other triangle is a's own entries.
    factor = _triangle(ans, lower)
    factored = cholesky_vjp(_triangle(g, lower), factor, a, upper=not lower)
    strict_other = np.triu(g, 1) if lower else np.tril(g, -1)
    return factored + strict_other


CHO_FACTOR = VjpRule(
    "scipy.linalg.cho_factor",
    lambda a, lower=False, check_finite=True: linalg.cho_factor(
        a, lower=lower, check_finite=check_finite)[0],
    (_cho_factor_vjp,),
    ((ANS,),),
    jvp=TRANSPOSED,
)


def _cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    return apply(CHO_FACTOR, (a,), {"lower": lower, "check_finite": check_finite}), lower


cho_factor = with_rule(linalg.cho_factor, CHO_FACTOR, adapter=_cho_factor)


def _cho_solve_vjp_b(g, ans, c, b, lower=False, check_finite=True):
    return cho_solve((c, lower), g, check_finite=check_finite)


def _cho_solve_vjp_c(g, ans, c, b, lower=False, check_finite=True):
    # a = L L^T (or U^T U): <abar, da> = <(abar + abar^T) L, dL> = <U (abar + abar^T), dU>.
    abar = -_outer(_cho_solve_vjp_b(g, ans, c, b, lower, check_finite), ans)
    both = abar + _mT(abar)
    factor = _triangle(c, lower)
    return np.tril(np.matmul(both, factor)) if lower else np.triu(np.matmul(factor, both))


CHO_SOLVE = VjpRule(
    "scipy.linalg.cho_solve",
    lambda c, b, lower=False, check_finite=True: linalg.cho_solve(
        (c, lower), b, check_finite=check_finite),
    (_cho_solve_vjp_c, _cho_solve_vjp_b),
    ((0, ANS), (0,)),
    jvp=TRANSPOSED,
)
cho_solve = with_rule(
    linalg.cho_solve,
    CHO_SOLVE,
    lambda c_and_lower, b, overwrite_b=False, check_finite=True: (
        (c_and_lower[0], b), {"lower": bool(c_and_lower[1]), "check_finite": check_finite}),
)


# -- LU ------------------------------------------------------------------------------------


def _row_order(piv):
    """The rows of ``a`` in the order of ``L U`` (LAPACK's interchanges, one after another)."""
    order = np.arange(len(piv))
    for i, p in enumerate(piv):
        order[[i, p]] = order[[p, i]]
    return order


def _unpack(lu):
    n = np.shape(lu)[-1]
    return np.tril(lu, -1) + np.eye(n), np.triu(lu)


def _lu_factor_vjp(g, ans, a, piv=None, check_finite=True):
    # a[order] = L U: L^-1 da[order] U^-1 = L^-1 dL + dU U^-1, whose adjoint gives
    # abar[order] = L^-T (tril(L^T Lbar, -1) + triu(Ubar U^T)) U^-T.
    lower, upper = _unpack(ans)
    middle = np.tril(np.matmul(_mT(lower), np.tril(g, -1)), -1) + np.triu(
        np.matmul(np.triu(g), _mT(upper)))
    left = solve_triangular(lower, middle, trans=1, lower=True, unit_diagonal=True)
    ordered = _mT(solve_triangular(upper, _mT(left), lower=False))
    return ordered[np.argsort(_row_order(piv))]


LU_FACTOR = VjpRule(
    "scipy.linalg.lu_factor",
    lambda a, piv=None, check_finite=True: linalg.lu_factor(a, check_finite=check_finite)[0],
    (_lu_factor_vjp,),
    ((ANS,),),
    jvp=TRANSPOSED,
)


def _lu_factor(a, overwrite_a=False, check_finite=True):
    lu, piv = linalg.lu_factor(unwrap(a), check_finite=check_finite)
    # The pivots are integers (no derivative): a constant the vjp reads as a parameter.
    params = {"piv": piv, "check_finite": check_finite}
    return apply(LU_FACTOR, (a,), params, lu), wrap_constant(piv)


lu_factor = with_rule(linalg.lu_factor, LU_FACTOR, adapter=_lu_factor)


def _lu_solve_vjp_b(g, ans, lu, b, piv=None, trans=0, check_finite=True):
    return lu_solve((lu, piv), g, trans=1 - _trans(trans), check_finite=check_finite)


def _lu_solve_vjp_lu(g, ans, lu, b, piv=None, trans=0, check_finite=True):
    gb = _lu_solve_vjp_b(g, ans, lu, b, piv, trans, check_finite)
    abar = -_outer(gb, ans) if _trans(trans) == 0 else -_outer(ans, gb)
    # a[order] = L U: <abar, da> = <G, dL U + L dU> with G = abar[order].
    lower, upper = _unpack(lu)
    rows = abar[_row_order(piv)]
    return np.tril(np.matmul(rows, _mT(upper)), -1) + np.triu(np.matmul(_mT(lower), rows))


LU_SOLVE = VjpRule(
    "scipy.linalg.lu_solve",
    lambda lu, b, piv=None, trans=0, check_finite=True: linalg.lu_solve(
        (lu, piv), b, trans=trans, check_finite=check_finite),
    (_lu_solve_vjp_lu, _lu_solve_vjp_b),
    ((0, ANS), (0,)),
    jvp=TRANSPOSED,
)
lu_solve = with_rule(
    linalg.lu_solve,
    LU_SOLVE,
    lambda lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True: (
        (lu_and_piv[0], b),
        {"piv": np.asarray(unwrap(lu_and_piv[1])), "trans": trans, "check_finite": check_finite},
    ),
)


# -- matrix functions ------------------------------------------------------------------------


def _primary_function_vjp(function):
    """The vjp of a primary matrix function: the upper right block of
    ``function([[a^T, g], [0, a^T]])`` (its Frechet derivative at a^T, applied to g)."""

    def vjp(g, ans, a):
        n = np.shape(a)[-1]
        at = _mT(a)
        top = np.concatenate([at, g], axis=-1)
        bottom = np.concatenate([np.zeros_like(at), at], axis=-1)
        return function(np.concatenate([top, bottom], axis=-2))[..., :n, n:]

    return vjp


# (Annotated: each vjp calls the function defined below it, which mypy cannot infer first.)
expm: Callable[..., Any]
sqrtm: Callable[..., Any]
logm: Callable[..., Any]
EXPM = VjpRule("scipy.linalg.expm", linalg.expm,
               (_primary_function_vjp(lambda m: expm(m)),), ((0,),),
               jvp=TRANSPOSED)  # fmt: skip
expm = with_rule(linalg.expm, EXPM, lambda A: ((A,), None))
SQRTM = VjpRule("scipy.linalg.sqrtm", linalg.sqrtm,
                (_primary_function_vjp(lambda m: sqrtm(m)),), ((0,),),
                jvp=TRANSPOSED)  # fmt: skip
sqrtm = with_rule(linalg.sqrtm, SQRTM, lambda A: ((A,), None))
LOGM = VjpRule("scipy.linalg.logm", linalg.logm,
               (_primary_function_vjp(lambda m: logm(m)),), ((0,),),
               jvp=TRANSPOSED)  # fmt: skip
logm = with_rule(linalg.logm, LOGM, lambda A: ((A,), None))


# -- eigh and svd ---------------------------------------------------------------------------


def _eigh_values_vjp(g, ans, a, lower=True):
    # d lambda_i = v_i^T da v_i (SciPy's own vectors: any signs give the same products).
    vectors = eigh(a, lower=lower)[1]
    symmetric = np.matmul(vectors * np.expand_dims(g, -2), _mT(vectors))
    return from_triangle(symmetric, lower=lower)


def _eigh_vectors_vjp(g, ans, a, lower=True):
    # abar = V (F o (V^T Vbar)) V^T, symmetrized, with the output's own V (distinct eigenvalues).
    values = eigh(a, lower=lower, eigvals_only=True)
    inner = gap_weighted(values, np.matmul(_mT(ans), g), "scipy.linalg.eigh (its eigenvectors)",
                         columns_read(g))  # fmt: skip
    symmetric = symmetric_part(np.matmul(ans, np.matmul(inner, _mT(ans))))
    return from_triangle(symmetric, lower=lower)


EIGH_VALUES = VjpRule(
    "scipy.linalg.eigh",
    lambda a, lower=True: linalg.eigh(a, lower=lower, eigvals_only=True),
    (_eigh_values_vjp,),
    ((0,),),
    jvp=TRANSPOSED,
)
EIGH_VECTORS = VjpRule(
    "scipy.linalg.eigh",
    lambda a, lower=True: linalg.eigh(a, lower=lower)[1],
    (_eigh_vectors_vjp,),
    ((0, ANS),),
    jvp=TRANSPOSED,
)


def _eigh(a, b=None, *, lower=True, eigvals_only=False, subset_by_index=None,
          subset_by_value=None, driver=None, **ignored):
    if b is not None or subset_by_index is not None or subset_by_value is not None:
        refuse_derivative("scipy.linalg.eigh", "a", "only the standard problem of every "
                          "eigenvalue (no b=, no subset) is implemented")
    params = {"lower": lower}
    if eigvals_only:
        return apply(EIGH_VALUES, (a,), params)
    values, vectors = linalg.eigh(unwrap(a), lower=lower, driver=driver)
    return apply(EIGH_VALUES, (a,), params, values), apply(EIGH_VECTORS, (a,), params, vectors)


eigh = with_rule(linalg.eigh, EIGH_VALUES, adapter=_eigh)


SVD_VALUES = VjpRule(
    "scipy.linalg.svd",
    lambda a: linalg.svd(a, compute_uv=False),
    (singular_values_vjp,),
    ((0,),),
    jvp=TRANSPOSED,
)
SVD_FACTORS = VjpRule(
    "scipy.linalg.svd",
    lambda a, full_matrices=True: pack_svd(*linalg.svd(a, full_matrices)),
    (svd_vjp,),
    ((ANS,),),
    jvp=TRANSPOSED,
)


def _svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
         lapack_driver="gesdd"):
    if not compute_uv:
        return apply(SVD_VALUES, (a,), None)
    u, s, vh = linalg.svd(unwrap(a), full_matrices=full_matrices)
    return svd_factors(SVD_FACTORS, a, u, s, vh, full_matrices)


svd = with_rule(linalg.svd, SVD_VALUES, adapter=_svd)

# The functions here by scipy.linalg's names (mutagrad.scipy.linalg; the coverage table).
FUNCTIONS: dict[str, Any] = {
    "solve_triangular": solve_triangular, "solve": solve, "inv": inv, "det": det,
    "solve_sylvester": solve_sylvester, "solve_banded": solve_banded, "cholesky": cholesky,
    "cho_factor": cho_factor, "cho_solve": cho_solve, "lu_factor": lu_factor,
    "lu_solve": lu_solve, "expm": expm, "sqrtm": sqrtm, "logm": logm, "eigh": eigh, "svd": svd,
}
