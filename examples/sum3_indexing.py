"""The seed's ``sum3``: three scalar reads from a 30-element array.

Zygote (seed "Which functions need rules?", in-place accumulation)::

    function sum3(array)
        x = array[1]
        y = array[2]
        z = array[3]
        return x+y+z
    end
    @btime gradient(sum3, rand(30))   # 424.510 ns (9 allocations: 2.06 KiB)

    function ChainRulesCore.rrule(::typeof(sum3), a)
        y = sum3(a)
        function sum3_pullback(ȳ)
            grad = zeros(length(a))
            grad[1:3] .+= ȳ
            return NoTangent(), grad
        end
        return y, sum3_pullback
    end
    @btime gradient(sum3, rand(30))   # 192.818 ns (3 allocations: 784 bytes)

Zygote's pullback of ``getindex`` allocates a dense array of zeros with one
non-zero element for every read, and adds them up. The gradient is
``[1, 1, 1, 0, ..., 0]`` (Julia's ``array[1]`` is numpy's ``a[0]``). Reading
never conflicts with any mode, so strict, poison and snapshot all agree.
The timings (median of 7 repeats of 20 calls, poison mode) depend on the
machine.

Run: ``python examples/sum3_indexing.py``
"""

import numpy as np
from _compare_modes import print_modes, print_section
from _timing import median_seconds

import mutagrad


def sum3(a):
    x = a[0]
    y = a[1]
    z = a[2]
    return x + y + z


@mutagrad.primitive
def sum3_with_rule(a):
    return sum3(a)


@mutagrad.rrule(sum3_with_rule)
def sum3_rule(a):
    """The seed's rrule: one dense gradient, written once."""
    y = sum3(a)

    def sum3_pullback(dy):
        grad = np.zeros(len(a))
        grad[0:3] += dy
        return mutagrad.NoTangent(), grad

    return y, sum3_pullback


def main():
    a = np.random.default_rng(0).random(30)
    print_section("sum3(a) on a 30-element array")
    print_modes(sum3, a)

    print_section("sum3_with_rule(a), with the seed's rrule")
    print_modes(sum3_with_rule, a)

    indexing_seconds = median_seconds(lambda: mutagrad.gradient(sum3, a))
    rule_seconds = median_seconds(lambda: mutagrad.gradient(sum3_with_rule, a))
    print_section("timing (median of 7 repeats of 20 calls)")
    print(f"  indexing: {indexing_seconds * 1e6:9.1f} µs per gradient")
    print(f"  rule:     {rule_seconds * 1e6:9.1f} µs per gradient")


if __name__ == "__main__":
    main()
