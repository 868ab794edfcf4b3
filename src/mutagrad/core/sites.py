"""Source locations in the user's code.

Errors must point at the user's line, not at mutagrad's or numpy's internals.
:func:`user_site` walks outward from the caller's frame, skipping frames whose
code lives in mutagrad's engine, its rules or numpy, and returns a cheap
``(code, offset)`` pair (the bytecode offset of the call being made: every
recorded operation stores one, and turning an offset into a line number walks
the code's line table, so that waits until a message needs it);
:func:`site_line` gives the line, :func:`describe_site` ``file:line`` and
:func:`source_line` the source text. :func:`rewrite_with_copy` edits the
expression at a site so that the operation there saves a copy (the fix a
PoisonedCaptureError offers).
"""

from __future__ import annotations

import ast
import importlib.util
import io
import linecache
import os
import re
import sys
import tokenize
from itertools import islice
from types import CodeType, FrameType, TracebackType

import numpy

Site = tuple[CodeType, int]  # (code, bytecode offset)

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _library_dirs(name: str) -> list[str]:
    """Where an installed library's code lives, found without importing it (SciPy: an
    error raised inside its code names the user's call into it)."""
    spec = importlib.util.find_spec(name)
    locations = spec.submodule_search_locations if spec is not None else None
    return [os.path.abspath(d) + os.sep for d in locations or ()]

# Modules whose frames are machinery, never the user's code. mutagrad.testing,
# the report corpus and the examples are user code as far as sites are concerned.
# custom.py is machinery: a function with a custom rule is called from the
# user's line through custom.py's wrappers, and that line is the site.
_INTERNAL_PREFIXES = (
    os.path.join(_PACKAGE_DIR, "core") + os.sep,
    os.path.join(_PACKAGE_DIR, "array") + os.sep,
    os.path.join(_PACKAGE_DIR, "rules") + os.sep,
    os.path.join(_PACKAGE_DIR, "api.py"),
    os.path.join(_PACKAGE_DIR, "custom.py"),
    os.path.join(_PACKAGE_DIR, "explain.py"),
    os.path.join(_PACKAGE_DIR, "transforms.py"),
    os.path.join(_PACKAGE_DIR, "tracebacks.py"),
    os.path.join(_PACKAGE_DIR, "numpy.py"),
    os.path.join(_PACKAGE_DIR, "buffer.py"),
    os.path.join(_PACKAGE_DIR, "higher.py"),
    os.path.join(_PACKAGE_DIR, "params.py"),
    os.path.join(_PACKAGE_DIR, "checkpoint.py"),
    os.path.join(_PACKAGE_DIR, "hook.py"),
    os.path.join(_PACKAGE_DIR, "reachable.py"),
    os.path.join(_PACKAGE_DIR, "porting.py"),
    os.path.join(_PACKAGE_DIR, "scipy") + os.sep,
    os.path.dirname(os.path.abspath(numpy.__file__)) + os.sep,
    *_library_dirs("scipy"),
    "<__array_function__",
)
# Code already classified: machinery (skipped by the walk), or the user's,
# with bytecode offset -> its site. A loop records the same few sites
# thousands of times; every node shares one tuple per call site.
_internal_code: set[CodeType] = set()
_user_sites: dict[CodeType, dict[int, Site]] = {}


def user_site(depth: int = 2) -> Site | None:
    """Return ``(code, offset)`` of the innermost frame outside mutagrad and numpy."""
    return user_site_from(sys._getframe(depth))


def user_site_from(frame: FrameType | None) -> Site | None:
    """:func:`user_site` starting at ``frame``: cheapest when that is the user's frame."""
    while frame is not None:
        code = frame.f_code
        sites = _user_sites.get(code)
        if sites is None and code not in _internal_code:
            sites = _classify(code)
        if sites is not None:
            offset = frame.f_lasti
            site = sites.get(offset)
            if site is None:
                site = sites[offset] = (code, offset)
            return site
        frame = frame.f_back
    return None


