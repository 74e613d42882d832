"""Names a statement reads without binding, and statements without annotations."""

from __future__ import annotations

import ast
import copy
import operator
import symtable
from typing import Any

from harness.closure.pieces import copy_tree


def free_names(stmt: ast.stmt) -> set[str]:
    """Names `stmt` reads (or declares `global`) that it does not bind itself; a name
    it changes in place at module level (`ALIAS |= {...}`) is read first."""
    table = symtable.symtable(ast.unparse(stmt), "<closure>", "exec")
    own = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    names = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    _collect_globals(table, names)
    return (names - own) | _changed_in_place(stmt)


def _changed_in_place(stmt: ast.stmt) -> set[str]:
    """Names a statement's module-level code applies an augmented assignment to."""
    out, stack = set(), [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _collect_globals(table: symtable.SymbolTable, names: set[str]) -> None:
    for child in table.get_children():
        for sym in child.get_symbols():
            if sym.is_global() and (sym.is_referenced() or sym.is_declared_global()):
                names.add(sym.get_name())
        _collect_globals(child, names)


def strip_annotations(node: ast.stmt, every: bool = False) -> ast.stmt:
    """A copy of `node` without annotations (keeps line numbers): annotations are not
    behaviour, and without them their names need no binding. An annotation that may act
    when Python evaluates it at import (a call in `x: T.update(...)`, a def's parameter)
    is kept: SGLang's import runs it, unless its file postpones annotations (`every`:
    then none is kept). One loop over the nodes, not a NodeTransformer's visit of each:
    a closure's statements are stripped by the thousand."""
    stripped = copy_tree(node)
    _acts = _never if every else _acting
    if isinstance(stripped, ast.AnnAssign) and not _acts(stripped.annotation):
        stripped = _unannotated(stripped)
    stack: list[tuple[ast.AST, bool]] = [(stripped, False)]  # (node, inside a function)
    while stack:
        current, within = stack.pop()
        if isinstance(current, ast.arg) and not _acts(current.annotation):
            current.annotation = None
        elif isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef) and not _acts(
            current.returns
        ):
            current.returns = None
        inside = within or isinstance(current, FUNCTIONS)
        inner = every or inside
        kept = isinstance(current, ast.ClassDef) and made_by_dataclass(current)
        for name in current._fields:
            value = getattr(current, name, None)
            if type(value) is list:
                if kept and name == "body":
                    value[:] = [_as_text(v) for v in value]
                elif any(isinstance(item, ast.AnnAssign) for item in value):
                    value[:] = [_unannotated(v, inside) if _dropped(v, inner) else v
                                for v in value]  # fmt: skip
                stack.extend((v, inside) for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append((value, inside))
    return stripped


def never_annotated(node: ast.AST, inside: bool = False) -> ast.AST:
    """`node` as Python runs it in a file that postpones annotations: none is evaluated
    (`from __future__ import annotations`). Unlike `strip_annotations`, not a copy to
    change: the nodes on the way to an annotation are new, the rest are `node`'s own
    (a class of a thousand annotated fields is read, not pickled)."""
    if isinstance(node, ast.AnnAssign):
        node = _unannotated(node, inside)
    inside = inside or isinstance(node, FUNCTIONS)  # (`inside`: a function's statement)
    changes: dict[str, Any] = {}
    for name in node._fields:
        value = getattr(node, name, None)
        if _annotation_field(node, name):
            if value is not None:
                changes[name] = None
        elif isinstance(value, list):
            items = [never_annotated(v, inside) if isinstance(v, ast.AST) else v for v in value]
            if any(map(operator.is_not, items, value)):
                changes[name] = items
        elif isinstance(value, ast.AST) and (new := never_annotated(value, inside)) is not value:
            changes[name] = new
    if not changes:
        return node
    made = copy.copy(node)
    for name, value in changes.items():
        setattr(made, name, value)
    return made


def _annotation_field(node: ast.AST, name: str) -> bool:
    if name == "annotation":
        return isinstance(node, ast.arg)
    return name == "returns" and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)


ACTING = (ast.Call, ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom,
          ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)  # fmt: skip


