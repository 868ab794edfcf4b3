"""Derivative rules of np.linalg functions built on a factorization of a general matrix.

``svd`` (every ``full_matrices``/``compute_uv``/``hermitian`` form) and
``svdvals``; ``eig`` and ``eigvals`` of real matrices with real eigenvalues;
``qr`` (modes ``'reduced'``, ``'complete'`` and ``'r'``, tall and wide
matrices); ``pinv``, ``lstsq`` and ``cond``.

Forward values are numpy's own, bit for bit. The factors of ``eig`` and
``qr`` are separate outputs with their own rules, each reading the input
matrix (or its own output) in the pullback: a factorization's pullback is
linear in the cotangents of its factors, so summing the factors' separate
pullbacks gives the whole one, and a factor the loss never reads costs
nothing. The factors of ``svd`` are one node, whose pullback sees the
cotangents of ``U`` and ``Vh`` together (see the svd section). Every vjp is
written with numpy functions that have rules (these factorizations included),
so it differentiates again.

Where the derivative does not exist, mutagrad raises instead of returning a
number: a loss that depends on the phase numpy picks for a complex eigenvector or
singular vector, the basis numpy picks for the complement of a non-square matrix's range in
``svd(..., full_matrices=True)`` and ``qr(..., mode='complete')`` when the
loss reads it, ``qr(..., mode='raw')`` (Householder reflectors), and
``pinv``/``lstsq`` cutoffs that discard singular values above rounding level
(the derivative of the truncated pseudo-inverse then depends on them).
Singular vectors and eigenvectors need distinct singular values and
eigenvalues; at a repeated one their cotangent is infinite or nan, as in JAX.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mutagrad.core.engine import BackwardPass, Node, Rule, current_trace
from mutagrad.core.jvps import TRANSPOSED, hand, linear
from mutagrad.core.record import push
from mutagrad.core.regions import BASIC_INDEX, scatter
from mutagrad.core.registry import ANS, VjpRule, implements
from mutagrad.core.tangents import BASIC
from mutagrad.diagnostics.sites import user_site
from mutagrad.errors import NotDifferentiableError
from mutagrad.traced.dispatch import apply
from mutagrad.traced.value import (
    WrappedValue,
    any_active,
    node_of,
    unwrap,
    wrap,
    wrap_constant,
)

_NoValue = np._NoValue

SVD_RESULT = type(np.linalg.svd(np.eye(1)))
EIG_RESULT = type(np.linalg.eig(np.eye(1)))
QR_RESULT = type(np.linalg.qr(np.eye(1)))


def _mT(a):
    return np.swapaxes(a, -1, -2)


def inverse_gaps(values):
    """``F[i, j] = 1 / (values[j] - values[i])`` off the diagonal, 0 on it."""
    gaps = np.expand_dims(values, -2) - np.expand_dims(values, -1)
    eye = np.eye(np.shape(values)[-1])
    return (1 - eye) / (gaps + eye)


def gap_weighted(values, weights, function, columns_read=None):
    """``F o weights`` with ``F`` of :func:`inverse_gaps`: the vectors' part of the derivative
    of an eigen- or singular-value decomposition.

    Where two values are equal the vectors that go with them are any basis of
    their common space, and which one numpy returns can jump (the order of the
    pair swaps as they split): they have no derivative there, and ``F`` is
    infinite (numpy's arithmetic would give inf or NaN). ``columns_read``
    (``(..., n)`` booleans, the vectors the loss reads; None: every vector, as
    a forward rule must assume) says whether a repeated pair matters: one the
    loss reads is refused by name, one it does not read contributes nothing.
    """
    raw_values = np.asarray(unwrap(values))
    n = raw_values.shape[-1]
    off_diagonal = 1 - np.eye(n)
    repeated = (np.expand_dims(raw_values, -2) == np.expand_dims(raw_values, -1)) & (
        off_diagonal > 0
    )
    if not repeated.any():
        return inverse_gaps(values) * weights
    read = np.ones(raw_values.shape, bool) if columns_read is None else columns_read
    touched = repeated & (np.expand_dims(read, -2) | np.expand_dims(read, -1))
    if touched.any():
        raise NotDifferentiableError(
            f"{function}: two of the values are equal ({_first_repeated(raw_values, touched)}), "
            "so the vectors that go with them are any orthonormal basis of their common "
            "space (and which one numpy returns can jump as they split), and the derivative "
            "reads them: it does not exist there (numpy's arithmetic would give inf or NaN).\n"
            "Fixes: differentiate a quantity that does not depend on the basis chosen (the "
            "values, or a projector onto the whole repeated space), or move off the "
            "degenerate point (the values of a matrix built with symmetry are often repeated)."
        )
    gaps = np.expand_dims(values, -2) - np.expand_dims(values, -1)
    safe = np.where(repeated, 1.0, gaps + np.eye(n))
    return np.where(repeated, 0.0, off_diagonal / safe) * weights


def columns_read(cotangent):
    """Which vectors (columns of a factor) a cotangent reads: ``(..., n)`` booleans; all of
    them for a traced cotangent (a later sweep may read any)."""
    if isinstance(cotangent, WrappedValue):
        raw = np.asarray(cotangent._raw)
        return np.ones(raw.shape[:-2] + raw.shape[-1:], bool)
    return np.any(np.asarray(cotangent) != 0, axis=-2)


def _first_repeated(values, repeated):
    """``values[..., i] == values[..., j]``, written out for the first such pair."""
    index = np.argwhere(repeated)[0]
    *batch, i, j = (int(v) for v in index)
    where = f"[{', '.join(map(str, batch))}, ...]" if batch else ""
    return f"values{where}[{i}] == values{where}[{j}] == {values[(*batch, i)]!r}"


def _refuse_arbitrary_basis(cotangent_of_extra, function):
    """Refuse a loss that reads the columns of a square factor that span an arbitrary basis.

    ``svd(a, full_matrices=True)`` and ``qr(a, mode='complete')`` of a
    non-square matrix complete the factor with an orthonormal basis of the
    complement of ``a``'s range (or row space), and LAPACK's choice of that
    basis is not a differentiable function of ``a``.
    """
    if np.any(cotangent_of_extra != 0):
        raise NotDifferentiableError(
            f"the gradient reached the columns of {function} that complete a non-square "
            "matrix's factor to a square one: they are an arbitrary orthonormal basis (any "
            "rotation of them is as valid), with no derivative.\n"
            "Fix: use the reduced factorization (full_matrices=False, mode='reduced') or only "
            "the first min(m, n) columns."
        )


def completed_with_nan(tangent, full_shape, function):
    """The tangent of a factor completed to ``full_shape`` from ``tangent``, that of its first
    min(m, n) columns (or rows, for a wide ``Vh``): NaN in the completing ones.

    They are an arbitrary orthonormal basis with no derivative (see
    :func:`_refuse_arbitrary_basis`); NaN survives every arithmetic use, so a
    tangent that reaches an output through them is NaN there, and forward mode
    refuses it by name when ``f`` returns (``mutagrad.forward``), while a loss
    that slices them away or never reads them is exact. The level records
    where: the message names the user's line.
    """
    full = np.full((*np.shape(tangent)[:-2], *full_shape), np.nan, np.result_type(tangent))
    rows, columns = np.shape(tangent)[-2:]
    full[..., :rows, :columns] = tangent
    trace = current_trace()
    for level in trace.forward if trace is not None else ():  # (None: linearize's replay)
        if not level.arbitrary_function:
            level.arbitrary_function, level.arbitrary_basis = function, user_site()
    return full


def refuse_phase_dependence(p, function, q=None):
    """Refuse a loss that changes with the complex phase numpy picked for each vector.

    ``p`` is ``V^T g``: its diagonal ``p[k, k]`` is the loss's derivative along
    ``v_k -> v_k * exp(i t)`` times ``-i``. A loss of ``np.abs(v)``, ``v * conj(v)`` or of
    the eigenvalues has it real, and only such a loss has a derivative (the phase is
    numpy's choice, not a function of the matrix's entries one could differentiate).
    An SVD's phase turns ``u_k`` and ``vh_k`` together (``q`` is ``conj(Vh g_Vh^T)``, the
    same for the right vectors): the derivative along it is the sum of both diagonals.
    Measured against the largest element of ``p`` and ``q``: the diagonal may be all
    rounding.
    """
    p = np.asarray(unwrap(p))
    if p.dtype.kind != "c":
        return
    along_phase = np.diagonal(p, axis1=-2, axis2=-1).imag
    scale = float(np.max(np.abs(p), initial=0.0))
    if q is not None:
        q = np.asarray(unwrap(q))
        along_phase = along_phase + np.diagonal(q, axis1=-2, axis2=-1).imag
        scale = max(scale, float(np.max(np.abs(q), initial=0.0)))
    if np.any(np.abs(along_phase) > 1e-8 * (scale + np.finfo(float).tiny)):
        raise NotDifferentiableError(
            f"the gradient reached the complex vectors of {function} through a quantity "
            "that changes with their phase: each vector is defined only up to a factor "
            "exp(i t), which numpy picks (for an SVD, u_k exp(i t) with vh_k exp(-i t)), so "
            "that quantity has no derivative.\n"
            "Fix: use quantities that do not depend on the phase (np.abs(v), v * np.conj(v), "
            "np.conj(v_k) @ w, the eigenvalues; of an SVD also u @ vh, u * s @ vh), or fix "
            "the phase yourself first (v / (v[0] / np.abs(v[0])))."
        )


# -- svd ---------------------------------------------------------------------------------
# The three factors are one node: a complex SVD is defined up to a phase per singular
# triple, u_k -> u_k exp(i t) together with vh_k -> vh_k exp(-i t), so a loss can be
# independent of it only through u_k and vh_k together (np.abs(u @ vh) is; np.abs(u[0, 0])
# is too, on its own). Only a pullback that sees the cotangents of both factors at once
# can tell the two cases apart, and a second-order sweep through it, where the loss's
# cotangent was computed from the output too, stays on one node. The node's value packs
# U, S and Vh into one array along its last axis; each factor is a node of its own reading
# its part of that array (numpy's own arrays as values: no factor is a view of another),
# whose pullback adds its cotangent into that part of one sparse cotangent of the packed
# array, densified once, when the sweep reaches the packed node.


def _svd_shapes(m, n, full_matrices):
    """The shapes of one matrix's U and Vh, as np.linalg.svd returns them."""
    k = min(m, n)
    return ((m, m), (n, n)) if full_matrices else ((m, k), (k, n))


