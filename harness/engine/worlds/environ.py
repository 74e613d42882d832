"""`os.environ` and `os.getenv`: the process's environment, as the matrix names it.

SGLang's handlers read raw environment variables (`"SGLANG_X" in os.environ`,
`os.getenv("SGLANG_X")`) besides its `envs` registry. Each variable is an input
of the cell: the axis or field of the same name, a string when set, null when
not. Strict, as every input: a variable the matrix does not name is refused
where read (which variables a server is started with is nothing the code
tells), as is a name with a lower-case letter, which the matrix's inputs of
the configuration have (`os.getenv("platform")` is no read of `platform`).
A write to the environment, through SGLang's registry (`envs.X.set(value)`) or
`os.environ` (`os.environ["NCCL_ALGO"] = "Ring"`,
`os.environ.setdefault("NCCL_GRAPH_REGISTER", "0")`: a setting of the process
for what runs after the resolution), is kept for the call alone; a read of that
variable later in the call is refused (what it reads is the written value as
the variable's type parses it, which the world does not follow). Deleting a
variable, anything else of `os`, and what reads the whole mapping (iterating
it, its length, comparing it, `|`) are refused where reached.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

from harness.engine.world import (
    ASSIGNED,
    DELETED,
    LOADING,
    READ,
    Context,
    Obj,
    Param,
    Probe,
    Resolver,
    Spec,
    stand_in_class,
    world_function,
)

WRITE_FIX = (
    "a write to the process's environment sets up {project}'s process, not its "
    "configuration, and the world does not follow it"
)
WHOLE_FIX = "read variables by name: which variables the process has is nothing the matrix says"


VARIABLE = re.compile(r"[A-Z_][A-Z0-9_]*")  # what the matrix names a variable by
NAME_FIX = (
    "the matrix's inputs named in lower case are the configuration's own; an environment "
    "variable is named in upper case (SGLANG_X), as the project's are"
)


ENVIRON = "environ"  # the call's writes to the environment, in `Probe.call`
LOAD_FIX = (
    "set as its module loads (envs.X.set), a variable is set for every resolution after "
    "the import, which the world does not follow: set it in the resolution's code"
)
SET_FIX = (
    "the resolution set this variable in its process's environment earlier in the call "
    "(envs.X.set): the world keeps the write, not what a read of it parses"
)


STR_FIX = "write the environment with plain strings: a subclass's own encode is not followed"


def record_write(probe: Probe, name: str, value: Any) -> None:
    """`name` set to `value` in the process's environment, for the rest of the call."""
    probe.call.setdefault(ENVIRON, {})[name] = value


def refuse_written(probe: Probe, name: str, label: str) -> None:
    """Refuse `label`, a read of `name`, when the call has set it."""
    if name in probe.call.get(ENVIRON, ()):
        raise probe.refuse(f"{label} after the resolution set {name}", SET_FIX, name)


@dataclasses.dataclass(frozen=True)
class Unwritten(Spec):
    """`spec`, a read of the variable `name`; once the call has set it, `when_set` where
    given (whether it is set: it is), else refused."""

    name: str
    spec: Spec
    label: str
    when_set: bool | None = None

    def compile(self, ctx: Context) -> Resolver:
        get, name, label, when_set = self.spec.compile(ctx), self.name, self.label, self.when_set

        def resolve(probe: Probe) -> Any:
            if when_set is not None and name in probe.call.get(ENVIRON, ()):
                return when_set
            refuse_written(probe, name, label)
            return get(probe)

        return resolve


@dataclasses.dataclass(frozen=True)
class Setter(Spec):
    """`envs.NAME.set(value)`: kept as the call's write of NAME."""

    name: str

    def compile(self, ctx: Context) -> Resolver:
        probe, name = ctx.probe, self.name

        def set_(value: Any) -> None:
            # SGLang's `os.environ[name] = str(value)`
            write(probe, name, str(value), f"envs.{name}")

        function = world_function(f"envs.{name}.set", set_, probe)
        return lambda probe: function


