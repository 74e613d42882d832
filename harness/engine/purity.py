"""Whether a closure's functions can change state that outlives one call.

Exploration runs a function once per decision path and lets that answer
stand for every cell on the path; it is exact only when a call cannot see
what an earlier call left behind. So a closure is *pure* here when no
function in it (the target, helpers, methods, lambdas) writes anything but
its own fresh objects:

- `global` and `nonlocal` are writes to shared state;
- an attribute assigned to the target function's view (`config.x = 1`, its
  first parameter, never rebound, the function named nowhere else), or to the
  view a function of the closure is only ever handed by name
  (`_handle_timeouts(config)`), is not: each call sees the view afresh, and
  what it assigns there is what it declares (or refused, where the world
  refuses it); `config.x += ...` is a write (in place, to what x holds);
- assigning or deleting an attribute or item, calling a mutating method
  (`append`, `update`, `setdefault`, ...) or `setattr`/`delattr`, taking a
  mutating method as a value (`push = TABLE.append`), are writes unless the
  object is a local the function itself made fresh (a list, dict or set
  display or comprehension, or `list()`/`dict()`/`set()`), and was never
  given anything else;
- an in-place operator that changes a list, set or dict (`+=`, `*=`, `|=`,
  `&=`, `-=`, `^=`) on a local name is a write unless every value the name is
  given is new (a literal, arithmetic, a fresh container, a builtin's result):
  `x = TABLE; x += [1]` changes TABLE.

A function decorated with a cache (`@functools.lru_cache`, `@cache`: Python's
own, `harness.engine.worlds.caching`) keeps what its calls returned: state.

A function only the files' loading can call (a registering decorator:
`harness.engine.load_time`) writes before any call, as once in the project's
process, and is not judged.

Code at module level runs once per load, before any cell; it is judged for
state it leaves for the calls: an iterator or generator kept there (`iter()`,
`map()`, a generator expression, `itertools.count()`, a call of a generator
function or lambda), a mutating method taken as a value, or what any call
returns when it is kept and the callee is not known to return plain data
(`_mk = iter; _IT = _mk(...)`, a helper that returns an iterator): known are
the world's functions and objects (their answers are plain data or
stand-ins), the builtins that make new values, and the closure's classes
(whose methods are judged as functions). The check is conservative: an alias
it cannot follow counts as a write. An impure closure is run on every cell,
and the report says why.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from harness.closure.extract import Closure, Pipeline
from harness.closure.facts import standard_import
from harness.closure.names import bound_by, decorator_name, own_nodes
from harness.closure.resolve import METHOD_PREFIX
from harness.closure.shadows import bound_names
from harness.engine.load_time import load_time_only

CACHES = ("lru_cache", "cache")  # decorators whose function keeps what its calls returned
CACHING = (*CACHES, "functools")  # the world's names that make a cache (STANDARD_NAMES)

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
SETTERS = frozenset(("setattr", "delattr"))
# In-place operators that change a list, set or dict rather than make a new value.
IN_PLACE = (ast.Add, ast.Mult, ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)
# Builtins whose result is a new value (never one of their arguments).
NEW_VALUES = frozenset(
    {"len", "int", "float", "str", "bool", "sum", "abs", "round", "list", "dict", "set",
     "tuple", "frozenset", "sorted", "range", "repr", "format", "hash", "ord", "chr"}
)  # fmt: skip
# Builtins and types whose call at module level keeps no state (see `_kept_call`).
PLAIN_CALLS = frozenset({"tuple", "frozenset", "bytes", "complex", "bool", "min", "max", "any",
                         "all", "divmod", "pow", "bin", "hex", "oct", "ascii", "callable",
                         "isinstance", "issubclass", "getattr", "hasattr", "property",
                         "staticmethod", "classmethod", "object", "type"})  # fmt: skip
PASS_THROUGH = frozenset(("min", "max"))  # one of their arguments: new if all of them are
ITERATORS = frozenset(("iter", "map", "filter", "zip", "enumerate", "reversed"))
# Calls that use an iterator up at once (it is not kept).
CONSUMERS = frozenset(
    {"list", "tuple", "dict", "set", "frozenset", "sorted", "sum", "min", "max", "any",
     "all", "len", "enumerate", "zip", "map", "filter", "reversed", "iter", "next"}
)  # fmt: skip


def impurity(target: Closure | Pipeline) -> str | None:
    """Why the code may keep state between calls (`path:line: what`), or None if pure."""
    closures = [c for _, c in target.passes if c] if isinstance(target, Pipeline) else [target]
    for closure in closures:
        caching = {(n.path, n.name) for n in closure.needs if n.world in CACHING}
        generators = _generator_functions(closure)
        known = _known_callees(closure)
        views = _views(closure)
        loading = load_time_only(closure)  # registering decorators: no call runs them
        for path in closure.files:
            bound = {n for s in closure.nodes_of(path) for n in bound_names(s)}
            copies = not bound & COPIERS and "*" not in bound  # `import *` may bind them
            for node in closure.nodes_of(path):
                found = _module_state(node, generators, known)
                for function in _functions(node):
                    found = found or _cached(function)
                    if id(function) in loading:
                        found = found or _leaves_state(function, generators)
                    else:
                        view = views.get(id(function))
                        found = found or _writes(function, view, copies)
                found = found or _cache_made(node, {n for p, n in caching if p == path})
                if found:
                    return f"{path}:{found[0]}: {found[1]}"
    return None


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


def shared_state(pipeline: Pipeline) -> str | None:
    """Why a pipeline cannot be run as SGLang runs it (`path:line: what`), or None: a
    module-level statement other than a definition (data; a cached function, whose
    cache is data too) drawn by two passes, one of which may keep state. SGLang's
    passes share their module, so what one leaves there the next one sees in the same
    resolution; harness loads each pass's definitions in namespaces of its own
    (`harness.engine.sandbox.target_loader`)."""
    passes = [(name, closure) for name, closure in pipeline.passes if closure is not None]
    impure = {name: why for name, closure in passes if (why := impurity(closure))}
    if not impure:
        return None
    drawn: dict[tuple[str, int], str] = {}
    for name, closure in passes:
        for path in closure.files:
            for node in closure.nodes_of(path):
                if isinstance(node, DEFINITIONS) and not any(map(_cached, _functions(node))):
                    continue  # a definition, unless of a cached function: its cache is data
                other = drawn.setdefault((path, node.lineno), name)
                keeps = impure.get(other) or impure.get(name)
                if other != name and keeps:
                    return (
                        f"{path}:{node.lineno}: the passes {other} and {name} share this "
                        f"module-level data, and one of them may change it ({keeps}): "
                        "SGLang's passes share their module, harness loads each pass alone"
                    )
    return None


def _generator_functions(closure: Closure) -> frozenset[str]:
    """Names of the closure's functions whose calls make generators."""
    return frozenset(
        node.name
        for path in closure.files
        for node in closure.nodes_of(path)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(isinstance(n, ast.Yield | ast.YieldFrom) for n in own_nodes(node))
    )


