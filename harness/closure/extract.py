"""A function's closure: the target plus every definition it needs, across files.

Found transitively by free names, with `ast` only (see `resolve` for the
rules): no module ever runs, imports and side effects are left out, and
what is neither defined in the repository nor bound by the world is an
error. Two closures with the same `digest` behave the same under the same
world and matrix, so the digest, which covers every statement drawn from
every file, is what outcome tables are cached by. Builtins the closure reads
are listed, not judged: whether it may use them is the sandbox's policy
(`harness.engine.policy`).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import sys
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from harness.closure.defaults import NO_DEFAULTS, Defaults
from harness.closure.effects import (
    Imports,
    first_imports,
    import_order,
    imports_at_load,
    imports_in_functions,
    not_inert,
)
from harness.closure.facts import WorldFacts
from harness.closure.index import DEFINITION, Binding, definitions_in, imported_in, names_bound
from harness.closure.inert import inert
from harness.closure.modules import RevisionFiles
from harness.closure.mutations import ANY, Effects, Reach, effects_reader
from harness.closure.pieces import Edit, Layout, Piece, SourceCache, Statement, postpones, refusal
from harness.closure.resolve import (
    HELPER,
    METHOD,
    METHOD_PREFIX,
    TARGET,
    Link,
    LocalImport,
    Need,
    Part,
    Resolver,
    Use,
    ViewClass,
    placed_node,
    shape,
)
from harness.errors import Absent, Unevaluable
from harness.records import evolve

__all__ = [
    "HELPER",
    "TARGET",
    "Closure",
    "Pipeline",
    "ViewClass",
    "extract_closure",
    "extract_pipeline",
    "with_defaults",
]


@dataclass(frozen=True)
class Closure:
    """What the target needs, chosen without building anything: the nodes come on demand."""

    path: str  # the target's file
    function: str
    lineno: int
    parts: tuple[Part, ...]  # file by file (the target's first), each in file order
    needs: tuple[Need, ...]  # names the world supplies
    links: tuple[Link, ...]  # names one file imports from another
    digest: str
    builtins: tuple[str, ...] = ()  # builtin names it reads
    files: tuple[str, ...] = ()  # every file read to resolve it, the target's first
    methods: tuple[tuple[str, str], ...] = ()  # (view method, file): from the view's class
    local_imports: tuple[LocalImport, ...] = ()  # imports inside functions, into the repository
    defaults: Defaults = NO_DEFAULTS  # what the view's class declares (see `with_defaults`)
    homes: tuple[tuple[str, str], ...] = ()  # (world name, the SGLang file it is imported from)
    postponed: tuple[str, ...] = ()  # files under `from __future__ import annotations`
    unbound: tuple[tuple[str, str, str], ...] = ()  # (file, name, why): refused if reached
    outside: tuple[tuple[str, str, str, int], ...] = ()  # (file, name, module, line): imported
    runners: tuple[tuple[str, str], ...] = ()  # (file, name) bound to a world's step runner
    entry: bool = False  # an entry point's: what nothing binds is refused where reached
    method_kinds: tuple[tuple[str, str], ...] = ()  # (view method, how its class binds it)

    @property
    def entry_method(self) -> bool:
        """An entry that is a method of the configuration's class (`ServerArgs.__post_init__`,
        its outcome the fields it leaves), not a function (`run_resolution_pipeline`)."""
        return self.entry and self.function.startswith(METHOD_PREFIX)

    def use_line(self, name: str) -> str:
        """`file:line` where the closure first reads `name`."""
        for part in self.parts:
            if name in shape(part.statement, part.role)[1]:
                return Use(part.path, part.statement).where(name)
        return f"{self.path}:{self.lineno}"

    def nodes_of(self, path: str) -> tuple[ast.stmt, ...]:
        """The statements drawn from `path`: annotations stripped, at their file lines."""
        return self._nodes.get(path, ())

    @property
    def nodes(self) -> tuple[ast.stmt, ...]:
        """The statements drawn from the target's own file."""
        return self.nodes_of(self.path)

    @cached_property
    def _nodes(self) -> dict[str, tuple[ast.stmt, ...]]:
        out: dict[str, list[ast.stmt]] = {}
        for part in self.parts:
            out.setdefault(part.path, []).append(placed_node(part.statement, part.role))
        return {path: tuple(nodes) for path, nodes in out.items()}

    @property
    def skipped(self) -> tuple[str, ...]:
        """Passes absent here: none, for one function (see `Pipeline`)."""
        return ()


