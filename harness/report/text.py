"""The diff report for people at a terminal: rules first, then a capped sample."""

from __future__ import annotations

from harness.engine.worlds import facts_of
from harness.gitio import Revision
from harness.matrix.model import Matrix, format_value
from harness.report.because import because_text, more_text
from harness.report.blind import SHOWN, blind_title, more_line, numbered, spot_json
from harness.report.fields import OUTCOME, OUTCOME_TITLE, RULES_SHOWN, of_report
from harness.report.model import (
    DiffReport,
    RuleView,
    defaults_line,
    every_cell_note,
    output_label,
    ran_note,
    short_outcome,
    target_label,
    unguarded_line,
)
from harness.scan.coverage import GUARDED, coverage_line


def render(report: DiffReport, sample: int = 10) -> str:
    lines = header(report)
    lines.append("")
    lines.extend(_body(report, sample))
    return "\n".join(lines) + "\n"


def header(report: DiffReport) -> list[str]:
    lines = [title(report.matrix)]
    for side, rev in (("base", report.base), ("head", report.head)):
        lines.append(f"{side}: {revision_line(rev)}")
        if side in report.notes:
            lines.append(f"      {report.notes[side]}")
        if report.skipped.get(side):
            lines.append(f"      passes absent here (skipped): {', '.join(report.skipped[side])}")
        if report.ran.get(side):
            lines.append(f"      {ran_note(report.ran[side], report.matrix.target)}")
        if side in report.every_cell:
            lines.append(f"      {every_cell_note(report.every_cell[side])}")
        if report.defaults.get(side):
            lines.append(f"      {defaults_line(report.defaults[side])}")
        if report.unguarded.get(side):
            project = facts_of(report.matrix).display
            lines.append(f"      {unguarded_line(report.unguarded[side], project)}")
        entries = report.coverage.get(side, ())
        if any(e.why == GUARDED for e in entries):
            lines.append(f"      {coverage_line(entries, report.matrix.size)}")
    for name, before, after in report.changed_defaults:
        lines.append(f"default changed: {name}: {before} -> {after}")
    if report.guards_for_nothing:
        names = ", ".join(report.guards_for_nothing)
        lines.append(f"target.guards names no pass of either revision (misspelt?): {names}")
    return lines


def title(matrix: Matrix) -> str:
    """The first line of every text report: the matrix and what it targets."""
    return f"{matrix.name}: {target_label(matrix.target)}"


def revision_line(rev: Revision) -> str:
    return revision_text(rev.expr, rev.sha, rev.subject)


def revision_text(expr: str, sha: str | None, subject: str) -> str:
    """`1a2b3c4d5e  subject  [#30835]`: the sha, the subject, and the name used if other."""
    if sha is None:
        return subject or "working tree"  # a release names itself; the working tree does not
    text = f"{sha[:10]}  {subject}".rstrip()
    if not sha.startswith(expr):
        text += f"  [{expr}]"
    return text


def _body(report: DiffReport, sample: int) -> list[str]:
    return [*_changes(report, sample), *unseen_lines(report)]


def unseen_lines(report: DiffReport) -> list[str]:
    """What the diff could not see: sides it could not tell, then blind spots."""
    return blind_lines(report.cannot_tell, report.blind_spots, bool(report.changed))


def blind_lines(reasons: list[str], blind: list, changed: bool) -> list[str]:
    """Why it cannot tell (`reasons`), then the blind spots (`harness.scan.spots`), as a
    diff, a history and a bisect say them."""
    lines: list[str] = []
    if reasons:
        lines += ["", f"Cannot tell: {'; '.join(reasons)}."]
    spots = [spot_json(s) for s in blind]
    if spots:
        lines += ["", blind_title(len(spots), changed)]
        lines += numbered(spots, SHOWN)
        lines += [f"  {line}" for line in more_line(len(spots))]
    return lines


def _changes(report: DiffReport, sample: int) -> list[str]:
    field, total = output_label(report.matrix.target), report.matrix.size
    if not report.compared:
        return ["Nothing was compared (the reasons are above)."]
    if not report.changed:
        but = ", but:" if report.status else "."
        return [f"No cell changes {field} ({total:,} cells compared){but}"]
    if len(report.matrix.target.outputs) > 1:
        lines = _by_field(report)
    else:
        count = len(report.rules)
        lines = [
            f"{report.changed:,} of {total:,} cells change {field}, "
            f"covered by {count} rule{'s' if count != 1 else ''}:",
            "",
        ]
        lines.extend(rule_lines(report.rules))
    if sample > 0:
        lines.extend(_sample(report, sample))
    return lines


def _by_field(report: DiffReport) -> list[str]:
    """The changes of a several-field matrix, field by field."""
    outputs = report.matrix.target.outputs
    groups = of_report(report)
    lines = [
        f"{report.changed:,} of {report.matrix.size:,} cells change at least one of "
        f"{len(outputs)} fields; by field:",
    ]
    for group in groups:
        count = len(group.rules)
        name = OUTCOME_TITLE if group.field == OUTCOME else group.field
        lines += ["", f"{name}: {group.cells:,} cells, {count} rule{'s' if count != 1 else ''}"]
        lines.extend(rule_lines(group.rules[:RULES_SHOWN]))
        if count > RULES_SHOWN:
            lines.append(f"  ... and {count - RULES_SHOWN} more (--format json lists all)")
    return lines


def rule_lines(rules: list[RuleView], indent: str = "  ") -> list[str]:
    """Numbered rules, each with its cell count, transition and wrapped conditions."""
    lines = []
    for n, rule in enumerate(rules, 1):
        lines.append(f"{indent}{n}. {rule.cells:,} cells: {rule.transition}")
        parts = [c.text() for c in rule.conditions] or ["every cell"]
        lines.extend(wrap_conditions(parts, indent + "   "))
        lines.extend(f"{indent}   because {because_text(d)}" for d in rule.because)
        if rule.because_more:
            lines.append(f"{indent}   {more_text(rule.because_more)}")
    return lines


def wrap_conditions(parts: list[str], indent: str, width: int = 96) -> list[str]:
    """`where a = 1, b in {x, y}, ...` wrapped under the rule, at most `width` wide."""
    lines, line = [], f"{indent}where"
    for n, part in enumerate(parts):
        piece = f" {part}" + ("," if n < len(parts) - 1 else "")
        if len(line) + len(piece) > width and line.strip() != "where":
            lines.append(line)
            line = indent + "     "
        line += piece
    lines.append(line)
    return lines


def _sample(report: DiffReport, sample: int) -> list[str]:
    shown = min(sample, report.changed)
    fields = report.matrix.target.outputs
    lines = ["", f"Changed cells ({shown} of {report.changed:,}; --format json lists all):"]
    for item in report.sample(shown):
        cell = " ".join(f"{k}={format_value(v)}" for k, v in item["cell"].items())
        before, after = short_outcome(item["base"], fields), short_outcome(item["head"], fields)
        lines.append(f"  {cell}: {before} -> {after}")
    return lines
