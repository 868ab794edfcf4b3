"""The texts of mutagrad's most common errors, built where they are raised.

Each names the user's line (the innermost frame outside mutagrad and numpy)
and the fix, so that a message reads the same from every module that raises
it.
"""

from __future__ import annotations

import ast
import re
import threading
from typing import Any

import numpy as np

from mutagrad.diagnostics.conversions import describe_conversion
from mutagrad.diagnostics.sites import (
    Site,
    describe_site,
    expression_at,
    format_site,
    user_site,
    with_article,
)
from mutagrad.errors import UnsupportedAttributeError


def function_name(func: Any) -> str:
    """How numpy documents ``func``: ``np.cov``, ``np.linalg.svd``; others by module."""
    module = getattr(func, "__module__", "") or ""
    name = getattr(func, "__name__", repr(func))
    if module.startswith("numpy"):
        sub = module.split(".")[1] if "." in module else ""
        prefix = (
            "np." if sub in ("", "_core", "core", "lib") or sub.startswith("_") else f"np.{sub}."
        )
        return prefix + name
    return f"{module}.{name}" if module else name


def missing_rule_message(name: str) -> str:
    """A MissingRuleError's message for numpy function ``name`` called on a traced array."""
    return (
        f"mutagrad has no derivative rule for {name}, which was called on a traced array at\n"
        f"    {describe_site(user_site())}\n"
        "and numpy does not implement it in Python that mutagrad could trace through.\n"
        "Fixes:\n"
        f"  - register a rule:  mutagrad.defvjp({name}, vjp_for_arg0, ..., reads=...)\n"
        f"    or  @mutagrad.rrule({name})  def rule(*args): ... return y, pullback\n"
        "  - or, if no gradient should flow through it, pass mutagrad.ignore_derivatives(x)."
    )


def missing_forward_rule_message(name: str, user_rule: str | None = None) -> str:
    """A MissingRuleError's message: forward mode met an operation with a reverse rule only.

    ``user_rule``: "defvjp" or "rrule" where the rule is the user's.
    """
    if user_rule == "defvjp":
        fix = (
            f"  - give it one beside its vjps:  mutagrad.defjvp({name}, jvp_0, ...), "
            "jvp_i(t, ans, *args) being the output's tangent due to argument i's tangent t;\n"
        )
    elif user_rule == "rrule":
        fix = (
            "  - an rrule works forward by transposing its pullback at a forward level alone "
            "(jvp, jacfwd), not under other levels (hessian, hvp, a gradient call around): "
            f"register the rule with mutagrad.defvjp({name}, ...) and "
            f"mutagrad.defjvp({name}, ...) instead;\n"
        )
    else:
        fix = (
            "  - wrap the call in a function marked @mutagrad.primitive and register its "
            "rules with mutagrad.defvjp and mutagrad.defjvp;\n"
        )
    return (
        f"forward mode (jvp, jacfwd, linearize, hvp, hessian) has no forward rule for {name}, "
        f"which was called on a value with a tangent at\n    {describe_site(user_site())}\n"
        "Fixes:\n" + fix + "  - or differentiate this function in reverse mode (grad, jacrev, "
        "hessian_reverse);\n"
        "  - or, if no derivative should flow through it, pass "
        "mutagrad.ignore_derivatives(x)."
    )


def forwarddiff_closure_message(site: Site | None) -> str:
    """forwarddiff's f read a traced value of the gradient call around it (not its x)."""
    return (
        "forwarddiff(f, x): f read a traced value of the gradient call around it, other than "
        f"x, at\n    {describe_site(site)}\nforwarddiff differentiates f in x alone: that "
        "value's derivative would be lost.\nFix: pass the value as part of x (concatenate "
        "it), or call f directly instead of through forwarddiff."
    )


def conversion_message(operation: str) -> str:
    """A TracerConversionError's message: the user's construct that converted, and its fix."""
    return describe_conversion(user_site(), operation)


