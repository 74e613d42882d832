"""`harness explain REV --where AXIS=V ...`: how the target reached its outcome for one cell."""

from __future__ import annotations

import argparse
import sys

from harness.cli.options import add_command, add_evaluation_options, set_up
from harness.engine.events import Trace
from harness.engine.outcome import revision_wide
from harness.errors import HarnessError, Unevaluable
from harness.matrix.cells import bits_of
from harness.matrix.model import NO_DEFAULT, Matrix, format_value
from harness.report import explain as report

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
    versions = setup.versions()
    code = versions.code_at(revision)
    if code is None:  # absent or unevaluable: the state says why
        trace = Trace(versions.at(revision).table.outcome_at(matrix.index(cell)), ())
    else:
        try:
            (trace,) = versions.trace([(code, cell)])
        except Unevaluable as exc:  # it failed while running: as diff says it
            trace = Trace(revision_wide(exc, 1).outcomes[0], ())
    render = report.render_json if args.format == "json" else report.render_text
    sys.stdout.write(render(matrix, revision, cell, trace))
    return 0


def one_cell(matrix: Matrix, masks: tuple[int, ...]) -> tuple[int, ...]:
    """The cell --where names, axes left out taking their matrix default."""
    cell, missing = [], []
    for axis, mask, full in zip(matrix.axes, masks, matrix.full_masks(), strict=True):
        chosen = bits_of(mask)
        if len(chosen) == 1:
            cell.append(chosen[0])
        elif mask != full:
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
