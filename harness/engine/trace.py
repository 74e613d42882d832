"""Why a cell got its outcome: the target function, instrumented, run on one cell.

The extracted target's AST is rewritten so that every `if`/`elif` test and
conditional expression reports its value, and so does each operand of its
`and`/`or`/`not` structure (the leaves: comparisons, calls, names). Each
operand is wrapped in a call that records and returns it, in place, so
short-circuiting is preserved (an operand never reached is not recorded) and
every expression is evaluated exactly once. `return` and `raise` report their
line. The logic is the function's own; nothing is re-implemented.
"""

from __future__ import annotations

import ast
import functools
import io
import tokenize
from dataclasses import dataclass
from typing import Any

from harness.closure.extract import Closure, Pipeline
from harness.closure.pieces import copy_tree
from harness.engine.batch import Batch, started
from harness.engine.events import CONDITION, OPERAND, PASS, RAISE, RETURN, Event, Trace
from harness.engine.explore import run_cell
from harness.engine.limits import DEFAULT_LIMITS, Limits
from harness.engine.outcome import decode_outcome, encode_outcome
from harness.engine.plain import Malformed, decode, decode_items, encode, shown, within_size
from harness.engine.purity import impurity
from harness.engine.sandbox import chain_maker, function_loader, guarded
from harness.engine.world import Bound, with_defaults
from harness.matrix.model import Matrix

RECORD = "__harness_record__"


class _Sites:
    """What each instrumentation point is: kind, line, written text, normalized text."""

    def __init__(self, source: str) -> None:
        self.lines = source.splitlines(keepends=True) if source else []
        self.sites: list[tuple[str, int, str, str]] = []

    def add(self, kind: str, node: ast.AST) -> int:
        written = self._segment(node)
        normalized = ast.unparse(node)
        shown = " ".join(_without_comments(written or normalized).split())
        self.sites.append((kind, node.lineno, shown, normalized))
        return len(self.sites) - 1

    def _segment(self, node: ast.AST) -> str | None:
        """The node's text in the file (as ast.get_source_segment, without splitting the
        whole file again for every node)."""
        end = getattr(node, "end_lineno", None)
        if end is None or end > len(self.lines):
            return None
        first, last = node.lineno - 1, end - 1
        if first == last:
            return _columns(self.lines[first], node.col_offset, node.end_col_offset)
        head = _columns(self.lines[first], node.col_offset, None)
        tail = _columns(self.lines[last], 0, node.end_col_offset)
        return head + "".join(self.lines[first + 1 : last]) + tail


