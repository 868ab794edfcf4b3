"""Which numpy functions mutagrad differentiates: the coverage table in the README.

``python -m mutagrad coverage`` prints it; ``--write`` puts it into README.md
between ``<!-- coverage:start -->`` and ``<!-- coverage:end -->``.

The table lists every public callable that numpy and jax.numpy share (main
namespace, ``np.linalg`` and ``np.fft``), computed once with the versions in
:data:`NUMPY_VERSION` and :data:`JAX_VERSION` and written below (:data:`AREAS`;
jax is not a dependency), and a few numpy functions jax.numpy lacks
(:data:`NUMPY_ONLY`). Names the installed numpy does not have are left out.
Each name is

* **supported** when it has a rule (``UFUNC_RULES`` or ``FUNCTION_RULES``);
* **non-differentiable** when declared so (``NONDIFFERENTIABLE``): it runs
  on traced arrays and its outputs carry no derivative; or when it takes no
  array values at all (a shape, a dtype, a setting: :data:`DECLARED`);
* **refused** for a reason stated in :data:`DECLARED` (a scalar type, complex
  values, a raw array, a file);
* otherwise it is *tried*: a small call on a traced array (:data:`SAMPLES`)
  inside ``mutagrad.gradient``. It is **traced through** when numpy's own
  Python implementation runs on traced arrays and its gradient matches
  central finite differences, and **refused** when mutagrad raises
  ``MissingRuleError``, ``TracerConversionError`` or ``NotDifferentiableError``
  (the error says why). A function that poison mode refuses with
  ``PoisonedCaptureError`` (numpy's code overwrites a value a pullback saved)
  is tried again in snapshot mode, and the table says so.

The functions :mod:`mutagrad.rules.numpy_source` registers (``np.cov``,
``np.gradient``...) run numpy's own Python code on traced arrays: they are
tried the same way and are **traced through**, with what numpy's code does.
A third table lists numpy's Python-level functions (:data:`PYTHON_LEVEL`
and those) with how each is differentiated, or why it has a rule instead.

Anything else (a wrong gradient, another exception, a name with no sample) is
a bug, reported by :func:`classify` as a problem and by the command as a
failure.

Where SciPy is installed, a second table (:func:`scipy_table`, between
``<!-- scipy-coverage:start -->`` and ``<!-- scipy-coverage:end -->``) lists
the SciPy functions mutagrad differentiates, from the SciPy rule modules'
own registries, and whether each is a rule (SciPy's value, mutagrad's
derivative) or SciPy's own Python code traced through.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from mutagrad.core.registry import FUNCTION_RULES, NONDIFFERENTIABLE, UFUNC_RULES
from mutagrad.errors import (
    MissingRuleError,
    NotDifferentiableError,
    PoisonedCaptureError,
    TracerConversionError,
)
from mutagrad.rules.numpy_source import TRACED
from mutagrad.testing import check_gradient
from mutagrad.zygote import gradient

START = "<!-- coverage:start -->"
END = "<!-- coverage:end -->"
STATUSES = ("supported", "traced through", "non-differentiable", "refused")

# The list below was computed with these versions (see :func:`shared_names`).
NUMPY_VERSION = "2.4.6"
JAX_VERSION = "0.10.2"

# Every public callable numpy and jax.numpy share, by area: names in numpy's namespace
# ("linalg.x" in np.linalg, "fft.x" in np.fft), and the numpy-only ones of NUMPY_ONLY.
AREAS: dict[str, tuple[str, ...]] = {
    "elementwise": (
        "add", "subtract", "multiply", "divide", "true_divide", "power", "pow", "float_power",
        "negative", "positive", "absolute", "abs", "fabs", "sign", "sqrt", "cbrt", "square",
        "reciprocal", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp",
        "logaddexp2", "sin", "cos", "tan", "arcsin", "asin", "arccos", "acos", "arctan", "atan",
        "arctan2", "atan2", "hypot", "sinh", "cosh", "tanh", "arcsinh", "asinh", "arccosh",
        "acosh", "arctanh", "atanh", "deg2rad", "rad2deg", "degrees", "radians", "maximum",
        "minimum", "fmax", "fmin", "clip", "where", "floor", "ceil", "trunc", "rint", "round",
        "around", "fix", "floor_divide", "remainder", "mod", "fmod", "divmod", "modf", "frexp",
        "ldexp", "copysign", "nextafter", "spacing", "heaviside", "sinc", "i0", "nan_to_num",
        "real", "imag", "conjugate", "conj", "angle", "real_if_close", "signbit", "isnan",
        "isfinite", "isinf", "isneginf", "isposinf", "isreal", "iscomplex",
    ),
    "comparison and logic": (
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
        "logical_or", "logical_xor", "logical_not", "isclose", "allclose", "array_equal",
        "array_equiv",
    ),
    "bits and integers": (
        "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_invert", "invert",
        "bitwise_left_shift", "left_shift", "bitwise_right_shift", "right_shift",
        "bitwise_count", "gcd", "lcm", "packbits", "unpackbits",
    ),
    "reductions": (
        "sum", "prod", "mean", "std", "var", "max", "amax", "min", "amin", "ptp", "average",
        "median", "percentile", "quantile", "nansum", "nanprod", "nanmean", "nanstd", "nanvar",
        "nanmax", "nanmin", "nanmedian", "nanpercentile", "nanquantile", "any", "all",
        "count_nonzero", "argmax", "argmin", "nanargmax", "nanargmin",
    ),
    "cumulative": (
        "cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "nancumsum", "nancumprod",
        "diff", "ediff1d", "gradient", "trapezoid",
    ),
    "products": (
        "dot", "vdot", "inner", "outer", "matmul", "vecdot", "matvec", "vecmat", "tensordot",
        "einsum", "einsum_path", "kron", "cross", "trace",
    ),
    "np.linalg": (
        "linalg.solve", "linalg.inv", "linalg.det", "linalg.slogdet", "linalg.norm",
        "linalg.multi_dot", "linalg.vector_norm", "linalg.matrix_norm", "linalg.pinv",
        "linalg.cholesky", "linalg.qr", "linalg.eigh", "linalg.eigvalsh", "linalg.eig",
        "linalg.eigvals", "linalg.svd", "linalg.svdvals", "linalg.lstsq", "linalg.matrix_power",
        "linalg.cond", "linalg.matrix_rank", "linalg.tensorinv", "linalg.tensorsolve",
        "linalg.matmul", "linalg.vecdot", "linalg.outer", "linalg.cross", "linalg.tensordot",
        "linalg.trace", "linalg.diagonal", "linalg.matrix_transpose",
    ),
    "np.fft": (
        "fft.fft", "fft.ifft", "fft.fft2", "fft.ifft2", "fft.fftn", "fft.ifftn", "fft.rfft",
        "fft.irfft", "fft.rfft2", "fft.irfft2", "fft.rfftn", "fft.irfftn", "fft.hfft",
        "fft.ihfft", "fft.fftfreq", "fft.rfftfreq", "fft.fftshift", "fft.ifftshift",
    ),
    "shape": (
        "reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "swapaxes",
        "moveaxis", "rollaxis", "squeeze", "expand_dims", "broadcast_to", "broadcast_arrays",
        "atleast_1d", "atleast_2d", "atleast_3d", "concatenate", "concat", "stack", "vstack",
        "hstack", "dstack", "column_stack", "block", "split", "array_split", "hsplit", "vsplit",
        "dsplit", "unstack", "flip", "fliplr", "flipud", "rot90", "copy", "astype",
    ),
    "rearranging": (
        "roll", "tile", "repeat", "pad", "resize", "append", "insert", "delete", "diag",
        "diagflat", "diagonal", "tril", "triu", "fill_diagonal", "trim_zeros",
    ),
    "indexing and sorting": (
        "take", "take_along_axis", "put_along_axis", "put", "place", "putmask", "choose",
        "compress", "extract", "select", "nonzero", "argwhere", "flatnonzero", "searchsorted",
        "sort", "sort_complex", "argsort", "partition", "argpartition", "lexsort", "ix_",
        "indices", "diag_indices", "diag_indices_from", "tril_indices", "tril_indices_from",
        "triu_indices", "triu_indices_from", "mask_indices", "ravel_multi_index",
        "unravel_index",
    ),
    "sets": (
        "unique", "unique_values", "unique_counts", "unique_inverse", "unique_all", "isin",
        "union1d", "intersect1d", "setdiff1d", "setxor1d",
    ),
    "creation": (
        "zeros_like", "ones_like", "empty_like", "full_like", "copyto", "linspace", "logspace",
        "geomspace", "meshgrid", "zeros", "ones", "empty", "full", "eye", "identity", "tri",
        "arange", "array", "asarray", "fromfunction", "fromiter", "frombuffer", "fromstring",
        "fromfile", "from_dlpack",
    ),
    "polynomials": (
        "polyval", "polyfit", "poly", "roots", "polyadd", "polysub", "polymul", "polydiv",
        "polyder", "polyint", "vander",
    ),
    "statistics and signals": (
        "cov", "corrcoef", "histogram", "histogram2d", "histogramdd", "histogram_bin_edges",
        "bincount", "digitize", "convolve", "correlate", "interp", "unwrap", "bartlett",
        "blackman", "hamming", "hanning", "kaiser",
    ),
    "functional": (
        "apply_along_axis", "apply_over_axes", "piecewise", "vectorize", "frompyfunc",
    ),
    "types and shapes": (
        "shape", "ndim", "size", "broadcast_shapes", "result_type", "promote_types", "can_cast",
        "issubdtype", "isdtype", "isscalar", "iterable", "iscomplexobj", "isrealobj", "dtype",
        "finfo", "iinfo", "ndarray", "ufunc", "generic", "number", "integer", "signedinteger",
        "unsignedinteger", "inexact", "floating", "complexfloating", "flexible", "character",
        "bool", "bool_", "int8", "int16", "int32", "int64", "int_", "uint", "uint8", "uint16",
        "uint32", "uint64", "float16", "float32", "float64", "single", "double", "complex64",
        "complex128", "csingle", "cdouble", "object_",
    ),
    "input, output and printing": (
        "load", "save", "savez", "array_repr", "array_str", "printoptions", "set_printoptions",
        "get_printoptions",
    ),
}  # fmt: skip

# numpy functions jax.numpy lacks, listed beside the shared ones.
NUMPY_ONLY = frozenset({"copyto", "putmask", "fix", "real_if_close"})

# Why the functions that are not tried have their status.
NO_ARRAY_VALUES = "takes no array values (a shape, a size, a dtype, a setting)"
QUERY = "a type, or a question about a type or an object"
SCALAR_TYPE = "a numpy scalar type: it makes a raw number of a traced value (use x.astype)"
COMPLEX = "no rule for complex values yet (the other complex paths: see Complex numbers)"
RAW_ARRAY = (
    "returns a raw ndarray (use x.copy(), np.copy, mutagrad.array, or mutagrad.numpy's "
    "array/asarray, which stack lists of traced values)"
)
RAW_FILL = (
    "numpy dispatches it on like= only, else converts a traced fill value into a raw array: "
    "refused (np.full(..., like=x), np.full_like and mutagrad.numpy.full keep it)"
)
FROM_BYTES = "builds a raw array from bytes, a buffer or an iterator (np.stack keeps traced values)"
OBJECT_ARRAYS = (
    "runs a Python function on object arrays (mutagrad.numpy.vectorize runs it on traced "
    "values, as jnp.vectorize)"
)
EXPORTS = "exports a traced array's data (as x.tobytes() does)"

# Functions that are not tried: (status, reason).
DECLARED: dict[str, tuple[str, str]] = {
    **dict.fromkeys(
        ("zeros", "ones", "empty", "eye", "identity", "tri", "arange", "indices",
         "diag_indices", "tril_indices", "triu_indices", "mask_indices", "bartlett", "blackman",
         "hamming", "hanning", "broadcast_shapes", "promote_types", "load", "printoptions",
         "set_printoptions", "get_printoptions"),
        ("non-differentiable", NO_ARRAY_VALUES),
    ),
    **dict.fromkeys(
        ("issubdtype", "isdtype", "isscalar", "iterable", "dtype", "finfo", "iinfo", "ndarray",
         "ufunc", "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact",
         "floating", "complexfloating", "flexible", "character"),
        ("non-differentiable", QUERY),
    ),
    **dict.fromkeys(
        ("bool", "bool_", "int8", "int16", "int32", "int64", "int_", "uint", "uint8", "uint16",
         "uint32", "uint64", "float16", "float32", "float64", "single", "double", "object_"),
        ("refused", SCALAR_TYPE),
    ),
    **dict.fromkeys(
        ("complex64", "complex128", "csingle", "cdouble"),
        ("refused", SCALAR_TYPE),
    ),
    "sort_complex": ("refused", COMPLEX),
    "array": ("refused", RAW_ARRAY),
    "asarray": ("refused", RAW_ARRAY),
    "full": ("refused", RAW_FILL),
    **dict.fromkeys(
        ("fromiter", "frombuffer", "fromstring", "fromfile", "from_dlpack"), ("refused", FROM_BYTES)
    ),
    "vectorize": ("refused", OBJECT_ARRAYS),
    "frompyfunc": ("refused", OBJECT_ARRAYS),
    "save": ("refused", EXPORTS),
    "savez": ("refused", EXPORTS),
}  # fmt: skip

# Why a tried function was refused, from the error mutagrad raised.
CONVERTS = "numpy's Python code converts its input to a raw array (np.asarray)"
NO_RULE = "no rule, and numpy implements it in C"
POISONED = (
    "poison mode refuses it (numpy's code overwrites a value a pullback saved); "
    "snapshot mode differentiates it"
)

# numpy's Python-level functions (issue 12): how each is differentiated, where the table
# does not say it already (traced through: mutagrad.rules.numpy_source.TRACED says how).
KEPT_RULE = "a rule, kept: numpy's code traces too, into more operations on the tape"
PYTHON_LEVEL: dict[str, str] = {
    "polyadd": "numpy's code runs on traced arrays as it is",
    "polysub": "numpy's code runs on traced arrays as it is",
    "polyval": KEPT_RULE,
    "polyder": KEPT_RULE,
    "polyint": KEPT_RULE,
    "apply_over_axes": KEPT_RULE,
    "trapezoid": KEPT_RULE,
    "select": KEPT_RULE,
    "tril": KEPT_RULE,
    "triu": KEPT_RULE,
    "polymul": "a rule: numpy's polymul converts the coefficients inside np.poly1d's methods",
    "vander": (
        "a rule: numpy's vander runs np.multiply.accumulate(..., out=) into a raw np.empty "
        "buffer, which a traced value cannot be written into"
    ),
    "apply_along_axis": "a rule: numpy's code converts its input in C (_array_converter)",
    "kron": (
        "a rule, from when numpy's kron could not be traced (it reshapes by an ndarray "
        "shape, which WrappedArray.reshape now takes)"
    ),
    "block": "a rule: numpy's block joins with numpy's C concatenate, which converts",
    "interp": "a rule: numpy's interp is C code",
    "tri": "takes no array values",
    "kaiser": "np.kaiser has no __array_function__, and its np.array([0.0, M, beta]) "
    "converts a traced beta (mutagrad.numpy.kaiser runs the same formula on it)",
    "unique": (
        "a rule: numpy's unique finds duplicates in C (its hash table converts the input) and, "
        "with axis=, views the rows as one structured dtype; the rule takes numpy's values "
        "from their first occurrences"
    ),
    **dict.fromkeys(
        ("unique_values", "unique_counts", "unique_inverse", "unique_all"),
        "a rule: np.unique's, with the keywords numpy's code passes it (equal_nan=False); "
        "numpy's code, one np.unique call, would trace too",
    ),
}


def shared_names(numpy_module: Any, jax_numpy_module: Any) -> set[str]:
    """The public callables two numpy namespaces share, with their linalg and fft ones.

    How :data:`AREAS` was computed: ``shared_names(numpy, jax.numpy)``.
    """

    def shared(a: Any, b: Any, prefix: str) -> set[str]:
        names = {n for n in dir(a) if not n.startswith("_")} & set(dir(b))
        return {prefix + n for n in names if callable(getattr(a, n)) and callable(getattr(b, n))}

    found = shared(numpy_module, jax_numpy_module, "")
    for sub in ("linalg", "fft"):
        found |= shared(getattr(numpy_module, sub), getattr(jax_numpy_module, sub), sub + ".")
    return found


# A well-conditioned matrix with distinct positive entries below 1 (inside every domain
# used below: arcsin, arctanh, log...), and a vector of distinct entries.
MATRIX = np.array([[0.62, 0.17, 0.28], [0.11, 0.74, 0.35], [0.23, 0.09, 0.56]])
VECTOR = np.array([0.31, 0.72, 0.45, 0.93])

# A call of each function that runs when the function has no rule: array -> array(s).
# The first element says which input the call takes.
SAMPLES: dict[str, tuple[np.ndarray, Callable[[Any], Any]]] = {
    "float_power": (MATRIX, lambda x: np.float_power(x, 1.5)),
    "degrees": (MATRIX, np.degrees),
    "radians": (MATRIX, np.radians),
    "copysign": (MATRIX, lambda x: np.copysign(x, -1.0)),
    "sinc": (MATRIX, np.sinc),
    "i0": (MATRIX, np.i0),
    "nan_to_num": (MATRIX, np.nan_to_num),
    "imag": (MATRIX, lambda x: np.imag(x) + x),
    "angle": (MATRIX, lambda x: np.angle(x) + x),
    "ptp": (MATRIX, lambda x: np.ptp(x, axis=0)),
    "average": (MATRIX, lambda x: np.average(x, axis=0, weights=[0.2, 0.3, 0.5])),
    "nansum": (MATRIX, lambda x: np.nansum(x, axis=0)),
    "nanprod": (MATRIX, lambda x: np.nanprod(x, axis=0)),
    "nanmean": (MATRIX, lambda x: np.nanmean(x, axis=0)),
    "nanstd": (MATRIX, lambda x: np.nanstd(x, axis=0)),
    "nanvar": (MATRIX, lambda x: np.nanvar(x, axis=0)),
    "nanmax": (MATRIX, lambda x: np.nanmax(x, axis=0)),
    "nanmin": (MATRIX, lambda x: np.nanmin(x, axis=0)),
    "nanmedian": (MATRIX, lambda x: np.nanmedian(x, axis=0)),
    "nanpercentile": (MATRIX, lambda x: np.nanpercentile(x, 30, axis=0)),
    "nanquantile": (MATRIX, lambda x: np.nanquantile(x, 0.3, axis=0)),
    "nanargmax": (MATRIX, lambda x: np.nanargmax(x, axis=0) + x),
    "nanargmin": (MATRIX, lambda x: np.nanargmin(x, axis=0) + x),
    "cumulative_sum": (MATRIX, lambda x: np.cumulative_sum(x, axis=0)),
    "cumulative_prod": (MATRIX, lambda x: np.cumulative_prod(x, axis=0)),
    "nancumsum": (MATRIX, lambda x: np.nancumsum(x, axis=0)),
    "nancumprod": (MATRIX, lambda x: np.nancumprod(x, axis=0)),
    "ediff1d": (VECTOR, lambda x: np.ediff1d(x, to_begin=0.5)),
    "gradient": (MATRIX, lambda x: np.gradient(x, axis=0)),
    "trapezoid": (MATRIX, lambda x: np.trapezoid(x, axis=0)),
    "vdot": (MATRIX, lambda x: np.vdot(x, x[::-1])),
    "vecdot": (MATRIX, lambda x: np.vecdot(x, x[::-1])),
    "matvec": (MATRIX, lambda x: np.matvec(x, x[0])),
    "vecmat": (MATRIX, lambda x: np.vecmat(x[0], x)),
    "kron": (MATRIX, lambda x: np.kron(x, x[:2, :2])),
    "cross": (MATRIX, lambda x: np.cross(x, x[::-1])),
    "linalg.vector_norm": (MATRIX, lambda x: np.linalg.vector_norm(x, axis=0)),
    "linalg.matrix_norm": (MATRIX, np.linalg.matrix_norm),
    "linalg.pinv": (MATRIX, np.linalg.pinv),
    "linalg.cholesky": (MATRIX, lambda x: np.linalg.cholesky(x @ x.T)),
    "linalg.qr": (MATRIX, lambda x: np.linalg.qr(x)[1]),
    "linalg.eigh": (MATRIX, lambda x: np.linalg.eigh(x + x.T)[0]),
    "linalg.eigvalsh": (MATRIX, lambda x: np.linalg.eigvalsh(x + x.T)),
    "linalg.eig": (MATRIX, lambda x: np.linalg.eig(x + x.T)[0]),
    "linalg.svd": (MATRIX, lambda x: np.linalg.svd(x)[1]),
    "linalg.svdvals": (MATRIX, np.linalg.svdvals),
    "linalg.lstsq": (MATRIX, lambda x: np.linalg.lstsq(x, x[0])[0]),
    "linalg.matrix_power": (MATRIX, lambda x: np.linalg.matrix_power(x, 3)),
    "linalg.cond": (MATRIX, np.linalg.cond),
    "linalg.matrix_rank": (MATRIX, lambda x: np.linalg.matrix_rank(x) + x),
    "matrix_transpose": (MATRIX, np.matrix_transpose),
    "broadcast_arrays": (MATRIX, lambda x: np.broadcast_arrays(x, x[0])[1]),
    "vstack": (MATRIX, lambda x: np.vstack([x, x[0]])),
    "hstack": (MATRIX, lambda x: np.hstack([x, x[:, :1]])),
    "dstack": (MATRIX, lambda x: np.dstack([x, x])),
    "column_stack": (MATRIX, lambda x: np.column_stack([x, x[0]])),
    "block": (MATRIX, lambda x: np.block([[x, x], [x, x]])),
    "split": (MATRIX, lambda x: np.split(x, 3)[1]),
    "array_split": (MATRIX, lambda x: np.array_split(x, 2, axis=1)[0]),
    "unstack": (MATRIX, lambda x: np.unstack(x)[2]),
    "append": (MATRIX, lambda x: np.append(x, x[0])),
    "insert": (MATRIX, lambda x: np.insert(x, 1, x[2], axis=0)),
    "delete": (MATRIX, lambda x: np.delete(x, 1, axis=0)),
    "diag": (MATRIX, lambda x: np.diag(np.diag(x))),
    "diagflat": (MATRIX, lambda x: np.diagflat(x[0])),
    "tril": (MATRIX, np.tril),
    "triu": (MATRIX, lambda x: np.triu(x, 1)),
    "choose": (MATRIX, lambda x: np.choose([0, 2, 1], x)),
    "compress": (MATRIX, lambda x: np.compress([True, False, True], x, axis=0)),
    "extract": (MATRIX, lambda x: np.extract(x > 0.3, x)),
    "select": (MATRIX, lambda x: np.select([x > 0.5, x > 0.2], [x, 2 * x], 0.0)),
    "lexsort": (MATRIX, lambda x: np.lexsort(x) + x),
    "unique": (VECTOR, np.unique),
    "isin": (MATRIX, lambda x: np.isin(x, [0.62, 0.35]) + x),
    "linspace": (VECTOR, lambda x: np.linspace(x[0], x[1], 5)),
    "logspace": (VECTOR, lambda x: np.logspace(x[0], x[1], 5)),
    "geomspace": (VECTOR, lambda x: np.geomspace(x[0], x[1], 5)),
    "meshgrid": (VECTOR, lambda x: np.meshgrid(x, x[:2])[0]),
    "convolve": (VECTOR, lambda x: np.convolve(x, [0.5, 1.0, -1.0])),
    "correlate": (VECTOR, lambda x: np.correlate(x, [0.5, 1.0, -1.0], "full")),
    "interp": (VECTOR, lambda x: np.interp([0.5, 1.5, 2.5], [0.0, 1.0, 2.0, 3.0], x)),
    "polyval": (VECTOR, lambda x: np.polyval(x, 0.7)),
    "histogram": (VECTOR, lambda x: np.histogram(x, bins=3)[1]),
    "linalg.matmul": (MATRIX, lambda x: np.linalg.matmul(x, x[::-1])),
    "linalg.vecdot": (MATRIX, lambda x: np.linalg.vecdot(x, x[::-1])),
    "linalg.tensordot": (MATRIX, lambda x: np.linalg.tensordot(x, x[::-1], axes=1)),
    "linalg.trace": (MATRIX, np.linalg.trace),
    "linalg.diagonal": (MATRIX, lambda x: np.linalg.diagonal(x, offset=1)),
    "fft.fftfreq": (VECTOR, lambda x: np.fft.fftfreq(5, x[0])),
    "fft.rfftfreq": (VECTOR, lambda x: np.fft.rfftfreq(5, x[0])),
    "hsplit": (MATRIX, lambda x: np.hsplit(x, 3)[1]),
    "vsplit": (MATRIX, lambda x: np.vsplit(x, [1])[1]),
    "dsplit": (MATRIX, lambda x: np.dsplit(x[None], [1])[1]),
    "trim_zeros": (VECTOR, lambda x: np.trim_zeros(x - x[0])),
    "ix_": (VECTOR, lambda x: np.ix_(x, x[:2])[0]),
    "unique_values": (VECTOR, np.unique_values),
    "unique_counts": (VECTOR, lambda x: np.unique_counts(x).values),
    "unique_inverse": (VECTOR, lambda x: np.unique_inverse(x).values),
    "unique_all": (VECTOR, lambda x: np.unique_all(x).values),
    "union1d": (VECTOR, lambda x: np.union1d(x, x[1:] + 0.5)),
    "intersect1d": (VECTOR, lambda x: np.intersect1d(x, x[1:])),
    "setdiff1d": (VECTOR, lambda x: np.setdiff1d(x, x[1:2])),
    "setxor1d": (VECTOR, lambda x: np.setxor1d(x, x[1:2])),
    "fromfunction": (VECTOR, lambda x: np.fromfunction(lambda i, j: x[0] * i + x[1] * j, (2, 3))),
    "polyfit": (VECTOR, lambda x: np.polyfit([0.0, 1.0, 2.0, 3.0], x, 2)),
    "poly": (VECTOR, np.poly),
    "roots": (VECTOR, lambda x: np.roots(np.poly(x[:3]))),  # real roots
    "polyadd": (VECTOR, lambda x: np.polyadd(x, x[:2])),
    "polysub": (VECTOR, lambda x: np.polysub(x, x[:2])),
    "polymul": (VECTOR, lambda x: np.polymul(x, x[:2])),
    "polydiv": (VECTOR, lambda x: np.polydiv(x, x[:2])[0]),
    "polyder": (VECTOR, np.polyder),
    "polyint": (VECTOR, np.polyint),
    "cov": (MATRIX, np.cov),
    "corrcoef": (MATRIX, np.corrcoef),
    "histogram2d": (VECTOR, lambda x: np.histogram2d(x, x[::-1], bins=2)[1]),
    "histogramdd": (MATRIX, lambda x: np.histogramdd(x, bins=2)[1][0]),
    "histogram_bin_edges": (VECTOR, lambda x: np.histogram_bin_edges(x, bins=3)),
    "unwrap": (VECTOR, lambda x: np.unwrap(8 * x)),
    "kaiser": (VECTOR, lambda x: np.kaiser(4, 3 * x[0])),
    "piecewise": (VECTOR, lambda x: np.piecewise(x, [x < 0.5], [lambda v: v * v, lambda v: 2 * v])),
}


def numpy_function(name: str) -> Any:
    """``"linalg.solve"`` -> ``np.linalg.solve``."""
    target: Any = np
    for part in name.split("."):
        target = getattr(target, part)
    return target


def available(name: str) -> bool:
    """Whether the installed numpy has ``name`` (the list was computed with NUMPY_VERSION)."""
    try:
        numpy_function(name)
    except AttributeError:
        return False
    return True


@attrs.frozen
class Entry:
    """One function's row of the table."""

    name: str
    area: str
    status: str  # one of STATUSES, or "problem"
    detail: str = ""  # why it is refused (or non-differentiable); for a problem, what went wrong


