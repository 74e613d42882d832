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
from typing import NamedTuple

from harness.closure.index import index_module
from harness.closure.inert import inert, record_class
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache, postpones

Placed = tuple[ast.stmt, int]  # a top-level statement and its piece's line offset


class Imports(NamedTuple):
    """What importing the closure's files runs (see `import_order`)."""

    order: list[str]  # the files, in the order Python finishes running them
    cycles: frozenset[str]  # files on an import cycle (one Python enters half-run)
    guarded: list[tuple[str, int, str]]  # (file, line, module): an import in `if`, `try`


def import_order(
    cache: SourceCache,
    files: RevisionFiles,
    roots: Iterable[str],
    resolution_code: Callable[[str], bool],
) -> Imports:
    """`roots` and the resolution code they import with a top-level `import` statement,
    transitively, each file once, in the order Python would finish running them
    importing `roots` in turn. An import inside `if`, `try` or another block may not
    run: it is listed, not followed."""
    done: list[str] = []
    started: set[str] = set()
    cycles: set[str] = set()
    guarded: list[tuple[str, int, str]] = []
    for root in roots:
        if root in started:
            continue
        started.add(root)
        stack = [(root, _imports_of(cache, files, root, resolution_code, guarded))]
        while stack:  # depth first, by hand: an import chain may be longer than Python's stack
            path, pending = stack[-1]
            module = next(pending, None)
            if module is None:
                stack.pop()
                done.append(path)
            elif module in started:
                on_stack = [p for p, _ in stack]
                ancestor = module == path or module in _packages(files, path)  # as Python
                if module in on_stack and not ancestor:  # back to a file still running
                    cycles.update(on_stack[on_stack.index(module) :])
            else:
                started.add(module)
                stack.append((module, _imports_of(cache, files, module, resolution_code,
                                                  guarded)))  # fmt: skip
    return Imports(done, frozenset(cycles), guarded)


def _imports_of(cache: SourceCache, files: RevisionFiles, path: str,
                resolution_code: Callable[[str], bool],
                guarded: list[tuple[str, int, str]]) -> Iterator[str]:  # fmt: skip
    """The resolution code importing `path` runs first, in order: its packages'
    `__init__.py`, then what its top-level import statements import (what one in a
    block would import goes to `guarded`)."""
    for package in _packages(files, path):
        if resolution_code(package):
            yield package
    for line, module, top in _module_imports(cache, files, path, resolution_code):
        if top:
            yield module
        else:
            guarded.append((path, line, module))


def _module_imports(
    cache: SourceCache, files: RevisionFiles, path: str, resolution_code: Callable[[str], bool]
) -> Iterator[tuple[int, str, bool]]:
    """(line, module, whether a top-level import statement) of each resolution-code
    module the statements of `path` import as it loads, in order."""
    for node, offset in _statements(cache, files, path):
        top = isinstance(node, ast.Import | ast.ImportFrom)
        for module in _imported(cache, files, node, path):
            if resolution_code(module):
                yield node.lineno + offset, module, top


def imports_in_functions(
    cache: SourceCache, files: RevisionFiles, path: str, resolution_code: Callable[[str], bool]
) -> list[tuple[int, str]]:
    """(line, module) of each resolution-code module an import inside a function of
    `path` runs when that function does (not as the file loads)."""
    found = []
    for node, offset in _statements(cache, files, path):
        at_load = {id(n) for n in _load_time(node)}
        found += [(n.lineno + offset, module) for n in ast.walk(node)
                  if isinstance(n, ast.Import | ast.ImportFrom) and id(n) not in at_load
                  for module in _imported(cache, files, n, path)
                  if resolution_code(module)]  # fmt: skip
    return found


def first_imports(cache: SourceCache, files: RevisionFiles, path: str,
                  resolution_code: Callable[[str], bool]) -> list[tuple[int, str]]:  # fmt: skip
    """(line, module) of each top-level import statement of `path` into the resolution
    code, in order."""
    found = _module_imports(cache, files, path, resolution_code)
    return [(line, module) for line, module, top in found if top]


