"""A function's closure: the target plus the module-level definitions it needs.

Found transitively by free names, with `ast` only: the module never runs, its
imports and side effects are left out, and every imported name must be bound
by the world. Two closures with the same `digest` behave the same under the
same world and matrix, so the digest is what outcome tables are cached by;
computing it parses only statements not seen before (see `pieces`) and builds
no nodes. Builtins the closure reads are listed, not judged: whether it may
use them is the sandbox's policy (`harness.engine.policy`).
"""

from __future__ import annotations

import ast
import builtins
import hashlib
from collections.abc import Collection
from dataclasses import dataclass, replace
from functools import cached_property

from harness.closure.index import DEFINITION, IMPORT, Binding, index_module, names_bound
from harness.closure.names import free_names, strip_annotations
from harness.closure.pieces import Layout, SourceCache, Statement
from harness.errors import Absent, Unevaluable

TARGET, HELPER = "target", "helper"  # how a statement enters a closure


@dataclass(frozen=True)
class Closure:
    """What the target needs, chosen without building anything: the nodes come on demand."""

    path: str
    function: str
    lineno: int
    parts: tuple[tuple[Statement, str], ...]  # (statement, TARGET | HELPER), in file order
    needs: tuple[tuple[str, str], ...]  # (name in the module, name the world binds)
    digest: str
    builtins: tuple[str, ...] = ()  # builtin names it reads

    def use_line(self, name: str) -> int:
        """The file line where the closure first reads `name`."""
        for statement, role in self.parts:
            if name in _shape(statement, role)[1]:
                return _use_line(statement, name)
        return self.lineno

    @cached_property
    def nodes(self) -> tuple[ast.stmt, ...]:
        """The closure's statements: annotations stripped, at their lines in the file."""
        return tuple(_materialize(statement, role) for statement, role in self.parts)

    @property
    def skipped(self) -> tuple[str, ...]:
        """Passes absent here: none, for one function (see `Pipeline`)."""
        return ()


def extract_closure(
    cache: SourceCache,
    source: str,
    path: str,
    function: str,
    bound: Collection[str],
    matrix_file: str = "the matrix",
) -> Closure:
    """The closure of `function` in `source`; names in `bound` come from the world.

    Cheap when the file differs from the last one `cache` saw in a few
    statements: only those are parsed, and when none of them binds a name the
    last closure looked up, that closure is reused (at its new lines).
    `matrix_file` is where messages tell the user to add a binding.
    """
    module = cache.layout(source, path)
    key, names = (path, function, matrix_file), frozenset(bound)
    closure = _reuse(cache.closures, module, key, names)
    if closure is not None:
        return closure
    index = index_module(module)
    target = _find_target(index, path, function)
    resolver = _Resolver(index, names, path, matrix_file)
    resolver.visit(function, target)
    parts = tuple(sorted(resolver.included.values(), key=lambda part: part[0].lineno))
    needs = tuple(sorted(resolver.needs.items()))
    closure = Closure(
        path, function, target.lineno, parts, needs, _digest(parts, needs),
        tuple(sorted(resolver.builtins)),
    )  # fmt: skip
    _remember(cache.closures, _Last(module, names, key, closure, frozenset(resolver.seen)))
    return closure


@dataclass(frozen=True)
class Pipeline:
    """Passes run in order, each seeing the earlier declarations; None: absent here."""

    path: str
    passes: tuple[tuple[str, Closure | None], ...]
    digest: str

    @property
    def lineno(self) -> int | None:
        return next((c.lineno for _, c in self.passes if c is not None), None)

    @property
    def skipped(self) -> tuple[str, ...]:
        return tuple(name for name, closure in self.passes if closure is None)


def extract_pipeline(
    cache: SourceCache,
    source: str,
    path: str,
    names: tuple[str, ...],
    bound: Collection[str],
    matrix_file: str,
) -> Pipeline:
    """Each pass's closure; a pass missing at this revision is skipped, not an error."""
    passes = []
    for name in names:
        try:
            closure = extract_closure(cache, source, path, name, bound, matrix_file)
            passes.append((name, closure))
        except Absent:
            passes.append((name, None))
    if all(closure is None for _, closure in passes):
        raise Absent(f"none of the passes {', '.join(names)} is in {path}")
    text = "\0".join(f"{name}={c.digest if c else '-'}" for name, c in passes)
    return Pipeline(path, tuple(passes), hashlib.sha256(text.encode()).hexdigest())


@dataclass(frozen=True)
class _Last:
    """The last closure extracted, and every name its resolution looked up."""

    module: Layout
    bound: frozenset[str]
    key: tuple[str, str, str]
    closure: Closure
    watched: frozenset[str]


Memo = dict[tuple[str, str, str], _Last]  # per target (a pipeline has several)


def _remember(memo: Memo, last: _Last) -> None:
    memo[last.key] = last