def extract_closure(
    cache: SourceCache,
    files: RevisionFiles,
    function: str,
    bound: Collection[str],
    matrix_file: str = "the matrix",
    view: ViewClass | None = None,
    chosen: Collection[str] = (),
    *,
    facts: WorldFacts,
    defer: bool = False,
) -> Closure:
    """The closure of `function` in the file `files.target`; names in `bound` come from
    the world (those in `chosen`, from the matrix's `bindings:`, even where the file
    defines them); methods the view's class defines (`view`) come along when called.
    Top-level statements that may change what the closure reads come along too.

    Cheap when the files differ from the last ones `cache` saw in a few
    statements: only those are parsed, and when none of them binds a name the
    last closure looked up, that closure is reused (at its new lines).
    `matrix_file` is where messages tell the user to add a binding; `facts`, how the
    world's project lays out its code; `defer` (an entry point): a free name nothing
    binds is refused where a cell reaches it, not here.
    """
    path = files.target
    if cache.layout_of(files, path) is None:
        raise Absent(f"{path} does not exist")
    chosen = frozenset(chosen)
    key, names = (path, function, matrix_file, view, chosen, facts, defer), frozenset(bound)
    closure = reuse_closure(cache, files, key, names)
    if closure is not None:
        return closure
    resolver = Resolver(cache, files, names, matrix_file, view, chosen, facts=facts)
    resolver.defer = defer
    if "." in function:  # `ServerArgs.__post_init__`: a method of the view's class
        target, role, owner = find_method(resolver, path, function), METHOD, function.split(".")[0]
        function = METHOD_PREFIX + function.split(".")[1]
    else:
        target, role, owner = find_target(resolver.index(path), path, function, facts), TARGET, ""
    resolver.seen.add((path, owner or function))
    try:
        resolver.add(path, target, role)
        resolver.mark(path, owner or function)
        if defer:
            resolver.imported = read_imports(cache, files, resolver)
    except RecursionError:
        raise Unevaluable(
            f"{function} in {path} draws on definitions nested too deeply to follow "
            f"(more than {sys.getrecursionlimit() // 4} levels of helpers)"
        ) from None
    check_registries(resolver)
    closure = build_closure(path, function, target, resolver)
    remember_closure(cache, last_closure(resolver, key, closure))
    return closure


def read_imports(cache: SourceCache, files: RevisionFiles, resolver: Resolver) -> list[str]:
    """Read, as files of the closure, the resolution code the closure's files import with
    a top-level import statement (`harness.closure.effects`): what their load-time code
    changes that the closure reads comes along. Until no more come in: what comes along
    may import more. Then check that loading them file by file, in the order Python
    finishes running them, is what Python does (`check_effects`); that order."""
    added: list[str] = []
    while True:
        roots = [files.target, *sorted(resolver.layouts)]
        imports = import_order(cache, files, roots, resolver.resolution_code)
        fresh = [path for path in imports.order if path not in resolver.layouts]
        if not fresh:
            check_effects(cache, files, resolver, imports, added)
            return imports.order
        added += fresh
        for path in fresh:
            resolver.index(path)


