"""Whether code run as a file loads can change anything but the names it binds.

An entry point's closure may leave out a definition the policy forbids (it is
withheld: its name refused where reached) and may carry on past a file whose
module-level code cannot run here (its names refused where reached). Either is
sound only if the project's own process, running that code, changes nothing
else the resolution could see: no registry filled by a decorator, no table
written by a class body, no call into the repository's code. This module
says so, conservatively, from the syntax tree.

Code is *inert* here when, outside function bodies (which run only when
called), it binds names and does nothing else: imports, definitions, and
assignments to plain names of values that run no code of the repository:
constants, names, tuples, lists and dicts of them, and calls or attribute
reads rooted at a name the harness leaves unbound in that file (`deferred`:
the project's process binds it to code outside the resolution code, which can
change only state the resolution reaches through more such names, each refused
where reached), with such values as arguments. A function's decorators and
defaults, a class's bases, keywords, decorators and body count as code run at
load.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Collection

Deferred = Collection[str]  # names the harness leaves unbound in the file


def inert(node: ast.stmt, deferred: Deferred) -> bool:
    """Whether running the statement as its file loads binds names and nothing else."""
    if isinstance(node, ast.Import | ast.ImportFrom | ast.Pass):
        return True
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Constant)  # a docstring
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
        return _decorators(node, deferred) and all(_value(e, deferred) for e in defaults)
    if isinstance(node, ast.ClassDef):
        heads = [*node.bases, *(k.value for k in node.keywords)]
        return (_decorators(node, deferred) and all(_value(e, deferred) for e in heads)
                and _all(node.body, deferred))  # fmt: skip
    if isinstance(node, ast.Assign):
        names = all(isinstance(t, ast.Name) for t in node.targets)
        return names and _value(node.value, deferred)
    if isinstance(node, ast.AnnAssign):
        target = isinstance(node.target, ast.Name)
        return target and (node.value is None or _value(node.value, deferred))
    if isinstance(node, ast.If):
        return _value(node.test, deferred) and _all(node.body + node.orelse, deferred)
    if isinstance(node, ast.Try):
        handlers = [s for h in node.handlers for s in h.body]
        kinds = [h.type for h in node.handlers if h.type is not None]
        parts = node.body + handlers + node.orelse + node.finalbody
        return _all(parts, deferred) and all(_value(k, deferred) for k in kinds)
    return False


def _decorators(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
                deferred: Deferred) -> bool:  # fmt: skip
    """Each decorator is called with what it decorates: inert only if it is code outside
    the resolution code (`@functools.cache`, `@dataclasses.dataclass(frozen=True)`)."""
    return all(
        _root(d) in deferred and (not isinstance(d, ast.Call) or _value(d, deferred))
        for d in node.decorator_list
    )


def _all(nodes: list[ast.stmt], deferred: Deferred) -> bool:
    return all(inert(n, deferred) for n in nodes)


def _value(node: ast.expr, deferred: Deferred) -> bool:
    """Whether evaluating `node` runs no code of the repository (see the module)."""
    if isinstance(node, ast.Constant | ast.Name):
        return True
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(_value(e, deferred) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(_value(e, deferred) for e in [*node.keys, *node.values] if e is not None)
    if isinstance(node, ast.Attribute | ast.Subscript):
        return _root(node) in deferred
    if isinstance(node, ast.Call):
        args = [*node.args, *(k.value for k in node.keywords)]
        return _root(node.func) in deferred and all(_argument(a, deferred) for a in args)
    return False


def _argument(node: ast.expr, deferred: Deferred) -> bool:
    """An argument handed to code outside the resolution code: nothing of the
    repository's that it could change (a constant, a builtin, what is outside itself)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in deferred or hasattr(builtins, node.id)
    if isinstance(node, ast.Tuple | ast.List):
        return all(_argument(e, deferred) for e in node.elts)
    return _root(node) in deferred and _value(node, deferred)


def _root(node: ast.expr) -> str | None:
    """The name an attribute, item or call chain starts from (`a` in `a.b(c).d`)."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None