def not_inert(cache: SourceCache, files: RevisionFiles, path: str,
              resolution_code: Callable[[str], bool]) -> list[tuple[int, ast.stmt]]:  # fmt: skip
    """(line, statement) of each top-level statement of `path` that may do more than bind
    names as the file loads (`harness.closure.inert`)."""
    placed = _statements(cache, files, path)
    nodes = [node for node, _ in placed]
    outside = _deferred(cache, files, nodes, path, resolution_code)
    postponed = postpones(nodes)
    records = _record_names(cache, files, nodes, path, resolution_code)
    renamed = _binds(cache, files, path, "__name__")  # then `__name__` is no plain str
    return [(node.lineno + offset, node) for node, offset in placed
            if not inert(node, outside, postponed, records)
            or (renamed and _reads_name(node))]  # fmt: skip


def _record_names(cache: SourceCache, files: RevisionFiles, nodes: list[ast.stmt], path: str,
                  resolution_code: Callable[[str], bool]) -> frozenset[str]:  # fmt: skip
    """The names the file binds once, to a record class (`harness.closure.inert`) that it
    defines or imports by name from a file of the resolution code."""
    found = set()
    for node in nodes:
        if isinstance(node, ast.ClassDef):
            found |= {node.name} & _records_of(cache, files, path, [node.name], resolution_code)
        elif isinstance(node, ast.ImportFrom) and node.module:
            source = files.module_file(node.module, path, node.level)
            if source is not None and resolution_code(source):
                names = {a.name: a.asname or a.name for a in node.names}
                kept = _records_of(cache, files, source, names, resolution_code)
                found |= {names[n] for n in kept}
    return frozenset(n for n in found if _bound_once(cache, files, path, n))


def _records_of(cache: SourceCache, files: RevisionFiles, path: str, names: Iterable[str],
                resolution_code: Callable[[str], bool]) -> set[str]:  # fmt: skip
    """Those of `names` that the file binds once, to a record class no other statement
    changes or hands to a call as the file loads."""
    placed = [node for node, _ in _statements(cache, files, path)]
    outside = _deferred(cache, files, placed, path, resolution_code)
    postponed = postpones(placed)
    found = set()
    for name in names:
        defs = [n for n in placed if isinstance(n, ast.ClassDef) and n.name == name]
        if len(defs) != 1 or not _bound_once(cache, files, path, name):
            continue
        others = [n for n in placed if n is not defs[0]]
        if record_class(defs[0], outside, postponed) and not _touched(others, name):
            found.add(name)
    return found


# Python's own types, whose making runs no code of the repository: as an argument
# (`msgspec.field(default_factory=list)`) or a call they are outside code, unless the
# file binds the name itself
SAFE_TYPES = frozenset({"bool", "bytes", "dict", "float", "frozenset", "int", "list",
                        "set", "str", "tuple"})  # fmt: skip


def _deferred(cache: SourceCache, files: RevisionFiles, nodes: list[ast.stmt], path: str,
              resolution_code: Callable[[str], bool]) -> frozenset[str]:  # fmt: skip
    """The names of code outside the resolution code in the file: what it imports from
    outside, and Python's own types it does not bind (`SAFE_TYPES`)."""
    layout = cache.layout_of(files, path)
    bound = layout.memo("top-level names", index_module) if layout is not None else {}
    outside = _outside_names(cache, files, nodes, path, resolution_code)
    if any(stars(node) for node in nodes):  # `from m import *` may bind any of them
        return outside
    return outside | {name for name in SAFE_TYPES if name not in bound}


def stars(node: ast.stmt) -> bool:
    """Whether the statement is `from m import *`."""
    return isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)


def _bound_once(cache: SourceCache, files: RevisionFiles, path: str, name: str) -> bool:
    layout = cache.layout_of(files, path)
    return (
        layout is not None and len(layout.memo("top-level names", index_module).get(name, ())) == 1
    )


