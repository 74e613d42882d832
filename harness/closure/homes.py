"""SGLang's own definitions of the names the world answers, compared between revisions.

The world answers a probe such as `is_hip` or `get_platform` wherever the
closure imports it from the file where SGLang defines it (its home,
`harness.closure.shadows.is_home`); the harness never runs that definition.
A change to it changes SGLang's behaviour and nothing the harness evaluates,
so a diff compares each such definition at both revisions (`harness.scan.
stand_ins`), without docstrings, comments or formatting:

- the binding Python would give the name in its home: the last statement that
  binds it there, followed through `from m import name` and `from m import *`
  into the repository's modules;
- the top-level statements of the same file the definition reads, in turn,
  and those that change what they read (`_PROBES["x"] = ...`);
- what it reads of a repository module it imports (`from sglang.srt.utils
  import common as _common`, in a function too): `_common.name`, and, for
  `getattr(_common, probe)`, every string the definition spells that the
  module binds (SGLang 0.5.23's `PlatformContext` reads `is_sm100_supported`
  and its fellows so).

A name nothing binds in a module with a `__getattr__` is that function's (as
Python looks it up: SGLang's `current_platform`). Where the definition
cannot be read that way (a file that binds names at run time, `globals()[...]`,
`exec`, `__all__` on a star import's source, more re-exports or statements
than the bounds), the answer is `Unsure`, and the diff says it could not
compare: never "no change".
"""

from __future__ import annotations

import ast
import hashlib
from typing import NamedTuple

from harness.closure.index import IMPORT, index_module
from harness.closure.modules import RevisionFiles
from harness.closure.mutations import ANY, Reach, effects
from harness.closure.pieces import SourceCache, Statement, copy_tree
from harness.closure.resolve import HELPER, shape
from harness.closure.shadows import star_imports

HOPS = 4  # re-exports followed from the file the code imports the name from
MAX_STATEMENTS = 2_000  # statements one definition may draw on, across its files
MODULES = 1  # repository modules followed from a definition: one import deep


class Piece(NamedTuple):
    """One statement of a home definition."""

    path: str
    line: int
    text: str  # its first line, as reports quote it
    digest: str  # of its tree without docstrings: equal, it does the same


class HomeDefinition(NamedTuple):
    """SGLang's definition of `name` the world stands for, at one revision: the statements
    that define it, then those they draw on, nearest first."""

    name: str
    path: str  # the file that defines it (after re-exports)
    pieces: tuple[Piece, ...]

    def changed(self, other: HomeDefinition) -> Piece | None:
        """The first of this side's statements the other side does not have; None: same."""
        theirs = {p.digest for p in other.pieces}
        return next((p for p in self.pieces if p.digest not in theirs), None)


class Unsure(NamedTuple):
    """The definition could not be read to compare it: where, and why."""

    path: str
    reason: str


Found = HomeDefinition | Unsure | None


def home_definition(
    cache: SourceCache,
    files: RevisionFiles,
    name: str,
    path: str,
    read: frozenset[str] = frozenset(),
) -> Found:
    """The definition of `name` read from its home `path`; None when the revision has none
    there; Unsure when it cannot be read statically. Names in `read` (a class the world
    reads its inputs' defaults from) are not followed: what the world takes from them
    shows in the diff's outcomes. Raises Unevaluable for a file past the parsing bounds."""
    return _Reader(cache, files, read).definition(name, path, MODULES)


