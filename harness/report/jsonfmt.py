"""The diff report as one JSON object (the schema is in the README)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from harness.git import Revision
from harness.report.model import DiffReport, RuleView


def render_chunks(report: DiffReport) -> Iterator[str]:
    """The JSON text in pieces, so a large `changed` list streams instead of piling up."""
    head = {
        "matrix": report.matrix.name,
        "target": {"path": report.matrix.target.path, "function": report.matrix.target.function},
        "base": revision_json(report.base),
        "head": revision_json(report.head),
        "cells": report.matrix.size,
    }
    yield json.dumps(head)[:-1] + ', "changed": ['
    for n, item in enumerate(report.changed_cells()):
        yield ("" if n == 0 else ", ") + json.dumps(item)
    yield '], "summary": ' + json.dumps(summary_json(report.rules)) + "}\n"


def render(report: DiffReport) -> str:
    return "".join(render_chunks(report))


def summary_json(rules: list[RuleView]) -> list[dict[str, Any]]:
    """The rules as every JSON report writes them."""
    return [{"where": r.where, "cells": r.cells, "transition": r.transition} for r in rules]


def revision_json(rev: Revision) -> dict[str, Any]:
    return {"rev": rev.expr, "sha": rev.sha}
