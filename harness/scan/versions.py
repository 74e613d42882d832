"""Outcome tables by content: each distinct closure is evaluated once.

A revision's outcomes depend only on its closure (see `harness.closure.extract`), so
they are looked up by file blob (same text: same outcomes), then by closure
digest in memory and on disk, and only then evaluated. A history of 1,000
commits in which the function changed five times costs five evaluations.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import git as gitpython

from harness import gitio
from harness.closure.extract import (
    Closure,
    Pipeline,
    ViewClass,
    extract_closure,
    extract_pipeline,
)
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache
from harness.closure.survey import REGISTER, registered
from harness.engine.explore import evaluate_closure
from harness.engine.outcome import OutcomeTable, revision_wide
from harness.engine.world import Bound, bind
from harness.engine.worlds import world_named
from harness.errors import Absent, Unevaluable
from harness.matrix.model import ALL_PASSES, Matrix
from harness.scan.cache import TableCache, table_key


def bind_matrix(matrix: Matrix) -> Bound:
    """The matrix's world, compiled against it (once per run, shared by every revision)."""
    return bind(world_named(matrix.world, matrix.source), matrix)


def view_class(matrix: Matrix) -> ViewClass | None:
    """Where the world says the view's methods are defined, and what it already answers."""
    world = world_named(matrix.world, matrix.source)
    if world.view_class is None:
        return None
    answered = {*world.view_attrs, *matrix.axis_names, *matrix.fields}
    return ViewClass(*world.view_class, frozenset(answered), world.view_functions)


@dataclass(frozen=True)
class Code:
    """A revision's target as code: what tracing one cell needs."""

    closure: Closure | Pipeline
    source: str  # the target file's text
    label: str


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

    @property
    def evaluable(self) -> bool:
        return self.reason is None


Blobs = tuple[tuple[str, "str | None"], ...]  # (path, blob id) of every file a state read
UNKNOWN = object()  # a blob id not looked up yet


class Versions:
    """The states of the matrix's target at revisions of one repository.

    A commit's state is found again without reading anything but blob ids when
    an earlier commit had the same blob for every file that state was made from.
    """

    def __init__(
        self,
        repo: gitpython.Repo,
        matrix: Matrix,
        cache: TableCache | None = None,
        exhaustive: bool = False,
    ) -> None:
        self.repo, self.matrix, self.exhaustive = repo, matrix, exhaustive
        self.cache = cache or TableCache(None)
        self.bound = bind_matrix(matrix)
        self.view = view_class(matrix)
        self.by_blob: dict[str | None, list[tuple[Blobs, State]]] = {}  # by the target's blob
        self.by_key: dict[str, OutcomeTable] = {}
        self.sources = SourceCache()  # parsed pieces and closures, for this run only
        self.evaluations = 0

    def files(self, sha: str | None, reader: gitio.FilesAt | None = None) -> RevisionFiles:
        """The files of a commit (None: the working tree), as extraction reads them."""
        reader = reader or gitio.FilesAt(self.repo, sha)
        return RevisionFiles(reader.read, self.matrix.target.path, self.matrix.target.roots)

    def extract(self, files: RevisionFiles) -> Closure | Pipeline:
        """The target's closure (or each pass's); raises Absent or Unevaluable."""
        target, names, hint = self.matrix.target, self.bound.names, self.matrix.edit_hint
        if target.passes == ALL_PASSES:
            passes = tuple(registered(self.sources, files))
            if not passes:
                raise Absent(f"no function is registered with @{REGISTER} in {target.path}")
            return extract_pipeline(self.sources, files, passes, names, hint, self.view)
        if target.pipeline:
            return extract_pipeline(self.sources, files, target.passes, names, hint, self.view)
        (function,) = target.passes
        return extract_closure(self.sources, files, function, names, hint, self.view)

    def at(self, revision: gitio.Revision) -> State:
        """The state at a revision (sha None: the working tree)."""
        if revision.sha is None:
            return self.of_files(self.files(None), revision.label)
        return self.at_commit(revision.sha, revision.label)

    def at_scanned(self, commit: gitio.Commit, parent: bool = False) -> State:
        """The state at a commit of a scan (or at its first parent), using the target's
        blob id `git log` gave, when it gave one."""
        sha = commit.parent if parent else commit.sha
        blob = UNKNOWN if commit.blobs is None else commit.blobs[0 if parent else 1]
        return self.at_commit(sha, sha[:10], blob)

    def at_commit(self, sha: str, label: str | None = None, blob: object = UNKNOWN) -> State:
        """The state at a commit (`blob`: the target's blob id there, if known). The first
        answer holds the code it came from; the remembered one does not (a 1,000-commit
        history would otherwise keep every file's text)."""
        path = self.matrix.target.path
        if blob is UNKNOWN:
            blob = gitio.blob_of(self.repo, sha, path)
        for blobs, state in self.by_blob.get(blob, ()):
            if all(gitio.blob_of(self.repo, sha, p) == b for p, b in blobs if p != path):
                return state
        reader = gitio.FilesAt(self.repo, sha, {path: blob})
        state = replace(self.of_files(self.files(sha, reader), label or sha[:10]), sha=sha)
        blobs = tuple(sorted(reader.blobs.items()))
        self.by_blob.setdefault(blob, []).append((blobs, replace(state, code=None)))
        return state

    def of_files(self, files: RevisionFiles, label: str) -> State:
        try:
            closure = self.extract(files)
        except (Absent, Unevaluable) as exc:
            return replace(_unevaluable(exc, self.matrix), files=files.paths_read())
        key = table_key(self.matrix.world, self.matrix.digest, closure.digest)
        table = self.by_key.get(key) or self.cache.get(key, self.matrix.size)
        line, used = closure.lineno, files.paths_read()
        if table is None:
            self.evaluations += 1
            try:
                table = self.evaluate(closure, label)
            except Unevaluable as exc:  # failed while running: the reason names lines
                table = revision_wide(exc, self.matrix.size)
                return State(f"unevaluable:{exc}", table, _reason(table), line, files=used)
            self.cache.put(key, table)
        self.by_key[key] = table
        code = Code(closure, files.read(files.target) or "", label)
        return State(key, table, None, line, skipped=closure.skipped, files=used, code=code)

    def evaluate(self, closure: Closure | Pipeline, label: str) -> OutcomeTable:
        return evaluate_closure(closure, self.matrix, self.bound, label, self.exhaustive).table

    def code_at(self, revision: gitio.Revision) -> Code | None:
        """The closure and source at `revision`, or None when it cannot be evaluated."""
        return self.code_of(self.files(revision.sha), revision.label)

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
        return Code(closure, files.read(files.target) or "", label)


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
