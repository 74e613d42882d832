"""Outcome tables by content: each distinct closure is evaluated once.

A revision's outcomes depend only on its closure (see `harness.closure.extract`), so
they are looked up by file blob (same text: same outcomes), then by closure
digest in memory and on disk, and only then evaluated. A history of 1,000
commits in which the function changed five times costs five evaluations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar

from harness import gitio
from harness.closure.defaults import NO_DEFAULTS, Defaults, class_defaults, input_defaults
from harness.closure.extract import (
    Closure,
    Pipeline,
    ViewClass,
    extract_closure,
    extract_pipeline,
    with_defaults,
)
from harness.closure.modules import RevisionFiles
from harness.closure.order import PassOrder, pass_order
from harness.closure.pieces import Layout, SourceCache
from harness.closure.survey import REGISTER, defaults_read, registered
from harness.engine.batch import Batch, started
from harness.engine.explore import evaluation_job
from harness.engine.limits import DEFAULT_LIMITS, Limits
from harness.engine.outcome import OutcomeTable, revision_wide
from harness.engine.purity import impurity
from harness.engine.trace import Job, Trace, start_tracing
from harness.engine.world import Bound, bind
from harness.engine.worlds import world_named
from harness.errors import Absent, Unevaluable
from harness.gitcmd import Repo
from harness.matrix.model import ALL_PASSES, RUN_ORDER, Matrix
from harness.patches import PatchStream
from harness.records import evolve
from harness.scan.cache import EVERY_CELL, EXPLORED, TableCache, table_key
from harness.scan.coverage import PassCoverage, coverage, true_cells


def bind_matrix(matrix: Matrix) -> Bound:
    """The matrix's world, compiled against it (once per run, shared by every revision)."""
    return bind(world_named(matrix.world, matrix.source), matrix)


def view_class(matrix: Matrix) -> ViewClass | None:
    """Where the world says the view's methods are defined, and what it already answers."""
    world = world_named(matrix.world, matrix.source)
    if world.view_class is None:
        return None
    answered = {*world.view_attrs, *matrix.axis_names, *matrix.fields}
    return ViewClass(
        *world.view_class, frozenset(answered), world.view_functions, world.view_namespaces
    )


@dataclass(frozen=True)
class Code:
    """A revision's target as code: what tracing one cell needs."""

    closure: Closure | Pipeline
    text: str | Layout  # the target file's text, or its layout (its text made when asked)
    label: str

    @property
    def source(self) -> str:
        return self.text if isinstance(self.text, str) else self.text.source


@dataclass(frozen=True)
class State:
    """What a revision's target does: its outcome table, or why it has none."""

    key: str  # equal keys: equal tables
    table: OutcomeTable
    reason: str | None = None  # set when the revision cannot be evaluated
    line: int | None = None  # the target function's line in the file
    sha: str | None = None  # the commit it was read from (None: the working tree)
    skipped: tuple[str, ...] = ()  # pipeline mode: passes absent at this revision
    files: tuple[str, ...] = ()  # every path read to make it (found or not), the target's first
    code: Code | None = field(default=None, compare=False)  # what made it, when still held
    impure: str | None = None  # why every cell was run: the code may keep state between calls
    defaults: tuple[tuple[str, str], ...] = ()  # (field, value shown) from the view's class
    unguarded: tuple[tuple[str, str], ...] = ()  # (pass, its `if` in SGLang) run on every cell
    coverage: tuple[PassCoverage, ...] = ()  # a pipeline's passes, with the cells each runs on
    unused_guards: tuple[str, ...] = ()  # target.guards naming no pass at this revision

    @property
    def evaluable(self) -> bool:
        return self.reason is None


@dataclass(frozen=True)
class Pending:
    """A state not settled yet: its table may be in the making in a worker, and a
    commit's state is remembered by its blobs once settled (`Versions.settle`)."""

    state: State  # all but the table, while `running`
    running: Any = None  # the worker's evaluation (`.result()` is an Evaluation), if any
    sha: str | None = None
    remember: tuple | None = None  # (target blob, reader): to find the state again by blobs


Plan = State | Pending
T = TypeVar("T")

Blobs = tuple[tuple[str, "str | None"], ...]  # (path, blob id) of every file a state read
UNKNOWN = object()  # a blob id not looked up yet