def pack_svd(u, s, vh):
    """``U, S, Vh`` flattened into one array along the last axis (complex if U is)."""
    batch = s.shape[:-1]
    return np.concatenate((u.reshape(*batch, -1), s, vh.reshape(*batch, -1)), axis=-1)


def _slots(m, n, full_matrices):
    """Where U, S and Vh lie in the packed array's last axis (slices), and their shapes."""
    u_shape, vh_shape = _svd_shapes(m, n, full_matrices)
    u_end = u_shape[0] * u_shape[1]
    s_end = u_end + min(m, n)
    vh_end = s_end + vh_shape[0] * vh_shape[1]
    return (
        (slice(0, u_end), u_shape),
        (slice(u_end, s_end), None),
        (slice(s_end, vh_end), vh_shape),
    )


def _part(packed, slot):
    """The factor of the packed array at ``slot`` (its slice and shape, from :func:`_slots`);
    S real: numpy's values, also when the array is complex."""
    part, shape = slot
    value = packed[..., part]
    return value.real if shape is None else value.reshape(*packed.shape[:-1], *shape)


def _unpacked(packed, slots):
    """U, S and Vh of the packed array."""
    return tuple(_part(packed, slot) for slot in slots)


class FactorRule(Rule):
    """One factor of the packed SVD: the packed array's part ``node.saved[0]`` (an index
    ``(..., slice)`` of its last axis), reshaped (S: the real part). A linear map, whose
    pullback puts the cotangent in that part of the packed array's."""

    __slots__ = ()
    handles_complex = True  # (S's real cotangent is the real part's: itself)

    def backward(self, node: Node, g: Any, owned: bool, bk: BackwardPass) -> None:
        (packed,) = node.inputs
        assert packed is not None  # (a factor node is made only for a recorded packed node)
        if not packed.tag & bk.bit:
            return
        (key,) = node.saved
        flat = g.reshape(*packed.shape[:-1], -1)
        if bk.recording and bk.needs_recording(node, g):
            bk.accumulate(packed, scatter(flat, None, BASIC_INDEX, key, packed.shape,
                                          packed.dtype))  # fmt: skip
            return
        bk.accumulate_entry(packed, (BASIC, key, flat))


