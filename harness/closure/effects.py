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
from collections.abc import Callable, Collection

from harness.closure.inert import inert
from harness.closure.modules import RevisionFiles
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
    pending = [(path, path) for path in sorted(read)]
    while pending:
        path, via = pending.pop()
        for node, offset in _statements(cache, files, path):
            for module in _imported(files, node, path):
                if module in seen or not resolution_code(module):
                    continue
                seen.add(module)
                where = f"{path}:{node.lineno + offset}"
                _check_file(cache, files, module, where, resolution_code)
                pending.append((module, via))


def _check_file(cache: SourceCache, files: RevisionFiles, path: str, where: str,
                resolution_code: Callable[[str], bool]) -> None:  # fmt: skip
    placed = _statements(cache, files, path)
    outside = _outside_names(files, [node for node, _ in placed], path, resolution_code)
    for node, offset in placed:
        if not inert(node, outside):
            raise Unevaluable(
                f"{where} imports {path}, whose module-level code at line "
                f"{node.lineno + offset} may "
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
    """The repository files a top-level import statement runs (submodules named by
    `from package import module` too)."""
    found: list[str | None] = []
    if isinstance(node, ast.Import):
        found = [files.module_file(alias.name, path) for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        module = node.module or ""
        found.append(files.module_file(module, path, node.level))
        for alias in node.names:
            found.append(files.module_file(f"{module}.{alias.name}".lstrip("."), path,
                                           node.level))  # fmt: skip
    return [f for f in found if f is not None]


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