def check_effects(cache: SourceCache, files: RevisionFiles, resolver: Resolver,
                  imports: Imports, added: list[str]) -> None:  # fmt: skip
    """Raise Unevaluable where the entry's files, loaded whole one after another, may not
    do what importing them does: a file imported in a block (`if`, `try`) whose code
    does more than bind names (whether it runs is not read); a statement of a file read
    only for its effects that does more and is not in the closure (what it changes is
    not followed); a file that changes data the closure reads before it imports one that
    does too (Python interleaves the two); such files on an import cycle; a file that
    changes another's data and is loaded only by an import inside a function (Python
    runs it then)."""
    code, changers = resolver.resolution_code, resolver.changers
    for path, line, module in imports.guarded:
        if module not in imports.order:
            where = f"{path}:{line} imports {module} in a block"
            _inert_imports(cache, files, code, module, where, imports.order)
    for path in imports.order:  # an import in a function runs its module at a call
        for line, module in imports_in_functions(cache, files, path, code):
            if module not in imports.order:
                where = f"{path}:{line} imports {module} in a function"
                _inert_imports(cache, files, code, module, where, imports.order)
    included = {(path, line) for path, line, member in resolver.included if member < 0}
    for path in added:
        for line, _ in not_inert(cache, files, path, code):
            if (path, line) not in included:
                raise Unevaluable(_effect_reason(f"{path} is imported for its effects", path, line))
    changing = {path for path, _, _ in changers}
    loaded = set(import_order(cache, files, [files.target], code).order)  # before the call
    for path, line, where in sorted(changers):
        if where != path and path not in loaded:
            raise Unevaluable(
                f"{path}:{line} changes {where} as it loads, and only an import inside a "
                "function loads it: Python runs it at that import, harness before the "
                "entry is called"
            )
    for path in sorted(changing & imports.cycles):
        raise Unevaluable(
            f"{path} changes what the resolution reads as it loads, and is on an import "
            "cycle: what Python runs of it first is not read"
        )
    for path in sorted(changing):
        first = min(line for p, line, _ in changers if p == path)
        for line, module in first_imports(cache, files, path, code):
            after = import_order(cache, files, [module], code).order
            if line > first and module != path and changing & set(after) - {path}:
                raise Unevaluable(
                    f"{path}:{first} changes what the resolution reads before {path}:{line} "
                    f"imports {module}, whose loading changes it too: harness loads a file "
                    "whole, after what it imports, so the two would run in another order"
                )


def _inert_imports(cache: SourceCache, files: RevisionFiles, code: Callable[[str], bool],
                   module: str, where: str, loaded: list[str]) -> None:  # fmt: skip
    """Raise Unevaluable unless `module`, and all it imports in turn that is not `loaded`
    anyway, only binds names."""
    seen, pending = {module}, [module]
    while pending:
        found = import_order(cache, files, [pending.pop()], code)
        for path in (p for p in found.order if p not in loaded):
            bad = not_inert(cache, files, path, code)
            if bad:
                raise Unevaluable(_effect_reason(where, path, bad[0][0]))
        for _, _, inner in found.guarded:
            if inner not in seen:
                seen.add(inner)
                pending.append(inner)


def _effect_reason(where: str, path: str, line: int) -> str:
    return (
        f"{where}, and its module-level code at {path}:{line} may change what the "
        "resolution reads when the project imports it; an entry runs only the code its "
        "names need, so it cannot resolve without it"
    )


def check_registries(resolver: Resolver) -> None:
    """The world's `register_post_process` registers nothing: a closure that reads the
    registry the project's own decorator fills would read it empty."""
    facts = resolver.facts
    for path, registry in sorted(resolver.registries):
        if registry in resolver.data.get(path, ()):
            raise Unevaluable(
                f"the closure reads {registry} ({path}), which {path}'s own "
                f"@{facts.register} fills when {facts.display} imports it; the harness calls "
                "each pass itself and fills no registry: read the passes another way"
            )


def build_closure(path: str, function: str, target: Statement, resolver: Resolver) -> Closure:
    files = [path, *resolver.imported, *sorted(resolver.layouts)]  # as Python loads them
    order = {p: n for n, p in enumerate(dict.fromkeys(files))}
    parts = tuple(
        sorted(resolver.included.values(), key=lambda p: (order[p.path], p.statement.lineno))
    )
    needs = tuple(sorted(Need(p, n, w) for (p, n), w in resolver.needs.items()))
    links = tuple(sorted(resolver.links.values()))
    methods = tuple(sorted(resolver.methods.items()))
    local = tuple(sorted(resolver.local_imports))
    postponed = tuple(p for p in order if postpones(statements_of(resolver.layouts.get(p))))
    unbound = tuple(sorted((p, n, why) for (p, n), why in resolver.unbound.items()))
    digest = _digest(parts, needs, links + methods + local + postponed
                     + tuple((p, n) for p, n, _ in unbound))  # fmt: skip
    return Closure(
        path, function, target.lineno, parts, needs, links, digest,
        tuple(sorted(resolver.builtins)), tuple(order), methods, local,
        homes=tuple(sorted(resolver.homes)), postponed=postponed, unbound=unbound,
        outside=tuple(sorted((p, n, *m) for (p, n), m in resolver.outside.items())),
        runners=tuple(sorted(k for k, world in resolver.needs.items()
                             if world in resolver.facts.step_runners)),
        entry=resolver.defer,
        method_kinds=tuple(sorted((n, k) for n, k in resolver.method_kinds.items() if k)),
    )  # fmt: skip