def _module_state(
    node: ast.stmt, generators: frozenset[str], known: frozenset[str]
) -> tuple[int, str] | None:
    """State a module-level statement leaves for the calls: an iterator kept (not used up
    where it is made), a mutating method taken as a value, or what a call of a callee not
    `known` returns, kept."""
    nodes = load_time_nodes(node)
    parents = {id(c): p for p in nodes for c in ast.iter_child_nodes(p)}
    for child in nodes:
        if _makes_iterator(child, generators) and not _used_up(child, parents):
            return child.lineno, f"keeps an iterator at module level ({ast.unparse(child)})"
        if _mutator_taken(child, parents):
            return child.lineno, f"keeps {_taken(child)}"
        if _kept_call(child, parents, known):
            shown = ast.unparse(child.func)[:80]
            return child.lineno, f"keeps what {shown}() returns at module level (it may keep state)"
    return None


def _cached(function: Function) -> tuple[int, str] | None:
    """A cache on the function (`@lru_cache(maxsize=None)`): what one call returned,
    the next may get."""
    for decorator in getattr(function, "decorator_list", ()):
        if decorator_name(decorator) in CACHES:
            return decorator.lineno, f"keeps a cache between calls (@{ast.unparse(decorator)})"
    return None


def _cache_made(node: ast.AST, names: set[str]) -> tuple[int, str] | None:
    """Any other use of the world's caches (`functools.lru_cache(None)(f)`, `memo = cache`,
    an alias, an import of them inside a function): a cache may be made, and kept."""
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and child.id in names:
            return child.lineno, f"may make a cache, kept between calls ({child.id})"
        imported = [name for name in CACHING if standard_import(child, name)]
        if imported:
            return child.lineno, f"may make a cache, kept between calls (imports {imported[0]})"
    return None


