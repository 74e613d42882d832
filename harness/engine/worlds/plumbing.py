"""SGLang's resolution machinery, as an entry target (`target: {entry: ...}`) runs it.

SGLang's resolution entry (`run_resolution_pipeline(server_args)`, or 0.5.18's
`ServerArgs.__post_init__`) runs its handlers and passes through functions of
its own whose bodies reach the dataclass machinery of `ServerArgs` and a plugin
registry. What they do to the configuration is small, and the world does
exactly that. Declarations go to a stash, the configuration's
`_resolved_overrides` list of `(source, {field: value})`, never to its fields:

- `run_hook(step, server_args)` runs `step(server_args)` (SGLang first wraps
  it in the plugins registered for its name: the harness's process has none);
- `run_post_process_pass(server_args, fn)` calls the pass with a read-only
  snapshot of the declarations so far over the configuration, refuses a result
  that is not a dict (TypeError, SGLang's message), appends a non-empty one to
  the stash and checks it (`validate_declarations`); once 0.5.18's
  `materialize_declarations` has applied the stash to the fields
  (`_declarations_materialized`), it writes them too;
- `declare_resolution(server_args, source, **fields)` appends to the stash;
- `resolved_view(x)` is a snapshot of the declarations over `x`,
  `resolving_view(x)` a live view (each read sees the declarations made by
  then), `record_of(view)` what a view reads through.

The outcome of a `run_resolution_pipeline` entry is each output field's last
declaration, else the field (`project`, SGLang's `resolution_result`); of a
`__post_init__` entry, the fields as it leaves them.

`validate_declarations(server_args, declarations)` is SGLang's check of
declarations: each `(source, fields)` may only declare the fields `ServerArgs`
marks `Arg(resolvable=True)`, else SGLang's ValueError. SGLang reads the marks
by evaluating the class's annotations; the world reads them from its text
(`harness.closure.marks`), and refuses a declaration of a field whose mark the
text cannot tell.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.engine.own_names import name_reader
from harness.engine.snapshots import Snapshot
from harness.engine.world import (
    ASSIGNED,
    INTERNAL_WRITE,
    METHOD_ENTRY,
    Context,
    Probe,
    Resolver,
    Spec,
    is_stand_in,
    world_function,
)
from harness.engine.worlds import records

PASS_VIEW_FIX = (
    "a post-process pass returns the fields it declares; {project} hands it a read-only "
    "view (see docs/matrix-files.md)"
)
STASH = "_resolved_overrides"  # the declarations so far: [(source, {field: value}), ...]
MATERIALIZED = "_declarations_materialized"  # set once they are on the fields (0.5.18)
# what a configuration SGLang has just made lacks: AttributeError until the entry sets it
RAW = "_raw_input"  # the fields as the entry was handed them (0.5.19 on)
UNSET = frozenset({STASH, MATERIALIZED, RAW})
STASH_FIX = (
    f"keep {STASH} a list of (source, {{field: value}}) pairs, as SGLang's resolution makes it"
)
SNAPSHOT, LIVE = "ResolvedView", "ResolvingConfig"  # SGLang's classes of the two views


def stash_of(probe: Probe, config: Any) -> Any:
    """The declarations made on `config` so far, as SGLang's readers find them
    (`getattr(config, "_resolved_overrides", None) or ()`): a list or tuple, any other
    container refused (its entries are checked as they are read: `entries`)."""
    return checked_stash(probe, getattr(config, STASH, None) or ())


def checked_stash(probe: Probe, stash: Any) -> Any:
    if type(stash) not in (list, tuple):
        raise probe.refuse(f"{STASH} of another shape", STASH_FIX)
    return stash


def entries(probe: Probe, stash: Any, backwards: bool = False) -> Any:
    """The stash's (source, fields) pairs, in order (or last first), each checked as it
    is reached: a pair whose fields are a dict; any other entry refused."""
    for entry in reversed(stash) if backwards else stash:
        yield checked_entry(probe, entry)


def checked_entry(probe: Probe, entry: Any) -> tuple[Any, dict]:
    """`entry` if it is a (source, fields) pair whose fields are a dict, else refused."""
    if type(entry) is not tuple or len(entry) != 2 or type(entry[1]) is not dict:
        raise probe.refuse(f"{STASH} of another shape", STASH_FIX)
    return entry


def merged(probe: Probe, stash: Any) -> dict[str, Any]:
    """The stash's declarations in order, the last of a field winning."""
    found: dict[str, Any] = {}
    for _source, fields in entries(probe, stash):
        found.update(fields)
    return found


