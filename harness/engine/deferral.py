"""What an entry point's closure refuses where a cell reaches it, not before the run.

An entry point holds code for every platform and feature; only what the matrix's
cells run must be bound. So, in an entry's closure (`Closure.entry`), a free name
nothing binds, a builtin outside the allow-list, a definition the policy withholds
(`harness.engine.policy`), and a name of a file whose module-level code could not
run are left out of the file's namespace, which refuses them, with why, when the
code reads them: through the namespace's `__missing__` (a global name), and the
file's own builtins' `__missing__` (a class body's read, which asks the namespace as
a plain dict first). The sandbox (`harness.engine.sandbox`) makes the namespaces.
"""

from __future__ import annotations

import ast
import copy
from typing import Any, NamedTuple

from harness.closure.extract import Closure
from harness.closure.inert import inert
from harness.closure.names import SCOPES, annotations_of, bound_by
from harness.closure.resolve import placed_node
from harness.engine.policy import (
    ALLOWED_BUILTINS,
    Withheld,
    forbidden_in,
    forbidden_why,
    narrowed_methods,
    rebound,
    unbound_in,
    violations,
)
from harness.engine.quiet_bases import quiet_base
from harness.engine.world import Probe, stand_in_class


class FileBuiltins(dict):
    """The builtins of one file of an entry's closure: a name neither its namespace nor the
    builtins hold is looked up here through `__missing__`, which refuses what the file's
    namespace refuses. A class body reads the namespace without asking it (as a plain
    dict), then the builtins: this is where its read of a refused name is refused."""

    __slots__ = ("space",)

    def __missing__(self, name: str) -> Any:
        why = self.space.refuses(name)
        if why is not None:
            raise self.space.probe.refuse(_what(name), why)
        raise KeyError(name)


class Deferring(dict):
    """A file's namespace that refuses, where the code reaches them, the names an entry
    point's closure leaves unbound (`Closure.unbound`, builtins outside the allow-list,
    functions the policy withholds), each with why (`why`, on `probe`): Python looks a
    global name up in it through `__missing__` when it holds no such key, before the
    builtins, and never for a function's own local names. No evaluated code can reach
    the namespace itself (no `globals()`, no `__globals__`)."""

    __slots__ = ("every", "probe", "why")

    def __missing__(self, name: str) -> Any:
        why = self.refuses(name)
        if why is not None:
            raise self.probe.refuse(_what(name), why)
        raise KeyError(name)

    def refuses(self, name: str) -> str | None:
        """Why the name is refused here; None: it is not (a builtin may answer it)."""
        if name.startswith(REFUSED):  # where a statement the policy forbids stood
            return self.why.get(name, "code the policy forbids is not compiled")
        return self.why.get(name, self.every)


_NUMERIC = ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow",
            "lshift", "rshift", "and", "xor", "or")  # fmt: skip
USES = (  # every special method Python looks up on an object's type, each a use
    "__getattribute__", "__setattr__", "__delattr__", "__dir__", "__call__", "__bool__",
    "__len__", "__length_hint__", "__iter__", "__reversed__", "__contains__", "__getitem__",
    "__setitem__", "__delitem__", "__missing__", "__eq__", "__ne__", "__lt__", "__le__",
    "__gt__", "__ge__", "__hash__", "__repr__", "__str__", "__format__", "__bytes__",
    "__int__", "__float__", "__complex__", "__index__", "__round__", "__trunc__",
    "__floor__", "__ceil__", "__neg__", "__pos__", "__abs__", "__invert__", "__enter__",
    "__exit__", "__aenter__", "__aexit__", "__await__", "__aiter__", "__anext__", "__next__",
    "__instancecheck__", "__subclasscheck__", "__mro_entries__", "__get__", "__set__",
    "__delete__", "__set_name__", "__buffer__", "__reduce__", "__reduce_ex__", "__copy__",
    "__deepcopy__", "__getstate__", "__sizeof__", "__fspath__",
    *(f"__{kind}{op}__" for op in _NUMERIC for kind in ("", "r", "i")),
)  # fmt: skip


