"""A module's top-level statements, parsed a piece at a time and remembered by text.

Consecutive revisions of an 80 KB file differ in a few statements, so the
file is cut before every line that starts a top-level statement and each
piece is parsed on its own, once per distinct text. A cut inside a string,
a bracket or a backslash continuation leaves the piece before it
unparseable; any piece that fails sends the whole file through one
`ast.parse`, so a bad cut costs time, never a different tree.

Parsed pieces are shared between revisions and never mutated: a piece's
statements carry line numbers relative to the piece, and `Statement.offset`
turns them into file lines.

The text is a pull request's, and parsing it is the parent's work, so it is
bounded (docs/security.md, Bounds): a file over `MAX_SOURCE_CHARS` is refused
before it is cut, and a tree nested more than `MAX_NESTING` deep (which
CPython's recursive walkers, `ast.unparse` and `compile` among them, cannot
follow) is refused after its parse; either is one line naming the file,
raised as Unevaluable.
"""

from __future__ import annotations
import __future__

import ast
import bisect
import copy
import itertools
import pickle
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from harness.errors import Unevaluable
from harness.files import MAX_SOURCE_CHARS, check_source_size
from harness.patches import Hunk, encoding_kept, lines_in, splice

if TYPE_CHECKING:
    from harness.closure.modules import RevisionFiles

# A line that may start a top-level statement: column 0, not blank, not a
# comment, not a closing bracket. (Matches the newline before it.)
_STATEMENT_START = re.compile(r"\n(?=[^\s#)\]}])")
_TRIPLE = re.compile(r'"""|\'\'\'')
# Lines at column 0 that continue the statement before them.
_CONTINUATION = re.compile(r"(?:else|elif|except|finally)\b")
MAX_PIECES = 2_048  # parsed pieces kept, the last used: memory bounded whatever the history
# Nodes below a top-level statement: SGLang's deepest file nests 16; ast.unparse needs
# about three frames a level, and the recursion limit is 1,000 frames.
MAX_NESTING = 200


@dataclass(eq=False)
class Piece:
    """One piece of source text and its statements (shared by every file holding it)."""

    text: str
    nodes: list[ast.stmt]
    facts: dict[Any, Any] = field(default_factory=dict)  # memo of line-free derived facts

    def memo(self, name: Any, compute) -> Any:
        """A fact about the piece's statements (not their lines), computed once."""
        if name not in self.facts:
            self.facts[name] = compute(self.nodes)
        return self.facts[name]

    def alone(self, position: int, member: int) -> Piece:
        """The piece as one of its statements needs it in a worker: that statement's node
        (and a class's shell around a method), the facts computed about it; a `pass` in
        place of the others. A job pickles a statement this way (see `Statement`): a
        method of SGLang's ServerArgs would otherwise carry the whole class, thousands
        of fields and their facts, which a worker reads back slower than Python parses
        them."""
        nodes = [node if n == position else _HOLE for n, node in enumerate(self.nodes)]
        if member >= 0:
            shell = copy.copy(nodes[position])
            shell.body = [node if n == member else _HOLE for n, node in enumerate(shell.body)]
            nodes[position] = shell
        facts = {key: value for key, value in self.facts.items() if _about(key, position, member)}
        return Piece(self.text, nodes, facts)


_HOLE = ast.Pass(lineno=1, col_offset=0, end_lineno=1, end_col_offset=4)


def _about(key: Any, position: int, member: int) -> bool:
    """Whether a fact's key is about the statement at (position, member): a statement's
    own facts end with them (see `Statement.memo`, `harness.closure.resolve.placed_node`)."""
    return type(key) is tuple and len(key) >= 3 and key[-2:] == (position, member)


