"""The seed's ``g(y) = g!(similar(y), y)``: mutation hidden inside a non-mutating function.

Zygote (seed "Limitations", array mutation)::

    function g!(x, y)
      x .= 2 .* y
      return x
    end
    g(y) = g!(similar(y), y)
    gradient(y -> sum(g(y)), rand(3))   # ERROR: Mutating arrays is not supported

    function g(y)
      x = Zygote.Buffer(y)   # the documented fix
      g!(x, y)
      return copy(x)
    end
    gradient(y -> sum(g(y)), rand(3))   # ([2.0, 2.0, 2.0],)

``g`` does not change its argument; it fills a fresh buffer. Zygote still
refuses, and its documented fix rewrites ``g`` around ``Zygote.Buffer``.

In numpy, ``similar(y)`` is ``np.empty_like(y)``. Strict mode reproduces
Zygote's error, and the Buffer rewrite (``mutagrad.Buffer``) works in every
mode, strict included. Poison mode needs no Buffer and no rewrite: writing
every element of a fresh buffer overwrites nothing a pullback needs, so ``g``
as written gives ``[2. 2. 2.]``.

Run: ``python examples/mutate_fresh_buffer.py``
"""

import numpy as np
from _compare_modes import print_modes, print_section

import mutagrad


def g_(out, y):
    """The seed's ``g!``: writes ``2 * y`` into ``out`` and returns it."""
    out[:] = 2 * y
    return out


def g(y):
    return g_(np.empty_like(y), y)


def g_with_buffer(y):
    """The seed's fix: fill a Buffer, then freeze it with ``copy()``."""
    x = mutagrad.Buffer(y)
    g_(x, y)
    return x.copy()


def sum_of_g(y):
    return np.sum(g(y))


def sum_of_g_with_buffer(y):
    return np.sum(g_with_buffer(y))


def main():
    y = np.array([0.5, -1.0, 4.0])
    print_section(f"sum(g(y)) at y = {y}, g(y) = g!(np.empty_like(y), y), no Buffer")
    print_modes(sum_of_g, y)

    print_section("sum(g(y)) with the seed's fix: g! writes into a mutagrad.Buffer")
    print_modes(sum_of_g_with_buffer, y)


if __name__ == "__main__":
    main()
