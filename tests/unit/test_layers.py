"""The package follows the flow: each stage imports only the stages before it.

Read from the source with `ast` (nothing is imported), so a new import that
goes backwards, or any import cycle, fails here with the modules named.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "harness"

# The flow, upstream first. A module may import its own package and any earlier one.
LAYERS = [
    {"errors"},
    {"files", "testing", "gitcmd", "gitcommit", "spans", "records"},
    {"patches"},
    {"gitio", "http", "matrix"},
    {"closure", "releases"},
    {"engine"},
    {"scan"},
    {"report"},
    {"github"},
    {"session", "option_values"},
    {"cli", "pytest_plugin"},
    {"__main__"},
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The harness modules `path` imports (at any depth, deferred imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("harness")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness"):
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in known else node.module)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(path, set(known)) - {name} for name, path in known.items()}


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer(module: str) -> int:
    name = stage(module)
    if name == "__init__":
        return 0
    return next(n for n, names in enumerate(LAYERS) if name in names)


def test_every_stage_has_a_layer():
    assert {stage(m) for m in modules()} - {"__init__"} <= set().union(*LAYERS)


def goes_backwards(importer: str, imported: str) -> bool:
    """A stage may import itself and earlier stages, not a later one nor a sibling."""
    if stage(imported) in (stage(importer), "__init__"):
        return False
    return layer(imported) >= layer(importer)


def test_no_module_imports_a_later_stage():
    backwards = [
        f"{importer} imports {imported}"
        for importer, targets in graph().items()
        for imported in targets
        if goes_backwards(importer, imported)
    ]
    assert backwards == []


def test_no_module_outside_the_cli_imports_a_command():
    offenders = [
        f"{importer} imports {imported}"
        for importer, targets in graph().items()
        for imported in targets
        if stage(imported) == "cli" and stage(importer) not in ("cli", "__main__")
    ]
    assert offenders == []


def test_no_import_cycles():
    edges = graph()
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert cycles == []
