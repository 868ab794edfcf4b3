"""The peer engines: numpy rebinding, choosing engines, and each peer's known behaviour.

The rebinding and the engine choice are tested without any peer installed.
Each peer's outcomes are checked on a few programs whose behaviour on that
peer is known (a refusal, a value that silently differs from numpy's, a
wrong gradient, a right answer); those tests skip when the peer is absent.
A last test runs the command line with every peer's import blocked, as on a
machine without the ``peers`` extra.
"""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from mutagrad.report import (
    MUTAGRAD,
    PEERS,
    EngineChoiceError,
    Outcome,
    Program,
    default_engines,
    parse_engines,
    render_html,
    render_markdown,
    render_text,
    run_report,
)
from mutagrad.report.peers import NumpyRebinding
from mutagrad.report.results import results_document
from mutagrad.report.summary import REFUSAL_MESSAGE_LENGTH, refusal_kind

POINT = np.array([0.3, -1.2, 0.8, 2.0])
SMALL_CORPUS = Path(__file__).with_name("small_corpus.py")


def _doubled_sum(x):
    return np.sum(x) * 2


def uses_a_helper(x):
    return _doubled_sum(x) + np.sum(x)


def test_rebinding_replaces_numpy_in_the_function_and_its_module_helpers():
    fake = types.ModuleType("fake_numpy")
    fake.sum = lambda x: "fake sum"
    rebound = NumpyRebinding(fake).rebind(uses_a_helper)
    assert rebound(POINT) == "fake sum" * 3  # the helper (fake sum * 2) used the fake too
    assert uses_a_helper(POINT) == pytest.approx(3 * np.sum(POINT))  # the original is untouched
    assert uses_a_helper.__globals__["np"] is np


def test_rebinding_reuses_one_namespace_per_module_and_leaves_other_callables():
    rebinding = NumpyRebinding(types.ModuleType("fake_numpy"))
    first, second = rebinding.rebind(uses_a_helper), rebinding.rebind(_doubled_sum)
    assert first.__globals__ is second.__globals__
    assert rebinding.rebind(abs) is abs


def _with_availability(monkeypatch, installed: set[str]) -> None:
    for name, peer in PEERS.items():
        monkeypatch.setattr(peer, "available", lambda name=name: name in installed)


def test_default_engines_are_mutagrad_and_the_installed_peers(monkeypatch):
    _with_availability(monkeypatch, {"mygrad"})
    assert default_engines() == (MUTAGRAD, "mygrad")
    _with_availability(monkeypatch, set())
    assert default_engines() == (MUTAGRAD,)


def test_parse_engines_checks_names_installation_and_mutagrad(monkeypatch):
    _with_availability(monkeypatch, {"jax", "autograd"})
    assert parse_engines("autograd, mutagrad,jax") == (MUTAGRAD, "autograd", "jax")
    assert parse_engines("mutagrad") == (MUTAGRAD,)
    with pytest.raises(EngineChoiceError, match="unknown engine torch"):
        parse_engines("mutagrad,torch")
    with pytest.raises(EngineChoiceError, match="must include it"):
        parse_engines("jax")
    with pytest.raises(EngineChoiceError, match=r"mygrad not installed: pip install"):
        parse_engines("mutagrad,mygrad")


# ---------------------------------------------------------------------------
# Programs with known behaviour on the peers


def fill_buffer(x):
    """y[i] = sin(x[i]) * x[i] into np.empty_like(x)"""
    y = np.empty_like(x)
    for i in range(len(x)):
        y[i] = np.sin(x[i]) * x[i]
    return np.sum(y)


def scale_through_a_view(x):
    """v = y[1:3]; v *= 2 must write into y (numpy); a rebinding engine leaves y alone"""
    y = x * 1.0
    v = y[1:3]
    v *= 2
    return np.sum(y**2)


def rewrite_argument(x):
    """y = sin(x); x[0] = x[0]; sum(y): the write leaves every value as it was"""
    y = np.sin(x)
    x[0] = x[0]
    return np.sum(y)


def double_argument(x):
    """x[:] = 2 * x; sum(x): the seeds' f!"""
    x[:] = 2 * x
    return np.sum(x)


def clear_argument(x):
    """y = x * x; x.fill(0); sum(y)"""
    y = x * x
    x.fill(0)
    return np.sum(y)


def pure(x, scale):
    """sum(tanh(x) * scale) at a Python float scale"""
    return np.sum(np.tanh(x) * scale)


def _program(function, args=(POINT,), mutates=True) -> Program:
    return Program(
        name=function.__name__,
        category="test",
        description=function.__doc__,
        function=function,
        args=args,
        mutates=mutates,
    )


PROGRAMS = [
    _program(fill_buffer),
    _program(scale_through_a_view),
    _program(rewrite_argument),
    _program(double_argument),
    _program(clear_argument),
    _program(pure, args=(POINT, 1.5), mutates=False),
]


def _run(peer: str):
    pytest.importorskip(PEERS[peer].module)
    return run_report(
        PROGRAMS, engines=(MUTAGRAD, peer), repeats=1, sample_seconds=1e-4, measure_memory=False
    )


def _outcomes(report, peer: str) -> dict[str, Outcome]:
    return {p.name: p.mode(peer).outcome for p in report.programs}


@pytest.fixture(scope="module")
def jax_report():
    return _run("jax")


