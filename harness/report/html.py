"""The diff, history and bisect reports as one self-contained HTML page.

One file that works opened from disk: inline CSS and SVG, a few lines of vanilla
JavaScript (switching the grid's pair of axes, filtering the changed cells), no
network at all (a Content-Security-Policy forbids every fetch, and lets only the
page's own script run, by its hash). Rendered by Jinja2 with autoescaping on:
everything taken from the repository or a report (code, subjects, values,
messages) is hostile and reaches the page as text. Nothing is marked safe but
the page's own script and its JSON data, which `tojson` encodes with `<`, `>`,
`&` and `'` escaped, inside a `<script type="application/json">`.

The diff page is built from the JSON document (`jsonfmt.document`), as the
markdown report is, with its grids from `harness.report.grid`; the code beside
each `because` reason is read by the caller (`Sources`), since a report holds
lines and operands, not files.
"""

from __future__ import annotations

import base64
import encodings.unicode_escape  # noqa: F401 (Jinja decodes template literals with it)
import hashlib
import re
from collections.abc import Callable
from difflib import SequenceMatcher
from functools import cache
from itertools import combinations
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from harness.matrix.model import format_value
from harness.report.blind import spots_of
from harness.report.escape import flat
from harness.report.grid import Grid, best_axes, build_grid
from harness.report.jsonfmt import document
from harness.report.model import (
    EXIT_CANNOT_TELL,
    EXIT_CHANGED,
    DiffReport,
    axis_order,
    conditions_of,
    short_outcome,
)
from harness.report.text import revision_text

ROWS_SHOWN = 5000  # changed cells the page lists (filterable); the JSON report lists all
MAX_PAIRS = 45  # grids precomputed for every pair of axes up to this many pairs (10 axes)
MAX_SQUARES = 400  # a pair of axes with more squares than this gets no grid
CONTEXT = 2  # lines of code shown above and below a reason's line
LINE_WIDTH = 160  # characters of a code line shown
TEXT_WIDTH = 2000  # characters of a message, subject or value shown

Sources = Callable[[str, str], str | None]  # ("base"/"head", path) -> the file's text there


