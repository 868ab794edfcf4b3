"""The seed's ``addone``: a temporary buffer filled in place, with and without a rule.

Zygote (seed "Which functions need rules?")::

    function addone(a::AbstractArray)
        b = similar(a)
        b .= a .+ 1
        return sum(b)
    end
    gradient(addone, a)   # ERROR: Mutating arrays is not supported

    function ChainRules.rrule(::typeof(addone), a)
        y = addone(a)
        addone_pullback(ȳ) = NoTangent(), ones(length(a))
        return y, addone_pullback
    end
    gradient(addone, a)   # ([1.0, 1.0, 1.0],) -- after restarting the REPL

Strict mode reproduces Zygote's error; poison mode differentiates ``addone``
as written, because filling a fresh buffer overwrites nothing a pullback needs.

The rule version follows the seed's advice for comparing both in one session:
a second function ``addone_with_rule`` that calls ``addone``, marked with
``@mutagrad.primitive``. Before its rule exists, its body is traced like any
other code (strict mode still refuses). Registering the rule takes effect on
the next call, with no restart (Zygote needs one because it caches the
pullback it generated on the first call). Inside the rule the arguments are
plain ndarrays, so the in-place write is invisible to strict mode.

Run: ``python examples/addone_rule.py``
"""

import numpy as np
from _compare_modes import print_modes, print_section

import mutagrad


def addone(a):
    b = np.empty_like(a)
    b[:] = a + 1
    return np.sum(b)


@mutagrad.primitive
def addone_with_rule(a):
    return addone(a)


def addone_rule(a):
    """The seed's rrule, unchanged: its pullback ignores ȳ, which is right only for ȳ = 1."""
    y = addone(a)

    def addone_pullback(dy):
        return mutagrad.NoTangent(), np.ones(len(a))

    return y, addone_pullback


def main():
    a = np.array([1.0, 2.0, 3.0])
    print_section(f"addone(a) at a = {a}, no rule")
    print_modes(addone, a)

    print_section("addone_with_rule(a): a primitive whose rule is not registered yet")
    print_modes(addone_with_rule, a)

    mutagrad.rrule(addone_with_rule)(addone_rule)
    print_section("addone_with_rule(a) after registering the seed's rrule (no restart)")
    print_modes(addone_with_rule, a)


if __name__ == "__main__":
    main()
