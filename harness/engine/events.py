"""What tracing one cell records: events at conditions and operands, and the trace.

Plain records, apart from the tracer (`harness.engine.trace`), so that what
reads traces (reports, a stored report) needs none of the machinery that
makes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.engine.outcome import Outcome

CONDITION, OPERAND, RETURN, RAISE = "condition", "operand", "return", "raise"
PASS = "pass"  # pipeline mode: a pass starts (source: its name)


@dataclass(frozen=True)
class Event:
    kind: str  # CONDITION, OPERAND, RETURN or RAISE
    line: int
    source: str  # the expression as written at that revision
    key: str  # normalized text (ast.unparse): the same expression at two revisions
    value: Any = None


@dataclass(frozen=True)
class Trace:
    outcome: Outcome
    events: tuple[Event, ...]
    passes: tuple[dict[str, Any], ...] = ()  # pipeline mode: what each pass declared