SLICED_FACTOR = FactorRule("linalg.svd")


def _factor(packed, index, m, n, full_matrices):
    """Factor ``index`` (0 U, 1 S, 2 Vh) of the packed array: what a FactorRule node is."""
    return _part(packed, _slots(m, n, full_matrices)[index])


def _placed(g, ans, packed, index, m, n, full_matrices):
    # The factor's cotangent in its slot of the packed array, zeros elsewhere.
    part, _ = _slots(m, n, full_matrices)[index]
    flat = np.reshape(g, (*np.shape(packed)[:-1], -1))
    width = [(0, 0)] * (np.ndim(packed) - 1) + [(part.start, np.shape(packed)[-1] - part.stop)]
    return np.pad(flat, width)


# The general path of a factor, for forward levels (its jvp is linear): what SLICED_FACTOR's
# nodes record on a tape alone, faster (test_svd_factor_paths_agree runs both).
FACTOR = VjpRule("linalg.svd", _factor, (_placed,), ((),), handles_complex=True, jvp=linear())


def svd_vjp(g, ans, a, full_matrices=True):
    """The cotangent of ``a`` from the packed SVD ``ans`` and its cotangent ``g``.

    (Townsend, "Differentiating the singular value decomposition", 2016, for complex
    ``a`` too.) With P = U^T Ubar, Q = conj(Vh Vhbar^T) (P for V) and F_ij = 1 / (s_j^2 -
    s_i^2): abar = conj(U) [diag(sbar) + (F o P + (F o P)^H) S + S (F o Q + (F o Q)^H)
    + i diag(Im P_kk / s_k)] conj(Vh), plus (I - conj(U) U^T) Ubar S^-1 conj(Vh) for a tall
    ``a`` and conj(U) S^-1 conj(Vhbar) (I - Vh^T conj(Vh)) for a wide one. The diagonal
    term is the phase change of u_k that the change of s_k's phase, Im (U^H da V)_kk,
    forces (JAX's choice: none on v_k); it is right for a loss independent of the joint
    phase of (u_k, v_k), the only kind that has a derivative (see refuse_phase_dependence).
    """
    m, n = np.shape(a)[-2:]
    k = min(m, n)
    slots = _slots(m, n, full_matrices)
    u, s, vh = _unpacked(ans, slots)
    # (s_bar: the real part, as _unpacked takes it: the S slot holds real numbers)
    u_bar, s_bar, vh_bar = _unpacked(g, slots)
    # Whether the loss reads the vectors. Of the singular values alone, the vectors'
    # terms are linear in their cotangents, which are constant zeros here (not traced,
    # so nothing differentiates them), and would only add zeros.
    vectors = isinstance(g, WrappedValue) or u_bar.any() or vh_bar.any()
    if full_matrices:
        if vectors and m > k:
            _refuse_arbitrary_basis(u_bar[..., :, k:], "np.linalg.svd(a, full_matrices=True)'s U")
        if vectors and n > k:
            _refuse_arbitrary_basis(vh_bar[..., k:, :], "np.linalg.svd(a, full_matrices=True)'s Vh")
        u, u_bar, vh, vh_bar = u[..., :k], u_bar[..., :k], vh[..., :k, :], vh_bar[..., :k, :]
    conj_u, conj_vh = conjugate_if_complex(u), conjugate_if_complex(vh)
    s_only = np.matmul(conj_u * s_bar[..., None, :], conj_vh)
    if not vectors:
        return s_only
    p = np.matmul(_mT(u), u_bar)
    q = conjugate_if_complex(np.matmul(vh, _mT(vh_bar)))
    refuse_phase_dependence(p, "np.linalg.svd", q)
    left = gap_weighted(s * s, p, "np.linalg.svd (its U)", columns_read(u_bar))
    right = gap_weighted(s * s, q, "np.linalg.svd (its Vh)", columns_read(_mT(vh_bar)))
    row, column = np.expand_dims(s, -2), np.expand_dims(s, -1)
    inner = (left + adjoint(left)) * row + column * (right + adjoint(right))
    if np.result_type(p).kind == "c":
        phase = 1j * np.imag(np.diagonal(p, axis1=-2, axis2=-1)) / s
        inner = inner + np.expand_dims(phase, -1) * np.eye(k)
    result = s_only + np.matmul(conj_u, np.matmul(inner, conj_vh))
    if m > k:
        outside = (u_bar - np.matmul(conj_u, p)) / row
        result = result + np.matmul(outside, conj_vh)
    if n > k:
        outside = (vh_bar - np.matmul(np.matmul(vh_bar, _mT(vh)), conj_vh)) / column
        result = result + np.matmul(conj_u, outside)
    return result