def pickle_message() -> str:
    """Pickling a traced value (pickle, copyreg, multiprocessing, shelve)."""
    return (
        f"pickling a traced value, at\n    {describe_site(user_site())}\n"
        "would send its numbers without their gradient (whatever is computed from the "
        "unpickled copy is a constant), so mutagrad refuses.\n"
        "Fixes:\n"
        "  - keep the computation in this process (threads started inside f are traced);\n"
        "  - or, if no gradient should flow through the copy, pickle "
        "mutagrad.ignore_derivatives(x)."
    )


def hash_message() -> str:
    """Hashing a traced scalar: a dict, set or cache keyed by it."""
    return (
        f"hash() of a traced scalar, at\n    {describe_site(user_site())}\n"
        "A dict, set or functools.lru_cache keyed by it matches keys by number alone: it "
        "would hand back a value computed from another traced value, or from an earlier "
        "gradient call, with that value's gradient. So mutagrad refuses.\n"
        "Fixes:\n"
        "  - compute the value instead of looking it up (no cache inside the differentiated "
        "function);\n"
        "  - or key by float(mutagrad.ignore_derivatives(v)) and store only values that carry "
        "no gradient."
    )


def frozen_write_message(arguments: list[tuple[int, Any]], site: Site | None) -> str:
    """``f`` wrote into a caller's array that the gradient call made read-only meanwhile."""
    described = []
    for i, x in arguments:
        text = f"argument {i} (shape {x.shape})" if i >= 0 else f"an array of shape {x.shape}"
        if x.base is not None:
            owner = x
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            text += f", a view of an array of shape {owner.shape}"
        described.append(text)
    return (
        f"f wrote into a read-only array, at\n{format_site(site)}\n"
        "While a gradient call runs, mutagrad makes the caller's arrays passed as arguments "
        "read-only, and the arrays they are views of, so that a write to them by name cannot "
        "change an input behind the tape: "
        + "; ".join(described)
        + ". (If the array written is not one of them, it was read-only before the call.)\n"
        "Fixes:\n"
        "  - write through the argument f receives (mutagrad copies it on its first write, and "
        "the caller's array stays as it was);\n"
        "  - or pass the whole array and take the view inside f, if f must write the rest of it."
    )


def made_writeable_message(what: str) -> str:
    """A caller's array that the call made read-only was made writeable again while ``f`` ran."""
    return (
        f"{what} passed to the call was made writeable again while f ran (setflags(write=True) on "
        "the caller's array, which mutagrad made read-only for the call). mutagrad proved no "
        "view of that array existed, and so does not read it again to check it: a write after "
        "the flag was changed would not be seen, and the derivative could be wrong.\n"
        "Fix: do not change the flags of an array passed to the call; write to a copy (or to "
        "the argument f receives, which mutagrad copies on its first write)."
    )


_UNBOUND_METHOD = re.compile(
    r"descriptor '(\w+)' (?:for '([\w.]+)' objects doesn't apply to a|requires a '([\w.]+)' "
    r"object but received a) '(WrappedArray|WrappedScalar|Buffer)'"
)


def unbound_method_called(text: str) -> tuple[str, str] | None:
    """``(class, method)`` when ``text`` is Python's refusal of ``np.ndarray.method(traced)``."""
    found = _UNBOUND_METHOD.search(text)
    if found is None:
        return None
    owner = found.group(2) or found.group(3)
    return owner, found.group(1)


def unbound_method_message(owner: str, method: str, site: Site | None) -> str:
    """``np.ndarray.sort(y)``: a C method of numpy's called unbound on a traced value."""
    name = {"numpy.ndarray": "np.ndarray", "numpy.generic": "np.generic"}.get(owner, owner)
    operator = _IN_PLACE_OPERATORS.get(method)
    if operator is not None:
        fix = f"write the operator, y {operator} value"
    elif method.startswith("__"):
        fix = f"use the operator or builtin that calls {method} on y"
    else:
        fix = f"call the method on the value, y.{method}(...)"
        if hasattr(np, method):
            fix += f", or np.{method}(y, ...)"
    return (
        f"{name}.{method}(y, ...) calls {name}'s C method unbound on a traced value, at\n"
        f"{format_site(site)}\n"
        "A traced array answers isinstance(y, np.ndarray) as an ndarray would, but it is not "
        "one in memory, and numpy's C methods take only real ndarrays.\n"
        f"Fix: {fix}; that is traced."
    )


