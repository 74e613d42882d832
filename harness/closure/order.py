"""The order SGLang runs its passes in, read from the code that runs them (never imported).

From the resolution entry point the world names (SGLang's
`run_resolution_pipeline` in `arg_groups/pipeline.py`; before 0.5.19,
`ServerArgs.__post_init__` in `server_args.py`), calls are followed in source
order, depth first:

- a registered pass handed to a call (`run_post_process_pass(args, _page_size_default)`)
  runs there;
- a function of the repository that is called, or handed to a call
  (`run_hook(handle_attention, args)`), is entered, as is a method called on
  `self`; names resolve through the module's imports, at the top or inside the
  function, and re-exports.

Every branch is taken: the order is the code's, not one configuration's
(a pass behind `if` is placed where the `if` is). Each function is entered once
and each pass placed once, at its first call. Only files in the target's
package and the entry's own file are entered, so the walk stays within the
resolution code. Registered passes no call reaches follow, in file order.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from harness.closure.lookup import FileIndexes
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache

MAX_DEPTH = 64  # nested calls followed; deeper ones are left out


@dataclass(frozen=True)
class PassOrder:
    """The registered passes in the order the entry point runs them."""

    entry: str  # `path:function` the walk started from ("" when no entry was found)
    reached: tuple[str, ...]  # passes a call reaches, in that order
    unreached: tuple[str, ...]  # registered passes no call reaches, in file order
    guarded: tuple[tuple[str, str], ...] = ()  # (pass, the `if`s it is run under, file:line)

    @property
    def passes(self) -> tuple[str, ...]:
        return self.reached + self.unreached


def pass_order(
    cache: SourceCache,
    files: RevisionFiles,
    registered: list[str],
    entries: tuple[tuple[str, str], ...],
) -> PassOrder:
    """The order of `registered` (the target file's passes, in file order) as run from the
    first of `entries` ((module, function or Class.method)) the files define."""
    for module, name in entries:
        path = files.module_file(module, files.target)
        walk = _Walk(cache, files, frozenset(registered), {path})
        found = _function(walk.indexes, path, name) if path else None
        if found is not None:
            walk.enter(path, *found, depth=0, guard=())
            rest = tuple(p for p in registered if p not in walk.order)
            guarded = tuple((p, walk.guards[p]) for p in walk.order if walk.guards.get(p))
            return PassOrder(f"{path}:{name}", tuple(walk.order), rest, guarded)
    return PassOrder("", (), tuple(registered))


Found = tuple[ast.FunctionDef, "ast.ClassDef | None", int]  # function, class, line offset


def _function(indexes: FileIndexes, path: str, name: str) -> Found | None:
    """`name` (or `Class.method`) defined at the top of the file at `path`."""
    owner, _, method = name.rpartition(".")
    statement = indexes.definition(path, owner or name)
    if statement is None:
        return None
    node, offset = statement.node, statement.offset
    if owner:
        found = _method(node, method) if isinstance(node, ast.ClassDef) else None
        return (found, node, offset) if found else None
    return (node, None, offset) if isinstance(node, ast.FunctionDef) else None


Guard = tuple  # ((path, line offset, Tests), ...): the `if`s a call is under, outer first


class _Walk:
    def __init__(self, cache: SourceCache, files: RevisionFiles, passes: frozenset[str],
                 entry_files) -> None:  # fmt: skip
        self.indexes, self.files, self.passes = _Indexes(cache, files, self.enters), files, passes
        self.walked = cache.walked  # function node -> (its imports, its calls): the run's memo
        self.package = posixpath.dirname(self.files.target)
        self.entry_files = set(entry_files)
        self.order: list[str] = []
        self.guards: dict[str, str | None] = {}  # pass -> the `if`s its first call is under
        self.entered: set[tuple[str, int]] = set()
        self.resolved: dict[tuple, tuple[str, str] | None] = {}  # see `_where`

    def enter(self, path: str, function, cls, offset: int, depth: int, guard: Guard):
        key = (path, id(function))  # node linenos are relative to their piece
        if key in self.entered or depth > MAX_DEPTH:
            return
        self.entered.add(key)
        local, calls = self._read(function)
        for name, is_method, test in calls:
            where = (*guard, (path, offset, test)) if test else guard
            if is_method:
                found = _method(cls, name)
                if found is not None:
                    self.enter(path, found, cls, offset, depth + 1, where)
                continue
            self._reach(path, name, local, depth, where)

    def _read(self, function: ast.FunctionDef) -> tuple[dict, tuple]:
        """The function's own imports and its calls, read once per run: a function whose
        text is the same at two revisions is one parsed node (`SourceCache`), walked once."""
        found = self.walked.get(function)
        if found is None:
            found = self.walked[function] = (_local_imports(function),
                                             tuple(_called_names(function)))  # fmt: skip
        return found

    def _reach(self, path: str, name: str, local: dict, depth: int, guard: Guard) -> None:
        where = self._where(path, name, local.get(name))
        if where is None:
            return
        source, original = where
        if source == self.files.target and original in self.passes:
            if original not in self.order:
                self.order.append(original)
                self.guards[original] = _guard_text(guard)
            return
        if not self.enters(source):
            return
        found = _function(self.indexes, source, original)
        if found is not None:
            self.enter(source, *found, depth=depth + 1, guard=guard)

    def enters(self, path: str) -> bool:
        """Whether the walk enters the functions of the file at `path`."""
        return posixpath.dirname(path) == self.package or path in self.entry_files

    def _where(self, path: str, name: str, imported: tuple | None) -> tuple[str, str] | None:
        """(file, name there) of a name called in `path` (`imported` by the function
        itself, else as the module binds it), looked up once per walk."""
        key = (path, name, imported)
        if key not in self.resolved:
            self.resolved[key] = (
                self.indexes.imported(path, *imported)
                if imported
                else self.indexes.defined_at(path, name)
            )
        return self.resolved[key]


class _Indexes(FileIndexes):
    """The files' bindings as the walk needs them: a module it never enters is read only
    when one of its import statements may name what is looked up there (it may re-export
    a function of the package); otherwise the name is defined there or nowhere, and the
    walk stops at it either way, without parsing the module."""

    def __init__(self, cache: SourceCache, files: RevisionFiles, enters) -> None:
        super().__init__(cache, files)
        self.enters = enters
        self.import_texts: dict[str, list[str] | None] = {}  # path -> see `_import_texts`

    def imported(
        self, path: str, module: str, level: int, name: str, hops: int = 0
    ) -> tuple[str, str] | None:
        source = self.files.module_file(module, path, level)
        if source is None:
            return None
        if not self.enters(source) and not self._may_import(source, name):
            return source, name
        return self.defined_at(source, name, hops + 1)

    def _may_import(self, path: str, name: str) -> bool:
        if path not in self.import_texts:
            self.import_texts[path] = _import_texts(self.files.read(path))
        texts = self.import_texts[path]
        if texts is None:
            return True
        word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
        return any(word.search(text) for text in texts)


_IMPORT = re.compile(r"(?<!\w)import(?!\w)")
MAX_IMPORT = 20_000  # characters an import statement may span before the file is parsed


def _import_texts(text: str | None) -> list[str] | None:
    """What follows each `import` keyword of a file, to the end of its logical line
    (brackets and backslash continuations followed): every name an import statement binds
    is written there. Comments and strings that say `import` only add text. None when the
    file is not plain ASCII (an identifier may be spelled otherwise) or a statement seems
    to run on: then the file is parsed."""
    if text is None or not text.isascii():
        return None
    texts = []
    for match in _IMPORT.finditer(text):
        end = _logical_end(text, match.end())
        if end is None:
            return None
        texts.append(text[match.end() : end])
    return texts


def _logical_end(text: str, start: int) -> int | None:
    """Where the logical line running at `start` ends (None: not within MAX_IMPORT)."""
    depth, at, stop = 0, start, min(len(text), start + MAX_IMPORT)
    while at < stop:
        char = text[at]
        if char == "\n" and depth == 0:
            return at
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char == "\\":
            at += 1  # the character it escapes (a newline: the line goes on)
        at += 1
    return at if at == len(text) else None


def _guard_text(guard: Guard) -> str | None:
    """`path:line: if test; ...` for each `if` around a pass's first call, outer first
    (None: none); made only for the passes placed, not for every call."""
    shown = [f"{path}:{line + offset}: if {_test_text(node, negated)}"
             for path, offset, tests in guard for line, node, negated in tests]  # fmt: skip
    return "; ".join(shown) or None


def _test_text(node: ast.If, negated: bool) -> str:
    text = _short(node.test)
    return f"not ({text})" if negated else text


def _local_imports(function: ast.FunctionDef) -> dict[str, tuple[str, int, str]]:
    """Names the function imports in its own body: name -> (module, level, original); the
    last one met breadth first wins, as `ast.walk` meets them. An import is a statement,
    so only statements (and the handlers and cases holding them) are visited."""
    out, level = {}, [function]
    while level:
        below = []
        for node in level:
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    out[alias.asname or alias.name] = (node.module or "", node.level, alias.name)
            for field in node._fields:
                if field in _BLOCKS:
                    below.extend(getattr(node, field, ()))
        level = below
    return out


_BLOCKS = frozenset(("body", "orelse", "finalbody", "handlers", "cases"))  # statement lists


def _method(cls: ast.ClassDef | None, name: str) -> ast.FunctionDef | None:
    if cls is None:
        return None
    found = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name]
    return found[-1] if found else None


Tests = tuple[tuple[int, ast.If, bool], ...]  # (line, `if`, in its else) around a call, outer first


def _called_names(function: ast.FunctionDef) -> Iterator[tuple[str, bool, Tests]]:
    """In source order, the names each call uses: the called name (or `self.m`, as a
    method), then each name handed to it as an argument; each with the `if`s the call
    is under (none: it runs whenever the function does)."""
    calls: list[tuple[ast.Call, Tests]] = []
    for node in function.body:
        _calls(node, (), calls)
    for call, test in calls:
        func = call.func
        if isinstance(func, ast.Name):
            yield func.id, False, test
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            yield func.attr, True, test
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(arg, ast.Name):
                yield arg.id, False, test


def _calls(node: ast.AST, tests: Tests, out: list[tuple[ast.Call, Tests]]) -> None:
    """Every call in `node`, appended to `out` in source order (an outer call before its
    arguments'), with the `if`s it is under (an `else` branch as the test negated)."""
    if isinstance(node, ast.Call):
        out.append((node, tests))
    if isinstance(node, ast.If):
        _calls(node.test, tests, out)
        for branch, negated in ((node.body, False), (node.orelse, True)):
            inner = (*tests, (node.lineno, node, negated))
            for child in branch:
                _calls(child, inner, out)
        return
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            _calls(value, tests, out)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    _calls(item, tests, out)


def _short(test: ast.expr, limit: int = 80) -> str:
    text = " ".join(ast.unparse(test).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