def deferred_import(probe: Probe, name: str, why: str) -> Any:
    """What an import inside an entry's function binds for a name defined outside the
    resolution code (`LocalImport.deferred`): SGLang's import succeeds, and so does this
    one, but the value is not the harness's to know, so every special method Python
    looks up on its type refuses on `probe` with `why`. The closure binds it only where
    each use is one Python asks the value's type about first (an attribute, a call, the
    class `isinstance` tests: `harness.closure.resolve._refused_uses`); the rest of
    the list is a second wall. Made once per compiled world, as SGLang's class is one
    per process."""
    what = f"name {name}"

    def used(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise probe.refuse(what, why)

    return object.__new__(stand_in_class(name, dict.fromkeys(USES, used), probe))


def _what(name: str) -> str:
    """What a refusal of the name says was read (a narrowed function's own: `narrowed`)."""
    if name.startswith(REFUSED):
        return f"code the policy forbids in {name.removeprefix(REFUSED).removesuffix('__')}"
    return f"name {name}"


def self_contained(nodes: tuple[ast.stmt, ...], closure: Closure, path: str) -> bool:
    """Whether a file of an entry's closure may be left empty when its module-level code
    cannot run here: only if that code, in the project's process, changes nothing but
    the names it binds (`harness.closure.inert`)."""
    deferred, postponed = unbound_in(closure, path), path in closure.postponed
    return closure.entry and all(inert(node, deferred, postponed) for node in nodes)


def failed_space(path: str, why: str, probe: Probe) -> Deferring:
    """The namespace of a file of an entry's closure whose module-level code could not run
    (`why`): every name read from it is refused where the code reads it."""
    space = Deferring()
    space.why, space.probe, space.every = {}, probe, f"{path} could not be loaded: {why}"
    return space


def deferred_reasons(
    closure: Closure, withheld: list[dict[str, str]], order: list[str]
) -> list[dict[str, str] | None]:
    """Per file of `order` (the closure's files, as loaded; `withheld`, each one's
    `withheld_in`), why each name it may not read is not there (None: a closure not an
    entry point's): the names nothing binds, builtins outside the allow-list, and the
    definitions the policy withholds."""
    if not closure.entry:
        return [None for _ in order]
    builtin = {name: "builtins outside the allow-list are not available to evaluated code "
               "(see Security model in the README)"
               for name in closure.builtins if name not in ALLOWED_BUILTINS}  # fmt: skip
    return [{**builtin, **{name: why for p, name, why in closure.unbound if p == path},
             **held} for path, held in zip(order, withheld, strict=True)]  # fmt: skip


def withheld_in(closure: Closure, path: str, withheld: Withheld) -> dict[str, str]:
    """The names the definitions the policy withholds leave refused in the file at `path`,
    and why: a withheld function's or class's own name, or for a function narrowed to
    the statements holding what the policy forbids (`narrowed`), the name read where
    those stood."""
    found: dict[str, str] = {}
    for node in closure.nodes_of(path):
        if (why := unmakeable(closure, path, node)) is not None:
            found[node.name] = why
            continue
        if not withheld_here(node, path, withheld):
            continue
        methods = narrowed_methods(closure, path, node)
        for method in methods:  # each refuses with the first construct it holds
            first = forbidden_in(closure, path, method)[0]
            found[f"{REFUSED}{node.name}.{method.name}__"] = forbidden_why(path, first)
        if not methods:
            why = withheld[(path, node.lineno)]
            found[node.name if _plan(node) is None else f"{REFUSED}{node.name}__"] = why
    return found


def withholding(closure: Closure, body: tuple[ast.stmt, ...], path: str, withheld: Withheld,
                originals: tuple[ast.stmt, ...]) -> list[ast.stmt]:  # fmt: skip
    """The file's statements (perhaps rewritten: `originals` are the closure's own)
    without the definitions the policy withholds, or with a function narrowed where it
    may be (`narrowed`), or a class with its methods narrowed (`narrowed_class`)."""
    by_line = {node.lineno: node for node in originals}
    kept = []
    for node in body:
        original = by_line.get(node.lineno)
        if original is not None and unmakeable(closure, path, original) is not None:
            continue
        if not withheld_here(node, path, withheld):
            kept.append(node)
        elif original is not None and (methods := narrowed_methods(closure, path, original)):
            kept.append(narrowed_class(node, methods))
        elif (narrow := narrowed(node, original)) is not None:
            kept.append(narrow)
    return kept


def unmakeable(closure: Closure, path: str, node: ast.stmt) -> str | None:
    """Why a class of an entry's closure is left out, its name refused where reached:
    its bases are quiet bases of modules nothing binds here (`harness.engine.quiet_bases`;
    SGLang 0.5.10's `class LoRAPathAction(argparse.Action)`, with `import argparse` the
    file's one binding of `argparse`, no `global argparse` and no star import), so making
    it runs no code but the class body's; that body only binds constants and functions
    (`_made_of_constants`); and no other statement of the file binds its name. In the
    project's process, making it then changes nothing the resolution could see but its
    name. None for any other statement: it runs as the file loads."""
    if not (closure.entry and isinstance(node, ast.ClassDef)) or len(node.bases) != 1:
        return None  # one base: `(argparse.Action, argparse.Action)` is Python's TypeError
    if node.decorator_list or node.keywords:
        return None
    original = as_written(closure, path, node)  # what runs strips annotations: not Python
    if original is None or not _made_of_constants(original, path in closure.postponed):
        return None
    unbound = {name: why for p, name, why in closure.unbound if p == path}
    modules = {name: (module, line) for p, name, module, line in closure.outside if p == path}
    (base,) = node.bases
    if not (isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name)):
        return None
    module, line = modules.get(base.value.id, (None, node.lineno))
    if line >= node.lineno or base.value.id not in unbound or not quiet_base(module, base.attr):
        return None  # imported after the class: Python's NameError
    if node.name in unbound or rebound(closure, path, node) or _unbound_anew(closure, node.name):
        return None
    read = base.value.id
    return f"its definition (at {path}:{node.lineno}) reads {read}, {unbound[read]}"


