"""`harness passes` reports: one line per pass and what blocks it (text), or one JSON object."""

from __future__ import annotations

import json

from harness.engine.worlds import facts_of
from harness.gitio import Revision
from harness.matrix.model import Matrix
from harness.report.jsonfmt import FORMAT_VERSION
from harness.report.text import revision_line
from harness.scan.passes import PassReport


def render_text(matrix: Matrix, revision: Revision, reports: list[PassReport]) -> str:
    ready, facts = sum(r.evaluable for r in reports), facts_of(matrix)
    lines = [
        f"passes registered at {revision_line(revision)}",
        f"{ready} of {len(reports)} evaluate under matrix {matrix.name}"
        if reports
        else f"no function in {matrix.target.path} is registered with @{facts.register}",
        "",
    ]
    width = max((len(r.survey.name) for r in reports), default=0)
    for r in reports:
        declares = ", ".join(r.survey.declares) or "-"
        state = (
            "ok"
            if r.evaluable
            else "needs "
            + ", ".join([*(f"field {f}" for f in r.needs_fields), *(n for n, _ in r.blocked_by)])
        )
        lines.append(
            f"  {r.survey.name:<{width}}  line {r.survey.line:<5}  declares {declares}: {state}"
        )
        lines.extend(f"      {name}: {reason}" for name, reason in r.blocked_by)
        lines.extend(f"      {line}" for line in _placement(r, matrix.size, facts.display))
        lines.extend(f"      {line}" for line in _one_way(r))
    return "\n".join(lines) + "\n"


ONE_WAY_SHOWN = 3  # conditions listed per pass in text; JSON lists all


def _one_way(r: PassReport) -> list[str]:
    """The conditions no cell takes both ways: a change there would not show."""
    if not r.one_way:
        return []
    shown = [f"{where} `{text}` {seen}" for where, text, seen in r.one_way[:ONE_WAY_SHOWN]]
    more = len(r.one_way) - ONE_WAY_SHOWN
    tail = [f"... and {more} more (--format json lists all)"] if more > 0 else []
    return [f"{len(r.one_way)} condition(s) no cell takes both ways:", *shown, *tail]


def _placement(r: PassReport, size: int, project: str) -> list[str]:
    """Where the project runs the pass, and on which cells of the matrix it runs."""
    lines = []
    if r.order is None and r.reached is False:
        lines.append(f"not reached from {project}'s entry point: run last, in file order")
    if r.runs_under:
        lines.append(f"{project} runs it only under {r.runs_under}")
    if r.cells is not None:
        lines.append(f"runs on {r.cells:,} of {size:,} cells (target.guards)")
    return lines


def render_json(revision: Revision, reports: list[PassReport]) -> str:
    document = {
        "format_version": FORMAT_VERSION,
        "rev": revision.expr,
        "sha": revision.sha,
        "passes": [
            {
                "name": r.survey.name,
                "line": r.survey.line,
                "declares": list(r.survey.declares),
                "reads": [f"view.{a}" for a in r.survey.reads] + list(r.survey.world),
                "needs_fields": list(r.needs_fields),
                "blocked_by": [{"name": n, "reason": reason} for n, reason in r.blocked_by],
                "order": r.order,
                "runs_under": r.runs_under,
                "cells": r.cells,
                "one_way": [{"where": w, "condition": t, "seen": s} for w, t, s in r.one_way],
            }
            for r in reports
        ],
    }
    return json.dumps(document) + "\n"
