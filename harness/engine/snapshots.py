"""An entry's snapshot of its configuration's fields, whose inputs count where read.

SGLang's resolution entry (0.5.19 on) first copies every field of the
configuration it is handed into an attribute (the world's `World.snapshot`,
SGLang's `_raw_input`), in one statement of this shape:

    server_args._raw_input = {
        field.name: getattr(server_args, field.name)
        for field in record_fields(type(server_args))
    }

and a few readers later look single fields up in it. As written, that
comprehension reads every input of the cell, so exploration
(`harness.engine.explore`) could never tell two cells apart by what a call read:
it would run every cell. So, in an entry's files, where `getattr` is Python's:

- that statement is compiled as `server_args._raw_input = SNAPSHOT(<the same
  iterable>, server_args)`: the same values, read in the same order at the same
  moment, but each value's inputs are kept with it (`Snapshot`) and counted read
  when a reader looks that field up;
- a read of the attribute back (`getattr(obj, "_raw_input", None)` or
  `obj._raw_input`) in one of these shapes is compiled as `READ(obj[, None])`,
  which hands back the snapshot itself:
  `(<read> or {}).get(key[, default])`, or `name = <read>` in a function whose
  every other use of `name` is `name is None`, `name is not None`,
  `key in name`, `key not in name`, `name[key]` or `name.get(...)`.

Any other read of the attribute, by any name, through any object, hands back the
snapshot's values as the plain dict they are, every input of theirs counted read
then: which inputs a call read is a set, so counting them late is exact. A
snapshot is only ever seen by the shapes above, which ask nothing of it but a
key's value, whether it holds a key, and that it is a non-empty mapping.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterable
from typing import Any

from harness.closure.effects import stars
from harness.closure.names import SCOPES, bound_by, own_nodes
from harness.engine.branches import NAMES as SITE_NAMES
from harness.engine.world import Probe

SNAPSHOT = "__harness_snapshot__"  # builtins no source can name (dunder names are refused)
READ = "__harness_snapshot_read__"
HANDED = "snapshot handed"  # Probe.call: READ is reading the attribute (see `escaping`)


class Snapshot:
    """A configuration's fields as they were, each with the inputs its value read (a
    bitmask of axes, as `Probe.read`), counted read on `probe` when looked up. Its state
    is in slots of special names, which evaluated code may not read."""

    __slots__ = ("__probe__", "__reads__", "__values__")

    def __init__(self, probe: Probe, values: dict[str, Any], reads: dict[str, int]) -> None:
        self.__probe__, self.__values__, self.__reads__ = probe, values, reads

    def __bool__(self) -> bool:
        return bool(self.__values__)

    def __contains__(self, key: Any) -> bool:
        return key in self.__values__  # (its keys are the class's fields: no input)

    def __getitem__(self, key: Any) -> Any:
        value = self.__values__[key]
        self.__probe__.read |= self.__reads__.get(key, 0)
        return value

    def get(self, key: Any, default: Any = None, /) -> Any:
        return self[key] if key in self.__values__ else default

    def escaped(self) -> dict[str, Any]:
        """The values as the plain dict they are, every input of theirs counted read."""
        for reads in self.__reads__.values():
            self.__probe__.read |= reads
        return self.__values__


def snapshot_builtins(
    probe: Probe, attr: str, getattr_: Callable[..., Any], configuration: Callable[[Any], Any]
) -> dict[str, Callable[..., Any]]:
    """SNAPSHOT and READ (see the module), with `getattr_` the evaluated code's `getattr`
    and `configuration(obj)` not None for the entry's configuration (the only object a
    snapshot is taken of, and handed back from: elsewhere SNAPSHOT makes the dict the
    comprehension would, and READ reads as `getattr` does)."""

    def snapshot(fields: Any, obj: Any) -> Any:
        if configuration(obj) is None:
            return {field.name: getattr_(obj, field.name) for field in fields}
        values: dict[str, Any] = {}
        reads: dict[str, int] = {}
        for field in fields:
            key, name = field.name, field.name  # (read twice, as the comprehension does)
            before, probe.read = probe.read, 0
            try:
                value = getattr_(obj, name)
            except BaseException:
                probe.read |= before  # what a refused or failed read read counts now
                raise
            read, probe.read = probe.read, before  # counted where the value is looked up
            values[key] = value
            reads[key] = reads.get(key, 0) | read
        return Snapshot(probe, values, reads)

    def read(obj: Any, *default: Any) -> Any:
        if configuration(obj) is None:  # (reading it may run the code's own: a property)
            return getattr_(obj, attr, *default)
        probe.call[HANDED] = True  # (the configuration's read runs none of the code's)
        try:
            return getattr_(obj, attr, *default)
        finally:
            probe.call.pop(HANDED, None)

    return {SNAPSHOT: snapshot, READ: read}


def escaping(probe: Probe) -> Callable[[Any, Any], Any]:
    """The entry's configuration's answer for a value it holds: a snapshot only to READ
    (once: the first snapshot met while it reads), to anything else its plain dict."""

    def answer(obj: Any, value: Any) -> Any:
        if type(value) is not Snapshot:
            return value
        return value if probe.call.pop(HANDED, False) else value.escaped()

    return answer


# --- the rewrite ------------------------------------------------------------------


def snapshot_rewritten(body: Iterable[ast.stmt], attr: str,
                       free: Iterable[str] = ()) -> tuple[ast.stmt, ...]:  # fmt: skip
    """The file's statements with its snapshot of the configuration, and its reads of it
    in the shapes the module names, compiled as SNAPSHOT and READ (a copy of each
    statement changed: nodes are shared); as they are where `getattr` may not be
    Python's (the file binds it, imports `*`, or the world binds it: `free`)."""
    body = tuple(body)
    if "getattr" in free or any(_binds_getattr(node) for node in body):
        return body
    return tuple(_rewritten(node, attr) if _mentions(node, attr) else node for node in body)


