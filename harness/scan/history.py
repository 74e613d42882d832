"""Every commit that changed outcomes, in order, with reverts recognized.

Only commits that touch the target file, or a file its closure draws from,
are considered (`git log -- PATHS`).
Each is compared with the state at its first parent; when that state cannot
be evaluated (a syntax error, say) the comparison carries on from the last
evaluable state seen. Unevaluable commits are listed as skipped, never as
changes. A change that exactly undoes an earlier reported one (the same
cells, each going back to what it was) is marked as reverting it.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain

from harness import gitio
from harness.engine.outcome import ABSENT
from harness.gitcmd import Repo
from harness.matrix.model import Matrix
from harness.scan.because import Reasons, start_explaining
from harness.scan.compare import Comparison, compare, resolved_keys
from harness.scan.diff import blind_spots
from harness.scan.spots import BlindSpot
from harness.scan.tables import State, paths_of, settled_or_not
from harness.scan.versions import Versions


@dataclass
class Change:
    commit: gitio.Commit
    comparison: Comparison
    reverts: gitio.Commit | None = None
    because: list[Reasons] = field(default_factory=list)  # per rule


@dataclass
class Skipped:
    commit: gitio.Commit
    reason: str


@dataclass
class HistoryReport:
    matrix: Matrix
    range: str
    considered: int  # commits touching a file the closure reads
    baseline: gitio.Commit | None  # the commit the scan started from, when it is in the range
    changes: list[Change] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    releases: bool = False  # the "commits" are releases of a package (their id: the version)
    start: str | None = None  # the commit the first comparison started from (a parent)
    unstarted: str | None = None  # the first commit's parent, when it cannot be evaluated
    last: tuple[gitio.Commit, str | None] | None = None  # the last one scanned, why unevaluable
    last_evaluable: gitio.Commit | None = None  # the last one scanned that could be evaluated
    blind: list[BlindSpot] = field(default_factory=list)  # between the ends, when unchanged
    unseen: str | None = None  # why coverage could not be read, when it could not

    @property
    def untold(self) -> str | None:
        """Why the range's end cannot be told: its last commit (or release) that touches
        the files cannot be evaluated, so what it does is not known."""
        if self.last is None or self.last[1] is None:
            return None
        noun = "release" if self.releases else "commit"
        return f"the range's last {noun}, {self.last[0].short}, cannot be evaluated"

    @property
    def reasons(self) -> list[str]:
        """Why it cannot tell, besides blind spots: an end of the range cannot be evaluated
        (what the first commit changed, or what the range ends with, is not known), or
        coverage could not be read."""
        start = self.unstarted and f"the range's start, {self.unstarted[:10]}, cannot be evaluated"
        return [r for r in (start, self.untold, self.unseen) if r]

    @property
    def cannot_tell(self) -> bool:
        """No commit changes outcomes, but the matrix could not see all that changed, or
        the range's end cannot be evaluated."""
        return not self.changes and bool(self.blind or self.reasons)


def history(
    repo: Repo,
    versions: Versions,
    range_text: str,
    revisions: list[str],
    where: tuple[int, ...] | None = None,
    first_parent: bool = False,
    on_commit: Callable[[int, int], None] | None = None,
    tip: gitio.Revision | None = None,
) -> HistoryReport:
    """Scan the commits of `revisions` that touch the target or a file its closure draws
    from; `on_commit(done, total)` is told after each one (a progress bar).

    The files start as those read at the range's tip; a commit whose state reads
    another file widens the set, and the scan runs again (every state it already
    made is remembered, so only the new commits cost anything). `tip`: the range's
    last revision; when no commit changed outcomes, blind spots are looked for between
    where the scan started and it (see `with_blind_spots`).
    """
    gitio.refuse_shallow_range(repo, revisions, "harness history")
    tip_plan = versions.start_commit(revisions[-1])  # its files are known before it evaluates
    paths = paths_of(settled_or_not(tip_plan)) or [versions.matrix.target.path]
    while True:
        report, read = _scan(repo, versions, range_text, revisions, where, first_parent,
                             on_commit, paths)  # fmt: skip
        if read <= set(paths):
            versions.settle(tip_plan)
            return with_blind_spots(versions, report, _ends(report, tip))
        paths += sorted(read - set(paths))


def _ends(report: HistoryReport, tip: gitio.Revision | None) -> tuple | None:
    """Where the scan started (the first listed commit's parent, when it could be
    evaluated; else the first evaluable commit) and where it ended (`tip`; the last
    evaluable commit when the last one cannot be evaluated): what a blind-spot search
    of the range compares. None: nothing to compare (no commit listed, none evaluable)."""
    first = report.start or (report.baseline.sha if report.baseline else None)
    last = report.last_evaluable
    if first is None or last is None:
        return None
    head = tip if tip is not None and not report.untold else _revision(last)
    return gitio.CommitRevision(first, first), head


def _revision(commit: gitio.Commit) -> gitio.Revision:
    return gitio.CommitRevision(commit.sha, commit.sha, commit.subject, commit.date)


def with_blind_spots(
    versions: Versions, report: HistoryReport, ends: tuple[gitio.Revision, gitio.Revision] | None
) -> HistoryReport:
    """When no commit changed outcomes, the blind spots between the range's ends (as
    `harness diff BASE TIP` finds them: changed code the matrix took one way or never,
    where a change would show in no commit's comparison), so that "no change" is said
    only where the matrix looked. (A history that found changes answers 1 either way,
    and a search costs about a diff: it is not made.)"""
    if ends is not None and not report.changes:
        report.blind, report.unseen = blind_spots(versions, *ends)
    return report


