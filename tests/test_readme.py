"""Every Python code block of README.md and docs/*.md runs, and shows what it really prints.

The documents follow these conventions, which this test enforces:

* ```` ```python ```` blocks run in order, in one namespace per document: a
  block may use what an earlier block of the same document defined;
* a block right after a line ``<!-- fragment -->`` is not run (a sketch
  with parts left out, said so in the text around it);
* a comment after a top-level statement is what the statement gives when
  it reads as a Python value (numbers, strings, ``True``, ``False``,
  ``None``, tuples, lists, dicts, ``array(...)``, numpy scalars as numpy 2
  prints them, ``np.float64(2.0)``, ``-`` signs; ``...`` inside
  it standing for anything): the statement's value, printed with numpy's
  print precision, must match it, spaces not counting (``print(...)`` is
  matched by what it printed);
* a comment that starts with an exception's name (``# MutationError, as in
  Zygote``, ``# raises TypeError``) says that the statement raises it;
* a ```` ```text ```` block right after a line ``<!-- output -->`` shows lines
  of what the python block before it printed (and of the message of the
  error its statements raised), in order; ``...`` stands for anything, and
  the block's code is called ``example.py`` there.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import linecache
import re
import tokenize
from pathlib import Path

import numpy as np
import pytest

import mutagrad

ROOT = Path(__file__).parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FRAGMENT = "<!-- fragment -->"
OUTPUT = "<!-- output -->"
_FENCE = re.compile(r"^```(\w*)\s*$")
_ERROR_COMMENT = re.compile(r"^(?:raises\s+)?([A-Z]\w*(?:Error|Exception|Warning))\b")
_BLOCK_FILE = re.compile(r"example_\d+\.py")


class Block:
    """One fenced block: its language, first line in the document, text and markers."""

    def __init__(self, language: str, line: int, text: str, marker: str):
        self.language = language
        self.line = line
        self.text = text
        self.marker = marker


def blocks_of(document: Path) -> list[Block]:
    lines = document.read_text().splitlines()
    found = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        marker = lines[i - 1].strip() if i > 0 else ""
        end = i + 1
        while not lines[end].startswith("```"):
            end += 1
        found.append(Block(opening.group(1), i + 1, "\n".join(lines[i + 1 : end]) + "\n", marker))
        i = end + 1
    return found


def _normalized(text: str) -> str:
    """Spaces do not count: collapsed, and none just inside brackets."""
    text = re.sub(r"\s+", " ", text.strip())
    return re.sub(r"([\[(]) | ([\])])", r"\1\2", text)


def matches(expected: str, actual: str) -> bool:
    """``actual`` as ``expected`` shows it, ``...`` standing for anything."""
    pieces = [re.escape(p) for p in _normalized(expected).split("...")]
    return re.fullmatch(".*?".join(pieces), _normalized(actual), re.DOTALL) is not None


def render(value: object) -> str:
    """A value as the documents write it: numpy's precision for every floating-point number,
    and a numpy scalar as numpy 2 prints it (``np.float64(2.0)``, not ``2.0``)."""
    if isinstance(value, np.generic) and not isinstance(value, np.ndarray):
        inside = render(value.item()) if isinstance(value, np.floating) else repr(value.item())
        return f"np.{type(value).__name__}({inside})"
    if isinstance(value, float):
        return np.format_float_positional(value, precision=8, unique=True, trim="0")
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        fields = ", ".join(f"{k}={render(v)}" for k, v in zip(value._fields, value))
        return f"{type(value).__name__}({fields})"
    if isinstance(value, tuple):
        inside = ", ".join(render(v) for v in value)
        return f"({inside},)" if len(value) == 1 else f"({inside})"
    if isinstance(value, list):
        return "[" + ", ".join(render(v) for v in value) + "]"
    return repr(value)


def is_value(comment: str) -> bool:
    """Whether a comment reads as a value a statement gives, rather than as prose."""
    try:
        tree = ast.parse(comment.replace("...", "0"), mode="eval").body
    except SyntaxError:
        return False
    return all(_is_literal_part(node) for node in ast.walk(tree))


def _is_literal_part(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):  # array(...) or a numpy scalar, np.float64(...)
        return (isinstance(node.func, ast.Name) and node.func.id == "array") or (
            isinstance(node.func, ast.Attribute) and _is_literal_part(node.func)
        )
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id == "np"
    if isinstance(node, ast.Name):  # array, np; True/False/None are Constants
        return node.id in ("array", "np")
    return isinstance(node, (ast.Constant, ast.Tuple, ast.List, ast.Dict, ast.UnaryOp,
                             ast.USub, ast.Load, ast.keyword))  # fmt: skip


def _comments(source: str) -> dict[int, str]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {t.start[0]: t.string[1:].strip() for t in tokens if t.type == tokenize.COMMENT}


def _expected_error(comment: str | None) -> type[BaseException] | None:
    found = _ERROR_COMMENT.match(comment or "")
    if found is None:
        return None
    name = found.group(1)
    error = getattr(mutagrad, name, None) or getattr(builtins, name, None)
    assert isinstance(error, type), f"no exception called {name}"
    return error


def _is_print(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name)
        and statement.value.func.id == "print"
    )


def run_block(block: Block, namespace: dict, filename: str) -> str:
    """Run ``block`` statement by statement, checking comments; return what it printed."""
    linecache.cache[filename] = (len(block.text), None, block.text.splitlines(True), filename)
    comments = _comments(block.text)
    printed = io.StringIO()
    for statement in ast.parse(block.text).body:
        start = printed.tell()
        simple = not isinstance(statement, (ast.FunctionDef, ast.ClassDef, ast.For, ast.If,
                                            ast.While, ast.With, ast.Try))  # fmt: skip
        comment = comments.get(statement.end_lineno) if simple else None
        where = f"line {block.line + statement.lineno} of the document"
        error_type = _expected_error(comment)
        try:
            with contextlib.redirect_stdout(printed):
                if isinstance(statement, ast.Expr):
                    code = compile(ast.Expression(statement.value), filename, "eval")
                    value = eval(code, namespace)
                else:
                    exec(compile(ast.Module([statement], []), filename, "exec"), namespace)
                    value = None
        except Exception as error:
            if error_type is None or not isinstance(error, error_type):
                raise AssertionError(f"{where} raised {type(error).__name__}: {error}") from error
            printed.write(f"{type(error).__name__}: {error}\n")
            continue
        assert error_type is None, f"{where} should raise {error_type.__name__}, as it says"
        if comment is not None and is_value(comment):
            # print(...) shows what it printed; any other expression its value.
            shown = printed.getvalue()[start:] if _is_print(statement) else render(value)
            assert matches(comment, shown), f"{where} gives {shown}, the text says {comment}"
    return _BLOCK_FILE.sub("example.py", printed.getvalue())


def check_output(expected: str, printed: str, line: int) -> None:
    """Each line of ``expected`` matches a line of ``printed``, in order."""
    remaining = [p for p in printed.splitlines() if p.strip()]
    for wanted in (w for w in expected.splitlines() if w.strip()):
        while remaining and not matches(wanted, remaining[0]):
            remaining.pop(0)
        assert remaining, (
            f"the output shown from line {line} has `{wanted.strip()}`, which the code does not "
            f"print (in this order); it printed:\n{printed}"
        )
        remaining.pop(0)


@pytest.mark.parametrize("document", DOCUMENTS, ids=[d.name for d in DOCUMENTS])
def test_every_python_block_runs_and_shows_its_real_output(document, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # blocks that write files write them here
    namespace: dict = {"__name__": "__main__"}
    printed = ""
    ran = 0
    for k, block in enumerate(blocks_of(document)):
        if block.language == "python" and block.marker != FRAGMENT:
            printed = run_block(block, namespace, f"example_{k}.py")
            ran += 1
        elif block.marker == OUTPUT:
            check_output(block.text, printed, block.line)
    assert ran > 0


def test_a_wrong_comment_or_output_is_caught():
    block = Block("python", 1, "x = 2 + 2\nx  # 5\n", "")
    with pytest.raises(AssertionError, match="gives 4, the text says 5"):
        run_block(block, {}, "example_0.py")
    with pytest.raises(AssertionError, match="gives 4"):
        run_block(Block("python", 1, "print(2 + 2)  # 5\n", ""), {}, "example_0.py")
    block = Block("python", 1, "print('a b')\n1 / 0  # raises ZeroDivisionError\n", "")
    printed = run_block(block, {}, "example_0.py")
    check_output("a ...\nZeroDivisionError: ...", printed, 1)
    with pytest.raises(AssertionError, match="does not print"):
        check_output("ZeroDivisionError: ...\na b", printed, 1)
    with pytest.raises(AssertionError, match="should raise TypeError"):
        run_block(Block("python", 1, "1 + 1  # TypeError\n", ""), {}, "example_0.py")


def test_prose_comments_are_not_values():
    assert is_value("(array([0.918..., 1.381...]),)") and is_value("-1.0") and is_value("1")
    assert not is_value("4.5: should be 3")
    assert not is_value("diag(6, 12, 18, 24)")
    assert not is_value("a buffer filled in place ...")


def test_numbers_are_compared_at_numpy_print_precision():
    assert matches("(array([0.918..., 1.]),)", render((np.array([0.9181799, 1.0]),)))
    assert matches("(-0.16, 0.16)", render((-0.16000000000000003, 0.16)))
    assert not matches("(-0.17, 0.16)", render((-0.16, 0.16)))
