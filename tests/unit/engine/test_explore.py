"""Exploration covers the matrix by decision paths; it must equal running every cell.

Random pass functions (nested if/elif/else over and/or/not of axis tests,
helpers, local names) are evaluated three ways: explored, exhaustive, and
by plain Python on every cell (the oracle, with no harness code involved).
"""

from __future__ import annotations

import itertools
import textwrap
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.closure.extract import extract_closure
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache
from harness.engine.explore import evaluate_closure
from harness.engine.outcome import ERROR, KEPT, VALUE
from harness.engine.worlds.sglang import FACTS
from harness.scan.versions import bind_matrix
from tests.unit.tables import PAGE_SIZES, radices, small_matrix


@st.composite
def condition(draw, sizes: list[int], depth: int = 0) -> str:
    """A boolean expression over the view's axes."""
    kind = draw(
        st.sampled_from(["eq", "ne", "in", "page", "helper"] + ["not", "and", "or"] * (depth < 2))
    )
    axis = draw(st.integers(0, len(sizes) - 1))
    value, other = (draw(st.integers(0, sizes[axis] - 1)) for _ in range(2))
    page = draw(st.sampled_from(PAGE_SIZES))
    if kind in ("not", "and", "or"):
        left, right = (draw(condition(sizes, depth + 1)) for _ in range(2))
        return f"not ({left})" if kind == "not" else f"({left}) {kind} ({right})"
    return {
        "eq": f"view.a{axis} == {value}",
        "ne": f"view.a{axis} != {value}",
        "in": f"view.a{axis} in ({value}, {other})",
        "page": f"view.page_size == {page}",
        "helper": f"_is(view, {axis}, {value})",
    }[kind]


@st.composite
def leaf(draw) -> str:
    choice = draw(st.sampled_from(["value", "keep", "raise", "local"]))
    if choice == "value":
        return f'return {{"page_size": {draw(st.sampled_from([1, 64, 128]))}}}'
    if choice == "keep":
        return "return {}"
    if choice == "raise":
        return 'raise ValueError("no page size fits")'
    return 'size = view.page_size * 2\nreturn {"page_size": size}'


@st.composite
def body(draw, sizes: list[int], depth: int = 0) -> str:
    if depth >= 3 or draw(st.booleans()):
        return draw(leaf())
    branches = draw(st.integers(1, 3))
    lines = []
    for n in range(branches):
        keyword = "if" if n == 0 else "elif"
        lines.append(f"{keyword} {draw(condition(sizes))}:")
        lines.append(textwrap.indent(draw(body(sizes, depth + 1)), "    "))
    lines.append("else:")
    lines.append(textwrap.indent(draw(body(sizes, depth + 1)), "    "))
    return "\n".join(lines)


HELPER = """\
def _is(view, axis, value):
    return getattr(view, "a%d" % axis) == value

"""


@st.composite
def pass_source(draw):
    sizes = draw(radices)
    text = HELPER + "def target(view):\n" + textwrap.indent(draw(body(sizes)), "    ") + "\n"
    return sizes, text


def oracle(source: str, matrix) -> list:
    """Plain Python on every cell: the page_size each ends with, or the error."""
    namespace: dict = {}
    exec(compile(source, "oracle", "exec"), namespace)
    target = namespace["target"]
    names = [axis.name for axis in matrix.axes]
    results = []
    for values in itertools.product(*(axis.values for axis in matrix.axes)):
        view = SimpleNamespace(**dict(zip(names, values, strict=True)))
        try:
            declared = target(view)
        except ValueError as exc:
            results.append(("error", f"ValueError: {exc}"))
            continue
        results.append(("value", declared.get("page_size", view.page_size)))
    return results


def outcomes(table, matrix) -> list:
    page = matrix.axis_index("page_size")
    out = []
    for index in range(matrix.size):
        outcome = table.outcome_at(index)
        if outcome.kind == KEPT:
            out.append(("value", matrix.axes[page].values[matrix.cell(index)[page]]))
        elif outcome.kind in (VALUE, ERROR):
            out.append((outcome.kind, outcome.value))
        else:
            out.append((outcome.kind, outcome.value))
    return out


@settings(max_examples=120, deadline=None)
@given(pass_source())
def test_exploration_equals_every_cell_equals_plain_python(case):
    sizes, source = case
    matrix = small_matrix(sizes)
    bound = bind_matrix(matrix)
    files = RevisionFiles.of({"m.py": source}, "m.py")
    closure = extract_closure(SourceCache(), files, "target", bound.names, facts=FACTS)
    explored = evaluate_closure(closure, matrix, bound, "rev")
    exhaustive = evaluate_closure(closure, matrix, bound, "rev", exhaustive=True)
    expected = oracle(source, matrix)
    assert outcomes(exhaustive.table, matrix) == expected
    assert outcomes(explored.table, matrix) == expected
    assert explored.calls <= exhaustive.calls == matrix.size
