"""Module-level statements that may change data: what runs at import besides definitions.

SGLang imports a module whole, so `TABLE["x"] = 1`, `TABLE.update(...)`,
`del TABLE[k]`, `ALIAS += [...]`, a loop filling a dict, a call of a function
that does it, or a decorator that does it, all run before any pass does. A
closure that leaves such a statement out computes with data SGLang never sees.
This module tells, with `ast` only, which names of its own file a top-level
statement may change (`effects`), and which of them it reaches through the
file's own aliases and functions (`reaches`): the resolver then takes every
statement that reaches data the closure reads into the closure, in file order.

The reading is conservative: a method call may change its object, a call of a
function other than a pure builtin may change its arguments and whatever that
function (when the same file defines it) changes, and may call a function of the
file it is handed (unless the callee only keeps it, as `partial` and `lru_cache`
do), `{**OBJ}` calls `OBJ.keys()`, a class body may call what its own names hold,
a class body's `global` declaration makes its assignments the module's, a lambda's
defaults run where it is made, and a way to the module's namespace itself
(`globals()`, `vars()`, `exec`, `sys.modules`, `__dict__`, a frame's globals, a
module found by name, `importlib.import_module(__name__)` or `inspect.getmodule(f)`,
a write through an attribute named by what the code computes, `getattr(f, "__glob" +
"als__")[k] = v`, or any such attribute read at module level)
may change any of its names (`ANY`). Reading more costs only a
statement evaluated as SGLang evaluates it.
"""

from __future__ import annotations

import ast
import builtins
import functools
from collections.abc import Callable, Iterable
from typing import NamedTuple

from harness.closure.names import annotations_of, last_name

# Builtins that change none of their arguments (what a module-level call of one reads
# is not changed by it); setattr and delattr change their first.
PURE_BUILTINS = frozenset(
    {
        "abs", "all", "any", "ascii", "bin", "bool", "bytes", "callable", "chr", "dict",
        "divmod", "enumerate", "filter", "float", "format", "frozenset", "getattr",
        "hasattr", "hash", "hex", "id", "int", "isinstance", "issubclass", "iter", "len",
        "list", "map", "max", "min", "oct", "ord", "pow", "print", "range", "repr",
        "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "type", "zip",
    }
)  # fmt: skip
SETTERS = frozenset({"setattr", "delattr"})
MAX_REACH_DEPTH = 100  # aliases and calls followed one inside the other; past it, ANY
ANY = "*"  # a statement that may change any name of its module (`globals()[...] = ...`)
HANDED = "&"  # a call's key for a function of the file handed to a callee, which may call it
# Callees that keep what they are handed for later, calling none of it then: a function
# handed to them runs when what they make is called (followed as a call of that).
WRAPPERS = frozenset({"partial", "partialmethod", "lru_cache", "cache", "wraps",
                      "cached_property", "property", "staticmethod", "classmethod"})  # fmt: skip
REFLECTION = frozenset({"globals", "vars", "locals"})  # called without arguments
DYNAMIC = frozenset({"exec", "eval", "compile", "__import__"})  # code the reading cannot see
NAMESPACES = frozenset({"__dict__", "__globals__", "__builtins__", "f_globals", "f_locals",
                        "f_builtins"})  # fmt: skip
# calls that hand back a frame or a module, whose names the caller may then change
MODULE_FINDERS = frozenset({"_getframe", "currentframe", "getmodule", "import_module",
                            "reload"})  # fmt: skip
NAMED = frozenset({"getattr"})  # hands back an attribute named by its second argument
Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
DEFINES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class Effects(NamedTuple):
    """What a statement may change: `names` it writes through (roots of the objects it
    changes, aliases it passes on), `calls`, the functions it calls by name,
    `results`, those whose returned object it changes (`table()["x"] = 1`), and `used`,
    the names it reads, whose objects' methods may run (`OBJ + 1`, `OBJ.prop`)."""

    names: frozenset[str]
    calls: frozenset[str]
    results: frozenset[str] = frozenset()
    used: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.names and not self.calls and not self.used


NO_EFFECTS = Effects(frozenset(), frozenset(), frozenset(), frozenset())


