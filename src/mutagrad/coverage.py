"""Which numpy functions mutagrad differentiates: the coverage table in the README.

``python -m mutagrad coverage`` prints it; ``--write`` puts it into README.md
between ``<!-- coverage:start -->`` and ``<!-- coverage:end -->``.

The functions are listed here explicitly (:data:`AREAS`: commonly used
functions of numpy's main namespace and of ``np.linalg``). Each is

* **supported** when it has a rule (``UFUNC_RULES`` or ``FUNCTION_RULES``);
* **non-differentiable** when declared so (``NONDIFFERENTIABLE``): it runs
  on traced arrays and its outputs carry no derivative;
* otherwise it is *tried*: a small call on a traced array (:data:`SAMPLES`)
  inside ``mutagrad.gradient``. It is **traced through** when numpy's own
  Python implementation runs on traced arrays and its gradient matches
  central finite differences, and **refused** when mutagrad raises
  ``MissingRuleError``, ``TracerConversionError`` or ``NotDifferentiableError``.

Anything else (a wrong gradient, another exception) is a bug, reported by
:func:`classify` as a problem and by the command as a failure.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from mutagrad.api import gradient
from mutagrad.core.wrapped import FUNCTION_RULES, NONDIFFERENTIABLE, UFUNC_RULES
from mutagrad.errors import MissingRuleError, NotDifferentiableError, TracerConversionError
from mutagrad.testing import check_gradient

START = "<!-- coverage:start -->"
END = "<!-- coverage:end -->"
STATUSES = ("supported", "traced through", "non-differentiable", "refused")

# The functions of the table, by area: names in numpy's namespace ("linalg.x" in np.linalg).
AREAS: dict[str, tuple[str, ...]] = {
    "elementwise": (
        "add", "subtract", "multiply", "divide", "power", "float_power", "negative", "positive",
        "absolute", "fabs", "sign", "sqrt", "cbrt", "square", "reciprocal", "exp", "exp2",
        "expm1", "log", "log2", "log10", "log1p", "logaddexp", "logaddexp2", "sin", "cos", "tan",
        "arcsin", "arccos", "arctan", "arctan2", "hypot", "sinh", "cosh", "tanh", "arcsinh",
        "arccosh", "arctanh", "deg2rad", "rad2deg", "degrees", "radians", "maximum", "minimum",
        "fmax", "fmin", "clip", "where", "floor", "ceil", "trunc", "rint", "round", "fix",
        "remainder", "fmod", "divmod", "modf", "frexp", "ldexp", "copysign", "heaviside", "sinc",
        "i0", "nan_to_num", "real", "imag", "conjugate", "angle", "signbit", "isnan", "isfinite",
        "isinf",
    ),
    "reductions": (
        "sum", "prod", "mean", "std", "var", "max", "min", "ptp", "average", "median",
        "percentile", "quantile", "nansum", "nanprod", "nanmean", "nanstd", "nanvar", "nanmax",
        "nanmin", "nanmedian", "nanpercentile", "nanquantile", "any", "all", "count_nonzero",
        "argmax", "argmin", "nanargmax", "nanargmin",
    ),
    "cumulative": (
        "cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "nancumsum", "nancumprod",
        "diff", "ediff1d", "gradient", "trapezoid",
    ),
    "products": (
        "dot", "vdot", "inner", "outer", "matmul", "vecdot", "matvec", "vecmat", "tensordot",
        "einsum", "kron", "cross", "trace",
    ),
    "np.linalg": (
        "linalg.solve", "linalg.inv", "linalg.det", "linalg.slogdet", "linalg.norm",
        "linalg.multi_dot", "linalg.vector_norm", "linalg.matrix_norm", "linalg.pinv",
        "linalg.cholesky", "linalg.qr", "linalg.eigh", "linalg.eigvalsh", "linalg.eig",
        "linalg.svd", "linalg.svdvals", "linalg.lstsq", "linalg.matrix_power", "linalg.cond",
        "linalg.matrix_rank",
    ),
    "shape": (
        "reshape", "ravel", "transpose", "matrix_transpose", "swapaxes", "moveaxis", "squeeze",
        "expand_dims", "broadcast_to", "broadcast_arrays", "atleast_1d", "atleast_2d",
        "atleast_3d", "concatenate", "stack", "vstack", "hstack", "dstack", "column_stack",
        "block", "split", "array_split", "unstack", "flip", "fliplr", "flipud", "rot90", "copy",
    ),
    "rearranging": (
        "roll", "tile", "repeat", "pad", "resize", "append", "insert", "delete", "diag",
        "diagflat", "diagonal", "tril", "triu",
    ),
    "indexing and sorting": (
        "take", "take_along_axis", "put_along_axis", "put", "place", "putmask", "choose",
        "compress", "extract", "select", "nonzero", "argwhere", "flatnonzero", "searchsorted",
        "sort", "argsort", "partition", "argpartition", "lexsort", "unique", "isin",
    ),
    "creation": (
        "zeros_like", "ones_like", "empty_like", "full_like", "copyto", "linspace", "logspace",
        "geomspace", "meshgrid",
    ),
    "other": (
        "convolve", "correlate", "interp", "polyval", "histogram", "bincount", "digitize",
        "isclose", "allclose", "array_equal",
    ),
}  # fmt: skip

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
}


def numpy_function(name: str) -> Any:
    """``"linalg.solve"`` -> ``np.linalg.solve``."""
    target: Any = np
    for part in name.split("."):
        target = getattr(target, part)
    return target


@attrs.frozen
class Entry:
    """One function's row of the table."""

    name: str
    area: str
    status: str  # one of STATUSES, or "problem"
    detail: str = ""  # for a problem: what went wrong


def _weights(shape: tuple[int, ...]) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    return (np.linspace(0.5, 1.5, n) * (-1.0) ** np.arange(n)).reshape(shape)


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
        try:
            gradient(loss, x.copy())
        except (MissingRuleError, TracerConversionError, NotDifferentiableError):
            return "refused", ""
        except Exception as error:  # any other error is reported, not raised
            return "problem", f"{type(error).__name__}: {str(error).splitlines()[0]}"
        try:
            check_gradient(loss, x.copy())
        except AssertionError as error:
            return "problem", "wrong gradient: " + str(error).splitlines()[1].strip()
    return "traced through", ""


def classify() -> list[Entry]:
    """Every function of :data:`AREAS` with its status, in table order."""
    entries = []
    for area, names in AREAS.items():
        for name in names:
            fn = numpy_function(name)
            if fn in UFUNC_RULES or fn in FUNCTION_RULES:
                status, detail = "supported", ""
            elif fn in NONDIFFERENTIABLE:
                status, detail = "non-differentiable", ""
            else:
                status, detail = try_sample(name)
            entries.append(Entry(name, area, status, detail))
    return entries


def counts(entries: list[Entry]) -> dict[str, int]:
    return {status: sum(e.status == status for e in entries) for status in STATUSES}


def markdown_table(entries: list[Entry]) -> str:
    """The table: one row per area, one column per status, and a row of totals."""
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


def command(args: Any) -> int:
    """``python -m mutagrad coverage [--write] [--readme PATH]``."""
    entries = classify()
    table = markdown_table(entries)
    print(table)
    found = problems(entries)
    for e in found:
        print(f"problem: np.{e.name}: {e.detail}", file=sys.stderr)
    if args.write and not found:
        path = Path(args.readme)
        path.write_text(replace_section(path.read_text(), table))
        print(f"\nwrote the table into {path}")
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
