"""Extract a function's closure from a module's source, with `ast` only.

The closure is the target function plus the module-level definitions it
needs (helpers, constants, classes), found transitively by free names. The
module itself never runs: its imports and side effects are left out, and
every imported name must be bound by the world. Two closures with the same
`digest` behave the same under the same world and matrix, so the digest is
what outcome tables are cached by; computing it parses only statements not
seen before (see `harness.source`) and builds no nodes.
"""

from __future__ import annotations

import ast
import builtins
import copy
import hashlib
import symtable
from collections.abc import Collection
from dataclasses import dataclass, replace
from functools import cached_property
from typing import NamedTuple

from harness.errors import Absent, Unevaluable
from harness.source import Layout, Piece, Statement, layout

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
        "NotImplemented",
        "Ellipsis",
        "True",
        "False",
        "None",
        "__build_class__",
        "__name__",
    )
)

IMPORT = "import"
DEFINITION = "definition"
CONDITIONAL = "conditional"
TARGET, HELPER = "target", "helper"  # how a statement enters a closure


class Binding(NamedTuple):
    """One top-level statement that binds a name (made lazily: files bind hundreds)."""

    kind: str
    module: Layout
    piece: int
    position: int

    @property
    def statement(self) -> Statement:
        return self.module.statement(self.piece, self.position)


@dataclass(frozen=True)
class Closure:
    """What the target needs, chosen without building anything: the nodes come on demand."""

    path: str
    function: str
    lineno: int
    parts: tuple[tuple[Statement, str], ...]  # (statement, TARGET | HELPER), in file order
    needs: tuple[tuple[str, str], ...]  # (name in the module, name the world binds)
    digest: str

    @cached_property
    def nodes(self) -> tuple[ast.stmt, ...]:
        """The closure's statements: annotations stripped, at their lines in the file."""
        return tuple(_materialize(statement, role) for statement, role in self.parts)

    def module(self) -> ast.Module:
        return ast.Module(body=list(self.nodes), type_ignores=[])

    @property
    def skipped(self) -> tuple[str, ...]:
        """Passes absent here: none, for one function (see `Pipeline`)."""
        return ()


def extract_closure(
    source: str, path: str, function: str, bound: Collection[str], matrix_file: str = "the matrix"
) -> Closure:
    """The closure of `function` in `source`; names in `bound` come from the world.

    Cheap when the file differs from the last one seen in a few statements:
    only those are parsed, and when none of them binds a name the last
    closure looked up, that closure is reused (at its new lines).
    `matrix_file` is where messages tell the user to add a binding.
    """
    module = layout(source, path)
    key = (path, function, matrix_file)
    closure = _reuse(module, key, bound)
    if closure is not None:
        return closure
    index = index_module(module)
    target = _find_target(index, path, function)
    resolver = _Resolver(index, set(bound), path, matrix_file)
    resolver.visit(function, target)
    parts = tuple(sorted(resolver.included.values(), key=lambda part: part[0].lineno))
    needs = tuple(sorted(resolver.needs.items()))
    closure = Closure(path, function, target.lineno, parts, needs, _digest(parts, needs))
    _remember(_Last(module, bound, key, closure, frozenset(resolver.seen)))
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
    source: str, path: str, names: tuple[str, ...], bound: Collection[str], matrix_file: str
) -> Pipeline:
    """Each pass's closure; a pass missing at this revision is skipped, not an error."""
    passes = []
    for name in names:
        try:
            passes.append((name, extract_closure(source, path, name, bound, matrix_file)))
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
    bound: Collection[str]
    key: tuple[str, str, str]
    closure: Closure
    watched: frozenset[str]


_last: dict[tuple[str, str, str], _Last] = {}  # per target: a pipeline has several
MAX_REMEMBERED = 16


def _remember(last: _Last) -> None:
    if len(_last) >= MAX_REMEMBERED and last.key not in _last:
        _last.clear()
    _last[last.key] = last


