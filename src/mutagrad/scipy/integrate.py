"""``mutagrad.scipy.integrate``: ``odeint`` and ``solve_ivp`` by the adjoint method.

The forward solve is SciPy's own (its value bit for bit). The derivative
solves the adjoint system backward in time, between consecutive output
times, with the same SciPy solver: for ``dy/dt = f(y, t, *args)``, the
adjoint ``a`` of ``y`` and the accumulated cotangent ``p`` of the
parameters follow

    da/dt = -a^T df/dy,    dp/dt = -a^T df/dargs,

their vector-Jacobian products taken by mutagrad itself (:func:`mutagrad.vjp`
of the user's ``f``, reverse over reverse when differentiated again). The
output's cotangent at each time is added into ``a`` there. The times get
cotangents too (``g_i . f(y_i, t_i)``, and ``-a(t_0) . f(y_0, t_0)`` for the
first), and every array or number in ``args=`` (a tuple, as SciPy takes it)
is differentiated. The adjoint solve is written with these same functions,
so a second derivative differentiates it in turn (as HIPS autograd's
``odeint`` does). Every other name is ``scipy.integrate``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.integrate as _integrate

from mutagrad.core.engine import VjpRule
from mutagrad.rules.scipy_support import refuse_derivative
from mutagrad.traced.dispatch import apply
from mutagrad.traced.value import holds_wrapped, unwrap
from mutagrad.transforms import vjp as _vjp


def _sizes(args: tuple[Any, ...]) -> list[int]:
    return [int(np.size(a)) for a in args]


def _split(flat: Any, like: tuple[Any, ...]) -> list[Any]:
    """``flat``'s consecutive pieces shaped as the arguments ``like``."""
    pieces, start = [], 0
    for a in like:
        n = int(np.size(a))
        pieces.append(np.reshape(flat[start : start + n], np.shape(a)))
        start += n
    return pieces


def _flat(values: Any) -> Any:
    return np.concatenate([np.ravel(v) for v in values]) if values else np.zeros(0)


def _adjoint_dynamics(func: Callable[..., Any], n: int, args_like: tuple[Any, ...]) -> Any:
    """The augmented system ``[y, a, p]`` whose backward solve gives the cotangents."""

    def dynamics(state, t, *args):
        called_by_scipy = not holds_wrapped((state, t, *args))
        # Copies: SciPy's state and the saved arguments are read-only views, which
        # mutagrad.vjp cannot hand back writable (it freezes its primals while it runs).
        y, a = np.copy(state[:n]), state[n : 2 * n]
        args = tuple(np.copy(v) for v in args)
        dy, back = _vjp(lambda y, *args: func(y, t, *args), y, *args)
        cotangents = back(-a)
        out = np.concatenate([np.ravel(dy), np.ravel(cotangents[0]), _flat(cotangents[1:])])
        # SciPy gets raw arrays back (inside an enclosing gradient call a nested vjp hands
        # back traced constants, which SciPy could not convert); a differentiated second
        # derivative calls this on traced values, and keeps them.
        return unwrap(out) if called_by_scipy else out

    return dynamics


def _adjoint(func, g, ys, y0, t, args, solve):
    """``(cotangent of y0, of t, of each argument)``: the adjoint solve, backward in time.

    ``ys[i]`` is the solution at ``t[i]`` (``ys[0] = y0``) and ``g[i]`` its
    cotangent; ``solve(dynamics, state, t_from, t_to, args)`` integrates the
    augmented system from one output time back to the one before.
    """
    n = int(np.size(y0))
    dynamics = _adjoint_dynamics(func, n, args)
    a = np.zeros(n)
    p = np.zeros(sum(_sizes(args)))
    t_cotangents = []
    for i in range(np.shape(t)[0] - 1, 0, -1):
        t_cotangents.append(np.sum(g[i] * func(ys[i], t[i], *args)))
        a = a + g[i]
        state = solve(dynamics, np.concatenate([np.ravel(ys[i]), a, p]), t[i], t[i - 1], args)
        a, p = state[n : 2 * n], state[2 * n :]
    t_cotangents.append(-np.sum(a * func(y0, t[0], *args)))
    y0_cotangent = np.reshape(a + g[0], np.shape(y0))
    return y0_cotangent, np.stack(t_cotangents[::-1]), _split(p, args)


def _odeint_rule(func: Callable[..., Any], options: dict[str, Any], count: int) -> VjpRule:
    """The rule of ``odeint(func, y0, t, args=(a_1, ..., a_count))`` over ``(y0, t, *args)``."""

    def value(y0, t, *args):
        return _integrate.odeint(func, y0, t, args=tuple(args), **options)

    def solve(dynamics, state, t_from, t_to, args):
        return odeint(dynamics, state, np.stack([t_from, t_to]), args=tuple(args), **options)[-1]

    def vjp(position: int) -> Callable[..., Any]:
        def cotangent(g, ans, y0, t, *args):
            y0_bar, t_bar, args_bar = _adjoint(func, g, ans, y0, t, args, solve)
            return (y0_bar, t_bar, *args_bar)[position]

        return cotangent

    everything = (*range(count + 2), "ans")
    return VjpRule(
        f"scipy.integrate.odeint of {getattr(func, '__name__', 'f')}",
        value,
        tuple(vjp(k) for k in range(count + 2)),
        (everything,) * (count + 2),
        params=False,
    )


