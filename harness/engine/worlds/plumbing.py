"""SGLang's resolution machinery, as an entry target (`target: {entry: ...}`) runs it.

SGLang's resolution entry (`run_resolution_pipeline(server_args)`) runs its
handlers and passes through three functions of its own, whose bodies reach
the dataclass machinery of `ServerArgs` (field metadata, a stash of
declarations projected at publication) and a plugin registry. What they do
to the configuration is small, and the world does exactly that:

- `run_hook(step, server_args)` runs `step(server_args)` (SGLang first wraps
  it in the plugins registered for its name: the harness's process has none);
- `run_post_process_pass(server_args, fn)` calls the pass with a read-only
  view of the configuration as resolved so far, refuses a result that is not
  a dict (TypeError, SGLang's message), and declares what it returns;
- `declare_resolution(server_args, source, **fields)` declares the fields:
  a later read of the configuration gives the declared value, and the last
  declaration of a field is its final value.

A declaration is a write to the configuration the entry was handed (the
harness records it, see `harness.engine.sandbox`); the outputs are the final
values of the output fields, the cell's input where nothing declared one.

A fourth, `validate_declarations(server_args, declarations)`, is SGLang's
check of the model overrides' declarations: each `(source, fields)` may only
declare the fields `ServerArgs` marks `Arg(resolvable=True)`, else SGLang's
ValueError. SGLang reads the marks by evaluating the class's annotations; the
world reads them from its text (`harness.closure.marks`), and refuses a
declaration of a field whose mark the text cannot tell.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.engine.own_names import name_reader
from harness.engine.world import (
    ASSIGNED,
    Context,
    Probe,
    Resolver,
    Spec,
    is_stand_in,
    world_function,
)

PASS_VIEW_FIX = (
    "a post-process pass returns the fields it declares; {project} hands it a read-only "
    "view (see docs/matrix-files.md)"
)


@dataclass(frozen=True)
class Machinery(Spec):
    """One of the functions above: `make(probe, read_only)` is what a call answers,
    `read_only(config)` the view a pass is handed."""

    label: str
    make: Callable[[Probe, Callable[[Any], Any]], Callable[..., Any]]

    def compile(self, ctx: Context) -> Resolver:
        read_only = read_only_maker(ctx.probe, ctx.world.facts.view_type)
        function = world_function(self.label, self.make(ctx.probe, read_only), ctx.probe)
        return lambda probe: function


def read_only_maker(probe: Probe, name: str) -> Callable[[Any], Any]:
    """`view(config)`: an overlay that reads what `config` reads and refuses writes on
    `probe` (as SGLang's `ResolvedView` refuses them), of class `name`."""
    from harness.engine.sandbox import overlay_maker  # the sandbox's overlays, when bound

    def write(inner: Any, attr: str, done: str) -> BaseException:
        return probe.refuse(f"view.{attr}", PASS_VIEW_FIX, done=done)

    overlay = overlay_maker("view", probe, write=write, name=name)
    return lambda config: overlay(config, {})


OTHER_FIX = (
    "declare fields only on the configuration the entry point is handed; other state "
    "would outlive the call (see docs/matrix-files.md)"
)


def _declare(probe: Probe, label: str, config: Any, fields: dict[str, Any]) -> None:
    """Set `fields` on `config`, which records them (the entry's configuration, a stand-in
    of the harness's); on any other object, a write the purity check cannot see, refused."""
    if not is_stand_in(config):
        kind = type(config).__name__
        raise probe.refuse(f"{label}() on an object of type {kind}", OTHER_FIX, done=ASSIGNED)
    for name, value in fields.items():
        setattr(config, name, value)


def run_hook(probe: Probe, read_only: Callable[[Any], Any]) -> Callable[..., Any]:
    def answer(step: Any, server_args: Any) -> None:
        step(server_args)

    return answer


def run_post_process_pass(probe: Probe, read_only: Callable[[Any], Any]) -> Callable[..., Any]:
    def answer(server_args: Any, fn: Any) -> None:
        declared = fn(read_only(server_args))
        if not isinstance(declared, dict):  # SGLang's message reads fn.__qualname__
            name = name_reader(probe.refuse)(fn, "__qualname__")
            kind = type(declared).__name__
            raise TypeError(f"post-process pass {name} must return a dict, got {kind}")
        _declare(probe, "run_post_process_pass", server_args, dict(declared))

    return answer


def declare_resolution(probe: Probe, read_only: Callable[[Any], Any]) -> Callable[..., Any]:
    def answer(server_args: Any, source: Any, /, **fields: Any) -> None:
        _declare(probe, "declare_resolution", server_args, fields)

    return answer


NOT_DECLARABLE = (
    "{source}: {fields} not model-overridable; declarations are limited to the fields the "
    "publish gate accepts."
)  # SGLang's message
VALIDATE_FIX = (
    "check declarations only of the configuration the entry point is handed, with a source "
    "named by a string and fields by a dict"
)


def validator(ctx: Context, defaults: Any | None, cls: Any = None) -> Callable[..., Any]:
    """`validate_declarations` against the marks `defaults` read (None: not read, so
    every call is refused); `cls`, the configuration's class as the entry reads it, is
    no dataclass instance, so SGLang checks nothing there."""
    probe, name = ctx.probe, ctx.world.facts.class_name

    def answer(server_args: Any, declarations: Any) -> None:
        if defaults is None:
            raise probe.refuse("validate_declarations()", f"{name}'s fields were not read")
        if cls is not None and server_args is cls:
            return None
        if not is_stand_in(server_args):
            kind = type(server_args).__name__
            raise probe.refuse(f"validate_declarations() of a {kind}", VALIDATE_FIX)
        for source, declared in declarations:
            if type(source) is not str or type(declared) is not dict:
                raise probe.refuse("validate_declarations() of other values", VALIDATE_FIX)
            _check(probe, defaults, source, declared)

    return world_function("validate_declarations", answer, probe)


def _check(probe: Probe, defaults: Any, source: str, declared: dict) -> None:
    unread = {field: defaults.marks[field] for field in declared
              if type(defaults.marks.get(field)) is str}  # fmt: skip
    unread.update({field: f"{defaults.source} declares no field {field} in the body read "
                   "(a base class's fields are not read)"
                   for field in declared if field not in defaults.fields})  # fmt: skip
    for field, why in unread.items():
        fix = f"{why}; bind validate_declarations under `bindings:` to skip the check"
        raise probe.refuse(f"whether {defaults.source} lets {field} be declared", fix, field)
    unknown = sorted(set(declared) - {f for f, marked in defaults.marks.items() if marked is True})
    if unknown:
        raise ValueError(NOT_DECLARABLE.format(source=source, fields=unknown))


@dataclass(frozen=True)
class Validator(Spec):
    """`validate_declarations` before the class's declarations are read: refused."""

    def compile(self, ctx: Context) -> Resolver:
        function = validator(ctx, None)
        return lambda probe: function


def from_class(ctx: Context, defaults: Any, cls: Any) -> dict[str, Any]:
    """The names the world answers from the configuration's class (`World.from_class`)."""
    return {"validate_declarations": validator(ctx, defaults, cls)}


MACHINERY: dict[str, Spec] = {
    **{
        fn.__name__: Machinery(fn.__name__, fn)
        for fn in (run_hook, run_post_process_pass, declare_resolution)
    },
    "validate_declarations": Validator(),
}