class Statement(NamedTuple):
    """A top-level statement of one file, or (`member` >= 0) one statement of a top-level
    class's body (a tuple: files have hundreds, made per revision)."""

    piece: Piece
    position: int  # index into piece.nodes
    offset: int  # file line of the piece's first line, minus one
    slot: int  # index of the piece in its layout
    member: int = -1  # index into the class body, for a method

    @property
    def node(self) -> ast.stmt:
        """The shared, piece-relative node: read it, never change it."""
        node = self.piece.nodes[self.position]
        return node if self.member < 0 else node.body[self.member]

    @property
    def lineno(self) -> int:
        return self.node.lineno + self.offset

    def __reduce__(self) -> tuple:
        """Pickled (for a worker) with its piece `alone`."""
        piece = self.piece.alone(self.position, self.member)
        return (Statement, (piece, self.position, self.offset, self.slot, self.member))

    def memo(self, name: str, compute) -> Any:
        """A fact about this statement that does not depend on where it stands in the file."""
        node = self.node
        return self.piece.memo((name, self.position, self.member), lambda nodes: compute(node))


class Layout:
    """A file cut into pieces: each piece with its line offset and first character.

    A layout made from the last one and git's patch (`SourceCache.layout_of`)
    has no text of its own until one is asked for: it is its pieces' texts
    joined, made then and kept.
    """

    def __init__(
        self,
        source: str | None,
        pieces: list[Piece],
        starts: list[int] | None,
        lines: list[int],
        edit: Edit | None = None,  # how this layout was made from an earlier one
    ) -> None:
        self._source, self.pieces, self._starts, self.lines = source, pieces, starts, lines
        self.edit = edit
        self.blob: str | None = None  # the git blob it is the text of, when known
        self.facts: dict[Any, Any] = {}  # memo of facts about the whole file (`memo`)

    def memo(self, name: Any, compute) -> Any:
        """A fact about the whole file, computed once from this layout."""
        if name not in self.facts:
            self.facts[name] = compute(self)
        return self.facts[name]

    @property
    def source(self) -> str:
        if self._source is None:
            self._source = "".join(piece.text for piece in self.pieces)
        return self._source

    @property
    def starts(self) -> list[int]:
        if self._starts is None:
            lengths = (len(piece.text) for piece in self.pieces[:-1])
            self._starts = list(itertools.accumulate(lengths, initial=0))
        return self._starts

    def statement(self, index: int, position: int) -> Statement:
        return Statement(self.pieces[index], position, self.lines[index], index)


@dataclass(frozen=True)
class Edit:
    """`base`'s pieces [first, after) were replaced by this layout's [first, first + added)."""

    base: Layout
    first: int
    after: int
    added: int

    def removed_pieces(self) -> list[Piece]:
        return self.base.pieces[self.first : self.after]

    def slot(self, old: int) -> int | None:
        """Where `base`'s piece `old` is now (None: it was replaced)."""
        if old < self.first:
            return old
        if old >= self.after:
            return old - self.after + self.first + self.added
        return None


RECENT = 2  # layouts kept per path, by blob (see `SourceCache._remember`)


