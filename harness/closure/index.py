"""A module's top-level bindings: which statement binds each name, and how.

A name is bound by a definition (def, class, assignment at top level), an
import, or conditionally (inside an if/try at top level). Facts about a
piece's statements are memoized on the piece, so an unchanged piece is
indexed once per run.
"""

from __future__ import annotations

import ast
import weakref
from typing import NamedTuple

from harness.closure.pieces import Layout, Piece, Statement

IMPORT = "import"


DEFINITION = "definition"


CONDITIONAL = "conditional"


class Binding(NamedTuple):
    """One top-level statement that binds a name (made lazily: files bind hundreds)."""

    kind: str
    module: Layout
    piece: int
    position: int

    @property
    def statement(self) -> Statement:
        return self.module.statement(self.piece, self.position)


def names_bound(piece: Piece) -> frozenset[str]:
    return piece.memo("names", lambda nodes: frozenset(n for n, _, _ in _piece_bindings(nodes)))


def index_module(module: Layout) -> dict[str, list[Binding]]:
    """Every top-level binding statement, by the names it binds, in file order: made once
    per layout (every resolver of a revision reads the file's; readers never change it)."""
    index = _INDEXES.get(module)
    if index is None:
        index = _INDEXES[module] = {}
        for i, piece in enumerate(module.pieces):
            for name, kind, position in piece.memo("binds", _piece_bindings):
                index.setdefault(name, []).append(Binding(kind, module, i, position))
    return index


# layout -> its index, for as long as the layout lives (its run's SourceCache holds it)
_INDEXES: weakref.WeakKeyDictionary[Layout, dict[str, list[Binding]]] = weakref.WeakKeyDictionary()


def _piece_bindings(nodes: list[ast.stmt]) -> list[tuple[str, str, int]]:
    return [
        (name, kind, position)
        for position, node in enumerate(nodes)
        for name, kind in _bindings_of(node, top=True)
    ]


def _bindings_of(stmt: ast.stmt, top: bool) -> list[tuple[str, str]]:
    kind = DEFINITION if top else CONDITIONAL
    if isinstance(stmt, ast.Import | ast.ImportFrom):  # under an `if` or `try`: conditional
        return [(name, IMPORT if top else CONDITIONAL) for name in _imported_names(stmt)]
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [(stmt.name, kind)]
    if isinstance(stmt, ast.Assign):
        return [(n, kind) for target in stmt.targets for n in _target_names(target)]
    if isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        return [(n, kind) for n in _target_names(stmt.target)]
    return [pair for child in _child_statements(stmt) for pair in _bindings_of(child, False)]


def _imported_names(stmt: ast.Import | ast.ImportFrom) -> list[str]:
    names = []
    for alias in stmt.names:
        if alias.name == "*":
            continue
        names.append(alias.asname or alias.name.split(".")[0])
    return names


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for elt in target.elts for n in _target_names(elt)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _child_statements(stmt: ast.stmt) -> list[ast.stmt]:
    children: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        children.extend(getattr(stmt, name, []) or [])
    for handler in getattr(stmt, "handlers", []) or []:
        children.extend(handler.body)
    return children
