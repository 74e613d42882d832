"""Why a rule's cells changed: the condition operands that differ between two revisions,
the ones the change itself made first.

For each summary rule, one representative cell (its first) is traced at both
revisions (`harness.engine.trace`); operands are matched by their normalized
text, and those present on one side only, or with another value, are the
rule's differences. Tracing runs on these cells only, never over the matrix.

Matching by text counts a respelled call (`is_sm100_supported()` at base,
`get_platform().is_sm100` at head) as one operand gone and one new, and an
operand one side never reached as new or gone too. So the differences are
ranked by the textual diff of the closure (`harness.scan.blind.hunks`: each
definition against its namesake at the other revision), in trace order within
a rank:
1. new code: on a changed line, in a hunk that only adds or only removes
   lines, or whose other side the other trace ran through (a respelling there
   would have been met on both sides and paired, below);
2. on a changed line that replaces lines the other side never reached: maybe a
   respelling met on one side only;
3. on unchanged lines: a value that a change elsewhere moved;
4. respellings: a one-sided operand paired with one of the other side's in the
   same hunk with the same value (the pairs that read most alike first).
The first MAX_REASONS are kept, with how many more there were and the changed
line the rule's change is at: its first reason's, when that one stands on a
changed line; else the first changed line of the code (at head when there is
one). How a reason reads is the reports' business (`harness.report.because`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.engine.branches import closures_of
from harness.engine.events import CONDITION, OPERAND, Event, Trace
from harness.engine.trace import Job, start_tracing
from harness.errors import Unevaluable
from harness.matrix.cells import first_cell
from harness.matrix.model import same_value
from harness.scan.blind import Definitions, Hunk, hunks, source_lines

MAX_REASONS = 3
MAX_EXPLAINED = 10  # rules that get a `because` (each costs two traced calls)
CHANGED, REACHED, UNCHANGED, RESPELLED = range(4)  # ranks, first shown first


@dataclass(frozen=True)
class Difference:
    base: Event | None  # None: the operand is not there (or not reached) at base
    head: Event | None

    @property
    def source(self) -> str:
        return (self.head or self.base).source


@dataclass(frozen=True)
class Place:
    """A line of one revision's file: `side` is "base" or "head"."""

    side: str
    path: str
    line: int


@dataclass(frozen=True)
class Reasons:
    """A rule's differences, ranked and cut to MAX_REASONS; how many more were found; the
    changed line its change is at (None: no code, or no line of it changed)."""

    shown: tuple[Difference, ...] = ()
    more: int = 0
    at: Place | None = None


@dataclass(frozen=True)
class Changes:
    """The hunks between two revisions' code; `path` is the target's file, where the
    traced operands stand."""

    path: str
    hunks: tuple[Hunk, ...]

    def hunk_at(self, side: str, line: int) -> Hunk | None:
        return next((h for h in self.hunks if h.holds(side, self.path, line)), None)

    def place_of(self, difference: Difference) -> Place | None:
        """Where the difference stands on a changed line: at head if it does there, else
        at base; None when neither of its lines changed."""
        for side, event in (("head", difference.head), ("base", difference.base)):
            if event is not None and self.hunk_at(side, event.line) is not None:
                return Place(side, self.path, event.line)
        return None

    def first(self) -> Place | None:
        """The first changed line: at head (in the target's file first), else at base."""
        for side in ("head", "base"):
            starts = [(path != self.path, path, lines.start)
                      for path, lines in (h.lines(side) for h in self.hunks) if lines]  # fmt: skip
            if starts:
                _, path, line = min(starts)
                return Place(side, path, line)
        return None


def differences(base: Trace, head: Trace) -> list[Difference]:
    """Operands whose presence or value differs, in the order the head (else base) met them."""
    before, after = _operands(base), _operands(head)
    found = []
    for key in list(after) + [k for k in before if k not in after]:
        b, h = before.get(key), after.get(key)
        if b is None or h is None or not _same(b.value, h.value):
            found.append(Difference(b, h))
    return found


def _operands(trace: Trace) -> dict[str, Event]:
    out: dict[str, Event] = {}
    for event in trace.events:
        if event.kind == OPERAND and event.key not in out:
            out[event.key] = event
    return out


def _same(a: Any, b: Any) -> bool:
    """`same_value`, for whatever a traced operand held (its `==` may raise)."""
    try:
        return bool(same_value(a, b))
    except Exception:
        return False


def reasons_of(base: Trace, head: Trace, changes: Changes) -> Reasons:
    """The differences of two traces of one cell, ranked (see the module's docstring) and
    cut to MAX_REASONS."""
    reached = {"base": _lines(base), "head": _lines(head)}
    order = ranked(differences(base, head), changes, reached)
    shown = tuple(order[:MAX_REASONS])
    at = changes.place_of(shown[0]) if shown else None
    return Reasons(shown, len(order) - len(shown), at or changes.first())


def _lines(trace: Trace) -> set[int]:
    return {e.line for e in trace.events if e.kind in (CONDITION, OPERAND)}


def ranked(
    found: list[Difference], changes: Changes, reached: dict[str, set[int]]
) -> list[Difference]:
    """New code first, then changed lines perhaps reached on one side only, then unchanged
    lines, then respellings; in trace order within each. `reached`: the lines each side's
    trace met a condition or operand on."""
    respelled = _respelled(found, changes)
    ranks = [_rank(d, n in respelled, changes, reached) for n, d in enumerate(found)]
    return [found[n] for n in sorted(range(len(found)), key=ranks.__getitem__)]


