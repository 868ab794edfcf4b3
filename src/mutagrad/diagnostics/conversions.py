"""What the user's code did when a traced value became a raw one, and the fix that suits it.

A :class:`~mutagrad.errors.TracerConversionError` names the construct in the
user's words (``np.asarray(x)``, ``np.array([...])`` of traced values, a
store into a raw buffer, ``math.sin``, ``float(v)``) read from the expression
at the user's line, and offers the fixes that work for it
(:func:`describe_conversion`). :func:`casts_explicitly` tells an explicit
integer cast from a store numpy truncates on its own.
"""

from __future__ import annotations

import ast
import linecache
import re

import numpy

from mutagrad.diagnostics.sites import (
    NUMPY_MODULE_NAMES,
    Site,
    expression_at,
    format_site,
    root_name,
    site_line,
)

# Operations (as the conversion sites name them) that write into a raw ndarray.
_RAW_WRITE_MARKERS = ("out=ndarray", "raw ndarray", "copyto(ndarray")


_ASARRAY_FUNCTIONS = frozenset(
    {"asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "asarray_chkfinite"}
)


# numpy's converting functions (no protocol reaches mutagrad) with a mutagrad.numpy version.
_MNP_COUNTERPARTS = {
    "ndenumerate": (
        "use mnp.ndenumerate({a}) (import mutagrad.numpy as mnp), which yields the traced "
        "elements, or zip(np.ndindex({a}.shape), {a}.flat)"
    ),
    "nditer": (
        "use mnp.nditer({args}) (import mutagrad.numpy as mnp), which iterates traced "
        "operands read-only in numpy's order, or {a}.flat"
    ),
    "require": (
        "use mnp.require({args}) (import mutagrad.numpy as mnp), which copies or views the "
        "traced array exactly where numpy does"
    ),
}


# numpy functions that write into their first argument.
_FIRST_ARGUMENT_WRITERS = frozenset(
    {"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis"}
)


# Constructors mutagrad.numpy provides with numpy's signature, returning traced-capable arrays.
_MNP_CONSTRUCTORS = frozenset(
    {"zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "identity",
     "array", "asarray"}
)  # fmt: skip


# The numpy name of a math function where it differs.
_MATH_TO_NUMPY = {
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2",
    "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh", "pow": "power",
}  # fmt: skip


_IGNORE_WRITE_FIX = (
    "if no gradient should flow into it, write mutagrad.ignore_derivatives(value) instead"
)


def _creation_fix(site: Site | None, name: str) -> str:
    """How to allocate the raw array ``name`` so that it can hold traced values.

    When the function made it with a numpy constructor that mutagrad.numpy
    also has (``out = np.zeros(3)``), that line rewritten.
    """
    # numpy's own fix needs no import: like= a traced array (the function's first argument).
    traced = "x"
    if site is not None:
        code = site[0]
        traced = code.co_varnames[0] if code.co_argcount else "x"
        rewritten = _constructor_rewritten(site, name, traced)
        if rewritten is not None:
            return rewritten
    return (
        f"allocate `{name}` in the function so that it can hold traced values: "
        f"np.zeros(n, like={traced}) (any traced array as like=), np.zeros_like({traced}), or "
        "mnp.zeros(n) (import mutagrad.numpy as mnp); an array kept across calls (a "
        "module-level scratch buffer) is made with mutagrad.array(np.zeros(n))"
    )


def _constructor_rewritten(site: Site, name: str, traced: str) -> str | None:
    """The line above ``site`` that made ``name`` with numpy's constructor, rewritten."""
    code = site[0]
    last = site_line(site) or code.co_firstlineno
    pattern = re.compile(rf"^\s*{re.escape(name)}\s*=\s*(np|numpy)\.(\w+)\(")
    for number in range(last - 1, code.co_firstlineno - 1, -1):
        text = linecache.getline(code.co_filename, number).strip()
        found = pattern.match(text)
        if found and found.group(2) in _MNP_CONSTRUCTORS and "`" not in text:
            return _constructor_fixes(text, number, found, traced)
    return None


def _constructor_fixes(text: str, number: int, found: re.Match[str], traced: str) -> str:
    """Line ``number``'s numpy constructor rewritten: with ``like=`` or ``*_like(...,
    shape=)`` first (the routine keeps returning numpy's type to callers without a
    gradient), then with mutagrad.numpy."""
    module, constructor = found.group(1), found.group(2)
    with_mnp = text.replace(f"{module}.{constructor}(", f"mnp.{constructor}(", 1)
    like = _with_like(text, found.end(), traced) if constructor in _LIKE_CONSTRUCTORS else None
    if like is None:
        return (
            f"allocate it with mutagrad.numpy (import mutagrad.numpy as mnp), which can "
            f"hold traced values:\n      line {number}: `{text}`\n      becomes: `{with_mnp}`"
        )
    shaped = _shaped_like(text, found, traced)
    return (
        f"allocate it like a traced array (numpy's like=), so that it can hold traced values "
        f"and stays a numpy array for callers without a gradient:\n"
        f"      line {number}: `{text}`\n      becomes: `{like}`"
        + (f"\n      or: `{shaped}`" if shaped else "")
        + f"\n      or, with mutagrad.numpy (import mutagrad.numpy as mnp): `{with_mnp}`"
    )


def _shaped_like(text: str, found: re.Match[str], traced: str) -> str | None:
    """``out = np.empty(shape)`` as ``out = np.empty_like(traced, shape=shape)`` (zeros,
    ones, empty, with at most a dtype= beside the shape); None for any other call."""
    if found.group(2) not in ("zeros", "ones", "empty"):
        return None
    try:
        call = ast.parse(text[found.start(1):]).body[0]
    except SyntaxError:
        return None
    if not (isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)):
        return None
    args, keywords = call.value.args, call.value.keywords
    if len(args) != 1 or any(k.arg != "dtype" for k in keywords):
        return None
    extra = "".join(f", dtype={ast.unparse(k.value)}" for k in keywords)
    shape = ast.unparse(args[0])
    prefix = text[: found.start(1)]
    return f"{prefix}{found.group(1)}.{found.group(2)}_like({traced}, shape={shape}{extra})"


