"""Module-level code that changed and that the harness does not run, said as blind spots.

SGLang imports a module whole: every top-level statement of a pass's files, of
their packages' `__init__.py` files and of the repository modules they import
runs before any pass does. A closure keeps the statements that bind or change
what its code reads in its own files (`harness.closure.mutations`); a statement
it leaves out runs in SGLang and not here. One that changed between the two
revisions (or newly runs: a module the head imports and the base did not) is
named, seen "never run" ("no change" becomes "cannot tell"), when what it may
change (read as `harness.closure.mutations.effects` reads it, through the
file's aliases and functions) is what the closure reads from another file:

- a name the closure reads, of one of its files (`TABLE["x"] = 1` in a
  package's `__init__.py`, after `from .consts import TABLE`, or through a
  module that imports it in turn);
- a closure file's module, a module outside the repository (`os.environ[...]
  = ...`, which SGLang's `envs` read), or a name imported from SGLang's home
  of what the world answers (a repository module the closure does not read
  is that module's business: a registry of its own, say);
- anything at all (`globals()`, `exec`, `sys.modules`).

Further down (`_deeper`), the other changed modules of the source root are
judged as if imported; a changed function of a file the closure does not
read is judged by what it writes through and calls (`_Facts.call_writes`);
and unchanged code that may change what the closure reads names the changed
definitions it takes in (`_fed`).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import posixpath
import re
from collections.abc import Iterator
from typing import Any

from harness.closure.facts import WorldFacts
from harness.closure.modules import module_name, package_dir
from harness.closure.mutations import ANY, CHANGERS, Reach, effects, function_effects
from harness.closure.names import never_annotated
from harness.closure.pieces import postpones
from harness.closure.shadows import names_bound_at_import
from harness.engine.purity import load_time_nodes
from harness.errors import Unevaluable
from harness.scan.spots import NEVER_RUN, BlindSpot
from harness.scan.stand_ins import changed_paths

MODULE_LEVEL = "module level"
MAX_MODULES = 8  # changed or newly imported modules read per side, at most
MAX_REACHED = 24  # modules followed down to know what the other side imports already
MAX_LISTED = 400  # other changed files of the package, read for what they name, at most
MAX_DEEPER = 32  # of those, the ones that name what the closures read, judged at most
# what reaches any module (`sys.modules`), spelled
DYNAMIC = ("sys", "import_module", "__import__", "pkgutil", "runpy", "environ", "setattr",
           "globals", "vars", "exec")  # fmt: skip
HINT = (
    "this module-level code changed, runs when {project} imports its module and may change "
    "what the passes read, but harness does not run it, so what it does would not show "
    "in any cell: review it"
)


def unrun_changes(versions: Any, revisions: dict, closures: dict) -> list[BlindSpot]:
    """A blind spot for each module-level statement, of the files SGLang imports for
    either side's closures, that changed between the revisions, is not in the closure,
    and may change what it reads from another file (see the module)."""
    world: WorldFacts = versions.world.facts
    files = {side: _files_at(versions, revisions[side]) for side in ("base", "head")}
    facts = {side: _facts_of(versions, revisions[side], files[side]) for side in files}
    roots = {side: _files_of(files[side], closures[side]) for side in files}
    near = {side: _with_imports(roots[side], facts[side],
                                _run_imports(files[side], closures[side], world))
            for side in files}  # fmt: skip
    read = {side: _read(closures[side]) for side in files}
    spots: list[BlindSpot] = []
    base, head = files["base"], files["head"]
    both = sorted(p for p in set(near["base"]) & set(near["head"])
                  if not world.is_home_file(p) and base.ident(p) != head.ident(p))  # fmt: skip
    for n, path in enumerate(both):
        if n == MAX_MODULES:
            spots.append(_unread("head", path, f"more than {MAX_MODULES} changed modules", world))
            break
        for side, other in (("head", "base"), ("base", "head")):
            mine, theirs = facts[side](path), facts[other](path)
            spots += _judged(side, mine, mine.retyped(theirs), read[side], facts[side], theirs)
    spots += _newly_imported(facts, near, read, files, world)
    deeper, judged = _deeper(versions, revisions, facts, near, read, files)
    fed = _fed(facts, {side: [*near[side], *judged] for side in files}, read, files)
    return _unique(spots + deeper + fed)


def _unique(spots: list[BlindSpot]) -> list[BlindSpot]:
    return list(dict.fromkeys(spots))


def _fed(facts: dict, judged: dict, read: dict, files: dict) -> list[BlindSpot]:
    """Spots for changed definitions that unchanged module-level code takes in where that
    code may change what the closure reads: `TABLE["fa4"] = FA4` after `from .defaults
    import FA4`, where defaults.py's `FA4 = 64` changed; `TABLE.update(patch())`;
    `setup(TABLE)`. (A changed statement is judged itself.)"""
    spots: list[BlindSpot] = []
    for side, other in (("head", "base"), ("base", "head")):
        for path in dict.fromkeys(judged[side]):
            spots += _fed_in(facts[side](path), side, other, facts, read[side], files)
    return spots


def _fed_in(mine: _Facts, side: str, other: str, facts: dict, read: dict,
            files: dict) -> list[BlindSpot]:  # fmt: skip
    """`_fed` for one file at one side."""
    imported = {name for name, (target, got) in mine.imports.items()
                if got is not None and target.endswith(".py") and target != mine.path}  # fmt: skip
    if mine.unreadable or not imported:
        return []
    drawn = read.get(mine.path, {}).get("lines", set())
    fresh = set(mine.retyped(facts[other](mine.path)))
    spots: list[BlindSpot] = []
    for index, (line, node) in enumerate(mine.statements):
        if index in fresh or line in drawn or _binds_only(node):
            continue
        used = _loaded(_run_nodes(node)) & imported
        if used and mine.reaches(index, read, facts[side]):
            for name in sorted(used):
                origin = _origin(facts[side], *mine.imports[name])
                if not mine.world.is_home_file(origin[0]):
                    spots += _changed_definition(side, other, facts, files, *origin)
    return spots


def _changed_definition(side: str, other: str, facts: dict, files: dict, path: str,
                        name: str) -> list[BlindSpot]:  # fmt: skip
    """A spot for each statement binding `name` in `path` that changed between the sides."""
    if files[side].ident(path) == files[other].ident(path):
        return []
    mine, theirs = facts[side](path), facts[other](path)
    fresh = set(mine.retyped(theirs))
    bound = {id(node) for node in mine.reach.definitions(name)}
    return [_spot(side, path, line, node, mine.world)
            for n, (line, node) in enumerate(mine.statements)
            if id(node) in bound and n in fresh and mine.new_to(n, theirs)]  # fmt: skip


def _with_imports(paths: list[str], facts: Any, more: list[str]) -> list[str]:
    """`paths`, the repository modules their imports at import time name, and `more`."""
    out = dict.fromkeys(paths)
    for path in paths:
        out.update(dict.fromkeys(sorted(facts(path).imported)))
    out.update(dict.fromkeys(more))
    return list(out)


def _run_imports(files: Any, closures: list, world: WorldFacts) -> list[str]:
    """The repository modules the closures' own code imports where it runs (`import m`
    inside the pass: SGLang runs m's module-level code when it calls the pass)."""
    out: dict[str, None] = {}
    for closure in closures:
        for part in closure.parts:
            found = part.statement.memo("unrun-imports", lambda node: tuple(_imports_in(node)))
            for module, level, names in found:
                target = files.module_file(module, part.path, level)
                if target and target != part.path and not _all_home(names, target, world):
                    out.update(dict.fromkeys([target, *_package_inits(files, target)]))
    return list(out)


