"""The first commit between GOOD and BAD whose outcomes differ from GOOD's.

A binary search over the commits that touch the target file or a file the closure
draws from at GOOD or BAD, oldest first; when GOOD and BAD are releases of a
package, over the releases after GOOD up to BAD, in version order.
A commit that cannot be evaluated is skipped as `git bisect skip` does: the
search tests a neighbour instead, and if skipped commits end up next to the
first bad one, the answer is the list of candidates rather than one commit.
GOOD and BAD are held to what `harness diff` compares (`scan.diff.comparable`):
both evaluated, or a GOOD without the target against an evaluable BAD (the
search then finds where the target appeared); else it cannot tell (`CannotTell`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from harness import gitio
from harness.engine.outcome import ABSENT
from harness.errors import CannotTell, HarnessError
from harness.gitcmd import Repo
from harness.scan.because import Reasons, explain_rules
from harness.scan.compare import Comparison, any_change, compare
from harness.scan.diff import blind_spots, comparable
from harness.scan.spots import BlindSpot
from harness.scan.tables import State, paths_of, settled_or_not
from harness.scan.versions import Versions

GOOD, BAD, SKIP = "good", "bad", "skip"


@dataclass(frozen=True)
class Step:
    commit: gitio.Commit
    verdict: str
    reason: str = ""  # why a commit was skipped


@dataclass
class BisectResult:
    good: gitio.Revision
    bad: gitio.Revision
    considered: int  # commits between GOOD and BAD that touch a file the closure reads
    steps: list[Step] = field(default_factory=list)
    culprit: gitio.Commit | None = None
    candidates: list[gitio.Commit] = field(default_factory=list)
    comparison: Comparison | None = None  # what the culprit (or the first bad) changed
    because: list[Reasons] = field(default_factory=list)  # per rule
    blind: list[BlindSpot] = field(default_factory=list)  # when GOOD and BAD agree
    unseen: str | None = None  # why coverage could not be read, when it could not

    @property
    def cannot_tell(self) -> bool:
        """GOOD and BAD agree, but the matrix could not see all that changed between them."""
        return not self.found and bool(self.blind or self.unseen)

    @property
    def found(self) -> bool:
        return self.comparison is not None


class Search:
    """One bisection: verdicts by state, the search bounds, and the steps taken."""

    def __init__(
        self,
        repo: Repo,
        versions: Versions,
        where: tuple[int, ...] | None,
        on_step: Callable[[Step], None] | None = None,
    ) -> None:
        self.repo, self.versions, self.where = repo, versions, where
        self.on_step = on_step or (lambda step: None)
        self.baseline: State | None = None
        self.releases: dict[str, gitio.Revision] = {}  # release "commits", by version

    def run(self, good: gitio.Revision, bad: gitio.Revision, first_parent: bool) -> BisectResult:
        releases = gitio.RELEASE in (good.kind, bad.kind)
        ancestry = None if releases else gitio.start_is_ancestor(self.repo, good.sha, bad.sha)
        plans = [self.versions.start(good)]
        # git lists the commits while BAD is read and both evaluate, on GOOD's files
        listing = None if releases else self._start_listing(good, bad, plans, first_parent)
        plans.append(self.versions.start(bad))
        commits = [] if releases else self._commits(listing, plans)
        states = [self.versions.settle(p) for p in plans]
        if not releases:  # a wrong range is the user's error, before what cannot be told
            self._check_range(good, bad, ancestry())
        self.baseline, last = self._endpoints(good, bad, states)
        if releases:
            return self._over_releases(good, bad, last)
        result = BisectResult(good, bad, len(commits))
        if not self._differs(last):
            return self._unseen(result, [self.baseline, last])
        self._search(commits, bad, result)
        return result

    def _unseen(self, result: BisectResult, states: list[State]) -> BisectResult:
        """GOOD and BAD agree: what the matrix could not see between them (as `harness diff
        GOOD BAD` looks for it), so that "nothing changed" is said only when it looked."""
        result.blind, result.unseen = blind_spots(self.versions, result.good, result.bad, states)
        return result

    def _over_releases(self, good: gitio.Revision, bad: gitio.Revision, last: State):
        """The same search over the releases after GOOD up to BAD, in version order."""
        from harness.releases.release import releases_between  # a commit's bisect needs none

        between = releases_between(good, bad)
        self.releases = {str(r.release.version): r for r in between}
        commits = [gitio.Commit(v, None, r.date, r.release.label) for v, r in self.releases.items()]
        result = BisectResult(good, bad, len(commits))
        if not self._differs(last):
            return self._unseen(result, [self.baseline, last])
        self._search(commits, bad, result)
        return result

    def _state(self, commit: gitio.Commit) -> State:
        release = self.releases.get(commit.sha)
        return self.versions.at(release) if release else self.versions.at_scanned(commit)

    def _start_listing(self, good, bad, plans, first_parent: bool) -> gitio.Listing:
        """The commits after GOOD up to BAD that change a file the plans were read from."""
        known = paths_of(*(settled_or_not(p) for p in plans))
        paths = known or [self.versions.matrix.target.path]
        revisions = [f"^{good.sha}", bad.sha]
        return gitio.Listing(self.repo, revisions, paths, first_parent)

    def _commits(self, listing: gitio.Listing, plans) -> list[gitio.Commit]:
        """The listing's commits, listed again when BAD read a file GOOD did not."""
        known = paths_of(*(settled_or_not(p) for p in plans))
        if known and not set(known) <= set(listing.paths):
            listing.close()
            listing = gitio.Listing(self.repo, listing.revisions, known, listing.first_parent)
        return listing.commits()

    def _check_range(self, good: gitio.Revision, bad: gitio.Revision, ancestor: bool) -> None:
        if not ancestor:
            raise HarnessError(
                f"GOOD {good.label} is not an ancestor of BAD {bad.label}: "
                "swap them, or pick a GOOD commit from BAD's history"
            )
        gitio.refuse_shallow_range(self.repo, [f"^{good.sha}", bad.sha], "harness bisect")

    def _endpoints(self, good: gitio.Revision, bad: gitio.Revision, states: list) -> list[State]:
        """GOOD's and BAD's states, when they can be compared as `harness diff` compares
        them; else CannotTell, naming the end and why."""
        if comparable(*states):
            return states
        untold = [
            f"{name} {revision.label} is {state.reason}"
            for name, revision, state in zip(("GOOD", "BAD"), (good, bad), states, strict=True)
            if not state.evaluable
        ]
        raise CannotTell(
            f"{'; '.join(untold)}; no commit can be compared with that: pick GOOD and BAD "
            "where the target function runs (GOOD may predate it)"
        )

    def _differs(self, state: State) -> bool:
        if state.key == self.baseline.key:
            return False
        return any_change(self.versions.matrix, self.baseline.table, state.table, self.where)

    def _search(
        self, commits: list[gitio.Commit], bad: gitio.Revision, result: BisectResult
    ) -> None:
        lo, hi = -1, len(commits) - 1 if commits and commits[-1].sha == bad.sha else len(commits)
        skipped: set[int] = set()
        while True:
            untested = [i for i in range(lo + 1, hi) if i not in skipped]
            if not untested:
                break
            middle = min(untested, key=lambda i: (abs(2 * i - lo - hi), i))
            verdict = self._test(commits[middle], result)
            if verdict == SKIP:
                skipped.add(middle)
            elif verdict == BAD:
                hi = middle
            else:
                lo = middle
        first_bad = commits[hi] if hi < len(commits) else gitio.commit_of(self.repo, bad)
        if any(i in skipped for i in range(lo + 1, hi)):
            result.candidates = [commits[i] for i in range(lo + 1, hi)] + [first_bad]
        else:
            result.culprit = first_bad
        before = self._state(commits[lo]) if lo >= 0 else self.baseline
        after = self._state(first_bad)
        result.comparison = compare(self.versions.matrix, before.table, after.table, self.where)
        base = self.versions.code_for(before, "the last good")
        head = self.versions.code_for(after, first_bad.short)
        result.because = explain_rules(self.versions, base, head, result.comparison.rules)

    def _test(self, commit: gitio.Commit, result: BisectResult) -> str:
        step = self._verdict(commit)
        result.steps.append(step)
        self.on_step(step)
        return step.verdict

    def _verdict(self, commit: gitio.Commit) -> Step:
        """Good: GOOD's outcomes (or, like a GOOD without the target, no target either);
        bad: others, where diff would compare the two; else skipped, saying why."""
        state = self._state(commit)
        if _absent(state) and _absent(self.baseline):
            return Step(commit, GOOD)
        if not comparable(self.baseline, state):
            return Step(commit, SKIP, state.reason)
        return Step(commit, BAD if self._differs(state) else GOOD)


def _absent(state: State) -> bool:
    """A state without the target (no file, or no such function) rather than one that
    could not run."""
    return not state.evaluable and state.table.outcomes[0].kind == ABSENT


def bisect(
    repo: Repo,
    versions: Versions,
    good: gitio.Revision,
    bad: gitio.Revision,
    where: tuple[int, ...] | None = None,
    first_parent: bool = False,
    on_step: Callable[[Step], None] | None = None,
) -> BisectResult:
    return Search(repo, versions, where, on_step).run(good, bad, first_parent)