def _weights(shape: tuple[int, ...]) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    return (np.linspace(0.5, 1.5, n) * (-1.0) ** np.arange(n)).reshape(shape)


def refusal_reason(error: Exception) -> str:
    """Why mutagrad refused a function, in a few words, from the error it raised."""
    text = str(error)
    if isinstance(error, MissingRuleError):
        return CONVERTS if "converts its input" in text else NO_RULE
    if isinstance(error, TracerConversionError):
        return CONVERTS
    if "complex" in text:
        return COMPLEX
    failure = re.search(r"mutagrad failed with (\w+)", text)
    if failure:  # numpy runs it on copies of the data, mutagrad could not on traced arrays
        return f"numpy's Python code fails on traced arrays ({failure.group(1)})"
    return text.splitlines()[0]


def try_sample(name: str) -> tuple[str, str]:
    """Run ``name``'s sample on a traced array: ``(status, detail)``."""
    if name not in SAMPLES:
        return "problem", "it has no rule and no sample call in mutagrad.coverage.SAMPLES"
    x, call = SAMPLES[name]
    shape = np.shape(call(x.copy()))
    w = _weights(shape)

    def loss(x: Any) -> Any:
        return np.sum(call(x) * w)

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        mode, detail = None, ""
        try:
            try:
                gradient(loss, x.copy())
            except PoisonedCaptureError:
                mode, detail = "snapshot", POISONED
                gradient(loss, x.copy(), mode=mode)
        except (MissingRuleError, TracerConversionError, NotDifferentiableError) as error:
            return "refused", refusal_reason(error)
        except Exception as error:  # any other error is reported, not raised
            return "problem", f"{type(error).__name__}: {str(error).splitlines()[0]}"
        try:
            check_gradient(loss, x.copy(), mode=mode)
        except AssertionError as error:
            return "problem", "wrong gradient: " + str(error).splitlines()[1].strip()
    return "traced through", detail


