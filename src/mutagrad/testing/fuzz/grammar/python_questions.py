"""Statements that ask Python rather than numpy: type checks, builtins, library guards, threads.

Library code asks ``isinstance(a, np.ndarray)`` and ``np.isscalar(a[0])``,
normalises with ``np.asarray``, calls ``round``, ``math.floor`` or ``divmod``
on elements, formats them, and starts threads. A traced value must answer as
numpy's would, or be refused by name.
"""

from __future__ import annotations

from mutagrad.testing.fuzz.grammar.renderer import Draw, Renderer, Var
from mutagrad.testing.fuzz.grammar.steps import step


@step("type branch")
def step_type_branch(r: Renderer, d: Draw) -> bool:
    """``isinstance`` / ``np.isscalar`` branches on a traced array or element."""
    a = r.pick_array(d, ("f8",))
    if a is None or not a.shape:
        return False
    if d.chance(50):
        test = d.pick([
            "isinstance({0}, np.ndarray)", "not isinstance({0}, np.generic)",
            "not np.isscalar({0})", "np.ndim({0}) == " + str(len(a.shape)),
            "isinstance({0}, np.ndarray) and {0}.shape == " + repr(a.shape),
        ]).format(a.name)  # fmt: skip
        t = r.name("t")
        r.lines += [f"if {test}:", f"    {t} = {a.name} * 2.0", "else:",
                       f"    {t} = {a.name} + 1.0"]  # fmt: skip
        r.vars.append(Var(t, a.shape, "f8"))
        return True
    element = r.element(d, a)
    test = d.pick([
        "isinstance({0}, float)", "isinstance({0}, np.floating)",
        "isinstance({0}, numbers.Real)", "np.isscalar({0})", "not isinstance({0}, np.ndarray)",
        "isinstance({0}, (int, float)) and not isinstance({0}, bool)",
    ]).format(element)  # fmt: skip
    scalar = r.name("s")
    r.lines += [f"if {test}:", f"    {scalar} = {element} * 3.0", "else:",
                   f"    {scalar} = {element} - 1.0"]  # fmt: skip
    r.vars.append(Var(scalar, (), "f8", role="scalar"))
    return True


@step("normalising helper")
def step_normalising_helper(r: Renderer, d: Draw) -> bool:
    """The guard of library code: ``if not isinstance(a, np.ndarray): a = np.asarray(a)``."""
    a = r.pick_array(d, ("f8",))
    if a is None:
        return False
    if not any(line.startswith("def _as_array") for line in r.lines):
        r.lines += ["def _as_array(v):", "    if not isinstance(v, np.ndarray):",
                       "        v = np.asarray(v)", "    return v"]  # fmt: skip
    if a.shape and d.chance(25):  # an element: numpy makes a 0-d array of it
        r.define("s", f"np.sum(_as_array({r.element(d, a)}) * 2.0)", (), "f8",
                     role="scalar")  # fmt: skip
    else:
        r.define("t", f"_as_array({a.name}) * 1.5", a.shape, "f8")
    return True


@step("builtin on element")
def step_builtin_on_element(r: Renderer, d: Draw) -> bool:
    """Python's builtins on an element: round, math.floor, divmod, formatting, max."""
    a = r.pick_array(d, ("f8",))
    if a is None or not a.shape:
        return False
    e = r.element(d, a)
    form = d.pick([
        "round({0}, 2) * {0}", "math.floor({0} * 3.0) + {0}", "divmod({0}, 0.7)[1] * 2.0",
        "math.trunc({0} * 2.0) * {0}", "len(f'{{{0}:.3f}}') + {0}", "max({0}, 0.2) * {0}",
        "abs({0}) + sum([{0}, {0} * 2.0])", "math.ceil({0}) - {0}",
    ]).format(e)  # fmt: skip
    r.define("s", form, (), "f8", role="scalar")
    return True


@step("thread")
def step_thread(r: Renderer, d: Draw) -> bool:
    """Work on a traced value in a thread ``f`` starts (refused: the thread is not traced)."""
    a = r.pick_array(d, ("f8",))
    if a is None:
        return False
    t = r.name("t")
    if d.chance(50):
        r.lines += ["with ThreadPoolExecutor(1) as _pool:",
                       f"    {t} = _pool.submit(np.sin, {a.name}).result()"]  # fmt: skip
    else:
        box = r.name("box")
        work = f"lambda: {box}.append(np.cos({a.name}))"
        r.lines += [f"{box} = []", f"_thread = threading.Thread(target={work})",
                       "_thread.start()", "_thread.join()", f"{t} = {box}[0]"]  # fmt: skip
    r.vars.append(Var(t, a.shape, "f8"))
    return True