def project(probe: Probe, defaults: Any, outputs: tuple[str, ...], written: dict[str, Any],
            config: Any) -> dict[str, Any]:  # fmt: skip
    """`run_resolution_pipeline`'s outcome from what it wrote on its configuration: each
    field's last declaration in the stash over the fields as written, as SGLang's
    `resolution_result` reads them (0.5.19 on: `_raw_input` there, the fields as the
    entry was handed them, which its handlers never assign); an output field left None
    takes the fallback its class declares (`Arg(fallback=...)`, 0.5.20 on), read from
    `config`, the configuration as handed, where nothing wrote it; a declared one is
    the outcome as it is."""
    declared = merged(probe, checked_stash(probe, written.get(STASH) or ()))
    raw = written.get(RAW)
    if type(raw) is Snapshot:  # (its inputs counted as its fields are looked up)
        written = {**written, RAW: raw.escaped() if RAW in outputs else None}
    elif type(raw) is not dict:
        raw = {}
    found = {**written, **{f: raw[f] for f in written if f in raw}, **declared}
    broken = records.fallback_error(defaults, defaults.class_name)
    for field in outputs:  # an undeclared None: SGLang's with_fallback, and its checks
        if field in declared or (field not in defaults.fallbacks and not broken):
            continue  # (not read: a value no fallback could change is no input read)
        value = found[field] if field in found else getattr(config, field)
        if value is None:
            value = records.fallbacks(probe, defaults, defaults.class_name).get(field)
            if value is not None:
                found[field] = value
    return found


class Views:
    """The two read-only views of a configuration SGLang's resolution hands out, made
    once per compiled world: `snapshot(config)`, the declarations so far over it (a
    pass's view, `resolved_view`), and `live(config)`, each read looking at the
    declarations made by then (`resolving_view`). `record(view)` is what one reads
    through (`record_of`)."""

    def __init__(self, probe: Probe) -> None:
        from harness.engine.sandbox import overlay_maker  # the sandbox's, when bound

        def write(inner: Any, attr: str, done: str) -> BaseException:
            return probe.refuse(f"view.{attr}", PASS_VIEW_FIX, done=done)

        def latest(inner: Any, attr: str) -> Any:
            if not attr.startswith("__"):  # (`entries`, last first: `checked_entry`'s test
                for entry in reversed(stash_of(probe, inner)):  # inline, on every read)
                    if type(entry) is not tuple or len(entry) != 2 or type(entry[1]) is not dict:
                        checked_entry(probe, entry)  # (refuses it)
                    if attr in entry[1]:
                        return entry[1][attr]
            return getattr(inner, attr)

        self.probe = probe
        self._snapshot = overlay_maker("view", probe, write=write, name=SNAPSHOT)
        self._live = overlay_maker("view", probe, otherwise=latest, write=write, name=LIVE)

    def snapshot(self, config: Any) -> Any:
        return self._snapshot(config, merged(self.probe, stash_of(self.probe, config)))

    def live(self, config: Any) -> Any:
        return self._live(config, {})

    def record(self, view: Any) -> Any:
        for make in (self._snapshot, self._live):
            if type(view) is make.made:
                return make.inner(view)
        kind = type(view).__name__  # object.__getattribute__(view, "_server_args") there
        raise AttributeError(f"{kind!r} object has no attribute '_server_args'")


def views(ctx: Context) -> Views:
    """`ctx`'s views (one per compiled world: `record_of` knows each one made)."""
    found = ctx.shared.get("views")
    if found is None:
        found = ctx.shared["views"] = Views(ctx.probe)
    return found


@dataclass(frozen=True)
class View(Spec):
    """`resolved_view`, `resolving_view` or `record_of`: in an entry, SGLang's (the
    configuration's views above); a pass's view is the only configuration a pass
    target sees, so there each hands back its argument."""

    label: str

    def compile(self, ctx: Context) -> Resolver:
        if not ctx.matrix.target.entry:
            function = world_function(self.label, lambda value: value, ctx.probe)
        else:
            made = views(ctx)
            answer = {"resolved_view": made.snapshot, "resolving_view": made.live,
                      "record_of": made.record}[self.label]  # fmt: skip
            function = world_function(self.label, answer, ctx.probe)
        return lambda probe: function


@dataclass(frozen=True)
class Machinery(Spec):
    """One of the functions above: `make(ctx, check)` is what a call answers, `check(
    config, declarations)` SGLang's check of each declaration (`validate_declarations`;
    before the configuration's class is read, every declaration is refused)."""

    label: str
    make: Callable[[Context, Callable[..., Any]], Callable[..., Any]]

    def compile(self, ctx: Context) -> Resolver:
        function = world_function(self.label, self.make(ctx, validator(ctx, None)), ctx.probe)
        return lambda probe: function


OTHER_FIX = (
    "declare fields only on the configuration the entry point is handed; other state "
    "would outlive the call (see docs/matrix-files.md)"
)


def _stash(probe: Probe, label: str, config: Any, entry: tuple[str, dict]) -> None:
    """Append `entry` to `config`'s stash (made if it has none), as SGLang does; on any
    object but the entry's configuration (a stand-in of the harness's, which records
    it), a write the purity check cannot see, refused."""
    if not is_stand_in(config):
        kind = type(config).__name__
        raise probe.refuse(f"{label}() on an object of type {kind}", OTHER_FIX, done=ASSIGNED)
    stash = getattr(config, STASH, None)
    if stash is None:
        stash = []
        setattr(config, STASH, stash)
    checked_stash(probe, stash).append(entry)