def _newly_imported(
    facts: dict, near: dict, read: dict, files: dict, world: WorldFacts
) -> list[BlindSpot]:
    """Spots for the changed modules the head's files import that the base's did not (and
    the base's that the head no longer does): their code newly runs (or no longer). A
    module the same at both revisions is passed over: SGLang's server imports its
    package widely, so its code runs there either way."""
    spots: list[BlindSpot] = []
    for side, other in (("head", "base"), ("base", "head")):
        queue = sorted(set(near[side]) - set(near[other]))
        before: set[str] | None = None  # what the other side imports further down, if asked
        seen: set[str] = set()
        while queue:
            path = queue.pop(0)
            same = files[side].ident(path) == files[other].ident(path)
            if same or path in seen or world.is_home_file(path):
                continue
            before = _reachable(near[other], facts[other]) if before is None else before
            if path in before:
                continue
            seen.add(path)
            if len(seen) > MAX_MODULES:
                spots.append(
                    _unread(side, path, f"more than {MAX_MODULES} modules newly imported", world)
                )
                break
            found = facts[side](path)
            spots += _judged(side, found, range(len(found.statements)), read[side], facts[side])
            queue += sorted(found.imported - before - seen)
    return spots


def _deeper(versions: Any, revisions: dict, facts: dict, near: dict, read: dict,
            files: dict) -> tuple[list[BlindSpot], list[str]]:  # fmt: skip
    """Spots in the other changed modules of the source root (between two commits), and
    the modules judged: SGLang's import of its package runs them, at both revisions,
    two imports down or more. Which module imports which is not followed that far (a
    release's package holds over a thousand; 70 s to parse): each is judged as if
    imported, all of them when they are few (MAX_DEEPER), else those that name a
    closure file's module or what reaches any (`sys.modules`, `setattr`, the import
    machinery, `os.environ`); more than the bounds is said, not passed over."""
    changed = changed_paths(versions, revisions)
    closures = {*read["base"], *read["head"]}
    if not changed or not closures:  # no closure read: nothing it reads to reach
        return [], []
    world: WorldFacts = versions.world.facts
    roots, tops = versions.matrix.target.roots, world.tops
    packages = {_package_prefix(path, roots, tops) for path in closures}
    judged = {*near["base"], *near["head"]}
    under = tuple(sorted(packages))
    sides = tuple(_key(revisions[side]) for side in ("base", "head"))
    memo, at = versions.front.sources.homes, ("changed python", sides, under)
    if at not in memo:  # once a run: the parts of a split inferred diff ask it each
        memo[at] = [p for p in changed if p.endswith(".py") and p.startswith(under)
                    and not world.is_home_file(p)]  # fmt: skip
    others = [p for p in memo[at] if p not in judged]
    where = min(packages).rstrip("/") or "."
    if len(others) > MAX_LISTED:
        why = f"{len(others)} other changed modules under {where}/ (more than {MAX_LISTED})"
        return [_unread("head", where, why, world)], []
    named = others
    if len(others) > MAX_DEEPER:  # a pull request's few are read whole; more, by their words
        words = _spelled(closures, roots, tops)
        named = [p for p in others if any(words.search(files[s].read(p) or "") for s in files)]
    if len(named) > MAX_DEEPER:
        why = f"{len(named)} other changed modules under {where}/ name the passes' modules"
        return [_unread("head", where, f"{why} (more than {MAX_DEEPER})", world)], []
    spots: list[BlindSpot] = []
    for path in named:
        for side, other in (("head", "base"), ("base", "head")):
            mine, theirs = facts[side](path), facts[other](path)
            spots += _judged(side, mine, mine.retyped(theirs), read[side], facts[side], theirs)
    return spots, named


