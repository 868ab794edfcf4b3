"""The texts of mutagrad's most common errors, built where they are raised.

Each names the user's line (the innermost frame outside mutagrad and numpy)
and the fix, so that a message reads the same from every module that raises
it.
"""

from __future__ import annotations

from typing import Any

from mutagrad.core.sites import describe_conversion, describe_site, user_site


def function_name(func: Any) -> str:
    """How numpy documents ``func``: ``np.cov``, ``np.linalg.svd``; others by module."""
    module = getattr(func, "__module__", "") or ""
    name = getattr(func, "__name__", repr(func))
    if module.startswith("numpy"):
        sub = module.split(".")[1] if "." in module else ""
        prefix = (
            "np." if sub in ("", "_core", "core", "lib") or sub.startswith("_") else f"np.{sub}."
        )
        return prefix + name
    return f"{module}.{name}" if module else name


def missing_rule_message(name: str) -> str:
    """A MissingRuleError's message for numpy function ``name`` called on a traced array."""
    return (
        f"mutagrad has no derivative rule for {name}, which was called on a traced array at\n"
        f"    {describe_site(user_site())}\n"
        "and numpy does not implement it in Python that mutagrad could trace through.\n"
        "Fixes:\n"
        f"  - register a rule:  mutagrad.defvjp({name}, vjp_for_arg0, ..., reads=...)\n"
        f"    or  @mutagrad.rrule({name})  def rule(*args): ... return y, pullback\n"
        "  - or, if no gradient should flow through it, pass mutagrad.ignore_derivatives(x)."
    )


def conversion_message(operation: str) -> str:
    """A TracerConversionError's message: the user's construct that converted, and its fix."""
    return describe_conversion(user_site(), operation)
