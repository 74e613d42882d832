"""`harness history` reports: text, markdown, and one JSON object."""

from __future__ import annotations

import json
from typing import Any

from harness.gitio import Commit
from harness.report.because import with_because
from harness.report.blind import spot_json
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
from harness.report.text import blind_lines, rule_lines, title
from harness.scan.history import Change, HistoryReport

SKIPPED_SHOWN = 20  # text and markdown list this many skipped commits, json all


def rules_of(report: HistoryReport, change: Change) -> list[RuleView]:
    views = [rule_view(report.matrix, rule) for rule in change.comparison.rules]
    return with_because(views, change.because)


def commit_line(commit: Commit) -> str:
    return f"{commit.short}  {commit.date[:10]}  {commit.subject}"


def reverts_text(change: Change) -> str:
    if change.reverts is None:
        return ""
    pr = change.reverts.pr
    return f"reverts {change.reverts.short}" + (f" (#{pr})" if pr else "")


def render_text(report: HistoryReport) -> str:
    lines = [*_header(report), ""]
    field = output_label(report.matrix.target)
    noun = "release" if report.releases else "commit"
    if not report.changes:
        lines.append(f"No {noun} changes {field}.")
    else:
        count = len(report.changes)
        lines += [f"{count} {noun}{'s change' if count != 1 else ' changes'} {field}:", ""]
    for change in report.changes:
        lines.append(commit_line(change.commit))
        if change.reverts:
            lines.append(f"  {reverts_text(change)}")
        lines.append(f"  {change.comparison.changed:,} cells changed:")
        lines.extend(rule_lines(rules_of(report, change), "    "))
    lines.extend(_skipped_text(report))
    lines.extend(blind_lines(reasons_of(report), report.blind, bool(report.changes)))
    return "\n".join(lines) + "\n"


def status_of(report: HistoryReport) -> int:
    """The exit status: 1 some commit changed outcomes, 4 cannot tell, else 0."""
    if report.changes:
        return EXIT_CHANGED
    return EXIT_CANNOT_TELL if report.cannot_tell else EXIT_SAME


def reasons_of(report: HistoryReport) -> list[str]:
    """Why it cannot tell besides blind spots, when no commit changed outcomes: the range's
    end cannot be evaluated, coverage could not be read."""
    return [] if report.changes else report.reasons


def _header(report: HistoryReport) -> list[str]:
    count = report.considered
    what = ("release", "releases in the range") if report.releases else ("commit", "")
    touched = what[1] or f"commit{'s' if count != 1 else ''} touch the file"
    lines = [title(report.matrix), f"range: {report.range} ({count} {touched})"]
    if report.baseline:
        lines.append(f"first evaluable: {commit_line(report.baseline)}")
    return lines


def _skipped_text(report: HistoryReport) -> list[str]:
    if not report.skipped:
        return []
    count, noun = len(report.skipped), "release" if report.releases else "commit"
    lines = ["", f"Skipped {count} {noun}{'s' if count != 1 else ''} that cannot be evaluated:"]
    for item in report.skipped[:SKIPPED_SHOWN]:
        lines += [f"  {commit_line(item.commit)}", f"    {item.reason}"]
    if count > SKIPPED_SHOWN:
        lines.append(f"  ... and {count - SKIPPED_SHOWN} more (--format json lists all)")
    return lines


def render_markdown(report: HistoryReport) -> str:
    target, field = report.matrix.target, output_label(report.matrix.target)
    lines = [
        heading(report.matrix.name, function_label(target), target.path),
        "",
        f"Range `{report.range}`: {report.considered} "
        + ("releases" if report.releases else "commits touch the file")
        + f", {len(report.changes)} change `{field}`.",
    ]
    for change in report.changes:
        title = escape(commit_line(change.commit))
        lines += ["", f"#### {title}", ""]
        if change.reverts:
            lines += [f"*{reverts_text(change)}*", ""]
        lines.append(f"{change.comparison.changed:,} cells changed:")
        lines += ["", *rule_table(rules_of(report, change))]
    if report.skipped:
        lines += ["", "Skipped (cannot be evaluated):", ""]
        for item in report.skipped[:SKIPPED_SHOWN]:
            lines.append(
                f"- `{item.commit.short}` {escape(item.commit.subject)}: {escape(item.reason)}"
            )
        if len(report.skipped) > SKIPPED_SHOWN:
            lines.append(f"- ... and {len(report.skipped) - SKIPPED_SHOWN} more")
    spots = [spot_json(s) for s in report.blind]
    lines += unseen_markdown(reasons_of(report), spots, bool(report.changes))
    return "\n".join(lines) + "\n"


def render_json(report: HistoryReport) -> str:
    document = {
        "format_version": FORMAT_VERSION,
        "status": status_of(report),
        "range": report.range,
        "matrix": report.matrix.name,
        "considered": report.considered,
        "commits": [_change_json(report, change) for change in report.changes],
        "skipped": [{"sha": s.commit.sha, "reason": s.reason} for s in report.skipped],
        "cannot_tell": reasons_of(report),
        "blind_spots": [spot_json(spot) for spot in report.blind],
    }
    if report.releases:
        document["releases"] = document.pop("commits")
        document["skipped"] = [{"version": s.commit.sha, "reason": s.reason}
                               for s in report.skipped]  # fmt: skip
    return json.dumps(document) + "\n"


def _change_json(report: HistoryReport, change: Change) -> dict[str, Any]:
    commit = change.commit
    if report.releases:
        return {
            "version": commit.sha,
            "date": commit.date,
            "cells_changed": change.comparison.changed,
            "reverts": change.reverts.sha if change.reverts else None,
            "summary": summary_json(rules_of(report, change)),
        }
    return {
        "sha": commit.sha,
        "date": commit.date,
        "subject": commit.subject,
        "pr": commit.pr,
        "cells_changed": change.comparison.changed,
        "reverts": change.reverts.sha if change.reverts else None,
        "summary": summary_json(rules_of(report, change)),
    }
