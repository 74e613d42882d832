"""Small matrices and random outcome tables for unit and property tests."""

from __future__ import annotations

from array import array

import yaml
from hypothesis import strategies as st

from harness.engine.outcome import CODE_TYPE, ERROR, KEPT, VALUE, Outcome, OutcomeTable
from harness.matrix.load import parse_matrix
from harness.matrix.model import Matrix

PAGE_SIZES = [1, 16, 128]
PALETTE = [Outcome(VALUE, 128), Outcome(VALUE, 16), Outcome(KEPT), Outcome(ERROR, "boom")]


def small_matrix(
    radices: list[int], function: str = "target", world: str = "plain", target: dict | None = None
) -> Matrix:
    """Axes a0, a1, ... with values 0..r-1, then a page_size axis (the output); the target
    is `function` in m.py unless given whole."""
    axes = {f"a{n}": list(range(r)) for n, r in enumerate(radices)}
    axes["page_size"] = PAGE_SIZES
    doc = {
        "name": "small",
        "target": target or {"path": "m.py", "function": function, "output": "page_size"},
        "world": world,
        "axes": axes,
    }
    return parse_matrix(yaml.safe_dump(doc, sort_keys=False), "small.yaml")


def digits_of(matrix: Matrix, index: int) -> list[int]:
    """A cell's value indices, worked out from the radices (no harness code)."""
    digits = []
    for radix in reversed(matrix.radices):
        index, digit = divmod(index, radix)
        digits.append(digit)
    return digits[::-1]


def table(codes: list[int], outcomes: list[Outcome] = PALETTE) -> OutcomeTable:
    return OutcomeTable(list(outcomes), array(CODE_TYPE, codes))


def resolved(matrix: Matrix, outcome: Outcome, index: int):
    """The page_size a cell ends with, worked out from first principles (no harness code):
    a declared value, the cell's input when kept, else the outcome itself."""
    if outcome.kind == KEPT:
        return ("value", int, PAGE_SIZES[digits_of(matrix, index)[-1]])  # the last axis
    if outcome.kind == VALUE:
        return ("value", type(outcome.value), outcome.value)
    return (outcome.kind, str, outcome.value)


radices = st.lists(st.integers(1, 4), min_size=1, max_size=3)


@st.composite
def matrix_and_tables(draw, count: int = 2):
    """A small matrix and `count` random outcome tables over it."""
    matrix = small_matrix(draw(radices))
    codes = st.lists(st.integers(0, len(PALETTE) - 1), min_size=matrix.size, max_size=matrix.size)
    return (matrix, *(table(draw(codes)) for _ in range(count)))
