"""Reading and writing parts of an array, on the tape.

Two engine rules live here, because mutation is made of them:

* :data:`VIEW_READ` – the value of a view (``y[1:3]``, ``y.T``, ``ys[i]``) at
  the base's current version. Its pullback scatters the cotangent into the
  base, sparsely, so reading many small views costs O(view) each.
* :data:`WRITE` – an in-place write: the base's new value is its old value
  with one *place* replaced by the written value::

        base_old ──┐
                   ├─ WRITE(place) ──> base_new
        value ─────┘

  Its pullback hands the written value the cotangent of the place and the old
  base the cotangent with the place zeroed (a structural zero when the place
  is the whole array).

A place is ``(region, index)``: ``region`` a :class:`Region` of the base's
memory (``None`` for "the array itself"), ``index`` an optional numpy index or
boolean mask applied inside it. The linear maps :func:`gather`, :func:`scatter`
and :func:`zero_at` act on places; each is the adjoint of another, so in a
higher-order sweep the pullbacks above are recorded with them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy import ndarray  # (by name: see mutagrad.core.record)

from mutagrad.core.engine import ZERO, BackwardPass, Node, Rule, VjpRule, call_rule
from mutagrad.core.jvps import linear
from mutagrad.core.memory import Region, has_layout, layout_buffer, owned_copy
from mutagrad.core.tangents import BASIC, REGION, SparseCotangent, cotangent_dtype

NO_INDEX = 0
BASIC_INDEX = 1
FANCY_INDEX = 2
MASK_INDEX = 3


def _in_layout(g: ndarray, region: Region | None) -> ndarray:
    if region is None or has_layout(g, region.layout):
        return g
    return owned_copy(g, g.dtype, region.layout)


def _part(buf: ndarray, region: Region | None) -> ndarray:
    return buf if region is None else region.view_of(buf)


def gather_raw(g: ndarray, region: Region | None, kind: int, index: Any) -> ndarray:
    """The cotangent of a place: ``g`` restricted to it (a fresh array)."""
    sub = _part(_in_layout(np.asarray(g), region), region)
    if kind == NO_INDEX:
        return sub.copy()
    if kind == MASK_INDEX:
        return np.where(index, sub, 0)
    out = sub[index]
    return out.copy() if kind == BASIC_INDEX and isinstance(out, ndarray) else out


def scatter_raw(
    c: Any,
    region: Region | None,
    kind: int,
    index: Any,
    shape: tuple[int, ...],
    dtype: np.dtype,
) -> ndarray:
    """A zeros array of ``shape`` with ``c`` added into the place."""
    buf = layout_buffer(shape, dtype, region.layout if region is not None else None)
    if region is not None and region.overlapping:
        # Only a pure region can overlap itself (broadcast_to, sliding windows).
        np.add.at(buf.ravel(order="K"), region.flat_indices(buf.size), c)
        return buf
    sub = _part(buf, region)
    if kind == NO_INDEX:
        sub += c
    elif kind == BASIC_INDEX:
        sub[index] += c
    elif kind == FANCY_INDEX:
        np.add.at(sub, index, c)
    else:
        sub += np.where(index, c, 0)
    return buf


def zero_at_raw(g: ndarray, region: Region | None, kind: int, index: Any) -> ndarray:
    """A copy of ``g`` with the place set to zero."""
    out = owned_copy(g, g.dtype, region.layout if region is not None else None)
    _zero_in_place(out, region, kind, index)
    return out


def _zero_in_place(buf: ndarray, region: Region | None, kind: int, index: Any) -> None:
    sub = _part(buf, region)
    if kind == NO_INDEX:
        sub[...] = 0
    elif kind == MASK_INDEX:
        sub[np.broadcast_to(index, sub.shape)] = 0
    else:
        sub[index] = 0


def _place_kwargs(region: Region | None, kind: int, index: Any) -> dict[str, Any]:
    return {"region": region, "kind": kind, "index": index}


GATHER = VjpRule(
    "gather",
    gather_raw,
    (lambda c, ans, g, region, kind, index: scatter(c, region, kind, index, g.shape, g.dtype),),
    ((),),
    jvp=linear(),
    handles_complex=True,  # (linear, real coefficients)
)
SCATTER = VjpRule(
    "scatter",
    scatter_raw,
    (lambda g, ans, c, region, kind, index, shape, dtype: gather(g, region, kind, index),),
    ((),),
    jvp=linear(),
    handles_complex=True,  # (linear, real coefficients)
)
ZERO_AT = VjpRule(
    "zero_at",
    zero_at_raw,
    (lambda c, ans, g, region, kind, index: zero_at(c, region, kind, index),),
    ((),),
    jvp=linear(),
    handles_complex=True,  # (linear, real coefficients)
)


def gather(g: Any, region: Region | None, kind: int, index: Any) -> Any:
    return call_rule(GATHER, (g,), _place_kwargs(region, kind, index))


def scatter(c: Any, region, kind: int, index: Any, shape, dtype) -> Any:
    kwargs = _place_kwargs(region, kind, index)
    kwargs.update(shape=shape, dtype=cotangent_dtype(np.dtype(dtype)))
    return call_rule(SCATTER, (c,), kwargs)


def zero_at(g: Any, region: Region | None, kind: int, index: Any) -> Any:
    return call_rule(ZERO_AT, (g,), _place_kwargs(region, kind, index))


# ---------------------------------------------------------------------------
# The engine rules.


class ViewReadRule(Rule):
    """The value of a view at the base's current version.

    ``node.saved`` holds the view's and the base's raw arrays, the base's
    version when read and the base itself (for ``explain``); only the arrays'
    addresses are used (to compute the :class:`Region`), never their data.
    """

    __slots__ = ()
    handles_complex = True  # (a linear map: gathers and scatters whole elements)

    def region(self, node: Node) -> Region:
        kwargs = node.aux
        if kwargs is None:
            view, base = node.saved[:2]
            kwargs = node.aux = {"region": Region(view, base)}
        return kwargs["region"]

    def pullback_reads(self, node: Node) -> tuple[Any, ...]:
        return (self.region(node),)  # (not the arrays' data, nor the base's version)

    def backward(self, node: Node, g: Any, owned: bool, bk: BackwardPass) -> None:
        (base_node,) = node.inputs
        if base_node is None or not base_node.tag & bk.bit:
            return
        region = self.region(node)
        if bk.recording and bk.needs_recording(node, g):
            bk.accumulate(
                base_node, scatter(g, region, NO_INDEX, None, base_node.shape, base_node.dtype)
            )
            return
        bk.accumulate_entry(base_node, (REGION, region, g), region.layout)


class WriteRule(Rule):
    """An in-place write of ``value`` into a place of the base.

    ``node.inputs`` is ``(old_base, value)``, either may be ``None`` when
    constant. ``node.aux`` holds the place (``view``/``base`` raw arrays
    until the region is computed, ``kind``, ``index``) and ``winners``: for
    an advanced index with repeated positions, the mask of the value elements
    numpy actually kept (the last write to a position wins).
    """

    __slots__ = ()
    # A linear map of whole elements: a real value written into a complex array gets
    # the real part of its cotangent where its node accumulates it, as any real value.
    handles_complex = True

    def backward(self, node: Node, g: Any, owned: bool, bk: BackwardPass) -> None:
        kw = node.aux
        assert kw is not None
        element = kw["element"]
        if element is not None and not (bk.recording and bk.needs_recording(node, g)):
            self._element_backward(node, g, owned, bk, element)
            return
        region = self.region(node)
        kind, index, winners = kw["kind"], kw["index"], kw["winners"]
        old_input, value_input = node.inputs
        bit = bk.bit
        # The inputs this sweep differentiates (None: a constant, or another level's value).
        value_node = value_input if value_input is not None and value_input.tag & bit else None
        old_node = old_input if old_input is not None and old_input.tag & bit else None
        whole = kind == NO_INDEX and region.covers(node.shape)
        if bk.recording and bk.needs_recording(node, g):
            if value_node is not None:
                gv = gather(g, region, kind, index)
                bk.accumulate(value_node, gv if winners is None else gv * winners)
            if old_node is not None:
                bk.accumulate(old_node, ZERO if whole else zero_at(g, region, kind, index))
            return
        if not (owned and type(g) is ndarray and has_layout(g, region.layout)):
            g = owned_copy(g, cotangent_dtype(node.dtype), region.layout)
        if value_node is not None:
            gv = gather_raw(g, region, kind, index)
            if winners is not None:
                gv = gv * winners
            bk.accumulate(value_node, gv, owned=True)
        if old_node is not None:
            if whole:
                bk.accumulate(old_node, ZERO)
            else:
                _zero_in_place(g, region, kind, index)
                bk.accumulate(old_node, g, owned=True)

    @staticmethod
    def region(node: Node) -> Region:
        """The region written, computed on first use from the place's view and base."""
        kw = node.aux
        assert kw is not None
        region = kw.get("region")
        if region is None:
            region = kw["region"] = Region(kw.pop("view"), kw.pop("base"))
        return region

    def pullback_reads(self, node: Node) -> tuple[Any, ...]:
        """The place written, not the data of its view and base: one element's index
        alone (which fixes its region), else the region and what indexes it."""
        kw = node.aux
        assert kw is not None
        if kw["element"] is not None:
            return (kw["element"],)
        return (self.region(node), kw["kind"], kw["index"], kw["winners"])

    @staticmethod
    def _element_backward(node: Node, g: Any, owned: bool, bk: BackwardPass, key: Any) -> None:
        """``base[key] = value`` for one element (``out[i] = v`` in a loop): index ``g`` directly.

        The same as the general path with the element's Region, which costs
        more than the element: the value gets ``g[key]``, the old value ``g``
        with that element zeroed.
        """
        old_node, value_node = node.inputs
        bit = bk.bit
        if value_node is not None and value_node.tag & bit:
            bk.accumulate(value_node, g[key], owned=True)  # every axis indexed: a scalar
        if old_node is not None and old_node.tag & bit:
            if not (owned and type(g) is ndarray):
                g = np.array(g, dtype=cotangent_dtype(node.dtype), copy=True)
            g[key] = 0
            bk.accumulate(old_node, g, owned=True)


