"""`harness history` and `harness bisect` as self-contained HTML pages (`harness.report.html`).

History: a timeline of the commits (or releases) that changed outcomes, a bar of
cells changed each, and each revert paired with the change it undoes (an arc
between them, and the same pair letter on both), then each change's rules.
Bisect: the steps as they were decided, then the first bad commit (or the
candidates) and its rules. Everything from the repository is escaped by the
templates, as in the diff page.
"""

from __future__ import annotations

from typing import Any

from harness.matrix.model import Matrix
from harness.report import bisect as bisect_report
from harness.report import history as history_report
from harness.report.blind import spot_json, spots_of
from harness.report.html import cut, inert, page, rule_rows
from harness.report.html import visible as flat
from harness.report.jsonfmt import summary_json
from harness.report.model import RuleView, axes_of, function_label, output_label
from harness.report.text import revision_line
from harness.scan.bisect import BisectResult
from harness.scan.history import Change, HistoryReport

ROW = 30  # the timeline's row height, in pixels
BAR = 260  # the longest bar: the change of the most cells
ARC = 14  # the room each revert pair's arc takes, left of the bars
PAIR_COLOURS = ("#0072b2", "#009e73", "#cc79a7", "#56b4e9", "#e69f00", "#f0e442")  # Okabe-Ito
SUBJECT_WIDTH = 90


def render_history(report: HistoryReport) -> str:
    """The history page: the timeline, each change's rules, the skipped commits."""
    changes = [_change(report, c) for c in report.changes]
    pairs = revert_pairs(report.changes)
    for letter, (old, new) in zip(_letters(), pairs, strict=False):
        changes[old]["pair"] = changes[new]["pair"] = letter
    noun = "release" if report.releases else "commit"
    skipped = [{"commit": _commit(s.commit), "reason": cut(flat(s.reason))} for s in report.skipped]
    status = history_report.status_of(report)
    return page("history.html.j2", title=_title(report.matrix), range=flat(report.range),
                considered=report.considered, noun=noun, changes=changes, skipped=skipped,
                timeline=timeline(changes, pairs), field=output_label(report.matrix.target),
                status=status, **_unseen(history_report.reasons_of(report),
                                         report.blind))  # fmt: skip


def _unseen(reasons: list[str], blind: list) -> dict[str, Any]:
    """Why it cannot tell, and the blind spots, as the page shows them (each field cut)."""
    spots = spots_of({"blind_spots": [spot_json(s) for s in blind]})
    return {"reasons": [cut(flat(r)) for r in reasons], "spots": inert(spots)}


def _letters():
    n = 0
    while True:
        yield chr(ord("A") + n % 26) + (str(n // 26) if n >= 26 else "")
        n += 1


def revert_pairs(changes: list[Change]) -> list[tuple[int, int]]:
    """(the reverted change's position, the revert's) for each revert whose reverted commit
    changed outcomes in the same list, in the order the reverts come."""
    where = {change.commit.sha: n for n, change in enumerate(changes)}
    return [
        (where[c.reverts.sha], n)
        for n, c in enumerate(changes)
        if c.reverts is not None and c.reverts.sha in where
    ]


def _title(matrix: Matrix) -> dict[str, str]:
    target = matrix.target
    return inert({"matrix": matrix.name, "function": function_label(target), "path": target.path})


def _commit(commit) -> dict[str, Any]:
    subject = flat(commit.subject)
    return {"short": flat(commit.short), "date": flat(commit.date[:10]), "subject": cut(subject),
            "pr": commit.pr}  # fmt: skip


def _change(report: HistoryReport, change: Change) -> dict[str, Any]:
    rules = history_report.rules_of(report, change)
    reverts = change.reverts
    return {
        "commit": _commit(change.commit),
        "changed": change.comparison.changed,
        "reverts": _commit(reverts) if reverts is not None else None,
        "rules": rules_html(report.matrix, rules),
        "pair": None,
    }


def rules_html(matrix: Matrix, rules: list[RuleView]) -> list[dict[str, Any]]:
    """Rules as the page's rule table shows them (no code beside the reasons: a history
    holds many revisions; the diff of two of them shows it)."""
    axes = {"axes": axes_of(matrix)}
    return rule_rows(inert(summary_json(rules)), axes, None)


def timeline(changes: list[dict[str, Any]], pairs: list[tuple[int, int]]) -> dict[str, Any]:
    """The SVG's geometry: a row per change with its bar, and an arc per revert pair."""
    left = 8 + ARC * len(pairs)
    most = max((c["changed"] for c in changes), default=1) or 1
    rows = [
        {"y": 20 + n * ROW, "width": max(2, round(BAR * c["changed"] / most)), "change": c,
         "revert": c["reverts"] is not None}
        for n, c in enumerate(changes)
    ]  # fmt: skip
    arcs = []
    for k, (old, new) in enumerate(pairs):
        y1, y2, bend = rows[old]["y"], rows[new]["y"], left - 6 - ARC * (k + 1)
        path = f"M {left - 4} {y1} C {bend} {y1} {bend} {y2} {left - 4} {y2}"
        arcs.append({"d": path, "colour": PAIR_COLOURS[k % len(PAIR_COLOURS)],
                     "letter": changes[old]["pair"]})  # fmt: skip
    return {"rows": rows, "arcs": arcs, "left": left, "bar": BAR, "row": ROW,
            "height": 20 + ROW * max(1, len(changes)), "width": left + BAR + 700}  # fmt: skip


def render_bisect(matrix: Matrix, result: BisectResult) -> str:
    """The bisect page: the steps, then the first bad commit (or candidates) and its rules."""
    steps = [
        {"commit": _commit(s.commit), "verdict": flat(s.verdict), "reason": cut(flat(s.reason))}
        for s in result.steps
    ]
    found = result.found
    rules = rules_html(matrix, bisect_report.rules_of(matrix, result)) if found else []
    status = bisect_report.status_of(result)
    good, bad = (cut(flat(revision_line(r))) for r in (result.good, result.bad))
    return page("bisect.html.j2", title=_title(matrix), steps=steps, rules=rules, good=good,
                bad=bad,
                culprit=_commit(result.culprit) if result.culprit else None,
                candidates=[_commit(c) for c in result.candidates], found=found,
                changed=result.comparison.changed if found else 0, status=status,
                field=output_label(matrix.target), considered=result.considered,
                **_unseen(bisect_report.reasons_of(result), result.blind))  # fmt: skip
