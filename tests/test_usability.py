"""What a new user meets besides the transforms and the errors' locations.

``explain``'s filters for long tapes, messages that quote code without its
comments, ``mutagrad --version``, the hint when hypothesis is missing, and
``is_traced``.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mutagrad
from mutagrad.__main__ import main


def running_table(x):
    table = np.zeros_like(x)  # filled in place, row after row
    for i in range(1, len(x)):
        table[i] = table[i - 1] + x[i] * x[i - 1]
    saved = x * x  # multiply saves x
    x[0] = 0.0  # poisons it
    return np.sum(table) + np.sum(saved)


def test_explain_keeps_poisoned_operations_writes_or_lines_on_request():
    x = np.linspace(0.5, 1.5, 6)
    everything = mutagrad.explain(running_table, x, file=None)
    poisoned = mutagrad.explain(running_table, x, file=None, poisoned=True)
    assert [op.name for op in poisoned.operations] == ["multiply"]
    assert poisoned.operations[0].source == "saved = x * x"
    assert str(poisoned).startswith(f"mutagrad.explain: 1 of {len(everything.operations)}")
    writes = everything.only(writes=True)
    assert len(writes.operations) == 6  # five rows of the table and x[0]
    assert all(op.name.startswith("write") for op in writes.operations)
    loop_line = running_table.__code__.co_firstlineno + 3
    in_loop = everything.only(lines=range(loop_line, loop_line + 1))
    assert in_loop.operations and all(op.line == loop_line for op in in_loop.operations)
    assert everything.only(writes=True, lines=[loop_line]).operations == tuple(
        op for op in writes.operations if op.line == loop_line
    )


def test_explain_passes_keyword_arguments_to_f():
    explanation = mutagrad.explain(lambda x, scale=1.0: np.sum(x) * scale, np.ones(2),
                                   scale=3.0, file=None)  # fmt: skip
    np.testing.assert_array_equal(explanation.gradient[0], [3.0, 3.0])


def test_a_poison_error_quotes_code_without_its_comments_or_padding():
    def f(x):
        y = x * x        # multiply saves x for its pullback
        x.fill(0)        # poisons that capture
        return np.sum(y)

    with pytest.raises(mutagrad.PoisonedCaptureError) as raised:
        mutagrad.gradient(f, np.ones(3))
    message = str(raised.value)
    assert "`y = x * x` needs the old value; `x.fill(0)` replaced it." in message
    # The rewritten line keeps its comment: it replaces the whole line.
    assert "becomes: `y = x.copy() * x.copy()        # multiply saves x" in message


def test_the_command_line_prints_the_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"mutagrad {mutagrad.__version__}"


def test_the_strategies_without_hypothesis_say_how_to_install_it():
    script = (
        "import sys\n"
        "sys.modules['hypothesis'] = None  # as if it were not installed\n"
        "import mutagrad.testing.strategies\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == 1
    assert "ModuleNotFoundError" in run.stderr
    assert "pip install -e '.[test]'" in run.stderr


def test_is_traced_tells_differentiated_values_from_constants():
    seen = {}

    def f(x, c):
        seen["argument"] = mutagrad.is_traced(x)
        seen["derived"] = mutagrad.is_traced(x * 2.0)
        seen["constant"] = mutagrad.is_traced(mutagrad.array(c))
        seen["detached"] = mutagrad.is_traced(mutagrad.ignore_derivatives(x))
        return np.sum(x)

    mutagrad.gradient(f, np.ones(2), "label")
    assert seen == {"argument": True, "derived": True, "constant": False, "detached": False}
    assert not mutagrad.is_traced(mutagrad.array([1.0]))  # outside any gradient call


def test_pytest_shows_a_failing_check_at_the_users_line_without_mutagrads_source(tmp_path):
    test_file = tmp_path / "test_mine.py"
    test_file.write_text(
        "import numpy as np\n"
        "import mutagrad\n"
        "from mutagrad.testing import check_gradient, check_rule\n"
        "\n"
        "@mutagrad.primitive\n"
        "def cube(x):\n"
        "    return x**3\n"
        "\n"
        "mutagrad.defvjp(cube, lambda g, ans, x: g * 4.5 * x**2, reads=((0,),))\n"
        "\n"
        "def test_rule():\n"
        "    check_rule(cube, np.array([1.0, 2.0]))\n"
        "\n"
        "def test_gradient():\n"
        "    check_gradient(lambda x: np.sum(cube(x)), np.array([1.0, 2.0]))\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert "2 failed" in run.stdout, run.stdout
    assert "check_rule(cube) found" in run.stdout and "gradient check failed" in run.stdout
    assert "rule_check.py" not in run.stdout and "gradient_check.py" not in run.stdout


def test_a_custom_rules_saved_value_is_named_at_the_users_line():
    @mutagrad.primitive
    def square(v):
        return v * v

    mutagrad.defvjp(square, lambda g, ans, v: 2.0 * g * v, reads=((0,),))

    def f(y):
        w = square(y)
        y[0] = 5.0
        return np.sum(w)

    with pytest.raises(mutagrad.PoisonedCaptureError) as raised:
        mutagrad.gradient(f, np.ones(3))
    message = str(raised.value)
    assert "custom.py" not in message
    assert "`w = square(y)` needs the old value" in message
    assert "becomes: `w = square(y.copy())`" in message
    (operation,) = mutagrad.explain(f, np.ones(3), poisoned=True, file=None).operations
    assert operation.source == "w = square(y)" and "test_usability.py" in operation.site


def test_np_full_of_a_traced_fill_value_names_fixes_that_work():
    import mutagrad.numpy as mnp

    def f(x):
        return np.sum(np.full((3,), x[0]))

    with pytest.raises(mutagrad.TracerConversionError) as error:
        mutagrad.gradient(f, np.ones(2))
    message = str(error.value)
    assert "mnp.full((3,), x[0])" in message and "like=x[0]" in message
    # both suggested fixes, as written, keep the gradient
    for fixed in (
        lambda x: np.sum(mnp.full((3,), x[0])),
        lambda x: np.sum(np.full((3,), x[0], like=x[0])),
    ):
        np.testing.assert_array_equal(mutagrad.gradient(fixed, np.ones(2))[0], [3.0, 0.0])