def _leaves_state(function: Function, generators: frozenset[str]) -> tuple[int, str] | None:
    """State a function only loading calls leaves for the calls, as module-level code
    would: an iterator it makes and does not use up, a mutating method taken as a value
    (what it writes, it writes before any call)."""
    nodes = own_nodes(function)
    parents = {id(c): p for p in [function, *nodes] for c in ast.iter_child_nodes(p)}
    for child in nodes:  # (a fresh local's bound method too: it may be kept)
        if _makes_iterator(child, generators) and not _used_up(child, parents):
            return child.lineno, f"keeps an iterator as its file loads ({ast.unparse(child)})"
        if _mutator_taken(child, parents):
            return child.lineno, f"keeps {_taken(child)}"
    return None


def _known_callees(closure: Closure) -> frozenset[str]:
    """Names whose calls at module level leave no state: the world's, the builtins that
    make new values, the closure's classes (their methods are judged as functions)."""
    classes = {node.name for path in closure.files for node in closure.nodes_of(path)
               if isinstance(node, ast.ClassDef)}  # fmt: skip
    return frozenset({n.name for n in closure.needs} | NEW_VALUES | FRESH_CALLS | PLAIN_CALLS
                     | classes)  # fmt: skip


def _kept_call(node: ast.AST, parents: dict[int, ast.AST], known: frozenset[str]) -> bool:
    """A call whose result the module keeps, of a callee not known to return plain data (a
    decorator's call is the function's own: its writes are judged with it)."""
    if not isinstance(node, ast.Call) or _used_up(node, parents):
        return False
    if isinstance(parents.get(id(node)), ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return False  # `@factory(...)`: a decorator, applied once
    return _root(node.func) not in known


def load_time_nodes(node: ast.AST) -> list[ast.AST]:
    """The nodes of a top-level statement that run when its module loads: not a
    function's body (its decorators, defaults and annotations), a class's body."""
    out, stack = [], [node]
    while stack:
        child = stack.pop()
        out.append(child)
        if isinstance(child, Function):
            stack.extend([*getattr(child, "decorator_list", []), child.args])
            stack.extend([child.returns] if getattr(child, "returns", None) else [])
        else:
            stack.extend(ast.iter_child_nodes(child))
    return out


def _makes_iterator(node: ast.AST, generators: frozenset[str]) -> bool:
    if isinstance(node, ast.GeneratorExp):
        return True
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Lambda):  # `(lambda: (yield ...))()`
        return any(isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(func.body))
    if isinstance(func, ast.Name):
        return func.id in ITERATORS or func.id in generators or func.id == "count"
    return isinstance(func, ast.Attribute) and _root(func) == "itertools"