def as_written(closure: Closure, path: str, node: ast.stmt) -> ast.stmt | None:
    """The statement of the file at `path` that `node` (one of `closure.nodes_of(path)`,
    annotations stripped) was made from, as the file has it; None if it is not one."""
    for part in closure.parts:
        if part.path == path and placed_node(part.statement, part.role) is node:
            return part.statement.node
    return None


def _unbound_anew(closure: Closure, name: str) -> bool:
    """Whether code of the closure may unbind or rebind `name` from inside a function (a
    `global name` there), or delete it as a module's attribute (`del helpers.name`): left
    out, the name is not there to delete, which such code could tell (a caught error)."""
    for part in closure.parts:
        for node in ast.walk(part.statement.node):
            if isinstance(node, ast.Global) and name in node.names:
                return True
            if isinstance(node, ast.Delete) and any(
                isinstance(t, ast.Attribute) and t.attr == name for t in node.targets
            ):
                return True
    return False


# methods of `__` Python's making of a class never reads (it reads `__slots__`,
# `__qualname__`, `__classcell__`, `__init_subclass__`, `__class_getitem__`, `__new__`)
PLAIN_METHODS = frozenset(
    f"__{name}__" for name in ("init", "call", "repr", "str", "eq", "ne", "lt", "le", "gt",
                               "ge", "hash", "len", "iter", "contains", "getitem", "bool")
)  # fmt: skip


def _made_of_constants(node: ast.ClassDef, postponed: bool) -> bool:
    """Whether the class body, run as the class is made, evaluates nothing but constants:
    a docstring, `pass`, a plain name given a constant or a tuple of them, and functions
    with no decorator, constant defaults, and no annotation Python would evaluate; and
    binds no name of `__`, which Python mangles or reads as it makes the class
    (`__slots__`, `__qualname__`, `__classcell__`), but the methods of PLAIN_METHODS."""
    for statement in node.body:
        if isinstance(statement, ast.Pass):
            continue
        name = getattr(statement, "name", "")
        if name.startswith("__") and name not in PLAIN_METHODS:  # `def __slots__`: read too
            return False
        if isinstance(statement, ast.Expr):
            plain = isinstance(statement.value, ast.Constant)
        elif isinstance(statement, ast.Assign):
            (target, *more) = statement.targets
            named = isinstance(target, ast.Name) and not target.id.startswith("__")
            plain = named and not more and _constant(statement.value)
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            plain = _plain_function(statement, postponed)
        else:
            plain = False
        if not plain:
            return False
    return True


def _constant(value: ast.expr) -> bool:
    if isinstance(value, ast.Tuple):
        return all(map(_constant, value.elts))
    return isinstance(value, ast.Constant)