def singular_values_vjp(g, ans, a):
    # d s_i = Re(u_i^H da v_i), so abar = conj(U) diag(g) conj(Vh) (U diag(g) Vh when a is
    # real), with any SVD of a: this pair does not change with the phases. (Decomposed
    # again: numpy's values-only routine gives no vectors.)
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return np.matmul(conjugate_if_complex(u) * np.expand_dims(g, -2), conjugate_if_complex(vh))


def conjugate_if_complex(x):
    """``np.conjugate(x)`` for complex ``x``; a real ``x`` itself (no copy)."""
    return np.conjugate(x) if np.result_type(x).kind == "c" else x


def adjoint(m):
    """The conjugate transpose of (a stack of) matrices: the transpose of real ones."""
    return conjugate_if_complex(_mT(m))


SINGULAR_VALUES = VjpRule(
    "linalg.svd",
    lambda a: np.linalg.svd(a, compute_uv=False),
    (singular_values_vjp,),
    ((0,),),
    handles_complex=True,
    jvp=TRANSPOSED,
)


def _svd_jvp(tangents, ans, args, kwargs):
    """The packed SVD's tangent: the transposed vjp's, except for a non-square matrix with
    ``full_matrices=True``, whose reduced factors' tangent it is (the transposed vjp of the
    reduced SVD), completed with NaN (:func:`completed_with_nan`)."""
    full_matrices = (kwargs or {}).get("full_matrices", True)
    m, n = np.shape(args[0])[-2:]
    k = min(m, n)
    if not full_matrices or m == n:
        return _TRANSPOSED_SVD(tangents, ans, args, kwargs)
    u, s, vh = _unpacked(ans, _slots(m, n, True))
    reduced = pack_svd(u[..., :k], s, vh[..., :k, :])
    t = _TRANSPOSED_SVD(tangents, reduced, args, {"full_matrices": False})
    if t is None:
        return None
    du, ds, dvh = _unpacked(t, _slots(m, n, False))
    function = "np.linalg.svd(a, full_matrices=True)"
    return pack_svd(
        completed_with_nan(du, (m, m), f"{function}'s U") if m > k else du,
        ds,
        completed_with_nan(dvh, (n, n), f"{function}'s Vh") if n > k else dvh,
    )


DECOMPOSITION = VjpRule(
    "linalg.svd",
    lambda a, full_matrices=True: pack_svd(*np.linalg.svd(a, full_matrices)),
    (svd_vjp,),
    ((ANS,),),
    handles_complex=True,  # (where the loss does not depend on the triples' phases)
    jvp=hand(_svd_jvp),
)
_TRANSPOSED_SVD = TRANSPOSED.bind(DECOMPOSITION.applied, DECOMPOSITION.vjps)


