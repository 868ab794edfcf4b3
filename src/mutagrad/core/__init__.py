"""The engine: traced values, the tape, captures, the write path and the backward sweep.

Layered bottom up, each module importing only those before it::

    sites, memory,         where code is; where a view sits in its base, layouts;
    tangents               cotangents (zeros, sparse)
    engine                 tape, nodes, captures, rules, the backward sweep
    record                 the one recording path: every Node made and pushed,
                           what a pullback may read saved (one save policy)
    modes                  what a write does in each mode (a policy object)
    regions                the view-read and write rules, and their linear maps
    messages               the texts of the common errors
    wrapped                WrappedArray: the array type, its views, the operators'
                           fast path, and the method table the modules below fill
    dispatch               numpy's protocols past the fast path: a call to its
                           rule (apply), to numpy without a derivative, or traced
                           through numpy's own Python implementation
    indexing, mutation,    what the array's methods do (x[i], writes, the
    ndarray_methods        rarer ndarray methods), registered into the array's
                           method table

Nothing here knows a numpy function's derivative: those are in mutagrad.rules.
Importing this package registers the array's methods.
"""

from mutagrad.core import dispatch, indexing, mutation, ndarray_methods  # noqa: F401
