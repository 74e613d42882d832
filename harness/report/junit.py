"""The diff report as JUnit XML: one test case per summary rule, failed (the rule is a change).

With no change, one passing case says so, so test-report tools show the
matrix ran. At most MAX_RULE_CASES rules get a case each; the rest are one
failed case that counts them (the JSON report lists every rule): a change
spread over a checkerboard of cells would otherwise make a case per cell.
Text goes through ElementTree, which escapes markup, then through
`escape.xml_text`, which removes what XML 1.0 forbids (control characters, lone
surrogates from evaluated code) and any `::` that would start a line.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from harness.report.escape import xml_text
from harness.report.model import DiffReport, function_label, output_label
from harness.report.text import revision_line

MAX_RULE_CASES = 1_000


def render(report: DiffReport) -> str:
    matrix, field = report.matrix, output_label(report.matrix.target)
    unseen, more = _unseen_cases(report), _more_rules(report)
    failures = min(len(report.rules), MAX_RULE_CASES) + len(more) + len(unseen)
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
    for n, rule in enumerate(report.rules[:MAX_RULE_CASES], 1):
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
    for name, message, text in more:
        case = ET.SubElement(suite, "testcase", classname=matrix.name, name=name)
        ET.SubElement(case, "failure", type="OutcomeChanged", message=message).text = text
    ET.indent(suites)
    return xml_text(
        '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, "unicode") + "\n"
    )


def _more_rules(report: DiffReport) -> list[tuple[str, str, str]]:
    """One failed case for the rules past MAX_RULE_CASES, if there are any."""
    more = report.rules[MAX_RULE_CASES:]
    if not more:
        return []
    cells = sum(rule.cells for rule in more)
    message = f"{len(more):,} more rules change {cells:,} more cells"
    return [(f"rules {MAX_RULE_CASES + 1:,} to {len(report.rules):,}", message,
             f"{message}; the JSON report (--format json) lists every rule")]  # fmt: skip


def _unseen_cases(report: DiffReport) -> list[tuple[str, str, str]]:
    """(name, message, text) of a failed case for each thing the diff could not see."""
    cases = [("cannot tell", reason, reason) for reason in report.cannot_tell]
    for spot in report.blind_spots:
        name = f"blind spot: {spot.where()} ({spot.side})"
        cases.append((name, f"`{spot.text}` is {spot.seen} on the matrix", spot.hint))
    return cases
