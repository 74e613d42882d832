"""Branch coverage: which way each condition went, recorded while exploring.

Random pass functions (the generator of test_explore) are evaluated explored and on
every cell: the flags must agree, and must equal what Python's own tracer saw when
plain Python ran every cell (an `if`'s test was true where its body's first line ran,
false where its `else` ran). Hand-written functions check operands, loops, asserts,
comprehensions, `match` and helpers in another file, against values worked out here.
"""

from __future__ import annotations

import ast
import itertools
import sys
import textwrap
from types import SimpleNamespace

from hypothesis import given, settings

from harness.closure.extract import extract_closure
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache
from harness.engine.branches import BLOCK, FALSE, OPERAND, TEST, TRUE, sites_of, truth
from harness.engine.explore import evaluate_closure
from harness.engine.sandbox import load_order
from harness.engine.worlds.sglang import FACTS
from harness.scan.versions import bind_matrix
from tests.unit.engine.test_explore import pass_source
from tests.unit.tables import small_matrix


def evaluated(source: str, radices: list[int], files: dict | None = None, exhaustive=False):
    matrix = small_matrix(radices)
    bound = bind_matrix(matrix)
    revision = RevisionFiles.of({"m.py": source, **(files or {})}, "m.py")
    closure = extract_closure(SourceCache(), revision, "target", bound.names, facts=FACTS)
    evaluation = evaluate_closure(closure, matrix, bound, "rev", exhaustive=exhaustive)
    return closure, evaluation.table, matrix


def executed_lines(source: str, matrix) -> set[int]:
    """Every line of `target` plain Python ran on some cell (sys.settrace: no harness)."""
    namespace: dict = {}
    exec(compile(source, "plain", "exec"), namespace)
    lines: set[int] = set()

    def tracer(frame, event, arg):
        if frame.f_code.co_filename == "plain":
            lines.add(frame.f_lineno)
        return tracer

    names = [axis.name for axis in matrix.axes]
    for values in itertools.product(*(axis.values for axis in matrix.axes)):
        view = SimpleNamespace(**dict(zip(names, values, strict=True)))
        sys.settrace(tracer)
        try:
            namespace["target"](view)
        except ValueError:
            pass
        finally:
            sys.settrace(None)
    return lines


def if_tests(source: str) -> list[ast.If]:
    target = next(n for n in ast.parse(source).body if getattr(n, "name", "") == "target")
    return [n for n in ast.walk(target) if isinstance(n, ast.If)]


@settings(max_examples=60, deadline=None)
@given(pass_source())
def test_coverage_of_ifs_equals_what_plain_python_ran(case):
    sizes, source = case
    closure, table, matrix = evaluated(source, sizes)
    _, every, _ = evaluated(source, sizes, exhaustive=True)
    assert table.branches == every.branches  # decision paths see what every cell sees
    sites = sites_of(closure, load_order)
    assert len(sites) == len(table.branches)
    ran = executed_lines(source, matrix)
    by_place = {(s.line, s.col, s.kind): n for n, s in enumerate(sites)}
    for node in if_tests(source):
        expected = (TRUE if node.body[0].lineno in ran else 0) | (
            FALSE if node.orelse[0].lineno in ran else 0
        )
        site = by_place[(node.test.lineno, node.test.col_offset, TEST)]
        assert table.branches[site] == expected, (source, node.test.lineno)


def flags_by_text(closure, table) -> dict[tuple[str, str], int]:
    sites = sites_of(closure, load_order)
    return {(s.kind, s.text): table.branches[n] for n, s in enumerate(sites)}


def test_operands_are_recorded_where_reached_and_not_past_a_short_circuit():
    source = textwrap.dedent("""\
        def target(view):
            if view.a0 == 0 and view.a1 == 5:
                return {"page_size": 1}
            x = view.a1 or 7
            return {"page_size": 2} if view.a0 != 1 else {}
        """)
    closure, table, _ = evaluated(source, [2, 3])  # a0 in {0, 1}, a1 in {0, 1, 2}
    flags = flags_by_text(closure, table)
    assert flags[(OPERAND, "view.a0 == 0")] == TRUE | FALSE
    assert flags[(OPERAND, "view.a1 == 5")] == FALSE  # a1 is never 5; reached only if a0 == 0
    assert flags[(TEST, "view.a0 == 0 and view.a1 == 5")] == FALSE
    assert flags[(BLOCK, "the body of `if view.a0 == 0 and view.a1 == 5`")] == 0
    assert flags[(OPERAND, "view.a1")] == TRUE | FALSE  # `or`'s left operand: 0 is false
    assert flags[(TEST, "view.a0 != 1")] == TRUE | FALSE
    assert flags[(BLOCK, "a call of target")] == TRUE


def test_loops_asserts_comprehensions_match_and_handlers_have_sites():
    source = textwrap.dedent("""\
        def target(view):
            n = 0
            while n < view.a0:
                n += 1
            for k in range(view.a0):
                pass
            picked = [k for k in (1, 2, 3) if k > 5]
            assert view.a1 >= 0, "never fails"
            match view.a1:
                case 0 if n > 9:
                    n = 1
                case _:
                    pass
            try:
                1 // view.a1
            except ZeroDivisionError:
                n = 2
            return {"page_size": len(picked) + n}
        """)
    closure, table, _ = evaluated(source, [2, 2])  # a0, a1 in {0, 1}
    flags = flags_by_text(closure, table)
    assert flags[(TEST, "n < view.a0")] == TRUE | FALSE
    assert flags[(BLOCK, "the body of `for k in range(view.a0)`")] == TRUE
    assert flags[(TEST, "k > 5")] == FALSE
    assert flags[(TEST, "view.a1 >= 0")] == TRUE
    assert flags[(TEST, "n > 9")] == FALSE
    assert flags[(BLOCK, "`case 0`")] == 0
    assert flags[(BLOCK, "`case _`")] == TRUE
    assert flags[(BLOCK, "`except ZeroDivisionError`")] == TRUE


def test_a_helper_in_another_file_is_covered_as_one_site_whoever_calls_it():
    helper = "def _big(view):\n    return view.a1 == 1 and view.a0 > 0 if view.a1 < 9 else 0\n"
    source = textwrap.dedent("""\
        from helpers import _big


        def target(view):
            if _big(view):
                return {"page_size": 1}
            return {}
        """)
    closure, table, _ = evaluated(source, [2, 2], {"helpers.py": helper})
    sites = sites_of(closure, load_order)
    inside = {s.text: table.branches[n] for n, s in enumerate(sites) if s.path == "helpers.py"}
    assert inside["view.a1 == 1"] == TRUE | FALSE
    assert inside["view.a0 > 0"] == TRUE | FALSE  # reached where a1 == 1, a0 both ways
    assert inside["view.a1 < 9"] == TRUE
    assert inside["a call of _big"] == TRUE


def test_module_level_code_is_not_instrumented():
    source = 'LIMIT = 4 if True else 5\n\n\ndef target(view):\n    return {"page_size": LIMIT}\n'
    closure, table, _ = evaluated(source, [1])
    assert [s.text for s in sites_of(closure, load_order)] == ["a call of target"]
    assert table.branches == bytes([TRUE])


class _Counted:
    calls = 0

    def __bool__(self):
        _Counted.calls += 1
        return False


def test_truth_asks_only_objects_that_define_their_truth():
    assert truth(0) is False and truth("x") is True and truth(None) is False
    assert truth(object()) is True
    assert truth(_Counted()) is False and _Counted.calls == 1
