"""What the worlds' projects share: a logger, and a decorator that registers a pass.

A project's `logger = logging.getLogger(__name__)` is the world's `logger`: what
it is told is dropped (nothing the code can see depends on it), and
`isEnabledFor` answers as Python's logging does at the level the matrix gives.
The decorator a world's project registers its passes with (`@register_post_process`,
`@config_rule`) is the identity: the harness calls each pass itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.engine.world import Context, Function, Obj, Param, Resolver, Spec, world_function

LOG_CALLS = ("debug", "info", "warning", "warn", "error", "exception", "critical", "log")
LEVELS = {"CRITICAL": 50, "FATAL": 50, "ERROR": 40, "WARNING": 30, "WARN": 30, "INFO": 20,
          "DEBUG": 10, "NOTSET": 0}  # fmt: skip


@dataclass(frozen=True)
class EnabledFor(Spec):
    """`logger.isEnabledFor(level)` as Python's logging answers it, the logger's level
    being the field `logging.level` (a name or a number): how the project's process set up
    logging is nothing the code or the world can tell, so without the field the read
    is refused."""

    def compile(self, ctx: Context) -> Resolver:
        level = Param("logging.level", reader="logger.isEnabledFor()").compile(ctx)
        probe = ctx.probe

        def answer(asked: Any) -> bool:
            if 0 >= asked:  # noqa: SIM300 (logging compares manager.disable, 0, first)
                return False
            return asked >= _numeric_level(level(probe), probe)

        function = world_function("isEnabledFor", answer, probe)
        return lambda probe: function


def _numeric_level(value: Any, probe: Any) -> int:
    if type(value) is int:
        return value
    if type(value) is str and value.upper() in LEVELS:
        return LEVELS[value.upper()]
    fix = f"set logging.level to one of {', '.join(LEVELS)} or a number"
    raise probe.refuse(f"logger.isEnabledFor() with logging.level {value!r}", fix, "logging.level")


@dataclass(frozen=True)
class LogCall(Spec):
    """`logger.warning(msg, *args)` and its siblings: dropped, as nothing the code can see
    depends on them, unless an argument is not plain data: Python's logging calls its
    `__str__` (the code's own, or a repr naming an address) when the level lets the
    record through, which the world cannot tell, so that call is refused."""

    name: str

    def compile(self, ctx: Context) -> Resolver:
        name, probe = self.name, ctx.probe

        def answer(*args: Any, **kwargs: Any) -> None:
            for value in (*args, *kwargs.values()):
                if not _plain(value, 4):
                    kind = type(value).__name__
                    fix = "log plain values (strings, numbers, their lists), e.g. with an f-string"
                    raise probe.refuse(f"logger.{name}() with an argument of type {kind}", fix)
            return None

        function = world_function(name, answer, probe)
        return lambda probe: function


PLAIN_TYPES = (type(None), bool, int, float, complex, str, bytes)


def _plain(value: Any, depth: int) -> bool:
    """Whether `str(value)` runs no code but Python's own (exact builtin types)."""
    if type(value) in PLAIN_TYPES:
        return True
    if depth <= 0 or type(value) not in (list, tuple, set, frozenset, dict):
        return False
    items = [*value.keys(), *value.values()] if type(value) is dict else value
    return all(_plain(item, depth - 1) for item in items)


def logger() -> Spec:
    """The world's `logger`."""
    calls: dict[str, Spec] = {name: LogCall(name) for name in LOG_CALLS}
    return Obj("logger", {**calls, "isEnabledFor": EnabledFor()})


def registering(name: str) -> Function:
    """The world's decorator `name`, as `@name` and `@name(...)` both use it."""

    def decorator(fn: Any = None, **options: Any) -> Any:
        """Identity: the harness calls the target itself, so registration is moot."""
        if callable(fn):
            return fn
        return world_function(f"{name}()", identity)

    return Function(name, decorator)


def identity(value: Any) -> Any:
    """What a function of the world that hands back its argument answers."""
    return value
