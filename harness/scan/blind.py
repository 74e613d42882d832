"""Blind spots: changed code the matrix did not take every way, so a diff cannot see it.

A line that differs between the two revisions (each top-level definition the
closure draws on, from any file, diffed as text against its namesake at the
other revision: a moved function changes nothing, a new one is all new) asks
something of the coverage of its side: a line inside a condition asks that
each innermost condition on it was evaluated both true and false on the
matrix; any other line of a function asks that its block was entered (a
function called, an `if`'s body or `else` run, an `except` or `case` taken).
Each ask the side's coverage (`OutcomeTable.branches`) does not meet is a blind
spot: a change there may alter outcomes on configurations the matrix does not
hold. Then each blind spot is asked of the code (`harness.engine.whatif`):
which input, changed on a cell where it was reached, takes it the other way.
Module-level code runs once, not per cell: its changes show in the outcomes or
nowhere, and ask nothing here (the lambdas it defines are definitions).
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.engine.branches import (
    BLOCK,
    BOTH,
    CALL,
    FALSE,
    TRUE,
    Site,
    closures_of,
    sites_of,
)
from harness.engine.sandbox import load_order
from harness.engine.whatif import ANY, Answer, Question, start_asking
from harness.matrix.model import Matrix, format_value
from harness.scan.spots import BlindSpot

MAX_SPOTS = 20  # blind spots a side's search looks into (the rest are listed, unexplained)

SEEN = {0: "never evaluated", TRUE: "only true", FALSE: "only false"}


@dataclass(frozen=True)
class Side:
    """One revision's code and what its evaluation saw."""

    name: str  # "base" or "head"
    target: Any  # Closure or Pipeline; None: this side could not be evaluated
    branches: bytes
    reached: tuple[int, ...]
    read: Callable[[str], str | None]  # a path's text at this revision
    label: str


def changed_blocks(before: list[str], after: list[str]) -> list[tuple[range, range]]:
    """(lines of `before`, lines of `after`), 0-based, of each stretch that differs: a
    replacement, an insertion (`before`'s range empty) or a deletion (`after`'s empty)."""
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return [(range(a0, a1), range(b0, b1))
            for op, a0, a1, b0, b1 in matcher.get_opcodes() if op != "equal"]  # fmt: skip


def changed_lines(before: list[str], after: list[str]) -> set[int]:
    """The 0-based lines of `after` that are new or replacing, against `before`."""
    return {n for _, lines in changed_blocks(before, after) for n in lines}


@dataclass(frozen=True)
class Definition:
    """A top-level function or class of a closure, with its text at that revision."""

    name: str
    path: str
    line: int  # its first line (the `def`), 1-based
    lines: tuple[str, ...]


def definitions(target: Any, read: Callable[[str], str | None]) -> list[Definition]:
    """The top-level functions and classes a closure or pipeline draws on, each once, with
    their lines as `read` (a path's text at that revision) gives them."""
    texts: dict[str, list[str]] = {}
    found: dict[tuple[str, str], Definition] = {}
    for closure in closures_of(target):
        for path in load_order(closure):
            for node in closure.nodes_of(path):
                name = _defined(node)
                if name is None:
                    continue
                if path not in texts:
                    texts[path] = source_lines(read(path) or "")
                lines = tuple(texts[path][node.lineno - 1 : node.end_lineno])
                found[(path, name)] = Definition(name, path, node.lineno, lines)
    return list(found.values())


def _defined(node: ast.stmt) -> str | None:
    """The name a top-level statement defines code under: a function or class, or an
    assignment of a lambda (`_is = lambda view: ...`); None for any other statement."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    lambdas = any(isinstance(n, ast.Lambda) for n in ast.walk(node))
    targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
    first = targets[0]
    return first.id if lambdas and isinstance(first, ast.Name) else None


def source_lines(text: str) -> list[str]:
    """The lines as Python numbers them (`str.splitlines` also breaks at a form feed or a
    U+2028 inside a line, which would shift every line after it)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


Definitions = dict[str, list[Definition]]  # "base", "head" -> the definitions of its code


def both_definitions(base: Any, head: Any) -> Definitions:
    """The definitions of two revisions' code, each given as anything with `.target` (a
    closure or pipeline, None: nothing there) and `.read` (a path's text there): read once
    for a diff, which both its blind spots and its rules' reasons (`hunks`) compare."""
    return {name: definitions(s.target, s.read) if s.target is not None else []
            for name, s in (("base", base), ("head", head))}  # fmt: skip


def changed_by_side(
    base: Side, head: Side, defs: Definitions | None = None
) -> dict[str, dict[str, set[int]]]:
    """{side: {path: changed lines}}: each definition against the other side's of the same
    name (in the same file if it is there), so moving a function changes nothing; one the
    other side does not have is all new (or all gone). `defs`: `both_definitions(base,
    head)`, when the caller has them."""
    defs = defs or both_definitions(base, head)
    out: dict[str, dict[str, set[int]]] = {"base": {}, "head": {}}
    for name, other in (("base", "head"), ("head", "base")):
        for definition in defs[name]:
            twin = _twin(definition, defs[other])
            before = twin.lines if twin is not None else ()
            lines = changed_lines(list(before), list(definition.lines))
            if lines:
                place = out[name].setdefault(definition.path, set())
                place.update(definition.line + n for n in lines)
    return out


