"""The diff report model: what changed, in the terms every renderer shows."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from harness.engine.outcome import ABSENT, ERROR, Outcome
from harness.engine.outputs import Inputs, declared
from harness.gitio import Revision
from harness.matrix.cells import bits_of, first_cell
from harness.matrix.model import Matrix, Target, format_value, same_value
from harness.report.because import with_because
from harness.scan.because import Difference, Place
from harness.scan.compare import Comparison, Rule
from harness.scan.spots import BlindSpot

if TYPE_CHECKING:  # a report read back from the cache is rendered without the scan
    from harness.scan.diff import Diff


EXIT_SAME, EXIT_CHANGED, EXIT_CANNOT_TELL = 0, 1, 4


def function_label(target: Target) -> str:
    """The target as reports name it: the function, or the passes in order."""
    return " -> ".join(target.passes)


def target_label(target: Target) -> str:
    """What the target runs, and where: `FUNCTION in PATH`, then each entry of
    `otherwise:`, run where the revision lacks the file before it."""
    more = "".join(f", else {name} in {path}" for path, name in target.otherwise)
    return f"{function_label(target)} in {target.path}{more}"


def output_label(target: Target) -> str:
    """The output field, or the several fields, as reports name them."""
    return ", ".join(target.outputs)


@dataclass(frozen=True)
class Condition:
    """One axis of a rule: the values it selects, written the shorter way round."""

    axis: str
    values: tuple[Any, ...]
    negated: bool  # True: `values` are the ones excluded

    def text(self) -> str:
        shown = [format_value(v) for v in self.values]
        if len(shown) == 1:
            return f"{self.axis} {'!=' if self.negated else '='} {shown[0]}"
        return f"{self.axis} {'not in' if self.negated else 'in'} {{{', '.join(shown)}}}"


@dataclass(frozen=True)
class RuleView:
    where: dict[str, list[Any]]  # only the axes the rule constrains
    conditions: tuple[Condition, ...]
    cells: int
    transition: str
    because: tuple[Difference | str, ...] = ()  # when explained (text, read from JSON)
    because_more: int = 0  # reasons found beyond those in `because`
    because_at: Place | None = None  # the changed line its change is at (not read from JSON)


@dataclass
class DiffReport:
    matrix: Matrix
    base: Revision
    head: Revision
    comparison: Comparison
    notes: dict[str, str]  # revision-wide states: {"base"/"head": reason}
    rules: list[RuleView]
    lines: dict[str, int | None]  # the target function's line at each side
    skipped: dict[str, tuple[str, ...]] = field(default_factory=dict)  # absent passes
    every_cell: dict[str, str] = field(default_factory=dict)  # impure sides: why
    defaults: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    field_changes: list | None = None  # rules per output field (report.fields.of_report)
    unguarded: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    coverage: dict[str, tuple] = field(default_factory=dict)  # side -> (PassCoverage, ...)
    unused_guards: dict[str, tuple[str, ...]] = field(default_factory=dict)
    blind_spots: list[BlindSpot] = field(default_factory=list)  # changed code not covered
    unseen: str | None = None  # why the coverage could not be read
    ran: dict[str, str] = field(default_factory=dict)  # side -> the `otherwise:` entry run

    @property
    def cannot_tell(self) -> list[str]:
        """Why this report cannot say "nothing changed", shortly (the notes give each side's
        reason): a side that could not be evaluated (a base without the target against an
        evaluable head is a change, not this), or coverage that could not be read. Blind
        spots are said apart."""
        reasons = [
            f"{side} has no {self._target}" if self.notes[side].startswith(ABSENT)
            else f"{side} could not be evaluated"
            for side in self._untold
        ]  # fmt: skip
        if self.unseen:
            reasons.append(self.unseen)
        return reasons

    @property
    def _target(self) -> str:
        target = self.matrix.target
        return target_label(target)

    @property
    def compared(self) -> bool:
        """Whether the two tables were compared (not when a side cannot be told)."""
        return not self._untold

    @property
    def _untold(self) -> list[str]:
        """The sides that could not be evaluated, but a base without the target against an
        evaluable head (everything the head does is new: a change)."""
        new_target = self.notes.get("base", "").startswith(ABSENT) and "head" not in self.notes
        return [s for s in ("base", "head") if s in self.notes and not (s == "base" and new_target)]

    @property
    def status(self) -> int:
        """0 nothing changed where the diff looked, and it looked everywhere the code
        changed; 1 cells changed; 4 cannot tell (a side not evaluated, or blind spots)."""
        if self.changed:
            return EXIT_CHANGED
        return EXIT_CANNOT_TELL if self.cannot_tell or self.blind_spots else EXIT_SAME

    @property
    def guards_for_nothing(self) -> list[str]:
        """Guards naming a pass absent at both revisions: most likely a misspelt name."""
        base, head = (set(self.unused_guards.get(s, ())) for s in ("base", "head"))
        return sorted(base & head) if "base" in self.unused_guards else []

    @property
    def changed_defaults(self) -> list[tuple[str, str, str]]:
        """(field, base default, head default) for each default read that differs."""
        return changed_defaults(self.defaults.get("base", ()), self.defaults.get("head", ()))

    @property
    def changed(self) -> int:
        return self.comparison.changed

    def changed_cells(self, limit: int | None = None) -> Iterator[dict[str, Any]]:
        """Changed cells as {"cell", "base", "head"} dicts (JSON-ready), in matrix order."""
        count = len(self.comparison.indices)
        yield from map(self._item, range(count if limit is None else min(limit, count)))

    def sample(self, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` changed cells: one from each rule first, then the next in order."""
        count = len(self.comparison.indices)
        return [self._item(k) for k in sample_positions(self._rule_firsts(), count, limit)]

    def _rule_firsts(self) -> list[int]:
        """Positions (in the changed list) of each rule's first cell, largest rule first."""
        position = {i: k for k, i in enumerate(self.comparison.indices)}
        return [position[self.matrix.index(first_cell(r.masks))] for r in self.comparison.rules]

    def _item(self, k: int) -> dict[str, Any]:
        comp, fields = self.comparison, self.matrix.target.outputs
        index = comp.indices[k]
        cell = self.matrix.values_of(self.matrix.cell(index))
        given = self._inputs.given(index)
        base, head = comp.outcomes[comp.base_codes[k]], comp.outcomes[comp.head_codes[k]]
        return {
            "cell": cell,
            "base": outcome_json(base, fields, given, self.base.label),
            "head": outcome_json(head, fields, given, self.head.label),
        }

    @cached_property
    def _inputs(self) -> Inputs:
        return Inputs(self.matrix)


