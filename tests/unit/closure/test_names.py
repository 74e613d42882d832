"""Annotations as Python runs them: stripped for a closure, never run in a file that
postpones them."""

from __future__ import annotations

import ast

import pytest

from harness.closure.names import never_annotated, strip_annotations

SHAPES = [
    "x: int = 1",
    "x: Annotated[int, Field(make())]",
    "class A(Base):\n    x: Annotated[int, Field(f())] = g()\n    y: int\n    z = 3",
    "class A:\n    def m(self, a: h() = k(), *b: c(), **d: e()) -> r():\n        z: q() = 1",
    "def top(b: c(), /, d: e = 1, *, f: g() = 2) -> d():\n    pass",
    "@deco(1)\nasync def top(b: int) -> None:\n    inner: T = await b",
    "lambda a, b=f(): a",
    "if X:\n    y: T.update(z) = 2\nelse:\n    w = 1",
    "class A:\n    class B:\n        u: list[int] = []\n    v = B",
]


@pytest.mark.parametrize("source", SHAPES)
def test_never_annotated_is_the_stripped_statement_and_leaves_it_as_it_was(source):
    """What a postponing file runs: the statement with no annotation at all, as the
    copying strip (every=True) makes it; the statement itself unchanged."""
    (node,) = ast.parse(source).body
    before = ast.dump(node, include_attributes=True)
    found = never_annotated(node)
    assert ast.dump(found, include_attributes=True) == ast.dump(
        strip_annotations(node, every=True), include_attributes=True
    )
    assert ast.dump(node, include_attributes=True) == before
    for child in ast.walk(found):
        assert not isinstance(child, ast.AnnAssign)
        assert getattr(child, "annotation", None) is None
        assert getattr(child, "returns", None) is None


def test_a_statement_without_annotations_is_its_own_answer():
    (node,) = ast.parse("TABLE = {'a': f(1)}\nTABLE").body[:1]
    assert never_annotated(node) is node
