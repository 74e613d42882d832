"""What evaluated code may do, checked on its AST before anything is compiled.

Every statement drawn into a closure (the target, helpers, constants,
classes, default values, decorators, from every file) is walked. The rules
close the known ways out of a Python namespace:

- no attribute whose name starts and ends with `__` (but reading `__name__` and
  `__qualname__`, which `harness.engine.own_names` answers), nor one whose name
  starts and ends with one `_` (Python reserves these `_sunder_` names for enum's
  machinery: `_convert_`, `_create_`, `_new_member_`), by attribute syntax, by
  `getattr`/`hasattr`/`setattr`/`delattr` with a literal name, by a class
  pattern in `match`, or by a `str.format` field (`"{0.__class__}"`);
  `.format` only on a string literal whose fields read no attribute or item;
- no frame, generator, coroutine, traceback or code internals (`f_globals`,
  `gi_frame`, `tb_frame`, `co_code`, ...), nor `mro`;
- no name that starts and ends with `__` (`__builtins__`, `__import__`), but
  `__name__` and a class's `__slots__`;
- in classes, no metaclass (nor a `**` or `_private` class keyword, which a
  metaclass takes: enum's `_simple`), no special method other than the ordinary
  data-model ones (no `__getattr__`, `__init_subclass__`, `__del__`, ...), no
  `_sunder_` name (an enumeration's `_missing_`, `_ignore_`, ...), and no field
  (`name: T`) or slot (`__slots__`, literal names only) whose name is an attribute
  no read may take: a dataclass's `__match_args__` lists its fields, and a
  positional `case K(x)` reads them in C;
- the world's `auto` (enum's) only called as a member's value in a class body
  (`A = auto()`): what it makes is written into by the class body that takes it;
- `type` with one argument only; builtins from a short allow-list;
- `super` only as `super()`, with no arguments: `super(X, obj)` (or `super`
  passed, stored or called any other way) reaches the methods of any class
  `obj` is an instance of, the harness's own included.

At run time `getattr` and `hasattr` refuse the same names whatever string
they are given, `type` refuses a `super` object, the world's stand-ins
(`harness.engine.world.is_stand_in`; see `harness.engine.sandbox`) and a
class (whose type is `type` itself or a metaclass: `type(type(()))` called
with three arguments makes a class from a dict of special methods, and its
`__match_args__` reads any attribute by a string no check sees),
and a loaded file's `__name__` is its dotted module name, as the project
imports it (`harness.closure.modules.module_name`); `import` binds only what
the world supplies: no module is ever imported. A violation makes the
revision unevaluable, and the reason names the file, the line and the
construct. Single-underscore names are SGLang's own (`_fa4_page_constraint`)
and are allowed.
"""

from __future__ import annotations

import ast
import string
from collections.abc import Iterator

from harness.closure.extract import Closure
from harness.closure.inert import inert
from harness.closure.shadows import bound_names
from harness.engine.own_names import NAMES
from harness.errors import Unevaluable

# Builtins the evaluated code may use: pure functions, types and exceptions.
# (Not id() or hash(): their answers change from run to run.)
ALLOWED_BUILTINS = frozenset(
    (
        "abs",
        "all",
        "any",
        "ascii",
        "bin",
        "bool",
        "bytes",
        "callable",
        "chr",
        "complex",
        "dict",
        "divmod",
        "enumerate",
        "filter",
        "float",
        "format",
        "frozenset",
        "getattr",
        "hasattr",
        "hex",
        "int",
        "isinstance",
        "issubclass",
        "iter",
        "len",
        "list",
        "map",
        "max",
        "min",
        "next",
        "object",
        "oct",
        "ord",
        "pow",
        "print",
        "property",
        "range",
        "repr",
        "reversed",
        "round",
        "setattr",
        "set",
        "slice",
        "sorted",
        "staticmethod",
        "classmethod",
        "str",
        "sum",
        "super",
        "tuple",
        "type",
        "zip",
        "ArithmeticError",
        "AssertionError",
        "AttributeError",
        "BaseException",
        "Exception",
        "IndexError",
        "KeyError",
        "LookupError",
        "NotImplementedError",
        "OverflowError",
        "RuntimeError",
        "StopIteration",
        "TypeError",
        "ValueError",
        "ZeroDivisionError",
        "SystemExit",  # raising these is a cell's error outcome, like any other exception
        "KeyboardInterrupt",
        "GeneratorExit",
        "NotImplemented",
        "Ellipsis",
        "True",
        "False",
        "None",
        "__build_class__",
        "__name__",
    )
)