def sample_positions(firsts: list[int], count: int, limit: int) -> list[int]:
    """Up to `limit` of `count` changed cells, as sorted positions: the rules' first cells
    (`firsts`, one per rule) before any other, then the rest in order."""
    chosen = list(dict.fromkeys(firsts))[:limit]
    taken = set(chosen)
    for k in range(count):
        if len(chosen) >= limit:
            break
        if k not in taken:
            chosen.append(k)
    return sorted(chosen)


def build_report(diff: Diff) -> DiffReport:
    """The report model of a diff, built once for every renderer."""
    matrix, notes, revisions = diff.matrix, {}, {"base": diff.base, "head": diff.head}
    for side, state in diff.states.items():
        outcomes = state.table.outcomes
        if len(outcomes) == 1 and outcomes[0].revision_wide:
            notes[side] = (
                f"{outcomes[0].kind} {revision_reason(outcomes[0], revisions[side].label)}"
            )
    rules = with_because([rule_view(matrix, r) for r in diff.comparison.rules], diff.because)
    lines = {side: state.line for side, state in diff.states.items()}
    unused = {side: state.unused_guards for side, state in diff.states.items() if state.evaluable}
    return DiffReport(
        matrix, diff.base, diff.head, diff.comparison, notes, rules, lines,
        skipped=_sides(diff, "skipped"), every_cell=_sides(diff, "impure"),
        defaults=_sides(diff, "defaults"), unguarded=_sides(diff, "unguarded"),
        coverage=_sides(diff, "coverage"), unused_guards=unused,
        blind_spots=list(diff.blind), unseen=diff.unseen, ran=_sides(diff, "ran"),
    )  # fmt: skip


def _sides(diff: Diff, fact: str) -> dict[str, Any]:
    """{side: the state's `fact`} for the sides where it is set."""
    return {side: getattr(s, fact) for side, s in diff.states.items() if getattr(s, fact)}


def changed_defaults(base, head) -> list[tuple[str, str, str]]:
    """(field, before, after) for each default both sides read whose value differs (a
    side that could not be evaluated read none)."""
    before, after = dict(base), dict(head)
    return [
        (n, before[n], after[n]) for n in sorted(before) if n in after and before[n] != after[n]
    ]


def unguarded_line(unguarded, project: str) -> str:
    """The passes the project runs under a condition that run here on every cell."""
    names = ", ".join(name for name, _ in unguarded)
    return (
        f"run on every cell, though {project} runs them only under a condition (declare "
        f"target.guards to say where they run): {names}"
    )


DEFAULTS_SHOWN = 6  # defaults named on a text report's revision line; JSON lists them all


def defaults_line(defaults) -> str:
    """`defaults from the view's class: a=1, b=null, ... (12 in all)`."""
    shown = ", ".join(f"{n}={v}" for n, v in list(defaults)[:DEFAULTS_SHOWN])
    more = f", ... ({len(defaults)} in all)" if len(defaults) > DEFAULTS_SHOWN else ""
    return f"read from the code's declared defaults: {shown}{more}"


def ran_note(ran: str, target: Target) -> str:
    """What a side ran in place of the target's entry (`target.otherwise`)."""
    return f"ran {ran} (target.otherwise): {target.path} does not exist here"