def _package_prefix(path: str, roots: tuple[str, ...], tops: tuple[str, ...]) -> str:
    """What the paths of the source root holding `path`'s package start with (`python/`,
    where `python/sglang` and any other package beside it live; all paths, "", for a
    package at the top of the repository)."""
    found = posixpath.dirname(package_dir(path, roots, tops))
    return f"{found}/" if found else ""


def _spelled(paths: set[str], roots: tuple[str, ...], tops: tuple[str, ...]) -> re.Pattern:
    """What a file's text spells when it may reach the closure files `paths`: the last two
    names of each one's module (`arg_groups`, `consts`: an import, absolute or relative,
    of it or of its package), and the names that reach any module (`DYNAMIC`)."""
    words = set(DYNAMIC)
    for path in paths:
        words.update(module_name(path, roots, tops).split(".")[-2:])
    return re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, words))) + r")\b")


def _reachable(paths: list[str], facts: Any) -> set[str]:
    """The modules `paths` import, and theirs, up to a bound (a module imported further
    down runs at both revisions: its code is not new)."""
    found, queue = set(paths), list(paths)
    while queue and len(found) < MAX_REACHED:
        for module in sorted(facts(queue.pop(0)).imported - found):
            found.add(module)
            queue.append(module)
    return found


def _unread(side: str, path: str, why: str, world: WorldFacts) -> BlindSpot:
    text = f"{why}: not read"
    return BlindSpot(
        side, path, 1, text, MODULE_LEVEL, NEVER_RUN, HINT.format(project=world.display)
    )


