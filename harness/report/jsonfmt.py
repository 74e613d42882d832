"""The diff report as one JSON object (its JSON Schema: docs/report.schema.json).

The same document, with a sample of cells instead of all of them, is what the
markdown renderer reads, so a report rendered in CI from the JSON artifact
and one rendered at the terminal are the same text.

Every JSON report of every command starts with `format_version`: FORMAT_VERSION,
raised when a report changes incompatibly (a key removed, renamed or retyped; a
meaning changed). Adding a key is compatible: readers ignore keys they do not know.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from harness.gitio import Revision
from harness.report.because import because_json
from harness.report.blind import spot_json
from harness.report.fields import of_report
from harness.report.model import DiffReport, RuleView, axes_of, function_label, output_label

FORMAT_VERSION = 1  # the shape of every JSON report; see the module docstring


def document_head(report: DiffReport) -> dict[str, Any]:
    target = report.matrix.target
    sides = {}
    for side, rev in (("base", report.base), ("head", report.head)):
        sides[side] = revision_json(rev, report.lines.get(side))
        if target.pipeline:
            sides[side]["skipped_passes"] = list(report.skipped.get(side, ()))
        if side in report.every_cell:
            sides[side]["every_cell"] = report.every_cell[side]
        if report.ran.get(side):
            sides[side]["ran"] = report.ran[side]
        if report.defaults.get(side):
            sides[side]["defaults"] = dict(report.defaults[side])
        if report.unguarded.get(side):
            sides[side]["unguarded_passes"] = dict(report.unguarded[side])
        if report.unused_guards.get(side):
            sides[side]["unused_guards"] = list(report.unused_guards[side])
        if report.coverage.get(side):
            sides[side]["coverage"] = [
                {"pass": e.name, "cells": e.cells, "why": e.why} for e in report.coverage[side]
            ]
    described = {
        "path": target.path,
        "function": function_label(target),
        "output": output_label(target),
    }
    if target.pipeline:
        described["passes"] = list(target.passes)
    if target.otherwise:
        described["otherwise"] = [{"path": p, "entry": e} for p, e in target.otherwise]
    if len(target.outputs) > 1:
        described["outputs"] = list(target.outputs)
    return {
        "format_version": FORMAT_VERSION,
        "matrix": report.matrix.name,
        "status": report.status,
        "target": described,
        **sides,
        "cells": report.matrix.size,
        "axes": axes_of(report.matrix),
        "notes": report.notes,
        "cannot_tell": report.cannot_tell,
        "blind_spots": [spot_json(spot) for spot in report.blind_spots],
        "changed_defaults": [
            {"field": name, "base": before, "head": after}
            for name, before, after in report.changed_defaults
        ],
    }


def document(report: DiffReport, sample: int) -> dict[str, Any]:
    """The JSON document with `changed` cut to a sample (one cell per rule first)."""
    return {
        **document_head(report),
        "changed_count": report.changed,
        "changed": report.sample(sample),
        "summary": summary_json(report.rules),
        **fields_json(report),
    }


def fields_json(report: DiffReport) -> dict[str, Any]:
    """`{"fields": {field: {"cells": n, "summary": [rule]}}}` for a several-field matrix
    (the OUTCOME group under "(outcome)"); nothing for one field."""
    if len(report.matrix.target.outputs) < 2:
        return {}
    groups = of_report(report)
    return {
        "fields": {g.field: {"cells": g.cells, "summary": summary_json(g.rules)} for g in groups}
    }


def nothing_inferred(matrix: str, message: str) -> dict[str, Any]:
    """The report of a diff on an inferred matrix when nothing could be inferred: no cell,
    no change, and the one-line reason (a document still, so CI finds the file)."""
    return {"format_version": FORMAT_VERSION, "matrix": matrix, "status": 0, "cannot_tell": [],
            "blind_spots": [], "changed_count": 0, "changed": [], "summary": [],
            "message": message}  # fmt: skip


BATCH = 512  # changed cells per chunk, at most
CHUNK = 1 << 20  # characters a chunk aims at: cells with large outcomes come fewer at a time
FIRST_BATCH = 16  # cells in the first chunk, which measures how large a cell is


def render_chunks(report: DiffReport) -> Iterator[str]:
    """The JSON text in pieces of about CHUNK characters or BATCH cells, so a large
    `changed` list streams instead of piling up (`"A" * 10000` on 349,920 cells is 7 GB
    of JSON: the writer takes the pieces one at a time, never the whole)."""
    yield json.dumps(document_head(report))[:-1] + ', "changed": ['
    batch: list[dict[str, Any]] = []
    size, separator = FIRST_BATCH, ""  # then as many as make about CHUNK characters
    for item in report.changed_cells():
        batch.append(item)
        if len(batch) >= size:  # one dumps per batch: 300,000 small cells in big strides
            text = json.dumps(batch)[1:-1]
            yield separator + text
            separator, size = ", ", _next_batch(size, len(text))
            batch.clear()
    if batch:
        yield separator + json.dumps(batch)[1:-1]
    rest = {"summary": summary_json(report.rules), **fields_json(report)}
    yield "], " + json.dumps(rest)[1:] + "\n"


def _next_batch(size: int, length: int) -> int:
    """How many cells the next chunk takes, after `size` cells made `length` characters."""
    return max(1, min(BATCH, size * CHUNK // max(length, 1)))


def summary_json(rules: list[RuleView]) -> list[dict[str, Any]]:
    """The rules as every JSON report writes them (`because` when it was worked out)."""
    return [_rule_json(rule) for rule in rules]


def _rule_json(rule: RuleView) -> dict[str, Any]:
    out = {"where": rule.where, "cells": rule.cells, "transition": rule.transition}
    if rule.because:
        out["because"] = [because_json(d) for d in rule.because]
    if rule.because_more:
        out["because_more"] = rule.because_more
    return out


def revision_json(rev: Revision, line: int | None = None) -> dict[str, Any]:
    return {"rev": rev.expr, "sha": rev.sha, "subject": rev.subject, "line": line}