def status_of(name: str) -> tuple[str, str]:
    """``(status, detail)`` of one function of the table."""
    fn = numpy_function(name)
    if fn in TRACED:  # the rule runs numpy's own code: tried, as the functions without one
        status, detail = try_sample(name)
        if status == "traced through":
            detail = "; ".join(filter(None, (TRACED[fn].how, detail)))
        return status, detail
    if name in DECLARED:  # before the rules: np.full's serves its like= calls only
        return DECLARED[name]
    if fn in UFUNC_RULES or fn in FUNCTION_RULES:
        return "supported", ""
    if fn in NONDIFFERENTIABLE:
        return "non-differentiable", ""
    return try_sample(name)


def classify() -> list[Entry]:
    """Every function of :data:`AREAS` the installed numpy has, with its status, in order."""
    return [
        Entry(name, area, *status_of(name))
        for area, names in AREAS.items()
        for name in names
        if available(name)
    ]


def counts(entries: list[Entry]) -> dict[str, int]:
    return {status: sum(e.status == status for e in entries) for status in STATUSES}


def markdown_table(entries: list[Entry]) -> str:
    """The tables: one row per area and one column per status, with a row of totals;
    then the reasons of the refusals, with the functions each one refused."""
    lines = [
        "| area | " + " | ".join(STATUSES) + " |",
        "| --- |" + " --- |" * len(STATUSES),
    ]
    for area in AREAS:
        cells = []
        for status in STATUSES:
            names = [e.name for e in entries if e.area == area and e.status == status]
            cells.append(", ".join(f"`{n}`" for n in names))
        lines.append(f"| {area} | " + " | ".join(cells) + " |")
    total = counts(entries)
    lines.append("| **total** | " + " | ".join(f"**{total[s]}**" for s in STATUSES) + " |")
    reasons: dict[str, list[str]] = {}
    for e in entries:
        if e.status == "refused":
            reasons.setdefault(e.detail, []).append(e.name)
    lines += ["", "| refused because | functions |", "| --- | --- |"]
    for reason, names in sorted(reasons.items(), key=lambda item: -len(item[1])):
        lines.append(f"| {reason} | " + ", ".join(f"`{n}`" for n in names) + " |")
    lines += [
        "",
        "| numpy's Python-level function | status | how, or why not traced through |",
        "| --- | --- | --- |",
    ]
    for e in entries:
        traced = e.status == "traced through" and e.detail
        if traced or e.name in PYTHON_LEVEL:
            how = e.detail if traced else PYTHON_LEVEL[e.name]
            lines.append(f"| `{e.name}` | {e.status} | {how} |")
    return "\n".join(lines)