@cache
def environment() -> Environment:
    """The templates shipped in harness/report/templates, escaping every value."""
    env = Environment(
        loader=PackageLoader("harness.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = lambda n: f"{n:,}"
    env.filters["value"] = format_value
    return env


def page(template: str, **context: Any) -> str:
    """A page from `template`, with the shared script and its hash for the CSP."""
    env = environment()
    script = env.get_template("page.js").render()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return env.get_template(template).render(script=script, script_hash=digest, **context)


def render(report: Any, sources: Sources | None = None, axes: tuple[str, str] | None = None) -> str:
    """The diff page of a DiffReport, or of a `Parts` (each part in turn); `axes`: the grid
    shown first (--grid), in each report whose matrix has both."""
    reports = getattr(report, "reports", None)
    views = [
        diff_view(r, sources, n, axes)
        for n, r in enumerate([report] if reports is None else reports)
    ]
    split = reports is not None  # `--matrix inferred`, one part per changed pass
    note, counts = (visible(report.note), visible(report.counts())) if split else (None, None)
    unseen = [cut(visible(reason)) for reason in report.unseen] if split else []
    return page("diff.html.j2", reports=views, note=note, counts=counts, unseen=unseen,
                status=report.status, data=page_data(views), limits=limits())  # fmt: skip


def message_page(command: str, message: str, status: int = 0) -> str:
    """A page that says one thing (a diff with nothing to compare), so that CI finds the
    file it expects."""
    return page("message.html.j2", command=command, message=visible(message), status=status)


def limits() -> dict[str, int]:
    return {"rows": ROWS_SHOWN, "pairs": MAX_PAIRS, "squares": MAX_SQUARES}


def page_data(views: list[dict[str, Any]]) -> dict[str, Any]:
    """What the page embeds as JSON for tools: per report, its counts (no repository text
    beyond axis names)."""
    return {
        "reports": [
            {
                "status": v["status"],
                "cells": v["cells"],
                "changed": v["changed_count"],
                "shown": len(v["rows"]),
                "axes": v["axes"],
            }
            for v in views
        ]
    }


def diff_view(
    report: DiffReport, sources: Sources | None, n: int, first: tuple[str, str] | None = None
) -> dict[str, Any]:
    """Everything the diff template shows of one report, as plain values."""
    doc = inert(document(report, ROWS_SHOWN))
    path = doc["target"]["path"]  # where the traced operands stand (`scan.because`)
    code = (lambda side: sources(side, path)) if sources else None
    fields = doc["target"].get("outputs") or [doc["target"]["output"]]
    axes = list(doc["axes"])
    return {
        "id": f"r{n}",
        "doc": doc,
        "status": doc["status"],
        "verdict": verdict(doc),
        "cells": doc["cells"],
        "changed_count": doc["changed_count"],
        "revisions": {side: _revision(doc[side]) for side in ("base", "head")},
        "axes": axes,
        "axis_values": {a: [format_value(v) for v in doc["axes"][a]] for a in axes},
        "rules": rule_rows(doc["summary"], doc, code),
        "spots": spots_of(doc),
        "coverage": _coverage(doc),
        "grids": grids(report, first),
        "rows": [_row(item, axes, fields) for item in doc["changed"]],
    }


BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # bidi controls


def visible(text: Any) -> str:
    """`text` on one line (`escape.flat`), each bidi control U+FFFD: a value or subject
    cannot reorder what the page shows after it (an RTL override)."""
    return BIDI.sub("\ufffd", flat(text))


def inert(value: Any) -> Any:
    """`value` with every string on one line, each control character or lone surrogate
    U+FFFD (`escape.flat`): what the page shows of a report is printable text, and a file
    can hold it. Escaping for HTML is the template's (autoescape)."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {inert(k): inert(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [inert(v) for v in value]
    return value


def verdict(doc: dict[str, Any]) -> str:
    """The result in words, with its exit status."""
    status, changed, cells = doc["status"], doc["changed_count"], doc["cells"]
    if status == EXIT_CHANGED:
        return f"Changed: {changed:,} of {cells:,} cells change their outcome (exit 1)"
    if status == EXIT_CANNOT_TELL:
        reasons = "; ".join(doc.get("cannot_tell") or []) or "blind spots (below)"
        return f"Cannot tell (exit 4): {cut(reasons)}"
    return (
        f"No change: none of {cells:,} cells changes, and every changed condition was "
        "taken both ways (exit 0)"
    )


def cut(text: Any, width: int = TEXT_WIDTH) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 3] + "..."


def _revision(rev: dict[str, Any]) -> str:
    return cut(revision_text(rev["rev"], rev["sha"], rev.get("subject") or ""))


def _coverage(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per side, the passes run and on how many cells (where it looked)."""
    return {side: doc[side].get("coverage", []) for side in ("base", "head")}


def _row(item: dict[str, Any], axes: list[str], fields: list[str]) -> list[str]:
    values = [format_value(item["cell"][a]) for a in axes]
    return values + [cut(short_outcome(item[s], fields), 80) for s in ("base", "head")]


def rule_rows(rules: list, doc: dict[str, Any], code: Callable | None) -> list[dict[str, Any]]:
    """Rules of a JSON document (each `where` over `doc["axes"]`) as the rule table shows
    them; `code`: side -> the target file's text there, for the code beside each reason."""
    order = axis_order(doc["axes"])
    return [_rule_row(rule, doc, code, order) for rule in rules]


def _rule_row(rule: dict[str, Any], doc: dict[str, Any], code: Callable | None,
              order: dict[str, int]) -> dict[str, Any]:  # fmt: skip
    conditions = conditions_of(rule["where"], doc["axes"], order)
    return {
        "cells": rule["cells"],
        "transition": cut(rule["transition"]),
        "where": [cut(c.text()) for c in conditions],
        "because": [_reason(b, code) for b in rule.get("because", [])],
        "more": rule.get("because_more", 0),
    }


def _reason(reason: dict[str, Any], code: Callable | None) -> dict[str, Any]:
    """A `because` line, and the code at each side around the operand, marked."""
    source = str(reason.get("source", ""))
    shown: dict[str, Any] = {"base": None, "head": None}
    events = {s: e for s in ("base", "head") if isinstance(e := reason.get(s), dict)}
    if code is None or not events:
        return _reason_text(reason, source, shown)
    texts = {side: code(side) for side in ("base", "head")}
    for side, event in events.items():
        if texts[side] is not None and type(event.get("line")) is int:
            shown[side] = excerpt(texts[side], event["line"], source)
    if len(events) == 1 and None not in texts.values():  # new or gone: where it would be
        ((have, event),) = events.items()
        other = "head" if have == "base" else "base"
        line = counterpart(texts[have], texts[other], event.get("line"))
        shown[other] = excerpt(texts[other], line, None) if line else None
    return _reason_text(reason, source, shown)


def _reason_text(reason: dict[str, Any], source: str, shown: dict[str, Any]) -> dict[str, Any]:
    text = str(reason.get("text", ""))
    lead = f"`{source}`"  # `because_text` starts with the operand's code
    code = (source, text[len(lead) :]) if source and text.startswith(lead) else ("", text)
    return {"code": cut(code[0]), "rest": cut(code[1]), "source": cut(source), **shown}


def excerpt(text: str, line: int, source: str | None) -> list[dict[str, Any]]:
    """The lines around `line` (1-based) of `text`, each {"n", "before", "mark", "after",
    "focus"}: on `line`, `mark` is the operand's text where it stands on it, else the
    whole line; with `source` None, nothing is marked (the place it would be)."""
    lines = [visible(row) for row in text.splitlines()]
    first, last = max(1, line - CONTEXT), min(len(lines), line + CONTEXT)
    out = []
    for n in range(first, last + 1):
        shown = lines[n - 1][:LINE_WIDTH]
        if n != line or source is None:
            out.append({"n": n, "before": shown, "mark": "", "after": "", "focus": n == line})
            continue
        at = shown.find(source) if source else -1
        if at < 0:
            at, source = len(shown) - len(shown.lstrip()), shown.lstrip()
        end = at + len(source)
        parts = {"before": shown[:at], "mark": shown[at:end], "after": shown[end:]}
        out.append({"n": n, **parts, "focus": True})
    return out


MAX_MATCHED = 20_000  # lines of a file matched against the other side's, at most


def counterpart(have: str, other: str, line: Any) -> int | None:
    """The line of `other` where `line` of `have` stands (matching equal runs of lines,
    as a diff does); None when either file is too long to match."""
    a, b = have.splitlines(), other.splitlines()
    if type(line) is not int or max(len(a), len(b)) > MAX_MATCHED or not b:
        return None
    for tag, i1, i2, j1, _ in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if i1 <= line - 1 < i2 or (i1 == i2 == line - 1):
            offset = line - 1 - i1 if tag == "equal" else 0
            return min(j1 + offset, len(b) - 1) + 1
    return len(b)


def grids(report: DiffReport, first: tuple[str, str] | None = None) -> dict[str, Any]:
    """The grids of the axis pairs the page offers, `first` (--grid, rows then columns)
    first when the matrix has both axes, else the best pair: every pair when there are at
    most MAX_PAIRS, else the pairs sharing an axis with the first."""
    names = [axis.name for axis in report.matrix.axes]
    if len(names) < 2:
        return {"items": [], "every_pair": True, "chosen": False}
    given = first is not None and first[0] != first[1] and set(first) <= set(names)
    top = first if given else best_axes(report)
    pairs = list(combinations(names, 2))
    every = len(pairs) <= MAX_PAIRS
    if not every:
        pairs = [p for p in pairs if set(p) & set(top)][:MAX_PAIRS]
    rest = [_rows_first(report, p) for p in pairs if set(p) != set(top)]
    items = [grid_view(build_grid(report, p)) for p in [top, *rest]]
    return {"items": [g for g in items if g is not None], "every_pair": every, "chosen": given}


def _rows_first(report: DiffReport, pair: tuple[str, str]) -> tuple[str, str]:
    """The pair with the axis of more values as rows (a wide grid reads badly)."""
    sizes = {axis.name: len(axis.values) for axis in report.matrix.axes}
    return pair if sizes[pair[0]] >= sizes[pair[1]] else (pair[1], pair[0])


def grid_view(grid: Grid) -> dict[str, Any] | None:
    """A grid as rows of squares, each with its text and colour class; None when it has
    more than MAX_SQUARES squares."""
    if len(grid.row_values) * len(grid.col_values) > MAX_SQUARES:
        return None
    rows = [
        {"label": visible(format_value(value)),
         "squares": [_square(grid, i, j) for j in range(len(grid.col_values))]}
        for i, value in enumerate(grid.row_values)
    ]  # fmt: skip
    return {
        "key": visible(f"{grid.rows} \u00d7 {grid.cols}"),
        "rows_axis": visible(grid.rows),
        "cols_axis": visible(grid.cols),
        "cols": [visible(format_value(v)) for v in grid.col_values],
        "rows": rows,
        "changed": sum(s.changed for s in grid.squares.values()),
    }


def _square(grid: Grid, i: int, j: int) -> dict[str, Any]:
    square = grid.squares[(i, j)]
    kind = "none" if not square.changed else "all" if square.changed == square.cells else "some"
    others = [
        visible(f"{name}: {', '.join(format_value(v) for v in values)}")
        for name, values in square.others
        if values
    ]
    return {
        "changed": square.changed,
        "cells": square.cells,
        "kind": kind,
        "transitions": [(cut(visible(text), 60), n) for text, n in square.transitions[:2]],
        "more": max(0, len(square.transitions) - 2),
        "others": cut("; ".join(others), 1000) if square.changed else "",
        "label": visible(
            f"{grid.rows}={format_value(square.row)}, {grid.cols}={format_value(square.col)}"
        ),
    }
