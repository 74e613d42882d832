"""Writing matrix files: names, values and comments as the loader reads them back.

Whatever a writer puts through these functions loads as written: a value as the
same type and value (`"on"` stays a string, `1.0e+20` a float), a name as the
same string (`key`, however long), a comment as one line YAML accepts. The rule
for axis names is here too, so the loader and the writers agree on it.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./\-]*\Z")  # a string worth writing unquoted
LONGEST_KEY = 1024  # characters of a `name:` key YAML reads (its implicit keys' limit)


def is_axis_name(name: Any) -> bool:
    """An identifier (`page_size`), or identifiers joined by dots (`hf_config.model_type`):
    an input the world reads by that name."""
    return isinstance(name, str) and all(part.isidentifier() for part in name.split("."))


def scalar(value: Any) -> str:
    """`value` (null, a boolean, a number or a string) as YAML text on one line."""
    if isinstance(value, str):
        return value if _plain(value) else _quoted(value)
    import yaml  # here: reading a matrix needs no writer

    return yaml.safe_dump([value], default_flow_style=True)[1:-2]  # `[1.0e+20]\n`


def key(name: str, indent: str = "") -> str:
    """`name` as a mapping key, up to its `:`: `name:`, or, where the name as written is
    longer than YAML reads as such a key, the explicit `? name` on a line of its own."""
    written = scalar(name)
    if len(written) <= LONGEST_KEY:
        return f"{indent}{written}:"
    return f"{indent}? {written}\n{indent}:"


def flow_list(values: list) -> str:
    return f"[{', '.join(scalar(v) for v in values)}]"


def comment(text: str) -> str:
    """`text` on one line of characters a YAML comment may hold (others escaped)."""
    flat = " ".join(text.split())
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in flat)


def _plain(text: str) -> bool:
    """Whether YAML reads `text` unquoted back as this string (not `on`, `null`, `1e3`)."""
    if not PLAIN.match(text):
        return False
    import yaml

    tag = _resolver().resolve(yaml.ScalarNode, text, (True, False))
    return tag == "tag:yaml.org,2002:str"


@cache
def _resolver() -> Any:
    import yaml

    return yaml.SafeLoader("")


def _quoted(text: str) -> str:
    """A double-quoted YAML string: printable ASCII as it is, every other character escaped
    (YAML reads `\\xXX`, `\\uXXXX` and `\\UXXXXXXXX`, surrogates included)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append(_escape(ch))
    return '"' + "".join(out) + '"'


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