def problems(entries: list[Entry]) -> list[Entry]:
    return [e for e in entries if e.status == "problem"]


def readme_section(table: str) -> str:
    """What goes between the markers."""
    return f"{START}\n{table}\n{END}"


def replace_section(text: str, table: str) -> str:
    """``text`` (the README) with the table between the markers replaced by ``table``."""
    start, end = text.index(START), text.index(END) + len(END)
    return text[:start] + readme_section(table) + text[end:]


def readme_table(path: Path) -> str:
    """The table currently in the README at ``path`` (between the markers)."""
    text = path.read_text()
    return text[text.index(START) + len(START) : text.index(END)].strip("\n")


def default_readme() -> Path:
    return Path(__file__).resolve().parents[2] / "README.md"


# -- SciPy ------------------------------------------------------------------------------

SCIPY_START = "<!-- scipy-coverage:start -->"
SCIPY_END = "<!-- scipy-coverage:end -->"
# SciPy's own Python code that runs on traced values, reaching ufuncs that have rules.
SCIPY_TRACED = {
    "special": {"zeta": "SciPy's `zeta(x, q)` calls the Hurwitz zeta ufunc, whose rule is in q"},
}


def scipy_available() -> bool:
    try:
        import scipy  # noqa: F401
    except ImportError:
        return False
    return True


