"""`harness matrix` reports: the matrix described (text, json), or its cells one per line."""

from __future__ import annotations

import json
from collections.abc import Iterator

from harness.matrix.cells import Cube, iter_cells
from harness.matrix.model import Matrix, format_value
from harness.report.jsonfmt import FORMAT_VERSION
from harness.report.model import axes_of, output_label, target_label


def describe(matrix: Matrix) -> dict:
    """The matrix as `harness matrix --format json` writes it."""
    return {
        "format_version": FORMAT_VERSION,
        "name": matrix.name,
        "axes": axes_of(matrix),
        "cells": matrix.size,
    }


def render_text(matrix: Matrix) -> str:
    target = matrix.target
    lines = [
        f"{matrix.name}  ({matrix.source})",
        *([matrix.description] if matrix.description else []),
        f"target: {target_label(target)}, output {output_label(target)}, world {matrix.world}",
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


def cell_lines(matrix: Matrix, where: Cube, fmt: str) -> Iterator[str]:
    """Each cell inside `where`, in order: `AXIS=VALUE ...` (text) or a JSON object."""
    if fmt == "json":  # each `"axis": value` once, joined as json.dumps joins a dict's
        pairs = [[f"{json.dumps(a.name)}: {json.dumps(v)}" for v in a.values] for a in matrix.axes]
        for cell in iter_cells(where):
            yield "{" + ", ".join(p[d] for p, d in zip(pairs, cell, strict=True)) + "}"
        return
    texts = [[f"{axis.name}={format_value(v)}" for v in axis.values] for axis in matrix.axes]
    for cell in iter_cells(where):
        yield " ".join(t[d] for t, d in zip(texts, cell, strict=True))
