"""Shared test configuration: hypothesis profiles and a guard against leaked global state.

Pick a hypothesis profile with the HYPOTHESIS_PROFILE environment variable:
``ci`` (default; bounded and derandomized), ``dev`` (more examples, random),
``thorough`` (thousands of examples, for a local run before a release); they
are mutagrad.testing's shipped profiles (mutagrad.testing.profiles).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from mutagrad.core.engine import STATE
from mutagrad.core.modes import MODE
from mutagrad.testing import register_profiles

register_profiles()  # mutagrad.testing.profiles: the ones users get (its plugin registers them too)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def no_leaked_state():
    """Fail any test that leaves a trace active or changes the default mode."""
    mode_before = MODE.get()
    yield
    assert STATE.get() is None, "a test left a gradient trace active"
    assert MODE.get() == mode_before, "a test changed the default mutation mode"