class _Reader:
    def __init__(self, cache: SourceCache, files: RevisionFiles, read: frozenset[str]) -> None:
        self.cache, self.files, self.read = cache, files, read
        self.statements = 0

    def definition(self, name: str, path: str, modules: int) -> Found:
        found = self.binding(name, path)
        if found is None or isinstance(found, Unsure):
            return found
        path, statements = found
        pieces = self.pieces(path, statements, modules)
        if isinstance(pieces, Unsure):
            return pieces
        return HomeDefinition(name, path, tuple(pieces))

    def binding(self, name: str, path: str, hops: int = HOPS):
        """(file, the statements binding `name` there) as Python binds it on import, None
        when nothing binds it, or Unsure."""
        if hops == 0:
            return Unsure(path, f"{name} is re-exported through more than {HOPS} files")
        layout = self.cache.layout_of(self.files, path)
        if layout is None:
            return None
        unsure = _dynamic(layout, path)
        if unsure is not None:
            return unsure
        lookup = name
        if not _binders(layout, name) and "__getattr__" in index_module(layout):
            lookup = "__getattr__"  # as Python looks a name up that nothing binds
        binders = _binders(layout, lookup)
        for statement in reversed(binders):  # the last one Python runs wins
            node = statement.node
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                found = self._through_star(node, name, path, hops)
                if found is not None:
                    return found
                continue  # the star's module does not bind it: an earlier statement does
            if isinstance(node, ast.Import | ast.ImportFrom):
                source = _imported_from(self.files, path, node, name)
                if source is None:  # from outside the repository: the import is the definition
                    return path, [statement]
                return self.binding(source[1], source[0], hops - 1)
            imports = ast.Import | ast.ImportFrom
            return path, [b for b in binders if not isinstance(b.node, imports)]
        return None

    def _through_star(self, node: ast.ImportFrom, name: str, path: str, hops: int):
        module = self.files.module_file(node.module or "", path, node.level)
        if module is None:
            return Unsure(path, f"`from {node.module} import *` may bind {name}")
        source = self.cache.layout_of(self.files, module)
        if source is not None and "__all__" in index_module(source):
            return Unsure(module, f"{module} declares __all__, which decides what * binds")
        return self.binding(name, module, hops - 1)

    def pieces(self, path: str, statements: list[Statement], modules: int):
        """The statements, those of the file they read and those that change what they
        read, then what they read of imported repository modules: as Pieces."""
        layout = self.cache.layout_of(self.files, path)
        reached = _in_file(layout, statements, self.read)
        self.statements += len(reached)
        if self.statements > MAX_STATEMENTS:
            return Unsure(path, f"the definition draws on more than {MAX_STATEMENTS} statements")
        pieces = [Piece(path, s.lineno, _first_line(s), _digest(s)) for s in reached]
        for module, name in self._modules_read(path, reached) if modules else ():
            found = self.definition(name, module, modules - 1)
            if isinstance(found, Unsure):
                return found
            if found is not None:
                pieces += found.pieces
        return pieces

    def _modules_read(self, path: str, reached: list[Statement]) -> list[tuple[str, str]]:
        """(module file, name) for what the statements read of other repository modules:
        a name imported from one (`from .other import helper`); and, of a module imported
        as a module, `alias.name`, or, through `getattr(alias, ...)`, each string constant
        of the statements that the module binds."""
        out: dict[tuple[str, str], None] = {}
        reads = [_reads(s) for s in reached]
        strings = set().union(*(r.strings for r in reads))
        read = set().union(*(shape(s, HELPER)[1] for s in reached))  # names the file reads
        for statement, found in zip(reached, reads, strict=True):  # `from .m import helper`
            names = found.names  # (in a function too)
            if statement.member < 0 and isinstance(statement.node, ast.ImportFrom):
                names = read
            for node in found.imports:
                if not isinstance(node, ast.ImportFrom):
                    continue
                module = self.files.module_file(node.module or "", path, node.level)
                for alias in node.names if module is not None else ():
                    if (alias.asname or alias.name) in names and alias.name != "*":
                        out[(module, alias.name)] = None
        for found in reads:
            for alias, module in _module_aliases(self.files, path, found.imports):
                layout = self.cache.layout_of(self.files, module)
                bound = index_module(layout) if layout is not None else {}
                for name in sorted(found.attributes_of(alias, strings)):
                    if name in bound:
                        out[(module, name)] = None
        return list(out)