# The constructors whose numpy signature takes like= (linspace and logspace do not).
_LIKE_CONSTRUCTORS = frozenset(
    {"zeros", "ones", "empty", "full", "arange", "eye", "identity", "array", "asarray"}
)


def _with_like(text: str, start: int, traced: str) -> str | None:
    """``text`` with ``like=traced`` added to the call whose arguments begin at ``start``."""
    depth = 1
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            inside = text[start:i].rstrip().rstrip(",")
            separator = ", " if inside else ""
            return f"{text[:start]}{inside}{separator}like={traced}{text[i:]}"
    return None


def _is_setitem_call(expression: ast.expr | None) -> bool:
    """``a.__setitem__(i, v)``: a write spelled as a call."""
    return (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Attribute)
        and expression.func.attr == "__setitem__"
    )


def _raw_write(expression: ast.expr | None, site: Site | None) -> tuple[str, list[str]]:
    """A traced value written into a raw ndarray: by ``a[i] = v``, ``out=``, or ``np.copyto``."""
    target = None
    how = "writing a traced value into a raw array"
    if isinstance(expression, ast.Subscript):
        target = ast.unparse(expression.value)
    elif _is_setitem_call(expression):
        target = ast.unparse(expression.func.value)  # type: ignore[union-attr]
    elif isinstance(expression, ast.Call):
        called = ast.unparse(expression.func)
        out = [k.value for k in expression.keywords if k.arg == "out"]
        if out:
            target = ast.unparse(out[0])
            how = f"writing the traced result of {called} into a raw array with out="
        elif expression.args and called.rsplit(".", 1)[-1] in _FIRST_ARGUMENT_WRITERS:
            target = ast.unparse(expression.args[0])
            how = f"writing traced values into a raw array with {called}"
    if target is None or not target.isidentifier():
        return how, [_creation_fix(site, "the array"), _IGNORE_WRITE_FIX]
    return f"{how.replace('a raw array', f'the raw array `{target}`')}", [
        _creation_fix(site, target),
        _IGNORE_WRITE_FIX,
    ]


