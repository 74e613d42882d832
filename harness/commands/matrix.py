"""`harness matrix`: show a matrix's axes and cell count, or stream its cells."""

from __future__ import annotations

import argparse
import json
import sys

from harness.commands.common import add_command, add_matrix_option, add_where_option
from harness.matrix import Matrix, format_value, iter_cells, load_matrix, parse_where

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
    matrix = load_matrix(args.matrix)
    where = parse_where(matrix, args.where)
    if args.cells:
        stream_cells(matrix, where, args.format)
    elif args.format == "json":
        print(json.dumps(describe(matrix)))
    else:
        sys.stdout.write(render_text(matrix))
    return 0


def describe(matrix: Matrix) -> dict:
    axes = {axis.name: list(axis.values) for axis in matrix.axes}
    return {"name": matrix.name, "axes": axes, "cells": matrix.size}


def render_text(matrix: Matrix) -> str:
    target = matrix.target
    lines = [
        f"{matrix.name}  ({matrix.source})",
        *([matrix.description] if matrix.description else []),
        f"target: {target.function} in {target.path}, output {target.output}, world {matrix.world}",
        "axes:",
    ]
    width = max(len(axis.name) for axis in matrix.axes)
    for axis in matrix.axes:
        values = ", ".join(format_value(v) for v in axis.values)
        lines.append(f"  {axis.name:<{width}}  ({len(axis.values)})  {values}")
    if matrix.fields:
        fields = ", ".join(f"{k}={format_value(v)}" for k, v in matrix.fields.items())
        lines.append(f"fields: {fields}")
    lines.append(f"cells: {matrix.size:,}")
    return "\n".join(lines) + "\n"


def stream_cells(matrix: Matrix, where: tuple[int, ...], fmt: str) -> None:
    names = [axis.name for axis in matrix.axes]
    texts = [[format_value(v) for v in axis.values] for axis in matrix.axes]
    write, batch = sys.stdout.write, []
    for cell in iter_cells(where):
        if fmt == "json":
            batch.append(
                json.dumps(
                    {n: a.values[d] for n, a, d in zip(names, matrix.axes, cell, strict=True)}
                )
            )
        else:
            batch.append(
                " ".join(f"{n}={t[d]}" for n, t, d in zip(names, texts, cell, strict=True))
            )
        if len(batch) >= 4096:
            write("\n".join(batch) + "\n")
            batch.clear()
    if batch:
        write("\n".join(batch) + "\n")
