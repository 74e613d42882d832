"""Every report a command writes, by (report kind, format): one table.

A renderer's module is imported only when its format is asked for (a warm diff's
start is mostly imports), and within a kind every renderer takes the same
arguments, so a command picks its renderer in one lookup and its `--format`
choices are the table's:

- diff: (the `DiffReport`, `Shown`); json streams chunks, the rest return text;
- history: (the `HistoryReport`);
- bisect: (the matrix, the `BisectResult`); text is the conclusion (the steps and
  the header are written as the search goes, `harness.report.bisect`);
- explain: (the matrix, the revision, the cell, its trace);
- passes: (the matrix, the revision, the pass reports);
- matrix: (the matrix).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import import_module
from typing import Any


@dataclass(frozen=True)
class Shown:
    """How a diff report is shown beyond its format: the changed cells listed (text,
    markdown, json-sample), the files an html report shows code from ((side, path) ->
    text or None), and the grid's axes (markdown, html; None: the best pair)."""

    sample: int = 10
    code: Callable[[str, str], str | None] | None = None
    grid: tuple[str, str] | None = None


def _json_sample(module: Any, report: Any, shown: Shown) -> str:
    return json.dumps(module.document(report, shown.sample)) + "\n"


def _describe(module: Any, matrix: Any) -> str:
    return json.dumps(module.describe(matrix)) + "\n"


def _passes_json(module: Any, matrix: Any, revision: Any, reports: list) -> str:
    return module.render_json(revision, reports)


# (kind, format) -> (the module under harness.report, how to call it with the kind's arguments)
TABLE: dict[tuple[str, str], tuple[str, Callable[..., str | Iterator[str]]]] = {
    ("diff", "text"): ("text", lambda m, report, shown: m.render(report, shown.sample)),
    ("diff", "markdown"): (
        "markdown",
        lambda m, report, shown: m.render(report, shown.sample, shown.grid),
    ),
    ("diff", "json"): ("jsonfmt", lambda m, report, shown: m.render_chunks(report)),
    ("diff", "json-sample"): ("jsonfmt", _json_sample),
    ("diff", "junit"): ("junit", lambda m, report, shown: m.render(report)),
    ("diff", "github"): ("annotations", lambda m, report, shown: m.render(report)),
    ("diff", "html"): ("html", lambda m, report, shown: m.render(report, shown.code, shown.grid)),
    ("history", "text"): ("history", lambda m, found: m.render_text(found)),
    ("history", "markdown"): ("history", lambda m, found: m.render_markdown(found)),
    ("history", "json"): ("history", lambda m, found: m.render_json(found)),
    ("history", "html"): ("html_history", lambda m, found: m.render_history(found)),
    ("bisect", "text"): ("bisect", lambda m, matrix, result: m.conclusion_text(matrix, result)),
    ("bisect", "markdown"): ("bisect", lambda m, matrix, result: m.render_markdown(matrix, result)),
    ("bisect", "json"): ("bisect", lambda m, matrix, result: m.render_json(matrix, result)),
    ("bisect", "html"): ("html_history", lambda m, matrix, result: m.render_bisect(matrix, result)),
    ("explain", "text"): ("explain", lambda m, *traced: m.render_text(*traced)),
    ("explain", "json"): ("explain", lambda m, *traced: m.render_json(*traced)),
    ("passes", "text"): ("passes", lambda m, *surveyed: m.render_text(*surveyed)),
    ("passes", "json"): ("passes", _passes_json),
    ("matrix", "text"): ("matrix", lambda m, matrix: m.render_text(matrix)),
    ("matrix", "json"): ("matrix", _describe),
}


def formats(kind: str) -> tuple[str, ...]:
    """The formats a kind of report is written in, in the table's order (the first is the
    default a command takes)."""
    return tuple(fmt for k, fmt in TABLE if k == kind)


def render(kind: str, fmt: str, *args: Any) -> str | Iterator[str]:
    """The report in `fmt`: text, or (a json diff) its chunks."""
    try:
        module, call = TABLE[(kind, fmt)]
    except KeyError:
        raise ValueError(f"no {fmt} renderer for a {kind} report") from None
    return call(import_module(f"harness.report.{module}"), *args)


def text(kind: str, fmt: str, *args: Any) -> str:
    """`render`, whole."""
    found = render(kind, fmt, *args)
    return found if isinstance(found, str) else "".join(found)