IN_FLIGHT = max(2, os.cpu_count() or 2)  # evaluations started ahead of the commit compared
AHEAD = 256  # commits started ahead of the one compared (each holds its code until settled)


def _scan(repo, versions, range_text, revisions, where, first_parent, on_commit, paths):
    """One scan over the commits touching `paths`, streamed from git as it lists them:
    what is held is the commits in flight, the changes found and the commits skipped
    (what the report shows), never the list of every commit: memory does not grow with
    the history's length. Returns the report and the paths the states read."""
    listing = gitio.Listing(repo, revisions, paths, first_parent)
    try:
        report = HistoryReport(versions.matrix, range_text, 0, None)
        read = _walk(versions, listing, report, where, _progress(listing, on_commit))
    finally:
        listing.close()
    return report, read


def _progress(listing: gitio.Listing, on_commit: Callable | None) -> Callable[[int], None]:
    """`on_commit(done, total)` as the scan tells it `done`; git is asked apart how many
    commits there are only when `on_commit` shows it (a progress bar on a terminal)."""
    if on_commit is None:
        return lambda done: None
    total = listing.count() if getattr(on_commit, "enabled", True) else 0
    return lambda done: on_commit(done, max(total, done))


def _walk(versions, listing, report, where, told) -> set[str]:
    """Compare each listed commit's state with the one before it, into `report`; returns
    the paths the states read."""
    commits = listing.stream()
    first = next(commits, None)
    last, read = _start(versions, first, report), set()
    commits = chain([first] if first else [], commits)
    matrix, previous = versions.matrix, (None, None)
    explaining: deque = deque()  # (change, its `because` when its traces are done)
    for done, (commit, state) in enumerate(_states_ahead(versions, listing, commits), 1):
        read.update(state.files)
        report.considered = done
        told(done)
        parent_state = previous[1] if commit.parent == previous[0] else None
        previous = (commit.sha, state)
        report.last = (commit, state.reason)
        if not state.evaluable:
            report.skipped.append(Skipped(commit, state.reason))
            continue
        report.last_evaluable = commit
        before = _before(versions, commit, last, parent_state)
        if before is None:
            report.baseline = commit
        elif before.key != state.key:
            change = record_change(
                report, commit, compare(matrix, before.table, state.table, where)
            )
            if change:  # traced in a worker while the scan goes on
                explaining.append((change, start_because(versions, before, state, change)))
                while len(explaining) > IN_FLIGHT:
                    _explained(explaining.popleft())
        last = state
    for pending in explaining:
        _explained(pending)
    return read


def _explained(pending: tuple[Change, Callable[[], list]]) -> None:
    change, reasons = pending
    change.because = reasons()


def _states_ahead(versions: Versions, listing: gitio.Listing, commits: Iterator[gitio.Commit]):
    """(commit, its state) in order, each commit's state started while earlier ones are
    still evaluating (at most AHEAD commits and IN_FLIGHT evaluations at once), so
    workers overlap with reading and parsing the next commits; git's patches for the
    listing's commits are read ahead meanwhile."""
    ahead: deque = deque()
    with versions.reading_ahead(listing):
        for commit in commits:
            ahead.append((commit, versions.start_scanned(commit)))
            while len(ahead) > AHEAD or (len(ahead) > 1 and versions.in_flight() > IN_FLIGHT):
                oldest, plan = ahead.popleft()
                yield oldest, versions.settle(plan)
        while ahead:
            oldest, plan = ahead.popleft()
            yield oldest, versions.settle(plan)


def _start(versions: Versions, first: gitio.Commit | None, report: HistoryReport) -> State | None:
    """The state the range starts from: the first commit's parent, if it can be evaluated
    (`report` is told which commit it is, or that it cannot be evaluated; a parent without
    the target is where the function began, not a state that cannot be told)."""
    if first is None or first.parent is None:
        return None
    state = versions.at_scanned(first, parent=True)
    if state.evaluable:
        report.start = first.parent
        return state
    if not (state.reason or "").startswith(f"{ABSENT}:"):
        report.unstarted = first.parent
    return None


def _before(
    versions: Versions, commit: gitio.Commit, last: State | None, parent: State | None
) -> State | None:
    """The state a commit is compared with: its first parent's (`parent`, when the scan
    just made it), else the last evaluable one."""
    if commit.parent is not None:
        state = parent or versions.at_scanned(commit, parent=True)
        if state.evaluable:
            return state
    return last


def because_of(versions: Versions, before: State, after: State, change: Change):
    return start_because(versions, before, after, change)()


def start_because(versions: Versions, before: State, after: State, change: Change):
    """`because_of`, its traces started in a worker: calling the answer waits for them."""
    base = versions.code_for(before, "the commit before")
    head = versions.code_for(after, change.commit.short)
    return start_explaining(versions, base, head, change.comparison.rules)


def record_change(
    report: HistoryReport, commit: gitio.Commit, comparison: Comparison
) -> Change | None:
    if not comparison.changed:
        return None
    change = Change(commit, comparison)
    reverted = {c.reverts.sha for c in report.changes if c.reverts}
    for earlier in reversed(report.changes):
        if earlier.commit.sha not in reverted and undoes(report.matrix, comparison, earlier):
            change.reverts = earlier.commit
            break
    report.changes.append(change)
    return change


def undoes(matrix: Matrix, later: Comparison, earlier: Change) -> bool:
    """Whether `later` takes exactly `earlier`'s cells back to what they were before it."""
    first = earlier.comparison
    if later.indices != first.indices:
        return False
    return resolved_keys(matrix, later, "base") == resolved_keys(
        matrix, first, "head"
    ) and resolved_keys(matrix, later, "head") == resolved_keys(matrix, first, "base")
