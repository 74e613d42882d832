"""The diff report as GitHub Actions workflow commands: a warning at the target function.

`::warning file=PATH,line=N,title=T::MESSAGE` makes GitHub show the message
on that line of the PR's diff. One line per target function whose outcomes
changed; nothing when none did.
"""

from __future__ import annotations

from harness.report.model import DiffReport, function_label, output_label
from harness.scan.spots import BlindSpot


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
    shown = ",".join(f"{k}={_property(v)}" for k, v in props.items())
    return f"::{command} {shown}::{_data(message)}\n"


def _changed(report: DiffReport) -> str:
    if not report.changed:
        return ""
    matrix, field = report.matrix, output_label(report.matrix.target)
    count = len(report.rules)
    first = report.rules[0]
    where = ", ".join(c.text() for c in first.conditions) or "every cell"
    message = (
        f"{report.changed:,} of {matrix.size:,} cells change {field} "
        f"({count} rule{'s' if count != 1 else ''}); largest: {first.cells:,} cells "
        f"{first.transition} where {where}"
    )
    line = report.lines.get("head") or report.lines.get("base")
    props = {"file": matrix.target.path, "title": f"{matrix.name}: {function_label(matrix.target)}"}
    if line:
        props["line"] = str(line)
    shown = ",".join(f"{k}={_property(v)}" for k, v in props.items())
    return f"::warning {shown}::{_data(message)}\n"


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
