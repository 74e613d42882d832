"""YAML as matrix files are read: safe (no tags that run code), a repeated key refused."""

from __future__ import annotations

from typing import Any

import yaml

from harness.errors import HarnessError, first_line


class _StrictLoader(yaml.SafeLoader):
    """safe_load, refusing a key written twice in one mapping (YAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:
                continue  # an unhashable key: the base class reports it
            if first != key_node.start_mark.line + 1:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice (lines {first} and "
                    f"{key_node.start_mark.line + 1})", key_node.start_mark,
                )  # fmt: skip
        return super().construct_mapping(node, deep)


def load(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader: no tags run code
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise HarnessError(f"{source}{where}: not valid YAML ({first_line(exc)})") from None
    except RecursionError:
        raise HarnessError(f"{source}: not a matrix (nested too deeply)") from None
