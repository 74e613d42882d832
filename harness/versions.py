"""Outcome tables by content: each distinct closure is evaluated once.

A revision's outcomes depend only on its closure (see `harness.extract`), so
they are looked up by file blob (same text: same outcomes), then by closure
digest in memory and on disk, and only then evaluated. A history of 1,000
commits in which the function changed five times costs five evaluations.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import git as gitpython

from harness import git
from harness.cache import TableCache, table_key
from harness.errors import Absent, Unevaluable
from harness.evaluate import OutcomeTable, evaluate_closure, extract, revision_wide
from harness.extract import Closure, Pipeline
from harness.matrix import Matrix
from harness.world import Bound, bind
from harness.worlds import world_named


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
        self.evaluations = 0

    def at(self, revision: git.Revision) -> State:
        """The state at a revision (sha None: the working tree)."""
        path = self.matrix.target.path
        if revision.sha is None:
            return self.of_source(git.read_file(self.repo, revision, path), revision.label)
        return self.at_commit(revision.sha, revision.label)

    def at_commit(self, sha: str, label: str | None = None) -> State:
        return self.at_blob(git.blob_of(self.repo, sha, self.matrix.target.path), label or sha[:10])

    def at_scanned(self, commit: git.Commit, parent: bool = False) -> State:
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
        source = None if blob is None else git.read_blob(self.repo, blob)
        state = replace(self.of_source(source, label), blob=blob)
        self.by_blob[blob] = replace(state, code=None)
        return state

    def of_source(self, source: str | None, label: str) -> State:
        try:
            closure = extract(source, self.matrix, self.bound)
        except (Absent, Unevaluable) as exc:
            return _unevaluable(exc, self.matrix)
        key = table_key(self.matrix.world, self.matrix.digest, closure.digest)
        table = self.by_key.get(key) or self.cache.get(key, self.matrix.size)
        if table is None:
            self.evaluations += 1
            evaluation = evaluate_closure(closure, self.matrix, self.bound, label, self.exhaustive)
            if evaluation.closure is None:  # failed while running: the reason names lines
                reason = _reason(evaluation.table)
                return State(f"unevaluable:{label}", evaluation.table, reason, closure.lineno)
            table = evaluation.table
            self.cache.put(key, table)
        self.by_key[key] = table
        code = Code(closure, source, label)
        return State(key, table, None, closure.lineno, skipped=closure.skipped, code=code)


def code_at(versions: Versions, revision: git.Revision) -> Code | None:
    """The closure and source at `revision`, or None when it cannot be evaluated."""
    source = git.read_file(versions.repo, revision, versions.matrix.target.path)
    return code_of(versions, source, revision.label)


def code_for(versions: Versions, state: State, label: str) -> Code | None:
    """The code behind an evaluable state: held, else read again from its blob."""
    if state.code is not None or state.blob is None or not state.evaluable:
        return state.code
    return code_of(versions, git.read_blob(versions.repo, state.blob), label)


def code_of(versions: Versions, source: str | None, label: str) -> Code | None:
    try:
        closure = extract(source, versions.matrix, versions.bound)
    except (Absent, Unevaluable):
        return None
    return Code(closure, source, label)


def _unevaluable(exc: Absent | Unevaluable, matrix: Matrix) -> State:
    table = revision_wide(exc, matrix).table
    return State(f"{table.outcomes[0].kind}:{exc}", table, _reason(table))


def _reason(table: OutcomeTable) -> str:
    outcome = table.outcomes[0]
    return f"{outcome.kind}: {outcome.value}"