def odeint(func: Callable[..., Any], y0: Any, t: Any, args: tuple[Any, ...] = (),
           **options: Any) -> Any:  # fmt: skip
    """``scipy.integrate.odeint``, differentiable in ``y0``, ``t`` and every array of ``args``.

    ``func(y, t, *args)`` is written with numpy, as for SciPy; ``tfirst=True``
    and ``full_output=True`` are SciPy's; with a traced value, the keyword
    options of the solver (``rtol``, ``atol``, ``mxstep``...) apply to the
    adjoint solve too.
    """
    args = args if isinstance(args, tuple) else (args,)
    if not holds_wrapped((y0, t, *args)):
        return _integrate.odeint(func, y0, t, args=args, **options)
    if options.get("tfirst"):
        options = {k: v for k, v in options.items() if k != "tfirst"}
        original = func

        def func(y, t, *args):
            return original(t, y, *args)

    rule = _odeint_rule(func, options, len(args))
    return apply(rule, (y0, t, *args))


def _solve_ivp_rule(fun, t_span, method, t_eval, options, times, count):
    """The rule of ``solve_ivp(...).y`` over ``(y0, *args)``: the times are constants."""

    def value(y0, *args):
        return _integrate.solve_ivp(fun, t_span, y0, method=method, t_eval=t_eval,
                                    args=tuple(args) or None, **options).y  # fmt: skip

    def func(y, t, *args):
        return fun(t, y, *args)

    def solve(dynamics, state, t_from, t_to, args):
        backward = _integrate.solve_ivp if not holds_wrapped((state, *args)) else solve_ivp
        return backward(lambda t, s, *a: dynamics(s, t, *a), (t_from, t_to), state,
                        method=method, args=tuple(args) or None, **options).y[:, -1]  # fmt: skip

    def vjp(position: int) -> Callable[..., Any]:
        def cotangent(g, ans, y0, *args):
            ys, gs = _with_start(np.swapaxes(ans, 0, 1), np.swapaxes(g, 0, 1), y0, times, t_span)
            y0_bar, _, args_bar = _adjoint(func, gs, ys, y0, _times(times, t_span), args, solve)
            return (y0_bar, *args_bar)[position]

        return cotangent

    everything = (*range(count + 1), "ans")
    return VjpRule(
        f"scipy.integrate.solve_ivp of {getattr(fun, '__name__', 'fun')}",
        value,
        tuple(vjp(k) for k in range(count + 1)),
        (everything,) * (count + 1),
        params=False,
    )


def _times(times, t_span):
    """The output times, after the start time when the solver's output omits it."""
    return times if times[0] == t_span[0] else np.concatenate([[t_span[0]], times])


def _with_start(ys, gs, y0, times, t_span):
    if times[0] == t_span[0]:
        return ys, gs
    return (np.concatenate([np.expand_dims(y0, 0), ys]),
            np.concatenate([np.zeros((1, *np.shape(gs)[1:])), gs]))  # fmt: skip


def solve_ivp(fun: Callable[..., Any], t_span: Any, y0: Any, method: str = "RK45",
              t_eval: Any = None, args: Any = None, **options: Any) -> Any:  # fmt: skip
    """``scipy.integrate.solve_ivp``, whose ``.y`` is differentiable in ``y0`` and ``args``.

    ``fun(t, y, *args)`` is written with numpy. The times (``t_span``,
    ``t_eval``, the solver's own steps) are constants; the adjoint solve uses
    the same method and options (``rtol``, ``atol``...). ``dense_output`` and
    ``events`` give SciPy's undifferentiated objects.
    """
    arguments = () if args is None else tuple(args)
    if not holds_wrapped((y0, *arguments)):
        return _integrate.solve_ivp(fun, t_span, y0, method=method, t_eval=t_eval, args=args,
                                    **options)  # fmt: skip
    if holds_wrapped((t_span, t_eval)):
        refuse_derivative("scipy.integrate.solve_ivp", "t_span and t_eval",
                          "the times are constants here; use odeint to differentiate them")
    solution = _integrate.solve_ivp(fun, t_span, unwrap(y0), method=method, t_eval=t_eval,
                                    args=unwrap(args), **options)  # fmt: skip
    rule = _solve_ivp_rule(fun, t_span, method, t_eval, options, solution.t, len(arguments))
    solution.y = apply(rule, (y0, *arguments), None, solution.y)
    return solution


__all__ = ["odeint", "solve_ivp"]


def __getattr__(name: str) -> Any:
    return getattr(_integrate, name)