def _binders(layout, name: str) -> list[Statement]:
    """The top-level statements that may bind `name`, in file order: those the index
    names, and every `from m import *`."""
    found = {(b.statement.lineno, b.statement.member): b.statement
             for b in index_module(layout).get(name, [])
             if not _annotation_only(b.statement.node)}  # fmt: skip
    for statement in layout.memo("home-stars", _stars):
        found[(statement.lineno, statement.member)] = statement
    return [found[key] for key in sorted(found)]


# The statements that may hold a `from m import *` (Python allows it at module level only)
HOLDERS = (ast.ImportFrom, ast.If, ast.Try, ast.TryStar, ast.With, ast.For, ast.While, ast.Match)


def _stars(layout) -> list[Statement]:
    """The file's top-level statements that run a `from m import *` (once per layout)."""
    return [layout.statement(slot, position)
            for slot, piece in enumerate(layout.pieces)
            for position, node in enumerate(piece.nodes)
            if isinstance(node, HOLDERS) and star_imports(node)]  # fmt: skip


def _annotation_only(node: ast.stmt) -> bool:
    """`name: T` binds nothing (SGLang declares `current_platform: SRTPlatform` so)."""
    return isinstance(node, ast.AnnAssign) and node.value is None


def _dynamic(layout, path: str) -> Unsure | None:
    """Unsure when the file binds names in ways no statement shows: `globals()[...] =`,
    `exec`. (A module `__getattr__` is read as the definition of a name nothing binds,
    as Python looks it up.)"""
    for statement, _ in _changers(layout):
        if ANY in statement.memo("effects", effects).names:  # its own doing, not a call's
            return Unsure(path, f"{path}:{statement.lineno} binds names at run time")
    return None


def _in_file(layout, statements: list[Statement], read: frozenset[str]) -> list[Statement]:
    """`statements`, the top-level statements of the same file their free names read, and
    those that change a name they read, transitively (imports as written), nearest first:
    the first that differs between two revisions is the one a reader looks at."""
    index = index_module(layout)
    found = {(s.lineno, s.member): s for s in statements}
    todo, names = list(found.values()), set()
    changers = _changers(layout)
    for statement in todo:
        new = set(shape(statement, HELPER)[1]) - read - names
        names |= new
        reached = [b.statement for n in sorted(new) for b in index.get(n, ())]
        reached += [s for s, changed in changers if changed & new]
        for each in reached:
            if (each.lineno, each.member) not in found:
                found[(each.lineno, each.member)] = each
                todo.append(each)
                if len(found) > MAX_STATEMENTS:  # the caller says it could not compare
                    return list(found.values())
    return list(found.values())


def _changers(layout) -> list[tuple[Statement, frozenset[str]]]:
    """Top-level statements other than definitions that may change data of the file, with
    its names they may change (through its aliases and its functions; what a function of
    another file might change is not followed): once per layout."""

    def compute(layout) -> list[tuple[Statement, frozenset[str]]]:
        index = index_module(layout)
        reach = Reach(lambda n: [b.statement.node for b in index.get(n, []) if b.kind != IMPORT])
        out = []
        for slot, piece in enumerate(layout.pieces):
            for position, node in enumerate(piece.nodes):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    continue
                statement = layout.statement(slot, position)
                changes = statement.memo("effects", effects)
                if changes.names or changes.calls:
                    data = reach.of(changes)[0]  # through the file's aliases and calls
                    if data or ANY in changes.names:
                        out.append((statement, data | (changes.names & {ANY})))
        return out

    return layout.memo("home-changers", compute)


