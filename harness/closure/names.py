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


class _AnnotationStripper(ast.NodeTransformer):
    """Annotations are not behavior; without them, their names need no binding."""

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.returns = None
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        assign = ast.Assign(targets=[node.target], value=node.value)
        return ast.copy_location(self.generic_visit(assign), node)


def strip_annotations(node: ast.stmt) -> ast.stmt:
    """A copy of `node` without annotations (keeps line numbers)."""
    stripped = _AnnotationStripper().visit(copy_tree(node))
    return ast.fix_missing_locations(stripped)
