"""mutagrad.explain: the recorded tape, with sites, versions, writes and poisonings."""

from __future__ import annotations

import io

import numpy as np

import mutagrad


def fill_after_capture(x):
    y = x * x
    x.fill(0)
    return np.sum(y)


def test_explain_names_the_capture_the_write_and_the_outcome():
    out = io.StringIO()
    explanation = mutagrad.explain(fill_after_capture, np.ones(3), file=out)
    text = out.getvalue()
    assert text == str(explanation) + "\n"
    names = [op.name for op in explanation.operations]
    assert names == ["input (argument 0)", "multiply", "write: fill", "sum"]
    multiply = explanation.operations[1]
    assert multiply.source == "y = x * x"
    assert any("saves arg0" in d and "version 0" in d for d in multiply.details)
    assert any("POISONED by fill" in d and "test_explain.py" in d for d in multiply.details)
    assert "version 0 -> 1" in explanation.operations[2].details[0]
    assert explanation.outcome.startswith("raises PoisonedCaptureError")
    assert isinstance(explanation.error, mutagrad.PoisonedCaptureError)
    assert explanation.gradient is None


def test_explain_in_snapshot_mode_shows_the_copy_and_the_gradient():
    explanation = mutagrad.explain(fill_after_capture, np.ones(3), mode="snapshot", file=None)
    assert explanation.outcome == "gradient computed"
    np.testing.assert_array_equal(explanation.gradient[0], [2.0, 2.0, 2.0])
    details = " ".join(" ".join(op.details) for op in explanation.operations)
    assert "snapshot: 24 bytes copied before fill" in details


def test_explain_shows_view_reads_and_regions():
    def f(x):
        y = x * 1.0
        s = np.sum(np.sin(y[1:]))
        y[0] = 2.0
        return s + np.sum(y)

    explanation = mutagrad.explain(f, np.arange(3.0), file=None)
    details = [d for op in explanation.operations for d in op.details]
    assert any(d.startswith("reads a1 [1:]") for d in details)
    assert any(d.startswith("writes a1 [0]: version 0 -> 1") for d in details)
    assert explanation.outcome == "gradient computed"


def test_explain_reports_a_strict_mode_refusal():
    explanation = mutagrad.explain(fill_after_capture, np.ones(2), mode="strict", file=None)
    assert explanation.outcome.startswith("raises MutationError: Mutating arrays is not supported")