def _plain_function(node: ast.FunctionDef | ast.AsyncFunctionDef, postponed: bool) -> bool:
    arguments = node.args
    defaults = [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
    noted = bool(annotations_of(node))
    typed = bool(getattr(node, "type_params", ()))  # `def f[T]()`: made as it is defined
    return (not node.decorator_list and all(isinstance(d, ast.Constant) for d in defaults)
            and (postponed or not noted) and not typed)  # fmt: skip


def withheld_here(node: ast.stmt, path: str, withheld: Withheld) -> bool:
    """Whether `node` of the file at `path` is a definition the policy withholds."""
    return (path, node.lineno) in withheld and isinstance(node, ast.FunctionDef | ast.ClassDef)


# read where a statement stood: `__harness_refused_NAME__`, a special name, which the policy
# lets no evaluated code bind or read
REFUSED = "__harness_refused_"
BLOCKS = ("body", "orelse", "finalbody")  # a compound statement's own statement lists
Place = tuple[int, int, int | None, int | None]  # a statement's line, column, end line, end


class Plan(NamedTuple):
    """Where a withheld function is narrowed: the innermost statements holding what the
    policy forbids."""

    statements: frozenset[Place]


def narrowed_class(node: ast.ClassDef, methods: list[ast.FunctionDef]) -> ast.ClassDef:
    """A copy of the class `node` (perhaps rewritten) with each of its `methods` (the
    closure's own, `harness.engine.policy.narrowed_methods`) narrowed, reading
    `__harness_refused_CLASS.METHOD__` where it held what the policy forbids; or, where
    a method cannot be narrowed so, its whole body replaced by that read (and what
    Python reads of it as it compiles: `_compiled_facts`). The class body runs as
    written: a method's body runs only when it is called."""
    originals = {method.lineno: method for method in methods}
    copied = copy.copy(node)
    copied.body = []
    for statement in node.body:
        original = originals.get(statement.lineno)
        if original is None or not isinstance(statement, ast.FunctionDef):
            copied.body.append(statement)
            continue
        name = f"{REFUSED}{node.name}.{original.name}__"
        copied.body.append(narrowed(statement, original, name) or _refusing(statement, name))
    return copied


def _refusing(node: ast.FunctionDef, name: str) -> ast.FunctionDef:
    """A copy of the function `node` whose body reads `name` first and runs nothing else."""
    copied = copy.deepcopy(node)
    read = ast.copy_location(ast.Expr(ast.Name(id=name, ctx=ast.Load())), node.body[0])
    facts = [fact for statement in node.body for fact in _compiled_facts(statement, plain=True)]
    never = [ast.copy_location(ast.If(test=ast.Constant(False), body=facts, orelse=[]), read)]
    copied.body = [read, *(never if facts else [])]
    return ast.fix_missing_locations(copied)


def narrowed(node: ast.stmt, original: ast.stmt | None, name: str = "") -> ast.stmt | None:
    """A withheld function whose forbidden constructs are all inside its body, narrowed:
    a copy of `node` (the closure's `original`, perhaps rewritten to report its sites)
    with each innermost statement holding one replaced by a read of a special name of
    its own (`__harness_refused_NAME__`), which the file's namespace refuses with why,
    followed by a block that never runs holding what Python reads of the statement as it
    compiles the function (`_compiled_facts`: the names it binds, `global` and
    `nonlocal`, a `yield`), so the function's scopes and kind are the original's. It
    then runs as written up to such a statement, and is refused where a cell reaches
    it; defining it, as the file loads, runs nothing forbidden. None (withheld whole):
    what runs as it is defined (decorators, defaults, annotations) holds one, a
    replaced statement awaits, or the copy might still hold one (a statement not found
    where it stood, a construct the policy forbids left in it)."""
    plan = None if original is None else _plan(original)
    if plan is None or not isinstance(node, ast.FunctionDef):
        return None
    copied, placed = copy.deepcopy(node), set()
    try:
        name = name or f"{REFUSED}{node.name}__"  # (`name`: a narrowed class's method's)
        copied.body = _narrowed_block(copied.body, plan, name, placed)
    except _Awaits:
        return None
    before = set(violations(original))
    left = [v for v in violations(copied)
            if not (v[2].startswith("name __harness_") and v not in before)]  # fmt: skip
    return copied if placed == plan.statements and not left else None


def _plan(node: ast.stmt) -> Plan | None:
    """Where to narrow a function (None: it may not be; see `narrowed`)."""
    if not isinstance(node, ast.FunctionDef) or _outside_body(node):
        return None
    statements: set[Place] = set()
    _innermost(node.body, statements)
    return Plan(frozenset(statements)) if statements else None


def _outside_body(node: ast.FunctionDef) -> bool:
    args = node.args
    parts = [*node.decorator_list, *args.defaults, *args.kw_defaults, node.returns,
             *(a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                      args.vararg, args.kwarg] if a is not None)]  # fmt: skip
    return any(True for part in parts if part is not None for _ in violations(part))


def _innermost(block: list[ast.stmt], found: set[Place]) -> None:
    """The places of the innermost statements of `block` holding a forbidden construct."""
    for statement in block:
        here = set(violations(statement))
        inner = _inner_blocks(statement)
        within = {v for stmts in inner for s in stmts for v in violations(s)}
        if here and (here - within or not inner):  # the statement itself holds one
            found.add(_place(statement))
        elif here:
            for stmts in inner:
                _innermost(stmts, found)