INTERNALS = ("f_", "gi_", "cr_", "ag_", "tb_", "co_")  # frames, generators, tracebacks, code
FORBIDDEN_ATTRIBUTES = frozenset(("mro", "format", "format_map"))
ALLOWED_DUNDER_NAMES = frozenset(("__name__", "__slots__"))
DEFINABLE = frozenset(
    f"__{name}__"
    for name in [
        "init",
        "post_init",
        "repr",
        "str",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "hash",
        "bool",
        "len",
        "iter",
        "next",
        "contains",
        "getitem",
        "call",
        "enter",
        "exit",
        "add",
        "sub",
        "mul",
        "truediv",
        "floordiv",
        "mod",
        "neg",
        "pos",
        "abs",
        "int",
        "float",
        "index",
    ]
)
ATTRIBUTE_BUILTINS = frozenset(("getattr", "hasattr", "setattr", "delattr"))
POLICY_FIX = "evaluated code may not read it (see Security model in the README)"


def forbidden_attribute(name: str) -> bool:
    """Whether evaluated code may not read attribute `name` (a dunder, a sunder, an
    internal)."""
    return (
        (name.startswith("__") and name.endswith("__"))
        or sunder(name)
        or name.startswith(INTERNALS)
        or name in FORBIDDEN_ATTRIBUTES
    )


def sunder(name: str) -> bool:
    """`_name_`: what Python's enum reserves for its machinery (as `enum._is_sunder`)."""
    return len(name) > 2 and name[0] == name[-1] == "_" and name[1] != "_" and name[-2] != "_"


_PASSED: dict[int, tuple] = {}  # closures found within the policy, by id (kept alive)
MAX_PASSED = 256


Withheld = dict[tuple[str, int], str]  # (file, line of a `def`) -> why it is not compiled


def check_closure(closure: Closure) -> Withheld:
    """Raise Unevaluable naming the first construct the policy forbids (file order), then
    the first builtin outside the allow-list. In an entry point's closure, a function
    (other than the entry) or a class holding such a construct is withheld instead: never compiled,
    its name refused where the code reaches it, or compiled narrowed (a function's or a
    class's methods' statements holding one refused where reached: `narrowed_methods`,
    `harness.engine.deferral`); the answer says which, and why. A
    closure (the same object) that passed is not read again: a worker loads one closure
    once per set of inputs."""
    passed = _PASSED.get(id(closure))
    if passed is not None and passed[0] is closure:
        return passed[1]
    withheld = _check(closure)
    if len(_PASSED) >= MAX_PASSED:
        _PASSED.clear()
    _PASSED[id(closure)] = (closure, withheld)
    return withheld


def _check(closure: Closure) -> Withheld:
    withheld: Withheld = {}
    for path in closure.files:
        for node in closure.nodes_of(path):
            found = forbidden_in(closure, path, node)
            if not found:
                continue
            why = forbidden_why(path, found[0])
            if _withheld(closure, path, node):
                withheld[(path, node.lineno)] = why
                continue
            raise Unevaluable(why)
    for name in closure.builtins:
        if name not in ALLOWED_BUILTINS and not closure.entry:  # an entry's: where reached
            where = closure.use_line(name)
            raise Unevaluable(
                f"builtin {name} (used at {where}) is not available to evaluated code"
            )
    return withheld


def forbidden_in(closure: Closure, path: str, node: ast.stmt) -> list[tuple[int, int, str]]:
    """(line, column, construct) for each thing the policy forbids in the statement `node`
    of the file at `path`, in file order."""
    autos = {n.name: n.world for n in closure.needs if n.path == path and n.world in AUTOS}
    return sorted([*violations(node), *_autos_kept(node, autos)])


def forbidden_why(path: str, found: tuple[int, int, str]) -> str:
    """What a refusal says of one forbidden construct (`forbidden_in`'s)."""
    line, _, construct = found
    return (f"{construct} (at {path}:{line}) is not allowed in evaluated code "
            "(see Security model in the README)")  # fmt: skip


def narrowed_methods(closure: Closure, path: str, node: ast.stmt) -> list[ast.FunctionDef]:
    """For a class of an entry's closure whose forbidden constructs all stand in the
    bodies of functions its own body defines (not in their decorators, defaults or
    annotations, nor anywhere else in the class), those functions: the class is then
    defined as written but for them, each refusing where a cell reaches what it holds
    (`harness.engine.deferral.narrowed`). Empty for any other statement."""
    if not (closure.entry and isinstance(node, ast.ClassDef)):
        return []
    methods = [m for m in node.body if isinstance(m, ast.FunctionDef)]
    inside = {v: m for m in methods for statement in m.body for v in violations(statement)}
    found = forbidden_in(closure, path, node)
    if not found or not set(found) <= set(inside):
        return []
    held = {id(inside[v]) for v in found}
    return [m for m in methods if id(m) in held]


