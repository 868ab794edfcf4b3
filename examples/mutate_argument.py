"""The seed's ``f!``: a function that overwrites its own argument.

Zygote (seed "Limitations", array mutation)::

    function f!(x)
      x .= 2 .* x
      return x
    end
    gradient(x -> sum(f!(x)), rand(3))
    # ERROR: Mutating arrays is not supported -- called copyto!(Vector{Float64}, ...)

In numpy, ``x .= 2 .* x`` is ``x[:] = 2 * x``. mutagrad's strict mode follows
Zygote's rule and raises MutationError at the write. Poison mode (the
default) accepts it: the pullback of ``2 * x`` needs only the constant 2, not
the old ``x``, so no saved value is lost and the gradient is 2 everywhere.
Snapshot mode has nothing to copy for the same reason.

The caller's array is never changed: mutagrad copies an argument the first
time the differentiated function writes to it.

Run: ``python examples/mutate_argument.py``
"""

import numpy as np
from _compare_modes import print_modes, print_section


def f_(x):
    """The seed's ``f!`` (Python names cannot end in '!'): doubles ``x`` in place."""
    x[:] = 2 * x
    return x


def sum_of_f_(x):
    return np.sum(f_(x))


def main():
    x = np.array([1.0, 2.0, 3.0])
    print_section(f"sum(f!(x)) at x = {x}")
    print_modes(sum_of_f_, x)
    print(f"  the caller's x afterwards: {x} (unchanged: the argument was copied on write)")


if __name__ == "__main__":
    main()
