"""A matrix file's YAML document, parsed strictly, or read back from a JSON copy.

The YAML parser is the slowest import of a diff that is read back from the
cache (a fifth of its time), so the document of a text that parsed before is
kept as JSON under the cache directory, named by the text's sha256 and carrying
a checksum of its own, when JSON holds it exactly (string keys; no dates, sets
or binary). A copy that is missing or does not match its checksum means the
text is parsed again, and the copy written over. The parsing itself admits no tags
that run code and refuses a key written twice.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from harness.files import write_atomically


def read_document(text: str, source: str, documents: Path | None = None) -> Any:
    """The YAML document of `text` (`source` names it in errors)."""
    copy = documents / f"{hashlib.sha256(text.encode()).hexdigest()}.json" if documents else None
    if copy is not None:
        found = _read_copy(copy)
        if found is not None:
            return found[0]
    data = parse_yaml(text, source)
    if copy is not None and exactly_json(data):
        payload = json.dumps(data).encode()
        try:
            copy.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(copy, hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
        except OSError:
            pass  # the next run parses it again
    return data


def _read_copy(copy: Path) -> tuple[Any] | None:
    """(the document,) from a copy whose checksum holds; None: none, or damaged."""
    try:
        checksum, _, payload = copy.read_bytes().partition(b"\n")
        if hashlib.sha256(payload).hexdigest().encode() != checksum:
            return None
        return (json.loads(payload),)
    except (OSError, ValueError):
        return None


def parse_yaml(text: str, source: str) -> Any:
    from harness.matrix import strict_yaml  # here: a document read back needs no parser

    return strict_yaml.load(text, source)


def exactly_json(value: Any) -> bool:
    """Whether JSON gives `value` back as it is: the types YAML and JSON share only."""
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if type(value) is list:
        return all(map(exactly_json, value))
    if type(value) is dict:
        return all(type(k) is str and exactly_json(v) for k, v in value.items())
    return False
