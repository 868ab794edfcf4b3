"""docs/testing.md stays true: its example suite runs, and its quoted reports are the real ones.

Code blocks are found by the HTML comment just above them: ``<!-- example test file -->``,
and the failing examples with the reports the page quotes for them. The example suite runs
once, beside a copy with a wrong derivative, in one pytest process with the ``ci`` profile
mutagrad's plugin registers, as a user runs it.
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


def run_pytest_on(sources: dict[str, str], directory: Path) -> subprocess.CompletedProcess:
    """pytest on the files ``sources`` (name -> text), in one process, with the ci profile.

    The profile comes from mutagrad's pytest plugin, as in a user's suite.
    """
    for name, source in sources.items():
        (directory / name).write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf",
         "--hypothesis-profile=ci", *sources],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip


def test_the_example_suite_passes_and_fails_when_a_derivative_is_wrong(tmp_path):
    source = block_after("example test file")
    right = "g / (1 + np.exp(-x))"
    assert right in source
    broken = source.replace(right, "g / (1 + np.exp(x))")
    completed = run_pytest_on(
        {"test_my_suite.py": source, "test_broken_rule.py": broken}, tmp_path
    )
    tests = source.count("\ndef test_")
    summary = completed.stdout.strip().splitlines()[-1]
    assert f"2 failed, {2 * tests - 2} passed" in summary, completed.stdout + completed.stderr
    failed = sorted(re.findall(r"^FAILED (\S+)", completed.stdout, re.MULTILINE))
    assert failed == [
        "test_broken_rule.py::test_softplus_rule",
        "test_broken_rule.py::test_softplus_rule_in_float32",
    ], completed.stdout
    # Counted in the failure reports only: the -rf summary repeats the message when the
    # terminal is wide enough, and CI terminals differ in width.
    reports = completed.stdout.split("short test summary info")[0]
    assert reports.count("check_rule(softplus) found 1 problem") == 2, completed.stdout
    assert "Explanation:" not in completed.stdout  # the ci profile leaves hypothesis' out


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