def _used_up(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Whether the iterator made by `node` is consumed where it is made."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.comprehension | ast.For) and parent.iter is node:
        return True
    if isinstance(parent, ast.Call) and node in parent.args:
        func = parent.func
        if isinstance(func, ast.Name) and func.id in CONSUMERS:
            return func.id not in ITERATORS or _used_up(parent, parents)
        return isinstance(func, ast.Attribute) and func.attr == "join"
    return False


def _mutator_taken(
    node: ast.AST, parents: dict[int, ast.AST], fresh: Collection[str] = frozenset()
) -> bool:
    """`X.append` read as a value (not called there), X not a fresh local; or `setattr`
    (`delattr`) so read, whose calls the check would not see."""
    if isinstance(node, ast.Name) and node.id in SETTERS and isinstance(node.ctx, ast.Load):
        parent = parents.get(id(node))
        return not (isinstance(parent, ast.Call) and parent.func is node)
    if not isinstance(node, ast.Attribute) or node.attr not in MUTATORS:
        return False
    if not isinstance(node.ctx, ast.Load):
        return False
    parent = parents.get(id(node))
    if isinstance(parent, ast.Call) and parent.func is node:
        return False
    return _root(node.value) not in fresh


def _taken(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return f"{node.id} as a value"
    return f"the bound method {ast.unparse(node)}"


def _functions(node: ast.AST) -> list[Function]:
    return [n for n in ast.walk(node) if isinstance(n, Function)]


def _views(closure: Closure) -> dict[int, str]:
    """The view parameter of each function (by node id) that is always handed the call's
    view: the target's first parameter, and the first of a function of the closure that
    is only ever called, by name, with a view as its first argument (a handler,
    `_handle_timeouts(config)`), and so on down; and `self` of a method of the view's
    class, which the view alone calls (its copy in the closure has a name no code can
    write: `self._handle_page_size()`). A function named anywhere else (kept, passed
    along, decorated, defined twice) has none."""
    defs: dict[str, list[Function]] = {}
    statements = [(path, node) for path in closure.files for node in closure.nodes_of(path)]
    for _, node in statements:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            defs.setdefault(node.name, []).append(node)
    sites, named = _call_sites(statements, defs, frozenset(closure.runners))
    target = next((n for p, n in statements if p == closure.path and _named(n, closure.function)),
                  None)  # fmt: skip
    alone = target is not None and not sites.get(target.name) and target.name not in named
    views = {id(target): view} if alone and (view := _view_of(target)) else {}
    for name, found in defs.items():  # a view method: only the view's overlay calls it
        if name.startswith(METHOD_PREFIX) and len(found) == 1 and (view := _view_of(found[0])):
            views[id(found[0])] = view
    grew = True
    while grew:
        grew = False
        for name, found in defs.items():
            if len(found) != 1 or name in named or id(found[0]) in views or not sites[name]:
                continue
            if all(_hands_view(call, views.get(id(caller))) for caller, call in sites[name]):
                view = _view_of(found[0])
                if view is not None:
                    views[id(found[0])] = view
                    grew = True
    return views


def _call_sites(
    statements: list[tuple[str, ast.stmt]], defs: dict, runners: frozenset[tuple[str, str]]
) -> tuple[dict[str, list], set[str]]:
    """Each call by name of one of `defs` in a function ((caller, call)), and the names
    of `defs` used otherwise (at module level, as a value). A world's step runner called
    with one of them and a view (`run_hook(handle_x, server_args)`, a name of `runners`
    in that file) counts as a call of it with that view."""
    sites: dict[str, list[tuple[Function, ast.Call]]] = {name: [] for name in defs}
    called: set[int] = set()
    for path, node in statements:
        for function in _functions(node):
            for child in own_nodes(function):
                func = child.func if isinstance(child, ast.Call) else None
                if isinstance(func, ast.Name) and func.id in sites:
                    sites[func.id].append((function, child))
                    called.add(id(func))
                elif isinstance(func, ast.Name) and (path, func.id) in runners:
                    step = _stepped(child, sites)
                    if step is not None:
                        sites[step.func.id].append((function, step))
                        called.add(id(child.args[0]))
    named: set[str] = set()
    for _, node in statements:
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and id(child) not in called:
                name: str | None = child.id
            else:
                name = _named_otherwise(child)
            if name in defs:
                named.add(name)
    return sites, named


def _named_otherwise(node: ast.AST) -> str | None:
    """The function a node reaches other than by its name: `m.f`, `from m import f as g`,
    a decorated `def f` (its decorator may call it with anything)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.alias) and node.asname:
        return node.name
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.decorator_list:
        return node.name
    return None


def _stepped(call: ast.Call, sites: dict) -> ast.Call | None:
    """`run_hook(step, view)` as the call it makes, `step(view)`, when `step` is a name
    of `sites` and the call has just those two arguments."""
    args = call.args
    if len(args) != 2 or call.keywords or not isinstance(args[0], ast.Name):
        return None
    if args[0].id not in sites or isinstance(args[1], ast.Starred):
        return None
    return ast.Call(args[0], [args[1]], [])


def _hands_view(call: ast.Call, view: str | None) -> bool:
    first = call.args[0] if call.args else None
    return view is not None and isinstance(first, ast.Name) and first.id == view


def _named(node: ast.stmt, name: str) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name


def _view_of(function: Function) -> str | None:
    """The target function's view: its first parameter, when nothing rebinds it (an
    attribute assigned to it is a declaration of this call, see
    `harness.engine.sandbox._recording`, or refused where the world refuses it)."""
    args = function.args.posonlyargs + function.args.args
    if not args or isinstance(function, ast.Lambda):
        return None
    name = args[0].arg
    rebound = any(name in bound_by(child) for statement in function.body
                  for child in ast.walk(statement))  # fmt: skip
    return None if rebound else name


def _writes(function: Function, view: str | None = None,
            copies: bool = False) -> tuple[int, str] | None:  # fmt: skip
    """Where the function may leave state (`copies`: `list` is Python's in its file)."""
    fresh = _fresh_locals(function)
    rebound = any(bound_by(n) & COPIERS for n in ast.walk(function) if n is not function)
    copies = copies and not rebound
    nodes = own_nodes(function)
    parents = {id(c): p for p in nodes for c in ast.iter_child_nodes(p)}
    new = _new_locals(function, nodes)
    for node in nodes:
        if isinstance(node, ast.Global | ast.Nonlocal):
            kind = "global" if isinstance(node, ast.Global) else "nonlocal"
            return node.lineno, f"{kind} {', '.join(node.names)}"
        for target in _stored(node):
            if _declares(node, target, view, copies):
                continue
            if isinstance(target, ast.Attribute | ast.Subscript) and not _local(target, fresh):
                return node.lineno, f"writes to {ast.unparse(target)}"
        found = _call_write(node, fresh) or _in_place(node, new)
        if found:
            return node.lineno, found
        if _mutator_taken(node, parents, fresh):
            return node.lineno, f"takes {_taken(node)}"
    return None


COPIERS = frozenset({"list", "getattr"})  # Python's, where a copy of the stash is made


def _declares(node: ast.AST, target: ast.expr, view: str | None, copies: bool = False) -> bool:
    """`view.x = ...`: an attribute assigned to the call's own view (not `+=`, which may
    change in place what the attribute holds, shared data; nor, for a private attribute,
    `view._x = SHARED`: a world's machinery may change what it holds in place, SGLang's
    the declaration stash, which the check does not see)."""
    return (view is not None and isinstance(node, ast.Assign | ast.AnnAssign)
            and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id == view
            and (not target.attr.startswith("_")
                 or _fresh_private(node, target, copies)))  # fmt: skip


def _fresh_private(node: ast.Assign | ast.AnnAssign, target: ast.Attribute,
                   copies: bool = False) -> bool:  # fmt: skip
    """`view._x = value`, the whole of the assignment, of a value no other code can hold:
    a constant, or a list, dict or set display or comprehension (a call, even of
    `list`, may return shared data: a module can rebind the name); with `copies`
    (`list` and `getattr` are Python's there), also a new list of what the view's own `_x` holds
    (SGLang's `server_args._resolved_overrides = list(getattr(server_args,
    "_resolved_overrides", ()))`): that holds only what earlier such assignments, or
    the world, put there."""
    alone = node.target is target if isinstance(node, ast.AnnAssign) else node.targets == [target]
    value = node.value
    if alone and copies and _copy_of_own(value, target):
        return True
    return alone and (value is None or isinstance(value, (ast.Constant, *FRESH_NODES)))


def _copy_of_own(value: ast.expr | None, target: ast.Attribute) -> bool:
    """`list(view._x)` or `list(getattr(view, "_x", CONSTANT))`, `view._x` the target."""
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "list"
        and len(value.args) == 1
        and not value.keywords
    ):
        return False  # fmt: skip
    own, view = value.args[0], target.value
    if isinstance(own, ast.Attribute):
        return ast.dump(own.value) == ast.dump(view) and own.attr == target.attr
    if not (
        isinstance(own, ast.Call)
        and isinstance(own.func, ast.Name)
        and own.func.id == "getattr"
        and not own.keywords
        and len(own.args) in (2, 3)
    ):
        return False  # fmt: skip
    name, rest = own.args[1], own.args[2:]
    empty = all(isinstance(d, ast.Constant) or (isinstance(d, ast.Tuple | ast.List)
                                                and not d.elts) for d in rest)  # fmt: skip
    return (ast.dump(own.args[0]) == ast.dump(view) and isinstance(name, ast.Constant)
            and name.value == target.attr and empty)  # fmt: skip


def _call_write(node: ast.AST, fresh: Fresh) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in MUTATORS and not _local(func, fresh):
        return f"calls {ast.unparse(func)}()"
    setter = isinstance(func, ast.Name) and func.id in SETTERS and node.args
    if setter and not _local(ast.Attribute(node.args[0], "x", ast.Store()), fresh):
        return f"calls {func.id}() on {ast.unparse(node.args[0])}"  # (as `obj.x = v` is)
    return None


def _in_place(node: ast.AST, new: set[str]) -> str | None:
    """`x += ...` (or another in-place operator that changes containers) on a local that
    may hold shared data."""
    if not isinstance(node, ast.AugAssign) or not isinstance(node.op, IN_PLACE):
        return None
    target = node.target
    if isinstance(target, ast.Name) and target.id not in new:
        return f"changes {target.id} in place ({ast.unparse(node).splitlines()[0]})"
    return None


def _new_locals(function: Function, nodes: list[ast.AST]) -> set[str]:
    """Local names only ever given new values (see the module docstring), never a
    parameter: an in-place operator on them changes nothing shared."""
    params = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    values: dict[str, list[ast.expr | None]] = {}
    for node in nodes:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if isinstance(node, ast.AugAssign):
            continue  # `x += v` keeps what x is
        for target in _stored(node):
            if isinstance(target, ast.Name):
                values.setdefault(target.id, []).append(value)
    new: set[str] = set()
    changed = True
    while changed:  # a name given another new local is new: grow to the fixpoint
        changed = False
        for name, given in values.items():
            if name in new or name in params:
                continue
            if all(v is not None and _new_value(v, new) for v in given):
                new.add(name)
                changed = True
    return new


def _new_value(value: ast.expr, new: set[str]) -> bool:
    if isinstance(value, ast.Constant | ast.JoinedStr | ast.BinOp | ast.UnaryOp | ast.Compare):
        return True
    if isinstance(value, (*FRESH_NODES, ast.GeneratorExp, ast.Tuple)):
        return True
    if isinstance(value, ast.Name):
        return value.id in new
    if isinstance(value, ast.BoolOp):
        return all(_new_value(v, new) for v in value.values)
    if isinstance(value, ast.IfExp):
        return _new_value(value.body, new) and _new_value(value.orelse, new)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        if value.func.id in NEW_VALUES:
            return True
        if value.func.id in PASS_THROUGH:
            return all(_new_value(a, new) for a in value.args) and not value.keywords
    return False


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


def _local(target: ast.Attribute | ast.Subscript, fresh: Fresh) -> bool:
    """Whether a write to `target` changes only a fresh local: the container itself
    (`box[k] = v`, `box.append(v)`), or, deeper (`box[0]["x"] = v`), one whose items are
    all new (`fresh.deep`)."""
    root = _root(target.value)
    if root not in fresh:
        return False
    through_item = isinstance(target.value, ast.Attribute | ast.Subscript | ast.Call)
    return not through_item or root in fresh.deep


class Fresh(frozenset):
    """Local names only ever bound to a new container, and (`deep`) those of them whose
    items are all new too."""

    deep: frozenset[str]

    def __new__(cls, names: set[str], deep: set[str]) -> Fresh:
        made = super().__new__(cls, names)
        made.deep = frozenset(deep)
        return made


def _fresh_locals(function: Function) -> Fresh:
    """Local names only ever bound to a new list, dict or set made in this function."""
    params = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    fresh: set[str] = set()
    deep: dict[str, bool] = {}  # whether every value given holds only new items
    spoiled: set[str] = set(params)
    for node in own_nodes(function):
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
                deep.setdefault(target.id, True)
                deep[target.id] = deep[target.id] and _holds_nothing_shared(value)
            else:
                spoiled.add(target.id)
    kept = fresh - spoiled
    return Fresh(kept, {name for name in kept if deep.get(name)})


def _is_fresh(value: ast.expr) -> bool:
    if isinstance(value, FRESH_NODES):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in FRESH_CALLS
    )


def _holds_nothing_shared(value: ast.expr) -> bool:
    """Whether a new container's items are new too (constants, containers of them): a
    write through an item (`box[0]["x"] = 1`) then changes nothing shared. `[TABLE]`
    holds TABLE: writing through `box[0]` writes TABLE."""
    return all(
        isinstance(n, ast.Constant | ast.List | ast.Tuple | ast.Set | ast.Dict
                   | ast.expr_context | ast.operator | ast.unaryop | ast.BinOp | ast.UnaryOp)
        for child in ast.iter_child_nodes(value) for n in ast.walk(child)
    )  # fmt: skip
