"""docs/testing.md stays true: its example test file runs, and its quoted report is the real one.

Code blocks are found by the HTML comment just above them: ``<!-- example test file -->``,
and the failing examples with the reports the page quotes for them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "testing.md"


def block_after(marker: str) -> str:
    """The fenced code block that follows ``<!-- marker -->`` on the page."""
    text = PAGE.read_text()
    match = re.search(rf"<!-- {re.escape(marker)} -->\n```\w*\n(.*?)\n```", text, re.DOTALL)
    assert match, f"docs/testing.md has no code block after <!-- {marker} -->"
    return match.group(1)


def run_pytest_on(source: str, directory: Path) -> subprocess.CompletedProcess:
    path = directory / "test_my_rules.py"
    path.write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_example_test_file_passes(tmp_path):
    completed = run_pytest_on(block_after("example test file"), tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "4 passed" in completed.stdout


def test_the_example_test_file_fails_when_a_derivative_is_wrong(tmp_path):
    source = block_after("example test file")
    right = "g / (1 + np.exp(-x))"
    assert right in source
    completed = run_pytest_on(source.replace(right, "g / (1 + np.exp(x))"), tmp_path)
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "1 failed, 3 passed" in completed.stdout
    assert "check_rule(softplus) found" in completed.stdout


@pytest.mark.parametrize(
    ("example", "report"),
    [("failing gradient", "its gradient report"), ("failing rule", "its report")],
)
def test_the_quoted_reports_are_what_the_checks_say(example, report):
    namespace: dict = {"__name__": "docs_example"}
    with pytest.raises(AssertionError) as info:
        exec(compile(block_after(example), "<docs/testing.md>", "exec"), namespace)
    assert comparable(str(info.value)) == comparable(block_after(report))


def comparable(report: str) -> str:
    """The report with long floats rounded and line wrapping undone.

    The last digits of a float can differ between platforms' math libraries,
    and a number's length changes where the report's lines wrap.
    """
    rounded = re.sub(r"-?\d+\.\d{7,}(?:e[-+]?\d+)?", lambda m: f"{float(m[0]):.6g}", report)
    return " ".join(rounded.split())


def test_the_readme_links_to_the_page():
    assert "docs/testing.md" in (ROOT / "README.md").read_text()