def scipy_rows() -> list[tuple[str, str, str, str]]:
    """``(area, names, status, how)`` for the SciPy functions mutagrad differentiates."""
    from mutagrad.rules import (
        scipy_linalg,
        scipy_signal,
        scipy_special,
        scipy_stats,
    )

    def names(functions: Any) -> str:
        return ", ".join(f"`{n}`" for n in sorted(functions))

    rule = "rule"
    rows = [
        ("scipy.special (ufuncs)", names(scipy_special.UFUNCS), rule,
         "the ufunc's own value; vjps written with these ufuncs (any order); no derivative in "
         "an integer order, a float order refused; rules registered on first use"),
        ("scipy.special (ufuncs)", "`gammasgn`", "non-differentiable", "piecewise constant"),
        ("scipy.special", names(scipy_special.FUNCTIONS), rule,
         "SciPy's value; `logsumexp` with `b=`, `return_sign=`, axes, keepdims"),
    ]
    for area, table in SCIPY_TRACED.items():
        for name, how in table.items():
            rows.append((f"scipy.{area}", f"`{name}`", "traced through", how))
    for name, distribution in scipy_stats.DISTRIBUTIONS.items():
        rows.append((f"scipy.stats.{name}", names(distribution.functions), rule,
                     "SciPy's value; " + _STATS_HOW.get(name, "every argument")))
    rows += [
        ("scipy.signal", names(scipy_signal.FUNCTIONS), rule,
         "SciPy's value; modes full/same/valid; `convolve` also takes autograd's `axes=`, "
         "`dot_axes=`; 2-D forms with zero fill"),
        ("scipy.linalg", names(scipy_linalg.FUNCTIONS), rule,
         "SciPy's value; only the triangle SciPy reads gets a gradient; eigenvectors and "
         "singular vectors need distinct values"),
        ("scipy.integrate", "`odeint`, `solve_ivp`", rule,
         "SciPy's solve; the adjoint method, backward with the same solver, to second order "
         "(`odeint`: y0, t, args; `solve_ivp`: y0, args)"),
    ]
    return rows


