"""Outcomes and outcome tables: what a cell's evaluation gave, stored compactly.

An outcome is a declared value, the kept input (`kept`: nothing declared),
an error the code raised, or a revision-wide state (`absent`,
`unevaluable`). A table is the list of distinct outcomes and one small
integer per cell indexing into it (an `array`), never a dict per cell.

The outcomes come from a pull request's code, and every later stage (compare,
rules, reports) costs in proportion to them, so a table holds at most
MAX_OUTCOMES distinct outcomes of at most MAX_OUTCOME_BYTES encoded, together:
the worker checks as it encodes (`encode_outcomes`), the parent before it
decodes (`check_outcome_count`); past either, the revision is unevaluable
with the reason (docs/security.md, Bounds).
"""

from __future__ import annotations

import json
import sys
from array import array
from dataclasses import dataclass
from typing import Any

from harness.engine.plain import Malformed, decode, encode
from harness.errors import Absent, Unevaluable
from harness.matrix.cells import Cube, cube_runs
from harness.matrix.model import Matrix

VALUE, KEPT, ERROR, ABSENT, UNEVALUABLE = "value", "kept", "error", "absent", "unevaluable"


CODE_TYPE = "I"
# SGLang's whole resolution (653,184 cells, 0.5.23) has 138 outcomes in 82 KB.
MAX_OUTCOMES = 20_000
MAX_OUTCOME_BYTES = 16 << 20


@dataclass(frozen=True)
class Outcome:
    """One cell's result: a declared value, the kept input, an error, or a revision-wide state."""

    kind: str
    value: Any = None

    @property
    def revision_wide(self) -> bool:
        return self.kind in (ABSENT, UNEVALUABLE)

    @property
    def key(self) -> tuple[str, Any]:
        """A hashable identity, also for unhashable declared values (a list)."""
        return (self.kind, freeze(self.value))


@dataclass
class OutcomeTable:
    """Distinct outcomes, and one code per cell indexing into them."""

    outcomes: list[Outcome]
    codes: array
    branches: bytes = b""  # one byte per site of the code (harness.engine.branches)
    reached: tuple[int, ...] = ()  # per site, a cell index it was reached on (-1: none)

    def outcome_at(self, index: int) -> Outcome:
        return self.outcomes[self.codes[index]]


def encode_outcome(outcome: Outcome) -> list:
    """An outcome a cell got, as the worker sends it."""
    return [outcome.kind, encode(outcome.value)]


def encode_outcomes(outcomes: list[Outcome]) -> list[list]:
    """A table's outcomes as the worker sends them; Unevaluable (the bound, and how far
    past it) when they are more than MAX_OUTCOMES or encode to more than MAX_OUTCOME_BYTES."""
    check_outcome_count(len(outcomes))
    encoded, size = [], 0
    for outcome in outcomes:
        item = encode_outcome(outcome)
        size += len(json.dumps(item))
        if size > MAX_OUTCOME_BYTES:
            raise Unevaluable(
                f"its {len(outcomes):,} distinct outcomes encode to more than "
                f"{MAX_OUTCOME_BYTES:,} bytes, the bound on one table (docs/security.md, Bounds)"
            )
        encoded.append(item)
    return encoded


def check_outcome_count(count: int) -> None:
    """Raise Unevaluable when a table would hold more than MAX_OUTCOMES outcomes (in the
    worker before encoding them, in the parent before decoding them)."""
    if count > MAX_OUTCOMES:
        raise Unevaluable(
            f"it gave {count:,} distinct outcomes, more than the {MAX_OUTCOMES:,} one table "
            "holds (docs/security.md, Bounds)"
        )


def decode_outcome(item: object) -> Outcome:
    """An outcome as the worker sent it, checked: a cell's kind, a plain value."""
    if type(item) is not list or len(item) != 2 or item[0] not in (VALUE, KEPT, ERROR):
        raise Malformed(f"not an outcome: {str(item)[:80]}")
    value = decode(item[1])
    if item[0] == ERROR and type(value) is not str:
        raise Malformed("an error outcome's message is not a str")
    return Outcome(item[0], value)


def uniform_table(outcome: Outcome, size: int) -> OutcomeTable:
    return OutcomeTable([outcome], zero_codes(size))


def zero_codes(size: int) -> array:
    """`size` codes, all 0."""
    return array(CODE_TYPE, bytes(array(CODE_TYPE).itemsize * size))


def codes_below(codes: array, count: int) -> bool:
    """Whether every code is below `count` (a table from the worker indexes its outcomes).
    With few outcomes, checked bytewise: no Python-level loop over the cells."""
    data = codes.tobytes()
    width = codes.itemsize
    if count > 256 or sys.byteorder != "little":
        return not codes or max(codes) < count
    high = [data[k::width] for k in range(1, width)]
    low = data[0::width]
    return all(h.count(0) == len(h) for h in high) and not low.translate(None, bytes(range(count)))


def revision_wide(exc: Absent | Unevaluable, size: int) -> OutcomeTable:
    """The table of a revision that cannot run at all: one outcome for every cell."""
    kind = ABSENT if isinstance(exc, Absent) else UNEVALUABLE
    return uniform_table(Outcome(kind, str(exc)), size)


class Filler:
    """Writes one code over every cell of a cube, a contiguous run at a time."""

    def __init__(self, matrix: Matrix, initial: int = 0) -> None:
        self.matrix = matrix
        self.codes = array(CODE_TYPE, [initial]) * matrix.size
        self.pieces: dict[tuple[int, int], array] = {}

    def fill(self, masks: Cube | list[int], code: int) -> None:
        starts, length = cube_runs(self.matrix, tuple(masks))
        piece = self.pieces.get((code, length))
        if piece is None:
            piece = self.pieces[(code, length)] = array(CODE_TYPE, [code]) * length
        for start in starts:
            self.codes[start : start + length] = piece


def freeze(value: Any) -> Any:
    """A hashable, type-aware identity for a value (1, 1.0 and True differ), also inside
    a tuple (`(("x", 1),)`, several outputs' values, and `(("x", True),)` are equal and
    hash alike, as Python compares them, yet differ as matrix values). A list or mapping
    is told by its repr; plain values hold no sets (`harness.engine.plain`)."""
    kind = type(value)
    if kind is tuple:
        return ("tuple", tuple(map(freeze, value)))
    try:
        hash(value)
    except TypeError:
        return ("unhashable", repr(value))
    return (kind.__name__, value)