def _mentions(node: ast.AST, attr: str) -> bool:
    return any(
        (isinstance(n, ast.Attribute) and n.attr == attr)
        or (isinstance(n, ast.Constant) and n.value == attr)
        for n in ast.walk(node)
    )


def _binds_getattr(node: ast.AST) -> bool:
    return any(stars(n) or "getattr" in bound_by(n) for n in ast.walk(node))


def _rewritten(statement: ast.stmt, attr: str) -> ast.stmt:
    copied = copy.deepcopy(statement)
    parents = {child: node for node in ast.walk(copied) for child in ast.iter_child_nodes(node)}
    kinds = ast.FunctionDef | ast.AsyncFunctionDef
    functions = [n for n in ast.walk(copied) if isinstance(n, kinds)]
    for function in functions:
        for node in own_nodes(function, SCOPES):
            if isinstance(node, ast.Assign) and (source := _taken(node, attr, function)):
                config = copy.deepcopy(node.targets[0].value)
                node.value = ast.copy_location(_call(SNAPSHOT, source, config), node.value)
    for node in list(ast.walk(copied)):
        if _read_of(node, attr) is not None and _handed(node, parents, functions):
            _replace(parents[node], node, _read_call(node))
    return ast.fix_missing_locations(copied)


def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _taken(node: ast.Assign, attr: str, function: ast.AST) -> ast.expr | None:
    """The fields' iterable of `X.attr = {F.name: getattr(X, F.name) for F in <it>}`, X a
    parameter of the function (always bound) that it never deletes; else None."""
    target, comp = node.targets[0] if len(node.targets) == 1 else None, node.value
    if not (isinstance(target, ast.Attribute) and target.attr == attr
            and isinstance(target.value, ast.Name) and isinstance(comp, ast.DictComp)
            and len(comp.generators) == 1):  # fmt: skip
        return None
    x, gen = target.value.id, comp.generators[0]
    if gen.ifs or gen.is_async or not isinstance(gen.target, ast.Name) or gen.target.id == x:
        return None
    f, value = gen.target.id, comp.value
    if not (_field_name(comp.key, f) and isinstance(value, ast.Call) and not value.keywords
            and _is_name(value.func, "getattr") and len(value.args) == 2
            and _is_name(value.args[0], x) and _field_name(value.args[1], f)):  # fmt: skip
        return None
    params = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    deleted = any(isinstance(n, ast.Name) and n.id == x and isinstance(n.ctx, ast.Del)
                  for n in own_nodes(function, SCOPES))  # fmt: skip
    return gen.iter if x in params and not deleted else None


