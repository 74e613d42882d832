"""Outcome tables by closure: what a revision's target does, found or evaluated once.

A closure's table is keyed by its digest, the matrix and how it is run (explored,
or on every cell when the code may keep state between calls): looked up in
memory, then on disk, and only then evaluated in a worker, each key once per run.
A `State` is what a revision's target does (its table, or why it has none) with
what reports say of its code; a `Pending` one is still evaluating.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.closure.extract import Closure, Pipeline, ViewClass
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import Layout
from harness.closure.survey import defaults_read
from harness.engine.batch import Batch, started
from harness.engine.explore import evaluation_job
from harness.engine.limits import Limits
from harness.engine.outcome import OutcomeTable, revision_wide
from harness.engine.purity import impurity
from harness.engine.world import Bound
from harness.errors import Absent, Unevaluable
from harness.matrix.model import Matrix, Target
from harness.records import evolve
from harness.scan.cache import EVERY_CELL, EXPLORED, TableCache, table_key
from harness.scan.coverage import PassCoverage, coverage, true_cells


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
    impure: str | None = None  # why each call loaded the code anew: it may keep state
    defaults: tuple[tuple[str, str], ...] = ()  # (field, value shown) from the view's class
    unguarded: tuple[tuple[str, str], ...] = ()  # (pass, its `if` in SGLang) run on every cell
    coverage: tuple[PassCoverage, ...] = ()  # a pipeline's passes, with the cells each runs on
    unused_guards: tuple[str, ...] = ()  # target.guards naming no pass at this revision
    ran: str = ""  # `NAME in PATH`: the entry of `otherwise:` run here (the target's own: "")

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


def ran_entry(target: Target, closure: Closure) -> str:
    """`NAME in PATH` of the entry of `target.otherwise` the closure is of; "" for the
    target's own entry. The first entry whose file the revision has runs, so the file
    tells which."""
    for n, choice in enumerate(target.alternatives):
        if choice.path == closure.path:
            return f"{choice.passes[0]} in {choice.path}" if n else ""
    return ""


class Tables:
    """The outcome tables of one matrix's closures in one run, under its cache and limits."""

    def __init__(
        self,
        matrix: Matrix,
        bound: Bound,
        view: ViewClass | None,
        cache: TableCache,
        exhaustive: bool,
        limits: Limits,
    ) -> None:
        self.matrix, self.bound, self.view = matrix, bound, view
        self.cache, self.exhaustive, self.limits = cache, exhaustive, limits
        self.by_key: dict[str, OutcomeTable] = {}
        self.running: dict[str, Any] = {}  # evaluations started and not yet settled, by key
        self.evaluations = 0
        self.pure: dict[str, bool] = {}  # closure digest -> judged pure
        self.read_defaults: dict[str, tuple] = {}  # closure digest -> defaults it reads
        self.guards_hold: dict[str, int] = {}  # guarded pass -> cells its guard holds on
        self.batch: Batch | None = None  # set: evaluations join it (see `start_evaluation`)

    def plan(self, closure: Closure | Pipeline, files: RevisionFiles, label: str) -> Plan:
        """The state of this closure when it is known without running anything, else a
        Pending state whose evaluation is running in a worker."""
        impure = self.impurity(closure)
        mode = EVERY_CELL if self.exhaustive else EXPLORED  # (impure: explored afresh)
        key = table_key(self.matrix.world, self.matrix.digest, closure.digest, mode)
        running = self.running.get(key)  # in the making: no need to look on disk
        table = self.by_key.get(key)
        if table is None and running is None:
            table = self.cache.get(key, self.matrix.size)
        code = Code(closure, target_text(files, closure), label)
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
        if self.matrix.target.otherwise and isinstance(closure, Closure):
            facts["ran"] = ran_entry(self.matrix.target, closure)
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

    def evaluated(self, plan: Pending) -> State:
        """The state of a plan whose evaluation ran, its table waited for and kept."""
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
        every = self.exhaustive
        return started(evaluation_job(closure, matrix, bound, label, every, fresh=impure),
                       limits, self.batch)  # fmt: skip


def target_text(files: RevisionFiles, closure: Closure | Pipeline) -> str | Layout:
    """The text of the file the closure's target is in (an entry of `otherwise:` is in
    another than the matrix's), or the layout extraction made of it (its text made only
    if a trace needs it)."""
    return files.made.get(closure.path) or files.read(closure.path) or ""


def unevaluable(exc: Absent | Unevaluable, matrix: Matrix) -> State:
    """The state of a revision whose target cannot be extracted: every cell says why."""
    table = revision_wide(exc, matrix.size)
    return State(f"{table.outcomes[0].kind}:{exc}", table, _reason(table))


def _reason(table: OutcomeTable) -> str:
    outcome = table.outcomes[0]
    return f"{outcome.kind}: {outcome.value}"


def settled_or_not(plan: Plan) -> State:
    """What a plan already knows: every fact but, while it evaluates, the table."""
    return plan if isinstance(plan, State) else plan.state


def paths_of(*states: State) -> list[str]:
    """Every path the states were made from, each once, in order (the target's first):
    what a scan asks `git log` about."""
    return list(dict.fromkeys(path for state in states for path in state.files))
