"""A function the policy withholds from an entry, narrowed to the statements that hold what
the policy forbids (`harness.engine.deferral.narrowed`): what is compiled must never hold
a forbidden construct, and must run as written up to where one stood.

Each case states, from the source alone, which statements hold a forbidden construct
innermost; the narrowed copy must replace exactly those, and hold none."""

from __future__ import annotations

import ast
import textwrap

import pytest

from harness.engine.branches import Sites
from harness.engine.deferral import REFUSED, narrowed
from harness.engine.policy import violations

CASES = {
    # source, the lines (1-based, in the function) replaced; None: withheld whole
    "flat": ("""\
        def f(x):
            y = 1
            z = x.__dict__
            return y
        """, [3]),
    "in-if": ("""\
        def f(x):
            if x.a:
                return type(x).__struct_fields__
            return 1
        """, [3]),
    "in-test": ("""\
        def f(x):
            if x.__dict__:
                return 1
            return 2
        """, [2]),
    "in-handler": ("""\
        def f(x):
            try:
                return 1
            except Exception:
                return x.__class__
            finally:
                pass
        """, [5]),
    "nested-def": ("""\
        def f(x):
            def g():
                return x.__dict__
            return g
        """, [3]),
    "lambda": ("""\
        def f(x):
            g = lambda: x.__dict__
            return 1
        """, [2]),
    "two": ("""\
        def f(x):
            for i in x:
                a = i.__dict__
            while x:
                b = x.__class__
            return 0
        """, [3, 5]),
    "default": ("""\
        def f(x=object.__subclasses__):
            return x
        """, None),
    "decorator": ("""\
        @g.__globals__
        def f(x):
            return x
        """, None),
    "annotation": ("""\
        def f(x: y.__dict__):
            return x
        """, None),
}  # fmt: skip


def parse(source: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(source)).body[0]


def replaced(node: ast.FunctionDef) -> list[int]:
    """The lines where a statement was replaced (the instrumented copy's marker of a block
    stands where the block's first statement does, and goes with it)."""
    return sorted({n.lineno for n in ast.walk(node)
                  if isinstance(n, ast.Expr) and isinstance(n.value, ast.Name)
                   and n.value.id.startswith(REFUSED)})  # fmt: skip


@pytest.mark.parametrize("source, lines", CASES.values(), ids=list(CASES))
def test_only_the_statements_holding_a_forbidden_construct_are_replaced(source, lines):
    node = parse(source)
    assert list(violations(node))  # every case holds one
    made = narrowed(node, node)
    if lines is None:
        assert made is None
        return
    assert replaced(made) == lines
    assert not list(violations(made))
    compile(ast.Module(body=[made], type_ignores=[]), "f.py", "exec")  # still Python


@pytest.mark.parametrize("source, lines", CASES.values(), ids=list(CASES))
def test_narrowing_the_instrumented_copy_leaves_no_forbidden_construct(source, lines):
    """The worker compiles a copy rewritten to report its conditions (`Sites.rewrite`):
    narrowed by where the original's statements stood, no construct the policy forbids is
    left at any place one stood in the original."""
    node = parse(source)
    instrumented = Sites().rewrite("f.py", [node])[0]
    made = narrowed(instrumented, node)
    if lines is None:
        assert made is None
        return
    places = {(line, col) for line, col, _ in violations(node)}
    kept = [n for n in ast.walk(made) if (getattr(n, "lineno", None), getattr(n, "col_offset", None))
            in places and not (isinstance(n, ast.Name) and n.id.startswith(REFUSED))
            and not isinstance(n, ast.Expr)]  # fmt: skip
    assert kept == [] and replaced(made) == lines


def test_a_copy_that_lost_a_statement_is_withheld_whole():
    """Where the copy handed in no longer holds a statement the original held at that place
    (its rewriting moved it), nothing is narrowed: the function is withheld whole."""
    node = parse(CASES["flat"][0])
    moved = parse(CASES["flat"][0])
    moved.body[1].lineno += 100
    assert narrowed(moved, node) is None


def test_a_function_with_nothing_forbidden_is_not_narrowed():
    node = parse("def f(x):\n    return x\n")
    assert narrowed(node, node) is None