def statements_of(layout: Layout | None) -> Iterator[ast.stmt]:
    """The file's top-level statements, in order (none: no such file)."""
    if layout is not None:
        yield from (node for piece in layout.pieces for node in piece.nodes)


@dataclass(frozen=True)
class Pipeline:
    """Passes run in order, each seeing the earlier declarations; None: absent here."""

    path: str
    passes: tuple[tuple[str, Closure | None], ...]
    digest: str
    defaults: Defaults = NO_DEFAULTS  # what the view's class declares (see `with_defaults`)
    guarded: tuple[tuple[str, str], ...] = ()  # (pass, the `if`s SGLang runs it under)

    @property
    def lineno(self) -> int | None:
        return next((c.lineno for _, c in self.passes if c is not None), None)

    @property
    def skipped(self) -> tuple[str, ...]:
        return tuple(name for name, closure in self.passes if closure is None)


def extract_pipeline(
    cache: SourceCache,
    files: RevisionFiles,
    names: tuple[str, ...],
    bound: Collection[str],
    matrix_file: str,
    view: ViewClass | None = None,
    chosen: Collection[str] = (),
    *,
    facts: WorldFacts,
) -> Pipeline:
    """Each pass's closure; a pass missing at this revision is skipped, not an error."""
    path = files.target
    if cache.layout_of(files, path) is None:
        raise Absent(f"{path} does not exist")
    passes = []
    for name in names:
        try:
            closure = extract_closure(
                cache, files, name, bound, matrix_file, view, chosen, facts=facts
            )
            passes.append((name, closure))
        except Absent:
            passes.append((name, None))
    if all(closure is None for _, closure in passes):
        raise Absent(f"none of the passes {', '.join(names)} is in {path}")
    text = "\0".join(f"{name}={c.digest if c else '-'}" for name, c in passes)
    return Pipeline(path, tuple(passes), hashlib.sha256(text.encode()).hexdigest())


def with_defaults(code: Closure | Pipeline, defaults: Defaults) -> Closure | Pipeline:
    """The closure (or pipeline) whose view also answers the fields its class declares
    with literal defaults. They are part of what it does, so they are part of its digest:
    a changed default is a changed closure."""
    if defaults.empty:
        return code
    digest = hashlib.sha256(f"{code.digest}\0{defaults.digest}".encode()).hexdigest()
    return evolve(code, defaults=defaults, digest=digest)


@dataclass(frozen=True)
class LastClosure:
    """The last closure extracted, its files' layouts, and every name looked up in each."""

    layouts: dict[str, Layout]
    bound: frozenset[str]
    key: tuple  # (target path, function, matrix file, view class, names chosen)
    closure: Closure
    watched: dict[str, frozenset[str]]
    missing: frozenset[str] = frozenset()  # paths its imports were not found at
    reads: dict[str, frozenset[str]] = field(default_factory=dict)  # names whose data it reads


def last_closure(
    resolver: Resolver, key: tuple, closure: Closure, kind: type = LastClosure, **more
) -> LastClosure:
    """What `reuse_closure` needs of the closure `resolver` found (a `kind` of LastClosure,
    with `more` fields)."""
    reads = {path: frozenset(read) for path, read in resolver.data.items()}
    return kind(layouts=dict(resolver.layouts), bound=resolver.bound, key=key, closure=closure,
                watched=resolver.watched(), missing=resolver.missing(), reads=reads,
                **more)  # fmt: skip


def remember_closure(cache: SourceCache, last: LastClosure) -> None:
    cache.closures[last.key] = last