class SourceCache:
    """What one run has parsed: pieces by text, and the last layout made.

    Owned by one run (see `harness.scan.versions.Versions`), so nothing is
    shared between runs; `closures` is where extraction keeps its own memo.
    """

    def __init__(self, max_pieces: int = MAX_PIECES) -> None:
        self.pieces: dict[str, Piece] = {}
        self.last: dict[str, Layout] = {}  # per path: the next revision is cut against it
        self.recent: dict[str, dict[str, Layout]] = {}  # per path: its last layouts, by blob
        self.closures: dict[Any, Any] = {}  # see harness.closure.extract
        self.walked: dict[Any, Any] = {}  # see harness.closure.order: per parsed function
        self.homes: dict[Any, Any] = {}  # see harness.scan.stand_ins: per revision and name
        self.sited: dict[Any, Any] = {}  # see harness.engine.branches: per statement
        self.max_pieces = max_pieces

    def layout(self, source: str, path: str) -> Layout:
        """`source` in parsed pieces, re-cutting only what differs from the last text of
        the same path."""
        check_source_size(path, source)
        previous = self.last.get(path)
        made = (
            _relayout(self, previous, source) if previous else _cut(self, source, 0, len(source), 0)
        )
        if made is None:
            return _whole(source, path)
        self.last[path] = made
        return made

    def layout_of(self, files: RevisionFiles, path: str) -> Layout | None:
        """The file's layout at the files' revision (None: no such file). When the reader
        knows the file's blob, the path's last layout of the same blob is the answer, and
        git's patch from that layout's blob, if the reader has it, makes the new layout
        around the lines it changes, without making the text (see `Layout`). Otherwise the
        layout is made from the text. Raises Unevaluable as `layout` does."""
        if path in files.made:
            return files.made[path]
        last, blob = self.last.get(path), files.blob(path)
        made = self.recent.get(path, {}).get(blob) if blob is not None else None
        if made is not None:
            self.last[path] = made
        elif last is not None and blob is not None and last.blob == blob:
            made = last
        elif last is not None and blob is not None:
            patch = files.edit(path, last.blob)
            made = patch and _patched(self, last, patch.hunks)
            if made:
                made.blob, self.last[path] = blob, made
        if not made:
            text = files.read(path)
            if text is None:
                return None
            made = self.layout(text, path)
            made.blob = blob
        files.made[path] = made
        if blob is not None:
            self._remember(path, blob, made)
        return made

    def _remember(self, path: str, blob: str, layout: Layout) -> None:
        """Keep the path's layouts of its last RECENT blobs: a diff goes back and forth
        between two revisions (each part of a split one, each side of a bisect step), and
        the same object for the same blob keeps what was learnt of it (indexes, closures)."""
        recent = self.recent.setdefault(path, {})
        recent.pop(blob, None)
        recent[blob] = layout
        while len(recent) > RECENT:
            del recent[next(iter(recent))]

    def piece(self, text: str) -> Piece | None:
        """The parsed piece of `text` (None: it does not parse on its own, or its tree
        is nested too deeply: the whole file's parse then says where)."""
        piece = self.pieces.pop(text, None)
        if piece is not None:
            self.pieces[text] = piece  # the last used is the last dropped
            return piece
        try:
            tree = quiet_parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        if too_deep(tree.body):
            return None
        if len(self.pieces) >= self.max_pieces:  # a layout holds its own pieces: only
            del self.pieces[next(iter(self.pieces))]  # a text seen again is parsed again
        piece = self.pieces[text] = Piece(text, tree.body)
        return piece


def _relayout(cache: SourceCache, old: Layout, source: str) -> Layout | None:
    """Reuse `old`'s pieces before and after the changed span; cut and parse the span."""
    if old.source == source:
        return old
    lo, old_hi = changed_span(old.source, source)
    first = max(bisect.bisect_right(old.starts, lo) - 2, 0)  # one piece of margin
    after = bisect.bisect_right(old.starts, old_hi) + 1  # old pieces from here are kept
    shift = len(source) - len(old.source)
    if after >= len(old.starts):
        middle = _cut(cache, source, old.starts[first], len(source), old.lines[first])
        return middle and _join(source, old, first, middle, len(old.starts), shift, 0)
    end = old.starts[after] + shift
    middle = _cut(cache, source, old.starts[first], end, old.lines[first])
    if middle is None:
        return None
    moved = middle.lines[-1] + middle.pieces[-1].text.count("\n") - old.lines[after]
    return _join(source, old, first, middle, after, shift, moved)


def _join(source, old, first, middle, after, shift, moved) -> Layout:
    old.edit = None  # only the newest edit is ever asked about: a 1,000-commit scan would
    starts, lines = old.starts[after:], old.lines[after:]  # otherwise keep every text it read
    return Layout(
        source,
        old.pieces[:first] + middle.pieces + old.pieces[after:],
        old.starts[:first] + middle.starts + ([s + shift for s in starts] if shift else starts),
        old.lines[:first] + middle.lines + ([n + moved for n in lines] if moved else lines),
        Edit(old, first, after, len(middle.pieces)),
    )


