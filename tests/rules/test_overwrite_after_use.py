"""Every rule module stays safe when the arrays it saved are overwritten after use.

The cases of test_second_order.py (which cover every rule module) are run
with their arguments overwritten in place right after the loss is computed,
before the backward pass reads what the rules saved. Whatever a rule saved
must then be either still right or poisoned: poison mode gives the same
gradient as without the writes or raises PoisonedCaptureError, and snapshot
mode always gives the same gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_second_order import CASES, EIG_CASE

import mutagrad
from numpy_compat import EIG_IS_COMPLEX, needs_real_eig


def overwritten_after_use(function):
    def overwritten(*args):
        copies = [a * 1.0 for a in args]  # traced arrays of the call's own
        loss = function(*copies)
        for copy in copies:
            copy[...] = 7.0  # after every rule has run, before any pullback
        return loss

    return overwritten


@pytest.mark.parametrize(
    "module, name, function, args", CASES, ids=[f"{m}: {n}" for m, n, *_ in CASES]
)
def test_overwriting_after_use_raises_or_changes_nothing(module, name, function, args):
    if name == EIG_CASE and EIG_IS_COMPLEX:
        pytest.skip(needs_real_eig.kwargs["reason"])
    expected = mutagrad.gradient(function, *args)
    try:
        poison = mutagrad.gradient(overwritten_after_use(function), *args)
    except mutagrad.PoisonedCaptureError:
        pass
    else:
        for got, want in zip(poison, expected):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    snapshot = mutagrad.gradient(overwritten_after_use(function), *args, mode="snapshot")
    for got, want in zip(snapshot, expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
