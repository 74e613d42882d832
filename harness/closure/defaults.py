"""The defaults the view's class declares for its fields, read with `ast` (never imported).

SGLang's `ServerArgs` has had two shapes, both read here:

- a dataclass whose body declares each field, `page_size: Optional[int] = None`
  (0.5.19 and earlier);
- a class assembled from namespace structs that a module-level list names
  (`_INPUT_NAMESPACES = [Model, Memory, ...]` in 0.5.20 and later), each
  declaring its fields the same way, in its own module.

A default is taken when it is a literal (also inside `field(default=...)`,
and arithmetic on number literals such as `10 * 1024`); anything else
(`default_factory`, a computed value, no default at all) is kept as a
refusal naming its line, so reading it is an error unless the matrix declares
the field. Nothing here depends on the matrix: `Defaults` belong to the files.

The literals are a pull request's, read in the parent, so they are bounded
before anything is evaluated, shown or digested (docs/security.md, Bounds): at
most MAX_LITERAL_NODES nodes, no str or bytes longer than MAX_LITERAL_CHARS, no
int past MAX_NUMBER, and arithmetic only on operands within MAX_NUMBER. A
default past them is a refusal that says which bound, like any other.
"""

from __future__ import annotations

import ast
import hashlib
import operator
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from harness.closure.effects import stars
from harness.closure.lookup import FileIndexes
from harness.closure.marks import given, mark
from harness.closure.modules import RevisionFiles
from harness.closure.mutations import ANY, effects
from harness.closure.names import DATACLASS, decorator_name
from harness.closure.pieces import SourceCache, Statement
from harness.closure.resolve import ViewClass
from harness.closure.shadows import bound_names


@dataclass(frozen=True)
class Default:
    """One field's declared default: its value, or why it has none harness can use."""

    value: Any
    where: str  # path:line of the declaration
    refusal: str | None = None  # set when there is no literal default
    factory: bool = False  # made by `default_factory` (an empty container): no `.default`

    @property
    def literal(self) -> bool:
        return self.refusal is None

    def shown(self) -> str:
        from harness.matrix.model import format_value

        return format_value(self.value) if self.literal else f"({self.refusal})"


@dataclass(frozen=True)
class Defaults:
    """Every field the view's class declares, by name, and where that was read."""

    fields: dict[str, Default]
    source: str = ""  # the class, as messages name it: `ServerArgs (python/.../server_args.py)`
    inputs: dict[str, Default] = field(default_factory=dict)  # the world's inputs (env vars)
    class_attributes: bool = False  # `Class.field` is the field's default (see below)
    # the fields the class marks declarable (True), or why the mark cannot be read (the
    # world's `declarable`, `harness.closure.marks`); a field not here is not marked
    marks: dict[str, bool | str] = field(default_factory=dict)
    # each field's fallback the class declares in the same marker (SGLang's
    # `Arg(fallback=...)`: its value when neither resolution nor input gives one), or why
    # it cannot be read; a field not here has none
    fallbacks: dict[str, Default] = field(default_factory=dict)
    # how the class is made, as the code asks it (`dataclasses.is_dataclass`): a dataclass
    # of its own body (no namespaces); with base classes, whose fields are not read
    dataclass: bool = False
    bases: bool = False

    @property
    def digest(self) -> str:
        text = (
            "\0".join(
                f"{kind}:{n}={d.value!r}:{d.refusal}:{d.factory}"
                for kind, table in (
                    ("field", self.fields),
                    ("input", self.inputs),
                    ("fallback", self.fallbacks),
                )
                for n, d in sorted(table.items())
            )
            + f"\0class attributes:{self.class_attributes}"
            + f"\0dataclass:{self.dataclass}:{self.bases}"
            + "".join(f"\0mark:{n}={m!r}" for n, m in sorted(self.marks.items()))
        )
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def class_name(self) -> str:
        """The class's name, as Python's messages give it (`ServerArgs`)."""
        return self.source.split(" (", 1)[0]

    @property
    def empty(self) -> bool:
        return not self.fields and not self.inputs

    def __reduce__(self) -> tuple:
        """Pickled as rows of plain values: every worker job carries the class's hundreds
        of fields, and dataclass objects pickle and unpickle several times slower."""
        rows = (_rows(self.fields), self.source, _rows(self.inputs), self.class_attributes,
                self.marks, _rows(self.fallbacks), self.dataclass, self.bases)  # fmt: skip
        return _from_rows, rows


def _rows(table: dict[str, Default]) -> list[tuple]:
    return [(name, d.value, d.where, d.refusal, d.factory) for name, d in table.items()]


def _from_rows(fields: list[tuple], source: str, inputs: list[tuple], class_attributes: bool,
               marks: dict[str, bool | str], fallbacks: list[tuple], dataclass: bool,
               bases: bool) -> Defaults:  # fmt: skip
    def table(rows: list[tuple]) -> dict[str, Default]:
        return {row[0]: Default(*row[1:]) for row in rows}

    return Defaults(table(fields), source, table(inputs), class_attributes, marks,
                    table(fallbacks), dataclass, bases)  # fmt: skip


NO_DEFAULTS = Defaults({})