_IN_PLACE_OPERATORS = {
    "__iadd__": "+=", "__isub__": "-=", "__imul__": "*=", "__itruediv__": "/=",
    "__ifloordiv__": "//=", "__imod__": "%=", "__ipow__": "**=", "__imatmul__": "@=",
    "__iand__": "&=", "__ior__": "|=", "__ixor__": "^=", "__ilshift__": "<<=",
    "__irshift__": ">>=",
}


# ndarray subclasses whose values and operations are plain ndarray's: mutagrad
# may treat them as such (np.memmap only changes where the memory lives).
PLAIN_SUBCLASSES: frozenset[type] = frozenset({np.memmap})


def subclass_message(kind: type, what: str) -> str:
    """An ndarray subclass (np.matrix, np.ma.MaskedArray, ...) met a traced value."""
    name = f"{kind.__module__}.{kind.__qualname__}"
    masked = issubclass(kind, np.ma.MaskedArray)
    fixes = [
        "np.asarray(a) (or np.ma.getdata(a)) if plain array semantics are meant"
        if masked
        else "np.asarray(a) if plain array semantics are meant",
    ]
    if masked:
        fixes.append("a.filled(value) to give the masked elements a value, or np.ma.compressed(a)"
                     " to drop them, before the computation")  # fmt: skip
    return (
        f"{what} is {with_article(name)}, an ndarray subclass, at\n"
        f"    {describe_site(user_site())}\n"
        f"Its operations differ from a plain array's (the masked elements skipped, `**` a "
        "matrix power, ...), and mutagrad has rules for plain arrays only: differentiating it "
        "as one would give numpy's values for a different program, so mutagrad refuses.\n"
        + _fix_list(fixes)
    )


def view_stored_by_c_code_message(call_site: Site, site: Site | None) -> str:
    """C code (the call at ``call_site``) stored into a traced array a view of that array
    through ``__setitem__``: numpy's shuffle taking a traced array for a Python sequence.
    ``site`` is the user's line, where the message points."""
    call = expression_at(call_site)
    func = call.func if isinstance(call, ast.Call) else None
    called = f"{ast.unparse(func)}()" if func is not None else "a call"
    if isinstance(func, ast.Attribute) and func.attr == "shuffle":
        assert isinstance(call, ast.Call)
        y = ast.unparse(call.args[0]) if call.args else "y"
        permutation = f"{ast.unparse(func.value)}.permutation(len({y}))"
        return (
            f"{called} met a traced array whose rows are views, at\n{format_site(site)}\n"
            "numpy's shuffle checks for an ndarray in C, where a traced array is not one, and "
            f"treats it as a Python sequence: it swaps two rows as `{y}[i], {y}[j] = {y}[j], "
            f"{y}[i]` does, and as the rows are views, the second store copies back the row "
            "the first has just overwritten, so rows come out duplicated. On an ndarray numpy "
            "swaps the rows through a buffer. mutagrad refuses rather than compute another "
            "result than numpy's. (A 1-D array shuffles as it is: its elements are not views.)\n"
            f"Fix: {y} = {y}[{permutation}] (or {y}[...] = ..., to shuffle in place), which "
            "is differentiated; from the same generator state it draws the permutation the "
            "shuffle would (numpy 2.2 to 2.5 draw the same swaps for both; numpy does not "
            "promise it)."
        )
    return (
        f"C code run by {called} stored into a traced array a view of that same array, at\n"
        f"{format_site(site)}\n"
        "C code that checks for an ndarray in C does not see one in a traced array and falls "
        "back to Python's sequence protocol (a[i] = a[j]); a view it read may change under it "
        "before it stores it, where for an ndarray it would take another path (numpy's "
        "shuffle swaps rows through a buffer). mutagrad refuses rather than risk another "
        "result than numpy's.\n"
        "Fix: write the rows in Python, `a[i] = a[j]` statements or one fancy index "
        "`a = a[order]`, which mutagrad follows as numpy does."
    )


