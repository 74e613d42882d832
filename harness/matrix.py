"""Matrix files: the target, the axes and their values, and the bindings.

A matrix is the declarative half of an evaluation: which function to run,
over which combinations of inputs, with which constant fields and extra
bindings. Cells are never materialized as dicts for the whole matrix: a cell
is a tuple of value indices (one per axis), and its position in the matrix is
the mixed-radix number those digits spell, first axis most significant.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError

TOP_KEYS = {"name", "description", "target", "world", "axes", "fields", "bindings"}
TARGET_KEYS = {"path", "function", "passes", "output"}
SCALAR_TYPES = (type(None), bool, int, float, str)
NO_DEFAULT = object()


@dataclass(frozen=True)
class Axis:
    name: str
    values: tuple[Any, ...]
    default: Any = NO_DEFAULT

    def index_of(self, text: str) -> int:
        """Index of the value written `text` as in the matrix file (`null`, `16`, `fa4`)."""
        for i, value in enumerate(self.values):
            if format_value(value) == text:
                return i
        shown = ", ".join(format_value(v) for v in self.values)
        raise HarnessError(f"unknown value {text!r} for axis {self.name} (values: {shown})")


@dataclass(frozen=True)
class Target:
    """One function, or a pipeline of passes run in order (`function` then names them all)."""

    path: str
    function: str
    output: str  # the output field, or several joined by ", " (for reports)
    passes: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()  # each output field, in order

    @property
    def pipeline(self) -> bool:
        return len(self.passes) > 1


@dataclass(frozen=True)
class Matrix:
    name: str
    source: str
    target: Target
    world: str
    axes: tuple[Axis, ...]
    fields: dict[str, Any] = field(default_factory=dict)
    bindings: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    digest: str = ""

    @cached_property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(axis.name for axis in self.axes)

    @cached_property
    def radices(self) -> tuple[int, ...]:
        return tuple(len(axis.values) for axis in self.axes)

    @cached_property
    def strides(self) -> tuple[int, ...]:
        strides, step = [], 1
        for radix in reversed(self.radices):
            strides.append(step)
            step *= radix
        return tuple(reversed(strides))

    @cached_property
    def size(self) -> int:
        total = 1
        for radix in self.radices:
            total *= radix
        return total

    def axis_index(self, name: str) -> int | None:
        for i, axis in enumerate(self.axes):
            if axis.name == name:
                return i
        return None

    def cell(self, index: int) -> tuple[int, ...]:
        """The value indices of the cell at `index`."""
        digits = []
        for radix in reversed(self.radices):
            index, digit = divmod(index, radix)
            digits.append(digit)
        return tuple(reversed(digits))

    def index(self, cell: tuple[int, ...]) -> int:
        return sum(d * s for d, s in zip(cell, self.strides, strict=True))

    def values_of(self, cell: tuple[int, ...]) -> dict[str, Any]:
        """A display dict {axis: value} for one cell."""
        return {axis.name: axis.values[d] for axis, d in zip(self.axes, cell, strict=True)}

    @cached_property
    def edit_hint(self) -> str:
        """Where a user adds a field or binding: their own file, or a copy of a shipped one."""
        if Path(self.source).resolve().parent == shipped_dir().resolve():
            return f"a copy of {self.source} (passed with --matrix PATH)"
        return self.source

    def full_masks(self) -> tuple[int, ...]:
        return self._full_masks

    @cached_property
    def _full_masks(self) -> tuple[int, ...]:
        return tuple((1 << radix) - 1 for radix in self.radices)


def format_value(value: Any) -> str:
    """A value written as in a matrix file: null, true, 16, fa4."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def iter_cells(masks: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Every cell inside the cube `masks` (a bitmask of allowed values per axis), in order."""
    return itertools.product(*(bits_of(mask) for mask in masks))