def _narrowed_block(block: list[ast.stmt], plan: Plan, name: str,
                    placed: set[Place]) -> list[ast.stmt]:  # fmt: skip
    """`block` with the plan's statements replaced (see `narrowed`); `placed`: the places
    replaced."""
    out = []
    for statement in block:
        if _place(statement) in plan.statements:
            placed.add(_place(statement))
            read = ast.Expr(ast.Name(id=name, ctx=ast.Load()))
            out.append(ast.fix_missing_locations(ast.copy_location(read, statement)))
            facts = _compiled_facts(statement)
            if facts:
                never = ast.If(test=ast.Constant(False), body=facts, orelse=[])
                out.append(ast.fix_missing_locations(ast.copy_location(never, statement)))
            continue
        for owner, field in _block_fields(statement):
            setattr(owner, field, _narrowed_block(getattr(owner, field), plan, name, placed))
        out.append(statement)
    return out


class _Awaits(Exception):
    """A replaced statement awaits: what it would await is not followed."""


def _compiled_facts(statement: ast.stmt, plain: bool = False) -> list[ast.stmt]:
    """What Python reads of `statement` as it compiles the function holding it, as
    statements that run nothing: `NAME = None` for each name it binds in the function's
    scope (else a read of it elsewhere would read a global), its `global` and
    `nonlocal` statements, and a bare `yield` if it yields (else the function would not
    be a generator). Raises _Awaits where it awaits, unless the function is `plain` (a
    `def`, which nothing in it can make a coroutine: an `async for` there is an
    asynchronous generator expression's own)."""
    bound: dict[str, None] = {}
    kept: list[ast.stmt] = []
    yields = False
    for node in _scope_nodes(statement):
        awaits = isinstance(node, ast.Await | ast.AsyncFor | ast.AsyncWith)
        if not plain and (awaits or getattr(node, "is_async", 0)):
            raise _Awaits
        if isinstance(node, ast.Global | ast.Nonlocal):
            kept.append(copy.deepcopy(node))
        yields = yields or isinstance(node, ast.Yield | ast.YieldFrom)
        bound.update(dict.fromkeys(sorted(bound_by(node))))
    stores = [ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())], value=ast.Constant(None))
              for n in bound if not any(n in k.names for k in kept)]  # fmt: skip
    stub = [*kept, *stores]
    if yields:
        stub.append(ast.Expr(ast.Yield(value=None)))
    return stub


def _scope_nodes(node: ast.AST):
    """The nodes of `node` that belong to the scope it stands in: not the bodies of the
    functions, lambdas and classes it defines (their names, decorators, defaults and
    bases are the scope's), nor a comprehension's own variables; where `node` is such a
    definition itself, only its name and header."""
    yield node
    if isinstance(node, SCOPES):
        for part in _header(node):
            yield from _scope_nodes(part)
        return
    for child in ast.iter_child_nodes(node):
        if isinstance(child, SCOPES):
            yield child
            for part in _header(child):
                yield from _scope_nodes(part)
        elif isinstance(child, ast.comprehension):
            yield child
            for part in [child.iter, *child.ifs]:
                yield from _scope_nodes(part)
        else:
            yield from _scope_nodes(child)


def _header(node: ast.AST) -> list[ast.AST]:
    """What a definition evaluates in the scope it stands in."""
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    args = node.args
    parts = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    if isinstance(node, ast.Lambda):
        return parts
    return [*node.decorator_list, *parts]


def _place(statement: ast.stmt) -> Place:
    return (statement.lineno, statement.col_offset, statement.end_lineno,
            statement.end_col_offset)  # fmt: skip


def _block_fields(statement: ast.stmt) -> list[tuple[ast.AST, str]]:
    owners = [statement, *getattr(statement, "handlers", ()), *getattr(statement, "cases", ())]
    return [(owner, field) for owner in owners for field in BLOCKS
            if isinstance(getattr(owner, field, None), list) and getattr(owner, field)
            and isinstance(getattr(owner, field)[0], ast.stmt)]  # fmt: skip


def _inner_blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    return [getattr(owner, field) for owner, field in _block_fields(statement)]


def deferring_space(space: dict[str, Any], why: dict[str, str] | None, probe: Probe) -> dict:
    """`space` as a namespace refusing the names of `why` on `probe` where they are read
    (the traceback gives the line), or `space` itself for a closure not an entry's."""
    if why is None:
        return space
    deferring = Deferring(space)
    deferring.why, deferring.probe, deferring.every = dict(why), probe, None
    builtins = FileBuiltins(space["__builtins__"])
    builtins.space = deferring
    deferring["__builtins__"] = builtins
    return deferring
