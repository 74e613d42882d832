"""SGLang's own definitions of the names the world answers, compared between revisions.

The world answers a probe such as `is_hip` or `get_platform` wherever the
closure imports it from the file where SGLang defines it (its home,
`harness.closure.shadows.is_home`); the harness never runs that definition.
A change to it changes SGLang's behaviour and nothing the harness evaluates,
so a diff compares each such definition at both revisions: the statements
that define the name in its home, with the home's own top-level definitions
they read in turn (the module's imports as written, not followed), without
docstrings, comments or formatting. Where they differ, the diff cannot say
"nothing changed" (`harness.scan.diff`).
"""

from __future__ import annotations

import ast
import hashlib
import re
from typing import NamedTuple

from harness.closure.index import IMPORT, index_module
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache, Statement, copy_tree
from harness.closure.resolve import HELPER, shape

HOPS = 4  # re-exports followed from the file the code imports the name from
MAX_STATEMENTS = 200  # a definition reading more of its file is compared by this many


class Piece(NamedTuple):
    """One statement of a home definition."""

    line: int
    text: str  # its first line, as reports quote it
    digest: str  # of its tree without docstrings: equal, it does the same


class HomeDefinition(NamedTuple):
    """SGLang's definition of `name` the world stands for, at one revision: the statements
    that define it, then those of its file they read, nearest first."""

    name: str
    path: str  # the file that defines it (after re-exports)
    pieces: tuple[Piece, ...]

    def changed(self, other: HomeDefinition) -> Piece | None:
        """The first of this side's statements the other side does not have; None: same."""
        theirs = {p.digest for p in other.pieces}
        return next((p for p in self.pieces if p.digest not in theirs), None)


def home_definition(
    cache: SourceCache,
    files: RevisionFiles,
    name: str,
    path: str,
    read: frozenset[str] = frozenset(),
) -> HomeDefinition | None:
    """The definition of `name` read from its home `path` (following `from m import
    name` and `from m import *` in it), or None when the file no longer defines it.
    Names in `read` (a class the world reads its inputs' defaults from) are not
    followed: what the world takes from them shows in the diff's outcomes."""
    for _ in range(HOPS):
        layout = cache.layout_of(files, path)
        if layout is None:
            return None
        bindings = index_module(layout).get(name, [])
        if bindings and bindings[-1].kind != IMPORT:
            statements = _in_file(layout, [b.statement for b in bindings], read)
            pieces = tuple(Piece(s.lineno, _first_line(s), _digest(s)) for s in statements)
            return HomeDefinition(name, path, pieces)
        last = bindings[-1].statement.node if bindings else None
        further = _imported_from(files, path, last, name)
        further = further or _star_source(cache, files, layout, path, name)
        if further is None:
            return None
        path, name = further
    return None


def unchanged(base: RevisionFiles, head: RevisionFiles, name: str, path: str) -> bool:
    """Whether `home_definition` would surely be equal at both revisions, told from the
    files' identities and texts without parsing them: each file on the way to the
    definition is the same at both, and the last defines `name` at top level and imports
    nothing by that name; or one revision's file on the way never names it (it has no
    definition there: nothing to compare). False means: compare the definitions."""
    for _ in range(HOPS):
        if not (_may_bind(base, path, name) and _may_bind(head, path, name)):
            return True  # a revision without it has no definition to compare
        if base.ident(path) != head.ident(path):
            return False
        text = head.read(path) or ""
        forwards = _forwarded_from(text, name)
        if forwards is None or len(forwards) > 1:
            return False  # an `import a.name`, or several ways in: compare them
        if not forwards:
            return _defines(text, name)
        dots, module = forwards[0]
        path = head.module_file(module, path, len(dots))
        if path is None:
            return False
    return False


def _may_bind(files: RevisionFiles, path: str, name: str) -> bool:
    """Whether the file exists and names `name`, or imports `*` (read as text)."""
    text = files.read(path)
    return text is not None and (name in text or _STAR.search(text) is not None)


_STAR = re.compile(r"\bimport\s*\*")


def _defines(text: str, name: str) -> bool:
    """`name` bound at top level by a def, a class or an assignment (a chain included)."""
    word = re.escape(name)
    definition = rf"^(?:(?:async\s+)?def|class)\s+{word}\b"
    assignment = rf"^(?:\w+\s*=\s*)*{word}\s*(?::[^=\n]*)?=(?!=)"
    return re.search(f"{definition}|{assignment}", text, re.MULTILINE) is not None


def _forwarded_from(text: str, name: str) -> list[tuple[str, str]] | None:
    """(leading dots, module) of each `from M import` statement that may bind `name` (by
    name, or `*`); None when an `import a.name` may (no module file answers it)."""
    if re.search(rf"^\s*import\s[^\n]*\b{re.escape(name)}\b", text, re.MULTILINE):
        return None
    word = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)|\*")
    return [(dots, module) for dots, module, names in _FROM.findall(text) if word.search(names)]


# `from M import a, b` and `from M import (a,\n b)`, anywhere in the file (conservative)
_FROM = re.compile(r"\bfrom\s+(\.*)([\w.]*)\s+import\s*(\([^)]*\)|[^\n]*)")


def _in_file(layout, statements: list[Statement], read: frozenset[str]) -> list[Statement]:
    """`statements` and the top-level statements of the same file their free names read,
    transitively (imports included as written, not followed), nearest first: the first
    that differs between two revisions is the one a reader looks at."""
    index = index_module(layout)
    found = {(s.lineno, s.member): s for s in statements}
    todo = list(found.values())
    for statement in todo:
        if len(found) >= MAX_STATEMENTS:
            break
        for name in sorted(shape(statement, HELPER)[1] - read):
            for binding in index.get(name, ()):
                reached = binding.statement
                if (reached.lineno, reached.member) not in found:
                    found[(reached.lineno, reached.member)] = reached
                    todo.append(reached)
    return list(found.values())


def _imported_from(files: RevisionFiles, path: str, node, name: str) -> tuple[str, str] | None:
    if not isinstance(node, ast.ImportFrom):
        return None
    alias = next((a for a in node.names if (a.asname or a.name) == name), None)
    module = files.module_file(node.module or "", path, node.level)
    return None if alias is None or module is None else (module, alias.name)


def _star_source(cache: SourceCache, files: RevisionFiles, layout, path: str, name: str):
    """(file, name) a `from m import *` of `path` takes `name` from, in the repository."""
    for piece in layout.pieces:
        for node in piece.nodes:
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                module = files.module_file(node.module or "", path, node.level)
                found = module and cache.layout_of(files, module)
                if found is not None and found and name in index_module(found):
                    return module, name
    return None


def _digest(statement: Statement) -> str:
    dumped = ast.dump(_without_docstrings(statement.node))
    return hashlib.sha256(dumped.encode()).hexdigest()


def _without_docstrings(node: ast.stmt) -> ast.stmt:
    copy = copy_tree(node)
    for inner in ast.walk(copy):
        body = getattr(inner, "body", None)
        if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                inner.body = body[1:] or [ast.Pass()]
    return copy


def _first_line(statement: Statement) -> str:
    node = statement.node
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return f"def {node.name}(...)"
    if isinstance(node, ast.ClassDef):
        return f"class {node.name}"
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return " = ".join(ast.unparse(t) for t in targets)[:80] + " = ..."
    return ast.unparse(node).splitlines()[0][:80]
