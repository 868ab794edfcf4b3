"""The seeds' ``try``/``catch`` scenarios: an eager tape does not mind exception handling.

Zygote compiles a pullback from the function's lowered code and refuses
``try``/``catch`` in it (seeds "Limitations" and "Which functions need
rules?")::

    function tryme(x)
      try
        2 * x
      catch e
        throw(e)
      end
    end
    gradient(x -> sum(tryme(x)), rand(3))
    # ERROR: Compiling Tuple{typeof(tryme), Vector{Float64}}: try/catch is not supported.

    function exception(x)
        try
            return x^2
        catch e
            println("could not square input")
        end
    end
    gradient(exception, 3.0)   # ERROR, unless given an rrule whose pullback returns 2*x

mutagrad records operations while the Python code runs, so a ``try`` block is
just code that happens to run: both functions differentiate as written, in
every mode. The seed's rule for ``exception`` is shown too; it returns ``2*x``
without multiplying by ȳ, which is right only for ȳ = 1 (what ``gradient``
uses).

Run: ``python examples/try_except.py``
"""

import numpy as np
from _compare_modes import print_modes, print_section

import mutagrad


def tryme(x):
    try:
        return 2 * x
    except Exception as error:
        raise error


def sum_of_tryme(x):
    return np.sum(tryme(x))


def exception(x):
    try:
        return x**2
    except Exception:
        print("could not square input")


@mutagrad.primitive
def exception_with_rule(x):
    return exception(x)


@mutagrad.rrule(exception_with_rule)
def exception_rule(x):
    """The seed's rrule, unchanged (its pullback ignores ȳ)."""
    y = exception(x)

    def exception_pullback(dy):
        return mutagrad.NoTangent(), 2 * x

    return y, exception_pullback


def main():
    x = np.array([1.0, 2.0, 3.0])
    print_section(f"sum(tryme(x)) at x = {x}")
    print_modes(sum_of_tryme, x)

    print_section("exception(3.0), traced through the try block")
    print_modes(exception, 3.0)

    print_section("exception_with_rule(3.0), with the seed's rrule")
    print_modes(exception_with_rule, 3.0)


if __name__ == "__main__":
    main()