class _Facts:
    """What one file at one revision tells this reading, worked out once per run (the
    parts of a split inferred diff ask for the same files)."""

    def __init__(self, versions: Any, files: Any, path: str) -> None:
        self.path, self.files = path, files
        self.world: WorldFacts = versions.world.facts
        self.statements, self.texts, self.unreadable = _statements(versions, files, path)
        nodes = [node for _, node in self.statements]
        self._dumps: dict[int, str] = {}
        self._fresh: dict[int, list[int]] = {}
        self._dump_sets: dict[int, set[str]] = {}  # by partner: the trees it lacks here
        self.imports = _import_targets(files, path, self.statements)
        self.importers = _importers(self.statements)
        self.postponed = postpones(nodes)  # then no annotation runs
        bindings = _bindings(self.statements)
        self.reach = Reach(lambda name: bindings.get(name, []))
        self.changes: dict[int, tuple[frozenset[str], frozenset[str], bool]] = {}
        self._summaries: dict[int, tuple] = {}  # a definition's, by its id: see `_summary`
        self._writes: dict[tuple[int, int], frozenset] = {}  # see `_writes_of`
        self._function_changes: dict[str, frozenset[str]] = {}

    @functools.cached_property
    def imported(self) -> set[str]:
        """The repository files the file imports when SGLang imports it (see `_imported`):
        asked only of the files whose imports are followed, not of every file read."""
        return _imported(self.files, self.path, self.statements, self.texts, self.world)

    def retyped(self, other: _Facts) -> list[int]:
        """Indexes of the statements in pieces of text `other` (the same file at the other
        revision) does not hold: changed, or only reformatted (see `new_to`)."""
        if id(other) not in self._fresh:
            texts = set(other.texts)
            self._fresh[id(other)] = [n for n, text in enumerate(self.texts) if text not in texts]
        return self._fresh[id(other)]

    def new_to(self, index: int, other: _Facts) -> bool:
        """Whether statement `index` is a tree `other` holds nowhere (formatting and
        comments aside)."""
        if id(self) not in other._dump_sets:  # a file at one revision meets several others
            mine = set(self.texts)  # (a bisect's steps): what it lacks is per partner
            found = {other.dump(n) for n, t in enumerate(other.texts) if t not in mine}
            other._dump_sets[id(self)] = found
        return self.dump(index) not in other._dump_sets[id(self)]

    def dump(self, index: int) -> str:
        if index not in self._dumps:
            self._dumps[index] = ast.dump(self.statements[index][1])
        return self._dumps[index]

    def changed(self, index: int) -> tuple[frozenset[str], frozenset[str], frozenset]:
        """(names of the file statement `index` may change, functions of other files it
        calls, what it writes through imported names: (root, first attribute or None))."""
        if index not in self.changes:
            node = self.statements[index][1]
            if _binds_only(node):
                self.changes[index] = (frozenset(), frozenset(), frozenset())
                return self.changes[index]
            found = self._changes(node)
            if any(found) and self.postponed:  # then its annotations never run
                found = self._changes(never_annotated(node))
            self.changes[index] = found
        return self.changes[index]

    def _changes(self, node: ast.stmt) -> tuple[frozenset[str], frozenset[str], frozenset]:
        names, foreign = self.reach.of(effects(node))
        if _imports_at_run_time(node, self.importers):
            names |= {ANY}
        written = {pair for pair in _written_roots(load_time_nodes(node))
                   if pair[0] in self.imports}  # fmt: skip
        return names, foreign, frozenset(written)

    def reaches(self, index: int, read: dict, every: Any) -> bool:
        """Whether statement `index`, as it runs at import, may change what the closure
        reads of another file (see the module)."""
        names, foreign, written = self.changed(index)
        return (_writes_a_module(written, self.imports, read, every, self.world)
                or _reaches(names, self, read, every)
                or _calls_into(foreign, self.imports, read, every))  # fmt: skip

    def call_writes(self, index: int, read: dict, every: Any) -> bool:
        """Whether calling the function (or a method of the class) statement `index` may
        write to what the closure reads of another file: through a closure file's module
        or a name the closure reads of one (imported by the file or inside), or a local
        name given either (`t = TABLE`, a default argument), or by calling one of their
        functions that does. Its caller may be anywhere (another module's import of this
        one), so a changed function of a file the closure does not read is judged by its
        text."""
        node = self.statements[index][1]
        return isinstance(node, DEFINITIONS) and self._text_writes(node, read, every, 0)

    def function_writes_of(self, name: str, every: Any, depth: int) -> frozenset:
        """`_writes_of` the file's function (or class) `name`, called from elsewhere."""
        if depth >= MAX_CALLS:
            return frozenset()
        return frozenset(write for node in self.reach.definitions(name)
                         if isinstance(node, DEFINITIONS)
                         for write in self._writes_of(node, every, depth))  # fmt: skip

    def _text_writes(self, node: ast.stmt, read: dict, every: Any, depth: int) -> bool:
        return any(_in_read(write, read) for write in self._writes_of(node, every, depth))

    def _writes_of(self, node: ast.stmt, every: Any, depth: int) -> frozenset:
        """What calling the definition may write, whatever the closures read, worked out
        once a run (the parts of a split inferred diff read differently): (the files whose
        functions' text, one calling the next, writes it; the file and the name written,
        None for the module), or (REACH, the facts of a file, a function of it called:
        what Reach says it changes there), through what it imports and the functions it
        calls, MAX_CALLS deep."""
        at = (id(node), depth)
        if at not in self._writes:
            self._writes[at] = frozenset()  # a cycle stops here
            targets, written, called = self._summary(node)
            mine = frozenset({self.path})
            out = {(mine, *_written_origin(targets[name], every)) for name in written}
            for name in called & set(targets):
                out |= _called_writes(targets[name], every, depth + 1)
            for name in called - set(targets):
                out |= self.function_writes_of(name, every, depth + 1)
            self._writes[at] = frozenset(out)
        return self._writes[at]

    def _summary(self, node: ast.stmt) -> tuple[dict, frozenset[str], frozenset[str]]:
        """What a definition's text tells whatever the closures read, worked out once:
        the names it binds by importing (the file's and its own), those of them whose
        objects it may write (through a local given one, see `_written_sources`), and
        the names it calls."""
        if id(node) not in self._summaries:
            nodes = _every_node(node)
            own = [(0, c) for c in nodes if isinstance(c, ast.Import | ast.ImportFrom)]
            targets = {**self.imports, **_import_targets(self.files, self.path, own)}
            written = _written_sources(nodes) & set(targets)
            called = {c.func.id for c in nodes
                      if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}  # fmt: skip
            self._summaries[id(node)] = (targets, frozenset(written), frozenset(called))
        return self._summaries[id(node)]

    def function_changes(self, name: str) -> frozenset[str]:
        """Names of this file that calling its function `name` may change (once a run)."""
        if name not in self._function_changes:
            found: set[str] = set()
            for node in self.reach.definitions(name):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    found |= self.reach.of(function_effects(node))[0]
            self._function_changes[name] = frozenset(found)
        return self._function_changes[name]


def _files_at(versions: Any, revision: Any) -> Any:
    """The revision's files, one reader per run (it keeps the blob ids it looked up: the
    parts of a split inferred diff ask for the same files)."""
    memo, at = versions.front.sources.homes, ("unrun files", _key(revision))
    if at not in memo:
        memo[at] = versions.files_at(revision)
    return memo[at]


def _key(revision: Any) -> str:
    return revision.sha or revision.label


def _facts_of(versions: Any, revision: Any, files: Any):
    """The facts of a revision's files, by path, kept by the run."""
    memo, key = versions.front.sources.homes, _key(revision)

    def facts(path: str) -> _Facts:
        at = ("unrun", key, path)
        if at not in memo:
            memo[at] = _Facts(versions, files, path)
        return memo[at]

    return facts


def _judged(
    side: str, facts: _Facts, fresh: Any, read: dict, every: Any, other: _Facts | None = None
) -> list[BlindSpot]:
    """Spots for the statements `fresh` (indexes) of a file that the closure does not run,
    that may change what it reads and (`other`: the file at the other revision) that
    are not there in another form; one for the file when it cannot be read. `every`:
    the facts of the side's other files (a function of one called here)."""
    if facts.unreadable:
        return [
            _unread(side, facts.path, f"cannot be read ({facts.unreadable[:200]})", facts.world)
        ]
    drawn = read.get(facts.path, {}).get("lines", set())
    spots = []
    for index in fresh:
        line, node = facts.statements[index]
        if line in drawn:
            continue
        if not (facts.reaches(index, read, every)
                or (facts.path not in read and facts.call_writes(index, read, every))):  # fmt: skip
            continue
        if other is None or facts.new_to(index, other):
            spots.append(_spot(side, facts.path, line, node, facts.world))
    return spots


