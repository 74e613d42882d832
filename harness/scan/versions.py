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
from harness.closure.extract import Closure, Pipeline, extract_closure, extract_pipeline
from harness.closure.pieces import SourceCache
from harness.engine.explore import evaluate_closure
from harness.engine.outcome import OutcomeTable, revision_wide
from harness.engine.world import Bound, bind
from harness.engine.worlds import world_named
from harness.errors import Absent, Unevaluable
from harness.matrix.model import Matrix
from harness.scan.cache import TableCache, table_key


def bind_matrix(matrix: Matrix) -> Bound:
    """The matrix's world, compiled against it (once per run, shared by every revision)."""
    return bind(world_named(matrix.world, matrix.source), matrix)


@dataclass(frozen=True)
class Code:
    """A revision's target as code: what tracing one cell needs."""

    closure: Closure | Pipeline
    source: str
    label: str


@dataclass(frozen=True)
class State:
    """What a revision's target does: its outcome table, or why it has none."""

    key: str  # equal keys: equal tables
    table: OutcomeTable
    reason: str | None = None  # set when the revision cannot be evaluated
    line: int | None = None  # the target function's line in the file
    blob: str | None = None  # the file's blob, when read from a commit
    skipped: tuple[str, ...] = ()  # pipeline mode: passes absent at this revision
    code: Code | None = field(default=None, compare=False)  # what made it, when still held

    @property
    def evaluable(self) -> bool:
        return self.reason is None


class Versions:
    """The states of the matrix's target at revisions of one repository."""

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
        self.by_blob: dict[str | None, State] = {}
        self.by_key: dict[str, OutcomeTable] = {}
        self.sources = SourceCache()  # parsed pieces and closures, for this run only
        self.evaluations = 0

    def extract(self, source: str | None) -> Closure | Pipeline:
        """The target's closure (or each pass's) in `source`; raises Absent or Unevaluable."""
        target, matrix = self.matrix.target, self.matrix
        if source is None:
            raise Absent(f"{target.path} does not exist")
        names, hint = self.bound.names, matrix.edit_hint
        if target.pipeline:
            return extract_pipeline(self.sources, source, target.path, target.passes, names, hint)
        (function,) = target.passes
        return extract_closure(self.sources, source, target.path, function, names, hint)

    def at(self, revision: gitio.Revision) -> State:
        """The state at a revision (sha None: the working tree)."""
        path = self.matrix.target.path
        if revision.sha is None:
            return self.of_source(gitio.read_file(self.repo, revision, path), revision.label)
        return self.at_commit(revision.sha, revision.label)

    def at_commit(self, sha: str, label: str | None = None) -> State:
        return self.at_blob(
            gitio.blob_of(self.repo, sha, self.matrix.target.path), label or sha[:10]
        )

    def at_scanned(self, commit: gitio.Commit, parent: bool = False) -> State:
        """The state at a commit of a scan (or at its first parent), by the blob ids
        `git log` gave, when it gave them."""
        if commit.blobs is not None:
            return self.at_blob(commit.blobs[0 if parent else 1], commit.short)
        return self.at_commit(commit.parent if parent else commit.sha)

    def at_blob(self, blob: str | None, label: str) -> State:
        """The state of the file whose blob is `blob` (None: no such file).

        The first answer holds the code it came from; the remembered one does not
        (a 1,000-commit history would otherwise keep every file's text).
        """
        if blob in self.by_blob:
            return self.by_blob[blob]
        source = None if blob is None else gitio.read_blob(self.repo, blob)
        state = replace(self.of_source(source, label), blob=blob)
        self.by_blob[blob] = replace(state, code=None)
        return state

    def of_source(self, source: str | None, label: str) -> State:
        try:
            closure = self.extract(source)
        except (Absent, Unevaluable) as exc:
            return _unevaluable(exc, self.matrix)
        key = table_key(self.matrix.world, self.matrix.digest, closure.digest)
        table = self.by_key.get(key) or self.cache.get(key, self.matrix.size)
        if table is None:
            self.evaluations += 1
            try:
                table = self.evaluate(closure, label)
            except Unevaluable as exc:  # failed while running: the reason names lines
                table = revision_wide(exc, self.matrix.size)
                return State(f"unevaluable:{label}", table, _reason(table), closure.lineno)
            self.cache.put(key, table)
        self.by_key[key] = table
        code = Code(closure, source, label)
        return State(key, table, None, closure.lineno, skipped=closure.skipped, code=code)

    def evaluate(self, closure: Closure | Pipeline, label: str) -> OutcomeTable:
        return evaluate_closure(closure, self.matrix, self.bound, label, self.exhaustive).table

    def code_at(self, revision: gitio.Revision) -> Code | None:
        """The closure and source at `revision`, or None when it cannot be evaluated."""
        source = gitio.read_file(self.repo, revision, self.matrix.target.path)
        return self.code_of(source, revision.label)

    def code_for(self, state: State, label: str) -> Code | None:
        """The code behind an evaluable state: held, else read again from its blob."""
        if state.code is not None or state.blob is None or not state.evaluable:
            return state.code
        return self.code_of(gitio.read_blob(self.repo, state.blob), label)

    def code_of(self, source: str | None, label: str) -> Code | None:
        try:
            closure = self.extract(source)
        except (Absent, Unevaluable):
            return None
        return Code(closure, source, label)


def _unevaluable(exc: Absent | Unevaluable, matrix: Matrix) -> State:
    table = revision_wide(exc, matrix.size)
    return State(f"{table.outcomes[0].kind}:{exc}", table, _reason(table))


def _reason(table: OutcomeTable) -> str:
    outcome = table.outcomes[0]
    return f"{outcome.kind}: {outcome.value}"