def _fix_list(fixes: list[str]) -> str:
    """``Fix: a.`` or ``Fixes:`` and one item a line."""
    if len(fixes) == 1:
        return f"Fix: {fixes[0]}."
    return "Fixes:\n" + "".join(f"  - {fix};\n" for fix in fixes[:-1]) + f"  - {fixes[-1]}."


def leaf_message(x: Any, name: str) -> str:
    """An argument of a gradient call that mutagrad cannot differentiate, with the fixes."""
    fixes = ["pass it as a keyword argument if it should not be differentiated (keyword "
             "arguments reach f as they are)"]  # fmt: skip
    if isinstance(x, (np.ndarray, np.generic, bool, complex)):
        dtype = np.asarray(x).dtype
        what = f"{'an array' if np.ndim(x) else 'a number'} of dtype {dtype}"
        if dtype.kind == "b":
            reason = "booleans have no derivative"
            fixes.append("x.astype(float) if its values stand for numbers")
        else:
            reason = f"values of dtype {dtype} have no derivative"
            fixes.append("convert it to a float array if its values stand for numbers")
    else:
        what = f"{with_article(type(x).__qualname__)} object"
        reason = (
            "mutagrad cannot see into it: it is not an array, a number, or a structure whose "
            "leaves mutagrad knows (tuple, list, dict, OrderedDict, defaultdict, namedtuple, "
            "dataclass, attrs class)"
        )
        fixes.append("or make its class a dataclass or an attrs class: their fields are "
                     "differentiated like a dict's values")  # fmt: skip
    return (
        f"{name} of the gradient call is {what}: {reason}, so it would get no gradient.\n"
        f"    at {describe_site(user_site())}\n" + _fix_list(fixes)
    )


def not_callable_message(f: Any) -> str:
    """The function to differentiate is not a function (``gradient(3, x)``)."""
    return (
        f"mutagrad differentiates a function, but the function given is "
        f"{with_article(type(f).__qualname__)} ({f!r:.40}), which cannot be called.\n"
        f"    at {describe_site(user_site())}\n"
        "Fix: pass the function first and its arguments after it: gradient(f, x), grad(f)(x), "
        "jacobian(f, x)."
    )


def integer_store_message(site: Site | None) -> str:
    """A traced float stored into an integer array, which numpy truncates without a word."""
    return (
        f"storing a traced floating-point value into an integer array, at\n{format_site(site)}\n"
        "truncates it (numpy does so silently): the stored number has no derivative, and a "
        "float buffer was most likely meant, so mutagrad refuses, as it does for the same "
        "store into a traced array.\n"
        "Fixes:\n"
        "  - make the buffer a float array (np.zeros(n), np.zeros_like(x));\n"
        "  - or, if the truncation is intended, cast explicitly: buf[i] = int(v), or "
        "buf[:] = v.astype(int)."
    )


def refused(attribute: str, reason: str, instead: str) -> UnsupportedAttributeError:
    """The error for an ndarray attribute mutagrad refuses (the caller raises it)."""
    return UnsupportedAttributeError(
        f"{attribute} is refused on mutagrad's arrays, at {describe_site(user_site())}:\n"
        f"{reason}.\nFix: {instead}."
    )


def writable_memory_reason(attribute: str) -> str:
    """Why handing out an array's memory address is refused."""
    return (
        f"{attribute} hands out the address of the array's memory, and a write through "
        "it would bypass the version counter that keeps gradients right"
    )


def iterated_for_bytes_refused() -> UnsupportedAttributeError:
    """``bytearray(x)``: Python falls back to iterating x, which has no buffer to copy."""
    return refused(
        "bytearray(x)",
        "bytearray copies an ndarray's memory through the buffer protocol, which a "
        "WrappedArray does not offer; without it Python iterates the elements, a different "
        "result (3 bytes for an int64 array of 3, where numpy gives 24)",
        "bytearray(x.tobytes()) (for a value carrying a gradient, whose bytes carry none: "
        "bytearray(mutagrad.ignore_derivatives(x).tobytes()))",
    )


