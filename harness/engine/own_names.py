"""`fn.__name__` and `fn.__qualname__` in evaluated code: the project's names, or refused.

SGLang reads the names of its own functions: `fn.__qualname__` labels what a model
override declared, `builtin.__name__` keys a plugin's hook. Python gives them for what
the repository defines, as in the project's process, and for Python's own builtins.
Whatever else evaluated code may hold has a name of harness's own (a stand-in of the
world, a function refusing in place of one the policy withheld, a class of the
harness), which code could branch on to tell that it runs under harness: reading it
is refused, naming the line. So the policy lets evaluated code read these two
attributes, and every read is compiled as a call of `READER` (a builtin no source can
name: dunder names are refused) that tells the two apart.
"""

from __future__ import annotations

import ast
import builtins
import copy
from collections.abc import Callable
from pathlib import Path
from types import BuiltinFunctionType, FunctionType, MethodType
from typing import Any

from harness.errors import Unevaluable

NAMES = frozenset(("__name__", "__qualname__"))
READER = "__name_of__"
HARNESS = str(Path(__file__).resolve().parents[1])  # the harness package's directory
FIX = "the object is harness's, whose name is not the project's"


def rewritten(body: tuple[ast.stmt, ...], path: str) -> tuple[ast.stmt, ...]:
    """The statements of the file at `path` with each read of `X.__name__` or
    `X.__qualname__` compiled as `READER(X, "__name__")` (a copy of each statement holding
    one: nodes are shared). In a `case` pattern, where only a dotted name may stand, such
    a read is refused (Unevaluable)."""
    return tuple(_rewrite(s, path) if _reads(s) else s for s in body)


def _rewrite(statement: ast.stmt, path: str) -> ast.stmt:
    for node in ast.walk(statement):
        if isinstance(node, ast.MatchValue) and _reads(node):
            raise Unevaluable(
                f"a read of __name__ or __qualname__ in a case pattern (at {path}:"
                f"{node.lineno}) is not allowed in evaluated code (see Security model in the "
                "README)"
            )
    return ast.fix_missing_locations(_Reads().visit(copy.deepcopy(statement)))


def _reads(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in NAMES and isinstance(n.ctx, ast.Load)
               for n in ast.walk(node))  # fmt: skip


class _Reads(ast.NodeTransformer):
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr not in NAMES or not isinstance(node.ctx, ast.Load):
            return node
        where = {k: getattr(node, k) for k in ("lineno", "col_offset", "end_lineno",
                                                "end_col_offset")}  # fmt: skip
        reader, attr = ast.Name(READER, ast.Load(), **where), ast.Constant(node.attr, **where)
        return ast.Call(reader, [node.value, attr], [], **where)


def name_reader(refuse: Callable[[str, str], BaseException]) -> Callable[[Any, str], str]:
    """`READER`: the name Python gives a function, method or class the repository
    defines, or a builtin; anything else refused (`refuse(what, fix)` makes the error)."""

    def name_of(obj: Any, attr: str) -> Any:
        if not _projects(obj):
            raise refuse(f"{attr} of an object harness supplies", FIX)
        return getattr(obj, attr)  # (a method's nested functions: named as in its class)

    return name_of


def _projects(obj: Any) -> bool:
    """Whether `obj`'s name is what the project's process would give it."""
    kind = type(obj)
    if kind is MethodType:
        return _projects(obj.__func__)
    if kind is FunctionType:  # compiled from the repository's files, or harness's own
        return not obj.__code__.co_filename.startswith(HARNESS)
    if kind is BuiltinFunctionType:
        return getattr(builtins, obj.__name__, None) is obj
    if isinstance(obj, type):
        module = type.__dict__["__module__"].__get__(obj)
        return type(module) is str and module != "harness" and not module.startswith("harness.")
    return False