def test_jax_refuses_item_assignment_and_silently_rebinds_augmented_views(jax_report):
    assert _outcomes(jax_report, "jax") == {
        "fill_buffer": Outcome.REFUSED,
        "scale_through_a_view": Outcome.VALUE_DIFFERS,
        "rewrite_argument": Outcome.REFUSED,
        "double_argument": Outcome.REFUSED,
        "clear_argument": Outcome.REFUSED,
        "pure": Outcome.RIGHT,
    }
    refusal = jax_report.result("fill_buffer", "jax")
    assert refusal.error_type == "TypeError" and "immutable" in refusal.detail
    differs = jax_report.result("scale_through_a_view", "jax")
    assert differs.value_matches is False and differs.cell == "WRONG value"
    assert differs.seconds > 0  # a call that returned is timed, right or not
    right = jax_report.result("pure", "jax")
    assert right.seconds > 0 and jax_report.program("pure").overhead("jax") > 0


def test_jax_results_carry_its_versions_into_every_output(jax_report):
    versions = PEERS["jax"].versions()
    assert versions["jax"] and versions["jaxlib"]
    assert jax_report.environment["jax"] == versions["jax"]
    assert jax_report.environment["jaxlib"] == versions["jaxlib"]
    document = results_document(jax_report)
    assert document["settings"]["engines"] == ["mutagrad", "jax"]
    counts = document["summary"]["systems"]["jax"]
    assert (counts["right"], counts["refused"], counts["value_differs"]) == (1, 4, 1)
    assert counts["label"] == f"JAX {versions['jax']}"
    entry = document["programs"][1]["peers"]["jax"]
    assert entry["engine"] == "jax" and entry["outcome"] == "value differs"
    sentence = f"JAX {versions['jax']}: 1 right, 4 refused, 1 silently wrong"
    assert sentence in render_text(jax_report)
    assert sentence in render_markdown(jax_report)
    page = render_html(jax_report, plots=None)
    assert sentence in page and "<th>JAX</th>" in page
    assert "How the peers refuse" in page and "immutable" in page
    # mutagrad's exit status ignores what the peers do.
    assert jax_report.unexpected_failures == ()


def test_autograd_refuses_item_assignment_and_silently_rebinds_augmented_views():
    report = _run("autograd")
    assert _outcomes(report, "autograd") == {
        "fill_buffer": Outcome.REFUSED,
        "scale_through_a_view": Outcome.VALUE_DIFFERS,
        "rewrite_argument": Outcome.REFUSED,
        "double_argument": Outcome.REFUSED,
        "clear_argument": Outcome.REFUSED,
        "pure": Outcome.RIGHT,
    }
    refusal = report.result("rewrite_argument", "autograd")
    assert refusal.error_type == "TypeError"
    assert "does not support item assignment" in refusal.detail
    assert report.environment["autograd"] == PEERS["autograd"].version


def test_mygrad_runs_numpy_unchanged_and_can_return_a_wrong_gradient():
    report = _run("mygrad")
    assert _outcomes(report, "mygrad") == {
        "fill_buffer": Outcome.RIGHT,
        "scale_through_a_view": Outcome.RIGHT,
        "rewrite_argument": Outcome.WRONG,
        "double_argument": Outcome.WRONG,
        "clear_argument": Outcome.REFUSED,
        "pure": Outcome.RIGHT,
    }
    # After a write into the argument tensor, its .grad is None (the old value's graph is cut)
    # or the gradient with respect to the new value: 1 instead of 2 for x[:] = 2 * x.
    cut = report.result("rewrite_argument", "mygrad")
    assert cut.value_matches is True and cut.gradient_missing
    rebased = report.result("double_argument", "mygrad")
    assert not rebased.gradient_missing and rebased.max_abs_difference == pytest.approx(1.0)
    refusal = report.result("clear_argument", "mygrad")
    assert refusal.error_type == "AttributeError" and "fill" in refusal.detail
    assert report.environment["mygrad"] == PEERS["mygrad"].version
    assert "2 with a wrong gradient, 1 of them None" in render_text(report)


BLOCK_PEERS = (
    "import sys\n"
    "for name in ('jax', 'autograd', 'mygrad'):\n"
    "    sys.modules[name] = None  # import fails, as without the extra\n"
    "from mutagrad.__main__ import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_without_the_peers_the_report_is_mutagrads_and_says_how_to_add_them(tmp_path):
    command = [sys.executable, "-c", BLOCK_PEERS, "report", "--corpus", str(SMALL_CORPUS),
               "--fuzz", "0"]  # fmt: skip
    done = subprocess.run(
        [*command, "--out", str(tmp_path), "--no-timing"],  # what is printed is the point
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "To run the same programs on JAX, autograd and MyGrad: pip install" in done.stdout
    assert "jax" not in done.stdout.split("\n\n")[1].splitlines()[0]  # no peer columns
    assert 'id="no-peers"' in (tmp_path / "index.html").read_text()
    asked = subprocess.run(
        [*command, "--out", "", "--engines", "mutagrad,jax"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert asked.returncode == 2
    assert "jax not installed: pip install jax jaxlib autograd mygrad" in asked.stderr


def test_refusals_are_grouped_without_the_data_their_messages_quote():
    first = "operand type(s) all returned NotImplemented from __array_ufunc__(<ufunc 'add'>, "
    kinds = {
        refusal_kind(first + "'__call__', array([0., 1.]))"),
        refusal_kind(first + "'__call__', array([[2.]]))"),
    }
    assert kinds == {first + "'__call__'"}
    assert refusal_kind("x" * 500) == "x" * REFUSAL_MESSAGE_LENGTH
