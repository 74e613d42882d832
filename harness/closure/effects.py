"""What importing the resolution code runs that an entry's closure leaves out.

In the project's process, importing a file runs all of its module-level code, and
that of every file it imports in turn. The closure of an entry point runs only the
statements its names need (and those that may change them: `closure/mutations.py`).
A file of the resolution code the closure never reads, imported by one it does
(`import sglang.srt.arg_groups.model_overrides  # registers them`), runs in the
project's process alone: leaving it out is sound only if its module-level code,
and that of the resolution code it imports in turn, binds its own names and does
nothing else (`harness.closure.inert`). Otherwise the entry is unevaluable, naming
the import and the statement, rather than resolved without what that code does.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Collection

from harness.closure.inert import inert
from harness.closure.modules import RevisionFiles
from harness.closure.names import postpones
from harness.closure.pieces import SourceCache
from harness.errors import Unevaluable

Placed = tuple[ast.stmt, int]  # a top-level statement and its piece's line offset


def check_imports(
    cache: SourceCache,
    files: RevisionFiles,
    read: Collection[str],
    resolution_code: Callable[[str], bool],
) -> None:
    """Raise Unevaluable if a file of `read` (the closure's files) imports, at module
    level, resolution code outside `read` whose import does more than bind names."""
    seen = set(read)
    pending: list[str] = []

    def visit(module: str, where: str) -> None:
        if module not in seen and resolution_code(module):
            seen.add(module)
            _check_file(cache, files, module, where, resolution_code)
            pending.append(module)

    pending.extend(sorted(read))
    for path in sorted(read):  # importing a module runs its packages' __init__.py first
        for package in _packages(files, path):
            visit(package, f"importing {path}")
    while pending:
        path = pending.pop()
        for node, offset in _statements(cache, files, path):
            for module in _imported(files, node, path):
                visit(module, f"{path}:{node.lineno + offset} imports {module}")


def _check_file(cache: SourceCache, files: RevisionFiles, path: str, where: str,
                resolution_code: Callable[[str], bool]) -> None:  # fmt: skip
    placed = _statements(cache, files, path)
    nodes = [node for node, _ in placed]
    outside = _outside_names(files, nodes, path, resolution_code)
    postponed = postpones(nodes)
    for node, offset in placed:
        if not inert(node, outside, postponed):
            raise Unevaluable(
                f"{where}, whose module-level code at {path}:{node.lineno + offset} may "
                "change what the resolution reads when the project imports it; an entry "
                "runs only the code its names need, so it cannot resolve without it"
            )


def _statements(cache: SourceCache, files: RevisionFiles, path: str) -> list[Placed]:
    """The file's top-level statements, each with the line its piece starts after (the
    pieces' nodes are shared and piece-relative: read them, never change them)."""
    layout = cache.layout_of(files, path)
    if layout is None:
        return []
    return [(node, offset) for piece, offset in zip(layout.pieces, layout.lines, strict=True)
            for node in piece.nodes]  # fmt: skip


def _imported(files: RevisionFiles, node: ast.stmt, path: str) -> list[str]:
    """The repository files a top-level statement's imports run, anywhere in it but in a
    function's body (`if`, `try`, a class body run as the file loads): each module, the
    packages above it, and submodules named by `from package import module`."""
    found: list[str | None] = []
    for child in _load_time(node):
        if isinstance(child, ast.Import):
            for alias in child.names:
                found += _dotted(files, alias.name, path, 0)
        elif isinstance(child, ast.ImportFrom):
            module = child.module or ""
            found += _dotted(files, module, path, child.level)
            for alias in child.names:
                name = f"{module}.{alias.name}" if module else alias.name
                found.append(files.module_file(name, path, child.level))
    return [f for f in found if f is not None]


def _dotted(files: RevisionFiles, module: str, path: str, level: int) -> list[str | None]:
    """`a.b.c` and each package above it (`a`, `a.b`), as files."""
    parts = module.split(".") if module else []
    return [files.module_file(".".join(parts[:n]), path, level)
            for n in range(0 if level else 1, len(parts) + 1)]  # fmt: skip


def _packages(files: RevisionFiles, path: str) -> list[str]:
    """The `__init__.py` of each package above the file at `path` that the repository
    holds (Python runs them before the module)."""
    found, directory = [], posixpath.dirname(path)
    while directory:
        init = f"{directory}/__init__.py"
        if init != path and files.exists(init):
            found.append(init)
        directory = posixpath.dirname(directory)
    return found[::-1]


def _load_time(node: ast.AST):
    """The nodes of a statement that run as its file loads (not a function's body)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        yield from _load_time(child)


def _outside_names(files: RevisionFiles, nodes: list[ast.stmt], path: str,
                   resolution_code: Callable[[str], bool]) -> frozenset[str]:  # fmt: skip
    """Names the file binds by importing from outside the resolution code (or from what
    the repository does not hold): calls rooted at them run no code of the resolution."""
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            sources = _imported(files, node, path)
            if not any(resolution_code(s) for s in sources):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return frozenset(names)
