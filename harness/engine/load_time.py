"""Functions only a file's loading can call: registering decorators.

SGLang's model-override registry is filled as its files load: `@_register_for("A",
"B")` calls `_register_for`, whose decorator calls `register_model_override(arch)(fn)`,
whose decorator appends `fn` to `_MODEL_OVERRIDE_FNS` and hands `fn` back. Those writes
run once per load, before any cell's call, as they run once in the project's process
before it resolves; exploration loads the files once and calls the function many times,
so what matters for it (`harness.engine.purity`) is what a *call* can change. A
function no call can reach keeps no state between calls, whatever it writes.

`load_time_only` finds them, conservatively, by how the closure's code refers to them.
A top-level function `F` qualifies when every read of its name (or of a name bound to
it by an import, anywhere in the closure) is:

- a decorator at module level, `@F` or `@F(...)`, or a module-level expression
  statement `F(...)` or `F(...)(...)` whose result is dropped;
- or such a call (an expression statement) inside another qualifying function;

and nothing of `F` can outlive the call made there: `@F` must hand back what it is
given (`return fn`), `@F(...)` a function nested in `F` that does; no function nested
in `F` is read other than by `return`, none is a lambda or a generator, `F` defines no
class. `F` itself is not decorated (a decorator may keep it where a call finds it), and
an attribute read of its name anywhere (`module.F`) disqualifies it. Each pass drops a function
whose reads no longer qualify, until none is dropped.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from harness.closure.extract import Closure
from harness.closure.resolve import METHOD_PREFIX

Def = ast.FunctionDef | ast.AsyncFunctionDef
Key = tuple[str, str]  # (file, top-level function name)


def load_time_only(closure: Closure) -> frozenset[int]:
    """The node ids of the closure's functions (with every function nested in them)
    that only the loading of its files can call."""
    defs = {(path, node.name): node for path in closure.files
            for node in closure.nodes_of(path) if isinstance(node, Def)}  # fmt: skip
    names = _names(closure, defs)
    attributes = {n.attr for path in closure.files for node in closure.nodes_of(path)
                  for n in ast.walk(node) if isinstance(n, ast.Attribute)}  # fmt: skip
    called = {(closure.path, closure.function)}  # by harness: the target, the view's methods
    called |= {(path, METHOD_PREFIX + name) for name, path in closure.methods}
    kept = {key for key, node in defs.items()  # decorated: its decorator may keep it
            if key not in called and not node.decorator_list and _sealed(node)
            and not names[key] & attributes}  # fmt: skip
    reads = _reads_of(closure, {name for key in kept for name in names[key]})
    while True:
        inside = {id(defs[key]) for key in kept}
        dropped = {key for key in kept if not _only_loading(reads, names[key], defs[key], inside)}
        if not dropped:
            break
        kept -= dropped
    return frozenset(id(n) for key in kept for n in ast.walk(defs[key]) if isinstance(n, Def))


def _names(closure: Closure, defs: dict[Key, Def]) -> dict[Key, frozenset[str]]:
    """Per function, the names the closure's files may read it by: its own, each name an
    import binds to it (followed through re-exports), and each `as` name an import of
    one of those gives, anywhere (in a function too; a name shared by chance counts)."""
    sources = {(link.path, link.name): (link.source, link.source_name)
               for link in closure.links if link.source_name is not None}  # fmt: skip
    found: dict[Key, set[str]] = {key: {key[1]} for key in defs}
    for key in sources:
        end, hops = key, 0
        while end in sources and hops < len(sources):
            end, hops = sources[end], hops + 1
        if end in found:
            found[end].add(key[1])
    renames = [(a.name, a.asname) for path in closure.files for node in closure.nodes_of(path)
               for n in ast.walk(node) if isinstance(n, ast.ImportFrom)
               for a in n.names if a.asname]  # fmt: skip
    for names in found.values():
        grown = True
        while grown:
            more = {asname for name, asname in renames if name in names}
            grown = not more <= names
            names |= more
    return {key: frozenset(names) for key, names in found.items()}


def _reads_of(closure: Closure, names: set[str]) -> dict[str, list[tuple[ast.Name, list]]]:
    """Each read of one of `names` in the closure, with its ancestors, by name (one walk
    for every function judged)."""
    found: dict[str, list[tuple[ast.Name, list]]] = {}
    wanted = frozenset(names)
    for path in closure.files:
        for statement in closure.nodes_of(path):
            for read, parents in _reads(statement, wanted):
                found.setdefault(read.id, []).append((read, parents))
    return found


def _only_loading(reads: dict[str, list], names: frozenset[str], node: Def,
                  inside: set[int]) -> bool:  # fmt: skip
    """Whether the closure reads `names`, and every read is a call only loading makes."""
    found = [found for name in names for found in reads.get(name, ())]
    return bool(found) and all(_loading_call(r, p, node, inside) for r, p in found)


def _reads(statement: ast.stmt, names: frozenset[str]) -> Iterator[tuple[ast.Name, list]]:
    """Each read of one of `names` in the statement, with its ancestors (nearest last)."""
    stack: list[tuple[ast.AST, list]] = [(statement, [])]
    while stack:
        node, parents = stack.pop()
        if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
            yield node, parents
        stack.extend((child, [*parents, node]) for child in ast.iter_child_nodes(node))


def _loading_call(read: ast.Name, parents: list, node: Def, inside: set[int]) -> bool:
    """`read` is `@F`, `@F(...)` on a top-level definition, or `F(...)`/`F(...)(...)`
    dropped, at module level or in a function only loading calls."""
    if not parents:
        return False
    decorated = parents[0]
    if isinstance(decorated, Def | ast.ClassDef):
        if parents == [decorated] and read in decorated.decorator_list:
            return _hands_back(node)  # `@F`
        call = parents[1] if len(parents) == 2 else None
        if call is not None and call in decorated.decorator_list and call.func is read:
            return _decorator_made(node)  # `@F(...)`
    if not (isinstance(parents[-1], ast.Call) and parents[-1].func is read):
        return False
    chain = 2 if len(parents) >= 2 and _calls(parents[-2], parents[-1]) else 1
    above = parents[: len(parents) - chain]
    if not above or not isinstance(above[-1], ast.Expr):
        return False  # the call's result is kept, or handed on
    functions = [p for p in above if isinstance(p, Def | ast.Lambda | ast.ClassDef)]
    return not functions or (id(functions[0]) in inside and _only(functions))


def _calls(outer: ast.AST, inner: ast.Call) -> bool:
    return isinstance(outer, ast.Call) and outer.func is inner


def _only(functions: list) -> bool:
    """Reads inside a qualifying function, in functions nested in it (no lambda, no
    class: a class body runs when its definition does)."""
    return all(isinstance(f, Def) for f in functions)


def _hands_back(node: Def) -> bool:
    """Every `return` of the function hands back its first parameter, unchanged."""
    params = [*node.args.posonlyargs, *node.args.args]
    returns = list(_own_returns(node))
    return (
        bool(params)
        and bool(returns)
        and all(isinstance(r.value, ast.Name) and r.value.id == params[0].arg for r in returns)
    )


def _decorator_made(node: Def) -> bool:
    """Every `return` of the function hands back a function nested in it that hands
    back what it is given."""
    nested = {n.name: n for n in node.body if isinstance(n, Def)}
    returns = list(_own_returns(node))
    return bool(returns) and all(
        isinstance(r.value, ast.Name) and r.value.id in nested and _hands_back(nested[r.value.id])
        for r in returns
    )


def _own_returns(node: Def) -> Iterator[ast.Return]:
    for child in _own(node):
        if isinstance(child, ast.Return):
            yield child


def _own(node: Def) -> Iterable[ast.AST]:
    """The nodes of the function's body, not those of a function nested in it."""
    stack = list(node.body)
    while stack:
        child = stack.pop()
        yield child
        if not isinstance(child, Def | ast.Lambda):
            stack.extend(ast.iter_child_nodes(child))


def _sealed(node: Def) -> bool:
    """Nothing the function makes can outlive its call but through `return`: no lambda,
    class or generator, and each nested function read only by `return`."""
    inner = [n for n in ast.walk(node) if isinstance(n, Def) and n is not node]
    escapes = ast.Lambda | ast.ClassDef | ast.Yield | ast.YieldFrom | ast.Await
    if any(isinstance(n, escapes) for n in ast.walk(node)):
        return False
    nested = {n.name for n in inner}
    returned = {id(r.value) for r in ast.walk(node) if isinstance(r, ast.Return)}
    return isinstance(node, ast.FunctionDef) and all(
        id(n) in returned for n in ast.walk(node)
        if isinstance(n, ast.Name) and n.id in nested and isinstance(n.ctx, ast.Load)
    )  # fmt: skip
