"""The diff report as GitHub-flavoured markdown (step summaries, PR comments).

Rendered from the JSON document (`jsonfmt.document`) read back as a typed
`document.DiffDocument`, so the PR comment, made from the JSON artifact by a job
that never runs PR code, is the same text as `harness diff --format markdown`.
Everything taken from the document is escaped: in CI it comes from an untrusted job.
"""

from __future__ import annotations

import re
from typing import Any

from harness.errors import HarnessError
from harness.matrix.model import MAX_VALUES, format_value, same_value
from harness.report.because import because_text, more_text
from harness.report.blind import SHOWN, blind_title, is_block, more_line
from harness.report.document import Changed, DiffDocument, Rule, Side, read_document
from harness.report.escape import code_span, markdown_text
from harness.report.fields import OUTCOME, OUTCOME_TITLE, RULES_SHOWN
from harness.report.grid import Grid, Square, best_pair, checked_axes, grid_of, space_of_document
from harness.report.jsonfmt import document
from harness.report.model import (
    DiffReport,
    RuleView,
    axis_order,
    conditions_of,
    every_cell_note,
    sample_positions,
    short_outcome,
)
from harness.report.text import revision_text


def render(report: DiffReport, sample: int = 10, grid: tuple[str, str] | None = None) -> str:
    return render_document(read_document(document(report, sample)), sample, grid=grid)


def render_document(
    doc: DiffDocument,
    sample: int = 10,
    details: str | None = None,
    grid: tuple[str, str] | None = None,
) -> str:
    """Markdown for a diff document; `details`: a link to the full report, if any; `grid`:
    the axes (rows, columns) of the grid of changed cells (None: `grid.best_axes`'s)."""
    field = doc.output
    lines = [
        heading(doc.matrix, doc.function, doc.path),
        "",
        f"- base: {escape(_revision(doc.base))}",
        f"- head: {escape(_revision(doc.head))}",
    ]
    lines.extend(f"- {side}: {escape(note)}" for side, note in doc.notes.items())
    for name, side in (("base", doc.base), ("head", doc.head)):
        if side.every_cell is not None:
            lines.append(f"- {name}: {escape(every_cell_note(side.every_cell))}")
        if side.ran is not None:
            lines.append(f"- {name}: {escape(f'ran {side.ran} (target.otherwise)')}")
    for name, before, after in doc.changed_defaults:
        lines.append(f"- default changed: {escape(f'{name}: {before} -> {after}')}")
    lines.append("")
    changed, cells = doc.changed_count, doc.cells
    reasons, spots = list(doc.cannot_tell), list(doc.blind_spots)
    if not changed and reasons and doc.notes:
        lines.append("Nothing was compared (the reasons are above).")
    elif not changed:
        but = ", but:" if reasons or spots else "."
        lines.append(f"No cell changes {code(field)} ({cells:,} cells compared){but}")
    elif doc.fields is not None:
        count = len(doc.outputs)
        lines += [f"**{changed:,} of {cells:,} cells change at least one of {count} fields:**"]
        lines.extend(grid_lines(doc, grid))
        lines.extend(_by_field(doc))
    else:
        lines += [f"**{changed:,} of {cells:,} cells change {code(field)}:**"]
        lines.extend(grid_lines(doc, grid))
        lines.append("")
        lines.extend(rule_table(rules_of(doc)))
        if sample > 0:
            lines.extend(_sample(doc, sample))
    lines.extend(unseen_markdown(reasons, spots, bool(changed)))
    if details:
        lines += ["", f"[Full report]({details})"]
    return "\n".join(lines) + "\n"


GRID_COLUMNS = 8  # columns a grid shows at most: those with the most changed cells
GRID_ROWS = 40  # rows likewise, while the table stays within GRID_BUDGET
GRID_BUDGET = 24_000  # characters of the grid at most (a PR comment holds 65,536)
GRID_SQUARES = 10_000  # a grid of more squares is not drawn (each is worked out)
SHOWN_TEXT = 48  # characters of a value, transition or condition shown in a square
CHANGED_MARK, SAME_MARK = "\U0001f7e7", "\u2b1c"  # orange and white squares: not red/green


