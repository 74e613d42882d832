"""Whether a closure's functions can change state that outlives one call.

Exploration runs a function once per decision path and lets that answer
stand for every cell on the path; it is exact only when a call cannot see
what an earlier call left behind. So a closure is *pure* here when no
function in it (the target, helpers, methods, lambdas) writes anything but
its own fresh objects:

- `global` and `nonlocal` are writes to shared state;
- assigning or deleting an attribute or item, and calling a mutating method
  (`append`, `update`, `setdefault`, ...), are writes unless the object is a
  local the function itself made fresh (a list, dict or set display or
  comprehension, or `list()`/`dict()`/`set()`), and was never given anything
  else.

The check is conservative: an alias it cannot follow counts as a write. Code
at module level runs once per load, before any cell, and is not judged. An
impure closure is run on every cell, and the report says why.
"""

from __future__ import annotations

import ast

from harness.closure.extract import Closure, Pipeline

MUTATORS = frozenset(
    [
        "append",
        "extend",
        "insert",
        "remove",
        "pop",
        "clear",
        "sort",
        "reverse",
        "add",
        "discard",
        "update",
        "setdefault",
        "popitem",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
    ]
)
FRESH_CALLS = frozenset(("list", "dict", "set", "sorted"))
FRESH_NODES = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def impurity(target: Closure | Pipeline) -> str | None:
    """Why the code may keep state between calls (`path:line: what`), or None if pure."""
    closures = [c for _, c in target.passes if c] if isinstance(target, Pipeline) else [target]
    for closure in closures:
        for path in closure.files:
            for node in closure.nodes_of(path):
                for function in _functions(node):
                    found = _writes(function)
                    if found:
                        return f"{path}:{found[0]}: {found[1]}"
    return None


def _functions(node: ast.AST) -> list[Function]:
    return [n for n in ast.walk(node) if isinstance(n, Function)]


def _writes(function: Function) -> tuple[int, str] | None:
    fresh = _fresh_locals(function)
    for node in _own_nodes(function):
        if isinstance(node, ast.Global | ast.Nonlocal):
            kind = "global" if isinstance(node, ast.Global) else "nonlocal"
            return node.lineno, f"{kind} {', '.join(node.names)}"
        for target in _stored(node):
            if isinstance(target, ast.Attribute | ast.Subscript) and _root(target) not in fresh:
                return node.lineno, f"writes to {ast.unparse(target)}"
        method = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if method and node.func.attr in MUTATORS and _root(node.func.value) not in fresh:
            return node.lineno, f"calls {ast.unparse(node.func)}()"
    return None


def _own_nodes(function: Function) -> list[ast.AST]:
    """The function's nodes, without those of functions nested in it (judged on their own)."""
    out, stack = [], list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, Function):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _stored(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return [t for target in node.targets for t in _unpacked(target)]
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    if isinstance(node, ast.Delete):
        return list(node.targets)
    if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        return _unpacked(node.target)
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return _unpacked(node.optional_vars)
    if isinstance(node, ast.NamedExpr):
        return [node.target]
    return []


def _unpacked(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        return [t for element in target.elts for t in _unpacked(element)]
    if isinstance(target, ast.Starred):
        return _unpacked(target.value)
    return [target]


def _root(node: ast.expr) -> str | None:
    """The name an attribute/item/call chain starts from (`a` in `a.b[c].d()`)."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _fresh_locals(function: Function) -> set[str]:
    """Local names only ever bound to a new list, dict or set made in this function."""
    params = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    fresh: set[str] = set()
    spoiled: set[str] = set(params)
    for node in _own_nodes(function):
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        for target in _stored(node):
            if not isinstance(target, ast.Name):
                continue
            if (
                value is not None
                and _is_fresh(value)
                and isinstance(node, ast.Assign | ast.AnnAssign)
            ):
                fresh.add(target.id)
            else:
                spoiled.add(target.id)
    return fresh - spoiled


def _is_fresh(value: ast.expr) -> bool:
    if isinstance(value, FRESH_NODES):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in FRESH_CALLS
    )