VIEW_READ = ViewReadRule("view")
WRITE = WriteRule("write")


def traced_densify(sparse: SparseCotangent) -> Any:
    """A sparse cotangent with traced values, made dense with recorded scatters."""
    total = None
    for kind, key, value in sparse.entries:
        if kind == REGION:
            part = scatter(value, key, NO_INDEX, None, sparse.shape, sparse.dtype)
        else:
            index_kind = BASIC_INDEX if kind == BASIC else FANCY_INDEX
            part = scatter(value, None, index_kind, key, sparse.shape, sparse.dtype)
        total = part if total is None else total + part
    return total



# ---------------------------------------------------------------------------
# One part of complex elements: z.real and z.imag of a complex array are numpy
# views of half of each element's memory. Reading one is recorded as the view of
# the whole elements (a VIEW_READ of complex values) followed by one of these:
# their vjps, by JAX's convention, are c -> c and c -> -i c (the transposes of
# Re and Im under the pairing Re(u * v)), recorded like any multiplication in a
# higher-order sweep.

# (Re and Im are real-linear: each is its own jvp, applied to the tangent.)
REAL_PART = VjpRule(
    "real", np.real, (lambda g, ans, z: g * (1 + 0j),), ((),),
    jvp=linear(lambda tangents, ans, args, kwargs: np.real(tangents[0])), handles_complex=True,
)  # fmt: skip
IMAG_PART = VjpRule(
    "imag", np.imag, (lambda g, ans, z: g * -1j,), ((),),
    jvp=linear(lambda tangents, ans, args, kwargs: np.imag(tangents[0])), handles_complex=True,
)  # fmt: skip


