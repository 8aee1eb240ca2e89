"""The package's shape shows its architecture, and stays that way (DESIGN.md, "Layout"; spec/README.md).

The spec as code sits at the package root and imports nothing from the folders; `live/` builds
on the spec; `storage/` and `wire/` (the conformance protocol) on both, and not on each other;
`logcheck/` on storage; `testing/` (strategies, machines) on wire and storage; `conformance/` (the
runner) on testing; `cli/` on everything. An import inside a function, which would hide a loop or
a cost from this test, is not allowed; neither is a module of more than 400 lines or a function of
more than 80. A module loaded by name when it is needed (`importlib.import_module`: a command when
it is dispatched, a storage backend when a log of its format is opened, an implementation when it
is named) is not an arrow of the graph: what it loads sits above or beside the caller, and
`tests/test_startup.py` holds what each command loads.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest
import sessionspec

PACKAGE = Path(sessionspec.__file__).parent
LAYERS: dict[str, frozenset[str]] = {
    "spec": frozenset({"spec"}),
    "live": frozenset({"spec", "live"}),
    "storage": frozenset({"spec", "live", "storage"}),
    "wire": frozenset({"spec", "live", "wire"}),
    "logcheck": frozenset({"spec", "live", "storage", "logcheck"}),
    "testing": frozenset({"spec", "live", "storage", "wire", "testing"}),
    "conformance": frozenset({"spec", "live", "storage", "wire", "testing", "conformance"}),
    "cli": frozenset({"spec", "live", "storage", "wire", "logcheck", "testing", "conformance", "cli"}),
}
"""What each part may import: the parts below it, and never one beside it (storage and wire, logcheck and
wire, logcheck and testing stand apart)."""
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
FACADE = {"sessionspec", "sessionspec.__main__"}
"""The package's public face re-exports from every part (issue 17's `from sessionspec import ...`)."""
OVERSIZED: dict[str, str] = {}
"""Modules allowed over the line bound for now, each with the reason; this list must end empty (issue 13)."""
LATE_IMPORTS: dict[str, str] = {}
"""Modules whose imports inside functions are still to be moved up, with the reason; must end empty."""
LONG_FUNCTIONS: dict[str, str] = {}


@functools.cache
def modules() -> dict[str, Path]:
    """Each module of the package by name (found once: `imports` asks it of every name an import brings in)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def part_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else "spec"


def imports(path: Path) -> Iterator[tuple[str, bool]]:
    """(imported sessionspec module, whether the import is at module level)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body} | _guarded(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sessionspec"):
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            for name in names:
                yield (name if name in modules() else node.module), id(node) in top
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("sessionspec"):
                    yield alias.name, id(node) in top


def _guarded(tree: ast.Module) -> set[int]:
    """The nodes under a module-level `if TYPE_CHECKING:` or `try:`: an import there is still a module-level import."""
    return {id(inner) for top in tree.body if isinstance(top, (ast.If, ast.Try)) for inner in ast.walk(top)}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {imported for imported, _ in imports(path) if imported in known and imported != name}
            for name, path in known.items()}


def test_no_import_hides_inside_a_function() -> None:
    late = [f"{name}: {imported}" for name, path in modules().items() for imported, top in imports(path)
            if not top and name not in LATE_IMPORTS]
    assert not late, f"imports inside functions (each hides a loop or a cost): {late}"


def test_each_part_imports_only_the_parts_below_it() -> None:
    wrong = []
    for name, targets in graph().items():
        if name in FACADE:
            continue
        allowed = LAYERS[part_of(name)]
        wrong.extend(f"{name} -> {target}" for target in sorted(targets) if part_of(target) not in allowed)
    assert not wrong, f"imports that reach up the layers: {wrong}"


def test_the_module_graph_has_no_loop() -> None:
    edges = {name: {t for t in targets if t not in FACADE} for name, targets in graph().items() if name not in FACADE}
    state: dict[str, int] = {}
    loops: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                loops.append([*path[path.index(target):], target])
            elif target not in state:
                visit(target, [*path, target])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not loops, f"import loops: {loops[:5]}"


def _long_functions(name: str) -> list[str]:
    tree = ast.parse(modules()[name].read_text(encoding="utf-8"))
    return [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)" for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES and not _is_data_table(node)]


def test_no_exemption_is_stale() -> None:
    """An exemption whose module now keeps the rule must leave its list, as a stale failure list fails."""
    known = modules()
    lines = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in known.items()}
    stale = [f"OVERSIZED {name}" for name in OVERSIZED if name not in known or lines[name] <= MAX_MODULE_LINES]
    stale += [f"LATE_IMPORTS {name}" for name in LATE_IMPORTS
              if name not in known or all(top for _, top in imports(known[name]))]
    stale += [f"LONG_FUNCTIONS {name}" for name in LONG_FUNCTIONS if name not in known or not _long_functions(name)]
    assert not stale, f"exemptions no longer needed (remove them): {stale}"


def test_modules_are_short() -> None:
    long = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    over = {name: lines for name, lines in long.items() if lines > MAX_MODULE_LINES and name not in OVERSIZED}
    assert not over, f"modules over {MAX_MODULE_LINES} lines: {over}"


@pytest.mark.parametrize("name", sorted(modules()))
def test_functions_are_short(name: str) -> None:
    long = _long_functions(name)
    assert not long or name in LONG_FUNCTIONS, f"functions over {MAX_FUNCTION_LINES} lines in {name}: {long}"


def _is_data_table(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A function that names a few values and returns one literal (a table of cases) is data, not logic."""
    body = [statement for statement in node.body if not isinstance(statement, ast.Expr)]
    names = all(isinstance(statement, (ast.Assign, ast.AnnAssign)) for statement in body[:-1])
    return names and isinstance(body[-1], ast.Return) and isinstance(body[-1].value, (ast.List, ast.Tuple, ast.Dict))