def svd_factors(rule, a, u, s, vh, full_matrices):
    """``U, S, Vh``, computed already, as the outputs of one node of ``rule`` (see above)."""
    packed = apply(rule, (a,), {"full_matrices": full_matrices}, pack_svd(u, s, vh))
    trace = current_trace()
    m, n = u.shape[-2], vh.shape[-1]
    if trace is not None and trace.forward:  # the factors' tangents: the general path
        params = {"m": m, "n": n, "full_matrices": full_matrices}
        return tuple(apply(FACTOR, (packed,), {"index": i, **params}, out)
                     for i, out in enumerate((u, s, vh)))  # fmt: skip
    whole = node_of(packed, trace.tape) if trace is not None else None
    if whole is None:  # a constant
        return wrap_constant(u), wrap_constant(s), wrap_constant(vh)
    # Each factor's node, recorded here (at the packed node's site) rather than by apply.
    return tuple(
        wrap(out, push(Node(SLICED_FACTOR, (whole,), whole.tape, whole.tag, out, whole.site),
                       ((..., part),)))
        for out, (part, _) in zip((u, s, vh), _slots(m, n, full_matrices))
    )  # fmt: skip


def _hermitian_svd(a, compute_uv):
    # numpy's steps for hermitian=True, on the rules of eigh, abs and take_along_axis.
    if not compute_uv:
        return np.sort(np.abs(np.linalg.eigvalsh(a)))[..., ::-1]
    s, u = np.linalg.eigh(a)
    signs = np.copysign(1.0, s)
    s = np.abs(s)
    order = np.argsort(s)[..., ::-1]
    signs = np.take_along_axis(signs, order, axis=-1)
    s = np.take_along_axis(s, order, axis=-1)
    u = np.take_along_axis(u, order[..., None, :], axis=-1)
    return SVD_RESULT(u, s, _mT(u * signs[..., None, :]))


@implements(np.linalg.svd)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        return _hermitian_svd(a, compute_uv)
    if not compute_uv:
        return apply(SINGULAR_VALUES, (a,), None, np.linalg.svd(unwrap(a), compute_uv=False))
    u, s, vh = np.linalg.svd(unwrap(a), full_matrices=full_matrices)
    return SVD_RESULT(*svd_factors(DECOMPOSITION, a, u, s, vh, full_matrices))


@implements(np.linalg.svdvals)
def svdvals(x, /):
    return np.linalg.svd(x, compute_uv=False)


# -- eig, eigvals ------------------------------------------------------------------------


def _real_spectrum_as_complex(a, values):
    """Whether numpy (>= 2.5, which returns complex numbers for every matrix) gave the real
    eigenvalues of a real ``a`` as complex ones (the eigenvectors are then real too)."""
    return values.dtype.kind == "c" and np.result_type(a).kind != "c" and not np.any(values.imag)


def _eigensystem(a):
    """``np.linalg.eig(a)``, real when ``a`` and its eigenvalues are."""
    values, vectors = np.linalg.eig(a)
    if _real_spectrum_as_complex(a, values):
        return np.real(values), np.real(vectors)
    return values, vectors


def _eigenvalues_vjp(g, ans, a):
    # a = V L V^-1, so d lambda_i = (V^-1 da V)_ii and abar = V^-T diag(g) V^T.
    _, vectors = _eigensystem(a)
    return np.linalg.solve(_mT(vectors), np.expand_dims(g, -1) * _mT(vectors))


def _eigenvectors_vjp(g, ans, a):
    # Unnormalised, dV = V (F o (V^-1 da V)) with F_ij = 1 / (lambda_j - lambda_i); numpy
    # scales each eigenvector to unit length, dV = V (C + diag(d)) with C that term and
    # d_k = -Re((V^H V C)_kk); the phase of each is numpy's choice (refused unless the loss
    # ignores it). With P = V^T g and Q = (V^H V)^T diag(Re P_kk), the adjoint is
    # abar = V^-T (F o (P - Q)) V^T (for real V: g - V diag(V^T g) projected, as before).
    # The vectors are the output itself, not a second eig of a: one node for both, so that
    # a higher-order sweep sees the phase leave this vjp's result alone (the loss's
    # cotangent g was computed from the output too). Their eigenvalues: diag(V^-1 a V).
    vectors = ans
    values = np.diagonal(np.linalg.solve(vectors, np.matmul(a, vectors)), axis1=-2, axis2=-1)
    p = np.matmul(_mT(vectors), g)
    refuse_phase_dependence(p, "np.linalg.eig")
    p_diagonal = np.diagonal(p, axis1=-2, axis2=-1)
    gram = np.matmul(_mT(vectors), np.conjugate(vectors))  # (V^H V)^T
    q = gram * np.expand_dims(np.real(p_diagonal), -2)
    inner = gap_weighted(values, p - q, "np.linalg.eig (its eigenvectors)", columns_read(g))
    return np.linalg.solve(_mT(vectors), np.matmul(inner, _mT(vectors)))


