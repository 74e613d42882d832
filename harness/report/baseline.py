"""Baselines: a revision's whole outcome table as a small, stable, readable JSON file.

The table is written as, per distinct outcome, the disjoint cubes (a value
list per constrained axis, as in diff rules) that hold it, found by splitting
the table on its axes in order and joining the values of an axis whose
sub-tables are covered alike. Outcomes, cubes and values come in a fixed
order, one cube per line, so a change to a baseline reads well in a diff.
Reading checks the axes against the matrix and that the cubes cover every
cell exactly once.
"""

from __future__ import annotations

import json
from array import array
from pathlib import Path
from typing import Any

from harness.engine.outcome import (
    ABSENT,
    CODE_TYPE,
    ERROR,
    KEPT,
    UNEVALUABLE,
    VALUE,
    Filler,
    Outcome,
    OutcomeTable,
)
from harness.errors import HarnessError
from harness.files import write_output
from harness.gitio import Revision
from harness.matrix.cells import Cube, bits_of, cube_size
from harness.matrix.model import Matrix, same_value
from harness.report.model import axes_of, function_label, outcome_json, output_label

FORMAT = 1
UNSET = 0xFFFFFFFF


def table_cover(matrix: Matrix, table: OutcomeTable) -> list[tuple[Cube, int]]:
    """Disjoint cubes, each of one outcome code, covering every cell of the table."""
    radices, strides, full = matrix.radices, matrix.strides, matrix.full_masks()
    raw, width = table.codes.tobytes(), table.codes.itemsize

    def block(axis: int, start: int) -> tuple[tuple[Cube, int], ...]:
        """The cover of the sub-table from `axis` on, starting at cell `start`."""
        if axis == len(radices):  # one cell
            return (((), table.codes[start]),)
        length = strides[axis] * radices[axis]
        cells = raw[start * width : (start + length) * width]
        if cells == cells[:width] * length:  # one outcome throughout
            return ((full[axis:], table.codes[start]),)
        groups: dict[tuple[tuple[Cube, int], ...], int] = {}
        for value in range(radices[axis]):
            child = block(axis + 1, start + value * strides[axis])
            groups[child] = groups.get(child, 0) | 1 << value
        return tuple(
            ((mask, *rest), code) for child, mask in groups.items() for rest, code in child
        )

    return list(block(0, 0)) if matrix.size else []


def outcome_from_json(data: Any, fields: tuple[str, ...], where: str) -> Outcome:
    if isinstance(data, dict) and len(data) == 1:
        ((kind, value),) = data.items()
        multi = len(fields) > 1 and kind == "declares" and isinstance(value, dict)
        if multi and set(value) <= set(fields):
            pairs = tuple((f, value[f]) for f in fields if f in value)
            return Outcome(VALUE, pairs) if pairs else Outcome(KEPT)
        if len(fields) == 1 and kind == fields[0]:
            return Outcome(VALUE, value)
        if len(fields) == 1 and kind == "keeps" and value == fields[0]:
            return Outcome(KEPT)
        if kind in (ERROR, ABSENT, UNEVALUABLE):
            return Outcome(kind, value)
    raise HarnessError(f"{where}: unknown outcome {json.dumps(data)}")


