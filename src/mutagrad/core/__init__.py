"""The engine: the tape, nodes, captures, versions, the rule tables and the backward sweep.

Layered bottom up, each module importing only those before it::

    sites, memory,         where code is; where a view sits in its base, layouts;
    tangents               cotangents (zeros, sparse)
    engine                 tape, traces, nodes, captures, rules, the backward sweep,
                           and the traced type as the engine knows it (registered
                           by mutagrad.traced)
    registry               the rule tables, keyed by the numpy callable
    record                 the one recording path: every Node made and pushed,
                           what a pullback may read saved (one save policy)
    modes                  what a write does in each mode (a policy object)
    regions                the view-read and write rules, and their linear maps
    messages               the texts of the common errors
    trees                  nested argument structures (pytrees)

Nothing here knows a numpy function's derivative (those are in mutagrad.rules)
or the traced array type (that is mutagrad.traced, the room above).
"""
