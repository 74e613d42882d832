"""How reports say what a diff could not see: blind spots, and sides it could not tell.

Both text and markdown read the JSON form (`spot_json`), so the PR comment, made
from the JSON artifact, says what the terminal says.
"""

from __future__ import annotations

from typing import Any

from harness.scan.spots import BlindSpot

FIELDS = ("side", "path", "line", "condition", "function", "seen", "hint")


def spot_json(spot: BlindSpot) -> dict[str, Any]:
    return dict(zip(FIELDS, (spot.side, spot.path, spot.line, spot.text, spot.function,
                             spot.seen, spot.hint), strict=True))  # fmt: skip


FIELD_LIMIT = 400  # characters of a field a report shows (a document may be an artifact)


def spots_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The blind spots of a JSON document that hold the fields as `spot_json` writes them,
    each text field cut to FIELD_LIMIT (the document may come from an untrusted job)."""
    items = doc.get("blind_spots")
    if not isinstance(items, list):
        return []
    kept = [i for i in items if isinstance(i, dict) and _well_formed(i)]
    return [{f: _cut(i[f]) for f in FIELDS} for i in kept]


def _cut(value: Any) -> Any:
    if type(value) is str and len(value) > FIELD_LIMIT:
        return value[: FIELD_LIMIT - 3] + "..."
    return value


def _well_formed(item: dict[str, Any]) -> bool:
    return all(type(item.get(f)) is (int if f == "line" else str) for f in FIELDS)


SHOWN = 10  # blind spots a text or markdown report lists; JSON lists all


def blind_title(count: int, changed: bool) -> str:
    """The line above the blind spots: a change there would not show."""
    what = f"{count} place{'s' if count != 1 else ''}"
    lead = "Blind spots" if changed else "Cannot tell"
    return (
        f"{lead}: the code changed in {what} the matrix did not take every way (a "
        "condition not both true and false, a block never entered, a definition the "
        "world answers in its place), so a change there would not show on its cells:"
    )


def more_line(count: int) -> list[str]:
    """`... and N more` when the list was cut."""
    more = count - SHOWN
    return [f"... and {more} more (--format json lists all)"] if more > 0 else []


def is_block(item: dict[str, Any]) -> bool:
    """Whether the blind spot is a block (its text is a description, not code)."""
    return item["seen"] in ("never entered", "never called", "never run")


def spot_lines(item: dict[str, Any]) -> list[str]:
    """`head overrides.py:81, in f: `x != y` only true` and, if found, what reaches it."""
    shown = item["condition"] if is_block(item) else f"`{item['condition']}`"
    where = f"{item['side']} {item['path']}:{item['line']}, in {item['function']}"
    lines = [f"{where}: {shown}: {item['seen']}"]
    if item["hint"]:
        lines.append(item["hint"])
    return lines


def numbered(items: list[dict[str, Any]], limit: int | None = None) -> list[str]:
    """`  1. head path:line, in f: ...` then the hint under it, for each (up to `limit`)."""
    lines = []
    for n, item in enumerate(items[:limit], 1):
        first, *rest = spot_lines(item)
        lines += [f"  {n}. {first}", *(f"     {line}" for line in rest)]
    return lines
