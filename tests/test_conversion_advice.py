"""The advice of a TracerConversionError where mutagrad cannot read the user's line.

A conversion is explained from the user's expression at its site
(``np.asarray(x)``, ``math.sin(x)``, ``buf[i] = x``); the tests of each
construct are in tests/test_errors.py. Here: without a site (no frame of the
user's was found) the message still names what happened and a fix that
works, instead of failing while building it.
"""

from __future__ import annotations

import pytest

from mutagrad.diagnostics.conversions import describe_conversion


@pytest.mark.parametrize(
    "operation", ["np.put into a raw ndarray", "float()", "np.asarray / __array__"]
)
def test_a_conversion_without_a_site_is_still_explained(operation):
    message = describe_conversion(None, operation)
    assert "<unknown location>" in message
    assert "would drop the value's gradient" in message
    assert "Fix" in message


def test_a_raw_write_without_a_site_gets_the_allocation_fix():
    message = describe_conversion(None, "np.put into a raw ndarray")
    assert "np.zeros(n, like=x)" in message
    assert "mutagrad.ignore_derivatives(value)" in message
