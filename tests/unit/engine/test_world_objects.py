"""A world's object answers each attribute as its spec says, compiled at the first read:
a bind makes no stand-in for an attribute the code never reads (a world object has
hundreds: SGLang's `envs`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from harness.closure.facts import STANDARD_NAMES
from harness.engine.purity import CACHING
from harness.engine.world import Call, Const, Context, Obj, Spec, Unbound, world_function
from harness.engine.worlds import (
    caching,
    checkpoint,
    copying,
    enums,
    environ,
    json_text,
    world_named,
)
from harness.engine.worlds import dataclass as dataclasses_world
from harness.engine.worlds.sglang import get_device_capability
from tests.unit.tables import small_matrix


@dataclass(frozen=True)
class Counted(Spec):
    """A constant that notes each time it is compiled."""

    value: Any
    compiled: list = field(default_factory=list)

    def compile(self, ctx: Context):
        self.compiled.append(ctx)
        return lambda probe: self.value


def test_an_attribute_is_compiled_once_when_first_read_and_never_when_not():
    ctx = Context(world_named("plain", "test"), small_matrix([2]))
    used, unused = Counted(1), Counted(2)
    thing = Obj("thing", {"used": used, "unused": unused}).compile(ctx)(ctx.probe)
    assert used.compiled == [] and unused.compiled == []
    assert (thing.used, thing.used) == (1, 1)
    assert used.compiled == [ctx] and unused.compiled == []


def test_what_the_object_lacks_is_refused_on_the_probe_and_a_fallback_answers_the_rest():
    ctx = Context(world_named("plain", "test"), small_matrix([2]))
    plain = Obj("thing", {"used": Counted(1)}).compile(ctx)(ctx.probe)
    with pytest.raises(Unbound) as refused:
        plain.other  # noqa: B018
    assert refused.value.what == "thing.other" and ctx.probe.unbound is refused.value
    with pytest.raises(Unbound):
        plain.used = 3
    wider = Obj("thing", {"used": Counted(1)}, fallback=lambda name: Counted(name)).compile(ctx)
    assert (wider(ctx.probe).used, wider(ctx.probe).other) == (1, "other")


@pytest.mark.parametrize("attr", ["cache_info", "{name.__class__}", "{0}", "%s"])
def test_a_world_function_refuses_any_attribute_naming_it_as_asked(attr):
    """Every stand-in function is of one class: what it answers and how it is named are
    its own, and an attribute's name is never read as a template."""
    ctx = Context(world_named("plain", "test"), small_matrix([2]))
    first = world_function("is_hip()", lambda: True, ctx.probe)
    second = world_function("get_platform()", lambda: "sm100", ctx.probe)
    assert (first(), second()) == (True, "sm100")
    with pytest.raises(Unbound) as refused:
        getattr(second, attr)
    assert refused.value.what == f"get_platform.{attr}"
    with pytest.raises(Unbound) as refused:
        repr(first)
    assert refused.value.what == "repr(is_hip)"


def test_a_world_function_takes_the_arguments_sglang_s_takes():
    """SGLang's `get_device_capability(device_id=0)`: a call it would refuse raises
    Python's own TypeError here too (code that catches it takes the same way in both)."""
    ctx = Context(world_named("plain", "test"), small_matrix([2]))
    spec = Call(Const((10, 0)), label="get_device_capability", parameters=get_device_capability)
    function = spec.compile(ctx)(ctx.probe)
    assert function() == function(1) == function(device_id=2) == (10, 0)
    for args, kwargs in (((0, 1), {}), ((), {"device": 0})):
        with pytest.raises(TypeError, match="get_device_capability"):
            function(*args, **kwargs)
    assert ctx.probe.unbound is None  # SGLang's own error, not a refusal of the world's


def test_the_worlds_names_of_pythons_library_are_those_read_only_where_imported():
    """What the worlds bind for Python's standard library is what name resolution reads
    only where the file imports it (`STANDARD_NAMES`), and purity's cache makers are
    those of `functools`: a name added to one and not the others would be a free name
    Python never binds, or a cache no cell counts."""
    made = {**dataclasses_world.names(), **caching.names(), **environ.names(),
            **checkpoint.names(), **copying.names(), **enums.names(), **json_text.names()}  # fmt: skip
    assert set(made) == set(STANDARD_NAMES)
    functools = {n for n, module in STANDARD_NAMES.items() if module == "functools"}
    assert set(CACHING) == functools - {"cached_property"}  # (it caches nothing: refused)


def test_a_dataclass_field_no_attribute_read_may_take_is_refused_as_the_class_is_made():
    """A dataclass lists its fields in `__match_args__`, which a positional `case K(x)`
    reads in C: the world's decorator refuses such a field even where no class statement
    the policy read made it (the policy refuses the statement first)."""
    ctx = Context(world_named("plain", "test"), small_matrix([2]))
    decorate = dataclasses_world.Decorator().compile(ctx)(ctx.probe)
    made = type("Text", (str,), {"__annotations__": {"format": "int"}})
    with pytest.raises(Unbound, match="dataclass Text: field format"):
        decorate(made)
    assert decorate(type("Fine", (), {"__annotations__": {"page": "int"}}))(page=1).page == 1


def test_auto_gives_a_token_that_only_an_enumeration_s_body_reads():
    """What `auto()` hands the code is no object of Python's enum (which the machinery
    writes into, and which every cell of a process shares): its attributes and repr are
    refused; a class body takes it as Python's `auto()` (or its value), once, in the
    call that made it; kept in another class, or given again, it is refused."""
    ctx = Context(world_named("plain", "test"), small_matrix([2]))
    auto = enums.Auto().compile(ctx)(ctx.probe)
    base = enums.Base().compile(ctx)(ctx.probe)
    token = auto()
    for read, what in ((lambda: token.value, "auto().value"), (lambda: repr(token), "repr")):
        with pytest.raises(Unbound, match=re.escape(what)):
            read()
    mode = type(base)("Mode", (base,), _body(base, A=token, B=(auto(), 7), C=auto(9)))
    assert [m.value for m in mode] == [1, (2, 7), 9]
    assert type(base)("Again", (base,), _body(base, A=auto())).A.value == 1
    with pytest.raises(Unbound, match="twice, or kept"):
        type(base)("Twice", (base,), _body(base, A=token))
    kept = auto()
    ctx.probe.start((0,))  # the next call
    with pytest.raises(Unbound, match="twice, or kept"):
        type(base)("Kept", (base,), _body(base, A=kept))
    ctx.probe.start((0,))
    with pytest.raises((RuntimeError, Unbound)) as plain:  # 3.11 wraps __set_name__'s
        type("Plain", (), {"A": auto()})
    assert Unbound in (type(plain.value), type(plain.value.__cause__))
    assert "auto() as Plain.A" in str(ctx.probe.unbound)  # the runner sees it, caught or not


def _body(base: type, **members: Any) -> dict:
    body = type(base).__prepare__("Body", (base,))
    for name, value in members.items():
        body[name] = value
    return body
