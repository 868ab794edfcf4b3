"""The advice of a poison error: what was saved, what overwrote it, and fixes that keep the program.

:func:`poison_message` is the text of the
:class:`~mutagrad.errors.PoisonedCaptureError` raised when a pullback reads a
value an in-place write replaced: the operation that saved it and the write
(sites, source text, regions, versions), then fixes that never change what
the program computes: snapshot mode, and handing the operation a copy at the
line where it saved the value (:mod:`~mutagrad.diagnostics.rewrites` spells
the rewritten line out). It reads the engine's capture, node and write
objects through their attributes; it imports nothing of the engine.
"""

from __future__ import annotations

from typing import Any

from mutagrad.diagnostics.rewrites import rewrite_with_copy
from mutagrad.diagnostics.sites import format_site, site_line, source_code


def poison_message(capture: Any) -> str:
    """The text of the PoisonedCaptureError raised on reading ``capture``.

    It names the operation that saved the value and the write that replaced
    it (sites, source text, regions, versions), then fixes that keep what the
    program computes (see :func:`_poison_fixes`), or the rule's own
    (``Rule.poison_fixes``).
    """
    write = capture.poisoned_by
    assert write is not None
    node = capture.node
    base = capture.base
    saved = capture.saved_part()
    lines = [
        f"the value {node.rule.name} saved for its pullback was overwritten in place before "
        "the backward pass read it.",
        "",
        f"  captured by {node.rule.name} at version {capture.version}"
        + (f": {saved} of an array of shape {base._raw.shape}" if saved else "")
        + ",",
        format_site(node.site),
        f"  overwritten by {write.operation} at {write.region} of that array, making version "
        f"{write.version}:",
        format_site(write.site),
    ]
    capture_text, write_text = source_code(node.site), source_code(write.site)
    if capture_text and write_text:
        lines.insert(1, f"  `{capture_text}` needs the old value; `{write_text}` replaced it.")
    fixes = node.rule.poison_fixes(capture)
    if fixes is None:
        fixes = _poison_fixes(capture)
    items = [("  - " if k == 0 else "  - or, ") + "\n    ".join(fix) for k, fix in enumerate(fixes)]
    return "\n".join([*lines, "", "Fixes that keep what the program computes:", *items])


_PYTHON_NUMBERS = (bool, int, float, complex)


def _poison_fixes(capture: Any) -> list[list[str]]:
    """Fixes for a poisoned capture that never change what the program computes.

    Snapshot mode first, unless a closure holds the value; then handing the
    operation a copy at the capture site (:func:`_copy_fix`). A copy just
    before the write is never offered: other names and views of the array
    would stop seeing the write, which changes the program.
    """
    fixes = []
    if not capture.closure:
        fixes.append([
            'run with mode="snapshot": just before a write overwrites a value that a pullback',
            "still needs, it copies that value (the cost shows in withgradient(...).bytes_copied);",
        ])  # fmt: skip
    copy_fix = _copy_fix(capture)
    if copy_fix is not None:
        fixes.append(copy_fix)
    return fixes


def _copy_fix(capture: Any) -> list[str] | None:
    """Hand the operation that saved ``capture`` a copy, at the line where it did.

    It computes the same value from the copy, and what it saves is then an
    array that no other name or view can reach, so no later write can
    overwrite it. The rewritten line is spelled out when
    :func:`rewrite_with_copy` is certain which expression gave the saved
    array. Otherwise the fix is described in words for a saved argument, and
    not offered for a saved result (the operation may have written it into an
    existing array, ``out=``, where no copy helps), nor where a Python number
    came in that place in another run of the line (it has no ``.copy()``).
    """
    node = capture.node
    name = node.rule.name
    if node.rule.saves_by_position:
        positions = tuple(i for i, saved in enumerate(node.saved) if saved is capture)
        result = positions == (len(node.saved) - 1,)
        if not result and not _arrays_at_every_execution(node, positions):
            return None
        data = capture.data
        copy = ".copy()" if data.ndim <= 1 or data.flags.c_contiguous else '.copy(order="K")'
        arguments = None if result else positions
        rewrite = rewrite_with_copy(node.site, name, len(node.inputs), arguments, copy)
        if rewrite is not None:
            line, before, after = rewrite
            return [
                f"give {name} a copy of what it saves: the values stay the same, and no later",
                "write can reach the copy:",
                f"  line {line}: `{before}`",
                f"  becomes: `{after}`",
            ]
        if result:
            return None
    return [
        f"at line {site_line(node.site)}, pass {name} a copy of the array it saved (`a.copy()` "
        "in place of the",
        "argument `a` that holds it): the values stay the same, and no later write can reach "
        "the copy.",
    ]


def _arrays_at_every_execution(node: Any, positions: tuple[int, ...]) -> bool:
    """Whether every recorded run of ``node``'s operation passed arrays at ``positions``.

    A loop may pass a Python number the first time round (``acc = 1.0``) and
    an array later; ``acc.copy()`` would fail on the number.
    """
    for other in node.tape.nodes:
        if other.rule is node.rule and other.site == node.site:
            saved = other.saved
            if any(i < len(saved) and type(saved[i]) in _PYTHON_NUMBERS for i in positions):
                return False
    return True