def _reaches(changed: frozenset[str], facts: _Facts, read: dict, every: Any) -> bool:
    """Whether names of the file a statement may change are what the closure reads: its
    own, read there, or imported from a closure file (through modules that import them
    in turn: `from .c import T` where c has `from .consts import TABLE as T`)."""
    if ANY in changed:
        return True
    for name in changed:
        target = facts.imports.get(name)
        if target is None:  # the file's own
            if name in read.get(facts.path, {}).get("names", set()):
                return True
        elif target[1] is not None:
            path, got = _origin(every, *target)
            if path in read and not facts.world.is_home(got, path):  # a world name's
                return True
    return False


MAX_HOPS = 8  # modules a name is followed through, importing it from one another


def _origin(every: Any, path: str, name: str) -> tuple[str, str]:
    """The file (and name there) that defines what `name` imported from `path` is, through
    the modules that import it in turn, as far as MAX_HOPS."""
    for _ in range(MAX_HOPS):
        if not path.endswith(".py"):
            break
        target = every(path).imports.get(name)
        if target is None or target[1] is None:
            break
        path, name = target
    return path, name


def _written_sources(nodes: list[ast.AST]) -> set[str]:
    """The names whose objects the nodes may write: those written through (see
    `_written_through`), and every name a value given to one of those names (`t =
    TABLE`, `def f(t=TABLE)`, `for t in (TABLE,)`) may be, and so on."""
    given: list[tuple[str, ast.AST]] = []
    for child in nodes:
        if isinstance(child, ast.Assign | ast.AnnAssign | ast.NamedExpr | ast.For):
            targets = child.targets if isinstance(child, ast.Assign) else [child.target]
            value = child.iter if isinstance(child, ast.For) else child.value
            given += [(t.id, value) for t in targets if isinstance(t, ast.Name) and value]
        elif isinstance(child, ast.arguments):
            positional = [*child.posonlyargs, *child.args]
            params = positional[len(positional) - len(child.defaults) :]
            given += [(a.arg, d) for a, d in zip(params, child.defaults, strict=True)]
            given += [(a.arg, d) for a, d in zip(child.kwonlyargs, child.kw_defaults, strict=True)
                      if d is not None]  # fmt: skip
    found = _written_through(nodes)
    grew = True
    while grew:
        more = {held for name, value in given if name in found
                for held in _held_by(value)} - found  # fmt: skip
        found |= more
        grew = bool(more)
    return found


def _held_by(value: ast.expr) -> set[str]:
    """The names whose objects a value may be (not what a call makes of them): `T`,
    `m.T[k]`, `(T, U)`, `T or U`, `getattr(m, "T")`, `vars(m)`."""
    if isinstance(value, ast.Name):
        return {value.id}
    if isinstance(value, ast.Attribute | ast.Subscript | ast.Starred):
        return _held_by(value.value)
    if isinstance(value, ast.Tuple | ast.List | ast.Set):
        return {name for element in value.elts for name in _held_by(element)}
    if isinstance(value, ast.Dict):
        return {name for element in value.values for name in _held_by(element)}
    if isinstance(value, ast.BoolOp):
        return {name for element in value.values for name in _held_by(element)}
    if isinstance(value, ast.IfExp):
        return _held_by(value.body) | _held_by(value.orelse)
    if isinstance(value, ast.NamedExpr):
        return _held_by(value.value)
    if _reflects(value):
        return _held_by(value.args[0])
    return set()


def _written_through(nodes: list[ast.AST]) -> set[str]:
    """The names the nodes write what they hold through: an attribute or item assigned
    or deleted, a mutating method called, `+=` on it, or it handed to a mutating method,
    `setattr`, `vars` (`dict.update(TABLE, ...)`, `vars(consts)[...]`)."""
    found = {root for root, _ in _written_roots(nodes)}
    for child in nodes:
        if isinstance(child, ast.AugAssign):
            found |= _names_in([child.target])
        elif _hands_over(child):
            found |= _names_in([n for a in child.args for n in ast.walk(a)])
    return found


MAX_CALLS = 4  # functions of other files followed, one calling the next


def _calls_into(
    foreign: frozenset[str], imports: dict, read: dict, every: Any, depth: int = 0
) -> bool:
    """Whether a function imported from the repository, called here, may change what the
    closure reads: one of a closure file that changes a name it reads there
    (`set_fa4(64)` after `from .consts import set_fa4`), or any whose text writes
    through what the closure reads (see `_Facts.call_writes`), calls followed as far
    as MAX_CALLS."""
    return any(_in_read(write, read) for name in sorted(foreign) if name in imports
               for write in _called_writes(imports[name], every, depth))  # fmt: skip


def _called_writes(target: tuple, every: Any, depth: int) -> frozenset:
    """`_Facts._writes_of` a function imported as `target` (file, name), where it is
    defined: what its file's Reach says it changes there, and what its text writes."""
    path, got = target
    if got is None or not path.endswith(".py"):
        return frozenset()
    path, got = _origin(every, path, got)
    if not path.endswith(".py"):
        return frozenset()
    facts = every(path)
    text = {(via | {path}, *write) if via is not REACH else (via, *write)
            for via, *write in facts.function_writes_of(got, every, depth)}  # fmt: skip
    if depth <= REACH_CALLS:  # a closure file's function called from here, or one call on
        text.add((REACH, facts, got))
    return frozenset(text)