def _reuse(memo: Memo, module: Layout, key: tuple[str, str, str], bound: frozenset[str]):
    """The last closure, if `module` is its file edited only where no looked-up name is bound."""
    last = memo.get(key)
    if last is None or last.bound != bound:
        return None
    if module is last.module:
        return last.closure
    edit = module.edit
    if edit is None or edit.base is not last.module:
        return None
    replaced = edit.removed_pieces() + module.pieces[edit.first : edit.first + edit.added]
    if any(names_bound(piece) & last.watched for piece in replaced):
        return None
    parts = tuple(
        (module.statement(edit.slot(statement.slot), statement.position), role)
        for statement, role in last.closure.parts
    )
    (lineno,) = (statement.lineno for statement, role in parts if role == TARGET)
    closure = replace(last.closure, parts=parts, lineno=lineno)
    _remember(memo, replace(last, module=module, closure=closure))
    return closure


def _find_target(index: dict[str, list[Binding]], path: str, function: str) -> Statement:
    bindings = index.get(function, [])
    if not bindings or bindings[-1].kind != DEFINITION:
        raise Absent(f"no top-level function {function} in {path}")
    statement = bindings[-1].statement
    if isinstance(statement.node, ast.AsyncFunctionDef):
        raise Unevaluable(
            f"{function} in {path} line {statement.lineno} is async; only plain functions run"
        )
    if not isinstance(statement.node, ast.FunctionDef):
        raise Absent(f"{function} in {path} line {statement.lineno} is not a function")
    return statement


def _digest(parts: tuple[tuple[Statement, str], ...], needs: tuple[tuple[str, str], ...]) -> str:
    text = "\n".join(_shape(statement, role)[0] for statement, role in parts)
    return hashlib.sha256((text + "\0" + repr(needs)).encode()).hexdigest()


def _shape(statement: Statement, role: str) -> tuple[str, frozenset[str]]:
    """The statement as it enters a closure: its normalized text and its free names."""

    def compute(node: ast.stmt) -> tuple[str, frozenset[str]]:
        stripped = _stripped(node, role)
        return ast.unparse(stripped), frozenset(free_names(stripped))

    return statement.memo(("shape", role), compute)


def _stripped(node: ast.stmt, role: str) -> ast.stmt:
    stripped = strip_annotations(node)
    if role == TARGET:
        stripped.decorator_list = []
    return stripped


def _materialize(statement: Statement, role: str) -> ast.stmt:
    node = _stripped(statement.node, role)
    return ast.increment_lineno(node, statement.offset)


class _Resolver:
    """Walks free names from the target outwards, collecting what the closure needs."""

    def __init__(
        self, index: dict[str, list[Binding]], bound: Collection[str], path: str, matrix_file: str
    ) -> None:
        self.index, self.bound, self.path, self.matrix_file = index, bound, path, matrix_file
        self.included: dict[int, tuple[Statement, str]] = {}
        self.needs: dict[str, str] = {}
        self.builtins: set[str] = set()
        self.seen: set[str] = set()

    def visit(self, function: str, target: Statement) -> None:
        self.seen.add(function)
        self._add(target, TARGET)

    def _add(self, statement: Statement, role: str) -> None:
        self.included[id(statement)] = (statement, role)
        for name in sorted(_shape(statement, role)[1]):
            self._resolve(name, statement)

    def _resolve(self, name: str, user: Statement) -> None:
        if name in self.seen:
            return
        self.seen.add(name)
        if name in self.bound:
            self.needs[name] = name
            return
        bindings = self.index.get(name)
        original = _import_original(bindings[-1].statement.node, name) if bindings else None
        if original in self.bound:
            self.needs[name] = original
        elif bindings:
            self._include(name, bindings, user)
        elif hasattr(builtins, name):
            self.builtins.add(name)
        else:
            raise Unevaluable(self._unknown(name, user))

    def _include(self, name: str, bindings: list[Binding], user: Statement) -> None:
        last = bindings[-1]
        if last.kind != DEFINITION:
            raise Unevaluable(self._unbound(name, user, last))
        for binding in bindings:
            if binding.kind == DEFINITION and id(binding.statement) not in self.included:
                self._add(binding.statement, HELPER)

    def _unbound(self, name: str, user: Statement, last: Binding) -> str:
        how = "imported" if last.kind == IMPORT else "defined conditionally"
        node = last.statement.node
        origin = f" from {node.module}" if isinstance(node, ast.ImportFrom) else ""
        return (
            f"name {name} (used at {self.path}:{_use_line(user, name)}) is {how}{origin} at "
            f"line {last.statement.lineno} and not bound by the world: bind it under "
            f"`bindings:` in {self.matrix_file}"
        )

    def _unknown(self, name: str, user: Statement) -> str:
        where = f"{self.path}:{_use_line(user, name)}"
        return (
            f"name {name} (used at {where}) is defined nowhere in {self.path}: "
            f"bind it under `bindings:` in {self.matrix_file}"
        )


def _import_original(node: ast.stmt, name: str) -> str | None:
    """For `from m import a as name`, the imported name `a` (the world binds it by that name)."""
    if isinstance(node, ast.ImportFrom):
        for alias in node.names:
            if alias.asname == name:
                return alias.name
    return None


def _use_line(statement: Statement, name: str) -> int:
    """The file line where `statement` first reads `name`."""
    for child in ast.walk(statement.node):
        if isinstance(child, ast.Name) and child.id == name:
            return child.lineno + statement.offset
    return statement.lineno