_STATS_HOW = {
    "poisson": "in `mu`",
    "multivariate_normal": "in x, mean, cov (its lower triangle, as SciPy reads it)",
    "dirichlet": "in x and alpha",
}
for _name in ("t", "gamma", "beta", "chi2"):
    _STATS_HOW[_name] = "every argument (the distribution functions: not the shapes)"


def scipy_table() -> str:
    """The SciPy coverage table (SciPy must be installed)."""
    lines = ["| SciPy | functions | status | value and derivative |", "| --- | --- | --- | --- |"]
    lines += [f"| {area} | {names} | {status} | {how} |"
              for area, names, status, how in scipy_rows()]  # fmt: skip
    return "\n".join(lines)


def replace_scipy_section(text: str, table: str) -> str:
    start, end = text.index(SCIPY_START), text.index(SCIPY_END) + len(SCIPY_END)
    return text[:start] + f"{SCIPY_START}\n{table}\n{SCIPY_END}" + text[end:]


def readme_scipy_table(path: Path) -> str:
    text = path.read_text()
    return text[text.index(SCIPY_START) + len(SCIPY_START) : text.index(SCIPY_END)].strip("\n")


# -- the forward column: each rule's forward rule -----------------------------------------

FORWARD_START = "<!-- forward-coverage:start -->"
FORWARD_END = "<!-- forward-coverage:end -->"