AUTOS = ("auto", "enum")  # the world's names that are (`enum.auto`) or hold `auto`


def _autos_kept(tree: ast.AST, autos: dict[str, str]) -> Iterator[tuple[int, int, str]]:
    """Each read of the world's `auto` (a name bound to it; `.auto` of one bound to
    `enum`) other than called as a member's value in a class body (`A = auto()`, or an
    item of a plain tuple so assigned): what `auto()` makes is written into by the
    class body that takes it, so kept anywhere else it would be state, and a class
    statement the closure leaves out could have taken it first."""
    if not autos:
        return
    allowed = {id(call.func) for call in _member_values(tree)}
    for node in ast.walk(tree):
        name = _auto_read(node, autos)
        if name is not None and id(node) not in allowed:
            yield node.lineno, _start(node), f"{name} other than called as a member's value"


def _auto_read(node: ast.AST, autos: dict[str, str]) -> str | None:
    """`auto` if `node` reads a name bound to the world's `auto`, `enum.auto` if it reads
    `.auto` of a name bound to its `enum`; else None."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        return "auto" if autos.get(node.id) == "auto" else None
    if isinstance(node, ast.Attribute) and node.attr == "auto":
        held = node.value.id if isinstance(node.value, ast.Name) else ""
        return "enum.auto" if autos.get(held) == "enum" else None
    return None


def _member_values(tree: ast.AST) -> Iterator[ast.Call]:
    """The calls a class body assigns as a member's value: `A = f()`, `B = (f(), 2)`."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            value = item.value if isinstance(item, ast.Assign) else None
            items = value.elts if isinstance(value, ast.Tuple) else [value]
            yield from (v for v in items if isinstance(v, ast.Call) and not v.keywords)


def _withheld(closure: Closure, path: str, node: ast.stmt) -> bool:
    """Whether an entry point's closure may withhold `node`: a class whose forbidden
    constructs all stand in its methods' bodies (`narrowed_methods`: it stays, those
    methods narrowed); or a function (not the entry) or a class whose definition, run as
    its file loads, changes nothing but its name (`harness.closure.inert`), and that
    nothing else in the file's closure binds: leaving it out then loses nothing the
    project's process would have done, and no other definition of its name is read in
    its place."""
    if not closure.entry or not isinstance(node, ast.FunctionDef | ast.ClassDef):
        return False
    if narrowed_methods(closure, path, node):
        return True  # kept, its methods narrowed: no other binding is read in its place
    if path == closure.path and node.name == closure.function:
        return False
    return inert(node, unbound_in(closure, path), path in closure.postponed) and not rebound(
        closure, path, node
    )


def rebound(closure: Closure, path: str, node: ast.FunctionDef | ast.ClassDef) -> bool:
    """Whether another statement of the file's closure binds the definition's name: left
    out, that other binding would be read in its place."""
    return any(
        other is not node and node.name in bound_names(other) for other in closure.nodes_of(path)
    )


def unbound_in(closure: Closure, path: str) -> frozenset[str]:
    """The names an entry's closure leaves unbound in the file at `path`."""
    return frozenset(name for p, name, _ in closure.unbound if p == path)


def violations(tree: ast.AST) -> Iterator[tuple[int, int, str]]:
    """(line, column, construct) for each thing the policy forbids in `tree`."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    literal_formats = {id(n.func) for n in calls if _literal_format(n)}
    super_calls = {id(n.func) for n in calls if _is_name(n.func, "super")}
    for node in ast.walk(tree):
        found = _call(node) if isinstance(node, ast.Call) else None
        found = found or _node(node, literal_formats)
        if not found and _is_name(node, "super") and id(node) not in super_calls:
            found = "super other than called as super()"
        if found:
            yield node.lineno, _start(node), found  # every node a construct is has a place


def _start(node: ast.AST) -> int:
    """Where a construct starts reading left to right: an attribute at its name."""
    if isinstance(node, ast.Attribute):
        return node.end_col_offset - len(node.attr)
    return node.col_offset


def _node(node: ast.AST, literal_formats: set[int]) -> str | None:
    attribute = isinstance(node, ast.Attribute) and forbidden_attribute(node.attr)
    if attribute and node.attr in NAMES and isinstance(node.ctx, ast.Load):
        attribute = False  # read through `harness.engine.own_names`
    if attribute and id(node) not in literal_formats:
        return f"attribute .{node.attr}"
    if isinstance(node, ast.Name) and _dunder(node.id) and node.id not in ALLOWED_DUNDER_NAMES:
        return f"name {node.id}"
    if isinstance(node, ast.arg) and _dunder(node.arg):
        return f"parameter {node.arg}"
    bound = next((n for n in _bound_names(node) if _dunder(n) and n not in DEFINABLE), None)
    if bound is not None:  # a nested `def __x__`, `case __x__:`, `except E as __x__`
        return f"name {bound}"
    if isinstance(node, ast.MatchClass):
        bad = [a for a in node.kwd_attrs if forbidden_attribute(a)]
        return f"attribute {bad[0]} in a class pattern" if bad else None
    if isinstance(node, ast.alias) and any(_dunder(n or "") for n in (node.name, node.asname)):
        return f"import of {node.name}"
    if isinstance(node, ast.ClassDef):
        return _class(node)
    return None


def _bound_names(node: ast.AST) -> list[str]:
    """The names a statement or pattern binds besides plain assignment targets."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.MatchAs | ast.MatchStar | ast.ExceptHandler):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    if isinstance(node, ast.Global | ast.Nonlocal):
        return list(node.names)
    return []


