"""Names a statement reads without binding, and statements without annotations."""

from __future__ import annotations

import ast
import symtable

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


def strip_annotations(node: ast.stmt) -> ast.stmt:
    """A copy of `node` without annotations (keeps line numbers): annotations are not
    behaviour, and without them their names need no binding. One loop over the nodes, not
    a NodeTransformer's visit of each: a closure's statements are stripped by the
    thousand."""
    stripped = copy_tree(node)
    if isinstance(stripped, ast.AnnAssign):
        stripped = _unannotated(stripped)
    stack = [stripped]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.arg):
            current.annotation = None
        elif isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef):
            current.returns = None
        for name in current._fields:
            value = getattr(current, name, None)
            if type(value) is list:
                if any(isinstance(item, ast.AnnAssign) for item in value):
                    value[:] = [_unannotated(v) if isinstance(v, ast.AnnAssign) else v
                                for v in value]  # fmt: skip
                stack.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return stripped


def _unannotated(node: ast.AnnAssign) -> ast.stmt:
    """`x: T = v` as `x = v`; `x: T` as `pass`."""
    if node.value is None:
        return ast.copy_location(ast.Pass(), node)
    return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)