#: How each kind of forward rule is made (mutagrad.core.jvps), in the table's order.
FORWARD_KINDS = {
    "elementwise": "derived from the vjps: the Jacobian is diagonal (ufuncs, and what "
    "broadcasts like them), so each vjp applied to the tangent is the jvp (on complex values, "
    "the vjps of 1 and 1j give both Wirtinger parts, a holomorphic function's or not)",
    "linear": "the rule applied to the tangents (the function is linear in them)",
    "multilinear": "the rule with one argument replaced by its tangent, summed",
    "gradient": "derived from the vjp: each output depends on one group of elements, so the "
    "jvp is the group sum of the gradient (the vjp of ones) times the tangent (on complex "
    "values, of both Wirtinger parts)",
    "hand": "a forward rule of its own (on complex values the vjp transposed, unless it is "
    "marked right for them: sum, mean, cumsum, cumprod, einsum, solve, inv)",
    "transposed": "derived from the vjp by transposition (mutagrad.transposition): the vjp is "
    "linear in its cotangent, so differentiating it once on a traced cotangent gives J t; at a "
    "forward level alone (jvp, jacfwd, hessian), refused by name under a level around it",
    "none": "none yet: forward mode refuses it by name (MissingForwardRuleError); "
    "hessian and hvp use reverse over reverse there",
}