def write(probe: Probe, name: str, text: Any, label: str) -> None:
    """The call's write of `text` to the variable `name`, with Python's checks of a value
    the environment holds (a string, no null byte, encodable)."""
    if probe.call.get(LOADING):
        raise probe.refuse(label, LOAD_FIX, done=ASSIGNED)
    if not isinstance(text, str):
        raise TypeError(f"str expected, not {type(text).__name__}")
    if type(text) is not str:  # Python encodes it with its own `encode`, not followed
        raise probe.refuse(f"{label} = a {type(text).__name__}", STR_FIX, done=ASSIGNED)
    if "\0" in text:
        raise ValueError("embedded null byte")
    os.fsencode(text)  # a lone surrogate: Python's UnicodeEncodeError
    record_write(probe, name, text)


def _reader(ctx: Context) -> Any:
    """`value(name)`: the variable's value (a string, or None when unset), read as the
    input of that name; a name with a lower-case letter (`attention_backend`,
    `platform`: the configuration's inputs) is refused."""
    probe, compiled = ctx.probe, {}

    def value(key: Any) -> str | None:
        name = _name(probe, key, READ)
        refuse_written(probe, name, f"os.environ[{name!r}]")
        if name not in compiled:
            compiled[name] = Param(name, reader=f"os.environ[{name!r}]").compile(ctx)
        found = compiled[name](probe)
        if found is not None and type(found) is not str:
            fix = f"set {name} to a string (set) or null (unset) in {ctx.matrix.edit_hint}"
            raise probe.refuse(f"os.environ[{name!r}] = {type(found).__name__}", fix, name)
        return found

    return value


def _getter(value: Any) -> Any:
    """`get(key, default=None)` of `os.environ` and `os.getenv`: the value, or `default`."""

    def get(key: Any, default: Any = None) -> Any:
        found = value(key)
        return default if found is None else found

    return get


@dataclasses.dataclass(frozen=True)
class Environ(Spec):
    """`os.environ`: `name in`, `[name]` (KeyError when unset) and `.get(name, default)`."""

    def compile(self, ctx: Context) -> Resolver:
        probe, value = ctx.probe, _reader(ctx)

        def __contains__(self: Any, name: Any) -> bool:
            return value(name) is not None  # a name not a string: Python's TypeError

        def __getitem__(self: Any, name: Any) -> str:
            found = value(name)
            if found is None:
                raise KeyError(name)
            return found

        def refuse(what: str, fix: str, done: str = "read") -> BaseException:
            return probe.refuse(what, fix, done=done)

        def __setitem__(self: Any, name: Any, item: Any) -> None:
            write(probe, _name(probe, name), item, f"os.environ[{name!r}]")

        def setdefault(key: Any, default: Any = None) -> Any:
            found = value(key)
            if found is None:
                write(probe, _name(probe, key), default, f"os.environ[{key!r}]")
                return default
            return found

        def __delitem__(self: Any, name: Any) -> None:
            raise refuse(f"os.environ[{name!r}]", WRITE_FIX, DELETED)

        def __iter__(self: Any, *other: Any) -> Any:
            raise refuse("every variable of os.environ", WHOLE_FIX)

        def __getattribute__(self: Any, attr: str) -> Any:
            if attr == "get":
                return reader
            if attr == "setdefault":
                return setter
            if attr.startswith("__"):
                raise AttributeError(attr)
            raise refuse(f"os.environ.{attr}", WHOLE_FIX)

        reader = world_function("os.environ.get", _getter(value), probe)
        setter = world_function("os.environ.setdefault", setdefault, probe)
        methods = {"__contains__": __contains__, "__getitem__": __getitem__,
                   "__setitem__": __setitem__, "__delitem__": __delitem__, "__iter__": __iter__,
                   "__getattribute__": __getattribute__}  # fmt: skip
        whole = ("__len__", "__eq__", "__ne__", "__or__", "__ror__", "__ior__", "__reversed__")
        methods.update(dict.fromkeys(whole, __iter__))  # each reads every variable
        environ = object.__new__(stand_in_class("os.environ", methods, probe, name="_Environ"))
        return lambda probe: environ