def _touched(nodes: list[ast.stmt], name: str) -> bool:
    """Whether code run as the file loads stores into what `name` holds, or hands it to a
    call (which may)."""
    for node in (n for stmt in nodes for n in _load_time(stmt)):
        if isinstance(node, ast.Attribute | ast.Subscript) and not isinstance(node.ctx, ast.Load):
            root = node
            while isinstance(root, ast.Attribute | ast.Subscript):
                root = root.value
            if isinstance(root, ast.Name) and root.id == name:
                return True
        if isinstance(node, ast.Call):
            parts = [*node.args, *(k.value for k in node.keywords)]
            if any(isinstance(n, ast.Name) and n.id == name for p in parts for n in ast.walk(p)):
                return True
    return False


def _reads_name(node: ast.stmt) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(node))


def _statements(cache: SourceCache, files: RevisionFiles, path: str) -> list[Placed]:
    """The file's top-level statements, each with the line its piece starts after (the
    pieces' nodes are shared and piece-relative: read them, never change them)."""
    layout = cache.layout_of(files, path)
    if layout is None:
        return []
    return [(node, offset) for piece, offset in zip(layout.pieces, layout.lines, strict=True)
            for node in piece.nodes]  # fmt: skip


def _imported(cache: SourceCache, files: RevisionFiles, node: ast.stmt, path: str) -> list[str]:
    """The repository files a top-level statement's imports run, anywhere in it but in a
    function's body (`if`, `try`, a class body run as the file loads): each module, the
    packages above it, and submodules named by `from package import module` (when the
    package binds no such name: Python then imports it)."""
    found: list[str | None] = []
    for child in _load_time(node):
        if isinstance(child, ast.Import):
            for alias in child.names:
                found += _dotted(files, alias.name, path, 0)
        elif isinstance(child, ast.ImportFrom):
            module = child.module or ""
            package = files.module_file(module, path, child.level)
            found += _dotted(files, module, path, child.level)
            for alias in child.names:
                if package is not None and _binds(cache, files, package, alias.name):
                    continue
                name = f"{module}.{alias.name}" if module else alias.name
                found.append(files.module_file(name, path, child.level))
    return [f for f in found if f is not None]


def _binds(cache: SourceCache, files: RevisionFiles, path: str, name: str) -> bool:
    """Whether the file at `path` binds `name` at the top level other than by importing
    it from itself (in a package's `__init__.py`, `from . import name` binds the
    submodule)."""
    layout = cache.layout_of(files, path)
    if layout is None:
        return False
    for binding in layout.memo("top-level names", index_module).get(name, ()):
        for node in _load_time(binding.statement.node):  # (in `if`, `try` too)
            if isinstance(node, ast.ImportFrom) and name in _aliases(node):
                if files.module_file(node.module or "", path, node.level) != path:
                    return True
            elif name in _bound_here(node):
                return True
    return False


def _aliases(node: ast.ImportFrom) -> set[str]:
    return {alias.asname or alias.name for alias in node.names}


def _bound_here(node: ast.AST) -> set[str]:
    """The names one node binds by itself (not what it holds)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
        return {node.id}
    if isinstance(node, ast.Import):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.ImportFrom):
        return _aliases(node)
    return set()


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
    """The nodes of a statement that run as its file loads (not a function's body: a
    def's decorators, defaults and annotations)."""
    yield node
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        args = node.args
        parts = [*node.decorator_list, *args.defaults, *args.kw_defaults, node.returns,
                 *(a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                          args.vararg, args.kwarg] if a is not None)]  # fmt: skip
        for part in parts:
            if part is not None:
                yield from _load_time(part)
        return
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.Lambda):
            yield from _load_time(child)


def _outside_names(cache: SourceCache, files: RevisionFiles, nodes: list[ast.stmt], path: str,
                   resolution_code: Callable[[str], bool]) -> frozenset[str]:  # fmt: skip
    """Names the file binds by importing from outside the resolution code (or from what
    the repository does not hold): calls rooted at them run no code of the resolution."""
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            sources = _imported(cache, files, node, path)
            if not any(resolution_code(s) for s in sources):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return frozenset(names)
