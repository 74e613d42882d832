"""Plain values: the only data that crosses from evaluated code to the harness.

A declared value must be plain (None, bool, int, float, str, or a list or
tuple of plain values), checked by exact type so that no subclass with its
own `__eq__` or `__hash__` reaches the harness. Values crossing back from the
worker process are written as JSON with tagged containers and read back by a
decoder that accepts nothing else (never pickle: the worker runs hostile code).

A plain value is bounded in every way (docs/security.md, Bounds): an int's
bits, a str's length, a container's items and nesting, and its size as a
whole (MAX_VALUE_SIZE: one per item, plus each str's length), since a list
may hold the same large list a thousand times and encode to gigabytes.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.engine.world import is_stand_in
from harness.errors import Unevaluable

SCALARS = (type(None), bool, int, float, str)
MAX_INT_BITS = 64
MAX_STR = 10_000
MAX_ITEMS = 1_000
MAX_DEPTH = 8
MAX_VALUE_SIZE = 100_000  # items and str characters of one value, together
# Bytes of JSON: one traced cell (a real one of SGLang's whole resolution is 30 KB, and
# `because` traces up to 20 in one worker), and one worker's list of answers; the parent
# reads at most 64 MB of a worker's answer.
MAX_ENCODED = 2 << 20
MAX_ANSWERS = 16 << 20
_SHORT = reprlib.Repr()  # what `shown` writes of a value that is not plain
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 3, 200, 200


@dataclass(frozen=True)
class Shown:
    """A value that is not plain, as its repr (taken inside the worker)."""

    text: str

    def __repr__(self) -> str:
        return self.text


def plain_problem(value: Any) -> str | None:
    """Why `value` is not plain, or None when it is: the first item (in order) that is not,
    or the whole past MAX_VALUE_SIZE. A walk of at most MAX_VALUE_SIZE steps."""
    if type(value) in SCALARS:
        return _item_problem(value, 0)
    size, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        problem = _item_problem(item, depth)
        if problem:
            return problem
        size += 1 + (len(item) if type(item) is str else 0)
        if size > MAX_VALUE_SIZE:
            return f"a value of more than {MAX_VALUE_SIZE:,} items and characters together"
        if type(item) in (list, tuple):
            stack.extend((v, depth + 1) for v in reversed(item))
    return None


def _item_problem(value: Any, depth: int) -> str | None:
    """Why `value` itself (not its items) is not plain, at `depth` in a value."""
    kind = type(value)
    if kind is int and value.bit_length() > MAX_INT_BITS:
        return f"an int of {value.bit_length()} bits (more than {MAX_INT_BITS})"
    if kind is str and len(value) > MAX_STR:
        return f"a str of {len(value)} characters (more than {MAX_STR})"
    if kind in SCALARS:
        return None
    if kind not in (list, tuple):
        return (
            f"a {_type_name(value)}, not a plain value (None, bool, int, float, str, list, tuple)"
        )
    if depth >= MAX_DEPTH or len(value) > MAX_ITEMS:
        return f"a {kind.__name__} nested deeper than {MAX_DEPTH} or longer than {MAX_ITEMS}"
    return None


def _type_name(value: Any) -> str:
    name = type(value).__name__
    return name if type(name) is str and len(name) < 100 else "value of an unnamed type"


def shown(value: Any) -> Any:
    """`value` if plain, else its repr, bounded (for traces: a condition's operand). The
    repr of a container is `reprlib`'s: a few items of a few levels, so a list holding
    one large list a thousand times is not written out whole first."""
    if plain_problem(value) is None:
        return value
    if is_stand_in(value):  # the world's object: its repr is refused to evaluated code
        return Shown(f"<{_type_name(value)}>")
    try:
        text = _SHORT.repr(value)
    except Exception as exc:  # the evaluated code's __repr__ may raise
        text = f"<{_type_name(value)}: repr raised {type(exc).__name__}>"
    if type(text) is not str:
        text = f"<{_type_name(value)}>"
    return Shown(text[:200])


def encode(value: Any) -> Any:
    """A JSON-ready form of a plain value (or of a dict of them, or a Shown)."""
    kind = type(value)
    if kind in SCALARS:
        return value
    if kind is list:
        return {"l": [encode(v) for v in value]}
    if kind is tuple:
        return {"t": [encode(v) for v in value]}
    if kind is dict:
        return {"d": [[str(k), encode(v)] for k, v in value.items()]}
    if kind is Shown:
        return {"r": value.text}
    raise TypeError(f"not a plain value: {kind.__name__}")


def within_size(data: Any, what: str, limit: int = MAX_ENCODED) -> Any:
    """`data` (JSON-ready, from `encode`) when its JSON is at most `limit` bytes; else
    Unevaluable naming `what` and the bound (in the worker, before it sends)."""
    size = len(json.dumps(data))
    if size > limit:
        raise Unevaluable(
            f"{what} encodes to {size:,} bytes, more than the {limit:,} one answer may take "
            "(docs/security.md, Bounds)"
        )
    return data


class Malformed(ValueError):
    """What the worker sent is not in the form the harness writes."""


def decode_items(header: Any, payload: bytes, count: int, item: Callable[[Any], Any],
                 what: str) -> list:  # fmt: skip
    """A worker's answer of exactly `count` items in a JSON list, each read by `item`, and
    no payload; else Malformed ("not one `what`")."""
    if type(header) is not list or len(header) != count or payload:
        raise Malformed(f"not one {what}")
    return [item(each) for each in header]


def decode(data: Any, depth: int = 0) -> Any:
    """The value `encode` wrote; anything else raises Malformed."""
    if depth > MAX_DEPTH + 4:
        raise Malformed("nested too deeply")
    if type(data) in SCALARS:
        return data
    if type(data) is not dict or len(data) != 1:
        raise Malformed(f"unexpected {type(data).__name__}")
    ((tag, body),) = data.items()
    if tag == "r" and type(body) is str:
        return Shown(body)
    if type(body) is not list:
        raise Malformed(f"unexpected {tag!r} body")
    if tag == "l":
        return [decode(v, depth + 1) for v in body]
    if tag == "t":
        return tuple(decode(v, depth + 1) for v in body)
    if tag == "d":
        return {_key(pair): decode(pair[1], depth + 1) for pair in body}
    raise Malformed(f"unknown tag {tag!r}")


def _key(pair: Any) -> str:
    if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
        raise Malformed("a dict entry is not [str, value]")
    return pair[0]