# The eigenvalues' vjp is holomorphic (V^-T diag(g) V^T, no conjugates): right for complex
# eigenvalues too, of real or complex matrices with distinct eigenvalues.
EIGENVALUES = VjpRule(
    "linalg.eig", lambda a: np.linalg.eig(a)[0], (_eigenvalues_vjp,), ((0,),), handles_complex=True,
    jvp=TRANSPOSED,
)
EIGENVALUES_ONLY = VjpRule(
    "linalg.eigvals", np.linalg.eigvals, (_eigenvalues_vjp,), ((0,),), handles_complex=True,
    jvp=TRANSPOSED,
)
EIGENVECTORS = VjpRule(
    "linalg.eig",
    lambda a: np.linalg.eig(a)[1],
    (_eigenvectors_vjp,),
    ((0, ANS),),
    handles_complex=True,  # (where the loss does not depend on the vectors' phases)
    jvp=TRANSPOSED,
)


def _real_eigenvectors_vjp(g, ans, a):
    # numpy >= 2.5 returns the real eigenvectors of a real matrix with real eigenvalues
    # as complex numbers: they stay real under a real change of a, so only Re(g) pairs.
    return _eigenvectors_vjp(np.real(g), np.real(ans), a)


REAL_EIGENVECTORS = VjpRule(
    "linalg.eig (real eigenvectors as complex numbers)",
    lambda a: np.linalg.eig(a)[1],
    (_real_eigenvectors_vjp,),
    ((0, ANS),),
    jvp=TRANSPOSED,
    handles_complex=True,
)


@implements(np.linalg.eig)
def eig(a):
    values, vectors = np.linalg.eig(unwrap(a))
    # Real eigenvectors given as complex numbers are defined up to their sign only,
    # whatever the loss reads of them.
    real_vectors = _real_spectrum_as_complex(unwrap(a), values)
    vectors_rule = REAL_EIGENVECTORS if real_vectors else EIGENVECTORS
    return EIG_RESULT(
        apply(EIGENVALUES, (a,), None, values), apply(vectors_rule, (a,), None, vectors)
    )


@implements(np.linalg.eigvals)
def eigvals(a):
    values = np.linalg.eigvals(unwrap(a))
    return apply(EIGENVALUES_ONLY, (a,), None, values)


# -- qr ----------------------------------------------------------------------------------


def _copy_lower_to_upper(m):
    """The Hermitian (symmetric) matrix with ``m``'s lower triangle and the real part of its
    diagonal."""
    lower = np.tril(m, -1)
    diagonal = np.real(m) if np.result_type(m).kind == "c" else m
    return lower + adjoint(lower) + diagonal * np.eye(np.shape(m)[-1])


def _square_r_vjp(q, r, q_bar, r_bar):
    """abar for a = q r with r square (m >= n); either cotangent may be None.

    (Walter and Lehmann 2018; Liao et al. 2019) M = R Rbar^T - Qbar^T Q, and
    abar = (Qbar + conj(Q copyltu(M))) R^-T, copyltu(M) the Hermitian matrix with M's lower
    triangle. For complex a, Q^H dQ is anti-Hermitian and R's diagonal real (LAPACK's),
    so the diagonal of Q^H da R^-1 gives dR_kk / R_kk its real part and Q^H dQ its
    imaginary one: copyltu keeps the real part of M's diagonal.
    """
    terms = []
    if r_bar is not None:
        terms.append(np.matmul(r, _mT(r_bar)))
    if q_bar is not None:
        terms.append(-np.matmul(_mT(q_bar), q))
    m = terms[0] if len(terms) == 1 else terms[0] + terms[1]
    b = conjugate_if_complex(np.matmul(q, _copy_lower_to_upper(m)))
    if q_bar is not None:
        b = b + q_bar
    return _mT(np.linalg.solve(r, _mT(b)))


def _qr_vjp(a, q_bar, r_bar):
    """abar from the cotangents of the reduced factors (either may be None)."""
    q, r = np.linalg.qr(a)
    m, n = np.shape(a)[-2:]
    if m >= n:
        return _square_r_vjp(q, r, q_bar, r_bar)
    # A wide a = [x | y] = q [u | v]: x = q u is a square factorization, v = q^H y, whose
    # cotangent gives y conj(q) vbar and q conj(y vbar^T).
    y = a[..., :, m:]
    if r_bar is None:
        x_bar = _square_r_vjp(q, r[..., :, :m], q_bar, None)
        return np.concatenate([x_bar, np.zeros_like(y)], axis=-1)
    u_bar, v_bar = r_bar[..., :, :m], r_bar[..., :, m:]
    through_v = conjugate_if_complex(np.matmul(y, _mT(v_bar)))
    q_bar = through_v if q_bar is None else q_bar + through_v
    x_bar = _square_r_vjp(q, r[..., :, :m], q_bar, u_bar)
    return np.concatenate([x_bar, np.matmul(conjugate_if_complex(q), v_bar)], axis=-1)


def _q_vjp(g, ans, a, mode="reduced"):
    m, n = np.shape(a)[-2:]
    if mode == "complete" and m > n:
        _refuse_arbitrary_basis(g[..., :, n:], "np.linalg.qr(a, mode='complete')'s Q")
        g = g[..., :, :n]
    return _qr_vjp(a, g, None)


def _r_vjp(g, ans, a, mode="reduced"):
    m, n = np.shape(a)[-2:]
    if m > n:  # mode='complete': the rows below n are zeros whatever a is
        g = g[..., :n, :]
    return _qr_vjp(a, None, g)


