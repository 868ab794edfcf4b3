"""A small corpus for the report's tests, loaded by path (``--corpus <this file>``).

Four programs with known outcomes, one of each kind:

* ``fresh buffer`` – an easy case: strict refuses, poison and snapshot accept;
* ``fill after x*x`` – a genuine poison error (multiply needs the old ``x``);
* ``rewrite same value`` – a false alarm: ``x[0] = x[0]`` poisons sin's capture
  of ``x`` without changing it;
* ``pure`` – no mutation: every mode accepts.

It also shows the dict form of corpus entries next to :class:`Program`.
"""

from __future__ import annotations

import numpy as np

from mutagrad.report import Program


def fresh_buffer(x):
    b = np.empty_like(x)
    b[:] = np.sin(x) + 1
    return np.sum(b)


def fill_after_square(x):
    y = x * x
    x.fill(0)
    return np.sum(y)


def rewrite_same_value(x):
    y = np.sin(x)
    x[0] = x[0]
    return np.sum(y)


def pure(x):
    return np.sum(np.sin(x) * x)


POINT = np.array([0.3, -1.2, 0.8, 2.0])

CORPUS = [
    Program(
        name="fresh buffer",
        category="buffer-loop",
        description="b = np.empty_like(x); b[:] = sin(x) + 1",
        function=fresh_buffer,
        args=(POINT,),
        mutates=True,
        zygote="error: mutation",
    ),
    Program(
        name="fill after x*x",
        category="seed",
        description="y = x * x; x.fill(0); sum(y)",
        function=fill_after_square,
        args=(POINT,),
        mutates=True,
        note="genuine",
    ),
    {
        "name": "rewrite same value",
        "category": "scratch",
        "description": "y = sin(x); x[0] = x[0]; sum(y)",
        "function": rewrite_same_value,
        "args": (POINT,),
        "mutates": True,
        "note": "false alarm",
    },
    Program(
        name="pure",
        category="pure",
        description="sum(sin(x) * x)",
        function=pure,
        args=(POINT,),
        mutates=False,
    ),
]
