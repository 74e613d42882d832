"""Whether a field's annotation marks it one the code may declare, read with `ast`.

SGLang marks the `ServerArgs` fields its resolution may declare in their
annotations, `page_size: A[Optional[int], Arg(help="...", resolvable=True)]`
(`A` is `typing.Annotated`), and its `validate_declarations` rejects a
declaration of any other field. Python finds the mark by evaluating the
annotation and taking the first metadata item that is an `Arg` (a bare string
is an `Arg` with help only); the harness never evaluates an annotation, so it
reads the same item from the text, and says so where the text alone cannot
tell: a call of a class the world does not name as another kind (SGLang's
`NS("model")` namespace marker) before the marker's, which may be a subclass
of it; `**options`; a keyword whose value is not a literal.
"""

from __future__ import annotations

import ast

from harness.closure.names import last_name

ANNOTATED = frozenset({"A", "Annotated"})  # SGLang's alias, and typing's own name


def mark(annotation: ast.expr, marker: str, keyword: str, others: frozenset[str]) -> bool | str:
    """True or False: whether `annotation` is `Annotated[T, ..., marker(keyword=True)]`
    with that call its first item that is not a call of `others`; else why the text
    cannot tell."""
    call = _marker(annotation, marker, others)
    if call is None:
        return False
    return call if isinstance(call, str) else _keyword(call, keyword)


def given(annotation: ast.expr, marker: str, keyword: str,
          others: frozenset[str]) -> tuple[ast.expr | None, str | None]:  # fmt: skip
    """(value, None): what the same marker call gives `keyword`, unevaluated (None where
    it gives nothing: the marker's own default, as SGLang's `Arg(fallback=None)`); else
    (None, why the text cannot tell)."""
    call = _marker(annotation, marker, others)
    if isinstance(call, str):
        return None, call
    for item in [] if call is None else call.keywords:
        if item.arg is None:
            return None, "its annotation's marker is given **options"
        if item.arg == keyword:
            return item.value, None
    return None, None


def _marker(annotation: ast.expr, marker: str, others: frozenset[str]) -> ast.Call | str | None:
    """The marker's call that Python's reading finds in `annotation` (None: none, or help
    text first), else why the text cannot tell."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return "its annotation is a string, which Python evaluates"
    found = _metadata(annotation)
    if found is None:
        return _aliased(annotation, marker) or None
    items, inner = found
    aliased = _aliased(inner, marker)  # `A[Ann[int, Arg(...)], "help"]`: Ann's items first
    if isinstance(aliased, str):
        return aliased
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            return None  # help text alone: an Arg without the mark
        if isinstance(item, ast.Call) and last_name(item.func) == marker:
            return item
        if isinstance(item, ast.Call) and last_name(item.func) not in others:
            return f"its annotation calls {last_name(item.func) or 'an expression'} before {marker}"
        if not isinstance(item, ast.Call | ast.Constant):
            return f"its annotation holds {ast.unparse(item)} before any {marker}(...)"
    return None


def _aliased(annotation: ast.expr, marker: str) -> bool | str:
    """False, unless a subscript other than `Annotated` holds the marker's call as an
    item (`Ann[int, Arg(...)]`: `Annotated` by another name, for all the text says)."""
    if not isinstance(annotation, ast.Subscript):
        return False  # (None too: `Annotated[]` holds no type)
    slice_ = annotation.slice
    items = slice_.elts if isinstance(slice_, ast.Tuple) else [slice_]
    if any(isinstance(i, ast.Call) and last_name(i.func) == marker for i in items):
        return f"its annotation subscripts {ast.unparse(annotation.value)}, not Annotated"
    return False


def _metadata(annotation: ast.expr) -> tuple[list[ast.expr], ast.expr | None] | None:
    """The items of `Annotated[T, *items]` after the type, as Python flattens them (those
    of an `Annotated` type first), and the innermost type; None when the annotation is not
    `Annotated[...]`."""
    if not (isinstance(annotation, ast.Subscript) and last_name(annotation.value) in ANNOTATED):
        return None
    items = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else []
    inner = _metadata(items[0]) if items else None
    if inner is None:
        return items[1:], items[0] if items else None
    return [*inner[0], *items[1:]], inner[1]


def _keyword(call: ast.Call, keyword: str) -> bool | str:
    for given in call.keywords:
        if given.arg is None:
            return "its annotation's marker is given **options"
        if given.arg == keyword:
            value = given.value
            if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                return value.value
            return f"its annotation gives {keyword} a value that is not a literal"
    return False
