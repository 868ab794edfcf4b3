"""Differentiating a numerical integral: through the quadrature loop, or with a rule.

The seed ("Which functions need rules?") names numerical integration as the
case where a rule from the fundamental theorem of calculus removes the need
to differentiate through the integrator. Here ``F(x) = ∫_0^x exp(-t²) dt``,
one integral per element of ``x``, by Simpson's rule on ``N`` intervals:

* **traced**: the loop is differentiated as written. It accumulates into
  ``total`` in place, so strict mode (Zygote's rule) refuses it, while poison
  and snapshot modes accept it (no pullback needs the old ``total``). The tape
  holds a few operations per quadrature node, and the gradient is the exact
  derivative of the discretised integral.
* **rule**: ``dF/dx = exp(-x²)``. One ``defvjp`` for the whole integral. Its
  vjp is written with numpy, so it is itself differentiable:
  ``diaghessian`` gives ``-2x·exp(-x²)``.

The timings (``time.perf_counter``, median of 5 repeats of 10 gradient
calls, default poison mode) depend on the machine.

Run: ``python examples/quadrature.py``
"""

import numpy as np
from _compare_modes import format_value, print_modes, print_section
from _timing import median_seconds

import mutagrad

N = 200  # Simpson intervals (even)


def integrand(t):
    return np.exp(-(t**2))


def simpson_from_zero(f, x, n=N):
    """∫_0^x f(t) dt for every element of x, by composite Simpson's rule."""
    h = x / n
    total = f(x * 0.0) + f(x)
    for k in range(1, n):
        total += (4.0 if k % 2 else 2.0) * f(k * h)  # an in-place accumulation
    return total * h / 3.0


def traced(x):
    return np.sum(simpson_from_zero(integrand, x))


@mutagrad.primitive
def gauss_integral(x):
    return simpson_from_zero(integrand, x)


# The fundamental theorem of calculus: d/dx ∫_0^x f(t) dt = f(x).
mutagrad.defvjp(gauss_integral, lambda g, ans, x: g * integrand(x), reads=((0,),))


def with_rule(x):
    return np.sum(gauss_integral(x))


def main():
    x = np.array([0.5, 1.0, 2.0])
    exact = integrand(x)

    print_section(f"∫_0^x exp(-t²) dt by Simpson's rule (N = {N}), traced through the loop")
    loop = print_modes(traced, x)

    print_section("the same integral with a rule from the fundamental theorem of calculus")
    rule = print_modes(with_rule, x)

    agree = all(np.allclose(loop[m].grad[0], exact, atol=1e-9) for m in ("poison", "snapshot"))
    agree &= all(np.allclose(rule[m].grad[0], exact, atol=1e-15) for m in rule)
    print(f"  both agree with exp(-x²), the exact derivative: {agree}")
    (curvature,) = mutagrad.diaghessian(with_rule, x)
    print(f"  second derivative through the rule: {format_value(curvature)}")
    print(f"  matches -2x·exp(-x²): {np.allclose(curvature, -2 * x * exact, atol=1e-15)}")

    operations = len(mutagrad.explain(traced, x, file=None).operations)
    loop_seconds = median_seconds(lambda: mutagrad.gradient(traced, x), repeats=5, calls=10)
    rule_seconds = median_seconds(lambda: mutagrad.gradient(with_rule, x), repeats=5, calls=10)
    print_section("timing (median of 5 repeats of 10 calls)")
    print(f"  traced: {loop_seconds * 1e3:8.3f} ms per gradient ({operations} tape operations)")
    print(f"  rule:   {rule_seconds * 1e3:8.3f} ms per gradient")
    print(f"  the rule is {loop_seconds / rule_seconds:.0f}x faster")


if __name__ == "__main__":
    main()
