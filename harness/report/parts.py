"""A diff in parts: `--matrix inferred` split into one matrix per changed pass.

When the one inferred matrix would be too large (`harness.scan.inferred`),
each pass whose code or read default changed is diffed alone. The parts are
reported one after the other in every format, under one status: 1 when a part
changed, else 4 when a part cannot tell or a run-order change was not
evaluated, else 0. A JSON report is one document whose `parts` are diff
documents (docs/report.schema.json: `diff_parts`).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass

from harness.report.escape import workflow_data, xml_text
from harness.report.model import EXIT_CANNOT_TELL, EXIT_CHANGED, EXIT_SAME, DiffReport


@dataclass
class Parts:
    """The diff reports of the parts, and what made them parts."""

    reports: list[DiffReport]
    whole: int  # the cells the one matrix would have had, at least
    max_cells: int
    unseen: tuple[str, ...] = ()  # run-order changes no part evaluates

    @property
    def status(self) -> int:
        statuses = {report.status for report in self.reports}
        if EXIT_CHANGED in statuses:
            return EXIT_CHANGED
        return EXIT_CANNOT_TELL if EXIT_CANNOT_TELL in statuses or self.unseen else EXIT_SAME

    @property
    def note(self) -> str:
        return (
            f"--matrix inferred: one matrix of every changed pass would have at least "
            f"{self.whole:,} cells, more than --max-cells {self.max_cells:,}; each of the "
            f"{len(self.reports)} passes whose code or read default changed is diffed alone, "
            "on the inputs it reads (a field another pass declares is an input like any other)."
        )

    def counts(self) -> str:
        """`K parts: C changed, T cannot tell, S no change`."""
        statuses = [report.status for report in self.reports]
        return (
            f"{len(statuses)} parts: {statuses.count(EXIT_CHANGED)} changed, "
            f"{statuses.count(EXIT_CANNOT_TELL)} cannot tell, {statuses.count(EXIT_SAME)} no change"
        )


def render(parts: Parts, fmt: str, one: Callable[[DiffReport], str], sample: int) -> str:
    """The parts in `fmt`; `one` renders a single report in it (text, markdown, github)."""
    if fmt in ("json", "json-sample"):
        return _json(parts, fmt, sample)
    if fmt == "junit":
        return _junit(parts, one)
    if fmt == "github":
        lines = [f"::warning::{workflow_data(reason)}" for reason in parts.unseen]
        return "".join(one(report) for report in parts.reports) + "".join(f"{x}\n" for x in lines)
    rule = "\n" + "-" * 72 + "\n\n"
    unseen = [f"Not evaluated: {reason}" for reason in parts.unseen]
    body = rule.join(one(report) for report in parts.reports)
    footer = "\n".join([*unseen, parts.counts()])
    return f"{parts.note}\n\n{body}{rule if body else ''}{footer}\n"


def _json(parts: Parts, fmt: str, sample: int) -> str:
    from harness.report import jsonfmt

    if fmt == "json":
        docs = ["".join(jsonfmt.render_chunks(report)).rstrip() for report in parts.reports]
    else:
        docs = [json.dumps(jsonfmt.document(report, sample)) for report in parts.reports]
    head = {
        "format_version": jsonfmt.FORMAT_VERSION,
        "matrix": "inferred",
        "status": parts.status,
        "message": parts.note,
        "cells": parts.whole,
        "unseen": list(parts.unseen),
    }
    return json.dumps(head)[:-1] + ', "parts": [' + ", ".join(docs) + "]}\n"


def _junit(parts: Parts, one: Callable[[DiffReport], str]) -> str:
    """One <testsuites> holding each part's suite, and a failed case per unseen reason."""
    root = ET.Element("testsuites", name="harness diff")
    for report in parts.reports:
        root.extend(ET.fromstring(one(report)))
    if parts.unseen:
        suite = ET.SubElement(root, "testsuite", name="inferred: run order",
                              tests=str(len(parts.unseen)), failures=str(len(parts.unseen)),
                              errors="0")  # fmt: skip
        for n, reason in enumerate(parts.unseen, 1):
            case = ET.SubElement(suite, "testcase", classname="inferred", name=f"run order {n}")
            ET.SubElement(case, "failure", type="CannotTell", message=reason)
    suites = list(root)
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in suites)))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in suites)))
    return xml_text(
        '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"
    )
