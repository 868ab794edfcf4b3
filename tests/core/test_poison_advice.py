"""The fixes a PoisonedCaptureError offers keep what the program computes.

Each program is source text. The harness runs it in poison mode, reads the
fixes the error offers and applies each one mechanically: snapshot mode is
run as offered; a rewritten line replaces the line it names in the source,
which is then executed on plain ndarrays. The value must be the original
program's, bit for bit. Rewrites are applied until the gradient comes out,
and that gradient must be the original program's (finite differences).

The harness can fail: the fix the message used to offer (``y = y.copy()``
just before the write) changes the value of the README's views example, of
programs with a second name for the array and of programs that read a view
of it later; the tests below show it on each of them.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

import mutagrad
from mutagrad.testing import check_gradient, numerical_gradient

README = Path(__file__).resolve().parents[2] / "README.md"
REWRITE = re.compile(r"line (\d+): `(.*)`\n\s*becomes: `(.*)`")
WRITE_LINE = re.compile(r"making version \d+:\n\s*.+?:(\d+) \(in ")
_files = itertools.count()


def readme_function(first_line: str, containing: str) -> str:
    """The function in README.md that starts with ``first_line`` and contains ``containing``."""
    lines = README.read_text().splitlines()
    for start in (k for k, line in enumerate(lines) if line == first_line):
        end = next(k for k in range(start, len(lines)) if lines[k].lstrip().startswith("return"))
        function = "\n".join(lines[start : end + 1]) + "\n"
        if containing in function:
            return function
    raise LookupError(f"README.md has no function {first_line!r} containing {containing!r}")


# name -> (source defining f(x), x, whether the message can name the rewritten line)
PROGRAMS: dict[str, tuple[str, list[float], bool]] = {
    "README views example": (
        readme_function("def f(x):", "v *= 10"),
        [1.0, 2.0, 3.0, 4.0],
        True,
    ),
    "README fill after use": (
        readme_function("def fill_after_use(x):", "x.fill(0)").replace("fill_after_use", "f", 1),
        [1.0, 2.0, 3.0],
        True,
    ),
    "a second name written": (
        """
def f(x):
    y = x * 1.0
    z = y
    s = np.sum(np.sin(y))
    z[0] = 5.0
    return s + np.sum(y * y)
""",
        [0.3, 0.8, 1.1],
        True,
    ),
    "a view read after the write": (
        """
def f(x):
    y = x * 1.0
    tail = y[1:]
    s = np.sum(y * y)
    y[1] = 7.0
    return s + np.sum(tail ** 2)
""",
        [0.3, 0.8, 1.1],
        True,
    ),
    "the written name rebound to another array": (
        """
def f(x):
    a = x * 1.0
    b = x * 2.0
    s = np.sum(np.sin(b) * a)
    a = b
    a[0] = 0.0
    return s + np.sum(b)
""",
        [0.3, 0.8, 1.1],
        True,
    ),
    "the capture line rebinds its operand": (
        """
def f(x):
    y = x * 1.0
    keep = y[:2]
    y = np.sin(y)
    keep[0] = 9.0
    return np.sum(y) + np.sum(keep)
""",
        [0.3, 0.8, 1.1],
        True,
    ),
    "a slice saved, the array written": (
        """
def f(x):
    y = x * 1.0
    s = np.sum(np.sin(y[1:3]))
    w = y
    w[2] = 0.0
    return s + np.sum(y)
""",
        [0.3, 0.8, 1.1, 0.5],
        True,
    ),
    "a method call": (
        """
def f(x):
    y = x * 1.0
    alias = y
    p = y.prod()
    alias[0] = 2.0
    return p + np.sum(y)
""",
        [0.3, 0.8, 1.1],
        True,
    ),
    "an augmented assignment saves its operand": (
        """
def f(x):
    y = x * 1.0
    w = x * 2.0
    w *= y
    y[0] = 3.0
    return np.sum(w) + np.sum(y)
""",
        [0.3, 0.8, 1.1],
        True,
    ),
    "a result saved, with a view of it": (
        """
def f(x):
    z = np.exp(x)
    view = z[1:]
    s = np.sum(z)
    z[0] = 0.0
    return s * np.sum(view) + np.sum(z)