def grid_lines(doc: DiffDocument, axes: tuple[str, str] | None) -> list[str]:
    """The grid of changed cells over two axes (`harness.report.grid`), as a table of
    squares that read without colour: changed/cells and the most frequent change; what
    the changed cells of every changed square share, once, below. The largest rows and
    columns are shown when there are too many, with how many were left out."""
    try:
        space = space_of_document(doc)
        if axes is None and len(space.axes) < 2:
            return []
        rows, cols = best_pair(space) if axes is None else checked_axes(space.names, axes)
        known = dict(space.axes)
        squares = len(known[rows]) * len(known[cols])
        if squares > GRID_SQUARES:
            return ["", f"(No grid: {code(rows)} by {code(cols)} has {squares:,} squares.)"]
        grid = grid_of(space, (rows, cols))
    except HarnessError:  # --grid names no axis of the report: one line, exit 2
        raise
    except ValueError as exc:  # a document from an untrusted job may not add up, or be huge
        return ["", f"(No grid: {escape(str(exc))}.)"]
    shown_cols = _largest(_col_changes(grid), GRID_COLUMNS)
    common = _shared(grid)
    lines = {i: _grid_row(grid, i, shown_cols, common) for i in range(len(grid.row_values))}
    kept = _fitting(grid, lines)
    chosen = "" if axes else " (the pair that best separates changed cells; --grid to choose)"
    header = [f"{escape(rows)} \u2193 {escape(cols)} \u2192",
              *(escape(_short(format_value(grid.col_values[j]))) for j in shown_cols)]  # fmt: skip
    return [
        "",
        f"Changed cells by {code(rows)} (rows) and {code(cols)} (columns){chosen}. Each "
        f"square: changed/cells, the most frequent change. {CHANGED_MARK} some cells "
        f"changed, {SAME_MARK} none.",
        "",
        "| " + " | ".join(header) + " |",
        "|---|" + "---|" * len(shown_cols),
        *(lines[i] for i in kept),
        *_grid_notes(grid, kept, shown_cols, common),
    ]


def _col_changes(grid: Grid) -> list[int]:
    changes = [0] * len(grid.col_values)
    for (_, j), square in grid.squares.items():
        changes[j] += square.changed
    return changes


def _largest(changes: list[int], limit: int) -> list[int]:
    """The indices of the `limit` largest counts (the first among equals), in order."""
    ranked = sorted(range(len(changes)), key=lambda k: (-changes[k], k))
    return sorted(ranked[:limit])


def _fitting(grid: Grid, lines: dict[int, str]) -> list[int]:
    """The rows shown: the most changed first, while they fit GRID_BUDGET and GRID_ROWS."""
    changes = [0] * len(grid.row_values)
    for (i, _), square in grid.squares.items():
        changes[i] += square.changed
    fitting, size = [], 0
    for r in sorted(lines, key=lambda r: (-changes[r], r))[:GRID_ROWS]:
        size += len(lines[r]) + 1
        if fitting and size > GRID_BUDGET:
            break
        fitting.append(r)
    return sorted(fitting)


def _grid_row(grid: Grid, i: int, cols: list[int], common: list[str]) -> str:
    value = escape(_short(format_value(grid.row_values[i])))
    squares = [_square_text(grid, grid.squares[(i, j)], common) for j in cols]
    return f"| {value} | " + " | ".join(squares) + " |"


def _square_text(grid: Grid, square: Square, common: list[str]) -> str:
    mark = CHANGED_MARK if square.changed else SAME_MARK
    text = f"{mark} {square.changed:,}/{square.cells:,}"
    if square.transitions:
        more = len(square.transitions) - 1
        text += f"<br>{escape(_short(square.transitions[0][0]))}"
        text += f" (+{more} more)" if more else ""
    own = [c for c in _conditions(grid, square) if c not in common]
    if own:
        text += "<br>" + ", ".join(code(_short(c), table=True) for c in own[:2])
        text += f" (+{len(own) - 2} more)" if len(own) > 2 else ""
    return text


def _conditions(grid: Grid, square: Square) -> list[str]:
    """What the square's changed cells take of each other axis, where not every value."""
    axes = {name: list(values) for name, values in grid.axes}
    where = {n: list(v) for n, v in square.others if v and len(v) < len(axes[n])}
    return [c.text() for c in conditions_of(where, axes)]