def _twin(definition: Definition, others: list[Definition]) -> Definition | None:
    named = [d for d in others if d.name == definition.name]
    same_file = [d for d in named if d.path == definition.path]
    return (same_file or named or [None])[0]


@dataclass(frozen=True)
class Hunk:
    """A stretch of a definition that differs from its namesake at the other revision:
    `base` lines of `base_path` replaced by `head` lines of `head_path` (1-based file
    lines; one range is empty for an insertion or a deletion). A definition the other
    side lacks is one hunk of all its lines."""

    base_path: str
    base: range
    head_path: str
    head: range

    def lines(self, side: str) -> tuple[str, range]:
        """(path, lines) at `side`, "base" or "head"."""
        return (self.base_path, self.base) if side == "base" else (self.head_path, self.head)

    def holds(self, side: str, path: str, line: int) -> bool:
        """Whether `line` of `path` at `side` is one of the hunk's."""
        where, lines = self.lines(side)
        return where == path and line in lines


def hunks(base: Any, head: Any, defs: Definitions | None = None) -> list[Hunk]:
    """The hunks between two revisions' code, each given as anything with `.target` (a
    closure or pipeline, None: nothing there) and `.read` (a path's text there): each head
    definition against its namesake at base, as `changed_by_side` pairs them, then each
    base definition the head does not have. Lines as `changed_by_side` finds them at head;
    at base they are the ones this (forward) diff replaces. `defs`: `both_definitions`
    of the two, when the caller has them."""
    defs = defs or both_definitions(base, head)
    before, after = defs["base"], defs["head"]
    found = []
    for definition in after:
        twin = _twin(definition, before)
        old = twin or Definition(definition.name, definition.path, definition.line, ())
        for a, b in changed_blocks(list(old.lines), list(definition.lines)):
            found.append(Hunk(old.path, _shifted(a, old.line), definition.path,
                              _shifted(b, definition.line)))  # fmt: skip
    for definition in before:
        if _twin(definition, after) is None:
            lines = range(definition.line, definition.line + len(definition.lines))
            found.append(Hunk(definition.path, lines, definition.path, range(0)))
    return found


def _shifted(lines: range, first: int) -> range:
    return range(lines.start + first, lines.stop + first)


@dataclass(frozen=True)
class Ask:
    site: int
    need: int  # BOTH for a condition, TRUE for a block


def asks(sites: tuple[Site, ...], changed: dict[str, set[int]]) -> list[Ask]:
    """What each changed line asks of the coverage, once per site, in file order."""
    by_path: dict[str, list[int]] = {}
    for n, site in enumerate(sites):
        by_path.setdefault(site.path, []).append(n)
    found: dict[int, int] = {}
    for path, lines in changed.items():
        candidates = by_path.get(path, [])
        for line in sorted(lines):
            for site in _innermost(sites, candidates, line):
                found.setdefault(site, TRUE if sites[site].kind == BLOCK else BOTH)
    return [Ask(s, n) for s, n in sorted(found.items(), key=lambda i: _order(sites[i[0]]))]


def _order(site: Site) -> tuple:
    return (site.path, site.line, site.col)


def _innermost(sites: tuple[Site, ...], candidates: list[int], line: int) -> list[int]:
    """The innermost conditions on `line` (every one no other on it lies inside: two
    operands on one line are two); else the innermost block holding it."""
    holding = [n for n in candidates if sites[n].line <= line <= sites[n].end_line]
    conditions = [n for n in holding if sites[n].kind != BLOCK]
    pool = conditions or [n for n in holding if sites[n].kind == BLOCK]
    inner = [n for n in pool if not any(sites[n].holds(sites[m]) for m in pool)]
    return inner if conditions else inner[:1]


def one_way_conditions(sites: tuple[Site, ...], branches: bytes) -> list[tuple[Site, str]]:
    """(site, what it did) for each condition the flags do not show taken both ways."""
    if len(branches) != len(sites):
        return []
    return [(s, SEEN[f]) for s, f in zip(sites, branches, strict=True)
            if s.kind != BLOCK and f != BOTH]  # fmt: skip


def unmet(sites: tuple[Site, ...], branches: bytes, wanted: list[Ask]) -> list[Ask]:
    """The asks the coverage does not meet; a block whose guard is itself unmet is left
    out (the guard says it)."""
    missing = [a for a in wanted if branches[a.site] & a.need != a.need]
    conditions = {a.site for a in missing if a.need == BOTH}
    return [a for a in missing if sites[a.site].guard not in conditions or a.need == BOTH]


Found = tuple[list[BlindSpot], "str | None"]


