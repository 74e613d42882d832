"""The diff report as GitHub-flavoured markdown (step summaries, PR comments)."""

from __future__ import annotations

from harness.matrix import format_value
from harness.report.model import DiffReport, RuleView, short_outcome
from harness.report.text import revision_line


def render(report: DiffReport, sample: int = 10) -> str:
    target, field = report.matrix.target, report.matrix.target.output
    lines = [
        f"### {report.matrix.name}: `{target.function}` in `{target.path}`",
        "",
        f"- base: {escape(revision_line(report.base))}",
        f"- head: {escape(revision_line(report.head))}",
    ]
    lines.extend(f"- {side}: {escape(note)}" for side, note in report.notes.items())
    lines.append("")
    if not report.changed:
        lines.append(f"No cell changes `{field}` ({report.matrix.size:,} cells compared).")
        return "\n".join(lines) + "\n"
    lines.append(f"**{report.changed:,} of {report.matrix.size:,} cells change `{field}`:**")
    lines.append("")
    lines.extend(rule_table(report.rules))
    if sample > 0:
        lines.extend(_sample(report, sample))
    return "\n".join(lines) + "\n"


def rule_table(rules: list[RuleView]) -> list[str]:
    lines = ["| # | cells | transition | where |", "|---|---:|---|---|"]
    for n, rule in enumerate(rules, 1):
        where = ", ".join(f"`{c.text()}`" for c in rule.conditions) or "every cell"
        lines.append(f"| {n} | {rule.cells:,} | {escape(rule.transition)} | {where} |")
    return lines


def _sample(report: DiffReport, sample: int) -> list[str]:
    axes = [axis.name for axis in report.matrix.axes]
    field = report.matrix.target.output
    shown = min(sample, report.changed)
    lines = [
        "",
        f"<details><summary>Changed cells ({shown} of {report.changed:,})</summary>",
        "",
        "| " + " | ".join(axes) + " | base | head |",
        "|" + "---|" * (len(axes) + 2),
    ]
    for item in report.sample(shown):
        values = [format_value(item["cell"][a]) for a in axes]
        ends = [escape(short_outcome(item[side], field)) for side in ("base", "head")]
        lines.append("| " + " | ".join(values + ends) + " |")
    lines.extend(["", "</details>"])
    return lines


def escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;")