def _module_aliases(files: RevisionFiles, path: str, imports) -> list[tuple[str, str]]:
    """(alias, module file) for each import of a repository module as a module among a
    statement's `imports` (`from sglang.srt.utils import common as _common`, in a
    function too)."""
    out = []
    for child in imports:
        if isinstance(child, ast.ImportFrom):
            for alias in child.names:
                base = f"{child.module}.{alias.name}" if child.module else alias.name
                module = files.module_file(base, path, child.level)
                if module is not None:
                    out.append((alias.asname or alias.name, module))
        else:
            for alias in child.names:
                module = files.module_file(alias.name, path)
                if module is not None and alias.asname:
                    out.append((alias.asname, module))
    return out


class _Reads(NamedTuple):
    """What one statement reads, as a definition's reach follows it (see `_reads`)."""

    strings: frozenset[str]  # its string constants
    names: frozenset[str]  # every name it mentions
    imports: tuple[ast.Import | ast.ImportFrom, ...]  # at any depth, in order
    attributes: frozenset[tuple[str, str]]  # (name, attribute) of each `name.attribute`
    getattrs: frozenset[str]  # the names `getattr(name, ...)` reads attributes of

    def attributes_of(self, alias: str, strings: set[str]) -> set[str]:
        """The names read of the module bound to `alias`: `alias.name`, and, where it
        reads `getattr(alias, ...)`, each of `strings`."""
        found = {attribute for name, attribute in self.attributes if name == alias}
        return found | strings if alias in self.getattrs else found


def _reads(statement: Statement) -> _Reads:
    """One walk of the statement, made once per parsed statement (the two revisions share
    most of their pieces)."""

    def compute(node: ast.stmt) -> _Reads:
        strings, names, imports, attributes, getattrs = set(), set(), [], set(), set()
        for child in ast.walk(node):
            if isinstance(child, ast.Constant) and isinstance(child.value, str):
                strings.add(child.value)
            elif isinstance(child, ast.Name):
                names.add(child.id)
            elif isinstance(child, ast.Import | ast.ImportFrom):
                imports.append(child)
            elif isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name):
                attributes.add((child.value.id, child.attr))
            elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
                first = child.args[0] if child.args else None
                if child.func.id == "getattr" and isinstance(first, ast.Name):
                    getattrs.add(first.id)
        return _Reads(frozenset(strings), frozenset(names), tuple(imports),
                      frozenset(attributes), frozenset(getattrs))  # fmt: skip

    return statement.memo("home-reads", compute)


def _imported_from(files: RevisionFiles, path: str, node, name: str) -> tuple[str, str] | None:
    """(repository file, name there) an import of `name` reads; None: from elsewhere."""
    alias = next((a for a in node.names if (a.asname or a.name.split(".")[0]) == name), None)
    if alias is None or not isinstance(node, ast.ImportFrom):
        return None
    module = files.module_file(node.module or "", path, node.level)
    return None if module is None else (module, alias.name)


def _digest(statement: Statement) -> str:
    """Made once per parsed statement: the two revisions share most of their pieces."""

    def compute(node: ast.stmt) -> str:
        return hashlib.sha256(ast.dump(_without_docstrings(node)).encode()).hexdigest()

    return statement.memo("home-digest", compute)


def _without_docstrings(node: ast.stmt) -> ast.stmt:
    copy = copy_tree(node)
    for inner in ast.walk(copy):
        body = getattr(inner, "body", None)
        if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                inner.body = body[1:] or [ast.Pass()]
    return copy


def _first_line(statement: Statement) -> str:
    node = statement.node
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return f"def {node.name}(...)"
    if isinstance(node, ast.ClassDef):
        return f"class {node.name}"
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return " = ".join(ast.unparse(t) for t in targets)[:80] + " = ..."
    return ast.unparse(node).splitlines()[0][:80]


# --- without parsing: nothing the definitions may read changed ------------------------


def nothing_else_changed(changed: list[str], exempt: set[str]) -> bool:
    """Whether the paths that differ between two commits are all in `exempt` (the passes'
    own file, never a home) or not Python: then no definition the world answers can
    differ, and none is parsed (the PR that edits only its pass pays nothing)."""
    return all(p in exempt or not p.endswith(".py") for p in changed)