def _patched(cache: SourceCache, old: Layout, hunks: tuple[Hunk, ...]) -> Layout | None:
    """`old` with git's hunks applied: the pieces around them (one piece of margin each
    side, as `_relayout` takes) joined, patched, cut and parsed; the rest kept. None when
    the hunks do not fit those pieces, touch what decides the file's encoding, or leave a
    piece that does not parse on its own (the caller goes by the text then)."""
    if not encoding_kept(_head(old), hunks):
        return None
    last = hunks[-1]
    first = max(bisect.bisect_right(old.lines, hunks[0].before) - 2, 0)
    after = bisect.bisect_right(old.lines, last.before + lines_in(last.removed)) + 1
    after = min(after, len(old.pieces))
    made = splice("".join(p.text for p in old.pieces[first:after]), hunks, old.lines[first])
    kept = _chars(old.pieces[:first]) + _chars(old.pieces[after:])
    if made and kept + len(made) > MAX_SOURCE_CHARS:
        return None  # the text's route refuses it, naming the file
    middle = made and _cut(cache, made, 0, len(made), old.lines[first])
    if not middle:
        return None
    moved = 0
    if after < len(old.pieces):
        moved = middle.lines[-1] + middle.pieces[-1].text.count("\n") - old.lines[after]
    lines = old.lines[after:]
    old.edit = None  # as in `_join`: no chain of layouts
    return Layout(
        None,
        old.pieces[:first] + middle.pieces + old.pieces[after:],
        None,
        old.lines[:first] + middle.lines + ([n + moved for n in lines] if moved else lines),
        Edit(old, first, after, len(middle.pieces)),
    )


def _chars(pieces: list[Piece]) -> int:
    return sum(len(piece.text) for piece in pieces)


def _head(layout: Layout) -> str:
    """The layout's text up to its second line's end, or all of it if it is shorter."""
    head = ""
    for piece in layout.pieces:
        head += piece.text
        if head.count("\n") >= 2:
            break
    return head


def changed_span(old: str, new: str, chunk: int = 1024) -> tuple[int, int]:
    """Where `old` starts and stops differing from `new` (the end is exclusive)."""
    limit = min(len(old), len(new))
    lo = _common_length(lambda a, b: old[a:b] == new[a:b], limit, chunk)
    tail = _common_length(
        lambda a, b: old[len(old) - b : len(old) - a] == new[len(new) - b : len(new) - a],
        limit - lo,
        chunk,
    )
    return lo, len(old) - tail


