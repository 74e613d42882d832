"""Whether code run as a file loads can change anything but the names it binds.

An entry point's closure may leave out a definition the policy forbids (it is
withheld: its name refused where reached) and may carry on past a file whose
module-level code cannot run here (its names refused where reached). Either is
sound only if the project's own process, running that code, changes nothing
else the resolution could see: no registry filled by a decorator, no table
written by a class body or a base's hook, no call into the repository's code.
This module says so, conservatively, from the syntax tree: anything it cannot
read as inert is not.

Code is *inert* here when, outside function bodies (which run only when
called), it binds names and does nothing else: imports; definitions whose
decorators, defaults, annotations (unless the file postpones them), bases and
body are inert; assignments to plain names of inert values. An inert value is
a constant, a name read, a tuple, list, set or dict (without `**`) of inert
values, or an attribute, item or call chain rooted at a name the harness leaves
unbound in that file (`deferred`: the project's process binds it to code
outside the resolution code, which can change only state the resolution reaches
through more such names, each refused where reached) whose arguments and
indexes are constants (or `__name__`, the module's name:
`logging.getLogger(__name__)`) or such chains themselves. A name read is inert as a
value only: as a decorator, a base, a metaclass or a test it runs code, so
there only a deferred chain is. Rebinding a deferred name makes code not inert.

A *record class* is a class of the repository whose making and calling run no code
of the repository: inert, made by code outside it (each base and decorator a
deferred chain, at least one of them), and defining no function or class
(`class Derived(msgspec.Struct, frozen=True)` with annotated fields; SGLang's
namespace modules make such records in their class bodies as they load). Calling
one by its name (`records`) with plain arguments is inert as an assigned value.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from harness.closure.names import annotations_of

Deferred = Collection[str]  # names the harness leaves unbound in the file
Records = Collection[str]  # names the file binds to record classes (see above)
CHAIN = (ast.Attribute, ast.Subscript, ast.Call)


def inert(
    node: ast.stmt, deferred: Deferred, postponed: bool = True, records: Records = ()
) -> bool:
    """Whether running the statement as its file loads binds names and nothing else
    (`postponed`: the file starts with `from __future__ import annotations`; `records`:
    the names bound to record classes)."""
    if isinstance(node, ast.Import | ast.ImportFrom | ast.Pass):
        return True
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Constant)  # a docstring
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return _function(node, deferred, postponed)
    if isinstance(node, ast.ClassDef):
        return _class(node, deferred, postponed, records)
    if isinstance(node, ast.Assign):
        names = all(isinstance(t, ast.Name) and t.id not in deferred for t in node.targets)
        return names and _value(node.value, deferred, records)
    if isinstance(node, ast.AnnAssign):
        target = isinstance(node.target, ast.Name) and node.target.id not in deferred
        value = node.value is None or _value(node.value, deferred, records)
        return target and value and _annotation(node.annotation, deferred, postponed)
    if isinstance(node, ast.If):
        body = _all(node.body + node.orelse, deferred, postponed, records)
        return _called(node.test, deferred) and body
    if isinstance(node, ast.Try):
        handlers = [s for h in node.handlers for s in h.body]
        kinds = [h.type for h in node.handlers if h.type is not None]
        parts = node.body + handlers + node.orelse + node.finalbody
        names = all(h.name is None or h.name not in deferred for h in node.handlers)
        return (
            names
            and _all(parts, deferred, postponed, records)
            and all(_called(k, deferred) or _builtin_kind(k) for k in kinds)
        )
    return False


def _function(node: ast.FunctionDef | ast.AsyncFunctionDef, deferred: Deferred,
              postponed: bool) -> bool:  # fmt: skip
    defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    notes = annotations_of(node)
    return (node.name not in deferred and _decorated(node, deferred)
            and all(isinstance(d, ast.Constant) for d in defaults)
            and all(_annotation(n, deferred, postponed) for n in notes))  # fmt: skip


def record_class(node: ast.ClassDef, deferred: Deferred, postponed: bool) -> bool:
    """Whether the class is a record class in its file (module docstring)."""
    made_outside = bool(node.bases or node.decorator_list)
    code = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    defines = any(isinstance(n, code) for s in node.body for n in ast.walk(s))
    return made_outside and not defines and _class(node, deferred, postponed, (), outside=True)


def _class(node: ast.ClassDef, deferred: Deferred, postponed: bool, records: Records,
           outside: bool = False) -> bool:  # fmt: skip
    if node.name in deferred or not _decorated(node, deferred):
        return False
    if not all(_called(b, deferred) or (_is_object(b) and not outside) for b in node.bases):
        return False  # a base of the repository's may run a hook as the class is made
    outside = any(_called(b, deferred) for b in node.bases)  # its metaclass is outside too
    for keyword in node.keywords:  # handed to the metaclass
        if not (_called(keyword.value, deferred) if keyword.arg == "metaclass"
                else outside and _plain(keyword.value, deferred)):  # fmt: skip
            return False
    if any(isinstance(n, ast.Import | ast.ImportFrom) for n in _class_level(node.body)):
        return False  # binds in the class's scope what its body then reads, unseen here
    return _all(node.body, deferred, postponed, records)


def _class_level(body: list[ast.stmt]):
    """The statements a class body runs as the class is made (not its functions')."""
    for statement in body:
        yield statement
        if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for field in ("body", "orelse", "finalbody"):
                yield from _class_level(getattr(statement, field, None) or [])
            for handler in getattr(statement, "handlers", ()):
                yield from _class_level(handler.body)


def _decorated(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
               deferred: Deferred) -> bool:  # fmt: skip
    """Each decorator is called with what it decorates: inert only if it is code outside
    the resolution code (`@functools.cache`, `@dataclasses.dataclass(frozen=True)`)."""
    return all(_called(d, deferred) for d in node.decorator_list)


def _annotation(node: ast.expr, deferred: Deferred, postponed: bool) -> bool:
    """An annotation Python evaluates unless the file postpones them."""
    return postponed or isinstance(node, ast.Constant | ast.Name) or _called(node, deferred)


def _all(nodes: list[ast.stmt], deferred: Deferred, postponed: bool, records: Records) -> bool:
    return all(inert(n, deferred, postponed, records) for n in nodes)


def _value(node: ast.expr, deferred: Deferred, records: Records = ()) -> bool:
    """Whether evaluating `node` as an assigned value runs no code of the repository."""
    if isinstance(node, ast.Constant | ast.Name) or _arithmetic(node):
        return True
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(_value(e, deferred, records) for e in node.elts)
    if isinstance(node, ast.Dict):
        parts = [*node.keys, *node.values]
        return None not in node.keys and all(_value(e, deferred, records) for e in parts)
    return _record_call(node, deferred, records) or _called(node, deferred)


def _arithmetic(node: ast.expr) -> bool:
    """Operators on constants only (`-1`, `10 * 1024`): Python's own, on its own values."""
    if isinstance(node, ast.UnaryOp):
        return _arithmetic(node.operand)
    if isinstance(node, ast.BinOp):
        return _arithmetic(node.left) and _arithmetic(node.right)
    return isinstance(node, ast.Constant)


def _record_call(node: ast.expr, deferred: Deferred, records: Records) -> bool:
    """A record class called by name, each argument a constant, a tuple or list of such
    arguments, a deferred chain or a record call (never a name: code outside the
    repository may call what it is handed)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    parts = [*node.args, *(k.value for k in node.keywords)]
    return node.func.id in records and all(_argument(p, deferred, records) for p in parts)


def _argument(node: ast.expr, deferred: Deferred, records: Records) -> bool:
    if isinstance(node, ast.Tuple | ast.List):
        return all(_argument(e, deferred, records) for e in node.elts)
    return _record_call(node, deferred, records) or _plain(node, deferred)


def _called(node: ast.expr, deferred: Deferred) -> bool:
    """A constant, or an attribute, item or call chain rooted at a deferred name whose
    every argument and index is a constant or such a chain."""
    if isinstance(node, ast.Constant):
        return True
    while isinstance(node, CHAIN):
        if isinstance(node, ast.Call):
            parts = [*node.args, *(k.value for k in node.keywords)]
            if not all(_plain(p, deferred) for p in parts):
                return False
            node = node.func
        elif isinstance(node, ast.Subscript):
            if not _plain(node.slice, deferred):
                return False
            node = node.value
        else:
            node = node.value
    return isinstance(node, ast.Name) and node.id in deferred


def _plain(node: ast.expr, deferred: Deferred) -> bool:
    """An argument or index: a constant, a tuple of them, or a deferred chain."""
    if isinstance(node, ast.Tuple | ast.List):
        return all(_plain(e, deferred) for e in node.elts)
    if isinstance(node, ast.Starred):
        return False
    if isinstance(node, ast.Name) and node.id == "__name__":  # the module's name: a str
        return True
    return _called(node, deferred)


def _is_object(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "object"


EXCEPTIONS = frozenset(
    {"Exception", "BaseException", "ImportError", "ModuleNotFoundError", "AttributeError",
     "KeyError", "ValueError", "TypeError", "OSError"}
)  # fmt: skip


def _builtin_kind(node: ast.expr) -> bool:
    """An exception class an `except` names: a builtin one (the handler only compares)."""
    if isinstance(node, ast.Tuple):
        return all(_builtin_kind(e) for e in node.elts)
    return isinstance(node, ast.Name) and node.id in EXCEPTIONS