def _reuse(module: Layout, key: tuple[str, str, str], bound: Collection[str]) -> Closure | None:
    """The last closure, if `module` is its file edited only where no looked-up name is bound."""
    last = _last.get(key)
    if last is None or last.bound is not bound:
        return None
    if module is last.module:
        return last.closure
    edit = module.edit
    if edit is None or edit.base is not last.module:
        return None
    replaced = edit.removed_pieces() + module.pieces[edit.first : edit.first + edit.added]
    if any(_names_bound(piece) & last.watched for piece in replaced):
        return None
    parts = tuple(
        (module.statement(edit.slot(statement.slot), statement.position), role)
        for statement, role in last.closure.parts
    )
    (lineno,) = (statement.lineno for statement, role in parts if role == TARGET)
    closure = replace(last.closure, parts=parts, lineno=lineno)
    _remember(replace(last, module=module, closure=closure))
    return closure


def _names_bound(piece: Piece) -> frozenset[str]:
    return piece.memo("names", lambda nodes: frozenset(n for n, _, _ in _piece_bindings(nodes)))


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


# --- the module index ------------------------------------------------------------


def index_module(module: Layout) -> dict[str, list[Binding]]:
    """Every top-level binding statement, by the names it binds, in file order."""
    index: dict[str, list[Binding]] = {}
    for i, piece in enumerate(module.pieces):
        for name, kind, position in piece.memo("binds", _piece_bindings):
            index.setdefault(name, []).append(Binding(kind, module, i, position))
    return index


def _piece_bindings(nodes: list[ast.stmt]) -> list[tuple[str, str, int]]:
    return [
        (name, kind, position)
        for position, node in enumerate(nodes)
        for name, kind in _bindings_of(node, top=True)
    ]


def _bindings_of(stmt: ast.stmt, top: bool) -> list[tuple[str, str]]:
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return [(name, IMPORT) for name in _imported_names(stmt)]
    kind = DEFINITION if top else CONDITIONAL
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [(stmt.name, kind)]
    if isinstance(stmt, ast.Assign):
        return [(n, kind) for target in stmt.targets for n in _target_names(target)]
    if isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        return [(n, kind) for n in _target_names(stmt.target)]
    return [pair for child in _child_statements(stmt) for pair in _bindings_of(child, False)]


def _imported_names(stmt: ast.Import | ast.ImportFrom) -> list[str]:
    names = []
    for alias in stmt.names:
        if alias.name == "*":
            continue
        names.append(alias.asname or alias.name.split(".")[0])
    return names


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for elt in target.elts for n in _target_names(elt)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _child_statements(stmt: ast.stmt) -> list[ast.stmt]:
    children: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        children.extend(getattr(stmt, name, []) or [])
    for handler in getattr(stmt, "handlers", []) or []:
        children.extend(handler.body)
    return children


# --- transitive resolution -------------------------------------------------------


class _Resolver:
    """Walks free names from the target outwards, collecting what the closure needs."""

    def __init__(
        self, index: dict[str, list[Binding]], bound: set[str], path: str, matrix_file: str
    ) -> None:
        self.index, self.bound, self.path, self.matrix_file = index, bound, path, matrix_file
        self.included: dict[int, tuple[Statement, str]] = {}
        self.needs: dict[str, str] = {}
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
        elif name not in ALLOWED_BUILTINS:
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
        if hasattr(builtins, name):
            return f"builtin {name} (used at {where}) is not available to evaluated code"
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


def free_names(stmt: ast.stmt) -> set[str]:
    """Names `stmt` reads (or declares `global`) that it does not bind itself."""
    table = symtable.symtable(ast.unparse(stmt), "<closure>", "exec")
    own = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    names = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    _collect_globals(table, names)
    return names - own


def _collect_globals(table: symtable.SymbolTable, names: set[str]) -> None:
    for child in table.get_children():
        for sym in child.get_symbols():
            if sym.is_global() and (sym.is_referenced() or sym.is_declared_global()):
                names.add(sym.get_name())
        _collect_globals(child, names)


class _AnnotationStripper(ast.NodeTransformer):
    """Annotations are not behavior; without them, their names need no binding."""

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.returns = None
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        assign = ast.Assign(targets=[node.target], value=node.value)
        return ast.copy_location(self.generic_visit(assign), node)


def strip_annotations(node: ast.stmt) -> ast.stmt:
    """A copy of `node` without annotations (keeps line numbers)."""
    stripped = _AnnotationStripper().visit(copy.deepcopy(node))
    return ast.fix_missing_locations(stripped)