def every_cell_note(reason: str) -> str:
    """Why each call of a side loaded its modules anew (its table is explored all the same)."""
    return f"each call loaded the code anew: it may keep state between calls ({reason})"


def rule_view(matrix: Matrix, rule: Rule) -> RuleView:
    where = where_of(matrix, rule.masks)
    transition = transition_text(rule.base, rule.head, matrix.target.outputs)
    return RuleView(where, conditions_of(where, axes_of(matrix)), rule.cells, transition)


def where_of(matrix: Matrix, masks: tuple[int, ...]) -> dict[str, list[Any]]:
    """A cube as {axis: values}, only the axes it constrains."""
    where = {}
    for axis, mask in zip(matrix.axes, masks, strict=True):
        chosen = bits_of(mask)
        if len(chosen) < len(axis.values):
            where[axis.name] = [axis.values[i] for i in chosen]
    return where


def axis_order(axes: dict[str, list[Any]]) -> dict[str, int]:
    """Each axis's place among them (see `conditions_of`)."""
    return {name: n for n, name in enumerate(axes)}


def axes_of(matrix: Matrix) -> dict[str, list[Any]]:
    return {axis.name: list(axis.values) for axis in matrix.axes}


def conditions_of(
    where: dict[str, list[Any]], axes: dict[str, list[Any]], order: dict[str, int] | None = None
) -> tuple[Condition, ...]:
    """A rule's `where` as conditions, in the axes' order, each written the shorter way
    round (`!= fa4`). `order`: `axis_order(axes)`, when the caller has it: the rules of a
    document share it, and made for each rule it costs every rule every axis (a hostile
    document's 20,000 rules over 5,000 axes took 18 s)."""
    order = axis_order(axes) if order is None else order
    conditions = []
    for name in sorted((n for n in where if n in order), key=order.__getitem__):
        values = axes[name]
        chosen = [v for v in values if any(same_value(v, c) for c in where[name])]
        others = [v for v in values if not any(same_value(v, c) for c in where[name])]
        negated = len(others) < len(chosen)
        conditions.append(Condition(name, tuple(others if negated else chosen), negated))
    return tuple(conditions)


def outcome_label(outcome: Outcome, fields: tuple[str, ...]) -> str:
    """`128`, `input page_size`, the error; with several fields, `field=value, ...`."""
    labels = field_labels(outcome, fields)
    if labels is None:
        return str(outcome.value) if outcome.kind == ERROR else outcome.kind
    if len(fields) == 1:
        return labels[fields[0]]
    return ", ".join(f"{f}={labels[f]}" for f in fields)


def field_labels(outcome: Outcome, fields: tuple[str, ...]) -> dict[str, str] | None:
    values = declared(outcome, fields)
    if values is None:
        return None
    return {f: format_value(values[f]) if f in values else f"input {f}" for f in fields}


def transition_text(base: Outcome, head: Outcome, fields: tuple[str, ...]) -> str:
    """`128 -> input page_size`; with several fields, only those that change, named."""
    before, after = field_labels(base, fields), field_labels(head, fields)
    if len(fields) == 1 or before is None or after is None:
        return f"{outcome_label(base, fields)} -> {outcome_label(head, fields)}"
    changed = [f for f in fields if before[f] != after[f]] or list(fields)
    return "; ".join(f"{f}: {before[f]} -> {after[f]}" for f in changed)


def outcome_json(
    outcome: Outcome,
    fields: tuple[str, ...],
    given: dict[str, Any] | None = None,
    revision: str | None = None,
) -> dict[str, Any]:
    """OUTCOME as JSON reports and baselines write it.

    With `given` (one cell's inputs) a kept field has its input: {field: v, ...}.
    Without (a baseline cube spans many inputs) kept stays symbolic: {field: v}
    or {"keeps": field} for one field, {"declares": {field: v, ...}} for several.
    Errors and revision-wide states are {kind: message}; with `revision`, a
    revision-wide message names it.
    """
    values = declared(outcome, fields)
    if values is None:
        wide = revision is not None and outcome.revision_wide
        return {outcome.kind: revision_reason(outcome, revision) if wide else str(outcome.value)}
    if given is not None:
        return {f: values[f] if f in values else given[f] for f in fields}
    if len(fields) > 1:
        return {"declares": values}
    return {fields[0]: values[fields[0]]} if values else {"keeps": fields[0]}


def revision_reason(outcome: Outcome, revision: str) -> str:
    """A revision-wide reason with the revision it applies to (outcomes leave it out)."""
    return f"at {revision}: {outcome.value}"


def short_outcome(outcome: dict[str, Any], fields: list[str] | tuple[str, ...]) -> str:
    """A JSON OUTCOME in a few words, for a sample row: the value(s), the error, or the kind."""
    if all(f in outcome for f in fields):
        if len(fields) == 1:
            return format_value(outcome[fields[0]])
        return ", ".join(f"{f}={format_value(outcome[f])}" for f in fields)
    ((kind, message),) = outcome.items()
    return message if kind == ERROR else kind