class Versions:
    """The states of the matrix's target at revisions of one repository.

    A commit's state is found again without reading anything but blob ids when
    an earlier commit had the same blob for every file that state was made from.
    """

    def __init__(
        self,
        repo: Repo,
        matrix: Matrix,
        cache: TableCache | None = None,
        exhaustive: bool = False,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.repo, self.matrix, self.exhaustive = repo, matrix, exhaustive
        self.limits = limits
        self.cache = cache or TableCache(None)
        self.world = world_named(matrix.world, matrix.source)
        self.bound = bind_matrix(matrix)
        self.view = view_class(matrix)
        self.by_blob: dict[str | None, list[tuple[Blobs, State]]] = {}  # by the target's blob
        self.by_key: dict[str, OutcomeTable] = {}
        self.sources = SourceCache()  # parsed pieces and closures, for this run only
        self.evaluations = 0
        self.running: dict[str, Any] = {}  # evaluations started and not yet settled, by key
        self.pure: dict[str, bool] = {}  # closure digest -> judged pure
        self.blobs_at: dict[str, dict[str, str | None]] = {}  # commit -> blob ids of its paths
        self.guards_hold: dict[str, int] = {}  # guarded pass -> cells its guard holds on
        self.read_defaults: dict[str, tuple] = {}  # closure digest -> defaults it reads
        self.stream: PatchStream | None = None  # git's patches for a scan's commits
        self.memos: dict[str, tuple[tuple[tuple, Any], ...]] = {}  # see `texts_memo`
        self.kept = 1  # memos kept per name: a scan's last commit's (a diff's two: `sharing`)
        self.made: tuple | None = None  # (last closure, its defaults, the two as one)
        self.batch: Batch | None = None  # set: evaluations join it (see `start_evaluation`)

    def sharing(self, matrix: Matrix, exhaustive: bool = False) -> Versions:
        """Versions of another matrix of the same world, under this run's cache and limits,
        reusing what this one read of the files: their parsed pieces, the memos of what the
        files alone decide (the registered passes, the view class's defaults) and the
        purity judged of each closure. A diff split into several matrices (`--matrix
        inferred`) parses each file once, not once per matrix."""
        if matrix.world != self.matrix.world:
            raise ValueError(f"a {matrix.world} matrix cannot share a {self.matrix.world} run")
        other = Versions(self.repo, matrix, self.cache, exhaustive, self.limits)
        other.sources, other.memos, other.pure = self.sources, self.memos, self.pure
        other.kept = 2  # its base and head
        return other

    @contextmanager
    def reading_ahead(self, commits: list[gitio.Commit]) -> Iterator[None]:
        """While scanning `commits`, their layouts are made from git's patches, printed
        ahead in scan order (see `harness.patches`)."""
        with gitio.patch_stream(self.repo, commits) as self.stream:
            yield
        self.stream = None

    def files(self, sha: str | None, reader: gitio.FilesAt | None = None) -> RevisionFiles:
        """The files of a commit (None: the working tree), as extraction reads them."""
        reader = reader or gitio.FilesAt(self.repo, sha)
        target = self.matrix.target
        return RevisionFiles(reader.read, target.path, target.roots, reader.ident, reader.edit)

    def files_at(self, revision: gitio.Revision) -> RevisionFiles:
        """A revision's files: a commit's, the working tree's, or a release's members."""
        target = self.matrix.target
        files = revision.files(self.repo, target.path)
        return RevisionFiles(files.read, target.path, target.roots, files.ident, files.edit)

    def extract(self, files: RevisionFiles) -> Closure | Pipeline:
        """The target's closure (or each pass's), with the defaults the view's class
        declares; raises Absent or Unevaluable."""
        closure, defaults = self._extract(files), self.defaults(files)
        last = self.made
        if last is not None and last[0] is closure and last[1] is defaults:
            return last[2]  # a scan's commits mostly reuse the last closure as it was
        self.made = (closure, defaults, with_defaults(closure, defaults))
        return self.made[2]

    def _extract(self, files: RevisionFiles) -> Closure | Pipeline:
        target, names, hint = self.matrix.target, self.bound.names, self.matrix.edit_hint
        pipeline = partial(extract_pipeline, chosen=self.matrix.bindings)  # bound on purpose
        if target.passes in (ALL_PASSES, RUN_ORDER):
            passes = self.texts_memo("registered", files, self._registered)
            if not passes:
                raise Absent(f"no function is registered with @{REGISTER} in {target.path}")
            if target.passes == RUN_ORDER:
                order = self.texts_memo("order", files, partial(self.run_order, passes=passes))
                found = pipeline(self.sources, files, order.passes, names, hint, self.view)
                return replace(found, guarded=order.guarded)
            return pipeline(self.sources, files, passes, names, hint, self.view)
        if target.pipeline:
            return pipeline(self.sources, files, target.passes, names, hint, self.view)
        (function,) = target.passes
        return extract_closure(
            self.sources, files, function, names, hint, self.view, self.matrix.bindings
        )

    def texts_memo(
        self, name: str, files: RevisionFiles, compute: Callable[[RevisionFiles], T]
    ) -> T:
        """`compute(files)`, made again only when a file it read (or found missing) differs
        from each of the last `kept` times: a scan's commits mostly leave those files
        alone, and a diff of several matrices goes back and forth between two revisions."""
        memos = self.memos.get(name, ())
        for seen, found in memos:
            if all(files.ident(path) == ident for path, ident in seen):
                return found
        read: list[str] = []

        def record(path: str) -> str | None:
            read.append(path)
            return files.read(path)

        def ident(path: str) -> object:
            read.append(path)
            return files.ident(path)

        def edit(path: str, base: str):
            read.append(path)
            return files.edit(path, base)

        found = compute(RevisionFiles(record, files.target, files.roots, ident, edit))
        seen = tuple((path, files.ident(path)) for path in dict.fromkeys(read))
        self.memos[name] = ((seen, found), *memos[: self.kept - 1])
        return found

    def _registered(self, files: RevisionFiles) -> tuple[str, ...]:
        return tuple(registered(self.sources, files))

    def run_order(self, files: RevisionFiles, passes: tuple[str, ...]) -> PassOrder:
        """The registered `passes` in the order the world's entry point runs them."""
        try:
            return pass_order(self.sources, files, list(passes), self.world.run_entries)
        except RecursionError:
            raise Unevaluable(
                "the code that runs the passes nests its calls too deeply to follow"
            ) from None

    def defaults(self, files: RevisionFiles) -> Defaults:
        """What the view's class declares for its fields in these files (see
        `harness.closure.defaults`)."""
        return self.texts_memo("defaults", files, self._defaults)

    def _defaults(self, files: RevisionFiles) -> Defaults:
        found = class_defaults(self.sources, files, self.view) if self.view else NO_DEFAULTS
        if self.world.input_defaults is None:
            return found
        inputs = input_defaults(self.sources, files, *self.world.input_defaults)
        return replace(found, inputs=inputs) if inputs else found

    def at(self, revision: gitio.Revision) -> State:
        """The state at a revision (sha None: the working tree)."""
        return self.settle(self.start(revision))

    def at_all(self, revisions: list[gitio.Revision]) -> list[State]:
        """The states at several revisions, their evaluations run side by side (one
        worker process each)."""
        return [self.settle(plan) for plan in [self.start(r) for r in revisions]]

    def start(self, revision: gitio.Revision) -> Plan:
        """A state at `revision`, or its evaluation, started (see `settle`)."""
        if revision.kind != gitio.COMMIT:  # no commit: its files are read, no blob ids kept
            return self.plan(self.files_at(revision), revision.label)
        return self.start_commit(revision.sha, revision.label)

    def at_scanned(self, commit: gitio.Commit, parent: bool = False) -> State:
        """The state at a commit of a scan (or at its first parent), using the blob ids
        `git log` gave, when it gave them."""
        return self.settle(self.start_scanned(commit, parent))

    def start_scanned(self, commit: gitio.Commit, parent: bool = False) -> Plan:
        """`at_scanned`, started (see `settle`)."""
        sha = commit.parent if parent else commit.sha
        blob = UNKNOWN if commit.blobs is None else commit.blobs[0 if parent else 1]
        return self.start_commit(sha, sha[:10], blob, self._told(commit, parent))

    def in_flight(self) -> int:
        """Evaluations started and not yet settled."""
        return len(self.running)

    def _told(self, commit: gitio.Commit, parent: bool) -> dict[str, str | None]:
        """Blob ids of the scan's paths at the commit (or its parent) that `git log` told:
        what it saw change, and, for the rest of the scan's paths, the parent's blob
        where that is known. Nothing for a merge."""
        if commit.changes is None or commit.parent is None:
            return {}
        side = 0 if parent else 1
        told = {p: pair[side] for p, pair in commit.changes.items()}
        before = self.blobs_at.get(commit.parent, {})
        same = {p: before[p] for p in commit.watched if p in before and p not in told}
        return {**same, **told}

    def at_commit(
        self, sha: str, label: str | None = None, blob: object = UNKNOWN, known=None
    ) -> State:
        """The state at a commit (`blob`: the target's blob id there, if known; `known`:
        other paths' blob ids there)."""
        return self.settle(self.start_commit(sha, label, blob, known))

    def start_commit(
        self, sha: str, label: str | None = None, blob: object = UNKNOWN, known=None
    ) -> Plan:
        """The state at a commit, or its evaluation, started. The first answer holds the
        code it came from; the remembered one does not (a 1,000-commit history would
        otherwise keep every file's text)."""
        path, known = self.matrix.target.path, dict(known or {})

        def blob_at(p: str) -> str | None:
            return known[p] if p in known else gitio.blob_of(self.repo, sha, p)

        if blob is UNKNOWN:
            blob = blob_at(path)
        for blobs, state in self.by_blob.get(blob, ()):
            if all(blob_at(p) == b for p, b in blobs if p != path):
                remember(self.blobs_at, sha, dict(blobs))
                return state
        reader = gitio.FilesAt(self.repo, sha, {**known, path: blob}, self.stream)
        plan = self.plan(self.files(sha, reader), label or sha[:10])
        remember(self.blobs_at, sha, dict(reader.blobs))  # what it read: known before it settles
        plan = plan if isinstance(plan, Pending) else Pending(plan)
        return evolve(plan, sha=sha, remember=(blob, reader))

    def plan(self, files: RevisionFiles, label: str) -> Plan:
        """The state of these files when it is known without running anything, else a
        Pending state whose evaluation is running in a worker."""
        try:
            closure = self.extract(files)
        except (Absent, Unevaluable) as exc:
            return replace(_unevaluable(exc, self.matrix), files=files.paths_read())
        impure = self.impurity(closure)
        mode = EVERY_CELL if self.exhaustive or impure else EXPLORED
        key = table_key(self.matrix.world, self.matrix.digest, closure.digest, mode)
        running = self.running.get(key)  # in the making: no need to look on disk
        table = self.by_key.get(key)
        if table is None and running is None:
            table = self.cache.get(key, self.matrix.size)
        code = Code(closure, _target_text(files), label)
        used, skipped = files.paths_read(), closure.skipped
        state = State(
            key, table, None, closure.lineno, None, skipped, used, code, impure,
            **self.about(closure),
        )  # fmt: skip
        if table is not None:
            self.by_key[key] = table
            return state
        if running is None:
            self.evaluations += 1
            running = self.running[key] = self.start_evaluation(closure, label, bool(impure))
        return Pending(state, running)

    def about(self, closure: Closure | Pipeline) -> dict[str, Any]:
        """What reports say of the code besides its outcomes: the defaults it read and, for
        a pipeline, the passes run under an `if` the matrix does not guard, the cells
        each pass runs on, and guards naming no pass here."""
        if closure.digest not in self.read_defaults:  # a walk of every part: once per closure
            self.read_defaults[closure.digest] = defaults_read(closure, self.view)
        facts: dict[str, Any] = {"defaults": self.read_defaults[closure.digest]}
        if isinstance(closure, Pipeline):
            declared = {name for name, _ in self.matrix.target.guards}
            present = {name for name, c in closure.passes if c is not None}
            facts["unguarded"] = tuple(g for g in closure.guarded if g[0] not in declared)
            facts["coverage"] = coverage(self.matrix.size, closure, self.guard_cells)
            facts["unused_guards"] = tuple(sorted(declared - present))
        return facts

    def guard_cells(self, name: str) -> int | None:
        """The cells the matrix's guard for the pass `name` holds on (None: no guard),
        counted once per run."""
        guard = self.bound.guards.get(name)
        if guard is None:
            return None
        if name not in self.guards_hold:
            self.guards_hold[name] = true_cells(self.matrix, self.bound, guard, name)
        return self.guards_hold[name]

    def settle(self, plan: Plan) -> State:
        """The state a plan stands for, its evaluation (if any) waited for."""
        if isinstance(plan, State):
            return plan
        state = plan.state if plan.running is None else self._evaluated(plan)
        if plan.remember is not None:
            blob, reader = plan.remember
            state = evolve(state, sha=plan.sha)
            blobs = tuple(sorted(reader.blobs.items()))
            same = [*self.by_blob.pop(blob, []), (blobs, evolve(state, code=None))]
            remember(self.by_blob, blob, same[-SAME_BLOB:])
        return state

    def _evaluated(self, plan: Pending) -> State:
        key, state = plan.state.key, plan.state
        try:
            table = plan.running.result().table
        except Unevaluable as exc:  # failed while running: the reason names lines
            table = revision_wide(exc, self.matrix.size)
            used = state.files
            return State(f"unevaluable:{exc}", table, _reason(table), state.line, files=used)
        finally:
            self.running.pop(key, None)
        if key not in self.by_key:
            self.cache.put(key, table)
            self.by_key[key] = table
        return evolve(state, table=self.by_key[key])

    def impurity(self, closure: Closure | Pipeline) -> str | None:
        """Why the closure may keep state between calls (see engine.purity), judged once per
        digest: equal digests, equal code. (An impure one is judged again, for its lines.)"""
        if self.pure.get(closure.digest):
            return None
        reason = impurity(closure)
        self.pure[closure.digest] = reason is None
        return reason

    def start_evaluation(self, closure: Closure | Pipeline, label: str, impure: bool):
        """The closure's evaluation, started in a worker (`.result()` waits for it); or,
        while `batch` is set, added to that batch (see `harness.engine.batch`)."""
        matrix, bound, limits = self.matrix, self.bound, self.limits
        every = self.exhaustive or impure
        return started(evaluation_job(closure, matrix, bound, label, every, fresh=impure),
                       limits, self.batch)  # fmt: skip

    def trace(self, cells: list[tuple[Code, tuple[int, ...]]]) -> list[Trace]:
        """Each (code, cell), traced: all in one worker, under this run's limits."""
        return self.start_trace(cells)()

    def start_trace(
        self, cells: list[tuple[Code, tuple[int, ...]]], batch: Batch | None = None
    ) -> Callable[[], list[Trace]]:
        """`trace`, started in a worker (or joining `batch`); calling the answer waits for
        the traces."""
        jobs = [Job(code.closure, code.source, code.label, cell) for code, cell in cells]
        if not jobs:
            return list
        return start_tracing(jobs, self.matrix, self.bound, self.limits, batch).result

    def code_at(self, revision: gitio.Revision) -> Code | None:
        """The closure and source at `revision`, or None when it cannot be evaluated."""
        return self.code_of(self.files_at(revision), revision.label)

    def code_for(self, state: State, label: str) -> Code | None:
        """The code behind an evaluable state: held, else read again from its commit."""
        if state.code is not None or state.sha is None or not state.evaluable:
            return state.code
        return self.code_of(self.files(state.sha), label)

    def code_of(self, files: RevisionFiles, label: str) -> Code | None:
        try:
            closure = self.extract(files)
        except (Absent, Unevaluable):
            return None
        return Code(closure, _target_text(files), label)


def _target_text(files: RevisionFiles) -> str | Layout:
    """The target's text, or the layout extraction made of it (its text made only if a
    trace needs it)."""
    return files.made.get(files.target) or files.read(files.target) or ""


REMEMBERED = 4_096  # commits (and target blobs) a run remembers: memory bounded by this,
SAME_BLOB = 16  # and by the states kept per target blob, whatever the history's length


def remember(memo: dict, key: Any, value: Any) -> None:
    """`memo[key] = value`, the oldest entry dropped past REMEMBERED (a scan asks for
    its last few commits; a forgotten one is looked up again)."""
    memo[key] = value
    if len(memo) > REMEMBERED:
        del memo[next(iter(memo))]


def settled_or_not(plan: Plan) -> State:
    """What a plan already knows: every fact but, while it evaluates, the table."""
    return plan if isinstance(plan, State) else plan.state


def paths_of(*states: State) -> list[str]:
    """Every path the states were made from, each once, in order (the target's first):
    what a scan asks `git log` about."""
    return list(dict.fromkeys(path for state in states for path in state.files))


def _unevaluable(exc: Absent | Unevaluable, matrix: Matrix) -> State:
    table = revision_wide(exc, matrix.size)
    return State(f"{table.outcomes[0].kind}:{exc}", table, _reason(table))


def _reason(table: OutcomeTable) -> str:
    outcome = table.outcomes[0]
    return f"{outcome.kind}: {outcome.value}"