def _q_jvp(tangents, ans, args, kwargs):
    """Q's tangent: the transposed vjp's; for ``mode='complete'`` of a tall matrix the
    reduced Q's, completed with NaN (:func:`completed_with_nan`)."""
    m, n = np.shape(args[0])[-2:]
    if kwargs.get("mode") != "complete" or m <= n:
        return _TRANSPOSED_Q(tangents, ans, args, kwargs)
    t = _TRANSPOSED_Q(tangents, ans[..., :, :n], args, {**kwargs, "mode": "reduced"})
    if t is None:
        return None
    return completed_with_nan(t, (m, m), "np.linalg.qr(a, mode='complete')'s Q")


Q_FACTOR = VjpRule("linalg.qr", lambda a, mode: np.linalg.qr(a, mode)[0], (_q_vjp,), ((0,),),
                   handles_complex=True, jvp=hand(_q_jvp))  # fmt: skip
_TRANSPOSED_Q = TRANSPOSED.bind(Q_FACTOR.applied, Q_FACTOR.vjps)
R_FACTOR = VjpRule("linalg.qr", lambda a, mode: np.linalg.qr(a, mode)[-1], (_r_vjp,), ((0,),),
                   handles_complex=True, jvp=TRANSPOSED)  # fmt: skip


@implements(np.linalg.qr)
def qr(a, mode="reduced"):
    result = np.linalg.qr(unwrap(a), mode)
    if not any_active((a,)):
        return wrap_constant(result)
    if mode in ("raw", "economic", "e"):
        raise NotDifferentiableError(
            f"np.linalg.qr(a, mode={mode!r}) returns LAPACK's Householder reflectors, whose "
            "derivative mutagrad does not implement. Fix: use mode='reduced' (the default), "
            "'complete' or 'r'."
        )
    mode = "reduced" if mode in ("f", "full") else mode  # numpy's deprecated spelling
    params = {"mode": mode}
    if mode == "r":
        return apply(R_FACTOR, (a,), params, result)
    q, r = result
    return QR_RESULT(apply(Q_FACTOR, (a,), params, q), apply(R_FACTOR, (a,), params, r))


# -- pinv, lstsq, cond ---------------------------------------------------------------------


def _pinv_adjoint(g, p, a):
    """abar for p = pinv(a) of constant rank, given the cotangent ``g`` of ``p``.

    (Golub and Pereyra 1973) dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P,
    whose adjoint in JAX's convention is -P^T g P^T + conj((I - A P) g^T P P^H)
    + conj(P^H P g^T (I - P A)) (the terms in dA^H pair with the conjugate).
    """
    pt, gt, ph = _mT(p), _mT(g), adjoint(p)
    first = -np.matmul(pt, np.matmul(g, pt))
    gt_p_ph = np.matmul(np.matmul(gt, p), ph)
    second = gt_p_ph - np.matmul(a, np.matmul(p, gt_p_ph))
    ph_p_gt = np.matmul(ph, np.matmul(p, gt))
    third = ph_p_gt - np.matmul(np.matmul(ph_p_gt, p), a)
    return first + conjugate_if_complex(second + third)


def _pinv_vjp(g, ans, a, rcond=None, hermitian=False, rtol=_NoValue):
    if not hermitian:
        return _pinv_adjoint(g, ans, a)
    # numpy factorizes the Hermitian (symmetric) matrix of a's lower triangle and the real
    # part of its diagonal (np.linalg.eigh): each element below the diagonal stands for
    # itself and its mirror image's conjugate.
    cotangent = _pinv_adjoint(g, ans, _copy_lower_to_upper(a))
    both = cotangent + adjoint(cotangent)  # (its diagonal: twice the real part, exactly)
    return np.tril(both) - both * (np.eye(np.shape(a)[-1]) / 2)


PINV = VjpRule("linalg.pinv", np.linalg.pinv, (_pinv_vjp,), ((0, ANS),), handles_complex=True,
               jvp=TRANSPOSED)


def _refuse_discarded_singular_values(s, kept, shape, function):
    """Refuse a cutoff that discards singular values above rounding level.

    The pseudo-inverse's derivative above holds where the discarded singular
    values are zero; numpy's default cutoffs only discard rounding noise.
    """
    largest = np.max(s, axis=-1, keepdims=True) if np.size(s) else s
    noise = max(1e-15, max(shape[-2:]) * np.finfo(np.float64).eps) * largest
    if np.any(~kept & (s > noise)):
        raise NotDifferentiableError(
            f"{function}'s cutoff discards singular values of this traced matrix that are "
            "not rounding noise; the derivative of the truncated pseudo-inverse would depend "
            "on them, and mutagrad does not implement it.\n"
            "Fix: a cutoff below the discarded values' size (the default discards only "
            "rounding noise), or truncate explicitly with np.linalg.svd."
        )


