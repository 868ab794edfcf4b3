"""The seed's ``jclock``: a foreign call, and the custom rule the seed gives it.

Zygote cannot look inside a ``ccall``, so it needs a rule (seed
"Limitations", foreign call expressions)::

    jclock(x) = ccall(:clock, Int32, ()) * x

    function ChainRulesCore.rrule(::typeof(jclock), x)
      y = jclock(x)
      pb(ȳ) = (ChainRulesCore.NoTangent(), ȳ * y)
      return y, pb
    end
    gradient(jclock, rand())   # (674298.4243400148,)

Here the foreign call is ``time.process_time()``, which returns a plain
float. mutagrad needs no rule at all: it sees ``clock * x`` as a product with
a constant and returns ``d/dx = clock``, the right derivative.

The seed's rule is reproduced exactly. Note what it computes: its pullback
returns ``ȳ * y = ȳ * clock * x``, so the gradient it reports equals the
value ``y`` itself, which is ``x`` times the true derivative ``clock``. A
corrected rule returns ``ȳ * clock``; it is shown last. The clock advances
between calls, so the example compares each gradient with the clock reading of the
same call: it prints ``gradient / clock`` with ``clock = y / x``, which is
1.00 for a correct derivative and ``x`` for the seed's rule.

Run: ``python examples/foreign_call_rule.py``
"""

import time

from _compare_modes import print_modes, print_section

import mutagrad


def jclock(x):
    """Traced as written: ``process_time()`` is a constant factor."""
    return time.process_time() * x


@mutagrad.primitive
def jclock_seed_rule(x):
    return time.process_time() * x


@mutagrad.rrule(jclock_seed_rule)
def seed_rule(x):
    """The seed's rrule, unchanged: the pullback returns ȳ * y."""
    y = jclock_seed_rule(x)

    def pullback(dy):
        return mutagrad.NoTangent(), dy * y

    return y, pullback


@mutagrad.primitive
def jclock_corrected_rule(x):
    return time.process_time() * x


@mutagrad.rrule(jclock_corrected_rule)
def corrected_rule(x):
    """d/dx (clock * x) = clock: read the clock once and use it for both."""
    clock = time.process_time()
    y = clock * x

    def pullback(dy):
        return mutagrad.NoTangent(), dy * clock

    return y, pullback


def print_derivative_ratios(outcomes, x):
    """Each gradient divided by the clock reading of its own call (y / x)."""
    for mode, outcome in outcomes.items():
        if isinstance(outcome, mutagrad.MutagradError):
            continue
        (grad,) = outcome.grad
        clock = outcome.val / x
        print(f"  {mode:<9}    gradient / clock = {grad / clock:.2f}")


def main():
    x = 0.5
    print_section(f"jclock(x) = process_time() * x at x = {x}, traced, no rule")
    print_derivative_ratios(print_modes(jclock, x), x)

    print_section("jclock with the seed's rrule (pullback returns ȳ * y)")
    print_derivative_ratios(print_modes(jclock_seed_rule, x), x)
    print(f"  the seed's rule reports y = clock * x, i.e. x = {x} times the true derivative")

    print_section("jclock with a corrected rrule (pullback returns ȳ * clock)")
    print_derivative_ratios(print_modes(jclock_corrected_rule, x), x)


if __name__ == "__main__":
    main()
