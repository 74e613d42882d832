"""YAML as matrix files are read: safe (no tags that run code), a repeated key refused,
and bounded while it is parsed, before anything walks the document.

Aliases let a 1 KB file stand for a tree of 10^10 nodes (10 levels of 10 aliases
each); the parser itself shares the nodes, but whatever walks the document later
(a JSON copy, the checks) would not. So every node is counted as it is composed,
an alias as the whole subtree it repeats: past MAX_NODES the file is refused,
and so is an alias inside the node it names. A sequence or a mapping is refused
at its item past MAX_ITEMS, and an axis's list at its value past MAX_VALUES,
when the parser reaches it: a file of 150,000 values costs no more than its
first 63.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from harness.errors import HarnessError, first_line
from harness.matrix.model import MAX_VALUES

MAX_NODES = 100_000  # nodes of a document, aliases expanded
MAX_ITEMS = 10_000  # items of one list or mapping


LIMITS = "see Limits in docs/matrix-files.md"


class _Refused(yaml.YAMLError):
    """A bound of the module docstring, reached at `mark`; `problem` names it and the fix."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem)
        self.problem_mark = mark


def _past(what: str, fix: str) -> str:
    return f"{what}: {fix}; {LIMITS}"


class _Strict(Composer, SafeConstructor, Resolver):
    """safe_load's composing and constructing, refusing a key written twice in one mapping
    (YAML keeps the last), and bounded as the module docstring says. The events come from
    the parser it is mixed with (`_loader`)."""

    def _start(self) -> None:
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._sizes: dict[int, int] = {}  # id(node) -> nodes it stands for, aliases expanded
        self._path: list[Any] = []  # the keys (and indices) from the root to the node composed

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        self._check_room(parent, index)
        alias = self.check_event(yaml.AliasEvent)
        self._path.append(index.value if isinstance(index, yaml.ScalarNode) else index)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._path.pop()
        if alias and id(node) not in self._sizes:
            raise _Refused(
                "an alias inside the node it names (a loop): write the value out instead",
                node.start_mark,
            )
        if not alias:
            self._count(node)
        return node

    def _check_room(self, parent: yaml.Node | None, index: Any) -> None:
        """Refuse the item about to be composed when its list or mapping is full."""
        if isinstance(parent, yaml.SequenceNode):
            cap, what = self._sequence_cap()
            full = index >= cap
        elif isinstance(parent, yaml.MappingNode) and index is None:
            what = _past(f"a mapping of more than {MAX_ITEMS:,} keys", "make it smaller")
            full = len(parent.value) >= MAX_ITEMS
        else:
            return
        if full:
            raise _Refused(what, self.peek_event().start_mark)

    def _sequence_cap(self) -> tuple[int, str]:
        """How many items the list being composed may hold: an axis's values, or any list."""
        keys = self._path[1:]  # the document's root is composed with no key
        if len(keys) in (2, 3) and keys[0] == "axes" and keys[2:] in ([], ["values"]):
            what = f"axes.{keys[1]}: more than {MAX_VALUES} values"
            return MAX_VALUES, _past(what, "drop values, or split the axis in two")
        return MAX_ITEMS, _past(f"a list of more than {MAX_ITEMS:,} items", "make it smaller")

    def _count(self, node: yaml.Node) -> None:
        """Record how many nodes `node` (just composed) stands for; refuse past MAX_NODES."""
        if isinstance(node, yaml.ScalarNode):
            size = 1
        else:
            children = node.value if isinstance(node, yaml.SequenceNode) else [
                part for pair in node.value for part in pair]  # fmt: skip
            size = 1 + sum(self._sizes[id(child)] for child in children)
        if size > MAX_NODES:
            what = f"more than {MAX_NODES:,} nodes once its aliases are expanded"
            raise _Refused(_past(what, "make it smaller"), node.start_mark)
        self._sizes[id(node)] = size

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """PyYAML's, with a value its tag cannot make (`!!int` of nothing, `!!bool x`,
        `!!timestamp 2001-02-30`, `!!set [1]`) a YAML error at the node: its constructors
        raise Python's own exceptions there."""
        try:
            return super().construct_object(node, deep)
        except (ArithmeticError, AttributeError, LookupError, TypeError, ValueError) as exc:
            if isinstance(exc, yaml.YAMLError):
                raise
            shown = repr(node.value)[:40] if isinstance(node, yaml.ScalarNode) else f"a {node.id}"
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise yaml.constructor.ConstructorError(
                None, None, f"{tag} cannot make a value of {shown} ({type(exc).__name__})",
                node.start_mark,
            ) from None  # fmt: skip

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        if not isinstance(node, yaml.MappingNode):  # `!!set [1]`: PyYAML's says what it is
            return super().construct_mapping(node, deep)
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


class _PythonLoader(Reader, Scanner, Parser, _Strict):
    """PyYAML's own reader, scanner and parser, written in Python."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        self._start()


def _loader() -> type:
    """libyaml's parser where PyYAML was built with it (its wheels are): the events are
    the same, and parsing a shipped matrix takes a fifth of the time. The composing, the
    checks and the values (tags resolved by the same Resolver) are `_Strict`'s either way."""
    try:
        from yaml._yaml import CParser
    except ImportError:
        return _PythonLoader

    class _LibyamlLoader(_Strict, CParser):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            self._start()

    return _LibyamlLoader


_StrictLoader = _loader()


def load(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)  # safe: no tags run code
    except _Refused as exc:
        raise HarnessError(f"{source}:{exc.problem_mark.line + 1}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise HarnessError(f"{source}{where}: not valid YAML ({first_line(exc)})") from None
    except RecursionError:
        raise HarnessError(f"{source}: not a matrix (nested too deeply)") from None
