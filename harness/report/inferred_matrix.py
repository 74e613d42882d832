"""The matrix file `harness matrix --infer` writes: what the runs found, as a file `harness
diff --matrix` loads and evaluates as written.

The layout (`harness.scan.infer.layout`) is cut to the file's rules. At most
`max_cells` cells: the axes the world suggests are kept first, then those the most
passes read (ties in the order the code read them), each while it fits. An input that
does not fit, or cannot be an axis (its name is no identifier, nor identifiers joined by
dots), is held at one value: a field at its declared default (else its first value),
with the values it had shown beside it. A view attribute whose name has a dot (read
through `getattr`), which a field would not reach, is a comment; a matrix with no axis
gets one of a single value. Names, values and comments go through
`harness.matrix.write`, so each reads back as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harness.closure.defaults import Defaults
from harness.engine.world import World
from harness.errors import HarnessError
from harness.matrix.model import SCALAR_TYPES
from harness.matrix.write import comment, flow_list, is_axis_name, key, scalar
from harness.scan.infer import Found, declared_default, layout

BIND = re.compile(r"\bbind (\w+) under `bindings:`")  # how refusals name what to bind


@dataclass
class Layout:
    """What the file declares: axes, fields (value, where it came from), the inputs held at
    one value (their values as an axis, why held), and names no matrix can set (why)."""

    axes: dict[str, list] = field(default_factory=dict)
    fields: dict[str, tuple[Any, str]] = field(default_factory=dict)
    held: dict[str, tuple[list, str]] = field(default_factory=dict)
    unset: dict[str, str] = field(default_factory=dict)

    @property
    def cells(self) -> int:
        total = 1
        for values in self.axes.values():
            total *= len(values)
        return total


def render(
    name: str, target_lines: list[str], world: World, found: Found, defaults: Defaults,
    outputs: tuple[str, ...], blocked: dict[str, str], max_cells: int,
) -> str:  # fmt: skip
    """The matrix file, with comments saying where each part came from."""
    axes, fields = layout(world, found, defaults, outputs)
    laid = fitted(world, axes, fields, found, defaults, outputs, max_cells)
    return "\n".join(_lines(name, target_lines, world, laid, found, blocked)) + "\n"


def fitted(
    world: World, axes: dict[str, list], fields: dict[str, tuple[Any, str]], found: Found,
    defaults: Defaults, outputs: tuple[str, ...], max_cells: int,
) -> Layout:  # fmt: skip
    """`axes` and `fields` cut to what a matrix file of at most `max_cells` (1 or more)
    cells holds."""
    unset = [n for n in [*axes, *fields] if _dotted_view_attribute(n, found, outputs)]
    why = "a view attribute whose name has a dot (read through getattr): a field of that "
    laid = Layout(fields=dict(fields), unset=dict.fromkeys(unset, why + "name answers the world"))
    room = max_cells
    for name in sorted(axes, key=lambda a: (a not in found.axes, -found.readers.get(a, 0))):
        values = axes[name]
        if name in laid.unset:
            continue
        if not is_axis_name(name):
            _hold(laid, name, values, defaults, "not an axis name (an identifier, or dotted)")
        elif len(values) > room:
            _hold(laid, name, values, defaults, f"over --max-cells {max_cells:,}")
        else:
            room //= len(values)
    laid.axes = {n: v for n, v in axes.items() if n not in laid.held and n not in laid.unset}
    for name in laid.unset:
        laid.fields.pop(name, None)
    if not laid.axes:
        _one_axis(laid, world)
    return laid


def _dotted_view_attribute(name: str, found: Found, outputs: tuple[str, ...]) -> bool:
    return "." in name and name in found.read and name not in {*found.inputs, *outputs}


def _hold(laid: Layout, name: str, values: list, defaults: Defaults, why: str) -> None:
    """`name` as a field: at its declared default, else at its first value."""
    declared = declared_default(defaults, name)
    if declared is not None and type(declared.value) in SCALAR_TYPES:
        laid.fields[name] = (declared.value, f"the default at {declared.where}")
    else:
        laid.fields[name] = (values[0], "its first value")
    laid.held[name] = (values, why)


def _one_axis(laid: Layout, world: World) -> None:
    """A matrix has at least one axis: the first field that can be one, at its one value,
    else an input of the world's the code did not read, at the first value it suggests."""
    for name, (value, _) in laid.fields.items():
        if is_axis_name(name):
            laid.axes[name] = [value]
            laid.fields.pop(name)
            laid.held.pop(name, None)
            return
    for name, values in world.suggested.items():
        if name not in laid.unset:
            laid.axes[name] = [values[0]]
            return
    raise HarnessError(
        f"cannot write a matrix: no input the code reads can be an axis (read: "
        f"{', '.join(map(repr, laid.fields)) or 'none'}); axis names are identifiers"
    )


def _lines(name, target_lines, world, laid: Layout, found: Found, blocked) -> list[str]:
    lines = [
        "# Written by `harness matrix --infer` from the code: a start to trim.",
        "# An axis for each input the code compares with literals (null, the literals,",
        "# and a value none of them names); a field for each other input it reads.",
        f"name: {scalar(name)}",
        "target:",
        *target_lines,
        f"world: {scalar(world.name)}",
        f"# {laid.cells:,} cells",
        "axes:",
        *(f"{key(a, '  ')} {flow_list(values)}" for a, values in laid.axes.items()),
    ]
    if laid.fields:
        lines.append("fields:")
    for f, (value, why) in laid.fields.items():
        if f in laid.held:
            values, held = laid.held[f]
            why = f"{why}; as an axis {flow_list(values)}, held: {held}"
        lines.append(f"{key(f, '  ')} {scalar(value)}  # {comment(why)}")
    if laid.unset:
        lines.append("# Inputs no matrix can set (the code's default is read):")
        lines.extend(f"#   {comment(repr(n))}: {comment(why)}" for n, why in laid.unset.items())
    return lines + _wanted_lines(found, blocked)


def _wanted_lines(found: Found, blocked: dict[str, str]) -> list[str]:
    """Comments: the probes no one binds, as bindings to decide, and the passes that did
    not run, with why."""
    problems = {**blocked, **found.problems}
    wanted: dict[str | None, list[str]] = {}  # a name to bind (None: other) -> passes
    for probe, pass_name in found.unbound.items():
        wanted.setdefault(probe, []).append(pass_name)
    for pass_name, why in problems.items():
        for name in BIND.findall(why) or [None]:
            wanted.setdefault(name or None, []).append(pass_name)
    lines = []
    if any(name is not None for name in wanted):
        lines.append("# Probes the world does not answer: decide each answer, then uncomment.")
        lines.append("# bindings:")
        lines.extend(
            f"#   {comment(n)}: {{call: null}}  # read by {comment(', '.join(ps))}"
            for n, ps in wanted.items() if n
        )  # fmt: skip
    if wanted.get(None):
        lines.append("# Passes that did not run (leave them out, or answer what they read):")
        lines.extend(f"#   {comment(p)}: {comment(problems[p])[:300]}" for p in wanted[None])
    return lines