def global_names(code: CodeType) -> set[str]:
    """The names ``code`` (and the functions and comprehensions in it) may read as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= global_names(const)
    return names


def user_site_in(stack: list[tuple[CodeType, int]]) -> Site | None:
    """:func:`user_site_from` for a snapshot of a stack: ``(code, offset)`` pairs, innermost first.

    A live frame's offset moves on as its code runs; a snapshot keeps where
    each frame was when it was taken.
    """
    for code, offset in stack:
        if code in _internal_code:
            continue
        if code in _user_sites or _classify(code) is not None:
            return (code, offset)
    return None


def _classify(code: CodeType) -> dict[int, Site] | None:
    """Remember whether ``code`` is machinery; the user's code gets its table of sites."""
    if code.co_filename.startswith(_INTERNAL_PREFIXES):
        _internal_code.add(code)
        return None
    return _user_sites.setdefault(code, {})


def site_line(site: Site | None) -> int | None:
    """The line number of ``site``."""
    if site is None:
        return None
    code, offset = site
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line
    return code.co_firstlineno


def innermost_user_site(traceback: TracebackType | None) -> Site | None:
    """The deepest frame of ``traceback`` in the user's code: where an error was raised."""
    found = None
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if not code.co_filename.startswith(_INTERNAL_PREFIXES):
            found = (code, traceback.tb_lasti)
        traceback = traceback.tb_next
    return found


def raised_by_mutagrad(error: BaseException) -> bool:
    """Whether the innermost frame of ``error``'s traceback is mutagrad's own code."""
    traceback = error.__traceback__
    if traceback is None:
        return False
    while traceback.tb_next is not None:
        traceback = traceback.tb_next
    return traceback.tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR + os.sep)


def describe_site(site: Site | None) -> str:
    """``file:line (in function)``, or a placeholder when no user frame was found."""
    if site is None:
        return "<unknown location>"
    code = site[0]
    return f"{code.co_filename}:{site_line(site)} (in {code.co_name})"


def source_line(site: Site | None) -> str:
    """The stripped source text at ``site``, or an empty string."""
    if site is None:
        return ""
    line = site_line(site)
    return linecache.getline(site[0].co_filename, line).strip() if line is not None else ""


def without_comment(line: str) -> str:
    """One line of code without its trailing comment and the padding before it."""
    if "#" not in line:
        return line.strip()
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[: token.start[1]].strip()
    except (tokenize.TokenError, SyntaxError):  # an unfinished statement: its code ends there
        pass
    return line.strip()


def source_code(site: Site | None) -> str:
    """The code at ``site``, without a trailing comment: what a message quotes inline."""
    return without_comment(source_line(site))


def format_site(site: Site | None, indent: str = "    ") -> str:
    """``file:line`` followed by the source line, for error messages."""
    text = source_line(site)
    where = describe_site(site)
    return f"{indent}{where}\n{indent}    {text}" if text else f"{indent}{where}"


# --------------------------------------------------------------------------
# Rewriting the expression at a site: the copy that keeps a saved value safe.

# The ufunc an operator calls, by its name (the name of its rule).
_OPERATOR_UFUNCS = {
    ast.Add: "add",
    ast.Sub: "subtract",
    ast.Mult: "multiply",
    ast.Div: "divide",
    ast.FloorDiv: "floor_divide",
    ast.Mod: "remainder",
    ast.Pow: "power",
    ast.MatMult: "matmul",
}
_NUMPY_MODULE_NAMES = ("np", "numpy")
# Functions and methods that write into an argument: handing them a copy would
# move their write away from the array the program reads afterwards.
_WRITERS = frozenset(
    {"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis", "at", "sort",
     "fill", "partition", "resize", "itemset", "setfield"}
)  # fmt: skip
# Operands that are certainly not the saved array (which was a WrappedArray).
_LITERALS = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.JoinedStr)