def _rule_modules() -> list[Any]:
    import importlib
    import pkgutil

    import mutagrad.rules

    names = [f"mutagrad.rules.{m.name}" for m in pkgutil.iter_modules(mutagrad.rules.__path__)]
    modules = []
    for name in [*names, "mutagrad.core.regions"]:
        try:
            modules.append(importlib.import_module(name))
        except ImportError:  # SciPy's, without SciPy
            continue
    return modules


def _rules_in(value: Any) -> list[Any]:
    """The VjpRules a module-level value of a rule module holds."""
    from mutagrad.core.engine import VjpRule
    from mutagrad.rules.ufunc_methods import ReduceMethod
    from mutagrad.rules.ufuncs import MultipleOutputs

    if type(value) is VjpRule:
        return [value]
    if isinstance(value, dict):
        return [r for v in value.values() for r in _rules_in(v)]
    if isinstance(value, ReduceMethod):
        return [value.plain, value.fold]
    if isinstance(value, MultipleOutputs):
        return [r for r in value.rules if r is not None]
    return []


def forward_rules() -> dict[str, list[str]]:
    """Each kind of forward rule, with the names of mutagrad's rules that have it.

    The rules are those the rule modules define at import (module-level rules
    and tables of them, the ufuncs' rules, and one rule of each family made on
    first use: einsum, concatenate, stack, the order statistics): what any
    session has, whatever ran before.
    """
    from mutagrad.core.jvps import kind_of
    from mutagrad.rules import einsum, shape

    rules = [einsum.einsum_rule(2), shape._concatenate_rule(2), shape._stack_rule(2)]
    for module in _rule_modules():
        for value in vars(module).values():
            if value is not UFUNC_RULES:  # (its derived entries depend on what ran: below)
                rules += _rules_in(value)
    for key, rule in UFUNC_RULES.items():
        if isinstance(key, np.ufunc) or (isinstance(key, tuple) and key[0] in (
            np.add, np.multiply, np.maximum, np.minimum) and key[1] == "reduce"):
            rules += _rules_in(rule)
    found: dict[str, set[str]] = {kind: set() for kind in FORWARD_KINDS}
    for rule in rules:
        if rule.trusted:  # (a user's defvjp rule is not mutagrad's)
            found[kind_of(rule.jvp) or "none"].add(rule.name)
    # A name with a forward rule somewhere is not listed as missing one too (np.svd's
    # factors, a reduce by its closed form and by the fold).
    covered = set().union(*(names for kind, names in found.items() if kind != "none"))
    found["none"] -= covered
    return {kind: sorted(names) for kind, names in found.items()}


def forward_table() -> str:
    """The forward column: how many rules have each kind of forward rule, and which."""
    rules = forward_rules()
    lines = ["| forward rule | how it is made | rules |", "| --- | --- | --- |"]
    for kind, how in FORWARD_KINDS.items():
        if not rules[kind]:
            continue  # (no rule left without a forward rule: no row for none)
        names = ", ".join(f"`{n}`" for n in rules[kind])
        lines.append(f"| {kind} ({len(rules[kind])}) | {how} | {names} |")
    return "\n".join(lines)


def replace_forward_section(text: str, table: str) -> str:
    start, end = text.index(FORWARD_START), text.index(FORWARD_END) + len(FORWARD_END)
    return text[:start] + f"{FORWARD_START}\n{table}\n{FORWARD_END}" + text[end:]


def readme_forward_table(path: Path) -> str:
    text = path.read_text()
    return text[text.index(FORWARD_START) + len(FORWARD_START) : text.index(FORWARD_END)].strip(
        "\n"
    )


def command(args: Any) -> int:
    """``python -m mutagrad coverage [--write] [--readme PATH]``."""
    entries = classify()
    table = markdown_table(entries)
    print(table)
    scipy = scipy_table() if scipy_available() else None
    if scipy is not None:
        print("\n" + scipy)
    forward = forward_table()
    print("\n" + forward)
    found = problems(entries)
    for e in found:
        print(f"problem: np.{e.name}: {e.detail}", file=sys.stderr)
    if args.write and not found:
        path = Path(args.readme)
        text = replace_section(path.read_text(), table)
        if scipy is not None and SCIPY_START in text:
            text = replace_scipy_section(text, scipy)
        if FORWARD_START in text:
            text = replace_forward_section(text, forward)
        path.write_text(text)
        print(f"\nwrote the tables into {path}")
    return 1 if found else 0


def add_command(commands: Any) -> None:
    """Register the ``coverage`` subcommand on the command line's subparsers."""
    parser = commands.add_parser(
        "coverage",
        help="print the table of numpy functions mutagrad differentiates",
        description="Classify commonly used numpy functions as supported (a rule), traced "
        "through (numpy's own Python code runs on traced arrays, checked against finite "
        "differences), non-differentiable or refused, and print a markdown table.",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help="also put the table into the README, between the coverage markers",
    )
    parser.add_argument(
        "--readme",
        default=str(default_readme()),
        metavar="PATH",
        help="the README to write (default: the repository's README.md)",
    )
    parser.set_defaults(run=command)
