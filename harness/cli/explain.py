"""`harness explain REV --where AXIS=V ...`: how the target reached its outcome for one cell."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from harness.cli.options import add_command, add_evaluation_options, set_up
from harness.cli.progress import progress
from harness.engine.events import Trace
from harness.engine.outcome import revision_wide
from harness.errors import HarnessError, Unevaluable
from harness.matrix.cells import bits_of
from harness.matrix.model import NO_DEFAULT, Matrix, format_value
from harness.releases.ranges import resolve_range
from harness.report import formats
from harness.report.jsonfmt import FORMAT_VERSION

if TYPE_CHECKING:
    from harness.gitio import Revision
    from harness.scan.versions import Versions

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

Every axis needs one value, from --where or from a default in the matrix.

REV may be a range, as `harness diff` reads one: A..B explains the cell at A,
then at B; A...B at where B left A (their merge base), then at B. With
--format json a range gives {"base": REPORT, "head": REPORT}.

Exit status: 0 shown (an outcome that is an error or unevaluable is shown
too); 2 error."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "explain", "show why one cell gets its outcome", HELP)
    parser.add_argument(
        "rev", metavar="REV", help="the revision to run, or a range A..B / A...B (both ends)"
    )
    add_evaluation_options(parser, run, formats.formats("explain"))


def run(args: argparse.Namespace) -> int:
    with progress(args, "explain: reading the revision") as bar:
        session = set_up(args)
        matrix = session.matrix
        cell = one_cell(matrix, session.where)
        ranged = resolve_range(session.repo, session.resolve, args.rev)
        revisions = ranged or (session.resolve(args.rev),)
        versions = session.versions()
        bar.stage(f"explain: running {' and '.join(r.label for r in revisions)}")
        traces = [(revision, trace_at(versions, revision, cell)) for revision in revisions]
    sys.stdout.write(rendered(matrix, cell, traces, args.format))
    return 0


def rendered(matrix: Matrix, cell: tuple[int, ...], traces: list, fmt: str) -> str:
    """One revision's report; for a range, the base's then the head's (json: one document
    holding both reports, as "base" and "head")."""
    if fmt != "json":
        return "\n".join(formats.text("explain", fmt, matrix, r, cell, t) for r, t in traces)
    if len(traces) == 1:
        ((revision, trace),) = traces
        return formats.text("explain", fmt, matrix, revision, cell, trace)
    base, head = (json.loads(formats.text("explain", fmt, matrix, r, cell, t)) for r, t in traces)
    return json.dumps({"format_version": FORMAT_VERSION, "base": base, "head": head}) + "\n"


def trace_at(versions: Versions, revision: Revision, cell: tuple[int, ...]) -> Trace:
    """How the target reached its outcome on `cell` at `revision`; without events when it
    could not run (absent, unevaluable: the outcome says why, as diff says it)."""
    from harness.scan.because import trace as trace_cells

    code = versions.code_at(revision)
    if code is None:  # absent or unevaluable: the state says why
        return Trace(versions.at(revision).table.outcome_at(versions.matrix.index(cell)), ())
    try:
        (trace,) = trace_cells(versions, [(code, cell)])
    except Unevaluable as exc:  # it failed while running: as diff says it
        return Trace(revision_wide(exc, 1).outcomes[0], ())
    return trace


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
