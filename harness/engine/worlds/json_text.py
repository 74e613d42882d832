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
DEPTH_FIX = "the worker's stack is not the project's: nest JSON less deeply"
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


HOOK_FIX = "a hook of json.loads would run the repository's code inside the parser: read plain JSON"
HOOKS = ("cls", "object_hook", "parse_float", "parse_int", "parse_constant", "object_pairs_hook")
PLAIN = (bool, int, float, str, type(None))


def loads(s: Any, *, cls: Any = None, object_hook: Any = None, parse_float: Any = None,
          parse_int: Any = None, parse_constant: Any = None, object_pairs_hook: Any = None,
          **kw: Any) -> dict[str, Any]:  # fmt: skip
    """Python's parameters of `json.loads`, as a call binds them (its own TypeError for a
    call that does not fit, naming `loads()` as Python's does): the arguments given."""
    hooks = dict(zip(HOOKS, (cls, object_hook, parse_float, parse_int, parse_constant,
                             object_pairs_hook), strict=True))  # fmt: skip
    return {"s": s, "hooks": hooks, "kw": kw}


@dataclasses.dataclass(frozen=True)
class Loads(Spec):
    """`json.loads(s, **kw)`: Python's, called with plain keywords (`strict=False`); a
    hook is refused, and so is nesting too deep for the worker's stack."""

    def compile(self, ctx: Context) -> Resolver:
        probe = ctx.probe

        def answer(*args: Any, **kwargs: Any) -> Any:
            given = loads(*args, **kwargs)
            hooked = [name for name, value in given["hooks"].items() if value is not None]
            if hooked:
                raise probe.refuse(f"json.loads({hooked[0]}=...)", HOOK_FIX)
            kw = given["kw"]
            if any(type(value) not in PLAIN for value in kw.values()):
                raise probe.refuse("json.loads with a keyword of another type", TEXT_FIX)
            try:
                return json.loads(_text(probe, "json.loads", given["s"]), **kw)
            except RecursionError:
                raise probe.refuse("json.loads of JSON nested this deep", DEPTH_FIX) from None

        function = world_function("json.loads", answer, probe)
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
    items = value.items() if isinstance(value, dict) else ((None, item) for item in value)
    for key, item in items:
        _check(key, depth)
        _check(item, depth + 1)


@dataclasses.dataclass(frozen=True)
class OrjsonLoads(Spec):
    """`orjson.loads(text)`: Python's parser where orjson reads the text alike, else
    refused (see the module)."""

    def compile(self, ctx: Context) -> Resolver:
        probe = ctx.probe

        def answer(*args: Any, **kwargs: Any) -> Any:
            if kwargs:  # orjson's own message
                raise TypeError("orjson.loads() takes no keyword arguments")
            if len(args) != 1:
                raise probe.refuse(f"orjson.loads with {len(args)} arguments", ORJSON_FIX)
            text = _text(probe, "orjson.loads", args[0])
            try:
                if isinstance(text, bytes):  # orjson reads UTF-8 alone, and no BOM
                    text = text.decode()
                    if text.startswith("\ufeff"):
                        raise _Unlike("BOM")
                text.encode()  # a lone surrogate: orjson's error
                found = json.loads(text, parse_constant=_no_constant, parse_int=_int,
                                   parse_float=_float)  # fmt: skip
                _check(found)
            except (_Unlike, ValueError, RecursionError):
                raise probe.refuse(f"orjson.loads of {str(text)[:40]!r}", ORJSON_FIX) from None
            return found

        function = world_function("orjson.loads", answer, probe)
        return lambda probe: function


def names() -> dict[str, Spec]:
    """Python's `json` (after `import json`), `loads` alone."""
    return {"json": Obj("json", {"loads": Loads()})}


def orjson_names() -> dict[str, Spec]:
    """`orjson` (after `import orjson`), `loads` alone."""
    return {"orjson": Obj("orjson", {"loads": OrjsonLoads()})}
