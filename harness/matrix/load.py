"""Matrix files: finding, parsing and checking them, with errors that name file and key."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.files import undecodable
from harness.matrix import MAX_CELLS
from harness.matrix.documents import read_document
from harness.matrix.model import (
    ALL_PASSES,
    MAX_VALUES,
    NO_DEFAULT,
    RUN_ORDER,
    SCALAR_TYPES,
    Axis,
    Matrix,
    Target,
    format_value,
    same_value,
)
from harness.matrix.write import is_axis_name

TOP_KEYS = {"name", "description", "target", "world", "axes", "fields", "bindings"}


TARGET_KEYS = {"path", "function", "passes", "entry", "output", "roots", "guards", "otherwise"}
KINDS = ("function", "passes", "entry")  # what a target names: exactly one of them


def shipped_dir() -> Path:
    """Where the shipped matrices live: inside the wheel, or beside the package in a checkout."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "matrices", package.parent / "matrices"):
        if candidate.is_dir():
            return candidate
    return package / "matrices"


def shipped_names() -> list[str]:
    return sorted(p.stem for p in shipped_dir().glob("*.yaml"))


DEFAULT_MATRIX = "sglang-fa4-page-size"
MAX_BYTES = 1 << 20  # bytes of a matrix file, read before it is parsed


def load_matrix(
    name_or_path: str | None = None, max_cells: int = MAX_CELLS, documents: Path | None = None
) -> Matrix:
    """A shipped matrix by name, or a matrix file by path. A bare name (no `/`, no
    `.yaml`/`.yml`) is only ever a shipped matrix: a file of that name in the working
    directory (a pull request's checkout) never stands in for it (`./NAME` reads one)."""
    spec = name_or_path or DEFAULT_MATRIX
    path = Path(spec)
    if not (path.suffix in (".yaml", ".yml") or "/" in spec):
        path = shipped_dir() / f"{spec}.yaml"
        if not path.is_file():
            names = ", ".join(shipped_names()) or "none"
            only = " (`inferred` is for harness diff only)" if spec == "inferred" else ""
            raise HarnessError(
                f"--matrix {spec}: no shipped matrix of that name (shipped: {names}){only}; "
                "pass a path to a .yaml file for your own"
            )
    if not path.is_file():
        raise HarnessError(f"--matrix {spec}: file not found")
    text = _read_text(path, spec)
    shipped = path.resolve().parent == shipped_dir().resolve()
    return parse_matrix(text, str(path), shipped, max_cells, documents)