def cube_runs(matrix: Matrix, masks: tuple[int, ...]) -> tuple[list[int], int]:
    """The cube's cells as contiguous runs: their start indices (ascending) and common length.

    Trailing axes the cube leaves whole make each run long; the axes before
    them multiply the number of runs.
    """
    k, full = len(masks), matrix.full_masks()
    while k and masks[k - 1] == full[k - 1]:
        k -= 1
    length = matrix.strides[k - 1] if k else matrix.size
    offset, starts = 0, None
    for mask, stride in zip(masks[:k], matrix.strides, strict=False):
        if not mask & (mask - 1):  # one value: a fixed offset, no fan-out
            offset += (mask.bit_length() - 1) * stride
        elif starts is None:
            starts = [d * stride for d in bits_of(mask)]
        else:
            starts = [s + d * stride for s in starts for d in bits_of(mask)]
    return ([offset] if starts is None else [s + offset for s in starts]), length


@cache
def bits_of(mask: int) -> tuple[int, ...]:
    """The indices of the set bits of `mask`, ascending (masks are few: remembered)."""
    out, i = [], 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return tuple(out)


def parse_where(matrix: Matrix, exprs: list[str]) -> tuple[int, ...]:
    """`AXIS=V[,V...]` filters (one axis each) as a cube of value masks."""
    masks = list(matrix.full_masks())
    seen: set[str] = set()
    for expr in exprs:
        name, sep, values = expr.partition("=")
        name = name.strip()
        if not sep or not name or not values:
            raise HarnessError(
                f"--where {expr!r}: expected AXIS=VALUE[,VALUE...], e.g. platform=sm100"
            )
        i = matrix.axis_index(name)
        if i is None:
            known = ", ".join(a.name for a in matrix.axes)
            raise HarnessError(
                f"--where {expr!r}: matrix {matrix.name} has no axis {name!r} (axes: {known})"
            )
        if name in seen:
            raise HarnessError(
                f"--where {expr!r}: axis {name} given twice; list values as {name}=A,B"
            )
        seen.add(name)
        masks[i] = 0
        for text in values.split(","):
            masks[i] |= 1 << matrix.axes[i].index_of(text.strip())
    return tuple(masks)


# --- loading -----------------------------------------------------------------