def site_columns(site: Site | None) -> tuple[int, int, int] | None:
    """``(line, start, end)`` of the expression whose evaluation ``site`` records.

    ``start`` and ``end`` are UTF-8 byte offsets into the line, as in
    :mod:`ast`. None when the expression spans several lines or Python keeps
    no column table (before 3.11, or under ``-X no_debug_ranges``).
    """
    if site is None:
        return None
    code, offset = site
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return None
    entry = next(islice(positions(), offset // 2, None), None)
    if entry is None:
        return None
    line, end_line, start, end = entry
    if line is None or line != end_line or start is None or end is None:
        return None
    return line, start, end


def _root_name(expression: ast.expr) -> str | None:
    while isinstance(expression, ast.Attribute):
        expression = expression.value
    return expression.id if isinstance(expression, ast.Name) else None


def _operands(operation: ast.AST, name: str, n_arguments: int) -> list[ast.expr] | None:
    """The argument expressions of ``operation``, if it certainly calls the rule ``name``.

    An operator ``a * b`` or ``a *= b`` passes ``(a, b)``; a call
    ``np.f(a, b)`` or ``f(a, b)`` its positional arguments; a method call
    ``a.f(b)`` its object, then its arguments. The called name must be the
    rule's, the call must not write into an argument (``out=``, ``x.sort()``)
    and the number of expressions must be the number of arguments the rule
    received; otherwise which expression gave which argument is a guess.
    """
    if isinstance(operation, (ast.BinOp, ast.AugAssign)):
        if _OPERATOR_UFUNCS.get(type(operation.op)) != name:
            return None
        if isinstance(operation, ast.BinOp):
            return [operation.left, operation.right]
        return [operation.target, operation.value]  # type: ignore[list-item]
    if not isinstance(operation, ast.Call):
        return None
    func = operation.func
    if isinstance(func, ast.Name):
        called, operands = func.id, list(operation.args)
    elif isinstance(func, ast.Attribute):
        called = func.attr
        numpy_function = _root_name(func.value) in _NUMPY_MODULE_NAMES
        operands = list(operation.args) if numpy_function else [func.value, *operation.args]
    else:
        return None
    if (
        called != name.rsplit(".", 1)[-1]
        or called in _WRITERS
        or any(keyword.arg in ("out", None) for keyword in operation.keywords)
        or any(isinstance(a, ast.Starred) for a in operation.args)
        or len(operands) != n_arguments
    ):
        return None
    return operands


def _copied(source: str, expression: ast.expr, copy: str) -> str:
    if isinstance(expression, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
        return f"{source}{copy}"
    return f"({source}){copy}"


def rewrite_with_copy(
    site: Site | None,
    name: str,
    n_arguments: int,
    arguments: tuple[int, ...] | None,
    copy: str = ".copy()",
) -> tuple[int, str, str] | None:
    """The source line of ``site`` rewritten so that its operation saves a copy.

    The operation recorded at ``site`` is the rule ``name`` applied to
    ``n_arguments`` arguments; it saved the arguments at positions
    ``arguments``, or its result when ``arguments`` is None. The rewrite
    appends ``copy`` to the expressions that gave those arguments (or to the
    call that returned the result): the same values flow on, and what the
    operation saved is an array no other name or view can reach, so no later
    write can overwrite it. Returns ``(line number, line before, line after)``
    (stripped), or None unless the site's expression is certainly that
    operation and the expressions are certainly the saved arrays. A write
    target (``a`` in ``a *= b``) and a result written into an existing array
    (``out=``, an augmented assignment) are never rewritten.
    """
    columns = site_columns(site)
    if columns is None:
        return None
    line, start, end = columns
    text = linecache.getline(site[0].co_filename, line)  # type: ignore[index]
    if "`" in text:
        return None  # the message quotes the line between backquotes
    encoded = text.encode()
    try:
        statements = ast.parse(encoded[start:end].decode()).body
    except (SyntaxError, UnicodeDecodeError):
        return None
    if len(statements) != 1:
        return None
    statement = statements[0]
    operation = statement.value if isinstance(statement, ast.Expr) else statement
    operands = _operands(operation, name, n_arguments)
    if operands is None:
        return None
    if arguments is None:
        if not isinstance(operation, ast.Call):
            return None  # an operator's result may be a Python number, without .copy()
        targets: list[ast.expr] = [operation]
    else:
        if isinstance(operation, ast.AugAssign) and 0 in arguments:
            return None
        targets = [operands[i] for i in arguments]
        if any(isinstance(t, _LITERALS) for t in targets):
            return None
    for target in sorted(targets, key=lambda t: t.col_offset, reverse=True):
        if target.lineno != 1 or target.end_lineno != 1 or target.end_col_offset is None:
            return None
        first, last = start + target.col_offset, start + target.end_col_offset
        source = encoded[first:last].decode()
        encoded = encoded[:first] + _copied(source, target, copy).encode() + encoded[last:]
    return line, text.strip(), encoded.decode().strip()


# --------------------------------------------------------------------------
# What the user's code did when a traced value became a raw one, and its fix.

# Operations (as the conversion sites name them) that write into a raw ndarray.
_RAW_WRITE_MARKERS = ("out=ndarray", "raw ndarray", "copyto(ndarray")
_ASARRAY_FUNCTIONS = frozenset(
    {"asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "asarray_chkfinite"}
)
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


def _expression_at(site: Site | None) -> ast.expr | None:
    """The expression whose evaluation ``site`` records, parsed (None if it cannot be)."""
    columns = site_columns(site)
    if columns is None:
        return None
    line, start, end = columns
    text = linecache.getline(site[0].co_filename, line).encode()  # type: ignore[index]
    try:
        return ast.parse(text[start:end].decode().strip(), mode="eval").body
    except (SyntaxError, UnicodeDecodeError):
        return None


def _creation_fix(site: Site, name: str) -> str:
    """How to allocate the raw array ``name`` so that it can hold traced values.

    When the function made it with a numpy constructor that mutagrad.numpy
    also has (``out = np.zeros(3)``), that line rewritten.
    """
    code = site[0]
    last = site_line(site) or code.co_firstlineno
    # numpy's own fix needs no import: like= a traced array (the function's first argument).
    traced = code.co_varnames[0] if code.co_argcount else "x"
    pattern = re.compile(rf"^\s*{re.escape(name)}\s*=\s*(np|numpy)\.(\w+)\(")
    for number in range(last - 1, code.co_firstlineno - 1, -1):
        text = linecache.getline(code.co_filename, number).strip()
        found = pattern.match(text)
        if found and found.group(2) in _MNP_CONSTRUCTORS and "`" not in text:
            rewritten = text.replace(f"{found.group(1)}.{found.group(2)}(",
                                     f"mnp.{found.group(2)}(", 1)  # fmt: skip
            like = _with_like(text, found.end(), traced)
            plain = (f"\n      or, with numpy alone: `{like}`"
                     if like and found.group(2) in _LIKE_CONSTRUCTORS else "")  # fmt: skip
            return (
                f"allocate it with mutagrad.numpy (import mutagrad.numpy as mnp), which can "
                f"hold traced values:\n      line {number}: `{text}`\n      becomes: `{rewritten}`"
                + plain
            )
    return (
        f"allocate `{name}` in the function so that it can hold traced values: "
        f"np.zeros(n, like={traced}) (any traced array as like=), np.zeros_like({traced}), or "
        "mnp.zeros(n) (import mutagrad.numpy as mnp); an array kept across calls (a "
        "module-level scratch buffer) is made with mutagrad.array(np.zeros(n))"
    )


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


def _raw_write(expression: ast.expr | None, site: Site) -> tuple[str, list[str]]:
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
        and _root_name(value) in _NUMPY_MODULE_NAMES
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
    expression: ast.expr | None, operation: str, site: Site
) -> tuple[str, list[str]]:
    """What converted a traced value (in the user's words) and the fixes that suit it."""
    which = _concatenator(expression)
    if which is not None and not any(marker in operation for marker in _RAW_WRITE_MARKERS):
        assert isinstance(expression, ast.Subscript)
        return _concatenator_construct(expression, which)
    if (
        any(marker in operation for marker in _RAW_WRITE_MARKERS)
        or isinstance(expression, ast.Subscript)
        or _is_setitem_call(expression)
    ):
        return _raw_write(expression, site)
    if not isinstance(expression, ast.Call):
        return f"{operation} of a traced value", [
            "keep the value an array: numpy functions accept traced arrays as they are",
            "if no gradient should flow through it, convert mutagrad.ignore_derivatives(x)",
        ]
    func = expression.func
    called = ast.unparse(func)
    name = func.attr if isinstance(func, ast.Attribute) else called
    module = _root_name(func) if isinstance(func, ast.Attribute) else None
    argument = ast.unparse(expression.args[0]) if expression.args else "x"
    rest = [ast.unparse(a) for a in expression.args[1:]]
    arguments = ", ".join([argument, *rest])
    # The call with its first argument as a constant: the fix when no gradient should flow.
    ignored = f"{called}({', '.join([f'mutagrad.ignore_derivatives({argument})', *rest])})"
    if module in _NUMPY_MODULE_NAMES and name in _ASARRAY_FUNCTIONS:
        if expression.args and _list_argument(expression, name) == 0:
            return f"{called}([...]) of a list holding traced values", [
                f"{module}.stack({argument}) keeps the gradient of every element",
                f"or mnp.asarray({argument}) (import mutagrad.numpy as mnp)",
            ]
        return f"{called}({argument}) of a traced array", [
            f"remove the conversion: numpy functions accept the traced `{argument}` as it is",
            f"or use mnp.asarray({argument}) (import mutagrad.numpy as mnp), which keeps it traced",
        ]
    if module in _NUMPY_MODULE_NAMES and name == "array":
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
    if module in _NUMPY_MODULE_NAMES and name == "full" and len(expression.args) >= 2:
        # numpy converts the fill value itself, before any protocol could see it.
        shape, fill = argument, ast.unparse(expression.args[1])
        return f"{called}({shape}, {fill}) with a traced fill value", [
            f"mnp.full({shape}, {fill}) (import mutagrad.numpy as mnp) keeps its gradient",
            f"or {called}({shape}, {fill}, like={fill}), or np.full_like(an_array, {fill})",
        ]
    if module in _NUMPY_MODULE_NAMES and isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and _is_scalar_type(name):
            return _scalar_type_construct(called, module, name, argument)
        position = _list_argument(expression, name)
        if position is not None:
            return _list_construct(expression, called, module, position)
    if module in ("math", "cmath"):
        numpy_name = _MATH_TO_NUMPY.get(name, name)
        if hasattr(numpy, numpy_name):
            fix = f"use np.{numpy_name}({arguments}): numpy's version keeps the gradient"
        else:
            fix = "use the numpy function that computes it: numpy's versions keep the gradient"
        return f"{called}() of a traced value", [
            fix,
            f"if no gradient should flow through it, {ignored}",
        ]
    if isinstance(func, ast.Name) and name in ("float", "int", "complex", "bool"):
        return f"{name}({argument}) of a traced value", [
            f"keep `{argument}` as it is: a traced scalar works wherever numpy takes a number",
            f"if only its value is needed (printing, logging), "
            f"{name}(mutagrad.ignore_derivatives({argument}))",
        ]
    if isinstance(func, ast.Attribute) and name in ("item", "tolist"):
        owner = ast.unparse(func.value)
        return f"{called}() of a traced array", [
            f"keep `{owner}` an array (index it, `{owner}[i]`, instead of converting)",
            f"if only its values are needed, mutagrad.ignore_derivatives({owner}).{name}()",
        ]
    return f"{called}(), which converts the traced value it gets to a raw array ({operation})", [
        f"give {called} a derivative rule: mutagrad.defvjp or @mutagrad.rrule "
        "(on a function decorated with @mutagrad.primitive)",
        f"if no gradient should flow through it, {ignored}",
    ]


def is_user_frame(frame: FrameType) -> bool:
    """Whether ``frame`` runs the user's code (not mutagrad's machinery or numpy's)."""
    code = frame.f_code
    return code in _user_sites or (code not in _internal_code and _classify(code) is not None)


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
        known = _EXPLICIT_CASTS[site] = _is_explicit_cast(_expression_at(site))
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
    if isinstance(func, ast.Attribute) and _root_name(func) in _NUMPY_MODULE_NAMES:
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
    construct, fixes = _conversion_construct(_expression_at(site), operation, site)
    if len(fixes) == 1:
        advice = f"Fix: {fixes[0]}."
    else:
        advice = "Fixes:\n" + "\n".join(f"  - {fix};" for fix in fixes[:-1]) + f"\n  - {fixes[-1]}."
    return (
        f"{construct}, at\n{format_site(site)}\n"
        f"would drop the value's gradient, so mutagrad refuses.\n{advice}"
    )


def with_article(word: str) -> str:
    """``word`` with "a" or "an" before it, as read aloud ("an int64", "a uint8")."""
    return f"{'an' if word[:1] in 'aeio' else 'a'} {word}"
