"""`harness matrix`: show a matrix's axes and cell count, or stream its cells."""

from __future__ import annotations

import argparse
import json
import sys

from harness.cli.options import add_command, add_matrix_option, add_where_option
from harness.matrix.cells import Cube, parse_where
from harness.matrix.load import load_matrix
from harness.matrix.model import Matrix
from harness.report import matrix as report

HELP = """\
Show the matrix: target, axes and values, fields, and the number of cells.
With --cells, stream every cell instead, one per line (text: AXIS=VALUE
pairs; json: one JSON object per line)."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands, "matrix", "show the matrix (axes, values, cell count) or stream its cells", HELP
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--cells", action="store_true", help="stream the cells, one per line")
    add_where_option(parser)
    add_matrix_option(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix, args.max_cells)
    where = parse_where(matrix, args.where)
    if args.cells:
        stream_cells(matrix, where, args.format)
    elif args.format == "json":
        print(json.dumps(report.describe(matrix)))
    else:
        sys.stdout.write(report.render_text(matrix))
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
