"""`harness matrix`: show a matrix's axes and cell count, or stream its cells."""

from __future__ import annotations

import argparse
import sys

from harness.cli.options import (
    add_command,
    add_limit_options,
    add_matrix_option,
    add_repo_option,
    add_revision_options,
    add_where_option,
)
from harness.errors import HarnessError
from harness.matrix.cells import Cube, parse_where
from harness.matrix.load import MAX_CELLS, load_matrix
from harness.matrix.model import Matrix
from harness.report import formats
from harness.report import matrix as report

INFER_CELLS = 250_000  # --infer's default size: the whole resolution of 0.5.23 written at
# 72,576 cells diffed 0.5.18 against it in 26 s, at 290,304 in 36 s; 943,488 ran past 60 s

HELP = """\
Show the matrix: target, axes and values, fields, and the number of cells.
With --cells, stream every cell instead, one per line (text: AXIS=VALUE
pairs; json: one JSON object per line).

With --infer [REV] (default HEAD), write a starting matrix from the code
instead: the passes of --matrix's target file (--passes NAMES, comma-
separated, or all, the default: every registered pass in the order SGLang
runs them) are run in a worker on inputs that note what they are compared
with; each input compared with literals becomes an axis (null, the literals,
and one value none of them names), every other input a field (the default
ServerArgs declares, else null), and names nothing binds are listed as
comments. The file loads as written in harness diff --matrix: at most
--max-cells cells (default 250,000 with --infer, which a diff of the whole
resolution evaluates within the default --time-limit); the axes the world
suggests are kept first, then those the most passes read, and each other
input compared with literals is a field at its default, its values beside
it. Trim it, save it, pass it with --matrix.

  harness matrix --infer v0.5.23 --passes _fa4_page_constraint -o fa4.yaml"""


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands, "matrix", "show the matrix (axes, values, cell count) or stream its cells", HELP
    )
    parser.add_argument("--format", choices=formats.formats("matrix"), default="text")
    parser.add_argument("--cells", action="store_true", help="stream the cells, one per line")
    add_where_option(parser)
    add_matrix_option(parser)
    parser.add_argument(
        "--infer", nargs="?", const="HEAD", metavar="REV",
        help="write a starting matrix from the code at REV (default HEAD)",
    )  # fmt: skip
    parser.add_argument(
        "--passes", metavar="NAMES|all",
        help="with --infer: the passes to read, comma-separated (default all)",
    )  # fmt: skip
    parser.add_argument(
        "-o", "--output", metavar="FILE",
        help="with --infer: write the matrix to FILE (whole, or not at all)",
    )  # fmt: skip
    add_repo_option(parser)
    add_revision_options(parser)
    add_limit_options(parser)
    parser.set_defaults(handler=run, max_cells=None)  # None: the default for what is asked
    for action in parser._actions:  # the shared option's help, with this command's defaults
        if action.dest == "max_cells":
            action.help = (
                f"refuse a matrix of more cells than this (default: {INFER_CELLS:,} with "
                f"--infer, which writes at most this many; else {MAX_CELLS:,})"
            )


def _max_cells(args: argparse.Namespace) -> int:
    if args.max_cells is not None:
        return args.max_cells
    return INFER_CELLS if args.infer is not None else MAX_CELLS


def run(args: argparse.Namespace) -> int:
    from harness.cli.infer import run_infer

    args.max_cells = _max_cells(args)
    if args.infer is not None:
        return run_infer(args)
    if args.passes or args.output:
        raise HarnessError("--passes and --output go with --infer")
    matrix = load_matrix(args.matrix, args.max_cells)
    where = parse_where(matrix, args.where)
    if args.cells:
        stream_cells(matrix, where, args.format)
    else:
        sys.stdout.write(formats.text("matrix", args.format, matrix))
    return 0


def stream_cells(matrix: Matrix, where: Cube, fmt: str) -> None:
    """Write the cells in batches: millions of lines, without a write call per line."""
    batch: list[str] = []
    for line in report.cell_lines(matrix, where, fmt):
        batch.append(line)
        if len(batch) >= 4096:
            sys.stdout.write("\n".join(batch) + "\n")
            batch.clear()
    if batch:
        sys.stdout.write("\n".join(batch) + "\n")