def reuse_closure(
    cache: SourceCache, files: RevisionFiles, key: tuple, bound: frozenset[str]
) -> Closure | None:
    """The last closure, if each of its files is unchanged or edited only where no name
    it looked up there is bound, and no file is added where one of its imports was not
    found (a package that shadows a module, a module earlier on the path)."""
    last = cache.closures.get(key)
    if last is None or last.bound != bound:
        return None
    if any(files.exists(path) for path in last.missing):  # an import now finds a new file
        return None
    layouts, watched = {}, dict(last.watched)
    for path, old in last.layouts.items():
        layout = cache.layout_of(files, path)
        if layout is None:
            return None
        if layout is not old:
            consulted = _harmless(layout, old, last, path, bound)
            if (
                consulted is None
                or postpones(statements_of(layout)) != postpones(statements_of(old))
                or refusal(layout, path) is not None
            ):  # `from __future__ import annotations` no longer first, or now first; or late
                return None
            watched[path] = watched.get(path, frozenset()) | consulted
        layouts[path] = layout
    if all(layouts[p] is last.layouts[p] for p in layouts):
        return last.closure
    parts = tuple(
        _moved(part, layouts[part.path], last.layouts[part.path]) for part in last.closure.parts
    )
    if any(part is None for part in parts):  # in a piece the edit cut anew: extract afresh
        return None
    closure = last.closure
    if any(new is not part for new, part in zip(parts, closure.parts, strict=True)):
        (lineno,) = (part.statement.lineno for part in parts if part.role == TARGET)
        closure = evolve(closure, parts=parts, lineno=lineno)
    remember_closure(cache, evolve(last, layouts=layouts, closure=closure, watched=watched))
    return closure


def _harmless(
    layout: Layout, old: Layout, last: LastClosure, path: str, bound: frozenset[str]
) -> frozenset[str] | None:
    """The names whose definitions told what the edit's statements may change (to watch
    from now on), if `layout` is `old` edited in pieces that bind none of the names the
    `last` closure watched in `path` and may change, at module level, none whose data it
    reads there (through the file's own functions and aliases; names the world binds
    aside); else None."""
    watched = last.watched.get(path, frozenset())
    reads = last.reads.get(path, frozenset())
    edit = layout.edit
    if edit is None or edit.base is not old:
        return None
    now = layout.pieces[edit.first : edit.first + edit.added]
    removed, added = _trimmed(edit.removed_pieces(), now)
    if any(_rebinds(piece, watched, bound) for piece in removed + added):
        return None
    entry = getattr(last.closure, "entry", False)  # (a pipeline has none)
    late = postpones(statements_of(layout))
    loads = [n for piece in removed + added for n in piece.nodes]
    if entry and (imports_at_load(loads) or not all(inert(n, (), late) for n in loads)):
        return None  # what an entry's files import, and do as they load: look again
    consulted: set[str] = set()
    read = effects_reader(late)  # old's too, or the closure is not reused
    for pieces, where in ((removed, old), (added, layout)):
        reach = Reach(functools.partial(definitions_in, where))  # no index: a few names
        imported = functools.partial(imported_in, where)
        if any(_changes_data(piece, reads, bound, reach, imported, read) for piece in pieces):
            return None
        consulted |= reach.consulted()
    return frozenset(consulted)


def _rebinds(piece: Piece, watched: frozenset[str], bound: frozenset[str]) -> bool:
    """Whether the piece binds (or unbinds: `del`, `:=`, `import *`, ...) a name the last
    closure looked up, or one the world answers (a file's own definition of it is said,
    see `harness.closure.shadows`)."""
    names = names_bound(piece)  # the index's reading of the piece, "*" for `import *`
    return bool(names & watched or names & bound or "*" in names)


def _trimmed(removed: list[Piece], added: list[Piece]) -> tuple[list[Piece], list[Piece]]:
    """The pieces an edit replaced, without those the same at either end of it (the
    statement before an inserted one, cut again; a pass whose comment changed)."""
    start, end = _same_ends(removed, added)
    return removed[start : len(removed) - end], added[start : len(added) - end]


def _same_ends(removed: list[Piece], added: list[Piece]) -> tuple[int, int]:
    """How many pieces at the start, and then at the end, the two hold the same."""
    start, most = 0, min(len(removed), len(added))
    while start < most and _same(removed[start], added[start]):
        start += 1
    end = 0
    while end < most - start and _same(removed[-1 - end], added[-1 - end]):
        end += 1
    return start, end


def _same(old: Piece, new: Piece) -> bool:
    """Whether two pieces hold the same statements: the same text, or the same trees
    (comments, spacing and line breaks aside; a docstring is part of the tree)."""
    if old is new:
        return True
    trees = old.memo("tree", _trees)
    return trees is not None and trees == new.memo("tree", _trees)


def _trees(nodes: list[ast.stmt]) -> tuple[str, ...] | None:
    """The statements' trees as text; None when one cannot be written (an int literal
    past Python's digit limit for `repr`): no two such pieces count as the same."""
    try:
        return tuple(ast.dump(node) for node in nodes)
    except (ValueError, RecursionError):
        return None


