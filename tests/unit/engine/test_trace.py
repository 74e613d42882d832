"""Tracing several cells in one worker: each trace is what tracing that cell alone gives,
whether the code is loaded once for all of them (pure code) or afresh (code that keeps
state between calls)."""

from __future__ import annotations

import textwrap

from harness.closure.extract import extract_closure
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache
from harness.engine.events import CONDITION, OPERAND
from harness.engine.trace import Job, trace_cells
from harness.engine.worlds.sglang import FACTS
from harness.scan.versions import bind_matrix
from tests.unit.tables import small_matrix

PURE = """\
def target(view):
    if view.a0 == 1 and view.a1 != 0:
        return {"page_size": 128}
    return {}
"""

# keeps state: the first call it sees takes the other way
KEEPS = """\
SEEN = []


def target(view):
    SEEN.append(view.a0)
    if len(SEEN) > 1:
        return {"page_size": 128}
    return {}
"""


def traced(source: str, cells: list[tuple[int, ...]]):
    matrix = small_matrix([2, 2])
    text = textwrap.dedent(source)
    files = RevisionFiles.of({"m.py": text}, "m.py")
    closure = extract_closure(SourceCache(), files, "target", frozenset(), "m.yaml", facts=FACTS)
    jobs = [Job(closure, text, "rev", cell) for cell in cells]
    return trace_cells(jobs, matrix, bind_matrix(matrix))


def test_each_cell_of_pure_code_traces_as_it_does_alone():
    cells = [(1, 1, 0), (0, 1, 0), (1, 0, 0), (1, 1, 0)]
    together = traced(PURE, cells)
    alone = [traced(PURE, [cell])[0] for cell in cells]
    assert together == alone
    # a0 == 1 and a1 != 0, from the cell itself: both operands on (1, 1), only a0 on (0, 1)
    operands = [[(e.source, e.value) for e in t.events if e.kind == OPERAND] for t in together]
    assert operands[0] == [("view.a0 == 1", True), ("view.a1 != 0", True)]
    assert operands[1] == [("view.a0 == 1", False)]
    assert [t.outcome.kind for t in together] == ["value", "kept", "kept", "value"]


def test_code_that_keeps_state_is_traced_afresh_for_each_cell():
    together = traced(KEEPS, [(0, 0, 0), (1, 0, 0), (0, 1, 0)])
    # each cell is its code's first call: SEEN holds one item, the condition is false
    assert [t.outcome.kind for t in together] == ["kept"] * 3
    conditions = [[e.value for e in t.events if e.kind == CONDITION] for t in together]
    assert conditions == [[False]] * 3
