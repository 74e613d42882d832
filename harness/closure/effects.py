"""What importing the resolution code runs: the files an entry's project imports, in order.

In the project's process, importing a file runs all of its module-level code, and
that of every file it imports in turn. A file of the resolution code the closure
never reads, imported by one it does for what its code does
(`import sglang.srt.arg_groups.model_overrides  # registers them`), runs in the
project's process all the same: its decorators fill the registries the resolution
reads. So an entry's closure reads such a file as it reads its own files
(`closure/mutations.py`): each top-level statement that may change what the closure
reads comes along, and runs as the file loads. `import_order` finds the files, in
the order Python finishes running them (a module after the modules it imports first,
a package's `__init__.py` before its modules): the order their registrations run in.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Iterable, Iterator

from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache


def import_order(
    cache: SourceCache,
    files: RevisionFiles,
    roots: Iterable[str],
    resolution_code: Callable[[str], bool],
) -> list[str]:
    """`roots` and the resolution code they import at module level, transitively, each
    file once, in the order Python would finish running them importing `roots` in turn
    (an import cycle is entered once, as Python enters it)."""
    done: list[str] = []
    started: set[str] = set()
    for root in roots:
        if root in started:
            continue
        started.add(root)
        stack = [(root, _imports_of(cache, files, root, resolution_code))]
        while stack:  # depth first, by hand: an import chain may be longer than Python's stack
            path, pending = stack[-1]
            module = next((m for m in pending if m not in started), None)
            if module is None:
                stack.pop()
                done.append(path)
            else:
                started.add(module)
                stack.append((module, _imports_of(cache, files, module, resolution_code)))
    return done


def _imports_of(cache: SourceCache, files: RevisionFiles, path: str,
                resolution_code: Callable[[str], bool]) -> Iterator[str]:  # fmt: skip
    """The resolution code importing `path` runs first, in order: its packages'
    `__init__.py`, then what its top-level statements import."""
    for package in _packages(files, path):
        if resolution_code(package):
            yield package
    for node in _statements(cache, files, path):
        for module in _imported(files, node, path):
            if resolution_code(module):
                yield module


def _statements(cache: SourceCache, files: RevisionFiles, path: str) -> list[ast.stmt]:
    """The file's top-level statements (the pieces' nodes are shared: read them, never
    change them)."""
    layout = cache.layout_of(files, path)
    return [] if layout is None else [node for piece in layout.pieces for node in piece.nodes]


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


def imports_at_load(nodes: list[ast.stmt]) -> bool:
    """Whether top-level statements import anything as their file loads (what the
    project imports for its effects may then change)."""
    return any(isinstance(child, ast.Import | ast.ImportFrom)
               for node in nodes for child in _load_time(node))  # fmt: skip


def _load_time(node: ast.AST):
    """The nodes of a statement that run as its file loads (not a function's body)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        yield from _load_time(child)