@implements(np.linalg.pinv)
def pinv(a, rcond=None, hermitian=False, *, rtol=_NoValue):
    params = {"rcond": rcond, "hermitian": hermitian, "rtol": rtol}
    result = np.linalg.pinv(unwrap(a), **params)
    if not any_active((a,)):
        return wrap_constant(result)
    if (rcond is not None or rtol is not _NoValue) and np.size(a):
        raw = unwrap(a)
        s = np.abs(np.linalg.eigvalsh(raw)) if hermitian else np.linalg.svd(raw, compute_uv=False)
        if rcond is not None:
            cut = rcond
        elif rtol is None:  # numpy's array-API default
            cut = max(raw.shape[-2:]) * np.finfo(raw.dtype).eps
        else:
            cut = rtol
        kept = s > np.expand_dims(cut, -1) * np.max(s, axis=-1, keepdims=True)
        _refuse_discarded_singular_values(s, kept, raw.shape, "np.linalg.pinv")
    return apply(PINV, (a,), params, result)


def _lstsq_rcond(shape, rcond):
    """The cutoff LAPACK applies in np.linalg.lstsq (a negative one means machine epsilon)."""
    eps = np.finfo(np.float64).eps
    if rcond is None:
        return eps * max(shape)
    return eps if rcond < 0 else rcond


def _solution_vjp_a(g, ans, a, b, rcond=None):
    # x = pinv(a) b: the cotangent of pinv(a) is g b^T.
    p = np.linalg.pinv(a, rcond=_lstsq_rcond(np.shape(a), rcond))
    g_pinv = np.outer(g, b) if np.ndim(b) == 1 else np.matmul(g, _mT(b))
    return _pinv_adjoint(g_pinv, p, a)


def _solution_vjp_b(g, ans, a, b, rcond=None):
    p = np.linalg.pinv(a, rcond=_lstsq_rcond(np.shape(a), rcond))
    return np.matmul(_mT(p), g)


def _residual(a, b, rcond):
    x = np.linalg.lstsq(a, b, rcond=rcond)[0]
    return b - np.matmul(a, x), x


def _residuals_vjp_a(g, ans, a, b, rcond=None):
    # residuals = sum(|r|**2, axis=0) with r = b - a x; at the least-squares solution
    # a^H r = 0, so d residuals = 2 Re(r^H (db - da x)): the cotangents pair with conj(r).
    r, x = _residual(a, b, rcond)
    r = conjugate_if_complex(r)
    if np.ndim(b) == 1:
        return -2 * np.outer(r * g, x)
    return -2 * np.matmul(r * g, _mT(x))


def _residuals_vjp_b(g, ans, a, b, rcond=None):
    r, _ = _residual(a, b, rcond)
    return 2 * conjugate_if_complex(r) * g


# (x = pinv(a) b is holomorphic in pinv(a) and b: the transposes, as the real rule's)
LSTSQ_SOLUTION = VjpRule(
    "linalg.lstsq",
    lambda a, b, rcond=None: np.linalg.lstsq(a, b, rcond)[0],
    (_solution_vjp_a, _solution_vjp_b),
    ((0, 1), (0,)),
    handles_complex=True,
    jvp=TRANSPOSED,
)
LSTSQ_RESIDUALS = VjpRule(
    "linalg.lstsq",
    lambda a, b, rcond=None: np.linalg.lstsq(a, b, rcond)[1],
    (_residuals_vjp_a, _residuals_vjp_b),
    ((0, 1), (0, 1)),
    handles_complex=True,
    jvp=TRANSPOSED,
)


@implements(np.linalg.lstsq)
def lstsq(a, b, rcond=None):
    x, residuals, rank, s = np.linalg.lstsq(unwrap(a), unwrap(b), rcond)
    if not any_active((a, b)):
        return wrap_constant(x), wrap_constant(residuals), rank, wrap_constant(s)
    kept = np.arange(np.size(s)) < rank
    _refuse_discarded_singular_values(s, kept, np.shape(a), "np.linalg.lstsq")
    params = {"rcond": rcond}
    return (
        apply(LSTSQ_SOLUTION, (a, b), params, x),
        # numpy returns the squared residuals only for a full-rank tall a (else an empty array).
        apply(LSTSQ_RESIDUALS, (a, b), params, residuals) if residuals.size else
        wrap_constant(residuals),
        rank,
        apply(SINGULAR_VALUES, (a,), None, s),
    )  # fmt: skip


@implements(np.linalg.cond)
def cond(x, p=None):
    # numpy's steps: a ratio of singular values, or a norm times the norm of the inverse.
    raw = unwrap(x)
    result = np.linalg.cond(raw, p)
    if not any_active((x,)):
        return wrap_constant(result)
    if np.any(np.isinf(result)):
        raise NotDifferentiableError(
            "np.linalg.cond of a singular traced matrix: the condition number is infinite "
            "there, with no derivative.\n"
            "Fix: keep the matrix away from singular ones (a ridge, a + eps * I), or pass "
            "mutagrad.ignore_derivatives(a) if no gradient should flow here."
        )
    if p is None or p in (2, -2):
        s = np.linalg.svd(x, compute_uv=False)
        return s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    return np.linalg.norm(x, p, axis=(-2, -1)) * np.linalg.norm(np.linalg.inv(x), p, axis=(-2, -1))
