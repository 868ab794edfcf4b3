"""Functions whose outputs carry no derivative.

Their results are integers, booleans, shapes, or piecewise constant (``floor``,
``round``: derivative zero almost everywhere; ``np.sign`` and ``np.angle``, constant on real
numbers but smooth on complex ones, have rules in ``mutagrad.rules.ufuncs``). They run on the raw
data and return constants; calling them on traced arrays is always allowed.
"""

from __future__ import annotations

import numpy as np

from mutagrad.core.registry import nondifferentiable

nondifferentiable(
    # comparisons and logic
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
    np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert, np.left_shift, np.right_shift,
    np.isfinite, np.isinf, np.isnan, np.isnat, np.signbit,
    # piecewise constant
    np.floor, np.ceil, np.trunc, np.rint, np.floor_divide,
    np.round, np.around, np.fix, np.spacing,
    # integers
    np.gcd, np.lcm, np.bitwise_count, np.packbits, np.unpackbits,
    # indices, counts and shapes
    np.argmax, np.argmin, np.argsort, np.argpartition, np.argwhere, np.nonzero, np.flatnonzero,
    np.searchsorted, np.digitize, np.count_nonzero,
    np.shape, np.ndim, np.size, np.result_type, np.can_cast, np.min_scalar_type,
    np.may_share_memory, np.shares_memory, np.iscomplexobj, np.isrealobj,
    np.isclose, np.allclose, np.array_equal, np.array_equiv, np.any, np.all,
    np.isreal, np.iscomplex, np.isneginf, np.isposinf,
    np.nanargmax, np.nanargmin, np.lexsort, np.isin, np.linalg.matrix_rank,
    np.unravel_index, np.ravel_multi_index,
    np.diag_indices_from, np.tril_indices_from, np.triu_indices_from, np.einsum_path,
    # text
    np.array_repr, np.array_str,
)  # fmt: skip