def integer_bytes_refused() -> UnsupportedAttributeError:
    """``bytes(x)`` of a 0-d integer array: a size to bytes(), memory to int.from_bytes."""
    return refused(
        "bytes(x) of a 0-d integer array",
        "bytes() reads an integer as a size (numpy's bytes(np.array(3)) is 3 zero bytes) "
        "while int.from_bytes(x) and b'%b' % x read its memory, and both ask the array the "
        "same question (__bytes__), so mutagrad cannot tell which answer is wanted",
        "bytes(int(x)) for that many zero bytes, x.tobytes() for the array's memory",
    )


def attribute_refused(attribute: str, instead: str) -> UnsupportedAttributeError:
    """Setting an attribute that changes how an array's memory is read (dtype, strides...)."""
    return refused(
        f"setting x.{attribute}",
        "it changes how the array's memory is read, behind the tape's back",
        instead,
    )


# -- what the engine refuses ---------------------------------------------------------


def _thread_name(ident: int) -> str:
    names = {t.ident: t.name for t in threading.enumerate()}
    return repr(names.get(ident, ident))


def other_thread_message(operation: str, site: Site | None, owner: int) -> str:
    """A traced value used in a thread that its gradient call does not trace."""
    return (
        f"{operation} on a traced value in thread {threading.current_thread().name!r}, at\n"
        f"{format_site(site)}\n"
        f"but that value belongs to the gradient call running in thread {_thread_name(owner)}. "
        "mutagrad traces the thread that called it: here the value would count as a constant, "
        "and the gradient would be wrong, so mutagrad refuses.\n"
        "Fix: do this work in the thread that called mutagrad (the same numpy code, without the "
        "thread or pool), or hand the thread values that carry no gradient "
        "(mutagrad.ignore_derivatives(x))."
    )


def other_thread_write_message(operation: str, site: Site | None, owner: int) -> str:
    """An in-place write recorded from a thread other than its gradient call's."""
    return (
        f"{operation} on a traced array in thread {threading.current_thread().name!r}, at\n"
        f"{format_site(site)}\n"
        f"while the gradient call it belongs to runs in thread {_thread_name(owner)}. Reads "
        "from such a thread are recorded, but writes are not: two threads writing parts of one "
        "array at once would each record their write over the array's value before the "
        "other's, and one write would be lost from the gradient, so mutagrad refuses.\n"
        "Fix: do the writes in the thread that called mutagrad (a thread may compute values "
        "that the calling thread then writes into the buffer)."
    )


def closure_snapshot_message(rule: str, capture_site: Site | None, write: Any) -> str:
    """Snapshot mode would have to copy a value that a closure rule holds itself."""
    return (
        f"snapshot mode must keep the old value that the rule for {rule} saved,\n"
        f"{format_site(capture_site)}\n"
        f"before {write.operation} overwrites it:\n{format_site(write.site)}\n"
        "but that rule's pullback is a closure holding the array itself, which mutagrad\n"
        "cannot redirect to a copy.\n"
        "Fix: register the rule with declared saved values instead:\n"
        "  mutagrad.defvjp(fn, vjp_0, vjp_1, ..., reads=((1,), (0,)))\n"
        "so the engine owns what the pullback reads."
    )


def no_vjp_message(rule: str, i: int) -> str:
    """An argument that carries a gradient reaches a rule without a vjp for it."""
    return (
        f"{rule} has no derivative with respect to argument {i}, "
        "but that argument depends on a differentiated input.\n"
        f"Fix: give {rule} a vjp for argument {i}, or pass "
        "mutagrad.ignore_derivatives(...) for that argument if no gradient should flow."
    )


def complex_output_message(what: str) -> str:
    """A gradient asked of a function that returned a complex number."""
    return (
        f"{what} needs f to return a real number, but it returned a complex one: the "
        "derivative of a complex function of complex inputs is not a gradient (JAX's grad "
        "and Zygote's gradient refuse it too).\n"
        "Fixes:\n"
        "  - differentiate a real quantity of it: np.abs(y) ** 2, np.real(y) or np.imag(y);\n"
        "  - for f'(z) of a holomorphic f, mutagrad.grad(f, holomorphic=True);\n"
        "  - for the vector-Jacobian product with a cotangent of your choice, mutagrad.vjp(f, z)."
    )


