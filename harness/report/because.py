"""How a `because` reason reads: a sentence for people, an object for JSON."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from harness.engine.events import Event
from harness.scan.because import Difference, Reasons


def because_text(difference: Difference) -> str:
    """`view.x == 1` (line 12) was True at base, False at head; or is new, or is gone."""
    base, head, source = difference.base, difference.head, difference.source
    if base is None:
        return f"`{source}` (line {head.line}) is new at head: {short(head.value)} here"
    if head is None:
        return f"`{source}` (line {base.line}) is gone at head (it was {short(base.value)} here)"
    lines = f"line {base.line}" if base.line == head.line else f"lines {base.line}->{head.line}"
    return f"`{source}` ({lines}) was {short(base.value)} at base, {short(head.value)} at head"


def because_json(difference: Difference) -> dict[str, Any]:
    return {
        "source": difference.source,
        "base": _event_json(difference.base),
        "head": _event_json(difference.head),
        "text": because_text(difference),
    }


def _event_json(event: Event | None) -> dict[str, Any] | None:
    return None if event is None else {"line": event.line, "value": json_value(event.value)}


def more_text(count: int) -> str:
    """What a report says after the reasons it shows, when `count` more were cut."""
    return f"and {count} more"


def with_because(views: list, reasons: list[Reasons]) -> list:
    """Rule views with their reasons attached (`reasons` may be empty: none worked out)."""
    if not reasons:
        return views
    return [replace(v, because=r.shown, because_more=r.more, because_at=r.at)
            for v, r in zip(views, reasons, strict=True)]  # fmt: skip


def short(value: Any, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def json_value(value: Any) -> Any:
    """The value itself when JSON can hold it, else its repr."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple) and all(json_value(v) == v for v in value):
        return list(value)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: json_value(v) for k, v in value.items()}
    return repr(value)