def _written_origin(target: tuple, every: Any) -> tuple[str, str | None]:
    """The file (and name) an imported name that is written through stands for."""
    path, got = target
    return (path, None) if got is None else _origin(every, path, got)


REACH = "reach"  # a write's `via`: what the function `name` of `where` (its facts) changes
REACH_CALLS = 1  # how deep a call of a closure file's function counts (further down, any
# server entry point reaches the resolution code, which changes what the passes read)


def _in_read(write: tuple, read: dict) -> bool:
    """Whether a write (see `_Facts._writes_of`) is to what the closure reads. A closure
    file's own functions are judged by what Reach says they change (asked only of a
    closure file), not by their text."""
    via, path, name = write
    if via is REACH:
        entry = read.get(path.path)
        return entry is not None and bool(path.function_changes(name) & entry["names"])
    if not via.isdisjoint(read):  # written by the text of a closure file's function, or
        return False  # by what one calls: Reach says what that one changes
    if name is None:
        return path in read
    return name in read.get(path, {}).get("names", ())


def _writes_a_module(
    written: frozenset, imports: dict, read: dict, every: Any, world: WorldFacts
) -> bool:
    """Whether a statement's writes through imported names (`written`: (root, first
    attribute)) go to a module outside the repository (`os.environ[...] = ...`, which
    SGLang's `envs` read; `torch...`), to a closure file's module or a name it holds
    through another module (`registry.TABLE` where registry imports TABLE), or to a name
    imported from SGLang's home of what the world answers. A module's own functions
    called, `logging.getLogger(...)`, change nothing here."""
    return any(_module_write(imports[root], attribute, read, every, world)
               for root, attribute in written)  # fmt: skip


def _module_write(
    target: tuple, attribute: str | None, read: dict, every: Any, world: WorldFacts
) -> bool:
    path, name = target
    if name is not None:
        return world.is_home(name, path)
    if not path.endswith(".py") or path in read:  # outside the repository, or read
        return True
    return attribute is not None and _origin(every, path, attribute)[0] in read


def _written_roots(nodes: list[ast.AST]) -> set[tuple[str, str | None]]:
    """(root name, its first attribute or None) of what the nodes write: an attribute or
    item assigned or deleted (`m.TABLE["x"] = 1`: (m, TABLE)), a mutating method
    called, `setattr`."""
    out: set[tuple[str, str | None]] = set()
    for child in nodes:
        if isinstance(child, ast.Attribute | ast.Subscript) and isinstance(
            child.ctx, ast.Store | ast.Del
        ):
            target: ast.expr | None = child
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
            target = child.func.value if child.func.attr in CHANGERS else None
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
            setter = child.func.id in ("setattr", "delattr") and child.args
            target = child.args[0] if setter else None
        else:
            target = None
        if target is not None and (found := _root_pair(target)) is not None:
            out.add(found)
    return out


def _root_pair(node: ast.expr) -> tuple[str, str | None] | None:
    """(root name, the attribute next to it) of `m.T[...]`, `vars(m)["T"]`,
    `getattr(m, "T")`."""
    attribute = None
    while True:
        if isinstance(node, ast.Attribute | ast.Subscript):
            attribute = node.attr if isinstance(node, ast.Attribute) else _item_key(node)
            node = node.value
        elif _reflects(node):
            attribute = _literal(node.args[1]) if len(node.args) > 1 else attribute
            node = node.args[0]
        else:
            return (node.id, attribute) if isinstance(node, ast.Name) else None


def _reflects(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("vars", "getattr") and bool(node.args))  # fmt: skip


def _item_key(node: ast.Subscript) -> str | None:
    """The string an item is looked up by, when the next step is a namespace's
    (`vars(m)["T"]`)."""
    return _literal(node.slice) if _reflects(node.value) else None


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


WRITERS = ("setattr", "delattr", "vars", "exec", "globals")
TYPES = ("dict", "list", "set", "object", "type")  # `dict.update(T, ...)` changes T


