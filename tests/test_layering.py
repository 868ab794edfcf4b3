"""The import layering of mutagrad, read from the source with ``ast``.

Layers import downward only: ``errors`` <- ``diagnostics`` <- ``core`` <-
``traced`` <- ``rules`` <- the API modules <- the tools (``testing``, ``report``, ``coverage``,
``__main__``). Every import counts, including one inside a function, and so
does the package ``__init__`` that importing a module of another package runs
first. The edges are explicit: no string-keyed method table and no
duck-typed ``_mutagrad_*`` probe hides one.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mutagrad

SOURCE = Path(mutagrad.__file__).parent
TOOLS = ("mutagrad.testing", "mutagrad.report", "mutagrad.coverage", "mutagrad.__main__")

def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in SOURCE.rglob("*.py")}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The mutagrad modules ``name`` imports (``from a import b`` counts ``a.b`` if a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from a import b`` imports module a.b if there is one, else a name of a.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target != "mutagrad":
                found.add(target)
            # Importing a.b.c runs package a.b's __init__ first (unless a.b is the
            # importer's own package, already being imported).
            parent = target.rpartition(".")[0]
            while parent and parent != "mutagrad":
                if parent in known and not f"{name}.".startswith(f"{parent}."):
                    found.add(parent)
                parent = parent.rpartition(".")[0]
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm: the import cycles, as sets of modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return components


def test_diagnostics_import_only_errors():
    for name, targets in graph().items():
        if name.startswith("mutagrad.diagnostics"):
            allowed = ("mutagrad.diagnostics", "mutagrad.errors")
            above = {t for t in targets if not t.startswith(allowed)}
            assert not above, f"{name} imports {sorted(above)}"


def test_core_imports_nothing_above_it():
    for name, targets in graph().items():
        if name.startswith("mutagrad.core"):
            allowed = ("mutagrad.core", "mutagrad.errors", "mutagrad.diagnostics")
            above = {t for t in targets if not t.startswith(allowed)}
            assert not above, f"{name} imports {sorted(above)}"


def test_the_traced_array_imports_only_core():
    for name, targets in graph().items():
        if name.startswith("mutagrad.traced"):
            allowed = ("mutagrad.core", "mutagrad.errors", "mutagrad.diagnostics",
                       "mutagrad.traced")  # fmt: skip
            above = {t for t in targets if not t.startswith(allowed)}
            assert not above, f"{name} imports {sorted(above)}"


def test_rules_import_only_core_the_traced_array_and_each_other():
    for name, targets in graph().items():
        if name.startswith("mutagrad.rules"):
            allowed = ("mutagrad.core", "mutagrad.errors", "mutagrad.diagnostics",
                       "mutagrad.traced", "mutagrad.rules")  # fmt: skip
            above = {t for t in targets if not t.startswith(allowed)}
            assert not above, f"{name} imports {sorted(above)}"


def test_no_hidden_edge_a_string_table_or_a_duck_typed_probe():
    """Calls reach the array's methods and the engine reaches the array type through
    imports and the engine's registration (core.engine.register_traced_type) only."""
    for path in SOURCE.rglob("*.py"):
        text = path.read_text()
        for hidden in ("METHOD_RULES", "_mutagrad_traced", "_mutagrad_apply",
                       "__mutagrad_primitive__"):  # fmt: skip
            assert hidden not in text, f"{path.relative_to(SOURCE)} uses {hidden}"


def test_nothing_below_the_tools_imports_a_tool():
    for name, targets in graph().items():
        if not name.startswith(TOOLS) and name != "mutagrad":
            tools = {t for t in targets if t.startswith(TOOLS)}
            assert not tools, f"{name} imports {sorted(tools)}"


def test_there_is_no_import_cycle():
    assert strongly_connected(graph()) == []


def test_the_cycle_finder_finds_a_planted_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(edges) == [{"a", "b", "c"}]


def test_every_core_module_can_be_imported_first():
    """No module depends on being imported after another.

    ``import mutagrad`` fixes one order; each module is imported here first,
    with the package's own ``__init__`` run only afterwards.
    """
    script = (
        "import importlib, importlib.util, sys\n"
        "init, name = sys.argv[1], sys.argv[2]\n"
        "spec = importlib.util.spec_from_file_location(\n"
        "    'mutagrad', init, submodule_search_locations=[init.rpartition('/')[0]])\n"
        "package = importlib.util.module_from_spec(spec)\n"
        "sys.modules['mutagrad'] = package\n"
        "importlib.import_module(name)\n"
        "spec.loader.exec_module(package)\n"
    )
    try:
        import scipy  # noqa: F401
    except ImportError:  # the SciPy rule modules import SciPy, an optional extra
        scipy_missing = True
    else:
        scipy_missing = False
    for name in sorted(n for n in modules() if n.startswith(("mutagrad.core.", "mutagrad.rules"))
                       and not (scipy_missing and "scipy" in n)):  # fmt: skip
        run = subprocess.run(
            [sys.executable, "-c", script, str(SOURCE / "__init__.py"), name],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, f"importing {name} first fails:\n{run.stderr}"