def _never(annotation: ast.expr | None) -> bool:
    return False


def _acting(annotation: ast.expr | None) -> bool:
    """Whether evaluating an annotation may do more than name a type."""
    return annotation is not None and any(isinstance(n, ACTING) for n in ast.walk(annotation))


def _dropped(node: ast.AST, inside: bool) -> bool:
    """Whether an annotated assignment loses its annotation: always in a function (Python
    never evaluates it there), else unless evaluating it may act."""
    return isinstance(node, ast.AnnAssign) and (inside or not _acting(node.annotation))


def made_by_dataclass(node: ast.ClassDef) -> bool:
    """Whether a decorator of the class is spelled `dataclass` (`@dataclass`,
    `@dataclasses.dataclass(frozen=True)`): its annotations name its fields."""
    return any(decorator_name(d) == DATACLASS for d in node.decorator_list)


DATACLASS = "dataclass"


def decorator_name(node: ast.expr) -> str | None:
    """The last name of a decorator (`dataclass` of `@dataclasses.dataclass(frozen=True)`)."""
    return last_name(node.func if isinstance(node, ast.Call) else node)


def last_name(node: ast.expr) -> str | None:
    """The last name of a name or attribute chain (`partial` of `functools.partial`)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
SCOPES = (*FUNCTIONS, ast.ClassDef)  # what has a scope of its own


def bound_by(node: ast.AST) -> set[str]:
    """The names a node binds, in any way Python binds one (an assignment's or a loop's
    target, `except E as n`, a `match` capture, an import, a def, a parameter, `global`
    and `nonlocal`)."""
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Store | ast.Del) else set()
    if isinstance(node, ast.MatchAs | ast.MatchStar | ast.ExceptHandler):
        return {node.name} if node.name else set()
    if isinstance(node, ast.MatchMapping):
        return {node.rest} if node.rest else set()
    if isinstance(node, ast.alias):
        return {(node.asname or node.name).split(".")[0]}
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, ast.Global | ast.Nonlocal):
        return set(node.names)
    return set()


def own_nodes(scope: ast.AST, nested: tuple[type, ...] = FUNCTIONS) -> list[ast.AST]:
    """The nodes of a function, without those of the `nested` scopes it defines (other
    functions by default; a class too, for what binds a name in the function's scope)."""
    found, stack = [], list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, nested):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _as_text(node: ast.stmt) -> ast.stmt:
    """`x: T = v` in a dataclass body as `x: "T" = v`: the field stays a field, and its
    annotation is never evaluated (`harness.engine.worlds.dataclass` reads the text)."""
    if not isinstance(node, ast.AnnAssign):
        return node
    if not node.simple:  # `(x): T = v` makes no field: as in any class body
        return _unannotated(node) if _dropped(node, False) else node
    text = ast.copy_location(ast.Constant(ast.unparse(node.annotation)), node.annotation)
    return ast.copy_location(ast.AnnAssign(node.target, text, node.value, 1), node)


def _unannotated(node: ast.AnnAssign, inside: bool = False) -> ast.stmt:
    """`x: T = v` as `x = v`; `x: T` as `pass`, or in a function (`inside`) as `x: 0`:
    Python evaluates no annotation there, but its compiler still reads the statement
    (a plain name annotated is the function's local, unbound until assigned; a target's
    object and index are evaluated: `a[f()]: T` calls f). An annotation in a function
    that binds or yields (a walrus, a `yield`, which make a local or a generator) is
    kept whole."""
    if inside and any(isinstance(n, COMPILED) for n in ast.walk(node.annotation)):
        return node
    if node.value is None and inside:
        return ast.copy_location(ast.AnnAssign(node.target, ast.Constant(0), None, node.simple),
                                 node)  # fmt: skip
    if node.value is None:
        return ast.copy_location(ast.Pass(), node)
    return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)


COMPILED = (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)  # read as a function compiles


def annotations_of(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """A function's annotations, as Python evaluates them when it defines the function
    (unless the file postpones them): every parameter's, then the return's."""
    args = node.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    found = [a.annotation for a in every if a is not None and a.annotation is not None]
    return found + ([node.returns] if node.returns is not None else [])
