"""Branch coverage: which way each condition of a closure went on the matrix.

Every function drawn into a closure (the target, helpers, view methods, from
every file) is rewritten so that each condition reports the way it went: an
`if`/`elif`/`while` test, a conditional expression, an `assert`, a
comprehension's `if`, a `case` guard, and each operand of an `and`/`or`/`not`
structure. Each block (a function's body, an `if`'s body or `else`, a loop's
body, an `except` handler, a `case`) reports that it was entered. Module-level
code runs once, not per cell, and is left alone, but for the lambdas it
defines, which run per call. The names the rewritten code calls start and end
with `__`: the policy refuses evaluated code that names, defines or binds
such a name, so it cannot call or replace them.

Sites are numbered by a walk of the closure's AST alone, so the parent knows
them without running anything (`sites_of`), and a worker sends back one byte
per site: bit 1 the condition was true (a block: entered), bit 2 false. A test
is handed on as the `bool` it was judged to be, so its `__bool__` runs once,
as in the code; an operand is handed on as itself (its value may be the
result of the `and`/`or`).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from harness.closure.pieces import copy_tree
from harness.engine.plain import Malformed

TEST, OPERAND, BLOCK = "test", "operand", "block"
TRUE, FALSE, BOTH = 1, 2, 3
NAMES = ("__harness_test__", "__harness_operand__", "__harness_block__")
TEXT_LIMIT = 160
CALL = "a call of "  # a function's block: entered when it is called


@dataclass(frozen=True)
class Site:
    """One condition or block of a closure, where it stands in its file."""

    path: str
    line: int
    end_line: int
    col: int
    kind: str  # TEST, OPERAND or BLOCK
    text: str  # the condition as `ast.unparse` writes it; a block: what leads into it
    function: str  # the enclosing function, as `Class.method` or `outer.inner`
    guard: int | None = None  # a block: the test site whose way leads into it
    way: int = TRUE  # a block: which way of `guard` leads into it
    end_col: int = 0

    def holds(self, other: Site) -> bool:
        """Whether `other` lies inside this site's span (and is not this site)."""
        starts_after = (self.line, self.col) <= (other.line, other.col)
        ends_before = (other.end_line, other.end_col) <= (self.end_line, self.end_col)
        return other is not self and starts_after and ends_before

    def where(self) -> str:
        return f"{self.path}:{self.line}"


class Sites:
    """The sites of one or several closures, numbered in the order they are met; a site
    drawn into several closures (a helper two passes use) is one site."""

    def __init__(self, grow: Callable[[int], None] | None = None) -> None:
        self.index: dict[tuple, int] = {}
        self.sites: list[Site] = []
        self.grow = grow  # told the count after each file: its code may run at once

    def add(self, site: Site) -> int:
        key = (site.path, site.line, site.col, site.end_line, site.end_col, site.kind, site.text)
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.sites)
            self.sites.append(site)
        return found

    def rewrite(self, path: str, nodes: Iterable[ast.stmt]) -> tuple[ast.stmt, ...]:
        """The statements of `path`, their functions rewritten to report each site (a copy)."""
        out = []
        for node in nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                node = _Instrument(self, path).visit(copy_tree(node))
                node = ast.fix_missing_locations(node)
            elif any(isinstance(n, ast.Lambda) for n in ast.walk(node)):
                node = _Lambdas(self, path).visit(copy_tree(node))  # they run per call
                node = ast.fix_missing_locations(node)
            out.append(node)
        if self.grow is not None:
            self.grow(len(self.sites))
        return tuple(out)


def closures_of(target: Any) -> list[Any]:
    """The closures a target loads, in the order the sandbox loads them."""
    passes = getattr(target, "passes", None)
    if passes is None or not isinstance(passes, tuple):
        return [target]
    return [closure for _, closure in passes if closure is not None]


def sites_of(
    target: Any, load_order: Callable[[Any], list[str]], memo: dict | None = None
) -> tuple[Site, ...]:
    """Every site of a closure or pipeline, numbered as the worker numbers them. `memo`:
    each statement's own sites, kept by the run (a helper the parts of a split diff share
    is one parsed node, rewritten once)."""
    sites = Sites()
    for closure in closures_of(target):
        for path in load_order(closure):
            for node in closure.nodes_of(path):
                _add_own(sites, _own_sites(path, node, {} if memo is None else memo))
    return tuple(sites.sites)


def _own_sites(path: str, node: ast.stmt, memo: dict) -> list[Site]:
    """The sites of one statement, numbered from 0 (a block's guard too)."""
    found = memo.get((path, node))
    if found is None:
        own = Sites()
        own.rewrite(path, [node])
        found = memo[(path, node)] = own.sites
    return found


def _add_own(sites: Sites, own: list[Site]) -> None:
    """A statement's sites, numbered on from those before it: each added in order, its
    guard renumbered as the statement's own sites are (a site met before is that one)."""
    numbers: list[int] = []
    for site in own:
        guard = None if site.guard is None else numbers[site.guard]
        numbers.append(sites.add(site if guard == site.guard else replace(site, guard=guard)))