def _concatenator(expression: ast.expr | None) -> str | None:
    """``"r_"`` or ``"c_"`` for ``np.r_[...]`` or ``np.c_[...]``, else None."""
    if not isinstance(expression, ast.Subscript):
        return None
    value = expression.value
    if (
        isinstance(value, ast.Attribute)
        and value.attr in ("r_", "c_")
        and root_name(value) in NUMPY_MODULE_NAMES
    ):
        return value.attr
    return None


def _concatenator_construct(expression: ast.Subscript, which: str) -> tuple[str, list[str]]:
    """``np.r_[x, y]`` of traced values: numpy's index trick makes raw arrays of its pieces."""
    value = expression.value
    assert isinstance(value, ast.Attribute)
    numpy_name = ast.unparse(value.value)
    index = expression.slice
    pieces = index.elts if isinstance(index, ast.Tuple) else [index]
    inside = ", ".join(ast.unparse(p) for p in pieces)
    fixes = [
        f"mnp.{which}[{inside}] (import mutagrad.numpy as mnp) keeps the gradient of every piece"
    ]
    # The numpy function that does the same, where the pieces are plain arrays
    # (r_ and c_ also read slices as ranges and strings as directives).
    if not any(_is_range_or_directive(p) for p in pieces):
        function = "concatenate" if which == "r_" else "column_stack"
        fixes.append(
            f"or {numpy_name}.{function}([{inside}]), which numpy dispatches to mutagrad"
        )
    return f"{ast.unparse(value)}[...] of traced values", fixes


def _is_range_or_directive(piece: ast.expr) -> bool:
    """A piece of ``np.r_[...]`` that is no array: a slice (a range) or a string (a directive)."""
    return isinstance(piece, ast.Slice) or (
        isinstance(piece, ast.Constant) and isinstance(piece.value, str)
    )


# numpy functions whose first argument is a shape: a tuple there is not the values.
_SHAPE_FIRST = frozenset({"zeros", "ones", "empty", "full", "ndindex", "indices"})


def _is_number(expression: ast.expr) -> bool:
    if isinstance(expression, ast.UnaryOp):
        expression = expression.operand
    return isinstance(expression, ast.Constant)


def _list_argument(expression: ast.Call, name: str) -> int | None:
    """The position of the list (or tuple, or comprehension) written in the call that may
    hold traced values: not a list of numbers (``np.percentile(x, [25, 75])``), not a shape."""
    for i, a in enumerate(expression.args):
        if isinstance(a, (ast.ListComp, ast.GeneratorExp)):
            return i
        listed = isinstance(a, ast.List) or (
            isinstance(a, ast.Tuple) and not (i == 0 and name in _SHAPE_FIRST)
        )
        if listed and not all(_is_number(e) for e in a.elts):  # type: ignore[attr-defined]
            return i
    return None