def _shared(grid: Grid) -> list[str]:
    """The conditions every changed square's changed cells share."""
    found = [_conditions(grid, sq) for sq in grid.squares.values() if sq.changed]
    return [c for c in found[0] if all(c in other for other in found[1:])] if found else []


def _grid_notes(grid: Grid, rows: list[int], cols: list[int], common: list[str]) -> list[str]:
    notes = []
    if common:
        shown = ", ".join(code(_short(c)) for c in common)
        notes.append(f"In every changed square, the changed cells have {shown}.")
    hidden_rows = sorted(set(range(len(grid.row_values))) - set(rows))
    hidden_cols = sorted(set(range(len(grid.col_values))) - set(cols))
    left = [_left_out(grid, hidden_rows, "row", 0), _left_out(grid, hidden_cols, "column", 1)]
    left = [text for text in left if text]
    if left:
        notes.append(
            f"Not shown: {' and '.join(left)} (the grid is kept short for a PR comment); "
            "choose other axes with --grid ROWS,COLUMNS, or see the JSON report."
        )
    return [line for note in notes for line in ("", note)]


def _left_out(grid: Grid, hidden: list[int], kind: str, axis: int) -> str:
    if not hidden:
        return ""
    out = set(hidden)
    changed = sum(sq.changed for key, sq in grid.squares.items() if key[axis] in out)
    plural = "s" if len(hidden) > 1 else ""
    return f"{len(hidden):,} more {kind}{plural} ({changed:,} changed cells)"


def _short(text: str) -> str:
    """`text` cut to SHOWN_TEXT characters (an ellipsis says so)."""
    return text if len(text) <= SHOWN_TEXT else text[: SHOWN_TEXT - 1] + "\u2026"


def _spot(item: dict[str, Any]) -> str:
    """One blind spot: where (escaped), the condition as code, what it did, the hint."""
    where = escape(f"{item['side']} {item['path']}:{item['line']}, in {item['function']}")
    shown = escape(item["condition"]) if is_block(item) else code(item["condition"])
    hint = f"<br>{escape(item['hint'])}" if item["hint"] else ""
    return f"{where}: {shown}: {escape(item['seen'])}{hint}"


def unseen_markdown(reasons: list[str], spots: list[dict[str, Any]], changed: bool) -> list[str]:
    """Cannot tell, and the blind spots, each condition as code."""
    lines = ["", f"**Cannot tell:** {escape('; '.join(reasons))}."] if reasons else []
    if spots:
        lines += ["", f"**{escape(blind_title(len(spots), changed))}**", ""]
        for n, item in enumerate(spots[:SHOWN], 1):
            lines.append(f"{n}. {_spot(item)}")
        lines += [f"\n{escape(line)}" for line in more_line(len(spots))]
    return lines


def _by_field(doc: DiffDocument) -> list[str]:
    """A table of rules per output field (the report's `fields`), 12 rules each."""
    lines, order = [], axis_order(doc.axes)
    for name, group in (doc.fields or {}).items():
        rules = [_rule(r, doc.axes, order) for r in group.summary]
        title = OUTCOME_TITLE if name == OUTCOME else name
        lines += ["", f"{code(title)}: {group.cells:,} cells", ""]
        lines.extend(rule_table(rules[:RULES_SHOWN]))
        if len(rules) > RULES_SHOWN:
            lines.append(f"\n... and {len(rules) - RULES_SHOWN} more rules (JSON report)")
    return lines


def heading(matrix: str, function: str, path: str) -> str:
    """The first line of every markdown report: the matrix and what it targets."""
    return f"### {escape(matrix)}: {code(function)} in {code(path)}"


def rules_of(doc: DiffDocument) -> list[RuleView]:
    """The document's rules; a document may come from an untrusted job: an axis of more
    than MAX_VALUES values, or a rule listing more values than its axis has, is a
    ValueError (matching them would take time quadratic in their length)."""
    axes = doc.axes
    if any(len(values) > MAX_VALUES for values in axes.values()):
        raise ValueError(f"an axis has more than {MAX_VALUES} values")
    for rule in doc.summary:
        if any(len(values) > len(axes.get(name, ())) for name, values in rule.where.items()):
            raise ValueError("a rule lists more values than its axis has")
    order = axis_order(axes)
    return [_rule(r, axes, order) for r in doc.summary]


