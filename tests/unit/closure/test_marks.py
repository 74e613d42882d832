"""`mark` reads from an annotation's text what Python finds by evaluating it: the first
`Arg` among `Annotated`'s metadata (a bare string standing for one without the mark),
and its `resolvable`. The expected answer of each case is Python's, evaluated here."""

from __future__ import annotations

import ast
from typing import Annotated, Optional, get_args, get_origin

import pytest

from harness.closure.marks import mark
from tests.test_entry_declarations import ARG_UTILS

FIXTURE: dict = {}
exec(ARG_UTILS, FIXTURE)  # the SGLang-shaped metadata classes the entry tests commit
Arg, NS = FIXTURE["Arg"], FIXTURE["NS"]


class Loud(Arg):  # a subclass: Python takes it for the marker
    pass


SCOPE = {"A": Annotated, "Annotated": Annotated, "Ann": Annotated, "List": list,
         "Optional": Optional, "Arg": Arg, "NS": NS,
         "Loud": Loud, "MARKED": Arg(resolvable=True), "options": {"resolvable": True}}  # fmt: skip


def pythons(text: str) -> bool:
    """SGLang's reading: the first metadata item that is an Arg, or a bare string."""
    hint = eval(text, dict(SCOPE))  # our own case texts
    if get_origin(hint) is not Annotated:
        return False
    for item in get_args(hint)[1:]:
        if isinstance(item, str):
            return False
        if isinstance(item, Arg):
            return item.resolvable
    return False


READ = [
    "int",
    "Optional[int]",
    "A[int, Arg(resolvable=True)]",
    "A[Optional[int], Arg(help='x', resolvable=True)]",
    "A[int, Arg(help='x')]",
    "A[int, Arg(resolvable=False)]",
    "A[int, 'help text', Arg(resolvable=True)]",
    "A[int, NS('model'), Arg(resolvable=True)]",
    "A[int, NS('model')]",
    "A[int, 3, Arg(resolvable=True)]",
    "Annotated[int, Arg(resolvable=True)]",
    "Optional[A[int, Arg(resolvable=True)]]",
    "A[int, Arg(resolvable=True), Arg(resolvable=False)]",
    "A[A[int, Arg(resolvable=True)], 'help']",  # Python flattens: the inner Arg comes first
    "A[A[int, 'help'], Arg(resolvable=True)]",
    "List[A[int, Arg(resolvable=True)]]",
]
UNREAD = [
    "A[int, Loud(resolvable=True)]",  # another call: a subclass, for all the text says
    "A[int, MARKED]",  # a name bound to one
    "A[int, Arg(**options)]",
    "A[int, Arg(resolvable=bool(1))]",
    "Ann[int, Arg(resolvable=True)]",  # Annotated by another name
    "A[Ann[int, Arg(resolvable=True)], 'help']",  # ... inside, whose items come first
]


@pytest.mark.parametrize("text", READ)
def test_the_text_gives_pythons_answer(text):
    assert mark(ast.parse(text, mode="eval").body, "Arg", "resolvable", frozenset({"NS"})) is (
        pythons(text)
    )


@pytest.mark.parametrize("text", UNREAD)
def test_what_the_text_cannot_tell_says_why(text):
    found = mark(ast.parse(text, mode="eval").body, "Arg", "resolvable", frozenset({"NS"}))
    assert isinstance(found, str) and found, found
    assert pythons(text) is True  # each would be marked: False would be a wrong answer


def test_a_string_annotation_is_not_read():
    node = ast.parse("'A[int, Arg(resolvable=True)]'", mode="eval").body
    assert isinstance(mark(node, "Arg", "resolvable", frozenset()), str)
