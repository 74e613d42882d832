"""Frozen records copied with a few fields changed, on a scan's hot path.

`dataclasses.replace` looks up every field and calls `__init__` again: about
9 microseconds, five or six times per commit of a history. The records a
scan copies (states, closures) have no `__post_init__` and no `init=False`
field, so a copy of their fields with the changes applied is the same record,
made in a fraction of the time. Only fields are copied: a `cached_property`
computed on the original may not hold for the copy.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def evolve(record: T, **changes) -> T:
    """A copy of the frozen dataclass `record` with `changes` (field names it has)."""
    declared = type(record).__dataclass_fields__
    if not changes.keys() <= declared.keys():
        raise TypeError(f"{type(record).__name__} has no field {sorted(changes - declared.keys())}")
    copy = object.__new__(type(record))
    copy.__dict__.update({k: v for k, v in record.__dict__.items() if k in declared}, **changes)
    return copy
