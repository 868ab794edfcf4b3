"""Diagnostics, one room: where the user's code is, what went wrong there, and how to fix it.

Every MutagradError names what happened, the user's ``file:line`` and a fix.
The pieces, bottom up (each module importing only those before it, and none
of the engine, which calls them)::

    sites        where code is: the user's frame (skipping mutagrad's machinery,
                 numpy's and SciPy's), lines, source text, the expression a site
                 records
    rewrites     the user's line with ``.copy()`` added where a saved value is
                 passed: the fix a poison error spells out
    conversions  what the user's code did when a traced value became a raw one
                 (``np.asarray(x)``, ``np.array([...])``, a raw buffer), in their
                 words, with the fix that suits it
    messages     the texts of the common errors, built where they are raised
    advice       a poison error: what was saved, what overwrote it, the fixes
    tracebacks   how an error leaves an entry point: at the user's line, without
                 mutagrad's frames

The exceptions themselves are :mod:`mutagrad.errors`.
"""
