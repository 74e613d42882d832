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
from harness.engine.policy import ALLOWED_BUILTINS, Withheld, unbound_in, violations
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


def _what(name: str) -> str:
    """What a refusal of the name says was read (a narrowed function's own: `narrowed`)."""
    if name.startswith(REFUSED):
        return f"code the policy forbids in {name.removeprefix(REFUSED)}"
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
        if withheld_here(node, path, withheld):
            why = withheld[(path, node.lineno)]
            name = node.name if _plan(node) is None else f"{REFUSED}{node.name}"
            found[name] = why
    return found


def withholding(body: tuple[ast.stmt, ...], path: str, withheld: Withheld,
                originals: tuple[ast.stmt, ...]) -> list[ast.stmt]:  # fmt: skip
    """The file's statements (perhaps rewritten: `originals` are the closure's own)
    without the definitions the policy withholds, or with a function narrowed where it
    may be (`narrowed`)."""
    by_line = {node.lineno: node for node in originals}
    kept = []
    for node in body:
        if not withheld_here(node, path, withheld):
            kept.append(node)
        elif (narrow := narrowed(node, by_line.get(node.lineno))) is not None:
            kept.append(narrow)
    return kept


def withheld_here(node: ast.stmt, path: str, withheld: Withheld) -> bool:
    """Whether `node` of the file at `path` is a definition the policy withholds."""
    return (path, node.lineno) in withheld and isinstance(node, ast.FunctionDef | ast.ClassDef)


REFUSED = "_harness_refused_"  # read where a statement stood (RESERVED: no file binds it)
BLOCKS = ("body", "orelse", "finalbody")  # a compound statement's own statement lists
Place = tuple[int, int, int | None, int | None]  # a statement's line, column, end line, end


class Plan(NamedTuple):
    """Where a withheld function is narrowed: the innermost statements holding what the
    policy forbids, and where each forbidden construct stands (line, column)."""

    statements: frozenset[Place]
    constructs: frozenset[tuple[int, int]]


def narrowed(node: ast.stmt, original: ast.stmt | None) -> ast.stmt | None:
    """A withheld function whose forbidden constructs are all inside its body, narrowed:
    a copy of `node` (the closure's `original`, perhaps rewritten to report its sites)
    with each innermost statement holding one replaced by a read of a name of its own
    (`REFUSED` and its name), which the file's namespace refuses with why. It then runs
    as written up to such a statement, and is refused where a cell reaches it; defining
    it, as the file loads, runs nothing forbidden. None (withheld whole): what runs as
    it is defined (decorators, defaults, annotations) holds one, or the copy might
    still hold one (a statement not found where it stood, a construct left)."""
    plan = None if original is None else _plan(original)
    if plan is None or not isinstance(node, ast.FunctionDef):
        return None
    copied, placed, inserted = copy.deepcopy(node), set(), set()
    copied.body = _narrowed_block(copied.body, plan, f"{REFUSED}{node.name}", (placed, inserted))
    left = any(id(n) not in inserted and _at(n) in plan.constructs for n in ast.walk(copied))
    return copied if placed == plan.statements and not left else None


def _plan(node: ast.stmt) -> Plan | None:
    """Where to narrow a function (None: it may not be; see `narrowed`)."""
    if not isinstance(node, ast.FunctionDef) or _outside_body(node):
        return None
    statements: set[Place] = set()
    _innermost(node.body, statements)
    constructs = frozenset((line, col) for line, col, _ in violations(node))
    return Plan(frozenset(statements), constructs) if statements else None


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
                    made: tuple[set[Place], set[int]]) -> list[ast.stmt]:  # fmt: skip
    """`block` with the plan's statements replaced by a read of `name`; `made`: the places
    replaced, and the ids of the nodes put there."""
    out = []
    for statement in block:
        if _place(statement) in plan.statements:
            read = ast.Expr(ast.Name(id=name, ctx=ast.Load()))
            made[0].add(_place(statement))
            made[1].update((id(read), id(read.value)))
            out.append(ast.fix_missing_locations(ast.copy_location(read, statement)))
            continue
        for owner, field in _block_fields(statement):
            setattr(owner, field, _narrowed_block(getattr(owner, field), plan, name, made))
        out.append(statement)
    return out


def _place(statement: ast.stmt) -> Place:
    return (statement.lineno, statement.col_offset, statement.end_lineno,
            statement.end_col_offset)  # fmt: skip


def _at(node: ast.AST) -> tuple[int | None, int | None]:
    return getattr(node, "lineno", None), getattr(node, "col_offset", None)


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
