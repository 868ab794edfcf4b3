"""A SciPy function without a rule is refused naming the caller's line, not SciPy's internals."""

from __future__ import annotations

import numpy as np
import pytest

import mutagrad

scipy_stats = pytest.importorskip("scipy.stats")
import scipy.special  # noqa: E402

X = np.array([0.5, 1.0])


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda x: scipy_stats.expon.logpdf(x), "scipy_stats.expon.logpdf"),
        (lambda x: scipy.special.logsumexp(x), "scipy.special.logsumexp"),
        (lambda x: scipy.special.struve(1.0, x), "scipy.special.struve"),
    ],
)
def test_the_error_names_the_callers_line_and_a_rule(call, name):
    with pytest.raises(mutagrad.MutagradError) as raised:
        mutagrad.grad(lambda x: np.sum(call(x)))(X)
    message = str(raised.value)
    assert f"{__file__}:" in message, message
    assert "site-packages" not in message.split("(mutagrad removed")[0], message
    assert name in message and "rrule" in message, message