class _ArrayInterface:
    """An ``__array_interface__`` holder that keeps the memory's owner alive."""

    def __init__(self, interface: dict[str, Any], owner: Any):
        self.__array_interface__ = interface
        self.owner = owner


def complex_elements(part: ndarray, base: ndarray) -> ndarray | None:
    """The complex view of ``base`` whose real or imaginary parts ``part`` views (and
    which part: the returned array's ``.real`` or ``.imag`` is ``part``); None when
    ``part`` is not one part of ``base``'s complex elements."""
    if base.dtype.kind != "c" or part.dtype != np.finfo(base.dtype).dtype:
        return None
    offset = part.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    imag = offset % base.itemsize
    if imag not in (0, part.itemsize) or any(s % base.itemsize for s in part.strides):
        return None
    interface = {
        "data": (part.__array_interface__["data"][0] - imag, False),
        "shape": part.shape,
        "strides": part.strides,
        "typestr": base.dtype.str,
        "version": 3,
    }
    return np.asarray(_ArrayInterface(interface, base))


def is_imaginary_part(part: ndarray, elements: ndarray) -> bool:
    return part.__array_interface__["data"][0] != elements.__array_interface__["data"][0]


# The write of one part of complex elements (z.real[i] = v) is recorded as the write
# of whole elements built from the written part and the other part, read just before:
# its vjps are the transposes of (re, im) -> re + i im: Re(c) and -Im(c).
def _parts_jvp(tangents: list[Any], ans: Any, args: Any, kwargs: Any) -> Any:
    """The tangent of re + i im: the real part's tangent plus i times the imaginary's."""
    t_re, t_im = tangents
    if t_im is None:
        return t_re + 0j
    return 1j * t_im if t_re is None else t_re + 1j * t_im


COMPLEX_FROM_PARTS = VjpRule(
    "complex from parts",
    None,
    (lambda g, ans, re, im: np.real(g), lambda g, ans, re, im: -np.imag(g)),
    ((), ()),
    jvp=linear(_parts_jvp),
    handles_complex=True,
)
