"""The diff report document as its readers take it: declared once, checked once.

`jsonfmt` writes the document (its JSON Schema: docs/report.schema.json). The
markdown report and the PR comment read it back, the comment from an artifact
of a job that ran PR code, through `read_document`: every part a reader takes
is checked for presence and type here, and arrives as the frozen values below,
so no reader indexes an undeclared shape, and a report of the wrong shape is
refused in one place with the part that is wrong named (`DocumentError`:
"summary[3].cells is not a whole number").

The shape is checked here; what the values must add up to (the rules' cubes,
the cells' product, how long an axis may be) is checked by the reader that
relies on it (`grid.space_of_document`, `markdown.rules_of`), since a grid that
does not add up is left out while the rest of the report still reads.

Parts a reader may do without are optional, as the document's writer has
grown: a side's `every_cell`, `changed_count` (else the length of `changed`),
`notes`, `cannot_tell` and `changed_defaults` (entries of another shape are
left out), `blind_spots` (`blind.spots_of`: likewise), `fields`, `because`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.report.blind import spots_of


class DocumentError(ValueError):
    """A part of the document is missing or of the wrong type (the message names it)."""


@dataclass(frozen=True)
class Side:
    """One side's revision: the name used, its commit (None: a release or the working
    tree), its subject, and the reason no cell was evaluated, if so."""

    rev: str
    sha: str | None
    subject: str
    every_cell: str | None
    ran: str | None = None  # the entry of target.otherwise run there


@dataclass(frozen=True)
class Rule:
    """A rule of the summary: the axis values it covers, how many cells, the change, and
    why (each reason its text, or {"text", "source"} where it names its code)."""

    where: dict[str, list[Any]]
    cells: int
    transition: str
    because: tuple[str | dict[str, str], ...]
    because_more: int


@dataclass(frozen=True)
class Changed:
    """A changed cell: its axis values (every axis of the document) and both outcomes."""

    cell: dict[str, Any]
    base: dict[str, Any]
    head: dict[str, Any]


@dataclass(frozen=True)
class FieldRules:
    """The rules of one output field of a several-field matrix."""

    cells: int
    summary: tuple[Rule, ...]


@dataclass(frozen=True)
class DiffDocument:
    """A diff report as markdown and the comment read it (`read_document`)."""

    matrix: str
    status: int | None
    function: str
    path: str
    output: str
    outputs: tuple[str, ...]  # the declared fields of a several-field matrix, else ()
    base: Side
    head: Side
    cells: int
    axes: dict[str, list[Any]]
    notes: dict[str, str]
    cannot_tell: tuple[str, ...]
    blind_spots: tuple[dict[str, Any], ...]  # as `blind.spot_json` writes them, each cut
    changed_defaults: tuple[tuple[str, str, str], ...]  # (field, base, head)
    changed_count: int
    changed: tuple[Changed, ...]
    summary: tuple[Rule, ...]
    fields: dict[str, FieldRules] | None  # a several-field matrix's rules per field


def read_document(doc: Any) -> DiffDocument:
    """The typed document of a JSON diff report; a DocumentError names the first part
    that is missing or of the wrong type."""
    top = _object(doc, "the report")
    target = _object(_need(top, "target", "target"), "target")
    axes = _axes(_need(top, "axes", "axes"))
    changed = _list(_need(top, "changed", "changed"), "changed")
    return DiffDocument(
        matrix=_text(_need(top, "matrix", "matrix"), "matrix"),
        status=_optional(top, "status", _whole, None),
        function=_text(_need(target, "function", "target.function"), "target.function"),
        path=_text(_need(target, "path", "target.path"), "target.path"),
        output=_text(_need(target, "output", "target.output"), "target.output"),
        outputs=tuple(_optional(target, "outputs", _texts, [], "target.outputs")),
        base=_side(_need(top, "base", "base"), "base"),
        head=_side(_need(top, "head", "head"), "head"),
        cells=_whole(_need(top, "cells", "cells"), "cells"),
        axes=axes,
        notes=_optional(top, "notes", _notes, {}),
        cannot_tell=_reasons(top.get("cannot_tell")),
        blind_spots=tuple(spots_of(top)),
        changed_defaults=_changed_defaults(top.get("changed_defaults")),
        changed_count=_optional(top, "changed_count", _whole, len(changed)),
        changed=tuple(_changed(item, f"changed[{n}]", axes) for n, item in enumerate(changed)),
        summary=_rules(_need(top, "summary", "summary"), "summary"),
        fields=_fields(top.get("fields")),
    )


def _need(obj: dict[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise DocumentError(f"{where} is missing")
    return obj[key]


def _optional(
    obj: dict[str, Any], key: str, read: Callable[[Any, str], Any], default: Any, where: str = ""
) -> Any:
    """`read(obj[key])`, or `default` where the key is absent or null."""
    return read(obj[key], where or key) if obj.get(key) is not None else default


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DocumentError(f"{where} is not an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise DocumentError(f"{where} is not a list")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise DocumentError(f"{where} is not text")
    return value


def _whole(value: Any, where: str) -> int:
    if type(value) is not int:
        raise DocumentError(f"{where} is not a whole number")
    return value


def _texts(value: Any, where: str) -> list[str]:
    return [_text(item, f"{where}[{n}]") for n, item in enumerate(_list(value, where))]


def _axes(value: Any) -> dict[str, list[Any]]:
    axes = _object(value, "axes")
    for values in axes.values():
        _list(values, "an axis's values")  # the name is hostile: not in the message
    return axes


def _notes(value: Any, where: str) -> dict[str, str]:
    notes = _object(value, where)
    for note in notes.values():
        _text(note, "a note")
    return notes


def _side(value: Any, where: str) -> Side:
    side = _object(value, where)
    sha = side.get("sha")
    every, ran = side.get("every_cell"), side.get("ran")
    return Side(
        rev=_text(_need(side, "rev", f"{where}.rev"), f"{where}.rev"),
        sha=None if sha is None else _text(sha, f"{where}.sha"),
        subject=_text(side.get("subject") or "", f"{where}.subject"),
        every_cell=every if isinstance(every, str) else None,
        ran=ran if isinstance(ran, str) else None,
    )


def _changed(value: Any, where: str, axes: dict[str, list[Any]]) -> Changed:
    item = _object(value, where)
    cell = _object(_need(item, "cell", f"{where}.cell"), f"{where}.cell")
    if not all(axis in cell for axis in axes):
        raise DocumentError(f"{where}.cell does not give every axis a value")
    return Changed(
        cell=cell,
        base=_object(_need(item, "base", f"{where}.base"), f"{where}.base"),
        head=_object(_need(item, "head", f"{where}.head"), f"{where}.head"),
    )


def _rules(value: Any, where: str) -> tuple[Rule, ...]:
    return tuple(_rule(rule, f"{where}[{n}]") for n, rule in enumerate(_list(value, where)))


def _rule(value: Any, where: str) -> Rule:
    rule = _object(value, where)
    spots = _object(_need(rule, "where", f"{where}.where"), f"{where}.where")
    for values in spots.values():
        _list(values, f"{where}.where's values")
    reasons = _list(rule.get("because") or [], f"{where}.because")
    return Rule(
        where=spots,
        cells=_whole(_need(rule, "cells", f"{where}.cells"), f"{where}.cells"),
        transition=_text(_need(rule, "transition", f"{where}.transition"), f"{where}.transition"),
        because=tuple(_reason(r, f"{where}.because[{n}]") for n, r in enumerate(reasons)),
        because_more=_optional(rule, "because_more", _whole, 0, f"{where}.because_more"),
    )


def _reason(value: Any, where: str) -> str | dict[str, str]:
    """A reason as the rule table shows it: its text, or text and source where it names
    its code (`markdown._because`)."""
    reason = _object(value, where)
    text = str(_need(reason, "text", f"{where}.text"))
    source = reason.get("source")
    return {"text": text, "source": source} if isinstance(source, str) else text


def _reasons(value: Any) -> tuple[str, ...]:
    """Why a side could not be told: the texts; anything else is left out."""
    return tuple(r for r in value if isinstance(r, str)) if isinstance(value, list) else ()


def _changed_defaults(value: Any) -> tuple[tuple[str, str, str], ...]:
    """(field, base, head) of each well-formed entry; anything else is left out."""
    keys = ("field", "base", "head")
    entries = value if isinstance(value, list) else []
    return tuple(
        (item["field"], item["base"], item["head"])
        for item in entries
        if isinstance(item, dict) and all(isinstance(item.get(k), str) for k in keys)
    )


def _fields(value: Any) -> dict[str, FieldRules] | None:
    if not isinstance(value, dict):
        return None
    out = {}
    for n, (name, group) in enumerate(value.items()):
        where = f"fields[{n}]"  # the n-th field: its name is hostile, not in the message
        group = _object(group, where)
        cells = _whole(_need(group, "cells", f"{where}.cells"), f"{where}.cells")
        rules = _rules(_need(group, "summary", f"{where}.summary"), f"{where}.summary")
        out[name] = FieldRules(cells, rules)
    return out
