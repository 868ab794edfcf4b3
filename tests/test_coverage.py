"""The numpy coverage table (mutagrad/coverage.py and ``python -m mutagrad coverage``).

The README's table must be what the registries give today; every listed
function is classified without a problem (a function that is neither
registered nor declared is really tried on a traced array, and a gradient
that disagrees with finite differences is a problem); the list is every
public callable numpy and jax.numpy share (checked where jax is installed).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mutagrad import coverage
from mutagrad.__main__ import main
from mutagrad.core.registry import FUNCTION_RULES
from numpy_compat import needs_real_eig

# The checkout's README (coverage.default_readme() finds it beside an editable install only;
# the suite also runs against mutagrad installed from its wheel).
README = Path(__file__).parents[1] / "README.md"


@pytest.fixture(scope="module")
def entries():
    return coverage.classify()


@needs_real_eig  # eig, eigvals, poly and roots are refused where eig is complex
def test_readme_table_is_up_to_date(entries):
    want = coverage.markdown_table(entries)
    got = coverage.readme_table(README)
    assert got == want, (
        "the numpy coverage table in README.md is out of date with the rule registry: "
        "run python -m mutagrad coverage --write"
    )


def test_every_function_is_classified_without_a_problem(entries):
    problems = [f"np.{e.name}: {e.detail}" for e in coverage.problems(entries)]
    assert not problems, "\n".join(problems)


def test_the_list_names_numpy_functions_once():
    names = [name for names in coverage.AREAS.values() for name in names]
    assert len(names) == len(set(names)), "a function is listed twice"
    for name in names:
        assert callable(coverage.numpy_function(name)), name
    unused = set(coverage.SAMPLES) - set(names)
    assert not unused, f"samples for functions not in the table: {sorted(unused)}"
    assert set(coverage.DECLARED) <= set(names)
    assert {status for status, _ in coverage.DECLARED.values()} <= set(coverage.STATUSES)
    assert coverage.NUMPY_ONLY.issubset(names)


def test_the_list_is_every_callable_numpy_and_jax_numpy_share():
    """(jax is not a dependency: the list was computed once; this checks it where jax is.)"""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    if (np.__version__, jax.__version__) != (coverage.NUMPY_VERSION, coverage.JAX_VERSION):
        pytest.skip("the list was computed with other versions of numpy and jax")
    names = {name for names in coverage.AREAS.values() for name in names}
    assert names - coverage.NUMPY_ONLY == coverage.shared_names(np, jnp)


def test_statuses(entries):
    status = {e.name: e.status for e in entries}
    assert status["linalg.solve"] == "supported"
    assert status["einsum"] == "supported"
    assert status["argmax"] == "non-differentiable"
    assert status["vstack"] == "traced through"  # numpy's Python code, run on traced arrays
    assert status["linalg.eig"] == "supported"
    assert status["zeros"] == "non-differentiable"  # no array values in
    reason = {e.name: e.detail for e in entries if e.status == "refused"}
    assert reason["kaiser"] == coverage.CONVERTS  # numpy's code converts its input
    # np.unique has a rule (numpy's code converts in C); the set functions' code reaches it
    for name in ("unique", "unique_values", "unique_counts", "unique_inverse", "unique_all"):
        assert status[name] == "supported"
    for name in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
        assert status[name] == "traced through"
    # numpy's own code, run on traced arrays by mutagrad.rules.numpy_source
    assert status["gradient"] == status["cov"] == "traced through"
    detail = {e.name: e.detail for e in entries}
    # numpy's in-place writes inside them are recorded (corrcoef's too, in poison mode)
    assert "in place" in detail["cov"] and "in place" in detail["corrcoef"]
    assert status["fft.hfft"] == "supported" and reason["sort_complex"] == coverage.COMPLEX
    assert reason["float64"] == coverage.SCALAR_TYPE
    assert coverage.counts(entries)["supported"] > 200


def test_a_function_without_a_sample_is_a_problem(monkeypatch):
    monkeypatch.delitem(FUNCTION_RULES, np.kron)
    status, detail = coverage.try_sample("kron")
    assert status == "refused"  # numpy's kron converts its input: mutagrad refuses
    monkeypatch.delitem(coverage.SAMPLES, "kron")
    status, detail = coverage.try_sample("kron")
    assert status == "problem" and "no sample" in detail


def test_a_wrong_gradient_is_a_problem(monkeypatch):
    """A traced-through function whose gradient disagrees with finite differences."""
    import mutagrad

    @mutagrad.primitive
    def doubled(x):
        return 2.0 * x

    mutagrad.defvjp(doubled, lambda g, ans, x: 3.0 * g, reads=((),))  # wrong: should be 2
    monkeypatch.setitem(coverage.SAMPLES, "vstack", (coverage.VECTOR, doubled))
    status, detail = coverage.try_sample("vstack")
    assert status == "problem" and "wrong gradient" in detail


def test_command_prints_the_table_and_writes_the_readme(tmp_path, capsys, entries):
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n{coverage.START}\nold\n{coverage.END}\nafter\n")
    assert main(["coverage"]) == 0
    table = coverage.markdown_table(entries)
    assert table in capsys.readouterr().out
    assert "old" in readme.read_text()  # not written without --write
    assert main(["coverage", "--write", "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert text == f"# x\n\nbefore\n{coverage.START}\n{table}\n{coverage.END}\nafter\n"
    assert coverage.readme_table(readme) == table


def test_readme_scipy_table_is_up_to_date():
    pytest.importorskip("scipy")
    assert coverage.readme_scipy_table(README) == coverage.scipy_table(), (
        "the SciPy coverage table in README.md is out of date: run python -m mutagrad coverage "
        "--write"
    )


def test_readme_forward_table_is_up_to_date():
    if not coverage.scipy_available():
        pytest.skip("the table lists SciPy's rules too")
    assert coverage.readme_forward_table(README) == coverage.forward_table(), (
        "the forward-rule table in README.md is out of date: run python -m mutagrad coverage "
        "--write"
    )


def test_every_forward_rule_kind_is_explained():
    from mutagrad.core.jvps import kind_of

    assert set(coverage.forward_rules()) == set(coverage.FORWARD_KINDS)
    assert kind_of(None) is None
