"""`harness explain REV --where AXIS=V ...`: how the target reached its outcome for one cell."""

from __future__ import annotations

import argparse
import json
import sys

from harness.because import json_value, short
from harness.commands.common import add_command, add_evaluation_options, set_up
from harness.errors import HarnessError
from harness.matrix import NO_DEFAULT, Matrix, bits_of, format_value
from harness.outputs import Inputs, declared
from harness.report.model import outcome_json, outcome_label
from harness.report.text import revision_line, title
from harness.trace import CONDITION, OPERAND, PASS, Event, Trace, trace_cell
from harness.versions import Versions, code_at

HELP = """\
Run the target function at REV on one cell, instrumented, and show how it got
its outcome: each if/elif/conditional expression it evaluated, with the value
of every and/or/not operand (source text and line at that revision; operands
that short-circuiting skipped are not shown), and the return or raise it
reached.

  harness explain '#30835' --where attention_backend=fa4 --where decode_attention_backend=null \\
      --where prefill_attention_backend=null --where use_mla=false \\
      --where speculative_eagle_topk=null --where prefill_cuda_graph=full \\
      --where platform=sm100 --where page_size=16

Every axis needs one value, from --where or from a default in the matrix."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "explain", "show why one cell gets its outcome", HELP)
    parser.add_argument("rev", metavar="REV", help="the revision to run")
    add_evaluation_options(parser, run, ("text", "json"))


def run(args: argparse.Namespace) -> int:
    setup = set_up(args)
    matrix = setup.matrix
    cell = one_cell(matrix, setup.where)
    revision = setup.resolve(args.rev)
    versions = Versions(setup.repo, matrix)
    code = code_at(versions, revision)
    if code is None:  # absent or unevaluable: the state says why
        outcome = versions.at(revision).table.outcome_at(matrix.index(cell))
        trace = Trace(outcome, ())
    else:
        trace = trace_cell(code.closure, code.source, matrix, versions.bound, code.label, cell)
    render = render_json if args.format == "json" else render_text
    sys.stdout.write(render(matrix, revision, cell, trace))
    return 0


def one_cell(matrix: Matrix, masks: tuple[int, ...]) -> tuple[int, ...]:
    """The cell --where names, axes left out taking their matrix default."""
    cell, missing = [], []
    for axis, mask in zip(matrix.axes, masks, strict=True):
        chosen = bits_of(mask)
        if len(chosen) == 1:
            cell.append(chosen[0])
        elif mask != (1 << len(axis.values)) - 1:
            raise HarnessError(
                f"--where {axis.name}: explain runs one cell, so give one value, not "
                f"{', '.join(format_value(axis.values[i]) for i in chosen)}"
            )
        elif axis.default is not NO_DEFAULT:
            cell.append(axis.values.index(axis.default))
        else:
            missing.append(axis.name)
    if missing:
        raise HarnessError(
            f"explain needs one value per axis; no --where and no default for: "
            f"{', '.join(missing)} (add --where AXIS=V for each)"
        )
    return tuple(cell)


def _given(matrix: Matrix, cell: tuple[int, ...]) -> dict:
    return Inputs(matrix).given(matrix.index(cell))


def outcome_text(matrix: Matrix, cell: tuple[int, ...], outcome) -> str:
    """`page_size = 16 (the input: nothing declared)`, per output field; or what went wrong."""
    fields = matrix.target.outputs
    values = declared(outcome, fields)
    if values is None:
        return (
            outcome_label(outcome, fields)
            if not outcome.revision_wide
            else (f"{outcome.kind}: {outcome.value}")
        )
    given = _given(matrix, cell)
    parts = [
        f"{f} = {format_value(values[f])}" if f in values
        else f"{f} = {format_value(given[f])} (the input: nothing declared)"
        for f in fields
    ]  # fmt: skip
    return ", ".join(parts)


def render_text(matrix: Matrix, revision, cell: tuple[int, ...], trace: Trace) -> str:
    shown = " ".join(f"{k}={format_value(v)}" for k, v in matrix.values_of(cell).items())
    lines = [
        title(matrix),
        f"rev:     {revision_line(revision)}",
        f"cell:    {shown}",
        f"outcome: {outcome_text(matrix, cell, trace.outcome)}",
        "",
    ]
    lines.extend(_trace_lines(trace.events) or ["(nothing traced: the function did not run)"])
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


def render_json(matrix: Matrix, revision, cell: tuple[int, ...], trace: Trace) -> str:
    fields = matrix.target.outputs
    document = {
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