def shipped_dir() -> Path:
    """Where the shipped matrices live: inside the wheel, or beside the package in a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "matrices", here.parent / "matrices"):
        if candidate.is_dir():
            return candidate
    return here / "matrices"


def shipped_names() -> list[str]:
    return sorted(p.stem for p in shipped_dir().glob("*.yaml"))


DEFAULT_MATRIX = "sglang-fa4-page-size"


def load_matrix(name_or_path: str | None = None) -> Matrix:
    """A shipped matrix by name, or a matrix file by path."""
    spec = name_or_path or DEFAULT_MATRIX
    path = Path(spec)
    if not (path.suffix in (".yaml", ".yml") or "/" in spec or path.is_file()):
        path = shipped_dir() / f"{spec}.yaml"
        if not path.is_file():
            names = ", ".join(shipped_names()) or "none"
            raise HarnessError(
                f"--matrix {spec}: no shipped matrix of that name (shipped: {names}); "
                "pass a path to a .yaml file for your own"
            )
    if not path.is_file():
        raise HarnessError(f"--matrix {spec}: file not found")
    text = path.read_text(encoding="utf-8")
    return parse_matrix(text, str(path))


def parse_matrix(text: str, source: str) -> Matrix:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise HarnessError(f"{source}{where}: not valid YAML ({_first_line(exc)})") from None
    check = _Checker(source)
    data = check.mapping(data, "", TOP_KEYS, required={"name", "target", "axes"})
    target = _parse_target(check, data["target"])
    axes = _parse_axes(check, data["axes"])
    fields = check.mapping(data.get("fields") or {}, "fields")
    bindings = check.mapping(data.get("bindings") or {}, "bindings")
    _check_output(check, target, axes, fields)
    return Matrix(
        name=check.string(data["name"], "name"),
        source=source,
        target=target,
        world=check.string(data.get("world", "plain"), "world"),
        axes=axes,
        fields=dict(fields),
        bindings=dict(bindings),
        description=str(data.get("description") or ""),
        digest=hashlib.sha256(text.encode()).hexdigest(),
    )


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _parse_target(check: _Checker, raw: Any) -> Target:
    data = check.mapping(raw, "target", TARGET_KEYS, required={"path", "output"})
    if ("function" in data) == ("passes" in data):
        check.fail("target", "needs either function: NAME or passes: [NAME, ...] (not both)")
    if "function" in data:
        passes = (check.string(data["function"], "target.function"),)
    else:
        raw_passes = data["passes"]
        if not isinstance(raw_passes, list) or not raw_passes:
            check.fail("target.passes", "needs a list of function names, run in that order")
        passes = tuple(check.string(p, f"target.passes[{n}]") for n, p in enumerate(raw_passes))
    for n, name in enumerate(passes):
        if not name.isidentifier():
            check.fail(f"target.passes[{n}]", f"{name!r} is not a function name")
    raw_outputs = data["output"]
    if isinstance(raw_outputs, list) and raw_outputs:
        outputs = tuple(check.string(o, f"target.output[{n}]") for n, o in enumerate(raw_outputs))
    else:
        outputs = (check.string(raw_outputs, "target.output"),)
    if len(set(outputs)) < len(outputs):
        check.fail("target.output", "names a field twice")
    return Target(
        path=check.string(data["path"], "target.path").strip("/"),
        function=" -> ".join(passes),
        output=", ".join(outputs),
        passes=passes,
        outputs=outputs,
    )


def _parse_axes(check: _Checker, raw: Any) -> tuple[Axis, ...]:
    data = check.mapping(raw, "axes")
    if not data:
        check.fail("axes", "needs at least one axis")
    return tuple(_parse_axis(check, name, spec) for name, spec in data.items())


def _parse_axis(check: _Checker, name: Any, spec: Any) -> Axis:
    key = f"axes.{name}"
    if not isinstance(name, str) or not name.isidentifier():
        check.fail(key, "axis names must be identifiers such as page_size")
    default = NO_DEFAULT
    if isinstance(spec, dict):
        spec = check.mapping(spec, key, {"values", "default"}, required={"values"})
        default = spec.get("default", NO_DEFAULT)
        spec = spec["values"]
    values = check.values(spec, key)
    if default is not NO_DEFAULT and not any(same_value(default, v) for v in values):
        check.fail(f"{key}.default", f"{format_value(default)} is not one of the axis values")
    return Axis(name=name, values=values, default=default)


def _check_output(check: _Checker, target: Target, axes: tuple[Axis, ...], fields: dict) -> None:
    for output in target.outputs:
        if output not in fields and not any(a.name == output for a in axes):
            check.fail(
                "target.output",
                f"{output} must also be an axis or a field: it is the input value "
                "a cell keeps when the function declares nothing",
            )


def same_value(a: Any, b: Any) -> bool:
    """Equal as matrix values: 1, 1.0 and true are three different values."""
    return type(a) is type(b) and a == b


class _Checker:
    """Validation helpers whose errors name the file and the key."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, problem: str) -> None:
        where = f"{self.source}: {key}" if key else self.source
        raise HarnessError(f"{where}: {problem}")

    def mapping(self, raw: Any, key: str, allowed: set | None = None, required: set = frozenset()):
        if not isinstance(raw, dict):
            self.fail(key, f"expected a mapping of keys to values, got {_kind(raw)}")
        for name in raw:
            if allowed is not None and name not in allowed:
                self.fail(_join(key, name), f"unknown key (allowed: {', '.join(sorted(allowed))})")
        for name in sorted(required - set(raw)):
            self.fail(_join(key, name), "missing")
        return raw

    def string(self, raw: Any, key: str) -> str:
        if not isinstance(raw, str) or not raw:
            self.fail(key, f"expected a non-empty string, got {_kind(raw)}")
        return raw

    def values(self, raw: Any, key: str) -> tuple[Any, ...]:
        if not isinstance(raw, list) or not raw:
            self.fail(key, "expected a non-empty list of values, e.g. [null, 1, 16]")
        for value in raw:
            if not isinstance(value, SCALAR_TYPES):
                self.fail(
                    key, f"values must be null, booleans, numbers or strings; got {_kind(value)}"
                )
        seen = [(type(v), v) for v in raw]
        if len(set(seen)) != len(seen):
            self.fail(key, "a value is listed twice")
        if len(raw) > 62:
            self.fail(key, "at most 62 values per axis")
        return tuple(raw)


def _join(key: str, name: Any) -> str:
    return f"{key}.{name}" if key else str(name)


def _kind(raw: Any) -> str:
    return "nothing" if raw is None else type(raw).__name__