def effects(node: ast.stmt, postponed: bool = False) -> Effects:
    """What the top-level statement `node` may change when its module is imported: only
    the code that runs then (decorators and defaults of a function, a class's body; no
    annotation in a file that `postponed` them, `from __future__ import annotations`)."""
    names: set[str] = set()
    calls: set[str] = set()
    results: set[str] = set()
    for part in _load_time(node, postponed=postponed):
        _collect(part, names, calls, results)
    for decorator in _decorators(node):  # each is called with what it decorates
        if isinstance(decorator, ast.Name):
            calls.add(decorator.id)
        else:
            _root_into(decorator, names, calls, results)
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        names.add(node.target.id)  # `ALIAS += [...]` changes a list in place
    if isinstance(node, ast.ClassDef):  # a base's __init_subclass__, a metaclass: they run
        calls.update(n for part in [*node.bases, *node.keywords] for n in _names_read(part))
        calls.update(_called_in_body(node, calls))
    used = {n for part in _load_time(node, False, postponed) for n in _names_read(part)}
    found = Effects(frozenset(names), frozenset(calls), frozenset(results), frozenset(used))
    if isinstance(node, DEFINES):
        return found
    inner = [effects(n, postponed) for n in _walk(node, False) if isinstance(n, DEFINES)]
    return _joined([found, *inner])  # a def in `if`, `try`: its decorators run too


def _joined(found: list[Effects]) -> Effects:
    return Effects(*(frozenset().union(*parts) for parts in zip(*found, strict=True)))


def effects_reader(postponed: bool) -> tuple[str, Callable[[ast.stmt], Effects]]:
    """(the memo key, the reader) of the effects of a statement of a file that does or
    does not postpone its annotations."""
    if postponed:
        return "effects-postponed", functools.partial(effects, postponed=True)
    return "effects", effects