def _name(probe: Probe, key: Any, done: str = ASSIGNED) -> str:
    """A variable's name as a read or a write (`done`) gives it: a string (Python's
    TypeError else; a subclass refused), named as the matrix names variables."""
    if not isinstance(key, str):
        raise TypeError(f"str expected, not {type(key).__name__}")
    if type(key) is not str:  # Python encodes it with its own `encode`, not followed
        raise probe.refuse(f"os.environ[a {type(key).__name__}]", STR_FIX, done=done)
    if not VARIABLE.fullmatch(key):
        raise probe.refuse(f"the environment variable {key[:80]!r}", NAME_FIX, done=done)
    return key


@dataclasses.dataclass(frozen=True)
class Getenv(Spec):
    """`os.getenv(name, default=None)`."""

    def compile(self, ctx: Context) -> Resolver:
        function = world_function("os.getenv", _getter(_reader(ctx)), ctx.probe)
        return lambda probe: function


# what `default.lower()` may be asked of in the world's get_bool_env_var: Python's own types,
# whose `lower` (or its absence: an AttributeError) runs no code of the repository
LOWERED = frozenset({str, bytes, type(None), int, float, bool})
TRUTHY = ("true", "1")
DEFAULT_FIX = "give get_bool_env_var's default as a plain string, as SGLang's callers do"


def get_bool_env_var(name: Any, default: Any = "false") -> tuple[Any, Any]:
    """SGLang's parameters, as a call binds them (Python's TypeError for a call that does
    not fit, naming the function as SGLang's)."""
    return name, default


def get_int_env_var(name: Any, default: Any = 0) -> tuple[Any, Any]:
    """SGLang's parameters, as a call binds them (see `get_bool_env_var`)."""
    return name, default


@dataclasses.dataclass(frozen=True)
class BoolVariable(Spec):
    """SGLang's `get_bool_env_var(name, default="false")` (utils/common.py, the same text
    0.5.10 to 0.5.23): the variable, or `default` when unset, lower-cased, true where it
    reads "true" or "1". What it logs of another value, once a name, is a log only."""

    def compile(self, ctx: Context) -> Resolver:
        probe, value = ctx.probe, _reader(ctx)

        def answer(*args: Any, **kwargs: Any) -> bool:
            name, default = get_bool_env_var(*args, **kwargs)
            found = value(name)
            text = default if found is None else found
            if type(text) not in LOWERED:  # its own `lower` would be the repository's code
                kind = type(text).__name__
                raise probe.refuse(f"get_bool_env_var({name!r}, a {kind})", DEFAULT_FIX)
            return text.lower() in TRUTHY  # Python's AttributeError for None or a number

        function = world_function("get_bool_env_var", answer, probe)
        return lambda probe: function


@dataclasses.dataclass(frozen=True)
class IntVariable(Spec):
    """SGLang's `get_int_env_var(name, default=0)`: the variable as an int, `default` when
    it is unset or not an int (a blank one is not: SGLang's test for it gives the same)."""

    def compile(self, ctx: Context) -> Resolver:
        value = _reader(ctx)

        def answer(*args: Any, **kwargs: Any) -> Any:
            name, default = get_int_env_var(*args, **kwargs)
            found = value(name)
            if found is None:
                return default
            try:
                return int(found)
            except ValueError:
                return default

        function = world_function("get_int_env_var", answer, ctx.probe)
        return lambda probe: function


def helpers() -> dict[str, Spec]:
    """SGLang's helpers reading one variable by name (`from sglang.srt.utils import
    get_bool_env_var`), each read as `os.getenv` reads it."""
    return {"get_bool_env_var": BoolVariable(), "get_int_env_var": IntVariable()}


def names(**more: Spec) -> dict[str, Spec]:
    """The world's `os` (after `import os`): `environ` and `getenv`, and `more` (a world's
    `path`), nothing else."""
    return {"os": Obj("os", {"environ": Environ(), "getenv": Getenv(), **more})}