def render(matrix: Matrix, revision: Revision, table: OutcomeTable) -> str:
    """The baseline file's text."""
    field, fields = output_label(matrix.target), matrix.target.outputs
    by_code: dict[int, list[Cube]] = {}
    for masks, code in table_cover(matrix, table):
        by_code.setdefault(code, []).append(masks)
    entries = sorted(
        (json.dumps(outcome_json(table.outcomes[code], fields)), sorted(cubes))
        for code, cubes in by_code.items()
    )
    head = {
        "harness_baseline": FORMAT,
        "matrix": matrix.name,
        "target": {
            "path": matrix.target.path,
            "function": function_label(matrix.target),
            "output": field,
        },
        "rev": revision.expr,
        "sha": revision.sha,
        "cells": matrix.size,
        "branches": table.branches.hex(),  # which way each condition went (engine.branches)
        "reached": list(table.reached),
    }
    lines = ["{"]
    lines += [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    lines.append('  "axes": {')
    axes = list(axes_of(matrix).items())
    for n, (name, values) in enumerate(axes):
        lines.append(f"    {json.dumps(name)}: {json.dumps(values)}{_comma(n, axes)}")
    lines += ["  },", '  "outcomes": [']
    for n, (outcome, cubes) in enumerate(entries):
        count = sum(cube_size(c) for c in cubes)
        lines.append(f'    {{"outcome": {outcome}, "cells": {count}, "where": [')
        for k, cube in enumerate(cubes):
            lines.append(f"      {json.dumps(_where(matrix, cube))}{_comma(k, cubes)}")
        lines.append(f"    ]}}{_comma(n, entries)}")
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def _comma(n: int, items: list) -> str:
    return "," if n < len(items) - 1 else ""


def _where(matrix: Matrix, cube: Cube) -> dict[str, list[Any]]:
    return {
        axis.name: [axis.values[i] for i in bits_of(mask)]
        for axis, mask in zip(matrix.axes, cube, strict=True)
        if len(bits_of(mask)) < len(axis.values)
    }


def snapshot(matrix: Matrix, revision: Revision, table: OutcomeTable, path: str) -> None:
    """Write `table`, the outcomes at `revision`, as the baseline file `path` ("-": stdout)."""
    write(path, render(matrix, revision, table))


def write(path: str, text: str) -> None:
    try:
        write_output(path, text)  # "-": standard output
    except OSError as exc:
        raise HarnessError(
            f"cannot write the baseline {path}: {exc.strerror or exc} (it is left as it was)"
        ) from None


def sha_of(path: str) -> str | None:
    """The commit a baseline file was written at (None: a release, the working tree, or a
    file that does not say; `read` reports a file it cannot read)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    sha = doc.get("sha") if isinstance(doc, dict) else None
    return sha if isinstance(sha, str) and len(sha) == 40 and sha.isalnum() else None


def read(path: str, matrix: Matrix) -> OutcomeTable:
    """The outcome table a baseline file holds, checked against `matrix`."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HarnessError(
            f"baseline {path} does not exist: write it with harness snapshot REV -o {path} "
            "(or pytest --override-update)"
        ) from None
    except (OSError, ValueError) as exc:
        raise HarnessError(f"baseline {path} cannot be read: {exc}") from None
    if not isinstance(doc, dict) or doc.get("harness_baseline") != FORMAT:
        raise HarnessError(f"baseline {path} is not a harness baseline (format {FORMAT})")
    _check_axes(path, doc.get("axes"), matrix)
    return _decode(path, doc, matrix)


def _check_axes(path: str, axes: Any, matrix: Matrix) -> None:
    expected = axes_of(matrix)
    same = (
        isinstance(axes, dict)
        and list(axes) == list(expected)
        and all(
            len(axes[n]) == len(v) and all(map(same_value, axes[n], v)) for n, v in expected.items()
        )
    )
    if not same:
        raise HarnessError(
            f"baseline {path} was written for other axes than {matrix.name}'s: "
            "write it again (harness snapshot, or pytest --override-update)"
        )


def _decode(path: str, doc: dict[str, Any], matrix: Matrix) -> OutcomeTable:
    filler, outcomes, total = Filler(matrix, UNSET), [], 0
    fields = matrix.target.outputs
    for n, entry in enumerate(doc.get("outcomes") or []):
        where = f"baseline {path}, outcome {n + 1}"
        outcomes.append(outcome_from_json(entry.get("outcome"), fields, where))
        for cube_where in entry.get("where") or []:
            cube = _cube(matrix, cube_where, where)
            total += cube_size(cube)
            filler.fill(list(cube), n)
    codes: array = filler.codes
    if total != matrix.size or UNSET in codes:
        raise HarnessError(
            f"baseline {path}: its cubes do not cover the {matrix.size:,} cells exactly once; "
            "write it again"
        )
    branches, reached = _coverage(doc, matrix)
    return OutcomeTable(outcomes, array(CODE_TYPE, codes), branches, reached)


def _coverage(doc: dict[str, Any], matrix: Matrix) -> tuple[bytes, tuple[int, ...]]:
    """The coverage the baseline records, when it is whole (a baseline written before
    harness recorded coverage has none: the pytest entry then evaluates its commit)."""
    from harness.engine.branches import check_reached, flags_from_hex
    from harness.engine.plain import Malformed

    try:
        branches = flags_from_hex(doc.get("branches"))
        return branches, check_reached(doc.get("reached"), len(branches), matrix.size)
    except Malformed:
        return b"", ()


def _cube(matrix: Matrix, where: Any, context: str) -> Cube:
    if not isinstance(where, dict) or any(n not in matrix.axis_names for n in where):
        raise HarnessError(f"{context}: bad cube {json.dumps(where)}")
    masks = []
    for axis, full in zip(matrix.axes, matrix.full_masks(), strict=True):
        if axis.name not in where:
            masks.append(full)
            continue
        mask = 0
        for value in where[axis.name]:
            found = [i for i, v in enumerate(axis.values) if same_value(v, value)]
            if not found:
                raise HarnessError(f"{context}: {axis.name} has no value {json.dumps(value)}")
            mask |= 1 << found[0]
        masks.append(mask)
    return tuple(masks)