def _common_length(same, limit: int, chunk: int = 1024) -> int:
    """The largest n <= limit with same(0, n): in chunks that double while equal, then by
    bisection in the first chunk that differs (each comparison runs at C speed, on the
    part not yet known to be the same)."""
    start = 0
    while start < limit:
        end = min(start + chunk, limit)
        if not same(start, end):
            break
        start, chunk = end, chunk * 2
    else:
        return limit
    lo, hi = start, end - 1  # the answer lies in [start, end); [0, lo) is known the same
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if same(lo, mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cut(cache: SourceCache, source: str, lo: int, hi: int, line: int) -> Layout | None:
    """Cut source[lo:hi] (which starts at a cut) into parsed pieces; None: one did not parse."""
    pieces, starts, lines = [], [], []
    for text, start, offset in split(source, lo, hi, line):
        piece = cache.piece(text)
        if piece is None:
            return None
        pieces.append(piece)
        starts.append(start)
        lines.append(offset)
    return Layout(source, pieces, starts, lines)


def split(source: str, lo: int = 0, hi: int | None = None, line: int = 0):
    """(text, first character, line offset) of the pieces of source[lo:hi]."""
    hi = len(source) if hi is None else hi
    cuts, decorated = [lo], source.startswith("@", lo)
    strings = _triple_quoted(source, lo, hi)
    for match in _STATEMENT_START.finditer(source, lo, hi):
        start = match.end()
        if start >= hi or _CONTINUATION.match(source, start) or _inside(strings, start):
            continue
        if not decorated:  # decorator lines stay with the definition below them
            cuts.append(start)
        decorated = source.startswith("@", start)
    cuts.append(hi)
    pieces = []
    for start, end in itertools.pairwise(cuts):
        text = source[start:end]
        pieces.append((text, start, line))
        line += text.count("\n")
    return pieces


def _triple_quoted(source: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """Spans of source[lo:hi] inside triple-quoted strings (a docstring's lines at column
    0 start no statement). A rough scan: a quote it misreads (inside a comment, say)
    makes a bad cut, which costs one whole-file parse, never a wrong tree."""
    spans, at = [], lo
    while True:
        match = _TRIPLE.search(source, at, hi)
        if match is None:
            return spans
        end = source.find(match.group(), match.end(), hi)
        if end < 0:
            return [*spans, (match.start(), hi)]
        spans.append((match.start(), end + 3))
        at = end + 3


def _inside(spans: list[tuple[int, int]], position: int) -> bool:
    index = bisect.bisect_right(spans, (position, float("inf"))) - 1
    return index >= 0 and spans[index][0] < position < spans[index][1]


def refusal(layout: Layout, path: str) -> str | None:
    """Why Python's compiler refuses the file, which parses (an import of it would fail):
    `return`, `yield` or `nonlocal x` at module level, a parameter named twice, a `from
    __future__` import after other statements; None when it takes it. Each piece is
    compiled once per run (the pieces' facts); a layout made by an edit of one taken is
    checked in the edit's pieces only, unless the edit reaches its `__future__` imports."""
    key = ("refusal", path)

    def find(layout: Layout) -> str | None:
        edit = layout.edit
        slots = range(len(layout.pieces))
        if edit is not None and key in edit.base.facts and edit.base.facts[key] is None:
            slots = range(edit.first, edit.first + edit.added)
            if edit.first > _last_future(edit.base) and not any(
                _has_future(layout.pieces[slot]) for slot in slots
            ):
                return _refused_in(layout, slots, path)
        return _refused_in(layout, slots, path) or _late(layout, path)

    return layout.memo(key, find)


def _refused_in(layout: Layout, slots: range, path: str) -> str | None:
    postponed = postpones(n for piece in layout.pieces for n in piece.nodes)  # then a
    # walrus, `yield` or `await` in an annotation is refused
    key, check = ("postponed refusal", _postponed_refusal) if postponed else (
        "compiler refusal", _compiler_refusal)  # fmt: skip
    for slot in slots:
        refused = layout.pieces[slot].memo(key, check)
        if refused is not None:
            line, message = refused
            return f"syntax error in {path} line {layout.lines[slot] + line}: {message}"
    return None


def _late(layout: Layout, path: str) -> str | None:
    late = _misplaced_future(layout)
    if late is None:
        return None
    return (f"syntax error in {path} line {late}: from __future__ imports must occur at the "
            "beginning of the file")  # fmt: skip


def _has_future(piece: Piece) -> bool:
    return piece.memo("future", lambda nodes: any(
        isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in nodes
    ))  # fmt: skip


def _last_future(layout: Layout) -> int:
    """The slot of the layout's last piece with a `from __future__` import (-1: none)."""
    return layout.memo("last future", lambda layout: max(
        (slot for slot, piece in enumerate(layout.pieces) if _has_future(piece)), default=-1
    ))  # fmt: skip


def postpones(nodes: Iterable[ast.stmt]) -> bool:
    """Whether a file whose top-level statements are `nodes` starts with `from __future__
    import annotations` (among its other future imports, after its docstring): Python
    then evaluates no annotation of it."""
    for n, node in enumerate(nodes):
        if n == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            return False
        if any(alias.name == "annotations" for alias in node.names):
            return True
    return False


def _postponed_refusal(nodes: list[ast.stmt]) -> tuple[int, str] | None:
    """`_compiler_refusal` in a file that postpones annotations, which the compiler reads
    otherwise (no walrus, `yield` or `await` in one)."""
    return _compiler_refusal(nodes, __future__.annotations.compiler_flag)


def _compiler_refusal(nodes: list[ast.stmt], flags: int = 0) -> tuple[int, str] | None:
    """(line in the piece, message) of the compiler's refusal of the statements alone."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(ast.Module(body=nodes, type_ignores=[]), "<piece>", "exec", flags=flags,
                    dont_inherit=True)  # fmt: skip
    except SyntaxError as exc:
        return (exc.lineno or 1), exc.msg
    except (ValueError, RecursionError, MemoryError):
        return None  # not the compiler's refusal of the code: running it will say
    return None


def _misplaced_future(layout: Layout) -> int | None:
    """The line of a `from __future__ import` that follows other statements (each piece
    compiles alone, so this is checked over the whole layout)."""
    leading, first = True, True
    for slot, piece in enumerate(layout.pieces):
        for position, node in enumerate(piece.nodes):
            future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
            if future and not leading:
                return layout.statement(slot, position).lineno
            leading = leading and (future or (first and _is_docstring(node)))
            first = False
    return None


def _is_docstring(node: ast.stmt) -> bool:
    value = node.value if isinstance(node, ast.Expr) else None
    return isinstance(value, ast.Constant) and isinstance(value.value, str)


def quiet_parse(source: str, path: str = "<unknown>") -> ast.Module:
    """`ast.parse`, without the SyntaxWarnings CPython prints for odd code (`1if x`): the
    code is the repository's, and its oddities are not ours to print."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source, filename=path)


def copy_tree(node: ast.AST) -> Any:
    """A deep copy of a parsed tree, to change while the pieces stay shared: pickled and
    read back, which CPython does in C, about three times as fast as `copy.deepcopy`.
    Trees here are at most MAX_NESTING deep (see `too_deep`), well within the
    recursion limit both walk with."""
    return pickle.loads(pickle.dumps(node, pickle.HIGHEST_PROTOCOL))


def _whole(source: str, path: str) -> Layout:
    """Parse the file in one go: the true error, or the tree a bad cut could not give."""
    try:
        tree = quiet_parse(source, path)
    except SyntaxError as exc:
        line = _line_of(exc, source)
        raise Unevaluable(f"syntax error in {path} line {line}: {exc.msg}") from None
    except ValueError as exc:  # null bytes, on some 3.11 releases
        if "\0" in source:
            line = source.count("\n", 0, source.index("\0")) + 1
            raise Unevaluable(f"syntax error in {path} line {line}: a NUL byte") from None
        raise Unevaluable(f"{path} cannot be parsed: {exc}") from None
    except (RecursionError, MemoryError):
        raise Unevaluable(f"{path} is nested too deeply for Python to parse") from None
    deep = next((node for node in tree.body if too_deep([node])), None)
    if deep is not None:
        raise Unevaluable(
            f"{path} line {deep.lineno}: a statement nested more than {MAX_NESTING} levels "
            "deep, past harness's cap (docs/security.md, Bounds)"
        )
    return Layout(source, [Piece(source, tree.body)], [0], [0])


def too_deep(nodes: list[ast.stmt], limit: int = MAX_NESTING) -> bool:
    """Whether a node lies more than `limit` levels below `nodes` (operators and contexts,
    which have no children, are not counted). Iterative: the tree may be deeper than the
    recursion limit."""
    stack, node_type = [(node, 1) for node in nodes], ast.AST
    push, pop = stack.append, stack.pop
    while stack:
        node, depth = pop()
        if depth > limit:
            return True
        depth += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_type):
                        push((item, depth))
            elif isinstance(value, node_type) and value._fields:
                push((value, depth))
    return False


def _line_of(exc: SyntaxError, source: str) -> int:
    """The line a syntax error is on; CPython gives none for a NUL byte: find it."""
    if exc.lineno is not None:
        return exc.lineno
    nul = source.find("\0")
    return source.count("\n", 0, nul) + 1 if nul >= 0 else 1
