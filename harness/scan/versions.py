"""Outcome tables by content: each distinct closure is evaluated once.

A revision's outcomes depend only on its closure (see `harness.closure.extract`), so
they are looked up by file blob (same text: same outcomes), then by closure
digest in memory and on disk, and only then evaluated. A history of 1,000
commits in which the function changed five times costs five evaluations.

`Versions` keeps the blob-identity index (a commit's state found again by the
blob ids of every file it was made from) and delegates the rest: extraction
to `harness.closure.front.Extractor` (its memos, the registered passes, their
run order, the view's defaults), tables and evaluation to
`harness.scan.tables.Tables`, tracing to `harness.scan.because`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from harness import gitio
from harness.closure.extract import ViewClass
from harness.closure.front import Extractor
from harness.closure.modules import RevisionFiles
from harness.engine.limits import DEFAULT_LIMITS, Limits
from harness.engine.world import Bound, bind
from harness.engine.worlds import world_named
from harness.errors import Absent, Unevaluable
from harness.gitcmd import Repo
from harness.matrix.model import Matrix
from harness.patches import PatchStream
from harness.records import evolve
from harness.scan.cache import TableCache
from harness.scan.tables import (
    Code,
    Pending,
    Plan,
    State,
    Tables,
    target_text,
    unevaluable,
)


def bind_matrix(matrix: Matrix) -> Bound:
    """The matrix's world, compiled against it (once per run, shared by every revision)."""
    return bind(world_named(matrix.world, matrix.source), matrix)


def view_class(matrix: Matrix) -> ViewClass | None:
    """Where the world says the view's methods are defined, and what it already answers."""
    world = world_named(matrix.world, matrix.source)
    facts = world.facts
    if facts.view_class is None:
        return None
    answered = {*world.view_attrs_for(matrix), *matrix.axis_names, *matrix.fields}
    return ViewClass(
        *facts.view_class,
        frozenset(answered),
        facts.view_functions,
        facts.view_namespaces,
        facts.view_names,
        facts.declarable,
        facts.fallback,
    )


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
        self.front = Extractor(matrix, self.bound.names, self.view, self.world.facts)
        self.tables = Tables(matrix, self.bound, self.view, self.cache, exhaustive, limits)
        self.by_blob: dict[str | None, list[tuple[Blobs, State]]] = {}  # by the target's blob
        self.blobs_at: dict[str, dict[str, str | None]] = {}  # commit -> blob ids of its paths
        self.stream: PatchStream | None = None  # git's patches for a scan's commits

    def sharing(self, matrix: Matrix, exhaustive: bool = False) -> Versions:
        """Versions of another matrix of the same world, under this run's cache and limits,
        reusing what this one read of the files: their parsed pieces, the memos of what the
        files alone decide (the registered passes, the view class's defaults) and the
        purity judged of each closure. A diff split into several matrices (`--matrix
        inferred`) parses each file once, not once per matrix."""
        if matrix.world != self.matrix.world:
            raise ValueError(f"a {matrix.world} matrix cannot share a {self.matrix.world} run")
        other = Versions(self.repo, matrix, self.cache, exhaustive, self.limits)
        other.front.sharing(self.front)
        other.tables.pure = self.tables.pure
        return other

    # --- the blob-identity index ---------------------------------------------------

    @contextmanager
    def reading_ahead(self, commits: list[gitio.Commit]) -> Iterator[None]:
        """While scanning `commits`, their layouts are made from git's patches, printed
        ahead in scan order (see `harness.patches`)."""
        with gitio.patch_stream(self.repo, commits) as self.stream:
            yield
        self.stream = None

    def files(self, sha: str, reader: gitio.FilesAt | None = None) -> RevisionFiles:
        """The files of a commit, as extraction reads them (a revision's, whatever its kind:
        `files_at`)."""
        reader = reader or gitio.FilesAt(self.repo, sha)
        target = self.matrix.target
        return RevisionFiles(reader.read, target.path, target.roots, reader.ident, reader.edit)

    def files_at(self, revision: gitio.Revision) -> RevisionFiles:
        """A revision's files: a commit's, the working tree's, or a release's members."""
        target = self.matrix.target
        also = tuple(path for path, _ in target.otherwise)
        files = revision.files(self.repo, target.path, also)
        return RevisionFiles(files.read, target.path, target.roots, files.ident, files.edit)

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
        return len(self.tables.running)

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
            closure = self.front.extract(files)
        except (Absent, Unevaluable) as exc:
            return replace(unevaluable(exc, self.matrix), files=files.paths_read())
        return self.tables.plan(closure, files, label)

    def settle(self, plan: Plan) -> State:
        """The state a plan stands for, its evaluation (if any) waited for."""
        if isinstance(plan, State):
            return plan
        state = plan.state if plan.running is None else self.tables.evaluated(plan)
        if plan.remember is not None:
            blob, reader = plan.remember
            state = evolve(state, sha=plan.sha)
            blobs = tuple(sorted(reader.blobs.items()))
            same = [*self.by_blob.pop(blob, []), (blobs, evolve(state, code=None))]
            remember(self.by_blob, blob, same[-SAME_BLOB:])
        return state

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
            closure = self.front.extract(files)
        except (Absent, Unevaluable):
            return None
        return Code(closure, target_text(files, closure), label)


REMEMBERED = 4_096  # commits (and target blobs) a run remembers: memory bounded by this,
SAME_BLOB = 16  # and by the states kept per target blob, whatever the history's length


def remember(memo: dict, key: Any, value: Any) -> None:
    """`memo[key] = value`, the oldest entry dropped past REMEMBERED (a scan asks for
    its last few commits; a forgotten one is looked up again)."""
    memo[key] = value
    if len(memo) > REMEMBERED:
        del memo[next(iter(memo))]