def _class(node: ast.ClassDef) -> str | None:
    if any(k.arg == "metaclass" for k in node.keywords):
        return f"a metaclass on class {node.name}"
    private = next((k for k in node.keywords if k.arg is None or k.arg.startswith("_")), None)
    if private is not None:  # what a metaclass takes past the class (enum's `_simple`)
        return f"the class keyword {private.arg or '**'} on class {node.name}"
    for item in node.body:
        found = _class_item(item)
        if found is not None:
            return f"{found} in class {node.name}"
    return None


def _class_item(item: ast.stmt) -> str | None:
    """What a class body's statement makes that the class then hands out past the
    policy: a hook method, a `_sunder_` name (enum's machinery), a field whose name no
    attribute read may take (a dataclass's `__match_args__` lists its fields, and a
    positional `case K(x)` reads them in C), a slot so named."""
    method = isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
    if method and _dunder(item.name) and item.name not in DEFINABLE:
        return f"special method {item.name}"
    reserved = next((n for n in bound_names(item) if sunder(n)), None)
    if reserved is not None:
        return f"the name {reserved}"
    for node in _class_level(item):
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and forbidden_attribute(target.id):
            return f"the field {target.id}"
    plain = isinstance(item, ast.Assign) and len(item.targets) == 1 and _is_slots(item.targets[0])
    stored = [n for n in ast.walk(item) if _is_slots(n) and isinstance(n.ctx, ast.Store)]
    if stored and not plain:
        return "__slots__ bound other than by one plain assignment"
    return _slots(item.value) if plain else None


def _class_level(item: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a class body's statement that run in the class's scope (not the
    bodies of the functions, lambdas and classes it defines)."""
    stack: list[ast.AST] = [item]
    while stack:
        node = stack.pop()
        yield node
        scopes = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
        if isinstance(node, scopes):  # its statements run in a scope of their own
            continue
        stack.extend(ast.iter_child_nodes(node))


def _is_slots(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "__slots__"


def _slots(value: ast.expr) -> str | None:
    """`__slots__` as a literal name or tuple/list of names, none a forbidden attribute
    (each slot is an attribute the class reads in C)."""
    items = value.elts if isinstance(value, ast.Tuple | ast.List) else [value]
    names = [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
    if len(names) != len(items):
        return "__slots__ other than a literal name or tuple of names"
    bad = next((name for name in names if forbidden_attribute(name)), None)
    return None if bad is None else f"the slot {bad}"


def _call(node: ast.Call) -> str | None:
    func = node.func
    if not isinstance(func, ast.Name):
        return None
    name = node.args[1] if func.id in ATTRIBUTE_BUILTINS and len(node.args) >= 2 else None
    literal = isinstance(name, ast.Constant) and isinstance(name.value, str)
    if literal and forbidden_attribute(name.value):
        return f"{func.id}(..., {name.value!r})"
    if func.id == "type" and (len(node.args) != 1 or node.keywords):
        return "type() with other than one argument"
    if func.id == "super" and (node.args or node.keywords):
        return "super() with arguments"
    return None


def _is_name(node: ast.AST, name: str) -> bool:
    """Whether `node` reads the name `name`."""
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)


def _literal_format(node: ast.Call) -> bool:
    """`"...".format(...)` on a literal whose fields are plain positions or names."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "format"):
        return False
    literal = func.value
    if not (isinstance(literal, ast.Constant) and isinstance(literal.value, str)):
        return False
    return _plain_fields(literal.value)


def _plain_fields(text: str, depth: int = 0) -> bool:
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError:
        return False
    for _, field, spec, _ in parts:
        if field is not None and ("." in field or "[" in field):
            return False
        if spec and depth < 2 and not _plain_fields(spec, depth + 1):
            return False
    return True


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")
