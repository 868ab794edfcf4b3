"""Rules registered on first use: SciPy's ufuncs, without ``import mutagrad`` importing SciPy.

``scipy.special``'s functions are numpy ufuncs, so a call on a traced array
reaches mutagrad's ``__array_ufunc__`` like ``np.sin`` does. Their rules live
in :mod:`mutagrad.rules.scipy_special`, which imports SciPy; that module is
imported the first time a ufunc without a rule turns out to be SciPy's (the
ufunc-miss paths of the traced array ask the registry's loaders, this one among
them (:func:`rules_on_first_use`), then retry), or when
``mutagrad.scipy`` is imported. Until then, importing mutagrad costs nothing
for SciPy, and a program that never uses it never loads it.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from mutagrad.core.registry import NONDIFFERENTIABLE, UFUNC_RULES, on_rule_miss
from mutagrad.diagnostics.sites import describe_site, user_site
from mutagrad.errors import MissingRuleError

# The rule module for the ufuncs of a library -> the modules where that library
# exposes its ufuncs (a ufunc is recognised as the same object found there).
HOMES: dict[str, tuple[str, ...]] = {
    "mutagrad.rules.scipy_special": ("scipy.special", "scipy.special._ufuncs"),
}


def home_of(ufunc: Any) -> tuple[str, str] | None:
    """``(rule module, public name)`` of a ufunc of a library in :data:`HOMES`, else None.

    Only libraries the program has already imported are searched: a ufunc of
    theirs cannot be called before they are.
    """
    name = getattr(ufunc, "__name__", None)
    if name is None:
        return None
    for rule_module, homes in HOMES.items():
        for home in homes:
            module = sys.modules.get(home)
            if module is not None and getattr(module, name, None) is ufunc:
                return rule_module, f"{homes[0]}.{name}"
    return None


@on_rule_miss
def rules_on_first_use(key: Any) -> bool:
    """Register the rules of ``key``'s library if it has some; whether ``key`` now has one.

    ``key`` is a ufunc or ``(ufunc, method)``. A ufunc of a known library that
    still has no rule raises the MissingRuleError here, under its own name
    (``scipy.special.kv``, not ``np.kv``).
    """
    ufunc, method = key if isinstance(key, tuple) else (key, "__call__")
    found = home_of(ufunc)
    if found is None:
        return False
    rule_module, name = found
    if rule_module not in sys.modules:
        importlib.import_module(rule_module)
    if key in UFUNC_RULES or key in NONDIFFERENTIABLE:
        return True
    if method != "__call__" and ufunc in UFUNC_RULES:
        return False  # a method of a ufunc with a rule: derived from it (rules.ufunc_methods)
    raise MissingRuleError(missing_library_rule_message(
        name if method == "__call__" else f"{name}.{method}"))  # fmt: skip


def missing_library_rule_message(name: str) -> str:
    """The MissingRuleError of a SciPy function without a rule, naming the user's line."""
    return (
        f"mutagrad has no derivative rule for {name}, which was called on a traced array at\n"
        f"    {describe_site(user_site())}\n"
        "Fixes:\n"
        f"  - register a rule:  mutagrad.defvjp({name}, vjp_for_arg0, ..., reads=...)\n"
        f"    or  @mutagrad.rrule({name})  def rule(*args): ... return y, pullback\n"
        "  - or, if no gradient should flow through it, pass mutagrad.ignore_derivatives(x)."
    )
