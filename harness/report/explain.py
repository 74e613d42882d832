"""`harness explain` reports: one cell's outcome and the trace that led to it (text, json)."""

from __future__ import annotations

import json

from harness.engine.events import CONDITION, OPERAND, PASS, Event, Trace
from harness.engine.outputs import Inputs, declared
from harness.gitio import Revision
from harness.matrix.model import Matrix, format_value
from harness.report.because import json_value, short
from harness.report.jsonfmt import FORMAT_VERSION
from harness.report.model import outcome_json, outcome_label, revision_reason
from harness.report.text import revision_line, title


def _given(matrix: Matrix, cell: tuple[int, ...]) -> dict:
    return Inputs(matrix).given(matrix.index(cell))


def outcome_text(matrix: Matrix, revision: Revision, cell: tuple[int, ...], outcome) -> str:
    """`page_size = 16 (the input: nothing declared)`, per output field; or what went
    wrong, a revision-wide reason worded as `harness diff` words it."""
    fields = matrix.target.outputs
    values = declared(outcome, fields)
    if values is None and outcome.revision_wide:
        return f"{outcome.kind} {revision_reason(outcome, revision.label)}"
    if values is None:
        return outcome_label(outcome, fields)
    given = _given(matrix, cell)
    parts = [
        f"{f} = {format_value(values[f])}" if f in values
        else f"{f} = {format_value(given[f])} (the input: nothing declared)"
        for f in fields
    ]  # fmt: skip
    return ", ".join(parts)


UNTRACED = "(nothing traced: the target reached no condition, return or raise of its own)"


def render_text(matrix: Matrix, revision: Revision, cell: tuple[int, ...], trace: Trace) -> str:
    shown = " ".join(f"{k}={format_value(v)}" for k, v in matrix.values_of(cell).items())
    lines = [
        title(matrix),
        f"rev:     {revision_line(revision)}",
        f"cell:    {shown}",
        f"outcome: {outcome_text(matrix, revision, cell, trace.outcome)}",
        "",
    ]
    lines.extend(_trace_lines(trace.events) or [UNTRACED])
    if trace.passes:
        lines += ["", "passes:"]
        lines += [f"  {p['pass']}: " + ("absent at this revision" if p.get("absent") else
                  f"declared {short(p['declared'], 60)}") for p in trace.passes]  # fmt: skip
    return "\n".join(lines) + "\n"


def _trace_lines(events: tuple[Event, ...]) -> list[str]:
    """Each condition, then the operands it evaluated; returns and raises on their own."""
    lines, pending = [], []
    for event in events:
        if event.kind == OPERAND:
            pending.append(event)
            continue
        if event.kind == PASS:
            lines.append(f"pass {event.source} (line {event.line})")
        elif event.kind == CONDITION:
            lines.append(f"line {event.line:<5} if {event.source}: {short(event.value)}")
            lines += [f"    line {e.line:<5} {e.source} = {short(e.value)}" for e in pending]
        else:
            lines.append(f"line {event.line:<5} {event.source}")
        pending = []
    return lines


def render_json(matrix: Matrix, revision: Revision, cell: tuple[int, ...], trace: Trace) -> str:
    fields = matrix.target.outputs
    document = {
        "format_version": FORMAT_VERSION,
        "rev": revision.expr,
        "sha": revision.sha,
        "cell": matrix.values_of(cell),
        "outcome": outcome_json(trace.outcome, fields, _given(matrix, cell), revision.label),
        "trace": [
            {"kind": e.kind, "line": e.line, "source": e.source, "value": json_value(e.value)}
            for e in trace.events
        ],
        "passes": [{k: json_value(v) for k, v in p.items()} for p in trace.passes],
    }
    return json.dumps(document) + "\n"
