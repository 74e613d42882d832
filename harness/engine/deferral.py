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
from typing import Any

from harness.closure.extract import Closure
from harness.closure.inert import inert
from harness.engine.policy import ALLOWED_BUILTINS, Withheld, unbound_in
from harness.engine.world import Probe


class FileBuiltins(dict):
    """The builtins of one file of an entry's closure: a name neither its namespace nor the
    builtins hold is looked up here through `__missing__`, which refuses what the file's
    namespace refuses. A class body reads the namespace without asking it (as a plain
    dict), then the builtins: this is where its read of a refused name is refused."""

    __slots__ = ("space",)

    def __missing__(self, name: str) -> Any:
        why = self.space.refuses(name)
        if why is not None:
            raise self.space.probe.refuse(f"name {name}", why)
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
            raise self.probe.refuse(f"name {name}", why)
        raise KeyError(name)

    def refuses(self, name: str) -> str | None:
        """Why the name is refused here; None: it is not (a builtin may answer it)."""
        return self.why.get(name, self.every)


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
    """The names of the definitions the policy withholds in the file at `path`, and why."""
    return {node.name: withheld[(path, node.lineno)] for node in closure.nodes_of(path)
            if withheld_here(node, path, withheld)}  # fmt: skip


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


def withholding(body: tuple[ast.stmt, ...], path: str, withheld: Withheld) -> list[ast.stmt]:
    """The file's statements without the functions the policy withholds."""
    return [node for node in body if not withheld_here(node, path, withheld)]


def withheld_here(node: ast.stmt, path: str, withheld: Withheld) -> bool:
    """Whether `node` of the file at `path` is a definition the policy withholds."""
    return (path, node.lineno) in withheld and isinstance(node, ast.FunctionDef | ast.ClassDef)