def _hands_over(node: ast.AST) -> bool:
    """A call that writes what it is handed: `setattr(T, ...)`, `vars(m)`, a mutating
    method of a type called on its argument (`dict.update(T, ...)`)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in WRITERS
    return (isinstance(func, ast.Attribute) and func.attr in CHANGERS
            and isinstance(func.value, ast.Name) and func.value.id in TYPES)  # fmt: skip


def _root_name(node: ast.expr) -> ast.Name | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node if isinstance(node, ast.Name) else None


def _bindings(found: list) -> dict[str, list[ast.stmt]]:
    nodes = [node for _, node in found]
    out: dict[str, list[ast.stmt]] = {}
    for position, names in names_bound_at_import(nodes):
        for name in names:
            out.setdefault(name, []).append(nodes[position])
    return out


def _import_targets(files: Any, path: str, found: list) -> dict[str, tuple[str, str | None]]:
    """Each name the file binds by importing: (the repository file, and the name imported
    from it; or the module, repository's or not, and None: the module object itself)."""
    out: dict[str, tuple[str, str | None]] = {}
    for node in _module_level([node for _, node in found]):
        if isinstance(node, ast.Import):  # any module: SGLang's own, `os` (its environ)...
            for alias in node.names:
                target = files.module_file(alias.name, path) or alias.name
                out[(alias.asname or alias.name).split(".")[0]] = (target, None)
        elif isinstance(node, ast.ImportFrom):
            source = files.module_file(node.module or "", path, node.level)
            for alias in node.names:
                module = files.module_file(f"{node.module}.{alias.name}" if node.module
                                           else alias.name, path, node.level)  # fmt: skip
                if module is not None:
                    out[alias.asname or alias.name] = (module, None)
                elif source is not None:
                    out[alias.asname or alias.name] = (source, alias.name)
    return out


def _read(closures: list) -> dict[str, dict[str, set]]:
    """What the closures run, by file: the lines of their statements, the names those
    bind."""
    out: dict[str, dict[str, set]] = {}
    for closure in closures:
        for path in closure.files:
            nodes = list(closure.nodes_of(path))
            entry = out.setdefault(path, {"lines": set(), "names": set()})
            entry["lines"].update(n.lineno for n in nodes)
            entry["names"].update(n for _, names in names_bound_at_import(nodes) for n in names)
    return out


def _files_of(files: Any, closures: list) -> list[str]:
    """The closures' files and the `__init__.py` of every package above them."""
    out: dict[str, None] = {}
    for closure in closures:
        for path in closure.files:
            out[path] = None
            for init in _package_inits(files, path):
                out[init] = None
    return list(out)


def _package_inits(files: Any, path: str) -> Iterator[str]:
    directory = posixpath.dirname(path)
    while directory:
        init = f"{directory}/__init__.py"
        if init != path and files.exists(init):
            yield init
        directory = posixpath.dirname(directory)


def _imported(files: Any, path: str, found: list, texts: list[str], world: WorldFacts) -> set[str]:
    """Repository files the file's imports name that run when SGLang imports it: at module
    level, in a class's body, in a function the module level calls, or as
    `importlib.import_module("m")`. Not SGLang's homes of what the world answers: those
    are compared as definitions."""
    out: set[str] = set()
    for module, level, names in _imports(found, texts):
        target = files.module_file(module, path, level)
        if target is not None and target != path and not _all_home(names, target, world):
            out.add(target)
            out.update(init for init in _package_inits(files, target) if init != path)
    return out


def _all_home(names: list[str], path: str, world: WorldFacts) -> bool:
    return bool(names) and all(world.is_home(name, path) for name in names)


def _imports(found: list, texts: list[str]) -> Iterator[tuple[str, int, list[str]]]:
    """(module, level, names) of each import the statements run at import time (a lambda
    they call included), and in the file's functions and classes they read then (called,
    made, decorating: each may run), and in those these read, and so on. The text of a
    statement tells, unparsed, whether it can hold an import or name such a function."""
    pairs = [(node, text) for (_, node), text in zip(found, texts, strict=True)]
    defs = {node.name: node for node, _ in pairs if isinstance(node, DEFINITIONS)}
    reaching = _reaching({node.name: text for node, text in pairs
                          if isinstance(node, DEFINITIONS)})  # fmt: skip
    todo: set[str] = set()
    for node, text in pairs:
        if "import_module" in text or "__import__" in text:  # a call that imports: anywhere
            for child in _run_nodes(node):
                yield from _import_of(child)
        elif "import" in text:  # an import statement: among the statements that run
            for child in _load_statements(node):
                yield from _import_of(child)
        if reaching and not reaching.isdisjoint(_WORD.findall(text)):
            todo |= _names_in(_run_nodes(node)) & reaching
    done: set[str] = set()
    while todo:
        name = min(todo)
        todo.discard(name)
        done.add(name)
        nodes = _every_node(defs[name])
        for child in nodes:
            yield from _import_of(child)
        todo |= (_names_in(nodes) & reaching) - done


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a name, as the text spells it (unparsed)


def _reaching(texts: dict[str, str]) -> set[str]:
    """The file's functions and classes (by name: their text) that hold an import, or name
    one that does (by the names their text spells: a superset)."""
    found = {name for name, text in texts.items() if "import" in text}
    words = {name: set(_WORD.findall(text)) for name, text in texts.items() if name not in found}
    while True:
        more = {name for name, said in words.items()
                if name not in found and not found.isdisjoint(said)}  # fmt: skip
        if not more:
            return found
        found |= more


BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)  # what a block holds


def _load_statements(node: ast.stmt, classes: bool = True) -> Iterator[ast.AST]:
    """The statement and those inside it that run at import (blocks, and with `classes`
    classes' bodies; never functions' bodies): where an import statement can stand."""
    stack: list[ast.AST] = [node]
    closed = (ast.FunctionDef, ast.AsyncFunctionDef) if classes else DEFINITIONS
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, closed):
            continue
        for field in current._fields:
            value = getattr(current, field, None)
            if type(value) is list:
                stack.extend(v for v in value if isinstance(v, BLOCKS))


def _run_nodes(node: ast.stmt) -> list[ast.AST]:
    """The nodes of a top-level statement that run at import (`load_time_nodes`), and the
    bodies of the lambdas among them (which the statement may call)."""
    out = []
    for child in load_time_nodes(node):
        out.append(child)
        if isinstance(child, ast.Lambda):
            out.extend(ast.walk(child.body))
    return out


def _loaded(nodes) -> set[str]:
    return {c.id for c in nodes if isinstance(c, ast.Name) and isinstance(c.ctx, ast.Load)}


def _names_in(nodes) -> set[str]:
    return {child.id for child in nodes if isinstance(child, ast.Name)}


def _imports_in(node: ast.AST) -> Iterator[tuple[str, int, list[str]]]:
    """(module, level, names) of each import anywhere in `node`."""
    for child in _every_node(node):
        yield from _import_of(child)