""",
        [0.3, 0.8, 1.1],
        True,
    ),
    "a loop that scales in place": (
        """
def f(x):
    y = x * 1.0
    total = 0.0
    for k in range(3):
        total = total + np.sum(np.exp(y) * y)
        y *= 0.5
    return total
""",
        [0.3, 0.8, 1.1],
        True,
    ),
    "a loop stepping in place, a view read at the end": (
        """
def f(x):
    state = x * 1.0
    head = state[:2]
    for k in range(3):
        rate = np.sin(state)
        state += 0.1 * rate
    return np.sum(head * head) + np.sum(state)
""",
        [0.3, 0.8, 1.1],
        True,
    ),
    "a transposed operand (the copy keeps its layout)": (
        """
def f(x):
    y = x * 1.0
    a = y.reshape(2, 2).T
    b = a * a
    flat = b.reshape(-1)
    flat[0] = 100.0
    y[0] = 0.0
    return np.sum(b * np.arange(1.0, 5.0).reshape(2, 2)) + np.sum(flat) + np.sum(y)
""",
        [0.3, 0.8, 1.1, 0.5],
        True,
    ),
    "a result written in place with out=": (
        """
def f(x):
    y = x * 1.0
    np.exp(y, out=y)
    s = np.sum(y * 2.0)
    y[0] = 0.0
    return s + np.sum(y)
""",
        [0.3, 0.8, 1.1],
        False,
    ),
    "an accumulator that starts as a Python number": (
        """
def f(x):
    acc = 1.0
    first = None
    for k in range(3):
        acc = acc * x
        if first is None:
            first = acc
    first[0] = 0.0
    return np.sum(acc) + np.sum(first)
""",
        [0.3, 0.8, 1.1],
        False,
    ),
    "a checkpointed argument written later": (
        """
def f(x):
    y = x * 1.0
    s = mutagrad.checkpointed(lambda h: np.sum(h ** 3), y)
    y[0] = 0.0
    return s + np.sum(y)