class _Instrument(ast.NodeTransformer):
    def __init__(self, sites: Sites, path: str) -> None:
        self.sites, self.path = sites, path
        self.scope: list[str] = []

    def _site(self, kind: str, node: ast.AST, text: str, guard=None, way=TRUE) -> int:
        shown = text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 3] + "..."
        function = ".".join(self.scope) or "<module>"
        end = getattr(node, "end_lineno", None) or node.lineno
        end_col = getattr(node, "end_col_offset", 0) or 0
        site = Site(self.path, node.lineno, end, node.col_offset, kind, shown, function,
                    guard, way, end_col)  # fmt: skip
        return self.sites.add(site)

    def _call(self, name: str, site: int, node: ast.AST, *args: ast.expr) -> ast.Call:
        call = ast.Call(ast.Name(name, ast.Load()), [ast.Constant(site), *args], [])
        return ast.copy_location(call, node)

    def _test(self, test: ast.expr) -> tuple[ast.expr, int]:
        site = self._site(TEST, test, _text(test))
        return self._call(NAMES[0], site, test, self._operands(test)), site

    def _operands(self, node: ast.expr) -> ast.expr:
        """`a and not b` -> `op(a) and not op(b)`: leaves reported, structure kept."""
        if isinstance(node, ast.BoolOp):
            values = [self._operand(v) for v in node.values]
            return ast.copy_location(ast.BoolOp(node.op, values), node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            operand = self._operand(node.operand)  # `not x`: x is an operand too
            return ast.copy_location(ast.UnaryOp(node.op, operand), node)
        return self.visit(node)

    def _operand(self, node: ast.expr) -> ast.expr:
        if isinstance(node, ast.BoolOp) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
        ):
            return self._operands(node)
        if _constant(node):  # `x or 0`, `y or []`: a literal goes one way only
            return self.visit(node)
        site = self._site(OPERAND, node, _text(node))
        return self._call(NAMES[1], site, node, self.visit(node))

    def _block(
        self, body: list[ast.stmt], text: str, guard=None, way=TRUE, header: ast.AST | None = None
    ) -> list[ast.stmt]:
        """The body with a report of its entry first; its span starts at `header` (the
        `except`, `case` or `for` line that leads into it), else at its first statement."""
        if not body:
            return body
        first = body[0]
        span = copy.copy(header or first)
        span.end_lineno, span.end_col_offset = body[-1].end_lineno, body[-1].end_col_offset
        site = self._site(BLOCK, span, text, guard, way)
        mark = ast.copy_location(ast.Expr(self._call(NAMES[2], site, first)), first)
        return [mark, *body]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self.scope.append(node.name)
        body = [self.visit(s) for s in node.body]
        docstring = _has_docstring(body)
        text = f"{CALL}{'.'.join(self.scope)}"
        site = self._site(BLOCK, node, text)
        mark = ast.copy_location(ast.Expr(self._call(NAMES[2], site, node)), body[0])
        node.body = [*body[:docstring], mark, *body[docstring:]]
        self.scope.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        self.scope.append(node.name)
        node.body = [self.visit(s) for s in node.body]
        self.scope.pop()
        return node

    def visit_If(self, node: ast.If) -> ast.If:
        shown = f"if {_text(node.test)}"
        node.test, site = self._test(node.test)
        node.body = self._block(self._visit_all(node.body), f"the body of `{shown}`", site)
        orelse = self._visit_all(node.orelse)
        node.orelse = self._block(orelse, f"the else of `{shown}`", site, FALSE)
        return node

    def visit_While(self, node: ast.While) -> ast.While:
        shown = f"while {_text(node.test)}"
        node.test, site = self._test(node.test)
        node.body = self._block(self._visit_all(node.body), f"the body of `{shown}`", site)
        node.orelse = self._block(self._visit_all(node.orelse), f"the else of `{shown}`")
        return node

    def visit_For(self, node: ast.For) -> ast.For:
        shown = f"for {_text(node.target)} in {_text(node.iter)}"
        node.iter = self.visit(node.iter)
        body = self._visit_all(node.body)
        node.body = self._block(body, f"the body of `{shown}`", header=node)
        node.orelse = self._block(self._visit_all(node.orelse), f"the else of `{shown}`")
        return node

    visit_AsyncFor = visit_For

    def visit_Try(self, node: ast.Try) -> ast.Try:
        node.body = self._visit_all(node.body)
        for handler in node.handlers:
            shown = f"except {_text(handler.type)}" if handler.type else "except"
            handler.body = self._block(self._visit_all(handler.body), f"`{shown}`",
                                       header=handler)  # fmt: skip
        node.orelse = self._visit_all(node.orelse)
        node.finalbody = self._visit_all(node.finalbody)
        return node

    visit_TryStar = visit_Try

    def visit_Match(self, node: ast.Match) -> ast.Match:
        node.subject = self.visit(node.subject)
        for case in node.cases:
            shown = f"case {_text(case.pattern)}"
            if case.guard is not None:
                case.guard, _ = self._test(case.guard)
            case.body = self._block(self._visit_all(case.body), f"`{shown}`",
                                    header=case.pattern)  # fmt: skip
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        node.test, _ = self._test(node.test)
        if node.msg is not None:
            node.msg = self.visit(node.msg)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.IfExp:
        node.test, _ = self._test(node.test)
        node.body, node.orelse = self.visit(node.body), self.visit(node.orelse)
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        return self._operands(node)

    def visit_comprehension(self, node: ast.comprehension) -> ast.comprehension:
        node.iter = self.visit(node.iter)
        node.ifs = [self._test(test)[0] for test in node.ifs]
        return node

    def _visit_all(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for statement in body:
            done = self.visit(statement)
            out.extend(done if isinstance(done, list) else [done])
        return out


def _constant(node: ast.expr) -> bool:
    """Whether the expression reads nothing: no name, attribute, call or subscript."""
    reading = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.NamedExpr, ast.Await)
    return not any(isinstance(n, reading) for n in ast.walk(node))