def function_effects(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Effects:
    """What calling the top-level function `node` may change among the module's names:
    names it declares `global` and module names it writes through (not its locals)."""
    names: set[str] = set()
    calls: set[str] = set()
    results: set[str] = set()
    local = _locals(node)
    for child in ast.walk(node):
        if isinstance(child, ast.Global):
            names.update(child.names)
    for statement in node.body:
        _collect(statement, names, calls, results, inside=True)
    held = _through_defaults(node, names)  # `def f(t=TABLE): t["x"] = 1` changes TABLE
    names, calls, results = names - local, calls - local, results - local
    return Effects(frozenset(names | held), frozenset(calls), frozenset(results))


def _through_defaults(node: Function, written: set[str]) -> set[str]:
    """The names read by the defaults of the parameters a function writes through."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    tail = positional[len(positional) - len(args.defaults) :]
    keywords = [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d]
    pairs = [*zip(tail, args.defaults, strict=True), *keywords]
    return {n for arg, default in pairs if arg.arg in written for n in _names_read(default)}


def is_mutation(node: ast.stmt, bound: Iterable[str] = ()) -> bool:
    """Whether the statement may change something besides the names it binds: an
    edit of such a statement may change a closure that reads none of its names."""
    found = effects(node)
    skip = set(bound)
    return bool(found.names - skip or found.calls - skip)


class Reach:
    """The names of one file a statement may change, through the file's own aliases
    (`ALIAS = TABLE`) and functions (`fill()` where `def fill(): TABLE[...] = ...`);
    calls of functions the file does not define are handed back as such (`foreign`):
    the resolver follows them when the file imports them from the repository."""

    def __init__(self, definitions: Callable[[str], list[ast.stmt]]) -> None:
        self.definitions = definitions  # name -> the top-level statements binding it
        self.memo: dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]] = {}
        self.depth = 0  # aliases and calls being followed, one inside the other

    def of(self, found: Effects) -> tuple[frozenset[str], frozenset[str]]:
        """(names of the file it may change, functions it calls that the file lacks)."""
        data: set[str] = set()
        foreign: set[str] = set()
        keys = [
            *(("alias", n) for n in found.names),
            *(("call", n) for n in found.calls),
            *(("returned", n) for n in found.results),
            *(("used", n) for n in found.used),
        ]
        for key in keys:
            more, calls = self._memo(key)
            data |= more
            foreign |= calls
        return frozenset(data), frozenset(foreign)

    def consulted(self) -> frozenset[str]:
        """The names whose definitions told what the statements read so far may change."""
        return frozenset(name.removeprefix(HANDED).split(".")[0] for _, name in self.memo)

    def _memo(self, key: tuple[str, str]) -> tuple[frozenset[str], frozenset[str]]:
        if key not in self.memo:
            if self.depth >= MAX_REACH_DEPTH:  # a chain that long (PR text): may change any
                return frozenset({ANY}), frozenset()
            self.memo[key] = (frozenset(), frozenset())  # a cycle stops here
            kind, name = key
            compute = {"alias": self._alias, "call": self._called, "returned": self._returned,
                       "used": self._used}  # fmt: skip
            self.depth += 1
            try:
                data, foreign = compute[kind](name)
            finally:
                self.depth -= 1
            self.memo[key] = (frozenset(data), frozenset(foreign))
        return self.memo[key]

    def _alias(self, name: str) -> tuple[set[str], set[str]]:
        """`name` and the names whose objects it may hold (its assigned values' names, and
        what the file's functions called there read)."""
        data, foreign = {name}, set()
        for node in self.definitions(name):
            value = _bound_from(node, name)
            if value is None:
                continue
            called = _called_names(value)
            for read in _names_read(value):
                more, calls = self._memo(("returned" if read in called else "alias", read))
                data |= more
                foreign |= calls
        return data, foreign

    def _used(self, name: str) -> tuple[set[str], set[str]]:
        """What reading `name` may change: the methods Python calls implicitly (dunders,
        properties: decorated ones) of an object of a class the file defines (`OBJ =
        K()`, or an alias of one). Not followed into other files."""
        data: set[str] = set()
        for cls in self._classes_held(name, made_only=True):
            for method in _implicit_methods(cls):
                data |= self.of(function_effects(method))[0]
        for node in self.definitions(name):  # an alias of such an object
            value = _bound_from(node, name)
            for read in _names_read(value) - _called_names(value) if value is not None else ():
                data |= self._memo(("used", read))[0]
        return data, set()

    def _classes_held(self, name: str, made_only: bool = False) -> list[ast.ClassDef]:
        """The classes the file defines as `name` (unless `made_only`), or whose objects it
        binds `name` to (`OBJ = K()`)."""
        found = []
        for node in self.definitions(name):
            value = _bound_from(node, name)
            made = _called_names(value) if value is not None else set()
            found += [] if made_only else [node]
            found += [c for m in made for c in self.definitions(m)]
        return [node for node in found if isinstance(node, ast.ClassDef)]

    def _returned(self, name: str) -> tuple[set[str], set[str]]:
        """Names a function of the file may hand back when called (what it reads)."""
        data: set[str] = set()
        foreign: set[str] = set()
        for node in self.definitions(name):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                reads = _names_read(node) - _locals(node)
            elif isinstance(node, ast.Assign | ast.AnnAssign):  # `_get = TABLE.get`: what
                reads = {name}  # calling it hands back may be TABLE's
            else:
                continue
            for read in reads:
                more, calls = self._memo(("alias", read))
                data |= more
                foreign |= calls
        return data, foreign

    def _called(self, name: str) -> tuple[set[str], set[str]]:
        """What calling `name` may change: a function's effects; a class's methods' and its
        bases' (constructing it, or calling a method of it); for a value (`f = fill`,
        `FNS = {"f": fill}`, `f = lambda: ...`, a loop's source), what calling whatever it
        holds may change."""
        if "." in name:
            if not self.definitions(name.split(".", 1)[0]):  # `m.f()`, m imported: another
                return set(), {name}  # file's, which the resolver follows
            return set(self._method(*name.split(".", 1))), set()
        if name.startswith(HANDED):  # a function of the file handed to a callee
            handed = [n for n in self.definitions(name[1:]) if isinstance(n, DEFINES[:2])]
            return set(_union([self.of(function_effects(n)) for n in handed])[0]), set()
        nodes = self.definitions(name)
        if not nodes:
            return set(), {name}
        data: set[str] = set()
        foreign: set[str] = set()
        for found in map(lambda node: self._calling(node, name), nodes):
            data |= found[0]
            foreign |= found[1]
        return data, foreign

    def _method(self, owner: str, method: str) -> frozenset[str]:
        """What `owner.method()` may change: that method of the class the file defines as
        `owner`, or of which `owner` holds an object (`OBJ = K()`)."""
        body = [item for cls in self._classes_held(owner) for item in cls.body]
        methods = [i for i in body if isinstance(i, DEFINES[:2]) and i.name == method]
        held = {n for i in body if method in _assigned(i) for n in _names_read(i.value)}
        found = [self.of(function_effects(m)) for m in methods]  # `hook = _up`: what it holds
        return _union([*found, self.of(NO_EFFECTS._replace(calls=frozenset(held)))])[0]

    def _calling(self, node: ast.stmt, name: str) -> tuple[frozenset[str], frozenset[str]]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return self.of(function_effects(node))
        if isinstance(node, ast.ClassDef):
            methods = [i for i in node.body if isinstance(i, DEFINES[:2])]
            bases = frozenset(n for base in node.bases for n in _names_read(base))
            bases |= {n for i in node.body if _assigned(i) for n in _names_read(i.value)}
            found = [self.of(function_effects(m)) for m in methods]  # constructing runs them
            found.append(self.of(NO_EFFECTS._replace(calls=bases)))
            return _union(found)
        value = _bound_from(node, name)
        if value is None:  # a def or class under an `if` or `try`; else an import, say
            inner = [n for n in ast.walk(node) if isinstance(n, DEFINES) and n.name == name]
            if not inner:
                return frozenset(), frozenset({name})
            return _union([self._calling(n, name) for n in inner])
        names: set[str] = set()
        calls: set[str] = set()
        results: set[str] = set()
        _collect(value, names, calls, results, inside=True)  # a lambda's body, say
        calls |= _names_read(value)  # what it holds may be called
        for part in ast.walk(value):
            if isinstance(part, ast.Attribute):  # `_set = TABLE.__setitem__`: a bound method
                _root_into(part, names, calls, results)
            elif isinstance(part, ast.Lambda):
                names |= _through_defaults(part, _written_in(part))
        return self.of(Effects(frozenset(names), frozenset(calls), frozenset(results)))


def _called_in_body(node: ast.ClassDef, calls: set[str]) -> set[str]:
    """What a class body calls through its own names (`hook = fill` then `hook()`): the
    names read by the values it binds them to (a class body is a namespace of its own)."""
    local = {name: item.value for item in node.body for name in _assigned(item)}
    return {n for name in calls & set(local) for n in _names_read(local[name])}


def _implicit_methods(node: ast.stmt) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The methods of a class Python may call without a call written: `__add__`,
    `__bool__`, `__getattr__`, ..., and decorated ones (a `property`)."""
    if not isinstance(node, ast.ClassDef):
        return []
    methods = [item for item in node.body if isinstance(item, DEFINES[:2])]
    return [m for m in methods if m.decorator_list or m.name[:2] == m.name[-2:] == "__"]


def _assigned(node: ast.stmt) -> set[str]:
    """The names a class-body assignment binds (none for anything else)."""
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return {node.target.id} if isinstance(node.target, ast.Name) else set()
    return set()


def _written_in(node: ast.Lambda) -> set[str]:
    names: set[str] = set()
    _collect(node.body, names, set(), set(), inside=True)
    return names


def _union(found: list[tuple[frozenset[str], frozenset[str]]]) -> tuple[frozenset, frozenset]:
    data = frozenset().union(*(d for d, _ in found))
    return data, frozenset().union(*(f for _, f in found))


def _bound_from(node: ast.stmt, name: str) -> ast.expr | None:
    """What a top-level statement binding `name` gives it: an assignment's value, a loop's
    or a `with`'s source, a `:=`'s value (an alias of whatever those hold)."""
    if isinstance(node, ast.Assign | ast.AnnAssign):
        return node.value
    if isinstance(node, ast.For | ast.AsyncFor):
        return node.iter
    if isinstance(node, ast.With | ast.AsyncWith):
        sources = [item.context_expr for item in node.items]
        return ast.Tuple(elts=sources, ctx=ast.Load())
    walrus = [n.value for n in ast.walk(node) if isinstance(n, ast.NamedExpr)
              and isinstance(n.target, ast.Name) and n.target.id == name]  # fmt: skip
    return walrus[0] if walrus else None


def _decorators(node: ast.stmt) -> list[ast.expr]:
    """The decorators a top-level statement applies at import (a class's methods' too)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return list(node.decorator_list)
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *(d for item in node.body for d in _decorators(item))]
    return []


def _load_time(node: ast.stmt, notes: bool = True, postponed: bool = False) -> list[ast.AST]:
    """The parts of a top-level statement that run when the module is imported (without a
    def's annotations: `notes=False`, for what its reading of objects may run; without
    any annotation: `postponed`, the file's are never evaluated)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        args = node.args
        defaults = [*args.defaults, *(d for d in args.kw_defaults if d)]
        annotations = annotations_of(node) if notes and not postponed else []
        return [*node.decorator_list, *defaults, *annotations]  # run when it runs
    if isinstance(node, ast.ClassDef):
        parts: list[ast.AST] = [*node.decorator_list, *node.bases, *node.keywords]
        for item in node.body:
            parts.extend(_load_time(item, notes, postponed))
        return parts
    if isinstance(node, ast.Import | ast.ImportFrom):
        return []
    if isinstance(node, ast.AnnAssign) and postponed:  # `x: Arg(...) = 1`: the value runs
        return [part for part in (node.target, node.value) if part is not None]
    return [node]


def _collect(
    node: ast.AST, names: set[str], calls: set[str], results: set[str], inside: bool = False
) -> None:
    """Add what `node` may change. At module level a nested function's body does not
    run; inside a function it may (it is judged as part of its function)."""
    for child in _walk(node, inside):
        if _reflective(child) or (not inside and _finds_a_namespace(child)):
            names.add(ANY)  # (inside a function, only where it is written through)
        if isinstance(child, ast.Global):  # in a class body: its assignments are the module's
            names.update(child.names)
        if isinstance(child, ast.Attribute | ast.Subscript) and isinstance(
            child.ctx, ast.Store | ast.Del
        ):
            _written_into(child, names, calls, results)
        elif isinstance(child, ast.AugAssign) and not isinstance(child.target, ast.Name):
            _written_into(child.target, names, calls, results)
        elif isinstance(child, ast.Call):
            _call_into(child, names, calls, results)
        elif isinstance(child, ast.Dict):  # `{**OBJ}` calls OBJ.keys(), as a call would
            calls.update(f"{v.id}.keys" for k, v in zip(child.keys, child.values, strict=True)
                         if k is None and isinstance(v, ast.Name))  # fmt: skip
        elif isinstance(child, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            targets = {n.id for g in child.generators for n in ast.walk(g.target)
                       if isinstance(n, ast.Name)}  # fmt: skip
            if targets & _called_names(child):  # `[f() for f in HOOKS]` calls what HOOKS holds
                calls.update(n for g in child.generators for n in _names_read(g.iter))


def _reflective(node: ast.AST) -> bool:
    """A way to any name of a module: `globals()`, `vars()`, `sys.modules`, `__dict__`,
    a frame's globals."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        bare = not node.args and not node.keywords
        return (node.func.id in REFLECTION and bare) or node.func.id in DYNAMIC
    if isinstance(node, ast.Name):
        return node.id == "__builtins__"
    if isinstance(node, ast.Attribute):
        sys_modules = node.attr == "modules" and isinstance(node.value, ast.Name)
        return node.attr in NAMESPACES or (sys_modules and node.value.id == "sys")
    return False


def _finds_a_namespace(node: ast.AST) -> bool:
    """A call that may hand back a module or a namespace: a module found by name
    (`importlib.import_module(__name__)`, `inspect.getmodule(f)`, a frame), or
    `getattr(x, name)` with a name the code computes."""
    if isinstance(node, ast.Call) and last_name(node.func) in MODULE_FINDERS:
        return True
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    named = node.args[1] if node.func.id in NAMED and len(node.args) > 1 else None
    return named is not None and not (
        isinstance(named, ast.Constant) and isinstance(named.value, str)
    )


def _walk(node: ast.AST, inside: bool) -> list[ast.AST]:
    out, stack = [], [node]
    while stack:
        child = stack.pop()
        out.append(child)
        if inside or not isinstance(child, Function) or child is node:
            stack.extend(ast.iter_child_nodes(child))
        elif isinstance(child, ast.Lambda):  # its defaults run where it is made
            stack.extend([*child.args.defaults, *(d for d in child.args.kw_defaults if d)])
    return out


def _call_into(call: ast.Call, names: set[str], calls: set[str], results: set[str]) -> None:
    func = call.func
    arguments = [*call.args, *(k.value for k in call.keywords)]
    if _got(func):  # `getattr(T, "update")(...)`: a method of T, which it may change
        names.update(_names_read(func.args[0]))
    if isinstance(func, ast.Name) and func.id in SETTERS and hasattr(builtins, func.id):
        arguments = arguments[:1]
    elif isinstance(func, ast.Name) and func.id in PURE_BUILTINS:
        calls.update(n for argument in arguments for n in _names_read(argument))  # `map(f, ...)`
        if not any(_hands_a_changer(argument) for argument in arguments):
            arguments = []  # `map(dict.update, [T], ...)` does change T
    elif isinstance(func, ast.Name):
        calls.add(func.id)
    else:
        _root_into(func, names, calls, results)  # `X.update(...)` may change X
        calls.update(_called_through(func))
    wraps = last_name(func) in WRAPPERS  # `partial(fill, ...)` keeps fill for later
    for argument in arguments:
        names.update(_names_read(argument))
        if not wraps:  # `reduce(fill, ...)` may call fill now
            calls.update(HANDED + n for n in _handed(argument))


def _handed(argument: ast.expr) -> set[str]:
    """The names an argument hands the callee as they are (`fill`, `*FNS`), which it may
    call, not what the argument computes from them (`len(T)`)."""
    if isinstance(argument, ast.Starred):
        argument = argument.value
    return {argument.id} if isinstance(argument, ast.Name) else set()


def _called_through(func: ast.expr) -> set[str]:
    """What a call of a callee that is not a plain name calls: a method of a name
    (`K.fill()`, `obj.fill()`: "K.fill"), what an item of a name holds (`FNS["f"]()`),
    what a call it makes first was handed (`partial(fill)()`)."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return {f"{func.value.id}.{func.attr}"}
    root = func
    while isinstance(root, ast.Subscript):
        root = root.value
    if isinstance(root, ast.Name):
        return {root.id}
    return _names_read(func) if isinstance(func, ast.Call) else set()


def _got(func: ast.expr) -> bool:
    """`getattr(X, ...)` as a callee: a method of X, called."""
    return (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "getattr"
        and bool(func.args)
    )


CHANGERS = frozenset({"append", "extend", "insert", "remove", "pop", "clear", "sort",
                      "reverse", "add", "discard", "update", "setdefault", "popitem",
                      "difference_update", "intersection_update",
                      "symmetric_difference_update", "__setitem__", "__delitem__"})  # fmt: skip


def _hands_a_changer(argument: ast.expr) -> bool:
    """Whether an argument is (or holds) a function that changes what it is given: a
    mutating method named as a value (`dict.update`), `setattr`, `delattr`."""
    return any(
        (isinstance(n, ast.Attribute) and n.attr in CHANGERS)
        or (isinstance(n, ast.Name) and n.id in SETTERS | {"getattr"})
        for n in ast.walk(argument)
    )


def _written_into(node: ast.expr, names: set[str], calls: set[str], results: set[str]) -> None:
    """What a write through the chain `node` may change: its root's; any name where the
    root may be a namespace (`getattr(f, "__glob" + "als__")["x"] = 1`)."""
    root = node
    while isinstance(root, ast.Attribute | ast.Subscript | ast.Starred):
        root = root.value
    if _finds_a_namespace(root):
        names.add(ANY)
    _root_into(node, names, calls, results)


def _root_into(node: ast.expr, names: set[str], calls: set[str], results: set[str]) -> None:
    """The name a chain `a.b[c].d` starts from; through a call `f().x`, the function (what
    it returns is changed)."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
        node = node.value
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            calls.add(func.id)
            results.add(func.id)
        else:
            _root_into(func, names, calls, results)
    elif isinstance(node, ast.Name):
        names.add(node.id)
    else:  # `[T][0]["x"] = 1`, `(t := T)["x"] = 1`: whatever the display or value holds
        names.update(_names_read(node))


def _names_read(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _called_names(node: ast.AST) -> set[str]:
    return {
        n.func.id
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }


def _locals(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Parameters and names the function binds (not declared global)."""
    declared = {n for g in ast.walk(node) if isinstance(g, ast.Global) for n in g.names}
    params = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    stored = {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    nested = {
        n.name
        for n in ast.walk(node)
        if isinstance(n, ast.FunctionDef | ast.ClassDef) and n is not node
    }
    return (params | stored | nested) - declared