def _rule(rule: Rule, axes: dict[str, list[Any]], order: dict[str, int]) -> RuleView:
    conditions = conditions_of(rule.where, axes, order)
    return RuleView(rule.where, conditions, rule.cells, rule.transition, rule.because,
                    rule.because_more)  # fmt: skip


def rule_table(rules: list[RuleView]) -> list[str]:
    """The rules as a table; a `because` column when some rule was explained."""
    explained = any(rule.because for rule in rules)
    lines = ["| # | cells | transition | where |" + (" because |" if explained else ""),
             "|---|---:|---|---|" + ("---|" if explained else "")]  # fmt: skip
    for n, rule in enumerate(rules, 1):
        where = ", ".join(code(c.text(), table=True) for c in rule.conditions) or "every cell"
        row = f"| {n} | {rule.cells:,} | {escape(rule.transition)} | {where} |"
        if explained:
            more = [escape(more_text(rule.because_more))] if rule.because_more else []
            row += " " + "<br>".join([*map(_because, rule.because), *more]) + " |"
        lines.append(row)
    return lines


def _because(reason: Any) -> str:
    """A because text: its `code` kept as code, the rest escaped. A reason from a document
    names its code (`source`), which may itself hold backticks."""
    if isinstance(reason, dict):
        text, source = str(reason["text"]), reason["source"]
        if text.startswith(f"`{source}`"):
            return code(source, table=True) + escape(text[len(source) + 2 :])
        reason = text
    text = reason if isinstance(reason, str) else because_text(reason)
    parts = text.split("`")
    return "".join(code(p, table=True) if n % 2 else escape(p) for n, p in enumerate(parts))


SCANNED = 10_000  # changed cells searched for the rules' first cells, at most


def pick_sample(doc: DiffDocument, limit: int) -> list[Changed]:
    """Up to `limit` changed cells: the first of each of the first `limit` rules (found
    among the first SCANNED cells), then the next in order. Linear in the cells read,
    whatever the report holds."""
    items = doc.changed
    wanted = [rule.where for rule in doc.summary[:limit]]
    firsts: list[int | None] = [None] * len(wanted)
    for k, item in enumerate(items[:SCANNED]):
        for n, where in enumerate(wanted):
            if firsts[n] is None and _inside(item.cell, where):
                firsts[n] = k
        if all(f is not None for f in firsts):
            break
    found = [k for k in firsts if k is not None]
    return [items[k] for k in sample_positions(found, min(len(items), SCANNED), limit)]


def _inside(cell: dict[str, Any], where: dict[str, list[Any]]) -> bool:
    return all(any(same_value(cell[a], v) for v in values) for a, values in where.items())


def _sample(doc: DiffDocument, limit: int) -> list[str]:
    axes, fields = list(doc.axes), doc.outputs or (doc.output,)
    shown = pick_sample(doc, limit)
    lines = [
        "",
        f"<details><summary>Changed cells ({len(shown)} of {doc.changed_count:,})</summary>",
        "",
        "| " + " | ".join(escape(a) for a in axes) + " | base | head |",
        "|" + "---|" * (len(axes) + 2),
    ]
    for item in shown:
        values = [escape(format_value(item.cell[a])) for a in axes]
        ends = [escape(short_outcome(end, fields)) for end in (item.base, item.head)]
        lines.append("| " + " | ".join(values + ends) + " |")
    lines.extend(["", "</details>"])
    return lines


def _revision(side: Side) -> str:
    return revision_text(side.rev, side.sha, side.subject)


BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # bidi controls


def escape(text: str) -> str:
    """Hostile text as inert markdown, safe in a table cell (`escape.markdown_text`), each
    bidi control U+FFFD (an RTL override would reorder the rest of the line or cell)."""
    return markdown_text(BIDI.sub("\ufffd", str(text)))


def code(text: str, table: bool = False) -> str:
    """Hostile text as a code span, backticks included (`escape.code_span`), bidi
    controls as in `escape`."""
    return code_span(BIDI.sub("\ufffd", str(text)), table)