def _every_node(node: ast.AST) -> list[ast.AST]:
    """Every node of the tree (as `ast.walk`, in one list, with no generator per node)."""
    out, at, tree = [node], 0, ast.AST
    while at < len(out):
        current = out[at]
        at += 1
        for field in current._fields:
            value = getattr(current, field, None)
            if type(value) is list:
                out.extend(v for v in value if isinstance(v, tree))
            elif isinstance(value, tree):
                out.append(value)
    return out


def _import_of(node: ast.AST) -> Iterator[tuple[str, int, list[str]]]:
    if isinstance(node, ast.Import):
        yield from ((alias.name, 0, []) for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        yield node.module or "", node.level, [a.name for a in node.names]
        for alias in node.names:  # `from pkg import module`: the module too
            module = f"{node.module}.{alias.name}" if node.module else alias.name
            yield module, node.level, []
    elif isinstance(node, ast.Call) and (named := _import_call(node)) is not None:
        yield named, 0, []


IMPORTERS = ("import_module", "__import__")


def _import_call(call: ast.Call) -> str | None:
    """The module `importlib.import_module("m")` (or `__import__("m")`) imports, when its
    arguments say it (a relative name with its package too); None otherwise."""
    name = _callee(call)
    constants = [a.value for a in call.args[:2] if isinstance(a, ast.Constant)]
    if name not in IMPORTERS or not constants or not isinstance(constants[0], str):
        return None
    module = constants[0]
    if not module.startswith("."):
        return module
    package = constants[1] if len(constants) == 2 and name == "import_module" else None
    if not isinstance(package, str):
        return None
    try:
        return importlib.util.resolve_name(module, package)
    except (ImportError, ValueError):
        return None


# modules whose functions import or run one; and the parts of them that only read metadata
IMPORT_MACHINERY = ("importlib", "runpy", "pkgutil")
READ_ONLY_MACHINERY = ("metadata",)


def _importers(found: list) -> frozenset[str]:
    """The names the file binds to the import machinery (`import importlib`, `from
    importlib import import_module as _im`, `import runpy`)."""
    out: set[str] = set()
    for node in _module_level([node for _, node in found]):
        if isinstance(node, ast.Import):
            out.update((a.asname or a.name).split(".")[0] for a in node.names
                       if a.name.split(".")[0] in IMPORT_MACHINERY)  # fmt: skip
        elif isinstance(node, ast.ImportFrom) and not node.level and _machinery(node.module):
            out.update(a.asname or a.name for a in node.names)
    return frozenset(out)


def _machinery(module: str | None) -> bool:
    return bool(module) and module.split(".")[0] in IMPORT_MACHINERY


def _imports_at_run_time(node: ast.stmt, importers: frozenset[str]) -> bool:
    """Whether the statement, as it runs at import, may import (or run) a module it does
    not name plainly: `import_module(name)`, the machinery under another name (`_im(...)`,
    `runpy.run_module`, `getattr(importlib, ...)`): what runs then cannot be read. A call
    that names its module (`importlib.import_module("m")`) is an import, followed."""
    nodes = _run_nodes(node)
    plain = {id(_root_name(child.func)) for child in nodes
             if isinstance(child, ast.Call) and _import_call(child) is not None}  # fmt: skip
    plain |= {id(child.value) for child in nodes  # `importlib.metadata.version("x")`
              if isinstance(child, ast.Attribute)
              and child.attr in READ_ONLY_MACHINERY}  # fmt: skip
    for child in nodes:
        if isinstance(child, ast.Call) and _callee(child) in IMPORTERS:
            if _import_call(child) is None:
                return True
        elif (isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load)
              and child.id in importers and id(child) not in plain):  # fmt: skip
            return True
    return False


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _module_level(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The statements that run at import and bind module names: inside top-level `if`,
    `try`, `with` and loops too, not in a class's body."""
    for node in body:
        yield from _load_statements(node, classes=False)


def _statements(versions: Any, files: Any, path: str) -> tuple[list, list[str], str]:
    """(file line, node) of each top-level statement of the file, the text of the piece
    holding each, and why it could not be read, if so (none: no such file)."""
    try:
        layout = versions.front.sources.layout_of(files, path)
    except Unevaluable as exc:  # past the bounds, does not parse: SGLang may import it
        return [], [], str(exc)
    if layout is None:
        return [], [], ""
    pairs = [((offset + node.lineno, node), piece.text)
             for piece, offset in zip(layout.pieces, layout.lines, strict=True)
             for node in piece.nodes]  # fmt: skip
    return [pair for pair, _ in pairs], [text for _, text in pairs], ""


def _binds_only(node: ast.stmt) -> bool:
    """A statement that can only bind names at import: an import, a docstring, `pass`, a
    def with no decorator, and no call in its defaults or annotations."""
    if isinstance(node, ast.Import | ast.ImportFrom | ast.Pass):
        return True
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Constant)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.decorator_list:
        return not any(isinstance(n, ast.Call | ast.NamedExpr)
                       for n in load_time_nodes(node) if n is not node)  # fmt: skip
    return False


def _spot(side: str, path: str, line: int, node: ast.stmt, world: WorldFacts) -> BlindSpot:
    text = ast.unparse(node).splitlines()[0][:200]
    hint = HINT.format(project=world.display)
    return BlindSpot(side, path, line, text, MODULE_LEVEL, NEVER_RUN, hint)
