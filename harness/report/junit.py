"""The diff report as JUnit XML: one test case per summary rule, failed (the rule is a change).

With no change, one passing case says so, so test-report tools show the
matrix ran. Text goes through ElementTree, which escapes it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from harness.report.model import DiffReport, function_label, output_label
from harness.report.text import revision_line


def render(report: DiffReport) -> str:
    matrix, field = report.matrix, output_label(report.matrix.target)
    failures = len(report.rules)
    cases = max(failures, 1)
    suites = ET.Element("testsuites", name="harness diff", tests=str(cases), failures=str(failures))
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"{matrix.name}: {function_label(matrix.target)}",
        tests=str(cases),
        failures=str(failures),
        errors="0",
    )
    props = ET.SubElement(suite, "properties")
    for side, rev in (("base", report.base), ("head", report.head)):
        ET.SubElement(props, "property", name=side, value=revision_line(rev))
    if not report.rules:
        ET.SubElement(suite, "testcase", classname=matrix.name, name=f"no cell changes {field}")
    for n, rule in enumerate(report.rules, 1):
        where = ", ".join(c.text() for c in rule.conditions) or "every cell"
        case = ET.SubElement(
            suite,
            "testcase",
            classname=matrix.name,
            name=f"rule {n}: {rule.transition} where {where}",
        )
        failure = ET.SubElement(
            case,
            "failure",
            type="OutcomeChanged",
            message=f"{rule.cells:,} cells change {field}: {rule.transition}",
        )
        failure.text = f"where {where}\nbase: {revision_line(report.base)}\n" + (
            f"head: {revision_line(report.head)}"
        )
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, "unicode") + "\n"
