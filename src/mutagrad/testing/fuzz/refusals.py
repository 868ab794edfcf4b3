"""Why mutagrad refused: a short, stable reason for each refusal, and their counts per mode.

A fuzzing run that is clean (nothing silently wrong) still says what
mutagrad cannot do yet: the refusals. Their messages carry the program's
details (a shape, a thread's name, the line), so counting them verbatim
scatters one cause over many rows. :func:`refusal_reason` reduces a refusal to
its error type and the construct its message names (``MissingRuleError:
no rule for np.maximum.accumulate``, ``NotDifferentiableError: np.place
with values overlapping the array``); :func:`refusal_breakdown` counts those
per mode, and :func:`breakdown_table` prints them, the most frequent in
snapshot mode (the mode that accepts the most) first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from mutagrad.testing.verdicts import ModeResult, Outcome

__all__ = ["breakdown_rows", "breakdown_table", "refusal_breakdown", "refusal_reason"]

# (pattern on the first line of the message, the reason it stands for). The first that
# matches wins; a group \1 names the construct. A message none matches is kept as it
# reads, without its numbers and quoted names.
_REASONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), reason)
    for pattern, reason in (
        (r"^Mutating arrays is not supported", "an in-place write (strict mode)"),
        (r"^the value .* saved for its pullback was overwritten", "a saved value overwritten"),
        (r"on an argument whose array shares memory with another argument",
         "a write to an argument that shares memory with another"),
        (r"^an argument of the gradient call changed while f ran",
         "an argument changed through a view made before the call"),
        (r"^an operation on a traced value in thread", "a traced value in another thread"),
        (r"^checkpointed\(.*\) writes .* that it did not create",
         "checkpointed writes an array it did not create"),
        (r"^checkpointed\(.*\) computed a different value", "checkpointed is not deterministic"),
        (r"made a complex value from a differentiated input", "a complex value"),
        (r"^mutagrad has no derivative rule for ([\w.]+)", r"no rule for \1"),
        (r"^([\w.]+) with values that share memory with the array it writes",
         r"\1 with values overlapping the array"),
        (r"^([\w.]+)\(\.\.\., out=\.\.\., where=\.\.\.\)", r"ufunc out= with where="),
        (r"^([\w.]+(?:\(\.\.\., out=\))?) into an array that shares memory with one of its inputs",
         r"\1 with out= overlapping an input"),
        (r"^withgradient needs f to return a floating-point number",
         "f returns no floating-point number"),
        (r"^argument \d+ of the gradient call is a ([\w.]+), an ndarray subclass",
         r"an ndarray subclass argument"),
        (r"^(np\.\w+\.\w+) returned values that are not the fold",
         r"\1: numpy's value is not the fold"),
        (r"^([\w.]+) on traced arrays is supported for", r"\1"),
        (r"^(x\.\w+) is not supported on traced arrays", r"\1"),
        (r"^(.+?) of a traced value", r"\1"),
    )
)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"\b\d+\b")  # (not the 2 of arctan2 or the 32 of float32)
_LONGEST = 90


def refusal_reason(error_type: str | None, message: str) -> str:
    """``"ErrorType: the construct refused"``: the same for every refusal of one cause.

    ``message`` is the error's first line. Numbers and quoted names (a
    thread's, a shape's sizes) never reach the reason, so it is the same in
    every run.
    """
    line = message.strip()
    for pattern, reason in _REASONS:
        found = pattern.search(line)
        if found is not None:
            text = found.expand(reason)
            break
    else:
        text = _NUMBER.sub("N", _QUOTED.sub("'…'", line)).removesuffix(" at").rstrip(" ,.:")
        if len(text) > _LONGEST:
            text = text[: _LONGEST - 1] + "…"
    return f"{error_type or 'error'}: {text}"


def refusal_breakdown(results: Iterable[ModeResult]) -> dict[str, dict[str, int]]:
    """For each mode, how many refusals had each reason (most frequent first)."""
    counts: dict[str, Counter[str]] = {}
    for r in results:
        if r.outcome is Outcome.REFUSED:
            counts.setdefault(r.mode, Counter())[refusal_reason(r.error_type, r.detail)] += 1
    return {mode: dict(counter.most_common()) for mode, counter in counts.items()}


def breakdown_rows(
    breakdown: dict[str, dict[str, int]], modes: Sequence[str]
) -> list[tuple[str, list[int]]]:
    """Each reason with its count in each of ``modes``.

    Ordered by the count in the last mode (snapshot: what no mode accepts),
    then the one before it, then by the reason.
    """
    reasons = {reason for counts in breakdown.values() for reason in counts}
    rows = [(reason, [breakdown.get(m, {}).get(reason, 0) for m in modes]) for reason in reasons]
    return sorted(rows, key=lambda row: (*(-n for n in reversed(row[1])), row[0]))


def breakdown_table(breakdown: dict[str, dict[str, int]], modes: Sequence[str]) -> list[str]:
    """The lines of the breakdown, as :func:`breakdown_rows` orders them."""
    rows = breakdown_rows(breakdown, modes)
    if not rows:
        return ["refused, by reason: none"]
    lines = ["refused, by reason:", "".join(f"{mode:>10}" for mode in modes) + "  reason"]
    lines += ["".join(f"{n:>10}" for n in counts) + f"  {reason}" for reason, counts in rows]
    return lines
