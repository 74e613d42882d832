"""The diff report as JUnit XML: one test case per summary rule, failed (the rule is a change).

With no change, one passing case says so, so test-report tools show the
matrix ran. Text goes through ElementTree, which escapes markup, then through
`escape.xml_text`, which removes what XML 1.0 forbids (control characters, lone
surrogates from evaluated code) and any `::` that would start a line.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from harness.report.escape import xml_text
from harness.report.model import DiffReport, function_label, output_label
from harness.report.text import revision_line


def render(report: DiffReport) -> str:
    matrix, field = report.matrix, output_label(report.matrix.target)
    unseen = _unseen_cases(report)
    failures = len(report.rules) + len(unseen)
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
    if not failures:
        ET.SubElement(suite, "testcase", classname=matrix.name, name=f"no cell changes {field}")
    for name, message, text in unseen:
        case = ET.SubElement(suite, "testcase", classname=matrix.name, name=name)
        ET.SubElement(case, "failure", type="CannotTell", message=message).text = text
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
    return xml_text(
        '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, "unicode") + "\n"
    )


def _unseen_cases(report: DiffReport) -> list[tuple[str, str, str]]:
    """(name, message, text) of a failed case for each thing the diff could not see."""
    cases = [("cannot tell", reason, reason) for reason in report.cannot_tell]
    for spot in report.blind_spots:
        name = f"blind spot: {spot.where()} ({spot.side})"
        cases.append((name, f"`{spot.text}` is {spot.seen} on the matrix", spot.hint))
    return cases
