"""Why a rule's cells changed: the condition operands that differ between two revisions.

For each summary rule, one representative cell (its first) is traced at both
revisions (`harness.trace`); operands are matched by their normalized text,
and those present on one side only, or with another value, are the reason.
Tracing runs on these cells only, never over the matrix.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from harness.errors import Unevaluable
from harness.matrix import same_value
from harness.trace import OPERAND, Event, Trace, trace_cell

MAX_REASONS = 3
MAX_EXPLAINED = 10  # rules that get a `because` (each costs two traced calls)


@dataclass(frozen=True)
class Difference:
    base: Event | None  # None: the operand is not there (or not reached) at base
    head: Event | None

    @property
    def source(self) -> str:
        return (self.head or self.base).source

    def text(self) -> str:
        base, head = self.base, self.head
        if base is None:
            return f"`{self.source}` (line {head.line}) is new at head: {short(head.value)} here"
        if head is None:
            return (
                f"`{self.source}` (line {base.line}) is gone at head "
                f"(it was {short(base.value)} here)"
            )
        lines = f"line {base.line}" if base.line == head.line else f"lines {base.line}->{head.line}"
        return (
            f"`{self.source}` ({lines}) was {short(base.value)} at base, "
            f"{short(head.value)} at head"
        )


def differences(base: Trace, head: Trace, limit: int = MAX_REASONS) -> list[Difference]:
    """Operands whose presence or value differs, in the order the head (else base) met them."""
    before, after = _operands(base), _operands(head)
    found = []
    for key in list(after) + [k for k in before if k not in after]:
        b, h = before.get(key), after.get(key)
        if b is None or h is None or not _same(b.value, h.value):
            found.append(Difference(b, h))
    return found[:limit]


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


def short(value: Any, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def difference_json(difference: Difference) -> dict[str, Any]:
    return {
        "source": difference.source,
        "base": _event_json(difference.base),
        "head": _event_json(difference.head),
    }


def _event_json(event: Event | None) -> dict[str, Any] | None:
    return None if event is None else {"line": event.line, "value": json_value(event.value)}


def json_value(value: Any) -> Any:
    """The value itself when JSON can hold it, else its repr."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple) and all(json_value(v) == v for v in value):
        return list(value)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: json_value(v) for k, v in value.items()}
    return repr(value)


def explain_rules(versions, base, head, rules: list) -> list[list[Difference]]:
    """Per rule (the first MAX_EXPLAINED), the operands that differ on its first cell.

    `base`/`head` are `versions.Code` (None when that side cannot run: no reasons).
    """
    if base is None or head is None:
        return [[] for _ in rules]
    reasons = []
    for rule in rules[:MAX_EXPLAINED]:
        cell = tuple((mask & -mask).bit_length() - 1 for mask in rule.masks)
        try:
            traces = [_trace(versions, code, cell) for code in (base, head)]
        except Unevaluable:
            reasons.append([])
            continue
        reasons.append(differences(*traces))
    return reasons + [[] for _ in rules[MAX_EXPLAINED:]]


def _trace(versions, code, cell: tuple[int, ...]) -> Trace:
    return trace_cell(code.closure, code.source, versions.matrix, versions.bound, code.label, cell)


def with_because(views: list, reasons: list[list[Difference]]) -> list:
    """Rule views with their reasons attached."""
    return [replace(v, because=tuple(r)) for v, r in zip(views, reasons, strict=True)]
