"""Where a top-level name of a repository file is defined, read with `ast` only.

Used by the readers that walk the resolution code without building a closure
(the defaults of the view's class, the order the passes run in): each file's
bindings are indexed once per reader, and `from m import x` is followed to the
file that defines `x`, through re-exports. A file that does not parse binds
nothing: such readers find less, and the closure that needs the file says why.
"""

from __future__ import annotations

import ast

from harness.closure.index import DEFINITION, IMPORT, Binding, index_module
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache, Statement
from harness.errors import Unevaluable

MAX_HOPS = 8  # re-exports followed before giving up


class FileIndexes:
    """The top-level bindings of the files of one revision, each indexed once."""

    def __init__(self, cache: SourceCache, files: RevisionFiles) -> None:
        self.cache, self.files = cache, files
        self.indexes: dict[str, dict[str, list[Binding]]] = {}

    def __call__(self, path: str) -> dict[str, list[Binding]]:
        if path not in self.indexes:
            try:
                layout = self.cache.layout_of(self.files, path) or self.cache.layout("", path)
                self.indexes[path] = index_module(layout)
            except Unevaluable:
                self.indexes[path] = {}
        return self.indexes[path]

    def definition(self, path: str, name: str) -> Statement | None:
        """The statement that last binds `name` at the top of `path`, if a definition."""
        bindings = self(path).get(name, [])
        if not bindings or bindings[-1].kind != DEFINITION:
            return None
        return bindings[-1].statement

    def defined_at(self, path: str, name: str, hops: int = 0) -> tuple[str, str] | None:
        """(file, name there) of what `name` is in `path`: its own definition, or the one
        `from m import name` leads to; None when neither is in the repository."""
        bindings = self(path).get(name, [])
        if not bindings or hops > MAX_HOPS:
            return None
        binding = bindings[-1]
        if binding.kind == DEFINITION:
            return path, name
        node = binding.statement.node
        if binding.kind != IMPORT or not isinstance(node, ast.ImportFrom):
            return None
        alias = next((a for a in node.names if (a.asname or a.name) == name), None)
        if alias is None:
            return None
        return self.imported(path, node.module or "", node.level, alias.name, hops)

    def imported(
        self, path: str, module: str, level: int, name: str, hops: int = 0
    ) -> tuple[str, str] | None:
        """(file, name there) of `from module import name` (`level` dots) in `path`."""
        source = self.files.module_file(module, path, level)
        return None if source is None else self.defined_at(source, name, hops + 1)