def _list_construct(
    expression: ast.Call, called: str, numpy_name: str, position: int
) -> tuple[str, list[str]]:
    """``np.mean([x, y])``: numpy converts the list to a raw array, dropping its traced values."""
    listed = expression.args[position]
    if isinstance(listed, ast.GeneratorExp):  # np.stack takes a sequence, not a generator
        listed = ast.ListComp(elt=listed.elt, generators=listed.generators)
    stacked = ast.Call(
        func=ast.Attribute(value=ast.Name(id=numpy_name), attr="stack"), args=[listed], keywords=[]
    )
    arguments = [*expression.args[:position], stacked, *expression.args[position + 1:]]
    rewritten = ast.unparse(ast.Call(func=expression.func, args=arguments,
                                     keywords=expression.keywords))  # fmt: skip
    in_mnp = ast.unparse(expression).replace(numpy_name, "mnp", 1)
    return f"{called}() of a list holding traced values", [
        f"{rewritten}: np.stack keeps the gradient of every element (numpy makes a raw array "
        "of a list, and NEP 18 dispatch does not look inside lists)",
        f"or {in_mnp} (import mutagrad.numpy as mnp), whose functions take lists of traced "
        "values",
    ]


def _scalar_type_construct(
    called: str, numpy_name: str, name: str, argument: str
) -> tuple[str, list[str]]:
    """``np.int64(x)``, ``np.float32(x)``: a numpy scalar type called on a traced value.

    (A float cast to an integer or boolean type is not refused: it has no derivative.)
    """
    if issubclass(getattr(numpy, name), numpy.inexact):
        return f"{called}({argument}) of a traced value", [
            f"{argument}.astype({numpy_name}.{name}) keeps the gradient",
            f"or mnp.{name}({argument}) (import mutagrad.numpy as mnp), which casts keeping it",
        ]
    return f"{called}({argument}) of a traced integer value", [
        f"{argument}.astype({numpy_name}.{name}) keeps the gradient (mutagrad differentiates "
        "integers as real numbers)",
        f"or, as an index or a count, mnp.{name}({argument}) (import mutagrad.numpy as mnp) "
        "casts it without a gradient",
    ]


def _is_scalar_type(name: str) -> bool:
    kind = getattr(numpy, name, None)
    return isinstance(kind, type) and issubclass(kind, numpy.number | numpy.bool_)


def _conversion_construct(
    expression: ast.expr | None, operation: str, site: Site | None
) -> tuple[str, list[str]]:
    """What converted a traced value (in the user's words) and the fixes that suit it."""
    raw_write = any(marker in operation for marker in _RAW_WRITE_MARKERS)
    which = _concatenator(expression)
    if which is not None and not raw_write:
        assert isinstance(expression, ast.Subscript)
        return _concatenator_construct(expression, which)
    if raw_write or isinstance(expression, ast.Subscript) or _is_setitem_call(expression):
        return _raw_write(expression, site)
    if not isinstance(expression, ast.Call):
        return f"{operation} of a traced value", [
            "keep the value an array: numpy functions accept traced arrays as they are",
            "if no gradient should flow through it, convert mutagrad.ignore_derivatives(x)",
        ]
    call = _ConvertingCall(expression)
    if call.name == "as_strided":  # np.lib.stride_tricks.as_strided, or imported by name
        return f"{call.called}({call.argument}) of a traced array (as_strided makes a raw "\
            "array of it, where no numpy protocol reaches mutagrad)", [
            f"for overlapping windows use np.lib.stride_tricks.sliding_window_view("
            f"{call.argument}, ...), a read-only view mutagrad traces; for repeated values "
            f"np.broadcast_to({call.argument}, shape); otherwise slicing and reshape",
        ]
    if call.module in NUMPY_MODULE_NAMES:
        found = _numpy_call_construct(call)
        if found is not None:
            return found
    return _python_call_construct(call, operation)


class _ConvertingCall:
    """The user's call that converted a traced value, in the words the fixes use."""

    def __init__(self, expression: ast.Call):
        self.expression = expression
        func = self.func = expression.func
        self.called = ast.unparse(func)
        self.name = func.attr if isinstance(func, ast.Attribute) else self.called
        self.module = root_name(func) if isinstance(func, ast.Attribute) else None
        self.argument = ast.unparse(expression.args[0]) if expression.args else "x"
        self.rest = [ast.unparse(a) for a in expression.args[1:]]
        self.arguments = ", ".join([self.argument, *self.rest])
        # The call with its first argument as a constant: the fix when no gradient should flow.
        constant = f"mutagrad.ignore_derivatives({self.argument})"
        self.ignored = f"{self.called}({', '.join([constant, *self.rest])})"


