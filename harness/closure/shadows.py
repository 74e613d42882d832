"""A file's own definition of a name the world supplies: no silent substitution.

The world answers names such as `get_platform` or `register_post_process`
wherever the code reads them. When the file itself defines the name (a def, a
class, an assignment, `from m import other as name`), the project runs that
definition and the harness would not: the substitution is reported, unless
the definition is one the world stands for by design
(`harness.closure.facts.WorldFacts.stands_for`): the logger
(`logger = logging.getLogger(...)`, `get_logger`), a registering decorator that
returns its argument unchanged (`registry_of`), or a definition in one of the
world's homes. This module reads those shapes from the syntax tree.

A name the matrix binds under `bindings:` is replaced on purpose and never
reported.
"""

from __future__ import annotations

import ast


def own_definition(node: ast.stmt, name: str) -> ast.AST | None:
    """The part of the top-level statement `node` that binds (or unbinds) `name` as the
    file's own, in the code that runs at import: anything but an import of the same name
    (`import name`, `from m import name`). A name bound by a statement gives the statement
    (`logger = ...`, `del name`)."""
    for child, statement in _module_level(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            found = next((a for a in child.names if _renames(a, name, child)), None)
            if found is not None:
                return found
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if child.name == name:
                return child
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store | ast.Del):
            if child.id == name:
                return statement
        elif getattr(child, "name", None) == name:  # `except E as name`, `case [*name]`
            return child
    return None


def names_bound_at_import(nodes: list[ast.stmt]) -> list[tuple[int, frozenset[str]]]:
    """(position, names) for each statement that binds or unbinds names at module level
    by any means (`del name`, `(name := ...)`, `except E as name`, ...)."""
    out = []
    for position, node in enumerate(nodes):
        names = frozenset(bound_names(node))
        if names:
            out.append((position, names))
    return out


def bound_names(node: ast.stmt) -> list[str]:
    """The names a top-level statement binds or unbinds at module level, by any means, in
    the order they appear ("*" for `from m import *`, which may bind any)."""
    names: list[str] = []
    for child, _ in _module_level(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            names.extend((a.asname or a.name).split(".")[0] for a in child.names)
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store | ast.Del):
            names.append(child.id)
        elif isinstance(getattr(child, "name", None), str):  # def, class, except/case as
            names.append(child.name)
        elif isinstance(getattr(child, "rest", None), str):  # `case {**rest}`
            names.append(child.rest)
    return names


def star_imports(node: ast.stmt) -> list[ast.ImportFrom]:
    """`from m import *` statements the top-level statement runs at import."""
    return [
        child
        for child, _ in _module_level(node)
        if isinstance(child, ast.ImportFrom) and any(a.name == "*" for a in child.names)
    ]


def _module_level(node: ast.stmt) -> list[tuple[ast.AST, ast.stmt]]:
    """The nodes of a top-level statement that bind at module level (not a function's or
    a class's own names; not an annotation without a value, which binds nothing), each
    with the innermost statement holding it."""
    out: list[tuple[ast.AST, ast.stmt]] = []
    stack: list[tuple[ast.AST, ast.stmt]] = [(node, node)]
    while stack:
        child, statement = stack.pop()
        if isinstance(child, ast.AnnAssign) and child.value is None:
            continue
        out.append((child, statement))
        inner = child if isinstance(child, ast.stmt) else statement
        stack.extend((c, inner) for c in reversed(_runs_here(child)))
    return out


def _runs_here(node: ast.AST) -> list[ast.AST]:
    """The parts of `node` that run in the scope it stands in: a function's decorators,
    defaults and annotations, not its body; a class's decorators and bases; not a
    comprehension's target; nothing of an import (its names are read whole)."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        return []
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        body = {id(statement) for statement in node.body}
        return [c for c in ast.iter_child_nodes(node) if id(c) not in body]
    if isinstance(node, ast.Lambda):
        return [node.args]
    if isinstance(node, ast.comprehension):  # its target is the comprehension's own
        return [node.iter, *node.ifs]
    return list(ast.iter_child_nodes(node))


def registry_of(node: ast.AST) -> tuple[str, ...] | None:
    """The registries a registering decorator adds its argument to, when it returns the
    argument unchanged and does nothing else (a docstring, `R.append(fn)`, `R.add(fn)`,
    `R[key] = fn`, `return fn`); None for any other definition."""
    if not isinstance(node, ast.FunctionDef) or node.decorator_list or not node.args.args:
        return None
    param = node.args.args[0].arg
    body = list(node.body)
    if body and _docstring(body[0]):
        body = body[1:]
    if not body or not _returns(body[-1], param):
        return None
    found = [_registers(statement, param) for statement in body[:-1]]
    return None if None in found else tuple(found)


def _renames(alias: ast.alias, name: str, node: ast.stmt) -> bool:
    if (alias.asname or alias.name.split(".")[0]) != name or alias.asname is None:
        return False
    original = alias.name if isinstance(node, ast.ImportFrom) else alias.name.split(".")[-1]
    return original != name


def get_logger(node: ast.AST) -> bool:
    value = node.value if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
    func = value.func if isinstance(value, ast.Call) else None
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "getLogger"
        and isinstance(func.value, ast.Name)
        and func.value.id == "logging"
    )


def _docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _returns(node: ast.stmt, param: str) -> bool:
    return isinstance(node, ast.Return) and _is(node.value, param)


def _registers(node: ast.stmt, param: str) -> str | None:
    """The registry `node` adds `param` to (`R.append(p)`, `R.add(p)`, `R[k] = p`)."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        func = call.func
        method = isinstance(func, ast.Attribute) and func.attr in ("append", "add")
        if method and isinstance(func.value, ast.Name) and len(call.args) == 1:
            plain = not call.keywords and _is(call.args[0], param)
            return func.value.id if plain else None
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and _is(node.value, param):
        target = node.targets[0]
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            key = target.slice
            if not any(isinstance(n, ast.Call | ast.NamedExpr) for n in ast.walk(key)):
                return target.value.id
    return None


def _is(node: ast.AST | None, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
