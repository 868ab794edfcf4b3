"""Statements that read: elementwise functions, reductions, views, layouts, casts, gathers.

Each defines a new name from the arrays defined before it (:meth:`Renderer.define`):
a function of them, a reduction (with ``where=``, ``initial=``, ``axis=``),
a view (slices with steps, ``.T``, reshape, diagonal), a copy in another
layout or dtype (float32, int, bool, complex), a gather through an index,
mask or ``take``, a product, an ndarray method with keywords, a ufunc method
(``reduce``, ``accumulate``, ``reduceat``, ``outer``), sliding windows, a library
function, a nested gradient call, or a new buffer, mask, index array or
constant that later statements use and mutate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mutagrad.testing.fuzz.grammar.expressions import (
    FLOATING,
    REAL,
    array_literal,
    fancy_keys,
    mask_literal,
    numpy_result,
    promote,
    regions,
)
from mutagrad.testing.fuzz.grammar.renderer import Draw, Renderer
from mutagrad.testing.fuzz.grammar.steps import step


@step("unary")
def step_unary(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d, FLOATING, known=False)
    if a is None:
        return False
    text, shape = a.name, a.shape
    if a.shape and d.chance(40):
        region, shape = d.pick(regions(a.shape))
        text += region
    if a.dtype == "c16":
        forms = [
            "{0} * {0}",
            "0.5 * {0} + 0.25",
            "np.exp(0.3 * {0})",
            "{0} * 1j",
            "np.conj({0})",
        ]
    else:
        forms = [
            *("np.sin({0})", "np.cos({0})", "np.tanh({0})", "0.5 * {0} + 0.25", "{0} * {0}"),
            *("np.exp(0.3 * {0})", "np.sqrt({0} * {0} + 1.0)", "np.log1p({0} * {0})"),
            *("np.square({0})", "-{0}", "np.abs({0})", "{0}.clip(-1.0, 1.0)", "np.arctan({0})"),
        ]
    prefix = "s" if shape == () else "t"
    role = "scalar" if shape == () and a.dtype != "c16" else "array"
    if shape == () and role == "array":
        shape = None  # a complex number: kept as an array-like value
    r.define(prefix, d.pick(forms).format(text), shape, a.dtype, role=role)
    return True


@step("binary")
def step_binary(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d, FLOATING)
    if a is None:
        return False
    same = r.find(dtypes=(*FLOATING, "i8"), shape=a.shape)
    b = d.pick(same) if same and d.chance(75) else None
    other = b.name if b is not None else r.scalar(d)
    dtype = promote(a.dtype, b.dtype if b is not None else "f8")
    forms = ["{0} + {1}", "{0} - {1}", "{0} * {1}", "{0} / (1.5 + {1} * {1})"]
    if dtype != "c16":
        forms += ["np.maximum({0}, {1})", "np.minimum({1}, {0})"]
    r.define("t", d.pick(forms).format(a.name, other), a.shape, dtype)
    return True


@step("reduce")
def step_reduce(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d, FLOATING, known=False)
    if a is None:
        return False
    text = a.name
    if a.shape and d.chance(40):
        text += d.pick(regions(a.shape))[0]
    if a.dtype == "c16":
        forms = ["np.sum(np.abs({0}))", "np.sum({0}).real", "np.abs(np.sum({0}))"]
    else:
        forms = [
            *("np.sum({0})", "np.mean({0})", "{0}.sum()", "np.sum(np.sin({0}) * {0})"),
            *("{0}.prod()", "np.max({0})", "{0}.max(initial=0.0)", "{0}.sum(initial=1.0)"),
            *("{0}.min()", "np.linalg.norm({0} + 3.0)", "np.dot(np.ravel({0}), np.ravel({0}))"),
            *("{0}.var()", "np.var({0})", "{0}.mean()", "np.sum({0} ** 3)"),
        ]
    r.define("s", d.pick(forms).format(text), (), "f8", role="scalar")
    return True


@step("reduce with where")
def step_reduce_with_where(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d)
    if a is None or not a.shape:
        return False
    m = r.mask_for(d, a.shape).name
    forms = [
        *("np.sum({0}, where={1})", "{0}.sum(where={1})", "np.mean({0}, where={1})"),
        *("{0}.max(where={1}, initial=-5.0)", "np.sum(np.sin({0}), where={1})"),
        *("np.min({0}, where={1}, initial=5.0)", "np.prod({0}, where={1})"),
        "np.sum({0}, where={1}, initial=0.5)",
    ]
    r.define("s", d.pick(forms).format(a.name, m), (), "f8", role="scalar")
    return True


@step("axis reduce")
def step_axis_reduce(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d)
    if a is None or not a.shape:
        return False
    if len(a.shape) == 2:
        rows, cols = a.shape
        forms = [
            ("np.sum({0}, axis=0)", (cols,)),
            ("{0}.mean(axis=1)", (rows,)),
            ("np.cumsum({0}, axis=0)", a.shape),
            ("{0}.max(axis=0)", (cols,)),
            ("np.prod({0}, axis=1)", (rows,)),
            ("{0}.sum(axis=0, keepdims=True)", (1, cols)),
            ("np.cumsum({0})", (rows * cols,)),
        ]
    else:
        n = a.shape[0]
        forms = [
            ("np.cumsum({0})", (n,)),
            ("{0}.cumsum()", (n,)),
            ("np.diff({0})", (n - 1,)),
            ("{0}[1:] - {0}[:-1]", (n - 1,)),
            ("np.cumprod(0.5 * {0})", (n,)),
        ]
    form, shape = d.pick(forms)
    r.define("t", form.format(a.name), shape, a.dtype)
    return True


@step("element read")
def step_element_read(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d)
    if a is None or not a.shape:
        return False
    index = tuple(d.number() % (2 * n) - n for n in a.shape)
    if len(a.shape) == 2 and d.chance(35):
        r.define(
            "r",
            f"{a.name}[{index[0]}]",
            a.shape[1:],
            a.dtype,
            view=True,
            writable=a.writable,
            argument_memory=a.argument_memory,
        )
        return True
    text = ", ".join(str(i) for i in index)
    r.define("s", f"{a.name}[{text}]", (), a.dtype, role="scalar")
    return True


@step("view")
def step_view(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d, FLOATING)
    if a is None or not a.shape:
        return False
    probe = np.empty(a.shape)
    forms: list[tuple[str, tuple[int, ...], bool]] = [
        (text, shape, True) for text, shape in regions(a.shape) if shape
    ]
    forms += [
        (".T", probe.T.shape, True),
        (".reshape(-1)", (probe.size,), True),
        (".ravel()", (probe.size,), True),
        (".view()", a.shape, True),
    ]
    if len(a.shape) == 2:
        forms += [
            (".diagonal()", probe.diagonal().shape, False),
            (".swapaxes(0, 1)", probe.T.shape, True),
            ("[::-1, ::-1]", a.shape, True),
        ]
    if a.dtype == "c16":
        forms += [(".real", a.shape, True), (".imag", a.shape, True)]
    text, shape, writable = d.pick(forms)
    dtype = "f8" if text in (".real", ".imag") else a.dtype
    r.define(
        "v",
        a.name + text,
        shape,
        dtype,
        view=True,
        writable=writable and a.writable,
        argument_memory=a.argument_memory,
    )
    return True


@step("layout")
def step_layout(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d)
    if a is None or not a.shape:
        return False
    probe = np.empty(a.shape)
    forms: list[tuple[str, tuple[int, ...], bool]] = [
        ("np.asfortranarray({0})", a.shape, True),
        ("np.copy({0}, order='F')", a.shape, False),
        ("{0}.T * 1.0", probe.T.shape, False),
        ("{0}.copy(order='F')", a.shape, False),
        ("np.ascontiguousarray({0}[::-1])", a.shape, False),
        ("{0}[::-1].copy()", a.shape, False),
        ("np.copy({0}, order='K')", a.shape, False),
        ("{0}[::2].copy()", probe[::2].shape, False),
    ]
    if len(a.shape) == 2:
        forms.append(("np.asfortranarray({0}[:, ::-1])", a.shape, False))
    form, shape, may_alias = d.pick(forms)
    r.define(
        "t",
        form.format(a.name),
        shape,
        a.dtype,
        argument_memory=may_alias and a.argument_memory,
    )
    return True


@step("cast")
def step_cast(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d)
    if a is None:
        return False
    form, dtype, role = d.pick(
        [
            ("{0}.astype(np.float32)", "f4", "array"),
            ("{0}.astype(np.int64)", "i8", "array"),
            ("(2.0 * {0}).astype(int)", "i8", "array"),
            ("np.float32(2.0) * {0}", "f4", "array"),
            ("{0}.astype(np.float64)", "f8", "array"),
            ("np.round({0}, 1)", a.dtype, "array"),
            ("({0} > 0.5)", "b1", "mask"),
        ]
    )
    prefix = {"f4": "h", "i8": "i", "b1": "m"}.get(dtype, "t")
    r.define(prefix, form.format(a.name), a.shape, dtype, role=role)
    return True


@step("complex")
def step_complex(r: Renderer, d: Draw) -> bool:
    complex_arrays = r.find(dtypes=("c16",))
    if complex_arrays and d.chance(30):  # complex to complex: transforms with complex rules
        c = d.pick([v for v in complex_arrays if v.shape] or complex_arrays)
        forms = ["np.conj({0}) * {0}", "np.sqrt({0} + 2.0)", "np.exp({0}) / (1.0 + 1j)"]
        if c.shape:
            forms += ["np.fft.fft({0}, axis=-1)", "np.fft.ifft({0}, axis=0)",
                      "np.cumsum({0}, axis=-1)", "np.sort({0}, axis=-1)"]  # fmt: skip
        r.define("c", d.pick(forms).format(c.name), c.shape, "c16")
        return True
    if complex_arrays and d.chance(50):
        c = d.pick(complex_arrays)
        form = d.pick(
            [
                "np.abs({0})",
                "np.real({0})",
                "{0}.real * 1.0",
                "np.imag({0})",
                "({0} * np.conj({0})).real",
                "np.angle({0})",
            ]
        )
        r.define("t", form.format(c.name), c.shape, "f8")
        return True
    a = r.pick_array(d)
    if a is None:
        return False
    same = r.find(dtypes=REAL, shape=a.shape)
    form = d.pick(
        [
            "{0} * 1j",
            "{0} + 0.5j * {1}",
            "np.exp(1j * {0})",
            "{0}.astype(np.complex128)",
            "{0} * (1.0 + 2.0j)",
        ]
    )
    other = d.pick(same).name if same else a.name
    r.define("c", form.format(a.name, other), a.shape, "c16")
    return True


@step("gather")
def step_gather(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d, FLOATING)
    if a is None or not a.shape:
        return False
    forms: list[tuple[str, Any]] = [(a.name + text, shape) for text, shape in fancy_keys(a.shape)]
    if int(np.prod(a.shape)) >= 2:
        forms.append((f"{a.name}.take([1, 0, 1])", (3,)))
    for k in r.find(("index",), dtypes=("i8",), known=False):
        if k.bound == a.shape[0]:
            forms.append(
                (f"{a.name}[{k.name}]", None if k.shape is None else k.shape + a.shape[1:])
            )
        if k.bound == int(np.prod(a.shape)):
            forms.append((f"np.take({a.name}, {k.name})", k.shape))
    for m in r.find(("mask",), dtypes=("b1",), shape=a.shape):
        forms.append((f"{a.name}[{m.name}]", None))
        other = r.operand(d, a.shape, REAL if a.dtype != "c16" else FLOATING)
        forms.append((f"np.where({m.name}, {a.name}, {other})", a.shape))
    text, shape = d.pick(forms)
    r.define("t", text, shape, a.dtype)
    return True


@step("sort read")
def step_sort_read(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d)
    if a is None or not a.shape:
        return False
    size = int(np.prod(a.shape))
    form, shape, dtype = d.pick(
        [
            ("np.sort({0})", a.shape, a.dtype),
            ("np.sort({0}, axis=0)", a.shape, a.dtype),
            ("np.partition({0}, 1)", a.shape, a.dtype),
            ("np.sort({0}.ravel())[::-1]", (size,), a.dtype),
            ("np.sort({0}.ravel()).searchsorted({1})", a.shape, "i8"),
            ("np.median({0})", (), a.dtype),
        ]
    )
    other = d.pick(r.find(dtypes=REAL, shape=a.shape)).name
    role = "scalar" if shape == () else "array"
    r.define("i" if dtype == "i8" else "t", form.format(a.name, other), shape, dtype, role=role)
    return True


@step("product")
def step_product(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d, ndim=2) or r.pick_array(d, ndim=1)
    if a is None:
        return False
    b = d.pick(r.find(dtypes=REAL, shape=a.shape))
    if len(a.dims) == 1:
        n = a.dims[0]
        form, shape = d.pick([("np.outer({0}, {1})", (n, n)), ("np.dot({0}, {1})", ())])
    else:
        rows, cols = a.dims
        forms: list[tuple[str, tuple[int, ...]]] = [
            ("{0} @ {0}.T", (rows, rows)),
            ("{0}.T @ {1}", (cols, cols)),
            ("np.dot({0}, {1}.T)", (rows, rows)),
            ("np.matmul({1}.T, {0})", (cols, cols)),
        ]
        if rows == cols:
            forms.append(("{0} @ {1}", a.dims))
        form, shape = d.pick(forms)
    role = "scalar" if shape == () else "array"
    r.define(
        "s" if shape == () else "t",
        form.format(a.name, b.name),
        shape,
        promote(a.dtype, b.dtype),
        role=role,
    )
    return True


@step("new buffer")
def step_new_buffer(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d)
    if a is None or not a.shape:
        return False
    form = d.pick(
        [
            *("np.zeros_like({0})", "np.ones_like({0})", "{0}.copy()", "{0} * 1.0"),
            *("np.full_like({0}, 0.5)", "np.copy({0})", "np.zeros({1})"),
            "np.empty_like({0})",
        ]
    )
    contents = r.operand(d, a.shape)  # drawn before the buffer exists: never its garbage
    var = r.define("y", form.format(a.name, a.shape), a.shape, a.dtype)
    if form.startswith("np.empty_like"):
        r.write(f"{var.name}[...] = {contents}")
    return True


@step("new mask")
def step_new_mask(r: Renderer, d: Draw) -> bool:
    shape = r.shape
    same = r.find(dtypes=REAL, shape=shape)
    if same and d.chance(50):
        a = d.pick(same).name
        form = d.pick(["{0} > 0.5", "np.abs({0}) < 1.0", "~({0} > 0.0)", "np.isfinite({0})"])
        if len(same) > 1 and d.chance(30):
            form = "{0} < " + d.pick(same).name
        expression = form.format(a)
    else:
        expression = mask_literal(shape, d.number())
    r.define("m", expression, shape, "b1", role="mask")
    return True


@step("new index")
def step_new_index(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d)
    if a is None or not a.shape:
        return False
    n = a.shape[0]
    choice = d.number() % 5
    if choice == 0 and len(a.shape) == 1:
        r.define("k", f"np.argsort({a.name})", a.shape, "i8", role="index", bound=n)
    elif choice == 1:
        size = int(np.prod(a.shape))
        r.define("k", f"np.argsort({a.name}.ravel())", (size,), "i8", role="index", bound=size)
    elif choice == 2:
        r.define("k", f"np.arange({n})[::-1].copy()", (n,), "i8", role="index", bound=n)
    elif choice == 3 and len(a.shape) == 1:
        m = r.mask_for(d, a.shape).name
        r.define("k", f"np.nonzero({m})[0]", None, "i8", role="index", bound=n)
    else:
        positions = [d.number() % n for _ in range(1 + d.number() % (n + 1))]
        r.define("k", f"np.array({positions})", (len(positions),), "i8", role="index", bound=n)
    return True


@step("new constant")
def step_new_constant(r: Renderer, d: Draw) -> bool:
    shape = r.shape
    size = int(np.prod(shape))
    expression = d.pick(
        [
            array_literal([0.25 + 0.5 * ((d.number() + k) % 5) for k in range(size)], shape),
            f"np.full({shape}, 0.75)",
            f"np.linspace(0.5, 1.5, {size}).reshape({shape})",
            "np.array(0.5)",
        ]
    )
    shape_of = () if expression == "np.array(0.5)" else shape
    r.define("c", expression, shape_of, "f8", role="constant")
    return True


@step("use constant")
def step_use_constant(r: Renderer, d: Draw) -> bool:
    if not r.find(("constant",), dtypes=("f8",)):
        step_new_constant(r, d)
    c = d.pick(r.find(("constant",), dtypes=("f8",)))
    same = r.find(dtypes=REAL, shape=c.shape or r.shape)
    if not same:
        return False
    a = d.pick(same)
    form = d.pick(
        [
            *("{0} * {1}", "{0} + {1}", "np.maximum({0}, {1})", "{0} / {1}"),
            *("np.where({0} > {1}, {0}, {1})", "np.full_like({0}, {1}) * {0}"),
        ]
    )
    r.define("t", form.format(a.name, c.name), a.shape, a.dtype)
    return True


@step("method call")
def step_method_call(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d)
    if a is None or not a.shape:
        return False
    form = d.pick(
        [
            *("{a}.sum(axis=0, keepdims=True)", "{a}.sum(where={m}, initial=0.5)"),
            *("{a}.mean(axis=-1, where={m})", "{a}.max(axis=0, initial=-5.0, where={m})"),
            *("{a}.min(initial=5.0)", "{a}.prod(axis=0)", "{a}.cumsum(axis=0)"),
            *("{a}.cumprod()", "{a}.clip(min=-1.0)", "{a}.clip(max=1.0)", "{a}.round(1)"),
            *("{a}.var(ddof=1)", "{a}.ptp()", "{a}.flatten(order='F')"),
            *("{a}.ravel(order='F')", "{a}.reshape(-1, order='F')", "{a}.copy(order='A')"),
            *("{a}.astype(np.float64, copy=False)", "{a}.repeat(2, axis=0)", "{a}.trace()"),
            *("{a}.take([0, 0], axis=0)", "{a}.diagonal(offset=1)", "{a}.squeeze()"),
            *("{a}.transpose()", "{a}.swapaxes(-1, 0)", "{a}.conj()", "{a}.conjugate()"),
            *("{a}.item(0)", "np.sum({a}.tolist())", "{a}.argmax(axis=0)", "{a}.all()"),
            *("{a}.nonzero()[0]", "{a}.any(axis=0)", "{a}.dot({b}.T)"),
            "np.sort({a}.ravel()).searchsorted({b}, side='right')",
        ]
    )
    probe = numpy_result(form.format(a="a", b="a", m="(a > 1.0)"), a.shape)
    if probe is None:
        return False
    mask = r.mask_for(d, a.shape).name if "{m}" in form else ""
    other = d.pick(r.find(dtypes=REAL, shape=a.shape)).name
    r.define_like(form.format(a=a.name, b=other, m=mask), probe, a)
    return True


@step("view function")
def step_view_function(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d, FLOATING)
    if a is None or not a.shape:
        return False
    form = d.pick(
        [
            *("np.flip({a})", "np.flip({a}, axis=-1)", "np.rot90({a})"),
            *("np.moveaxis({a}, 0, -1)", "np.expand_dims({a}, 0)", "{a}[None]"),
            *("{a}[..., None]", "np.atleast_2d({a})", "np.diag({a})", "np.squeeze({a})"),
            *("np.broadcast_to({a}, (2, *{a}.shape))", "{a}.reshape({a}.shape[0], -1)"),
            *("np.ravel({a}, order='F')", "{a}.T.reshape(-1)", "np.asarray({a})"),
            *("np.reshape({a}, -1)", "np.transpose({a})", "np.real({a})"),
        ]
    )
    probe = numpy_result(form.format(a="a"), a.shape)
    if probe is None:
        return False
    r.define_like(form.format(a=a.name), probe, a)
    return True


# Binary ufuncs whose methods mutagrad differentiates (rules/ufunc_methods.py); inputs on
# the value grid keep them smooth (divide and power: a positive shift away from zero).
_METHOD_UFUNCS = ("add", "subtract", "multiply", "maximum", "minimum", "fmax", "logaddexp",
                  "hypot", "divide", "power", "arctan2")  # fmt: skip


@step("ufunc method")
def step_ufunc_method(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d, FLOATING)
    if a is None or not a.shape or a.dtype == "c16":
        return False
    ufunc = d.pick(_METHOD_UFUNCS)
    x = "(2.5 + {a})" if ufunc in ("divide", "power", "arctan2") else "{a}"
    forms = [
        f"np.{ufunc}.reduce({x})",
        f"np.{ufunc}.reduce({x}, axis=-1, keepdims=True)",
        f"np.{ufunc}.accumulate({x})",
        f"np.{ufunc}.accumulate({x}, axis=-1)",
        f"np.{ufunc}.reduceat({x}, [0, 2, 1], axis=0)",
        f"np.{ufunc}.outer({x}[0], {x}[-1])",
        f"np.{ufunc}.reduce({x}, axis=None)",
        f"np.{ufunc}.reduce({x}, axis=0, initial=0.75)",
    ]
    if a.shape[0] > 1:
        forms.append(f"np.{ufunc}.reduce({x}[::-1], axis=0, where={{m}}, initial=0.5)")
    form = d.pick(forms)
    m = ""
    if "{m}" in form:
        m = r.mask_for(d, a.shape[1:] or a.shape).name
    probe = numpy_result(form.format(a="a", m="np.ones(a.shape[1:] or a.shape, bool)"), a.shape)
    if probe is None:
        return False  # numpy refuses it (reduceat past the end, several axes of subtract...)
    r.define_like(form.format(a=a.name, m=m), probe, a)
    return True


@step("window view")
def step_window_view(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d, FLOATING)
    if a is None or not a.shape:
        return False
    form = d.pick(
        [
            "np.lib.stride_tricks.sliding_window_view({a}, 2, axis=0)",
            "np.lib.stride_tricks.sliding_window_view({a}, 2, axis=-1)",
            "np.lib.stride_tricks.sliding_window_view({a}[::-1], 2, axis=0).sum(axis=-1)",
            "np.lib.stride_tricks.sliding_window_view({a}, {a}.shape)",
        ]
    )
    probe = numpy_result(form.format(a="a"), a.shape)
    if probe is None:
        return False
    r.define_like(form.format(a=a.name), probe, a)
    return True


@step("library read")
def step_library_read(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d)
    if a is None or not a.shape:
        return False
    form = d.pick(
        [
            *("np.concatenate([{a}, {a}[::-1]])", "np.stack([{a}, {b}])", "np.tile({a}, 2)"),
            *("np.add.reduce({a}, axis=0)", "np.add.accumulate({a}, axis=0)"),
            *("np.maximum.accumulate({a}, axis=0)", "np.multiply.reduce({a}, axis=-1)"),
            *(
                "np.pad({a}, 1, mode='reflect')",
                "np.roll({a}, 1, axis=0)",
                "np.diff({a}, axis=0)",
            ),
            *("np.einsum('ij,ij->i', {a}, {b})", "np.einsum('i...->...', {a})"),
            *(
                "np.linalg.solve({a} @ {a}.T + 3.0 * np.eye(len({a})), {a})",
                "np.trapezoid({a})",
            ),
            *("np.where({a} > 0.5, {a}, {b})", "np.take_along_axis({a}, np.argsort({b}), -1)"),
        ]
    )
    probe = numpy_result(form.format(a="a", b="a"), a.shape)
    if probe is None:
        return False
    other = d.pick(r.find(dtypes=REAL, shape=a.shape)).name
    r.define_like(form.format(a=a.name, b=other), probe, a)
    return True


@step("nested gradient")
def step_nested_gradient(r: Renderer, d: Draw) -> bool:
    a = r.pick_array(d, ("f8",))
    if a is None or not a.shape:
        return False
    h = r.name("h")
    body = d.pick(
        [
            ["return np.sum(np.sin(z) * z)"],
            ["w = z * 1.0", "w[0] = np.sin(w[-1])", "return np.sum(w * z)"],
            ["w = np.zeros_like(z)", "w[...] = z * z", "return np.sum(np.tanh(w))"],
            ["z = z * 1.0", "z *= z", "return np.sum(np.cos(z))"],
            ["w = np.sort(z, axis=-1)", "return np.sum(w * np.cos(z))"],
        ]
    )
    mode = d.pick(["", ', mode="snapshot"'])
    r.lines.append(f"def {h}(z):")
    r.lines += [f"    {line}" for line in body]
    expression = f"mutagrad.gradient({h}, {a.name}{mode})[0]"
    if d.chance(50):
        r.define("s", f"np.sum({expression} * {a.name})", (), "f8", role="scalar")
    else:
        r.define("t", expression, a.shape, "f8")
    return True
