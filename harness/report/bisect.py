"""`harness bisect` reports: the steps as they happen, then the culprit (text, markdown, json)."""

from __future__ import annotations

import json

from harness.gitio import RELEASE, Commit
from harness.matrix.model import Matrix
from harness.report.because import with_because
from harness.report.blind import spot_json
from harness.report.history import commit_line
from harness.report.jsonfmt import FORMAT_VERSION, summary_json
from harness.report.markdown import escape, heading, rule_table, unseen_markdown
from harness.report.model import (
    EXIT_CANNOT_TELL,
    EXIT_CHANGED,
    EXIT_SAME,
    RuleView,
    function_label,
    output_label,
    rule_view,
)
from harness.report.text import blind_lines, revision_line, rule_lines, title
from harness.scan.bisect import BisectResult, Step


def header(matrix: Matrix, good, bad) -> str:
    return f"{title(matrix)}\ngood: {revision_line(good)}\nbad:  {revision_line(bad)}\n"


def step_line(number: int, step: Step) -> str:
    line = f"step {number}: {step.commit.short}  {step.commit.subject}: {step.verdict}"
    return line + (f" ({step.reason})" if step.reason else "")


def rules_of(matrix: Matrix, result: BisectResult) -> list[RuleView]:
    if not result.found:
        return []
    views = [rule_view(matrix, rule) for rule in result.comparison.rules]
    return with_because(views, result.because)


def conclusion_text(matrix: Matrix, result: BisectResult) -> str:
    field = output_label(matrix.target)
    if not result.found:
        lines = [f"No selected cell changes {field} between good and bad."]
        lines += blind_lines(reasons_of(result), result.blind, False)
        return "\n".join(lines) + "\n"
    if result.culprit:
        lines = [f"First bad {_noun(result)}: {commit_line(result.culprit)}"]
        if result.culprit.pr:
            lines.append(f"  PR #{result.culprit.pr}")
    else:
        lines = ["Skipped commits hide which one changed outcomes; the first bad commit is one of:"]
        lines += [f"  {commit_line(commit)}" for commit in result.candidates]
    lines.append(f"  {result.comparison.changed:,} cells changed:")
    lines.extend(rule_lines(rules_of(matrix, result), "    "))
    return "\n".join(lines) + "\n"


def render_markdown(matrix: Matrix, result: BisectResult) -> str:
    target = matrix.target
    lines = [
        heading(matrix.name, function_label(target), target.path),
        "",
        f"- good: {escape(revision_line(result.good))}",
        f"- bad: {escape(revision_line(result.bad))}",
        "",
    ]
    lines += [
        f"{n}. `{s.commit.short}` {escape(s.commit.subject)}: **{s.verdict}**"
        + (f" ({escape(s.reason)})" if s.reason else "")
        for n, s in enumerate(result.steps, 1)
    ]
    lines.append("")
    if not result.found:
        lines.append(
            f"No selected cell changes `{output_label(matrix.target)}` between good and bad."
        )
    elif result.culprit:
        lines.append(f"**First bad {_noun(result)}:** {escape(commit_line(result.culprit))}")
    else:
        lines.append("**The first bad commit is one of:**")
        lines += [f"- {escape(commit_line(c))}" for c in result.candidates]
    if result.found:
        lines += ["", f"{result.comparison.changed:,} cells changed:", ""]
        lines += rule_table(rules_of(matrix, result))
    spots = [spot_json(s) for s in result.blind]
    lines += unseen_markdown(reasons_of(result), spots, False)
    return "\n".join(lines) + "\n"


def status_of(result: BisectResult) -> int:
    """The exit status: 0 GOOD and BAD agree and nothing was unseen, 1 the first bad commit
    is found, 4 cannot tell (skipped commits hide which, or blind spots)."""
    if not result.found:
        return EXIT_CANNOT_TELL if result.cannot_tell else EXIT_SAME
    return EXIT_CANNOT_TELL if result.candidates else EXIT_CHANGED


def reasons_of(result: BisectResult) -> list[str]:
    """Why it cannot tell besides blind spots: coverage that could not be read."""
    return [result.unseen] if result.unseen else []


def render_json(matrix: Matrix, result: BisectResult) -> str:
    document = {
        "format_version": FORMAT_VERSION,
        "status": status_of(result),
        "culprit": _commit_json(result.culprit) if result.culprit else None,
        "candidates": [c.sha for c in result.candidates],
        "steps": [{"sha": s.commit.sha, "verdict": s.verdict} for s in result.steps],
        "summary": summary_json(rules_of(matrix, result)),
        "cannot_tell": reasons_of(result),
        "blind_spots": [spot_json(spot) for spot in result.blind],
    }
    return json.dumps(document) + "\n"


def _noun(result) -> str:
    """What the search went over: commits, or the releases of a package."""
    return "release" if result.good.kind == RELEASE else "commit"


def _commit_json(commit: Commit) -> dict:
    return {"sha": commit.sha, "subject": commit.subject, "pr": commit.pr}