def class_defaults(cache: SourceCache, files: RevisionFiles, view: ViewClass) -> Defaults:
    """The defaults of `view`'s class at these files (none when the class is not here)."""
    path = files.module_file(view.module, files.target)
    if path is None:
        return NO_DEFAULTS
    indexes = FileIndexes(cache, files)
    fields: dict[str, Default] = {}
    marks: dict[str, bool | str] = {}
    fallbacks: dict[str, Default] = {}
    namespaces = _namespaces(indexes(path), view.namespaces)
    classes: list[Statement] = []
    for name in [*namespaces, view.name]:
        found = _class(indexes, indexes.defined_at(path, name))  # the view's class last
        if found is not None:
            classes.append(found[1])
            fields.update(_declared(*found, _factory_names(cache, files, *found, indexes)))
            marks.update(_marks(found[1], view.declarable))
            fallbacks.update(_fallbacks(*found, view.declarable, view.fallback))
    if not fields:
        return NO_DEFAULTS
    attributes = not namespaces and found is not None and _plain_dataclass(cache, files, *found)
    source = f"{view.name} ({path})"
    marks = {name: marked for name, marked in marks.items() if marked is not False}
    node = found[1].node if found is not None else None
    made = node is not None and any(decorator_name(d) == DATACLASS for d in node.decorator_list)
    based = any(not _plain_base(b) for cls in classes for b in cls.node.bases)
    dataclass = made and not namespaces
    return Defaults(fields, source, class_attributes=attributes, marks=marks,
                    fallbacks=fallbacks, dataclass=dataclass, bases=based)  # fmt: skip


def _plain_base(node: ast.expr) -> bool:
    """A base that gives a class no fields: `object`, or a record base (`msgspec.Struct`)."""
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    return name in ("object", "Struct")


def _plain_dataclass(cache: SourceCache, files: RevisionFiles, path: str, cls: Statement) -> bool:
    """Whether the class's attributes are its fields' defaults, as for a dataclass without
    `slots=True` whose module changes the class nowhere else (`Class.x = 1`)."""
    node = cls.node
    made = [d for d in node.decorator_list if decorator_name(d) == DATACLASS]
    if not made or len(node.decorator_list) != 1:
        return False
    slots = [k for k in getattr(made[0], "keywords", ()) if k.arg == "slots"]
    if any(not (isinstance(k.value, ast.Constant) and k.value.value is False) for k in slots):
        return False
    layout = cache.layout_of(files, path)
    others = [n for piece in layout.pieces for n in piece.nodes if n is not node]
    return not any({node.name, ANY} & effects(n).names for n in others)


def input_defaults(
    cache: SourceCache, files: RevisionFiles, module: str, name: str
) -> dict[str, Default]:
    """The defaults a class of the world's inputs declares, one per class attribute
    `NAME = Kind(default, ...)` (SGLang's `Envs` in `sglang/srt/environ.py`:
    `SGLANG_X = EnvBool(False)`); only literal defaults are kept."""
    path = files.module_file(module, files.target)
    found = _class(FileIndexes(cache, files), (path, name) if path else None)
    if found is None:
        return {}
    path, cls = found
    out = {}
    for node in cls.node.body:
        value = getattr(node, "value", None)
        if isinstance(node, ast.Assign) and isinstance(value, ast.Call) and value.args:
            default = _default(value.args[0], f"{path}:{node.lineno + cls.offset}")
            for target in node.targets:
                if isinstance(target, ast.Name) and default.literal:
                    out[target.id] = default
    return out


def _class(indexes: FileIndexes, where: tuple[str, str] | None) -> tuple[str, Statement] | None:
    """(file, class statement) for a name found at `where`, if it is a class."""
    if where is None:
        return None
    statement = indexes.definition(*where)
    return (where[0], statement) if statement and isinstance(statement.node, ast.ClassDef) else None


def _namespaces(index: dict, list_name: str | None) -> list[str]:
    """The class names a module-level list `list_name = [A, B, ...]` holds, in order."""
    if not list_name:
        return []
    bindings = index.get(list_name, [])
    node = bindings[-1].statement.node if bindings else None
    value = getattr(node, "value", None)
    if not isinstance(value, ast.List | ast.Tuple):
        return []
    return [item.id for item in value.elts if isinstance(item, ast.Name)]


def _factory_names(cache: SourceCache, files: RevisionFiles, path: str, cls: Statement,
                   indexes: FileIndexes) -> Collection[str] | None:  # fmt: skip
    """The names that may not be Python's own where the class's defaults are read: what
    its file binds at the top level and what its body binds; None when the file imports
    with `*` (which may bind any)."""
    layout = cache.layout_of(files, path)
    nodes = [] if layout is None else [n for piece in layout.pieces for n in piece.nodes]
    if any(stars(node) for node in nodes):
        return None
    return {*indexes(path), *(n for s in cls.node.body for n in bound_names(s))}


