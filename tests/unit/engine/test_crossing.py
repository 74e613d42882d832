"""A compiled world crossing to a worker: the job carries the calls that made it, and the
worker makes it when it gives it the code's defaults, binding the world once. What it makes
answers as the one made in the parent, and refuses what the parent's refuses."""

from __future__ import annotations

import pickle

import pytest
import yaml

from harness.closure.defaults import Default, Defaults
from harness.engine.world import Deferred, Unbound, bind, bind_with_defaults, with_defaults
from harness.engine.worlds import world_named
from harness.errors import HarnessError
from harness.matrix.load import parse_matrix
from tests.unit.tables import small_matrix

DEFAULTS = Defaults(
    fields={"declared": Default(7, "m.py:3"), "computed": Default(None, "m.py:4", "a call")},
    source="Args (m.py)",
    inputs={"a0": Default(1, "env.py:1"), "flag": Default(True, "env.py:2")},
)


def crossed(bound):
    return pickle.loads(pickle.dumps(bound))


def answers(bound, matrix) -> list:
    """What the view answers on every cell: each axis, the input default the matrix leaves
    out, a declared default; the refusals, as their messages."""
    found = []
    for index in range(matrix.size):
        bound.probe.cell = matrix.cell(index)
        for name in ("a0", "page_size", "flag", "declared", "computed", "nowhere"):
            try:
                found.append((index, name, getattr(bound.view, name)))
            except Unbound as exc:  # refused: what it names and the fix it gives
                found.append((index, name, (exc.what, exc.fix)))
    return found


def test_a_crossed_bound_is_made_only_when_given_its_defaults():
    matrix = small_matrix([2])
    world = world_named("plain", "small.yaml")
    sent = crossed(bind(world, matrix))
    assert isinstance(sent, Deferred)
    made = with_defaults(sent, DEFAULTS)
    here = with_defaults(bind(world, matrix), DEFAULTS)
    assert answers(made, matrix) == answers(here, matrix)
    got = answers(made, matrix)
    assert [v for _, name, v in got if name == "flag"] == [True] * matrix.size  # its default
    assert {v for _, name, v in got if name == "a0"} == {0, 1}  # the axis, not the default
    assert {v for _, name, v in got if name == "declared"} == {7}


def test_a_crossed_bound_crosses_again_as_the_same_calls():
    matrix = small_matrix([3])
    world = world_named("plain", "small.yaml")
    once = with_defaults(crossed(bind(world, matrix)), DEFAULTS)
    twice = with_defaults(crossed(once), Defaults(fields={}))
    assert answers(twice, matrix) == answers(once, matrix)


def test_a_matrix_the_world_refuses_is_refused_however_it_is_bound():
    """The output is neither an axis nor a field: binding refuses it, and the code's
    input defaults, though they name it, do not make it one."""
    doc = {"name": "no-output", "target": {"path": "m.py", "function": "target",
           "output": "page_size"}, "world": "plain", "axes": {"a0": [0, 1]}}  # fmt: skip
    matrix = parse_matrix(yaml.safe_dump(doc), "no-output.yaml")
    world = world_named("plain", "no-output.yaml")
    defaults = Defaults(fields={}, inputs={"page_size": Default(1, "env.py:1")})
    with pytest.raises(HarnessError) as direct:
        bind(world, matrix)
    with pytest.raises(HarnessError) as deferred:
        bind_with_defaults(world, matrix, defaults)
    assert str(deferred.value) == str(direct.value) and "page_size" in str(direct.value)
