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
from harness.closure.shadows import bound_names

IMPORT = "import"


DEFINITION = "definition"


CONDITIONAL = "conditional"
STAR = "*"  # what `from m import *` binds in the index, until `_after_stars` spreads it


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


def definitions_in(module: Layout, name: str) -> list[ast.stmt]:
    """The statements binding `name` other than by an import, as `index_module` lists them
    (in any order), without its index: a layout made by an edit takes its base's map of
    names to pieces with the edit's pieces swapped (a check asks of a few names)."""
    return [
        piece.nodes[position]
        for piece in _binding_pieces(module).get(name, ())
        for bound, kind, position in piece.memo("binds", _piece_bindings)
        if bound == name and kind != IMPORT
    ]


def imported_in(module: Layout, name: str) -> bool:
    """Whether a top-level import binds `name` (a module, or a name of another file:
    what is written through it is another file's), found as `definitions_in` finds."""
    return any(
        bound == name and kind == IMPORT
        for piece in _binding_pieces(module).get(name, ())
        for bound, kind, _ in piece.memo("binds", _piece_bindings)
    )


WHERE_BOUND = "where bound"  # a layout's fact: {name: the pieces that bind it}


def _binding_pieces(module: Layout) -> dict[str, tuple[Piece, ...]]:
    found = module.facts.get(WHERE_BOUND)
    if found is not None:
        return found
    edit = module.edit
    base = edit.base.facts.get(WHERE_BOUND) if edit is not None else None
    if base is None:
        found = {}
        for piece in module.pieces:
            for name in names_bound(piece):
                found[name] = (*found.get(name, ()), piece)
    else:
        found = dict(base)
        added = module.pieces[edit.first : edit.first + edit.added]
        for piece in edit.removed_pieces():  # one occurrence each: equal texts share a piece
            for name in names_bound(piece):
                pieces = found[name]
                at = next(n for n, p in enumerate(pieces) if p is piece)
                found[name] = pieces[:at] + pieces[at + 1 :]
        for piece in added:
            for name in names_bound(piece):
                found[name] = (*found.get(name, ()), piece)
    module.facts[WHERE_BOUND] = found
    return found


def index_module(module: Layout) -> dict[str, list[Binding]]:
    """Every top-level binding statement, by the names it binds, in file order: made once
    per layout (every resolver of a revision reads the file's; readers never change it)."""
    index = _INDEXES.get(module)
    if index is None:
        index = _INDEXES[module] = {}
        for i, piece in enumerate(module.pieces):
            for name, kind, position in piece.memo("binds", _piece_bindings):
                index.setdefault(name, []).append(Binding(kind, module, i, position))
        _after_stars(index)
    return index


def _after_stars(index: dict[str, list[Binding]]) -> None:
    """`from m import *` may bind any name: one bound before the last such import is bound
    conditionally after it (a name only it could bind stays unknown)."""
    stars = index.pop(STAR, None)
    if not stars:
        return
    last = stars[-1]
    for bindings in index.values():
        if (bindings[-1].piece, bindings[-1].position) < (last.piece, last.position):
            bindings.append(last)


# layout -> its index, for as long as the layout lives (its run's SourceCache holds it)
_INDEXES: weakref.WeakKeyDictionary[Layout, dict[str, list[Binding]]] = weakref.WeakKeyDictionary()


def _piece_bindings(nodes: list[ast.stmt]) -> list[tuple[str, str, int]]:
    return [
        (name, kind, position)
        for position, node in enumerate(nodes)
        for name, kind in _bindings_of(node)
    ]


def _bindings_of(stmt: ast.stmt) -> list[tuple[str, str]]:
    """(name, kind) for each name the statement binds or unbinds. A definition,
    assignment or import at top level binds its own names; anything else (a loop's
    target, `with ... as`, `except ... as`, `:=`, a `match` capture, `del`, a statement
    inside an `if`, `try` or loop) binds conditionally: a closure that reads the name is
    unevaluable, not computed with an earlier value. `from m import *` is STAR."""
    own = _own_names(stmt)
    kind = IMPORT if isinstance(stmt, ast.Import | ast.ImportFrom) else DEFINITION
    found = [(STAR if n == "*" else n, CONDITIONAL) for n in bound_names(stmt)]
    others = [pair for pair in found if pair[0] not in own]
    return [*others, *((n, kind) for n in own)]


def _own_names(stmt: ast.stmt) -> list[str]:
    """The names a top-level definition, assignment or import binds as such."""
    if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
        return []
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return _imported_names(stmt)
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [n for target in stmt.targets for n in _target_names(target)]
    if isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        return _target_names(stmt.target)
    return []


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