def _changes_data(piece: Piece, reads: frozenset[str], bound: frozenset[str], reach: Reach,
                  imported: Callable[[str], bool], read: tuple) -> bool:  # fmt: skip
    """Whether the piece may change, when its module is imported, data of a name in
    `reads` (or any name, or another file's: through a function it defines, or a name
    the file `imported`); `read`: how its file's statements' effects are read."""
    key, reader = read
    for found in piece.memo(key, lambda nodes: [reader(node) for node in nodes]):
        found = Effects(*(part - bound for part in found))
        if found.empty:
            continue
        data, foreign = reach.of(found)
        data -= bound
        if data & reads or ANY in data or foreign - bound or any(map(imported, data)):
            return True
    return False


def _moved(part: Part, layout: Layout, old: Layout) -> Part | None:
    """The part at its place in the edited layout (None: its piece is not there as it was)."""
    statement = part.statement
    if layout is old or _in_place(statement, layout):
        return part
    slot = _new_slot(layout.edit, layout, statement.slot)
    if slot is None:
        return None
    moved = layout.statement(slot, statement.position)
    return part._replace(statement=moved._replace(member=statement.member))


def _new_slot(edit: Edit, layout: Layout, old: int) -> int | None:
    """Where the base's piece `old` is in the edited layout: outside the edit, or among
    the pieces the same at either end of it (see `_trimmed`)."""
    slot = edit.slot(old)
    if slot is not None:
        return slot
    now = layout.pieces[edit.first : edit.first + edit.added]
    start, end = _same_ends(edit.removed_pieces(), now)
    k, back = old - edit.first, edit.after - 1 - old
    if k < start:
        return edit.first + k
    if back < end:
        return edit.first + len(now) - 1 - back
    return None


def _in_place(statement: Statement, layout: Layout) -> bool:
    """Whether the statement's piece stands at the same slot and line in the edited layout
    (an edit after it, or one that kept the line count)."""
    slot = statement.slot
    return (
        layout.edit.slot(slot) == slot
        and layout.lines[slot] == statement.offset
        and layout.pieces[slot] is statement.piece
    )


def find_target(
    index: dict[str, list[Binding]], path: str, function: str, facts: WorldFacts
) -> Statement:
    """The definition of `function` the project runs: the one registered with the world's
    decorator (`@register_post_process`) when there is one (a later plain definition of
    the same name only rebinds the name), else the last one (what the name is bound to)."""
    bindings = index.get(function, [])
    registered = [
        b for b in bindings if b.kind == DEFINITION and decorated(b.statement.node, facts.register)
    ]
    if len(registered) > 1:
        lines = " and ".join(str(b.statement.lineno) for b in registered)
        raise Unevaluable(
            f"{function} is registered twice in {path} (lines {lines}), and {facts.display} "
            "runs both: harness runs one function per name; rename one"
        )
    if registered:
        bindings = registered
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


def find_method(resolver: Resolver, path: str, name: str) -> Statement:
    """The method `Class.method` of the view's class (which the world names, and which
    `path` must define): it runs with the view as `self`, and the methods it calls on
    `self` come along as the view's."""
    owner, _, method = name.partition(".")
    view = resolver.view_class
    if view is None or view.name != owner:
        expected = "none in this world" if view is None else view.name
        raise Unevaluable(
            f"entry {name}: only a method of the class the configuration stands for runs as "
            f"an entry ({expected}); name a function, or that class's method"
        )
    found = resolver.view_class_member(method)
    if found is None or found[0] != path:
        raise Absent(f"no method {method} of class {owner} in {path}")
    if isinstance(found[1].node, ast.AsyncFunctionDef):
        raise Unevaluable(f"{name} in {path} line {found[1].lineno} is async; only plain "
                          "functions run")  # fmt: skip
    return found[1]


def decorated(node: ast.stmt, decorator: str) -> bool:
    """Whether a function definition carries `@decorator` (or `@decorator(...)`)."""
    if not isinstance(node, ast.FunctionDef):
        return False
    for item in node.decorator_list:
        func = item.func if isinstance(item, ast.Call) else item
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name == decorator:
            return True
    return False


def _digest(parts: tuple[Part, ...], needs: tuple[Need, ...], links: tuple) -> str:
    text = "\n".join(f"{p.path}\0{shape(p.statement, p.role)[0]}" for p in parts)
    return hashlib.sha256((text + "\0" + repr(needs) + repr(links)).encode()).hexdigest()