def _field_name(node: ast.expr, f: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "name" and _is_name(node.value, f)


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)


def _read_of(node: ast.AST, attr: str) -> ast.expr | None:
    """The object of a read of the attribute: `getattr(obj, "attr", None)`, `obj.attr`."""
    if isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.ctx, ast.Load):
        return node.value
    if (isinstance(node, ast.Call) and _is_name(node.func, "getattr") and not node.keywords
            and len(node.args) == 3 and all(isinstance(a, ast.Constant) for a in node.args[1:])
            and node.args[1].value == attr and node.args[2].value is None):  # fmt: skip
        return node.args[0]
    return None


def _read_call(node: ast.expr) -> ast.Call:
    args = [node.value] if isinstance(node, ast.Attribute) else [node.args[0], node.args[2]]
    return ast.copy_location(_call(READ, *args), node)


def _replace(parent: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
        elif isinstance(value, list):
            parent_list = getattr(parent, field)
            for i, item in enumerate(parent_list):
                if item is old:
                    parent_list[i] = new


def _handed(node: ast.expr, parents: dict, functions: list) -> bool:
    """Whether the read stands in a shape that asks only for keys and values (see the
    module): `(<read> or {}).get(...)`, or `name = <read>` used only so."""
    parent = _through_site(node, parents)
    if isinstance(parent, ast.BoolOp) and isinstance(parent.op, ast.Or):
        rest = parent.values[1:]
        if len(parent.values) == 2 and parent.values[0] is _reported(node, parents) and \
                isinstance(rest[0], ast.Dict) and not rest[0].keys:  # fmt: skip
            return _getter(parent, parents)
        return False
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and parent.value is node:
        target = parent.targets[0]
        owner = next((f for f in functions if parent in set(own_nodes(f, SCOPES))), None)
        return isinstance(target, ast.Name) and owner is not None and \
            _only_looked_up(owner, target, parents)  # fmt: skip
    return False


def _reported(node: ast.expr, parents: dict) -> ast.expr:
    """`node`, or the report of it as a branch's operand that holds it (`branches`)."""
    parent = parents.get(node)
    return parent if _is_site_call(parent, node) else node


def _through_site(node: ast.expr, parents: dict) -> ast.AST | None:
    return parents.get(_reported(node, parents))


def _is_site_call(parent: ast.AST | None, node: ast.AST) -> bool:
    return (isinstance(parent, ast.Call) and _is_name(parent.func, SITE_NAMES[1])
            and len(parent.args) == 2 and parent.args[1] is node)  # fmt: skip


def _getter(node: ast.expr, parents: dict) -> bool:
    """Whether `node` is looked up with `.get(...)` called at once, positional args only."""
    attribute = parents.get(node)
    call = parents.get(attribute)
    return (isinstance(attribute, ast.Attribute) and attribute.attr == "get"
            and isinstance(call, ast.Call) and call.func is attribute and not call.keywords
            and 1 <= len(call.args) <= 2
            and not any(isinstance(a, ast.Starred) for a in call.args))  # fmt: skip


def _only_looked_up(function: ast.AST, target: ast.Name, parents: dict) -> bool:
    """Whether the function binds `target`'s name only there (nowhere in it, nested
    scopes included, is it bound or declared again) and uses it only as the module
    says."""
    name = target.id
    for node in ast.walk(function):
        if node is target:
            continue
        if name in bound_by(node) and node is not function:
            return False
        if isinstance(node, ast.Name) and node.id == name and not _looked_up(node, parents):
            return False
    return True


def _looked_up(node: ast.Name, parents: dict) -> bool:
    """`name is [not] None`, `key [not] in name`, `name[key]`, `name.get(...)`."""
    parent = parents.get(node)
    if isinstance(parent, ast.Compare) and len(parent.ops) == 1:
        op, right = parent.ops[0], parent.comparators[0]
        if parent.left is node and isinstance(op, ast.Is | ast.IsNot):
            return isinstance(right, ast.Constant) and right.value is None
        return right is node and parent.left is not node and isinstance(op, ast.In | ast.NotIn)
    if isinstance(parent, ast.Subscript):
        return parent.value is node and isinstance(parent.ctx, ast.Load)
    return _getter(node, parents)