def complex_jacobian_message(what: str) -> str:
    """A Jacobian asked of a function that returned complex values."""
    return (
        f"{what} needs f to return real values, but it returned complex ones: one sweep per "
        "output element, seeded with 1, gives only half of the derivative of a complex "
        "output (JAX's jacrev refuses it too, unless f is holomorphic).\n"
        "Fixes:\n"
        "  - the Jacobians of np.real(f(z)) and np.imag(f(z)), which together are all of it;\n"
        "  - for the complex Jacobian df/dz of a holomorphic f, "
        "mutagrad.jacobian(f, holomorphic=True) (jacrev too; grad for one number);\n"
        "  - for vector-Jacobian products with cotangents of your choice, mutagrad.vjp(f, z)."
    )


def complex_message(operation: str, site: Site | None, users_rule: bool = False) -> str:
    """A complex value reaching a rule not written for complex values (``users_rule``: one
    registered with defvjp or rrule, which can declare itself right for them)."""
    opt_in = (
        "; or, if the rule's vjps are right for complex values in JAX's convention (the "
        "transpose of the derivative, the gradient of a real f being df/dx - i df/dy), "
        "register it with handles_complex=True (defvjp(..., handles_complex=True), "
        "rrule(fn, handles_complex=True))"
        if users_rule
        else ""
    )
    return (
        f"{operation} has no derivative rule for complex values yet, and it met a complex "
        f"value that depends on a differentiated input, at\n{format_site(site)}\n"
        "mutagrad differentiates complex code only through rules written and tested for "
        "complex values, rather than give a gradient a real-only rule may get wrong.\n"
        "Fix: write this step in real arithmetic (np.real(z), np.imag(z) and real "
        "operations), or pass mutagrad.ignore_derivatives(z) if no gradient should flow "
        f"here{opt_in}."
    )


_COPY_EXAMPLE = "return v.copy() where it returns v, a view of its argument or the argument"


def aliased_write_message(operation: str, rule: str, call: Site | None,
                          site: Site | None) -> str:  # fmt: skip
    """A write through the output of a user's rule that shares memory with its argument."""
    return (
        f"{operation} through the output of {rule}, which shares memory with {rule}'s "
        f"argument (numpy: {rule} returns a view of it, or the argument itself), at\n"
        f"{format_site(site)}\n{rule} was called at\n{format_site(call)}\n"
        "In numpy the write changes the argument too, behind the rule's derivative, so "
        "mutagrad refuses it.\n"
        f"Fixes:\n  - return a copy from {rule} ({_COPY_EXAMPLE}) if its output is meant to "
        "be written on its own;\n"
        "  - or write to the argument itself."
    )


def aliased_read_message(rule: str, call: Site | None, write: Any, forward: bool) -> str:
    """The output of a user's rule is needed after a write to the argument memory it shares."""
    when = (
        "at a forward level, where the output's tangent, computed for the old values, may be "
        "read at any time: the write is refused"
        if forward
        else "and a value read from that output afterwards reaches the result: "
        f"it holds the new values, which {rule}'s rule did not compute"
    )
    return (
        f"the output of {rule}, called at\n{format_site(call)}\n"
        f"shares memory with {rule}'s argument (numpy: a view of it, or the argument itself), "
        f"and {write.operation} wrote into that memory at\n{format_site(write.site)}\n{when}.\n"
        f"Fixes:\n  - return a copy from {rule} ({_COPY_EXAMPLE}) if its output is meant to "
        "keep its values;\n"
        + (
            "  - or write to a copy of the argument (y = y.copy() before writing)."
            if forward
            else "  - or use the output only before writing to the argument."
        )
    )


def aliased_plain_message(rule: str, i: int, call: Site | None) -> str:
    """A user's rule returned memory of a plain ndarray argument (its private copy)."""
    return (
        f"the output of {rule} shares memory with its argument {i}, a plain numpy array (not "
        f"traced), at\n{format_site(call)}\n"
        "mutagrad hands a rule private copies of plain arrays (nothing tracks writes to them), "
        "so the output cannot be numpy's view of that array: a write to either would not "
        "show in the other.\n"
        f"Fix: return a copy from {rule} (return c[::-1].copy(), not c[::-1])."
    )