def _read_text(path: Path, spec: str) -> str:
    """The file's text, refused past MAX_BYTES before it is parsed."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise HarnessError(f"--matrix {spec}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_BYTES:
        raise HarnessError(
            f"--matrix {spec}: more than {MAX_BYTES >> 20} MB, past the limit of a matrix file "
            "(a shipped one is a few KB): make it smaller"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, byte = undecodable(data, exc)
        message = f"{path}:{line}: not UTF-8 (byte {byte}); save the matrix file as UTF-8"
        raise HarnessError(message) from None


def parse_matrix(
    text: str,
    source: str,
    shipped: bool = False,
    max_cells: int = MAX_CELLS,
    documents: Path | None = None,
) -> Matrix:
    """The matrix a file's text describes; `documents`: where the documents of texts
    parsed before are kept as JSON (see `harness.matrix.documents`)."""
    data = read_document(text, source, documents)
    check = _Checker(source)
    data = check.mapping(data, "", TOP_KEYS, required={"name", "target", "axes"})
    target = _parse_target(check, data["target"])
    axes = _parse_axes(check, data["axes"])
    _check_size(check, axes, max_cells)
    fields = check.mapping(data.get("fields") or {}, "fields")
    bindings = check.mapping(data.get("bindings") or {}, "bindings")
    world = check.string(data.get("world", "plain"), "world")
    return Matrix(
        name=check.string(data["name"], "name"),
        source=source,
        target=target,
        world=world,
        axes=axes,
        fields=dict(fields),
        bindings=dict(bindings),
        description=str(data.get("description") or ""),
        digest=hashlib.sha256(text.encode()).hexdigest(),
        shipped=shipped,
    )


def _parse_target(check: _Checker, raw: Any) -> Target:
    data = check.mapping(raw, "target", TARGET_KEYS, required={"path", "output"})
    if sum(kind in data for kind in KINDS) != 1:
        check.fail(
            "target", "needs one of function: NAME, passes: [NAME, ...] or entry: NAME "
            "(the function that resolves the whole configuration)",
        )  # fmt: skip
    if "otherwise" in data and "entry" not in data:
        check.fail("target.otherwise", "names the entries run where `entry:` is not defined: "
                   "use it with entry: NAME")  # fmt: skip
    if "entry" in data:
        name = _entry_name(check, data["entry"], "target.entry")
        otherwise = _otherwise(check, data["otherwise"]) if "otherwise" in data else ()
        return replace(_target(check, data, (name,), entry=True), otherwise=otherwise)
    if "function" in data:
        passes = (check.string(data["function"], "target.function"),)
    elif data["passes"] in ("all", "run-order"):
        return _target(check, data, ALL_PASSES if data["passes"] == "all" else RUN_ORDER)
    else:
        raw_passes = data["passes"]
        if not isinstance(raw_passes, list) or not raw_passes:
            check.fail(
                "target.passes",
                "needs a list of function names, run in that order, `all` or `run-order`",
            )
        passes = tuple(check.string(p, f"target.passes[{n}]") for n, p in enumerate(raw_passes))
    for n, name in enumerate(passes):
        if not name.isidentifier():
            check.fail(f"target.passes[{n}]", f"{name!r} is not a function name")
    return _target(check, data, passes)


def _entry_name(check: _Checker, raw: Any, key: str) -> str:
    name = check.string(raw, key)
    parts = name.split(".")
    if len(parts) > 2 or not all(part.isidentifier() for part in parts):
        check.fail(key, f"{name!r} is not a function name (or Class.method)")
    return name


MAX_OTHERWISE = 8


def _otherwise(check: _Checker, raw: Any) -> tuple[tuple[str, str], ...]:
    """`otherwise:` one {path, entry} mapping, or a list of them, tried in order."""
    items = raw if isinstance(raw, list) else [raw]
    if not items or len(items) > MAX_OTHERWISE:
        wanted = f"needs 1 to {MAX_OTHERWISE} of {{path: FILE, entry: NAME}}, tried in order"
        check.fail("target.otherwise", wanted)
    found = []
    for n, item in enumerate(items):
        key = f"target.otherwise[{n}]" if isinstance(raw, list) else "target.otherwise"
        data = check.mapping(item, key, {"path", "entry"}, required={"path", "entry"})
        found.append((_inside(check, data["path"], f"{key}.path"),
                      _entry_name(check, data["entry"], f"{key}.entry")))  # fmt: skip
    return tuple(found)


def _target(check: _Checker, data: dict, passes: tuple[str, ...], entry: bool = False) -> Target:
    raw_outputs = data["output"]
    if isinstance(raw_outputs, list) and raw_outputs:
        outputs = tuple(check.string(o, f"target.output[{n}]") for n, o in enumerate(raw_outputs))
    else:
        outputs = (check.string(raw_outputs, "target.output"),)
    if len(set(outputs)) < len(outputs):
        check.fail("target.output", "names a field twice")
    path = _inside(check, data["path"], "target.path")
    raw_roots = data.get("roots", [])
    if not isinstance(raw_roots, list):
        check.fail("target.roots", "needs a list of directories, e.g. [python]")
    roots = tuple(_inside(check, r, f"target.roots[{n}]") for n, r in enumerate(raw_roots))
    guards = check.mapping(data.get("guards", {}), "target.guards")
    for name in guards:
        if not isinstance(name, str) or not name.isidentifier():
            check.fail("target.guards", f"{name!r} is not a pass name")
    if guards and len(passes) == 1 and passes not in (ALL_PASSES, RUN_ORDER):
        check.fail("target.guards", "guards a pass of a pipeline: use it with passes:")
    return Target(path=path, passes=passes, outputs=outputs, roots=roots,
                  guards=tuple(guards.items()), entry=entry)  # fmt: skip


def _inside(check: _Checker, raw: Any, key: str) -> str:
    """A path relative to the repository's top, without `..` or `\\`."""
    path = check.string(raw, key)
    parts = path.strip("/").split("/")
    if path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        check.fail(
            key, f"{path!r} must be a path inside the repository, from its top, "
            "e.g. python/sglang/srt/arg_groups/overrides.py",
        )  # fmt: skip
    return "/".join(parts)


def _parse_axes(check: _Checker, raw: Any) -> tuple[Axis, ...]:
    data = check.mapping(raw, "axes")
    if not data:
        check.fail("axes", "needs at least one axis")
    return tuple(_parse_axis(check, name, spec) for name, spec in data.items())


def _parse_axis(check: _Checker, name: Any, spec: Any) -> Axis:
    key = f"axes.{name}"
    if not is_axis_name(name):
        check.fail(
            key, "axis names must be identifiers such as page_size, or identifiers joined by "
            "dots for an input the world reads by that name, such as hf_config.model_type",
        )  # fmt: skip
    default = NO_DEFAULT
    if isinstance(spec, dict):
        spec = check.mapping(spec, key, {"values", "default"}, required={"values"})
        default = spec.get("default", NO_DEFAULT)
        spec = spec["values"]
    values = check.values(spec, key)
    if default is not NO_DEFAULT and not any(same_value(default, v) for v in values):
        check.fail(f"{key}.default", f"{format_value(default)} is not one of the axis values")
    return Axis(name=name, values=values, default=default)


def _check_size(check: _Checker, axes: tuple[Axis, ...], max_cells: int) -> None:
    cells = 1
    for axis in axes:
        cells *= len(axis.values)
    if cells > max_cells:
        shape = " x ".join(f"{len(a.values)} {a.name}" for a in axes)
        check.fail(
            "axes",
            f"{cells:,} cells ({shape}) is more than the {max_cells:,} allowed: drop values "
            "or axes, or raise the limit with --max-cells",
        )


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
        if len(raw) > MAX_VALUES:
            self.fail(key, f"at most {MAX_VALUES} values per axis")
        return tuple(raw)


def _join(key: str, name: Any) -> str:
    return f"{key}.{name}" if key else str(name)


def _kind(raw: Any) -> str:
    return "nothing" if raw is None else type(raw).__name__