def _numpy_call_construct(call: _ConvertingCall) -> tuple[str, list[str]] | None:
    """``np.asarray``, ``np.array``, ``np.full``, a scalar type, a function taking a list."""
    expression, called, name, module, argument = (
        call.expression, call.called, call.name, call.module, call.argument
    )  # fmt: skip
    assert module is not None
    if name in _ASARRAY_FUNCTIONS:
        if expression.args and _list_argument(expression, name) == 0:
            return f"{called}([...]) of a list holding traced values", [
                f"{module}.stack({argument}) keeps the gradient of every element",
                f"or mnp.asarray({argument}) (import mutagrad.numpy as mnp)",
            ]
        keeping = "asarray" if name == "asarray_chkfinite" else name
        return f"{called}({argument}) of a traced array", [
            f"remove the conversion: numpy functions accept the traced `{argument}` as it is",
            f"or use mnp.{keeping}({argument}) (import mutagrad.numpy as mnp), which keeps it "
            "traced (a copy or a view exactly where numpy makes one)",
        ]
    iterating = _MNP_COUNTERPARTS.get(name)
    if iterating is not None:
        every = ", ".join([call.arguments, *(ast.unparse(k) for k in expression.keywords)])
        return f"{called}({argument}), which converts the traced array to a raw one", [
            iterating.format(a=argument, args=every),
            f"if no gradient should flow through it, {call.ignored}",
        ]
    if name == "array":
        if expression.args and isinstance(
            expression.args[0], (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)
        ):
            return f"{called}([...]) of a list holding traced values", [
                f"np.stack({argument}) keeps the gradient of every element",
                f"or mnp.array({argument}) (import mutagrad.numpy as mnp)",
            ]
        return f"{called}({argument}) of a traced array", [
            f"copy it with {argument}.copy(), or use mnp.array({argument}) "
            "(import mutagrad.numpy as mnp)",
        ]
    if name == "full" and len(expression.args) >= 2:
        # numpy converts the fill value itself, before any protocol could see it.
        shape, fill = argument, ast.unparse(expression.args[1])
        return f"{called}({shape}, {fill}) with a traced fill value", [
            f"mnp.full({shape}, {fill}) (import mutagrad.numpy as mnp) keeps its gradient",
            f"or {called}({shape}, {fill}, like={fill}), or np.full_like(an_array, {fill})",
        ]
    func = call.func
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and _is_scalar_type(name):
            return _scalar_type_construct(called, module, name, argument)
        position = _list_argument(expression, name)
        if position is not None:
            return _list_construct(expression, called, module, position)
    return None