def _without_comments(text: str) -> str:
    """The expression's text without its comments (black puts them inside conditions)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    lines = text.splitlines(keepends=True)
    for token in reversed(tokens):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            lines[row - 1] = lines[row - 1][:col] + lines[row - 1][token.end[1] :]
    return "".join(lines)


def _columns(line: str, start: int, end: int | None) -> str:
    """A slice of a line by UTF-8 byte columns (ast's col_offset counts bytes)."""
    return line.encode()[start:end].decode(errors="replace")


class _Instrument(ast.NodeTransformer):
    def __init__(self, sites: _Sites) -> None:
        self.sites = sites

    def _record(self, kind: str, node: ast.expr, value: ast.expr) -> ast.expr:
        site = self.sites.add(kind, node)
        call = ast.Call(ast.Name(RECORD, ast.Load()), [ast.Constant(site), value], [])
        return ast.copy_location(call, node)

    def _test(self, test: ast.expr) -> ast.expr:
        return self._record(CONDITION, test, self._operands(test))

    def _operands(self, node: ast.expr) -> ast.expr:
        """`a and not b` -> `rec(a) and not rec(b)`: leaves recorded, structure kept."""
        if isinstance(node, ast.BoolOp):
            values = [self._operands(v) for v in node.values]
            return ast.copy_location(ast.BoolOp(node.op, values), node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = ast.copy_location(ast.UnaryOp(node.op, self._operands(node.operand)), node)
            return self._record(OPERAND, node, inner)
        return self._record(OPERAND, node, self.visit(node))

    def visit_If(self, node: ast.If) -> ast.If:
        self.generic_visit(node)
        node.test = self._test(node.test)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.IfExp:
        self.generic_visit(node)
        node.test = self._test(node.test)
        return node

    def visit_Return(self, node: ast.Return) -> ast.Return:
        self.generic_visit(node)
        value = node.value or ast.Constant(None)
        node.value = self._record(RETURN, node, value)
        return node

    def visit_Raise(self, node: ast.Raise) -> list[ast.stmt]:
        self.generic_visit(node)
        mark = ast.Expr(self._record(RAISE, node, ast.Constant(None)))
        return [ast.copy_location(mark, node), node]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        if getattr(self, "_inside", False):
            return node  # nested functions run untraced
        self._inside = True
        self.generic_visit(node)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.Lambda:
        return node  # untraced, like nested functions

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        return node


def _instrumented(closure: Closure, sites: _Sites) -> tuple[ast.stmt, ...]:
    """The closure's statements, its target function rewritten to record events at `sites`."""
    nodes = list(closure.nodes)
    for n, node in enumerate(nodes):
        if isinstance(node, ast.FunctionDef) and node.name == closure.function:
            nodes[n] = ast.fix_missing_locations(_Instrument(sites).visit(copy_tree(node)))
    return tuple(nodes)


@dataclass(frozen=True)
class Job:
    """One cell of one revision's code, to trace."""

    target: Closure | Pipeline
    source: str  # the target file's text at that revision
    label: str
    cell: tuple[int, ...]


def trace_cells(
    jobs: list[Job], matrix: Matrix, bound: Bound, limits: Limits = DEFAULT_LIMITS
) -> list[Trace]:
    """Run each job's target (or each pass, in order) on its cell, all in one worker,
    recording what the conditions and operands evaluated to and what each pass declared."""
    return start_tracing(jobs, matrix, bound, limits).result()


def start_tracing(
    jobs: list[Job], matrix: Matrix, bound: Bound, limits: Limits = DEFAULT_LIMITS,
    batch: Batch | None = None,
):  # fmt: skip
    """`trace_cells`, started (alone, or joining `batch`): `.result()` waits for the
    traces (or raises Unevaluable)."""
    work = functools.partial(_traced_all, jobs, matrix, bound)
    decode = functools.partial(decode_items, count=len(jobs), item=_decode, what="trace per job")
    return started((work, _encode_all, decode), limits, batch)


def _encode_all(traces: list[Trace]) -> tuple[Any, bytes]:
    return [_encode(trace) for trace in traces], b""


def _encode(trace: Trace) -> dict:
    """The trace as plain data; operands that are not plain values travel as their repr."""
    events = [[e.kind, e.line, e.source, e.key, encode(shown(e.value))] for e in trace.events]
    passes = [encode({k: _shown_deep(v) for k, v in p.items()}) for p in trace.passes]
    data = {"outcome": encode_outcome(trace.outcome), "events": events, "passes": passes}
    return within_size(data, f"the trace of {len(events):,} events")


def _shown_deep(value: Any) -> Any:
    if type(value) is dict:
        return {str(k)[:200]: shown(v) for k, v in value.items()}
    return shown(value)


def _decode(header: Any) -> Trace:
    events = []
    for kind_, line, source, key, raw in header["events"]:
        known = kind_ in (CONDITION, OPERAND, RETURN, RAISE, PASS)
        if not (known and type(line) is int and type(source) is str and type(key) is str):
            raise Malformed("an event is not (kind, line, source, key, value)")
        events.append(Event(kind_, line, source, key, decode(raw)))
    passes = []
    for raw in header["passes"]:
        entry = decode(raw)
        if type(entry) is not dict:
            raise Malformed("a pass entry is not a dict")
        passes.append(entry)
    return Trace(decode_outcome(header["outcome"]), tuple(events), tuple(passes))


def _traced_all(jobs: list[Job], matrix: Matrix, bound: Bound) -> list[Trace]:
    """In the worker: each job traced. One revision's code is instrumented and compiled
    once for all its cells; code that may keep state between calls (see
    `harness.engine.purity`), or whose module-level code reads the cell, is loaded
    afresh for each cell, as evaluation runs it; other code is loaded once."""
    tracers: dict[tuple, _Tracer] = {}
    traces = []
    for job in jobs:
        key = (id(job.target), job.source, job.label)
        tracer = tracers.get(key)
        if tracer is None:
            impure = impurity(job.target) is not None
            tracer = tracers[key] = _Tracer(job.target, job.source, bound, job.label, impure)
        traces.append(tracer.run(matrix, job.cell))
    return traces


class _Tracer:
    """One revision's code, instrumented and loaded: each run records its own events."""

    def __init__(
        self, target: Closure | Pipeline, source: str, bound: Bound, label: str, fresh: bool
    ) -> None:
        sites, events, log = _Sites(source), [], []
        self.events, self.log = events, log
        self.bound = bound = with_defaults(bound, target.defaults)

        def record(site: int, value: Any) -> Any:
            kind, line, written, normalized = sites.sites[site]
            events.append(Event(kind, line, written, normalized, value))
            return value

        def loader(closure: Closure):
            nodes = _instrumented(closure, sites)
            return function_loader(closure, bound, label, extra={RECORD: record}, nodes=nodes)

        self.load = (
            self._pipeline(target, loader) if isinstance(target, Pipeline) else loader(target)
        )
        bound.probe.read = 0
        self.fn = self.load()
        self.fresh = fresh or bound.probe.read != 0  # module-level code read the cell

    def _pipeline(self, target: Pipeline, loader) -> Any:
        """A loader of the passes, each logged, chained."""
        parts = []
        for name, closure in target.passes:
            if closure is None:
                parts.append((name, None, None))
            else:
                parts.append((name, loader(closure), Event(PASS, closure.lineno, name, name)))
        guards, chained = self.bound.guards, chain_maker()

        def load_all() -> Any:
            return chained([
                _absent(name, self.log) if make is None else
                _logged(name, guarded(make(), guards.get(name)), self.log, self.events, start)
                for name, make, start in parts
            ])  # fmt: skip

        return load_all

    def run(self, matrix: Matrix, cell: tuple[int, ...]) -> Trace:
        if self.fresh:  # the modules as a process resolving this cell imports them
            probe = self.bound.probe
            probe.start(cell)
            self.fn = self.load()
        self.events.clear(), self.log.clear()
        outcome = run_cell(self.fn, self.bound, matrix, cell)
        return Trace(outcome, tuple(self.events), tuple(self.log))


def _absent(name: str, log: list[dict[str, Any]]):
    """A pass missing at this revision, in its place in the log."""

    def run(view: Any) -> dict[str, Any]:
        log.append({"pass": name, "absent": True})
        return {}

    return run


def _logged(name: str, fn, log: list[dict[str, Any]], events: list[Event], start: Event):
    def run(view: Any) -> Any:
        events.append(start)
        result = fn(view)
        log.append({"pass": name, "declared": result})
        return result

    return run
