"""The diff report as GitHub Actions workflow commands, each on a changed line.

`::warning file=PATH,line=N,title=T::MESSAGE` makes GitHub show the message
on that line of the PR's diff, and GitHub shows it inline only when the line
is inside the diff. So changed cells are announced at the changed lines their
rules point at (`RuleView.because_at`: the changed condition a rule's first
reason names, else the first changed line of the code): one warning per line
at head, one notice per line that exists only at base, at most MAX_PLACES,
the largest rules' first. Only when no line of the code changed (or no reason
was worked out) is the warning at the target function. Each blind spot is one
more annotation on its own changed line.
"""

from __future__ import annotations

from harness.report.because import because_text
from harness.report.escape import workflow_data, workflow_property
from harness.report.model import DiffReport, RuleView, function_label, output_label
from harness.scan.because import Place
from harness.scan.spots import BlindSpot

MAX_PLACES = 5  # GitHub shows at most 10 warnings per step; blind spots need theirs
RULES_NAMED = 6  # rule numbers an annotation lists before "..."


def render(report: DiffReport) -> str:
    return _changed(report) + "".join(_blind(report, spot) for spot in report.blind_spots)


def _blind(report: DiffReport, spot: BlindSpot) -> str:
    """A warning on the changed line itself (inside the PR's diff when it is the head's)."""
    command = "warning" if spot.side == "head" else "notice"
    props = {
        "file": spot.path,
        "line": str(spot.line),
        "title": f"{report.matrix.name}: blind spot",
    }
    message = f"`{spot.text}` is {spot.seen} on the matrix. {spot.hint}".strip()
    return _command(command, props, message)


def _changed(report: DiffReport) -> str:
    if not report.changed:
        return ""
    places = places_of(report.rules)
    if not places:
        return _at_function(report)
    shown = list(places.items())[:MAX_PLACES]
    return "".join(_at_place(report, place, numbers) for place, numbers in shown)


def places_of(rules: list[RuleView]) -> dict[Place, list[int]]:
    """{changed line: the 1-based numbers of the rules pointing at it}, in rule order."""
    places: dict[Place, list[int]] = {}
    for n, rule in enumerate(rules, 1):
        if rule.because_at is not None:
            places.setdefault(rule.because_at, []).append(n)
    return places


def _at_place(report: DiffReport, place: Place, numbers: list[int]) -> str:
    """`N of M cells change F (K rules); here: rules 1, 3 (X cells), the largest ...`."""
    first = report.rules[numbers[0] - 1]
    cells = sum(report.rules[n - 1].cells for n in numbers)
    named = ", ".join(map(str, numbers[:RULES_NAMED])) + (
        ", ..." if len(numbers) > RULES_NAMED else ""
    )
    rules = f"rule{'s' if len(numbers) != 1 else ''} {named}"
    message = (
        f"{_overall(report)}; here: {rules} ({cells:,} cells), the largest {first.cells:,} cells "
        f"{first.transition} where {_where(first)}; {_why(first, place)}"
    )
    if place.side == "base":
        message = f"at {report.base.label}, line {place.line}: {message}"
    props = {"file": place.path, "line": str(place.line), "title": _title(report)}
    return _command("warning" if place.side == "head" else "notice", props, message)


def _why(rule: RuleView, place: Place) -> str:
    """The reason that names the line, or what the line is when none does."""
    for reason in rule.because:
        event = getattr(reason, place.side, None)
        if event is not None and event.line == place.line:
            return f"because {because_text(reason)}"
    return "the first changed line of the code it runs (no condition on a changed line differs)"


def _at_function(report: DiffReport) -> str:
    """The warning at the target function: no changed line to point at."""
    first = report.rules[0]
    message = (
        f"{_overall(report)}; largest: {first.cells:,} cells {first.transition} "
        f"where {_where(first)}"
    )
    line = report.lines.get("head") or report.lines.get("base")
    props = {"file": report.matrix.target.path, "title": _title(report)}
    if line:
        props["line"] = str(line)
    return _command("warning", props, message)


def _overall(report: DiffReport) -> str:
    count, field = len(report.rules), output_label(report.matrix.target)
    return (
        f"{report.changed:,} of {report.matrix.size:,} cells change {field} "
        f"({count} rule{'s' if count != 1 else ''})"
    )


def _where(rule: RuleView) -> str:
    return ", ".join(c.text() for c in rule.conditions) or "every cell"


def _title(report: DiffReport) -> str:
    return f"{report.matrix.name}: {function_label(report.matrix.target)}"


def _command(command: str, props: dict[str, str], message: str) -> str:
    shown = ",".join(f"{k}={workflow_property(v)}" for k, v in props.items())
    return f"::{command} {shown}::{workflow_data(message)}\n"
