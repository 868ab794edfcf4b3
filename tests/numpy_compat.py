"""Where numpy versions differ, what the installed numpy does: found by asking it, never by
its version string, so that each test follows the numpy it runs on.

* ``EIG_IS_COMPLEX``: numpy 2.5's ``np.linalg.eig`` returns complex eigenvalues and
  eigenvectors for every matrix, real ones included. The tests written for real results
  (they return sums of them, which are then complex) are skipped there with
  :data:`needs_real_eig`; the complex results are tested in tests/rules/test_complex.py.
* ``CROSS_TAKES_2D``: ``np.cross`` of 2-component vectors, deprecated in numpy 2.0,
  refused from 2.5.
* ``UNIQUE_TAKES_SORTED``: ``np.unique(..., sorted=)``, from numpy 2.3.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

EIG_IS_COMPLEX = np.linalg.eig(np.diag([1.0, 2.0])).eigenvalues.dtype.kind == "c"

needs_real_eig = pytest.mark.skipif(
    EIG_IS_COMPLEX,
    reason="this numpy's np.linalg.eig returns complex values for every matrix (numpy 2.5): "
    "this test returns sums of real eigen-results; tests/rules/test_complex.py covers eig there",
)


def _cross_takes_2d() -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            np.cross(np.ones(2), np.ones(2))
        except ValueError:
            return False
    return True


CROSS_TAKES_2D = _cross_takes_2d()
UNIQUE_TAKES_SORTED = "sorted" in inspect.signature(np.unique).parameters