def _declared(path: str, cls: Statement, index: Collection[str] | None) -> dict[str, Default]:
    """The annotated fields of a class body, each with its default (none read for a
    name the body binds more than once: `x: int = 1` then `x = 2`; `index`: the names
    its file binds, which may rebind a factory)."""
    out = {}
    bound = [name for node in cls.node.body for name in bound_names(node)]
    for node in cls.node.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
            if not name.startswith("__") and not _class_variable(node.annotation):
                where = f"{path}:{node.lineno + cls.offset}"
                out[name] = _default(node.value, where, index)
                if bound.count(name) > 1:
                    out[name] = Default(None, where, f"the class binds it more than once ({where})")
    return out


def _marks(cls: Statement, declarable: tuple[str, str, frozenset[str]] | None
           ) -> dict[str, bool | str]:  # fmt: skip
    """Whether each field of a class body is marked declarable, or why the mark cannot be
    read (`harness.closure.marks`)."""
    if declarable is None:
        return {}
    found = {}
    for node in cls.node.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = mark(node.annotation, *declarable)
    return found


def _fallbacks(path: str, cls: Statement, declarable: tuple[str, str, frozenset[str]] | None,
               keyword: str | None) -> dict[str, Default]:  # fmt: skip
    """Each field's fallback that a class body's marker gives (`keyword`), or why it cannot
    be read; a field with none (or None) is left out."""
    if declarable is None or keyword is None:
        return {}
    marker, _, others = declarable
    found = {}
    for node in cls.node.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            where = f"{path}:{node.lineno + cls.offset}"
            value, why = given(node.annotation, marker, keyword, others)
            if why is not None:
                found[node.target.id] = Default(None, where, f"its {keyword} cannot be read: {why}")
            elif value is not None:
                read = _literal_at(value, where, keyword)
                if read.value is not None or not read.literal:
                    found[node.target.id] = read
    return found


def _class_variable(annotation: ast.expr) -> bool:
    """`ClassVar[...]`: an attribute of the class, not a field."""
    node = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    return name == "ClassVar"


# a factory that makes an empty container, each time anew: `field(default_factory=list)`
EMPTY = {"list": list, "dict": dict, "set": set, "tuple": tuple, "frozenset": frozenset}


def _default(value: ast.expr | None, where: str, index: Collection[str] | None = ()) -> Default:
    if value is None:
        return Default(None, where, f"declared without a default at {where}")
    if _is_field_call(value):
        keywords = {k.arg: k.value for k in value.keywords}
        if "default" in keywords:
            return _default(keywords["default"], where)
        factory = keywords.get("default_factory")
        name = factory.id if isinstance(factory, ast.Name) and not value.args else None
        if len(keywords) == 1 and name in EMPTY and index is not None and name not in index:
            return Default(EMPTY[name](), where, factory=True)
        return Default(None, where, f"its default is made by a factory at {where}")
    return _literal_at(value, where, "default")


def _literal_at(value: ast.expr, where: str, what: str) -> Default:
    """The literal `value` (within harness's bounds), else why not (`what` it is)."""
    past = _past_bounds(value)
    if past:
        return Default(None, where, f"its {what} at {where} is {past} (past harness's bounds)")
    try:
        return Default(_literal(value), where)
    except ValueError:
        return Default(None, where, f"its {what} is computed at {where}")


def _is_field_call(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name == "field"


ARITHMETIC = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv,
}  # fmt: skip
MAX_NUMBER = 1 << 64  # a number beyond this is not a default anyone writes
MAX_LITERAL_NODES = 1_000  # nodes of one default's expression
MAX_LITERAL_CHARS = 10_000  # of one str or bytes in a default (a plain value's cap)


def _past_bounds(node: ast.expr) -> str | None:
    """Which bound the default's expression is past (None: within them all). Iterative,
    and it stops at the first node past MAX_LITERAL_NODES."""
    for count, child in enumerate(ast.walk(node), 1):
        if count > MAX_LITERAL_NODES:
            return f"an expression of more than {MAX_LITERAL_NODES:,} nodes"
        value = getattr(child, "value", None) if isinstance(child, ast.Constant) else None
        if type(value) is int and abs(value) > MAX_NUMBER:
            return f"an int of {value.bit_length():,} bits (more than 64)"
        if type(value) in (str, bytes) and len(value) > MAX_LITERAL_CHARS:
            kind, most = type(value).__name__, MAX_LITERAL_CHARS
            return f"a {kind} of {len(value):,} characters (more than {most:,})"
    return None


def _literal(node: ast.expr) -> Any:
    """A literal's value, also arithmetic on number literals within MAX_NUMBER (each
    operand checked before the operation, the result after); ValueError otherwise."""
    if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
        left, right = _literal(node.left), _literal(node.right)
        if not all(_small_number(v) for v in (left, right)):
            raise ValueError("not arithmetic on numbers within bounds")
        try:
            result = ARITHMETIC[type(node.op)](left, right)
        except (ArithmeticError, ValueError):  # division by zero, a float overflow
            raise ValueError("no number") from None
        if not _small_number(result):
            raise ValueError("too large")
        return result
    return ast.literal_eval(node)


def _small_number(value: Any) -> bool:
    """An int or float (not a bool) of magnitude at most MAX_NUMBER (not inf or nan)."""
    return type(value) in (int, float) and abs(value) <= MAX_NUMBER
