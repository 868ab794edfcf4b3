"""Every numpy fact mutagrad knows: derivative rules, views, non-differentiable functions.

Rules are registered right beside their definitions, with the functions of
:mod:`mutagrad.core.registry` (``ufunc_rule``, ``implements``,
``implements_method``, ``nondifferentiable``). Importing this package imports
every rule module, which registers its rules into core's tables.

A vjp receives ``(g, ans, *args, **params)``: the output cotangent, the output
and the primal arguments. Arguments it did not declare in ``reads`` arrive as
:class:`~mutagrad.core.tangents.Meta` (shape and dtype only). Vjps are written
with numpy functions so the same code runs on raw arrays and, in a
higher-order sweep, on traced ones.
"""

from mutagrad.core.registry import (
    ANS,
    implements,
    nondifferentiable,
    ufunc_rule,
)
from mutagrad.rules import (  # noqa: F401  (importing a module registers its rules)
    creation,
    cumulative,
    einsum,
    factorizations,
    fft,
    first_use,
    inplace,
    library,
    linalg,
    nanfunctions,
    nondiff,
    numpy_source,
    rearrange,
    reductions,
    sets,
    shape,
    signals,
    statistics,
    ufunc_methods,
    ufuncs,
)

__all__ = ["ANS", "implements", "nondifferentiable", "ufunc_rule"]