def find_blind_spots(matrix: Matrix, base: Side, head: Side, limits: Any) -> Found:
    """The blind spots of a diff, explained; or why coverage could not be read."""
    return start_finding(matrix, base, head, limits)()


def start_finding(
    matrix: Matrix, base: Side, head: Side, limits: Any, defs: Definitions | None = None,
    memo: dict | None = None, batches: dict | None = None,
) -> Callable[[], Found]:  # fmt: skip
    """`find_blind_spots` with its searches started in workers: calling the answer waits.
    `defs`: `both_definitions(base, head)`, when the caller has them; `memo`: the run's
    sites per statement (see `sites_of`); `batches`: per side, a batch of that
    revision's jobs the side's search joins (see `harness.engine.batch`)."""
    changed = changed_by_side(base, head, defs)
    searches = []
    for side in (base, head):
        if side.target is None or not changed[side.name]:
            continue
        sites = sites_of(side.target, load_order, memo)
        if len(sites) != len(side.branches) or len(sites) != len(side.reached):
            unseen = f"the coverage of {side.label} does not match its code"
            return lambda: ([], unseen)
        missing = unmet(sites, side.branches, asks(sites, changed[side.name]))
        questions = [_question(sites, side, a) for a in missing[:MAX_SPOTS]]
        running = None
        if questions:
            batch = (batches or {}).get(side.name)
            running = start_asking(side.target, matrix, side.label, questions, limits, batch)
        searches.append((side, sites, missing, running))

    def found() -> Found:
        spots = []
        for side, sites, missing, running in searches:
            answers = _answers(running)
            for n, ask in enumerate(missing):
                answer = answers[n] if n < len(answers) else None
                spots.append(_spot(side, sites, ask, answer, matrix))
        return spots, None

    return found


def _answers(running: Any) -> list[Answer]:
    if running is None:
        return []
    try:
        return running.result()
    except Exception:  # the search is a help, not the finding: a blind spot stays one
        return []


def _question(sites: tuple[Site, ...], side: Side, ask: Ask) -> Question:
    """What to search for: the missing way of a condition, or the way into a block (its
    guard's), from a cell where it (or the nearest site around it) was reached."""
    site, way = ask.site, ANY
    if ask.need == BOTH:
        flags = side.branches[site]
        way = FALSE if flags == TRUE else TRUE if flags == FALSE else ANY
    elif sites[site].guard is not None:
        site, way = sites[site].guard, sites[site].way
    return Question(site, way, _near_cell(sites, side.reached, site))


def _near_cell(sites: tuple[Site, ...], reached: tuple[int, ...], n: int) -> int:
    """A cell the site was reached on, the one its last operand reached was reached on
    (`a and b`: a cell where `a` held, so one input may turn `b`); else one the innermost
    reached site around it was."""
    inside = [k for k, s in enumerate(sites) if reached[k] >= 0 and sites[n].holds(s)]
    if reached[n] >= 0 and inside:
        return reached[max(inside, key=lambda k: (sites[k].line, sites[k].col))]
    if reached[n] >= 0:
        return reached[n]
    target = sites[n]
    around = [
        k for k, s in enumerate(sites)
        if reached[k] >= 0 and s.path == target.path and s.line <= target.line <= s.end_line
    ]  # fmt: skip
    if not around:
        return 0
    return reached[min(around, key=lambda k: sites[k].end_line - sites[k].line)]


def _spot(side: Side, sites: tuple[Site, ...], ask: Ask, answer, matrix: Matrix) -> BlindSpot:
    site, way = sites[ask.site], _question(sites, side, ask).way
    seen = SEEN[side.branches[ask.site]] if ask.need == BOTH else _never(site)
    return BlindSpot(side.name, site.path, site.line, site.text, site.function, seen,
                     _hint(answer, matrix, ask.need, way))  # fmt: skip


def _never(site: Site) -> str:
    return "never called" if site.guard is None and site.text.startswith(CALL) else "never entered"


def _hint(answer: Answer | None, matrix: Matrix, need: int, way: int) -> str:
    """`reads prefill_cuda_graph, which is breakable on every cell; full takes it the other way`."""
    if answer is None:
        return ""
    reads = f"reads {', '.join(answer.reads)}" if answer.reads else ""
    if answer.name is None:
        does = "enters it" if need == TRUE else "takes it the other way" if way else "reaches it"
        tail = f"no single input changed on a cell near it {does}"
        return f"{reads}; {tail}" if reads else tail
    axis = matrix.axis_index(answer.name)
    if axis is None:
        now = f"{answer.name} is {format_value(answer.was)} on every cell"
    else:
        shown = ", ".join(format_value(v) for v in matrix.axes[axis].values)
        now = f"{answer.name} takes {shown} on the matrix"
    does = {TRUE: "enters it", BOTH: "takes it the other way"}[need] if way else "reaches it"
    return f"{now}; {answer.name} = {format_value(answer.value)} {does}"
