"""SGLang's questions about a record's fields (`arg_utils`, 0.5.19 on), answered for the
configuration an entry is handed.

From 0.5.19 SGLang's resolution asks what fields a record declares through small
functions of `sglang/srt/arg_groups/arg_utils.py` that read msgspec's and
dataclasses' machinery (`msgspec.structs.fields(cls)`, `get_type_hints`,
`cls.__mro__`): `record_fields(type(server_args))` lists the fields (the entry
snapshots them all as `_raw_input`), `is_record(x)`, `field_names(cls)`,
`resolvable_fields(cls)`, and `with_fallback(cls, name, value)` applies a field's
declared `Arg(fallback=...)` (SGLang's `resolution_result` reads it). The world
answers them from what the configuration's class declares, read from the code
(`harness.closure.defaults`: its namespaces' fields, in the order read, each
with its default, resolvable mark and fallback):

- `record_fields(cls)`: a tuple of field records, each with `.name` and
  `.default` (refused where the default is not a literal); `is_record` is true
  of the configuration and its class, false of a plain value (None, a number, a
  string, a container), refused of anything else;
- `field_names`, `resolvable_fields`, `fallbacks_of`, `with_fallback` as
  SGLang's, refused where a mark or a fallback cannot be read from the text;
- `dataclasses.fields(x)` and `dataclasses.is_dataclass(x)` (0.5.19's entry and
  handlers ask these of the configuration): of the configuration or its class,
  the same field records where the class is a dataclass of its own body (else
  Python's TypeError, and false); of the code's own objects, Python's answers.

A class with base classes (whose fields are not read) has its fields refused.

Asked of any other class, each is refused (its fields are not read).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.engine.world import (
    Context,
    Native,
    Obj,
    Probe,
    Resolver,
    Spec,
    is_stand_in,
    world_function,
)
from harness.engine.worlds import dataclass as dataclass_world
from harness.engine.worlds.copying import ATOMIC

RECORD_FIX = (
    "{project}'s record helpers are answered for the configuration the entry is handed "
    "and its class only, from the fields its code declares (see docs/matrix-files.md)"
)
PLAIN = (type(None), bool, int, float, complex, str, bytes, tuple, list, dict, set, frozenset)


def names(ctx: Context, defaults: Any, cls: Any) -> dict[str, Any]:
    """The record helpers, answered from `defaults` (the class's fields as read) for the
    configuration's class `cls` (`World.from_class`)."""
    probe, name = ctx.probe, ctx.world.facts.class_name
    asked = _class_check(probe, cls, name)
    fields = _field_records(probe, defaults)

    def record_fields(of: Any) -> tuple:
        asked(of, "record_fields")
        return fields()

    def is_record(of: Any) -> bool:
        if of is cls or _configuration(of, name):
            return True
        if type(of) in PLAIN:
            return False
        raise probe.refuse(f"is_record() of a {type(of).__name__}", RECORD_FIX)

    def field_names(of: Any) -> frozenset:
        asked(of, "field_names")
        return frozenset(known(probe, defaults))

    def resolvable_fields(of: Any) -> frozenset:
        asked(of, "resolvable_fields")
        unread = sorted(f for f, marked in defaults.marks.items() if type(marked) is str)
        if unread:
            why = defaults.marks[unread[0]]
            raise probe.refuse(f"whether {defaults.source} lets {unread[0]} be declared", why)
        return frozenset(f for f, marked in defaults.marks.items() if marked is True)

    def fallbacks_of(of: Any) -> dict:
        asked(of, "fallbacks_of")
        return fallbacks(probe, defaults, name)

    def with_fallback(of: Any, field: Any, value: Any) -> Any:
        asked(of, "with_fallback")
        if value is not None:
            return value
        return fallbacks(probe, defaults, name).get(field, value)

    answers = (record_fields, is_record, field_names, resolvable_fields, fallbacks_of,
               with_fallback)  # fmt: skip
    assert tuple(fn.__name__ for fn in answers) == HELPERS
    made = {fn.__name__: world_function(fn.__name__, fn, probe) for fn in answers}
    return {**made, "dataclasses": _dataclasses(ctx, defaults, cls, fields)}


def _configuration(obj: Any, name: str | None) -> bool:
    """Whether `obj` is the configuration an entry is handed (the world's stand-in of
    the configuration's class, or its view of methods)."""
    return is_stand_in(obj) and type(obj).__name__ == name


NOT_DATACLASS = "must be called with a dataclass type or instance"  # Python's message


def _dataclasses(ctx: Context, defaults: Any, cls: Any, fields: Callable[[], tuple]) -> Any:
    """The `dataclasses` module of an entry: the world's decorator and `field`, and
    `fields`/`is_dataclass` answering for the configuration too (module docstring)."""
    probe, name = ctx.probe, ctx.world.facts.class_name

    def ours(of: Any, label: str) -> bool:
        if of is cls or _configuration(of, name):
            return True
        if is_stand_in(of):
            raise probe.refuse(f"dataclasses.{label}() of a {type(of).__name__}", RECORD_FIX)
        return False

    def fields_of(of: Any) -> tuple:
        if not ours(of, "fields"):
            return dataclasses.fields(of)
        if not defaults.dataclass:
            raise TypeError(NOT_DATACLASS)
        return fields()

    def is_dataclass(of: Any) -> bool:
        return defaults.dataclass if ours(of, "is_dataclass") else dataclasses.is_dataclass(of)

    answers = (("fields", fields_of), ("is_dataclass", is_dataclass))
    made = {label: Native(world_function(f"dataclasses.{label}", answer, probe))
            for label, answer in answers}  # fmt: skip
    return Obj("dataclasses", {**dataclass_world.names_made(), **made}).compile(ctx)(probe)


HELPERS = ("record_fields", "is_record", "field_names", "resolvable_fields", "fallbacks_of",
           "with_fallback")  # fmt: skip


@dataclass(frozen=True)
class Unread(Spec):
    """One of the helpers before the class's fields are read: every call refused."""

    label: str

    def compile(self, ctx: Context) -> Resolver:
        name = ctx.world.facts.class_name

        def answer(*args: Any, **kwargs: Any) -> Any:
            raise ctx.probe.refuse(f"{self.label}()", f"{name}'s fields were not read")

        function = world_function(self.label, answer, ctx.probe)
        return lambda probe: function


def _class_check(probe: Probe, cls: Any, name: str) -> Callable[[Any, str], None]:
    def asked(of: Any, label: str) -> None:
        if of is not cls:
            raise probe.refuse(f"{label}() of another class than {name}", RECORD_FIX)

    return asked


def _field_records(probe: Probe, defaults: Any) -> Callable[[], tuple]:
    """The fields' records (made at the first call: a class declares hundreds)."""
    from harness.engine.sandbox import overlay_maker  # the sandbox's, when bound

    def read(inner: Any, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr == "default":  # the one read of a field's that the name leaves unanswered
            field = inner
            why = defaults.fields[field].refusal or (
                "made by a factory, it has no default of its own (msgspec's NODEFAULT, "
                "dataclasses' MISSING)"
            )
            raise probe.refuse(f"the default of {field}", f"{defaults.source}: {why}", field)
        raise probe.refuse(f"a field record's .{attr}", RECORD_FIX)

    def write(inner: Any, attr: str, done: str) -> BaseException:
        return probe.refuse(f"a field record's .{attr}", RECORD_FIX, done=done)

    def fresh(record: Any, value: Any) -> Any:  # a list default read is a new list each time
        return value if type(value) in ATOMIC else copy.deepcopy(value)  # (as deepcopy does)

    make = overlay_maker("field", probe, fresh, otherwise=read, write=write, name="FieldInfo")
    made: list[tuple] = []

    def fields() -> tuple:
        if not made:
            made.append(tuple(make(name, {"name": name, **_known(default)})
                              for name, default in known(probe, defaults).items()))  # fmt: skip
        return made[0]

    return fields


def _known(default: Any) -> dict[str, Any]:
    """A field record's `.default`: the literal the class declares (msgspec's is
    NODEFAULT where a factory makes it, dataclasses' MISSING: not answered)."""
    return {"default": default.value} if default.literal and not default.factory else {}


def known(probe: Probe, defaults: Any) -> dict[str, Any]:
    """The class's fields, refused where a base class may declare more."""
    if defaults.bases:
        why = f"{defaults.source} has base classes, whose fields are not read"
        raise probe.refuse(f"the fields of {defaults.source}", why)
    return defaults.fields


def fallbacks(probe: Probe, defaults: Any, name: str | None) -> dict[str, Any]:
    """SGLang's `fallbacks_of(cls)`: every field's declared fallback (each read a new
    copy), after its checks, with its messages: no list, dict or set (one object every
    reader would share), and a field defaulting to None (else the fallback is dead).
    Refused where a fallback or such a default cannot be read."""
    found = {}
    for field, declared in defaults.fallbacks.items():
        if not declared.literal:
            raise probe.refuse(f"the fallback of {field}", f"{defaults.source}: {declared.refusal}")
        default = defaults.fields.get(field)
        if default is None or not default.literal or default.factory:
            why = f"the default of {field} is not read" if default is None else default.refusal
            raise probe.refuse(f"whether {field}'s fallback is reachable",
                               f"{defaults.source}: {why or 'made by a factory'}")  # fmt: skip
        broken = fallback_error(defaults, name, field)
        if broken:
            raise AssertionError(broken)
        found[field] = copy.deepcopy(declared.value)
    return found


def fallback_error(defaults: Any, name: str | None, only: str | None = None) -> str | None:
    """SGLang's message where `fallbacks_of` asserts (on `only`, else on the first field
    whose literal fallback and default fail its checks); None where none does."""
    for field, declared in defaults.fallbacks.items():
        default = defaults.fields.get(field)
        if only not in (None, field) or not declared.literal or default is None:
            continue
        if isinstance(declared.value, list | dict | set):
            return (f"{name}.{field}: a mutable fallback would be shared by every reader -- "
                    "use a scalar")  # fmt: skip
        if default.literal and not default.factory and default.value is not None:
            return (f"{name}.{field}: declares a fallback but defaults to {default.value!r}, "
                    "so the fallback is unreachable")  # fmt: skip
    return None
