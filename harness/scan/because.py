"""Why a rule's cells changed: the condition operands that differ between two revisions.

For each summary rule, one representative cell (its first) is traced at both
revisions (`harness.engine.trace`); operands are matched by their normalized
text, and those present on one side only, or with another value, are the
reason. Tracing runs on these cells only, never over the matrix. How a
reason reads is the reports' business (`harness.report.because`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.engine.events import OPERAND, Event, Trace
from harness.errors import Unevaluable
from harness.matrix.cells import first_cell
from harness.matrix.model import same_value

MAX_REASONS = 3
MAX_EXPLAINED = 10  # rules that get a `because` (each costs two traced calls)


@dataclass(frozen=True)
class Difference:
    base: Event | None  # None: the operand is not there (or not reached) at base
    head: Event | None

    @property
    def source(self) -> str:
        return (self.head or self.base).source


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


def explain_rules(versions, base, head, rules: list) -> list[list[Difference]]:
    """Per rule (the first MAX_EXPLAINED), the operands that differ on its first cell.

    `base`/`head` are `versions.Code` (None when that side cannot run: no reasons).
    """
    return start_explaining(versions, base, head, rules)()


def start_explaining(versions, base, head, rules: list) -> Callable[[], list[list[Difference]]]:
    """`explain_rules`, its traces started in a worker: calling the answer waits for them."""
    if base is None or head is None:
        return lambda: [[] for _ in rules]
    cells = [first_cell(rule.masks) for rule in rules[:MAX_EXPLAINED]]
    traced = versions.start_trace([(code, cell) for cell in cells for code in (base, head)])

    def reasons() -> list[list[Difference]]:
        try:
            traces = traced()
        except Unevaluable:
            return [[] for _ in rules]
        found = [differences(*traces[n : n + 2]) for n in range(0, len(traces), 2)]
        return found + [[] for _ in rules[MAX_EXPLAINED:]]

    return reasons
