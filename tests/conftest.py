"""Shared test configuration: hypothesis profiles and a guard against leaked global state.

Pick a hypothesis profile with the HYPOTHESIS_PROFILE environment variable:
``ci`` (default; bounded and derandomized), ``dev`` (more examples, random),
``thorough`` (thousands of examples, for a local run before a release).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from mutagrad.core.engine import STATE
from mutagrad.core.modes import MODE

settings.register_profile(
    "ci",
    max_examples=25,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "thorough",
    max_examples=5000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def no_leaked_state():
    """Fail any test that leaves a trace active or changes the default mode."""
    mode_before = MODE.get()
    yield
    assert STATE.get() is None, "a test left a gradient trace active"
    assert MODE.get() == mode_before, "a test changed the default mutation mode"
