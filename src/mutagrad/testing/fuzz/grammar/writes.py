"""Statements that write in place: every way numpy code mutates an array.

setitem through slices, masks and repeated fancy indexes; augmented
operators; Python lists and tuples of traced values; ``np.copyto``,
``np.put``, ``np.place``, ``np.putmask``, ``np.fill_diagonal``,
``np.put_along_axis``, ``ufunc.at``; ``out=`` aliasing an input (ufuncs,
reductions, library functions); ``.sort()``, ``.partition()``, ``.fill()``,
``.flat``; writes through views; mutating masks, index arrays and constants
after a pullback captured them; int, complex and float32 arrays;
``mutagrad.checkpointed`` blocks that write their argument; and writes to
views of the caller's array made before the call.
"""

from __future__ import annotations

import numpy as np

from mutagrad.testing.fuzz.grammar.expressions import (
    FLOATING,
    REAL,
    fancy_keys,
    numpy_result,
    regions,
)
from mutagrad.testing.fuzz.grammar.reads import (
    step_new_index,
    step_reduce_with_where,
    step_use_constant,
    step_view,
)
from mutagrad.testing.fuzz.grammar.renderer import Draw, Renderer
from mutagrad.testing.fuzz.grammar.steps import step


@step("setitem")
def step_setitem(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    text, shape = d.pick(regions(t.shape))
    r.write(f"{t.name}{text} = {r.operand(d, shape)}")
    return True


@step("augmented")
def step_augmented(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    text, shape = ("", t.dims) if d.chance(40) else d.pick(regions(t.dims))
    value = r.operand(d, shape)
    operator = d.pick(["+=", "-=", "*=", "/="])
    if operator == "/=":
        value = f"1.5 + ({value}) ** 2"
    r.write(f"{t.name}{text} {operator} {value}")
    return True


@step("mask write")
def step_mask_write(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    m = r.mask_for(d, t.dims).name
    same = r.find(dtypes=REAL, shape=t.shape)
    form = d.pick(
        [
            *("{0}[{1}] = {2}[{1}]", "{0}[{1}] = {3}", "{0}[{1}] = 0.5", "{0}[{1}] += 1.0"),
            *(
                "{0}[{1}] *= {3}",
                "{0}[~{1}] = np.sin({0}[~{1}])",
                "np.copyto({0}, {2}, where={1})",
            ),
            "{0}[{1}] = {0}[{1}][::-1]",
            "{0}[{1}] = np.cos({2})[{1}]",
        ]
    )
    r.write(form.format(t.name, m, d.pick(same).name, r.scalar(d)))
    return True


@step("fancy write")
def step_fancy_write(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    keys: list[tuple[str, tuple[int, ...] | None]] = list(fancy_keys(t.dims))
    keys += [
        (f"[{k.name}]", None if k.shape is None else k.shape + t.dims[1:])
        for k in r.find(("index",), dtypes=("i8",), known=False)
        if k.bound == t.dims[0]
    ]
    if not keys:
        return False
    text, shape = d.pick(keys)
    operator = d.pick(["=", "=", "+="])
    value = r.operand(d, shape) if shape is not None else r.scalar(d)
    if d.chance(25):
        value = f"np.cos({t.name}{text})"
    r.write(f"{t.name}{text} {operator} {value}")
    return True


@step("list write")
def step_list_write(r: Renderer, d: Draw) -> bool:
    t = r.target(d, dtypes=("f8",))
    if t is None or min(t.dims) < (3 if len(t.dims) == 1 else 2):
        return False

    def items(count: int) -> str:
        return ", ".join(r.scalar(d) for _ in range(count))

    if len(t.dims) == 1:
        n = t.dims[0]
        forms = [
            f"{{0}}[:2] = [{items(2)}]",
            f"{{0}}[:1] = [{items(1)}]",
            f"{{0}}[[0, 2]] = [{items(2)}]",
            f"{{0}}[1:3] = ({items(2)})",
            f"np.copyto({{0}}, [{items(n)}])",
            f"{{0}}[...] = [{items(n)}]",
            f"np.put({{0}}, [0, 1], [{items(2)}])",
            f"np.place({{0}}, {{0}} > 0.0, [{items(2)}])",
            f"np.put_along_axis({{0}}, np.array([2, 0]), [{items(2)}], axis=0)",
        ]
    else:
        rows, cols = t.dims
        same_rows = [
            v.name
            for v in r.find(dtypes=("f8",), ndim=2)
            if v.dims[1] == cols > 0 and v.dims[0] >= 2
        ]
        row_a, row_b = d.pick(same_rows), d.pick(same_rows)
        nested = ", ".join(f"[{items(2)}]" for _ in range(2))
        forms = [
            f"{{0}}[0] = [{items(cols)}]",
            f"{{0}}[:2, :2] = [{nested}]",
            f"{{0}}[:2] = [{row_a}[1], {row_b}[0]]",
            f"{{0}}[:, 0] = [{items(rows)}]",
            f"np.copyto({{0}}[0], [{items(cols)}])",
            "np.put_along_axis({0}, np.array("
            + repr([[k % cols] for k in range(rows)])
            + f"), [{', '.join(f'[{items(1)}]' for _ in range(rows))}], axis=1)",
            f"{{0}}[0] = ({items(cols)})",
        ]
    r.write(d.pick(forms).format(t.name))
    return True


@step("copyto")
def step_copyto(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    forms = [
        f"np.copyto({{0}}, {r.operand(d, t.dims)})",
        "np.copyto({0}, {0}[::-1])",
        "np.copyto({0}[1:], {0}[:-1])",
        "np.copyto({0}[:-1], {0}[1:])",
        f"np.copyto({{0}}, {r.scalar(d)})",
        f"np.copyto({{0}}, {r.operand(d, t.dims)}, where={{mask}})",
    ]
    if len(t.dims) == 2 and t.dims[0] == t.dims[1]:
        forms.append("np.copyto({0}, {0}.T)")
    r.write_with_mask(d, d.pick(forms), t)
    return True


@step("put")
def step_put(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    size = int(np.prod(t.dims))
    i, j = d.number() % size, d.number() % size
    sources = [v for v in r.find(dtypes=REAL) if v.shape and np.prod(v.shape) >= 2]
    if not sources:  # every array has one element (the fuzzer's shapes never have)
        return False
    flat = f"{d.pick(sources).name}.ravel()[:2]"
    forms = [
        f"np.put({{0}}, [{i}, {j}], {flat})",
        f"{{0}}.put([{i}, {i}], {flat})",
        f"np.put({{0}}, [{i}], {r.scalar(d)})",
        f"np.put({{0}}, [{i}, {j}], {{0}}.ravel()[::-1][:2])",
        f"np.put({{0}}, [-1, {size + j}], {flat}, mode='wrap')",
    ]
    forms += [
        f"np.put({{0}}, {k.name}, {r.scalar(d)})"
        for k in r.find(("index",), dtypes=("i8",), known=False)
        if k.bound <= size
    ]
    r.write(d.pick(forms).format(t.name))
    return True


@step("place")
def step_place(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    m = r.mask_for(d, t.dims).name
    sources = [v for v in r.find(dtypes=REAL) if v.shape and np.prod(v.shape) >= 2]
    if not sources:  # every array has one element (the fuzzer's shapes never have)
        return False
    values = d.pick(
        [
            "{0}.ravel()[:2]" if len(t.dims) == 2 else "{0}[:2]",
            "{0}[0]" if len(t.dims) == 2 else "{0}[::-1]",
            f"{d.pick(sources).name}.ravel()[:3]",
            f"[{r.scalar(d)}, 0.5]",
            f"np.sin({d.pick(sources).name}).ravel()",
        ]
    )
    r.write(f"np.place({{0}}, {m}, {values})".format(t.name))
    return True


@step("putmask")
def step_putmask(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    m = r.mask_for(d, t.dims).name
    values = d.pick(
        [
            r.operand(d, t.dims),
            "{0}[::-1]",
            "{0}.ravel()[:2]",
            r.scalar(d),
        ]
    )
    mask = d.pick([m, m, "{0} > 0.5"])
    r.write(f"np.putmask({{0}}, {mask}, {values})".format(t.name))
    return True


@step("fill_diagonal")
def step_fill_diagonal(r: Renderer, d: Draw) -> bool:
    t = r.target(d, ndim=2)
    if t is None:
        return False
    same = r.find(dtypes=REAL, shape=t.shape)
    forms = [
        "np.fill_diagonal({0}, {0}.diagonal()[::-1])",
        f"np.fill_diagonal({{0}}, {r.scalar(d)})",
        f"np.fill_diagonal({{0}}, np.sin({d.pick(same).name}).diagonal())",
        f"np.fill_diagonal({{0}}, [{r.scalar(d)}, {r.scalar(d)}])",
        "np.fill_diagonal({0}, {0}[0])",
        "np.fill_diagonal({0}, {0}.diagonal() * 2.0)",
        "np.fill_diagonal({0}, {0}[:, 0])",
    ]
    r.write(d.pick(forms).format(t.name))
    return True


@step("ufunc.at")
def step_ufunc_at(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    n = t.dims[0]
    i, j = d.number() % n, d.number() % n
    rows = (3, *t.dims[1:])
    forms = [
        f"np.add.at({{0}}, [{i}, {i}, {j}], {r.operand(d, rows)})",
        f"np.subtract.at({{0}}, [{j}, {i}], {r.scalar(d)})",
        f"np.multiply.at({{0}}, [{i}, {i}], 2.0)",
        f"np.add.at({{0}}, [{i}, {j}], {{0}}[[{j}, {i}]])",
        f"np.add.at({{0}}, [{i}, {j}, {i}], {{0}}[{j}])"
        if len(t.dims) == 2
        else f"np.add.at({{0}}, [{i}, {j}, {i}], {{0}}[{j}] * 2.0)",
    ]
    forms += [
        f"np.add.at({{0}}, {k.name}, {r.scalar(d)})"
        for k in r.find(("index",), dtypes=("i8",), known=False)
        if k.bound == n
    ]
    r.write(d.pick(forms).format(t.name))
    return True


@step("out aliasing")
def step_out_aliasing(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    forms = [
        "np.add({0}, {0}[::-1], out={0})",
        f"np.multiply({{0}}, {r.operand(d, t.dims)}, out={{0}})",
        "np.sin({0}, out={0})",
        "np.add({0}[:-1], {0}[1:], out={0}[1:])",
        "np.subtract({0}[1:], {0}[:-1], out={0}[:-1])",
        "np.tanh({0}[::-1], out={0})",
        "np.cumsum({0}, axis=0, out={0})",
        "np.multiply({0}, {0}, out={0})",
        f"np.add({r.operand(d, t.dims)}, {r.operand(d, t.dims)}, out={{0}})",
        "np.clip({0}, -1.0, 1.0, out={0})",
        "np.divide({0}, 1.5 + {0} * {0}, out={0})",
        "np.add({0}, 1.0, out={0}, where={mask})",
        "np.sin({0}[::-1], out={0}, where={mask})",
        f"np.divide({r.operand(d, t.dims)}, 1.5 + {{0}} * {{0}}, out={{0}}, where={{mask}})",
    ]
    if len(t.dims) == 2 and t.dims[0] == t.dims[1]:
        forms += ["np.negative({0}.T, out={0})", "np.matmul({0}, {0}, out={0})"]
    r.write_with_mask(d, d.pick(forms), t)
    return True


@step("sort in place")
def step_sort_in_place(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    forms = ["{0}.sort()", "{0}.sort(axis=0)", "{0}[::-1].sort()", "{0}.partition(1)"]
    if t.dims[0] >= 3:
        forms += ["{0}[::2].sort()", "{0}[1:].sort()"]
    if len(t.dims) == 2:
        forms += ["{0}.T.sort()", "{0}[:, ::-1].sort(axis=0)"]
    r.write(d.pick(forms).format(t.name))
    return True


@step("fill")
def step_fill(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    forms = [
        f"{{0}}.fill({r.scalar(d)})",
        "{0}.fill(0.5)",
        f"{{0}}[...] = {r.scalar(d)}",
    ]
    if int(np.prod(t.dims)) > 1:
        forms.append(f"{{0}}[1:].fill({r.scalar(d)})")
    r.write(d.pick(forms).format(t.name))
    return True


@step("write through view")
def step_write_through_view(r: Renderer, d: Draw) -> bool:
    views = [v for v in r.find(writable=True) if v.view and v.shape]
    if views and d.chance(60):
        v = d.pick(views)
    else:
        if not step_view(r, d):
            return False
        v = r.vars[-1]
        if not r.may_write(v):
            return True
    value = r.operand(d, v.shape)
    forms = [
        f"{{0}}[...] = {value}",
        "{0} *= 2.0",
        f"{{0}} += {r.scalar(d)}",
        f"{{0}}[0] = {r.scalar(d)}",
        "{0}[:] = np.sin({0})",
    ]
    r.write(d.pick(forms).format(v.name))
    return True


@step("mutate mask")
def step_mutate_mask(r: Renderer, d: Draw) -> bool:
    masks = r.find(("mask",), dtypes=("b1",))
    if not masks:  # make one and read through it first
        if not step_reduce_with_where(r, d):
            return False
        masks = r.find(("mask",), dtypes=("b1",))
    m = d.pick(masks).name
    forms = [
        "{0}[:] = ~{0}",
        "{0}[...] = ~{0}",
        "np.logical_not({0}, out={0})",
        "{0} ^= True",
        "{0}[0] = ~{0}[0]",
        "{0}[...] = True",
        "{0}.fill(False)",
        "{0}[::-1] = {0}.copy()",
        "np.invert({0}, out={0})",
    ]
    r.lines.append(d.pick(forms).format(m))
    return True


@step("mutate index")
def step_mutate_index(r: Renderer, d: Draw) -> bool:
    indexes = r.find(("index",), dtypes=("i8",), known=False)
    if indexes:
        k = d.pick(indexes)
    else:  # make one and gather through it first
        if not step_new_index(r, d):
            return False
        k = r.vars[-1]
        rows = [a for a in r.find(dtypes=FLOATING) if a.shape and a.shape[0] == k.bound]
        flat = [a for a in r.find(dtypes=FLOATING) if int(np.prod(a.dims)) == k.bound]
        if rows:
            a = d.pick(rows)
            r.define("t", f"{a.name}[{k.name}]", None, a.dtype)
        elif flat:
            a = d.pick(flat)
            r.define("t", f"np.take({a.name}, {k.name})", k.shape, a.dtype)
    forms = [
        "{0}[0] = {0}[-1]",
        "{0}[:] = {0}[::-1]",
        "{0}.sort()",
        "{0}[...] = 0",
        f"{{0}}[...] = ({{0}} + 1) % {k.bound}",
        "{0}.fill(0)",
    ]
    r.lines.append(d.pick(forms).format(k.name))
    return True


@step("mutate constant")
def step_mutate_constant(r: Renderer, d: Draw) -> bool:
    constants = r.find(("constant",), dtypes=("f8",))
    if not constants:  # make one and read it first
        if not step_use_constant(r, d):
            return False
        constants = r.find(("constant",), dtypes=("f8",))
    c = d.pick(constants)
    forms = ["{0}[...] = 2.0", "{0} *= -1.5", "{0}.fill(3.0)", "np.negative({0}, out={0})"]
    if c.shape:
        forms.append("{0}[0] = 9.0")
    r.lines.append(d.pick(forms).format(c.name))
    return True


@step("write int array")
def step_write_int_array(r: Renderer, d: Draw) -> bool:
    ints = [v for v in r.find(dtypes=("i8",)) if v.shape]
    if ints and d.chance(70):
        i = d.pick(ints)
    else:
        size = int(np.prod(r.shape))
        i = r.define("i", f"np.arange({size}).reshape({r.shape})", r.shape, "i8")
    forms = [
        f"{{0}}[0] = {r.scalar(d)}",
        "{0}[...] = 3",
        "{0} += 1",
        f"{{0}}[...] = {r.operand(d, i.shape)}",
    ]
    r.lines.append(d.pick(forms).format(i.name))
    return True


@step("write complex")
def step_write_complex(r: Renderer, d: Draw) -> bool:
    complex_arrays = [v for v in r.find(dtypes=("c16",), writable=True) if v.shape]
    if not complex_arrays:
        a = r.pick_array(d)
        if a is None or not a.shape:
            return False
        complex_arrays = [r.define("c", f"{a.name} * 1j", a.shape, "c16")]
    c = d.pick(complex_arrays)
    forms = [
        f"{{0}}[0] = {r.scalar(d)}",
        "{0} *= 1j",
        f"{{0}}.real[...] = {r.operand(d, c.shape)}",
        f"{{0}}.imag[0] = {r.scalar(d)}",
        f"{{0}}[...] = {r.operand(d, c.shape)}",
        "np.multiply({0}, 1j, out={0})",
        f"{{0}} += {r.operand(d, c.shape)} * 1j",
    ]
    r.write(d.pick(forms).format(c.name))
    return True


@step("write float32")
def step_write_float32(r: Renderer, d: Draw) -> bool:
    halves = [v for v in r.find(dtypes=("f4",), writable=True) if v.shape]
    if not halves:
        a = r.pick_array(d, ("f8",))
        if a is None or not a.shape:
            return False
        halves = [r.define("h", f"{a.name}.astype(np.float32)", a.shape, "f4")]
    h = d.pick(halves)
    targets = [v.name for v in r.find(dtypes=("f8",), writable=True, shape=h.shape)]
    forms = [
        f"{{0}}[...] = {r.operand(d, h.shape)}",
        f"{{0}} += {r.operand(d, h.shape)}",
        "np.sin({0}, out={0})",
    ]
    if targets:
        forms.append(f"{d.pick(targets)}[...] = {{0}}")
    r.write(d.pick(forms).format(h.name))
    return True


@step("checkpointed")
def step_checkpointed(r: Renderer, d: Draw) -> bool:
    found = r.find(dtypes=("f8",))
    found = [v for v in found if v.shape and not (r.outside_views and v.argument_memory)]
    if not found:
        return False
    a = d.pick(found)
    g = r.name("g")
    body = d.pick(
        [
            ["u[0] = np.sin(u[-1])"],
            ["u *= 2.0"],
            ["u[...] = np.tanh(u)"],
            ["w = np.zeros_like(u)", "w[0] = u[-1] * u[0]", "u = w + u"],
            ["u.sort(axis=-1)"],
            [],
        ]
    )
    closure = r.find(dtypes=("f8",), shape=a.shape)
    returned, shape = d.pick(
        [
            ("np.sum(np.sin(u) * u)", ()),
            ("np.cos(u) * u", a.shape),
            (f"np.sum(u * {d.pick(closure).name})", ()),
        ]
    )
    written = [v.name for v in closure if r.may_write(v)]
    if written and d.chance(15):
        body = [*body, f"{d.pick(written)}[0] = 0.0"]
    r.lines.append(f"def {g}(u):")
    r.lines += [f"    {line}" for line in [*body, f"return {returned}"]]
    role = "scalar" if shape == () else "array"
    r.define(
        "s" if shape == () else "t",
        f"mutagrad.checkpointed({g}, {a.name})",
        shape,
        "f8",
        role=role,
    )
    if d.chance(40) and r.may_write(a):
        r.write(f"{a.name} *= 0.5")
    return True


@step("write outside view")
def step_write_outside_view(r: Renderer, d: Draw) -> bool:
    views = r.outside_views
    if not views:
        return False
    o = d.pick(views).name
    forms = [
        "{0}[0] = 100.0",
        "{0}[...] *= 2.0",
        "{0}[...] = 0.25",
        "{0}.fill(1.0)",
        "np.copyto({0}, 0.5)",
        "{0}[-1] = -3.0",
    ]
    r.lines.append(d.pick(forms).format(o))
    r.writes_caller_memory = True
    return True


@step("flat")
def step_flat(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    size = int(np.prod(t.dims))
    i, j = d.number() % size, d.number() % size
    if d.chance(25):
        r.define("s", f"{t.name}.flat[{i}]", (), t.dtype, role="scalar")
        return True
    forms = [
        f"{{0}}.flat[{i}] = {r.scalar(d)}",
        f"{{0}}.flat[[{i}, {j}]] = {r.operand(d, (2,))}",
        f"{{0}}.flat[:] = {r.scalar(d)}",
        f"{{0}}.flat[{i}:{i + 2}] = {r.operand(d, (2,))}",
        "{0}.flat[1:] = {0}[::-1]",
        "{0}.flat = {0}.T",
    ]
    r.write(d.pick(forms).format(t.name))
    return True


@step("library out")
def step_library_out(r: Renderer, d: Draw) -> bool:
    t = r.target(d)
    if t is None:
        return False
    form = d.pick(
        [
            *("np.add.accumulate({t}, axis=0, out={t})", "np.cumsum({a}, axis=0, out={t})"),
            *(
                "np.maximum.accumulate({t}[::-1], axis=0, out={t})",
                "np.clip({a}, -1, 1, out={t})",
            ),
            *(
                "np.concatenate([{t}[1:], {t}[:1]], out={t})",
                "np.stack([{t}[0], {t}[-1]], out={t}[:2])",
            ),
            *(
                "np.take({a}, [1, 0, 1], axis=0, out={t}[:3])",
                "np.multiply.accumulate({a}, out={t})",
            ),
            "np.einsum('...->...', {a}, out={t})",
        ]
    )
    others = [v for v in r.find(dtypes=REAL, shape=t.shape) if v is not t]
    if "{a}" in form and not others:
        return False
    if numpy_result(form.format(t="a", a="a.copy()"), t.dims) is None:
        return False
    source = d.pick(others).name if others else ""
    r.write(form.format(t=t.name, a=source))
    return True


@step("out reduction")
def step_out_reduction(r: Renderer, d: Draw) -> bool:
    t = r.target(d, ndim=2) or r.target(d)
    if t is None:
        return False
    forms = ["np.negative({0}, out={0}[::-1])", "np.clip({0}[::-1], -1.0, 1.0, out={0})"]
    if len(t.dims) == 2:
        forms += [
            *("np.sum({0}, axis=0, out={0}[0])", "np.mean({0}, axis=0, out={0}[-1])"),
            *("np.max({0}, axis=1, out={0}[:, 0])", "np.prod({0}, axis=1, out={0}[:, -1])"),
        ]
        if t.dims[0] == t.dims[1]:
            forms += ["np.add({0}, {0}.T, out={0})", "np.copyto({0}.T, {0})"]
    else:
        forms += ["np.sum({0}, keepdims=True, out={0}[:1])", "np.cumsum({0}[::-1], out={0})"]
    r.write(d.pick(forms).format(t.name))
    return True