def _python_call_construct(call: _ConvertingCall, operation: str) -> tuple[str, list[str]]:
    """``math.sin(x)``, ``float(x)``, ``x.item()``, or any other function converting."""
    called, name, argument = call.called, call.name, call.argument
    if call.module in ("math", "cmath"):
        numpy_name = _MATH_TO_NUMPY.get(name, name)
        if hasattr(numpy, numpy_name):
            fix = f"use np.{numpy_name}({call.arguments}): numpy's version keeps the gradient"
        else:
            fix = "use the numpy function that computes it: numpy's versions keep the gradient"
        return f"{called}() of a traced value", [
            fix,
            f"if no gradient should flow through it, {call.ignored}",
        ]
    if isinstance(call.func, ast.Name) and name in ("float", "int", "complex", "bool"):
        return f"{name}({argument}) of a traced value", [
            f"keep `{argument}` as it is: a traced scalar works wherever numpy takes a number",
            f"if only its value is needed (printing, logging), "
            f"{name}(mutagrad.ignore_derivatives({argument}))",
        ]
    if isinstance(call.func, ast.Attribute) and name in ("item", "tolist"):
        owner = ast.unparse(call.func.value)
        return f"{called}() of a traced array", [
            f"keep `{owner}` an array (index it, `{owner}[i]`, instead of converting)",
            f"if only its values are needed, mutagrad.ignore_derivatives({owner}).{name}()",
        ]
    if operation in ("bytes()", "x.tobytes()"):  # bytes(x), int.from_bytes(x), x.tobytes()
        if isinstance(call.func, ast.Attribute) and name == "tobytes":
            owner = ast.unparse(call.func.value)
            shown, ignored = f"{owner}.tobytes()", f"mutagrad.ignore_derivatives({owner}).tobytes()"
        else:
            shown, ignored = f"{called}({argument})", call.ignored
        return f"{shown}, the bytes of a traced value (bytes carry no gradient)", [
            "compute what the bytes are for from the array itself: numpy functions keep the "
            "gradient",
            f"if no gradient should flow through them (a hash, a cache key, a file), {ignored}",
        ]
    return f"{called}(), which converts the traced value it gets to a raw array ({operation})", [
        f"give {called} a derivative rule: mutagrad.defvjp or @mutagrad.rrule "
        "(on a function decorated with @mutagrad.primitive)",
        f"if no gradient should flow through it, {call.ignored}",
    ]


_EXPLICIT_CASTS: dict[Site, bool] = {}


def casts_explicitly(site: Site | None) -> bool:
    """Whether the user's expression at ``site`` makes an integer of a value on purpose.

    ``int(v)``, ``np.int64(v)``, ``np.asarray(v, dtype=int)``, ``v.astype(int)``,
    ``round(v)``: yes. A store that numpy truncates on its own (``buf[i] = v``
    into an integer array, ``buf.fill(v)``, ``np.put(buf, i, v)``): no. Where
    the expression cannot be read, yes (the truncation's zero derivative is
    the true one; the refusal only catches a store that looks like a slip).
    """
    if site is None:
        return True
    known = _EXPLICIT_CASTS.get(site)
    if known is None:
        known = _EXPLICIT_CASTS[site] = _is_explicit_cast(expression_at(site))
    return known


def _is_explicit_cast(expression: ast.expr | None) -> bool:
    if expression is None:
        return True
    if not isinstance(expression, ast.Call) or _is_setitem_call(expression):
        return False
    func = expression.func
    name = func.attr if isinstance(func, ast.Attribute) else ast.unparse(func)
    if name in ("int", "round", "floor", "ceil", "trunc", "index", "astype"):
        return True
    if isinstance(func, ast.Attribute) and root_name(func) in NUMPY_MODULE_NAMES:
        if _is_scalar_type(name):
            return True
        return any(k.arg == "dtype" for k in expression.keywords) or (
            name in ("array", "asarray", "asanyarray") and len(expression.args) >= 2
        )
    return False


def describe_conversion(site: Site | None, operation: str) -> str:
    """The message of a TracerConversionError: the construct at ``site``, and its fixes.

    ``operation`` is what turned a traced value into a raw one (``float()``,
    ``np.asarray / __array__``, ``np.put into a raw ndarray``); the user's
    expression at ``site`` says which construct of theirs did it, and so
    which fix works: ``np.asarray(x)`` is removed, ``np.array([...])``
    becomes ``np.stack``, ``math.sin`` becomes ``np.sin``, a raw buffer is
    allocated with mutagrad.numpy.
    """
    construct, fixes = _conversion_construct(expression_at(site), operation, site)
    if len(fixes) == 1:
        advice = f"Fix: {fixes[0]}."
    else:
        advice = "Fixes:\n" + "\n".join(f"  - {fix};" for fix in fixes[:-1]) + f"\n  - {fixes[-1]}."
    return (
        f"{construct}, at\n{format_site(site)}\n"
        f"would drop the value's gradient, so mutagrad refuses.\n{advice}"
    )
