"""``hook(fn, x)``: ``x`` in the forward pass; ``fn`` called on its cotangent in the backward pass.

``fn`` may return a replacement cotangent (``hook(lambda g: np.clip(g, -1,
1), x)`` clips the gradient flowing into ``x``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mutagrad.core.engine import (
    BackwardPass,
    Node,
    Rule,
    current_trace,
    read_only,
)
from mutagrad.core.record import push
from mutagrad.core.trees import flatten
from mutagrad.diagnostics.sites import user_site
from mutagrad.traced.tangents import share_tangents
from mutagrad.traced.value import (
    WrappedValue,
    node_of,
    wrap,
)


class HookRule(Rule):
    """Identity in the forward pass; calls the user's function on the cotangent."""

    __slots__ = ()
    handles_complex = True  # (the user's function sees the complex cotangent as it is)

    def backward(self, node: Node, g: Any, owned: bool, bk: BackwardPass) -> None:
        (inp,) = node.inputs
        assert inp is not None and node.aux is not None  # (the hooked value's node; its fn)
        g = read_only(g)  # it may be shared with other nodes' cotangents
        replaced = node.aux["fn"](g)
        if inp.tag & bk.bit:
            bk.accumulate(inp, g if replaced is None else replaced)


HOOK = HookRule("hook")


def hook(fn: Callable[[Any], Any], x: Any) -> Any:
    """``x`` in the forward pass; in the backward pass, call ``fn`` on ``x``'s cotangent.

    If ``fn`` returns something other than None, that replaces the cotangent
    (``hook(lambda g: np.clip(g, -1, 1), x)`` clips the gradient flowing
    into ``x``). ``fn`` sees a read-only array; it is called once per backward
    sweep that reaches ``x`` (once per output element in a Jacobian) and not
    at all when no gradient reaches ``x``. Outside a gradient call, or for a
    value that carries no gradient, ``hook`` returns ``x`` itself; otherwise
    it returns a copy of ``x`` that carries the hook.
    """
    trace = current_trace()
    if not isinstance(x, WrappedValue):
        leaves, _ = flatten(x)
        if trace is not None and any(isinstance(leaf, WrappedValue) for leaf in leaves):
            raise TypeError(
                f"hook takes one array or number, not a {type(x).__name__}; hook each "
                "element separately"
            )
        return x
    if trace is None:
        return x
    source = node_of(x, trace.tape)
    if source is None:
        return x
    data = x._raw
    node = Node(HOOK, (source,), trace.tape, source.tag, data, user_site())
    push(node, (), {"fn": fn})
    out = wrap(data.copy() if isinstance(data, np.ndarray) else data, node)
    if trace.forward:  # fn acts on cotangents: the tangents pass unchanged
        share_tangents(x, out, trace.forward)
    return out