def run_hook(ctx: Context, check: Callable[..., Any]) -> Callable[..., Any]:
    def answer(step: Any, server_args: Any) -> None:
        step(server_args)

    return answer


def run_post_process_pass(ctx: Context, check: Callable[..., Any]) -> Callable[..., Any]:
    """The pass called with a snapshot of the declarations over the configuration; what
    it returns (a dict, else SGLang's TypeError) appended to the stash and checked, and
    written to the fields too once the stash is on them (after 0.5.18's
    `materialize_declarations`)."""
    probe, snapshot = ctx.probe, views(ctx).snapshot

    def answer(server_args: Any, fn: Any) -> None:
        declared = fn(snapshot(server_args))
        if not isinstance(declared, dict):  # SGLang's message reads fn.__qualname__
            name = name_reader(probe.refuse)(fn, "__qualname__")
            kind = type(declared).__name__
            raise TypeError(f"post-process pass {name} must return a dict, got {kind}")
        if not declared:
            return
        entry = (name_reader(probe.refuse)(fn, "__qualname__"), dict(declared))
        _stash(probe, "run_post_process_pass", server_args, entry)
        check(server_args, [entry])
        through = probe.call.get(METHOD_ENTRY)  # (see `METHOD_ENTRY`)
        if through and getattr(server_args, MATERIALIZED, False):  # `_apply_fields(...)`
            pairs = list(declared.items())  # (its own code: before the guard is lifted)
            probe.call[INTERNAL_WRITE] = True
            try:
                for field, value in pairs:
                    setattr(server_args, field, value)
            finally:
                probe.call.pop(INTERNAL_WRITE, None)

    return answer


def declare_resolution(ctx: Context, check: Callable[..., Any],
                       known: Any = None) -> Callable[..., Any]:  # fmt: skip
    """The fields appended to the stash under `source` (0.5.19 on); the fields stay as
    they are. With `known` (the fields the configuration's class declares), a name that
    is none of them is SGLang's AttributeError."""

    def answer(server_args: Any, source: Any, /, **fields: Any) -> None:
        names = None if known is None else known()  # (a dict: no set of it made per call)
        unknown = [] if names is None else sorted(f for f in fields if f not in names)
        if unknown and is_stand_in(server_args):
            raise AttributeError(f"{source}: {unknown} are not {class_name_of(ctx)} fields")
        _stash(ctx.probe, "declare_resolution", server_args, (source, dict(fields)))

    return answer


def class_name_of(ctx: Context) -> str:
    return ctx.world.facts.class_name or "configuration"


def record_foreign_defaults(ctx: Context, declare: Callable[..., None],
                            known: Any) -> Callable[..., Any]:  # fmt: skip
    """`record_foreign_defaults(server_args, source, resolve)` (0.5.20 on): `resolve` (a
    platform plugin's or a speculative algorithm's) is handed a stand-in reading through
    the live view, whose writes it keeps; those of fields are declared under `source`,
    and what `resolve` returns is returned."""
    from harness.engine.sandbox import overlay_maker  # the sandbox's, when bound

    probe, live = ctx.probe, views(ctx).live
    make = overlay_maker("foreign", probe, otherwise=getattr, record=True,
                         name="_ForeignDefaults")  # fmt: skip

    def answer(server_args: Any, source: Any, resolve: Any) -> Any:
        if not is_stand_in(server_args):
            kind = type(server_args).__name__
            raise probe.refuse(f"record_foreign_defaults() of a {kind}", OTHER_FIX)
        written: dict[str, Any] = {}
        result = resolve(make(live(server_args), written))
        fields = {name: value for name, value in written.items() if name in known()}
        if fields:
            declare(server_args, source, **fields)
        return result

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
    """The names the world answers from the configuration's class (`World.from_class`):
    SGLang's check of declarations, and the pass runner that makes it."""
    probe = ctx.probe
    known = functools.partial(records.known, probe, defaults)  # refused: fields unread
    check = validator(ctx, defaults, cls)
    runner = world_function("run_post_process_pass", run_post_process_pass(ctx, check), probe)
    declare = world_function("declare_resolution", declare_resolution(ctx, check, known), probe)
    foreign = record_foreign_defaults(ctx, declare, known)
    return {"validate_declarations": check, "run_post_process_pass": runner,
            "declare_resolution": declare,
            "record_foreign_defaults": world_function("record_foreign_defaults", foreign, probe),
            **records.names(ctx, defaults, cls)}  # fmt: skip


MACHINERY: dict[str, Spec] = {
    **{
        fn.__name__: Machinery(fn.__name__, fn)
        for fn in (run_hook, run_post_process_pass, declare_resolution)
    },
    "record_foreign_defaults": records.Unread("record_foreign_defaults"),
    **{name: View(name) for name in ("resolved_view", "resolving_view", "record_of")},
    "validate_declarations": Validator(),
    **{name: records.Unread(name) for name in records.HELPERS},
}
