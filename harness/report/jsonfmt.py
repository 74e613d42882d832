"""The diff report as one JSON object (the schema is in the README)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from harness.git import Revision
from harness.report.model import DiffReport


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
    summary = [
        {"where": rule.where, "cells": rule.cells, "transition": rule.transition}
        for rule in report.rules
    ]
    yield '], "summary": ' + json.dumps(summary) + "}\n"


def render(report: DiffReport) -> str:
    return "".join(render_chunks(report))


def revision_json(rev: Revision) -> dict[str, Any]:
    return {"rev": rev.expr, "sha": rev.sha}
