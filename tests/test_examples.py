"""Run every script in examples/ and check the key facts it prints.

Each script must exit with status 0 and print, for each section, one line per
mode (``  <mode>  -> <gradient or error>``, see examples/_compare_modes.py).
``EXPECTED`` lists, per script, facts about those lines: in the section whose
title contains a given text, the line for a given mode contains a given text.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))

# script -> [(section title contains, mode, the mode's line contains)]
EXPECTED: dict[str, list[tuple[str, str, str]]] = {
    "mutate_argument.py": [
        ("sum(f!(x))", "strict", "MutationError: Mutating arrays is not supported"),
        ("sum(f!(x))", "poison", "gradient [2. 2. 2.]"),
        ("sum(f!(x))", "snapshot", "gradient [2. 2. 2.]   bytes copied: 0"),
    ],
    "mutate_fresh_buffer.py": [
        ("no Buffer", "strict", "MutationError"),
        ("no Buffer", "poison", "gradient [2. 2. 2.]"),
        ("mutagrad.Buffer", "strict", "gradient [2. 2. 2.]"),
        ("mutagrad.Buffer", "poison", "gradient [2. 2. 2.]"),
    ],
    "addone_rule.py": [
        ("no rule", "strict", "MutationError"),
        ("no rule", "poison", "gradient [1. 1. 1.]"),
        ("not registered yet", "strict", "MutationError"),
        ("after registering", "strict", "gradient [1. 1. 1.]"),
        ("after registering", "poison", "gradient [1. 1. 1.]"),
    ],
    "try_except.py": [
        ("tryme", "strict", "gradient [2. 2. 2.]"),
        ("tryme", "poison", "gradient [2. 2. 2.]"),
        ("traced through the try block", "strict", "gradient 6.0"),
        ("seed's rrule", "poison", "gradient 6.0"),
    ],
    "foreign_call_rule.py": [
        ("no rule", "strict", "gradient / clock = 1.00"),
        ("seed's rrule", "poison", "gradient / clock = 0.50"),
        ("corrected rrule", "snapshot", "gradient / clock = 1.00"),
    ],
    "mse_loop_vs_rule.py": [
        ("loop over 30 scalars", "strict", "gradient [-0.0034"),
        ("seed's rrule", "poison", "gradient [-0.0034"),
    ],
    "sum3_indexing.py": [
        ("30-element", "strict", "gradient [1. 1. 1. ... 0. 0. 0.]"),
        ("seed's rrule", "poison", "gradient [1. 1. 1. ... 0. 0. 0.]"),
    ],
    "overwrite_saved_value.py": [
        ("x.fill(0)", "strict", "MutationError"),
        ("x.fill(0)", "poison", "PoisonedCaptureError"),
        ("x.fill(0)", "snapshot", "gradient [2. 4. 6.]"),
    ],
    "quadrature.py": [
        ("traced through the loop", "strict", "MutationError"),
        ("traced through the loop", "poison", "gradient [0.7788 0.3679 0.0183]"),
        ("traced through the loop", "snapshot", "gradient [0.7788 0.3679 0.0183]"),
        ("fundamental theorem", "strict", "gradient [0.7788 0.3679 0.0183]"),
        ("fundamental theorem", "poison", "gradient [0.7788 0.3679 0.0183]"),
    ],
}

# Facts that are not per-mode lines: the script's whole output contains them.
EXPECTED_TEXT: dict[str, list[str]] = {
    "mutate_argument.py": ["the caller's x afterwards: [1. 2. 3.]"],
    "mse_loop_vs_rule.py": ["agree in every mode: True", "µs per gradient"],
    "sum3_indexing.py": ["µs per gradient"],
    "overwrite_saved_value.py": ["snapshot gradient equals 2x: True"],
    "quadrature.py": [
        "both agree with exp(-x²), the exact derivative: True",
        "matches -2x·exp(-x²): True",
        "ms per gradient",
        "x faster",
    ],
    "train.py": ["epoch  60", "loss fell below a tenth of its first value: True"],
}

MODE_LINE = re.compile(r"^  (strict|poison|snapshot)\s+(?:-> )?(.*)$")


def mode_lines_by_section(output: str) -> dict[str, dict[str, str]]:
    """``{section title: {mode: its lines' text}}`` from a script's output.

    A mode's line is ``  <mode>  -> <outcome>``; further lines starting with
    the mode name (a script's own checks) are appended, separated by " | ".
    """
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in output.splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:], {})
        elif (match := MODE_LINE.match(line)) and current is not None:
            mode, text = match.groups()
            current[mode] = f"{current[mode]} | {text}" if mode in current else text
    return sections


def run_script(script: Path) -> str:
    completed = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, (
        f"{script.name} exited with {completed.returncode}\n{completed.stderr}"
    )
    return completed.stdout


def test_every_expected_script_exists():
    assert set(EXPECTED) | set(EXPECTED_TEXT) <= {p.name for p in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_example_runs_and_prints_its_facts(script: Path):
    output = run_script(script)
    sections = mode_lines_by_section(output)
    assert sections, f"{script.name} printed no '## ' section"
    for title_part, mode, fact in EXPECTED.get(script.name, []):
        matching = [lines for title, lines in sections.items() if title_part in title]
        assert matching, f"{script.name}: no section title contains {title_part!r}"
        line = matching[0].get(mode, "")
        assert fact in line, (
            f"{script.name}, section {title_part!r}, mode {mode}: expected {fact!r} in {line!r}"
        )
    for fact in EXPECTED_TEXT.get(script.name, []):
        assert fact in output, f"{script.name}: expected {fact!r} in the output"
