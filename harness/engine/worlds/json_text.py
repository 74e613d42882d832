"""`json.loads` and `orjson.loads`: a configuration's JSON text read into plain data.

SGLang's `ServerArgs.get_hf_config` (0.5.2 to 0.5.6) reads the model's override
arguments with `json.loads(self.json_model_override_args)`, later `orjson.loads`.
Parsing a string is pure, so the world answers with Python's own parser, called
on a plain string or bytes only (what reads anything else, or a hook such as
`object_hook`, which would run the repository's code, is refused). orjson differs
from Python's parser where the text is no JSON orjson reads (`NaN`, an integer
beyond 64 bits, an infinite float, a lone surrogate, deep nesting) and in every
error's message, so there the read is refused rather than answered with Python's.
Every other name of both modules is refused.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from harness.engine.world import Context, Obj, Probe, Resolver, Spec, world_function

TEXT_FIX = "give the JSON as a plain string, as SGLang's callers do"
ORJSON_FIX = (
    "orjson reads this text otherwise than Python's parser, or fails with a message of its "
    "own, which harness does not reproduce: give JSON both read alike"
)
ORJSON_INTS = (-(1 << 63), (1 << 64) - 1)  # the integers orjson reads
ORJSON_DEPTH = 900  # nesting answered (orjson refuses past 1,024; Python's recursion nears 1,000)


def _text(probe: Probe, label: str, text: Any) -> str | bytes:
    if type(text) not in (str, bytes):
        raise probe.refuse(f"{label} of a {type(text).__name__}", TEXT_FIX)
    return text


@dataclasses.dataclass(frozen=True)
class Loads(Spec):
    """`json.loads(text)`: Python's."""

    def compile(self, ctx: Context) -> Resolver:
        probe = ctx.probe

        def loads(text: Any) -> Any:
            return json.loads(_text(probe, "json.loads", text))

        function = world_function("json.loads", loads, probe)
        return lambda probe: function


class _Unlike(Exception):
    """The text is one orjson reads otherwise (or fails on, with a message of its own)."""


def _no_constant(name: str) -> Any:
    raise _Unlike(name)  # NaN, Infinity: orjson's error


def _int(text: str) -> int:
    value = int(text)
    if not ORJSON_INTS[0] <= value <= ORJSON_INTS[1]:
        raise _Unlike(text)  # orjson reads a float, or fails
    return value


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Unlike(text)  # 1e400: orjson's error
    return value


def _check(value: Any, depth: int = 1) -> None:
    """Raise _Unlike where the parsed value holds what orjson refuses: a string with a
    lone surrogate (`"\\ud800"`), or containers nested more than ORJSON_DEPTH deep (the
    outermost is at depth 1)."""
    if isinstance(value, str):
        value.encode()  # UnicodeEncodeError, a ValueError
        return
    if not isinstance(value, (dict, list)):
        return
    if depth > ORJSON_DEPTH:
        raise _Unlike("depth")
    for key in value if isinstance(value, dict) else ():
        _check(key, depth)
    for item in value.values() if isinstance(value, dict) else value:
        _check(item, depth + 1)


@dataclasses.dataclass(frozen=True)
class OrjsonLoads(Spec):
    """`orjson.loads(text)`: Python's parser where orjson reads the text alike, else
    refused (see the module)."""

    def compile(self, ctx: Context) -> Resolver:
        probe = ctx.probe

        def loads(text: Any) -> Any:
            text = _text(probe, "orjson.loads", text)
            try:
                if isinstance(text, str):
                    text.encode()  # a lone surrogate: orjson's error
                found = json.loads(text, parse_constant=_no_constant, parse_int=_int,
                                   parse_float=_float)  # fmt: skip
                _check(found)
            except (_Unlike, ValueError, RecursionError):
                raise probe.refuse(f"orjson.loads of {str(text)[:40]!r}", ORJSON_FIX) from None
            return found

        function = world_function("orjson.loads", loads, probe)
        return lambda probe: function


def names() -> dict[str, Spec]:
    """Python's `json` (after `import json`), `loads` alone."""
    return {"json": Obj("json", {"loads": Loads()})}


def orjson_names() -> dict[str, Spec]:
    """`orjson` (after `import orjson`), `loads` alone."""
    return {"orjson": Obj("orjson", {"loads": OrjsonLoads()})}
