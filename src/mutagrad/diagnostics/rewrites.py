"""Rewriting the user's line so that an operation saves a copy: the fix a poison error offers.

:func:`rewrite_with_copy` finds, in the expression a site records, the
argument (or result) a rule saved, and returns the line with ``.copy()``
added to it, when it is certain which expression gave the saved array.
"""

from __future__ import annotations

import ast
import linecache

from mutagrad.diagnostics.sites import (
    NUMPY_MODULE_NAMES,
    Site,
    root_name,
    site_columns,
)

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


# Functions and methods that write into an argument: handing them a copy would
# move their write away from the array the program reads afterwards.
_WRITERS = frozenset(
    {"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis", "at", "sort",
     "fill", "partition", "resize", "itemset", "setfield"}
)  # fmt: skip


# Operands that are certainly not the saved array (which was a WrappedArray).
_LITERALS = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.JoinedStr)


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
        return [operation.target, operation.value]
    if not isinstance(operation, ast.Call):
        return None
    func = operation.func
    if isinstance(func, ast.Name):
        called, operands = func.id, list(operation.args)
    elif isinstance(func, ast.Attribute):
        called = func.attr
        numpy_function = root_name(func.value) in NUMPY_MODULE_NAMES
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