""",
        [0.3, 0.8, 1.1],
        False,
    ),
}


def load(source: str, tmp_path: Path):
    """``f`` from ``source``, compiled from a file of its own so that messages quote its lines."""
    path = tmp_path / f"program_{next(_files)}.py"
    path.write_text(source)
    namespace = {"np": np, "mutagrad": mutagrad}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace["f"]


def numpy_value(source: str, x: np.ndarray, tmp_path: Path):
    """What ``f`` from ``source`` computes on plain ndarrays."""
    return load(source, tmp_path)(x.copy())


def poison_message(source: str, x: np.ndarray, tmp_path: Path) -> str | None:
    """The PoisonedCaptureError text of ``f`` in poison mode, or None if there is a gradient."""
    try:
        mutagrad.gradient(load(source, tmp_path), x.copy())
    except mutagrad.PoisonedCaptureError as error:
        return str(error)
    return None


def fixes(message: str) -> str:
    """The list of fixes at the end of a PoisonedCaptureError message."""
    return message.split("Fixes that keep what the program computes:\n")[1]


def rewritten(source: str, message: str) -> str | None:
    """``source`` with the line the message names rewritten as it says, or None if it names none."""
    match = REWRITE.search(fixes(message))
    if match is None:
        return None
    number, before, after = int(match.group(1)), match.group(2), match.group(3)
    lines = source.splitlines()
    text = lines[number - 1]
    assert text.strip() == before, f"line {number} is `{text.strip()}`, not `{before}`"
    lines[number - 1] = text[: len(text) - len(text.lstrip())] + after
    return "\n".join(lines) + "\n"


def with_the_old_advice(source: str, message: str) -> str:
    """``source`` with the fix the message used to offer: ``y = y.copy()`` before the write."""
    number = int(WRITE_LINE.search(message).group(1))
    lines = source.splitlines()
    text = lines[number - 1]
    name = re.match(r"\s*(?:np\.\w+\()?([A-Za-z_]\w*)", text).group(1)
    indent = text[: len(text) - len(text.lstrip())]
    lines.insert(number - 1, f"{indent}{name} = {name}.copy()")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_snapshot_mode_comes_first_and_keeps_the_value(name, tmp_path):
    source, x, _ = PROGRAMS[name]
    x = np.array(x)
    message = poison_message(source, x, tmp_path)
    assert message is not None, f"{name} does not raise in poison mode"
    assert fixes(message).startswith('  - run with mode="snapshot"')
    f = load(source, tmp_path)
    result = mutagrad.withgradient(f, x.copy(), mode="snapshot")
    np.testing.assert_array_equal(result.val, numpy_value(source, x, tmp_path))
    check_gradient(f, x, mode="snapshot")


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_every_rewrite_keeps_the_value_until_the_gradient_comes_out(name, tmp_path):
    source, x, named = PROGRAMS[name]
    x = np.array(x)
    expected = numpy_value(source, x, tmp_path)
    message = poison_message(source, x, tmp_path)
    assert (rewritten(source, message) is not None) == named
    rounds = 0
    while message is not None and rounds < 5:
        changed = rewritten(source, message)
        if changed is None:
            break
        np.testing.assert_array_equal(numpy_value(changed, x, tmp_path), expected, err_msg=changed)
        source, rounds = changed, rounds + 1
        message = poison_message(source, x, tmp_path)
    if named:
        assert message is None, f"still raises after {rounds} rewrites:\n{source}\n{message}"
        (gradient,) = mutagrad.gradient(load(source, tmp_path), x.copy())
        original = load(PROGRAMS[name][0], tmp_path)
        np.testing.assert_allclose(gradient, numerical_gradient(original, x)[0], atol=1e-5)


@pytest.mark.parametrize(
    "name",
    [
        "README views example",
        "a second name written",
        "a view read after the write",
        "a loop stepping in place, a view read at the end",
    ],
)
def test_the_old_advice_changed_the_value(name, tmp_path):
    source, x, _ = PROGRAMS[name]
    x = np.array(x)
    message = poison_message(source, x, tmp_path)
    old = with_the_old_advice(source, message)
    assert numpy_value(old, x, tmp_path) != numpy_value(source, x, tmp_path), old


def test_the_readme_views_example_keeps_1300(tmp_path):
    source, x, _ = PROGRAMS["README views example"]
    x = np.array(x)
    message = poison_message(source, x, tmp_path)
    assert numpy_value(source, x, tmp_path) == 1300.0
    assert numpy_value(with_the_old_advice(source, message), x, tmp_path) == 50.0
    assert "becomes: `y[:] = y.copy() ** 2  " in message
    assert numpy_value(rewritten(source, message), x, tmp_path) == 1300.0


def test_the_readme_quotes_the_rewrite_mutagrad_offers(tmp_path):
    source, x, _ = PROGRAMS["README fill after use"]
    message = poison_message(source, np.array(x), tmp_path)
    assert "becomes: `y = x.copy() * x.copy()  " in message
    assert "becomes: `y = x.copy() * x.copy()`" in README.read_text()


def test_a_copy_in_c_order_would_change_the_transposed_program(tmp_path):
    source, x, _ = PROGRAMS["a transposed operand (the copy keeps its layout)"]
    x = np.array(x)
    message = poison_message(source, x, tmp_path)
    assert 'a.copy(order="K") * a.copy(order="K")' in message
    c_order = rewritten(source, message).replace('.copy(order="K")', ".copy()")
    assert numpy_value(c_order, x, tmp_path) != numpy_value(source, x, tmp_path)


def test_no_copy_is_offered_where_the_operand_was_once_a_python_number(tmp_path):
    source, x, _ = PROGRAMS["an accumulator that starts as a Python number"]
    x = np.array(x)
    message = poison_message(source, x, tmp_path)
    assert fixes(message).count("  - ") == 1 and ".copy()" not in message  # snapshot mode only
    naive = source.replace("acc = acc * x", "acc = acc.copy() * x")
    with pytest.raises(AttributeError):
        numpy_value(naive, x, tmp_path)


def test_a_closed_over_array_of_a_checkpoint_is_not_sent_to_snapshot_mode(tmp_path):
    source = """
c = mutagrad.array([1.0, 2.0, 3.0])

def f(x):
    y = mutagrad.checkpointed(lambda h: h * c, x)
    c[0] = 100.0
    return np.sum(y * y)
"""
    message = poison_message(source, np.ones(3), tmp_path)
    assert not fixes(message).startswith('  - run with mode="snapshot"')
    assert "pass that array to checkpointed as an argument" in message