def _rank(difference: Difference, respelled: bool, changes: Changes, reached) -> int:
    place = changes.place_of(difference)
    if respelled:
        return RESPELLED
    if place is None:
        return UNCHANGED
    if difference.base is not None and difference.head is not None:
        return CHANGED  # the same operand, another value, on a changed line
    other = "base" if place.side == "head" else "head"
    path, lines = changes.hunk_at(place.side, place.line).lines(other)
    if not lines or path != changes.path or not reached[other].isdisjoint(lines):
        return CHANGED  # an insertion or deletion, or a replacement the other side ran
    return REACHED  # maybe a respelling of what the other side never reached


def _respelled(found: list[Difference], changes: Changes) -> set[int]:
    """Positions of one-sided operands paired with one of the other side's: on changed
    lines of the same hunk, with the same value, the pairs that read most alike first."""
    gone = [(n, d.base, changes.hunk_at("base", d.base.line)) for n, d in enumerate(found)
            if d.head is None]  # fmt: skip
    new = [(n, d.head, changes.hunk_at("head", d.head.line)) for n, d in enumerate(found)
           if d.base is None]  # fmt: skip
    pairs = sorted(
        (-_likeness(b.key, h.key), i, j)
        for i, b, hunk in gone
        if hunk is not None
        for j, h, other in new
        if other == hunk and _same(b.value, h.value)
    )
    paired: set[int] = set()
    for _, i, j in pairs:
        if i not in paired and j not in paired:
            paired.update((i, j))
    return paired


def _likeness(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def changes_between(base: Any, head: Any, defs: Definitions | None = None) -> Changes:
    """The hunks between two `versions.Code`s (their closures' own text; `defs`: their
    definitions, when the caller has read them, see `blind.both_definitions`)."""
    if defs is not None:
        return Changes(head.closure.path, tuple(hunks(None, None, defs)))
    texts = [_Text(code.closure, _reader(code.closure)) for code in (base, head)]
    return Changes(head.closure.path, tuple(hunks(*texts)))


@dataclass(frozen=True)
class _Text:
    target: Any
    read: Callable[[str], str | None]


def _reader(target: Any) -> Callable[[str], str | None]:
    """A path's text as far as the closure holds it: the lines of every statement drawn
    from it, at their file lines (the rest blank), which is all `blind.definitions`
    reads."""
    placed: dict[str, dict[int, str]] = {}
    for closure in closures_of(target):
        for part in closure.parts:
            statement, lines = part.statement, placed.setdefault(part.path, {})
            text = statement.piece.text
            rows = source_lines(text)[: -1 if text.endswith(("\n", "\r")) else None]
            lines.update((statement.offset + n, row) for n, row in enumerate(rows))

    def read(path: str) -> str | None:
        lines = placed.get(path)
        if not lines:
            return None
        return "\n".join(lines.get(n, "") for n in range(max(lines) + 1))

    return read


def explain_rules(versions, base, head, rules: list) -> list[Reasons]:
    """Per rule, its reasons: the operands that differ on its first cell (the first
    MAX_EXPLAINED rules are traced; the others get only the changed line).

    `base`/`head` are `versions.Code` (None when that side cannot run: no reasons).
    """
    return start_explaining(versions, base, head, rules)()


def start_explaining(
    versions, base, head, rules: list, defs: Definitions | None = None, batch=None
) -> Callable[[], list[Reasons]]:
    """`explain_rules`, its traces started in a worker (or joining `batch`, see
    `harness.engine.batch`): calling the answer waits for them. `defs`: the two sides'
    definitions, when the caller has read them."""
    if base is None or head is None:
        return lambda: [Reasons() for _ in rules]
    cells = [first_cell(rule.masks) for rule in rules[:MAX_EXPLAINED]]
    pairs = [(code, cell) for cell in cells for code in (base, head)]
    traced = start_trace(versions, pairs, batch)

    def reasons() -> list[Reasons]:
        changes = changes_between(base, head, defs)  # while the worker traces
        untraced = Reasons(at=changes.first())
        try:
            traces = traced()
        except Unevaluable:
            return [untraced for _ in rules]
        found = [reasons_of(*traces[n : n + 2], changes) for n in range(0, len(traces), 2)]
        return found + [untraced for _ in rules[len(found) :]]

    return reasons


def trace(versions: Any, cells: list[tuple[Any, tuple[int, ...]]]) -> list[Trace]:
    """Each (code, cell), traced: all in one worker, under the run's limits. `versions`:
    the run's `harness.scan.versions.Versions`; a code is a `harness.scan.tables.Code`."""
    return start_trace(versions, cells)()


def start_trace(
    versions: Any, cells: list[tuple[Any, tuple[int, ...]]], batch: Any = None
) -> Callable[[], list[Trace]]:
    """`trace`, started in a worker (or joining `batch`); calling the answer waits for
    the traces."""
    jobs = [Job(code.closure, code.source, code.label, cell) for code, cell in cells]
    if not jobs:
        return list
    return start_tracing(jobs, versions.matrix, versions.bound, versions.limits, batch).result