class _Lambdas(ast.NodeTransformer):
    """Module-level code runs once, but a lambda it defines runs per call: only the
    lambdas are rewritten."""

    def __init__(self, sites: Sites, path: str) -> None:
        self.sites, self.path = sites, path

    def visit_Lambda(self, node: ast.Lambda) -> ast.Lambda:
        return _Instrument(self.sites, self.path).visit(node)


def _has_docstring(body: list[ast.stmt]) -> int:
    first = body[0] if body else None
    is_doc = (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )
    return 1 if is_doc and len(body) > 1 else 0


def _text(node: ast.AST) -> str:
    return " ".join(ast.unparse(node).split())


# --- the worker's side: recording -------------------------------------------------------

_PLAIN_TRUTH = frozenset(
    (bool, int, float, complex, str, bytes, type(None), list, tuple, dict, set, frozenset, range)
)


def truth(value: Any) -> bool:
    """What `if value` would decide, without calling a `__bool__` the code did not call:
    builtin values are judged; an object whose class defines neither `__bool__` nor
    `__len__` is true; only the rest is asked (the one case the code's hook runs twice)."""
    kind = type(value)
    if kind in _PLAIN_TRUTH:
        return bool(value)
    if not any("__bool__" in vars(k) or "__len__" in vars(k) for k in kind.__mro__):
        return True
    return bool(value)


class Recorder:
    """The flags one evaluation sets, one byte per site, and the cell each site was first
    reached on (`cell()` gives the cell under evaluation)."""

    def __init__(self, cell: Callable[[], Any]) -> None:
        self.flags = bytearray()
        self.first: list[Any] = []
        self.cell = cell

    def grow(self, count: int) -> None:
        """Room for `count` sites (known once the code is rewritten), in place: the
        recording functions hold these very objects."""
        self.flags.extend(bytes(count - len(self.flags)))
        self.first.extend([None] * (count - len(self.first)))

    def names(self) -> dict[str, Callable[..., Any]]:
        """The functions the rewritten code calls, by the names it calls them."""
        flags, first, cell = self.flags, self.first, self.cell

        def note(site: int, flag: int) -> None:
            if not flags[site] & flag:
                if not flags[site]:
                    first[site] = cell()
                flags[site] |= flag

        return recording(note)


def recording(note: Callable[[int, int], None]) -> dict[str, Callable[..., Any]]:
    """The functions the rewritten code calls, by the names it calls them, each handing
    `note` the site and the way it went (TRUE or FALSE; a block: TRUE, entered)."""

    def test(site: int, value: Any) -> bool:
        judged = bool(value)
        note(site, TRUE if judged else FALSE)
        return judged

    def operand(site: int, value: Any) -> Any:
        note(site, TRUE if truth(value) else FALSE)
        return value

    def block(site: int) -> None:
        note(site, TRUE)

    return dict(zip(NAMES, (test, operand, block), strict=True))


def check_flags(data: Any) -> bytes:
    """Flags as read back (a worker's answer, a cache file, a baseline), checked: bytes,
    one per site, each 0 to 3."""
    if type(data) is not bytes or data.translate(None, b"\x00\x01\x02\x03"):
        raise Malformed("branch flags are not bytes from 0 to 3")
    return data


def flags_from_hex(raw: Any) -> bytes:
    """Flags written as hex (JSON has no bytes), checked."""
    try:
        return check_flags(bytes.fromhex(raw) if type(raw) is str else None)
    except ValueError:
        raise Malformed("branch flags are not hex") from None


def check_reached(raw: Any, count: int, size: int) -> tuple[int, ...]:
    """Reached cells as read back, checked: one per site, each a cell or -1."""
    if type(raw) not in (list, tuple) or len(raw) != count:
        raise Malformed(f"reached cells are not {count}")
    if any(type(i) is not int or not -1 <= i < size for i in raw):
        raise Malformed("a reached cell outside the matrix")
    return tuple(raw)
