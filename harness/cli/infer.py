"""`harness matrix --infer [REV]`: write a starting matrix from the code at REV."""

from __future__ import annotations

import argparse
import sys

from harness.cli.options import limits_of
from harness.cli.progress import Progress, progress
from harness.errors import Absent, HarnessError, Unevaluable
from harness.files import write_output
from harness.matrix.load import MAX_CELLS, parse_matrix
from harness.matrix.write import flow_list, scalar
from harness.report.inferred_matrix import render
from harness.scan.infer import base_matrix, discover
from harness.session import open_session


def run_infer(args: argparse.Namespace) -> int:
    if args.max_cells < 1:
        raise HarnessError("--max-cells 0: a matrix has at least one cell; raise it")
    with progress(args, "matrix --infer: reading the revision") as bar:
        text = inferred_text(args, bar)
    if args.output:
        write_output(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def inferred_text(args: argparse.Namespace, bar: Progress) -> str:
    """The matrix file inferred from the code at --infer's revision."""
    run = open_session(  # the matrix for its file and world; nothing kept on disk
        args.matrix,
        repo=args.repo,
        revisions=[args.infer],
        max_cells=max(args.max_cells, MAX_CELLS),
        no_cache=True,
        limits=limits_of(args),
        index_url=args.index_url,
        cert=args.cert,
        github=args.github,
    )
    matrix, revision, versions = run.matrix, run.resolve(args.infer), run.versions()
    world = versions.world
    files = versions.files_at(revision)
    try:
        found = versions.front.registered(files)
    except (Absent, Unevaluable) as exc:
        raise HarnessError(f"cannot infer a matrix at {revision.label}: {exc}") from None
    names, target = _chosen(args.passes, found, versions, files, matrix.target.path)
    surveys = [versions.front.survey(files, n) for n in names]
    blocked = {s.name: "; ".join(r for _, r in s.blocked_by) for s in surveys if s.closure is None}
    declared = (f for s in surveys for f in s.declares if f)  # a field with no name: none
    outputs = tuple(dict.fromkeys(declared)) or matrix.target.outputs
    closures = [(s.name, s.closure) for s in surveys if s.closure is not None]
    base = base_matrix(world, matrix.target.path, names, outputs)
    bar.stage(f"matrix --infer: running {len(closures)} pass(es) at {revision.label}")
    try:
        seen = discover(world, base, closures, versions.limits)
    except Unevaluable as exc:  # the worker ran past its limits, or answered nonsense
        raise HarnessError(
            f"cannot infer a matrix at {revision.label}: {exc}; leave that pass out "
            "(--passes) or raise --time-limit"
        ) from None
    target.append(
        f"  output: {flow_list(list(outputs)) if len(outputs) > 1 else scalar(outputs[0])}"
    )
    defaults = versions.front.defaults(files)
    text = render("inferred", target, world, seen, defaults, outputs, blocked, args.max_cells)
    _read_back(text, args.max_cells)
    return text


def _read_back(text: str, max_cells: int) -> None:
    """The written matrix loads as `diff --matrix` loads it; one that does not is a bug."""
    try:
        parse_matrix(text, "the inferred matrix", max_cells=max_cells)
    except HarnessError as exc:
        raise RuntimeError(
            f"bug: matrix --infer wrote a matrix that does not load: {exc}"
        ) from None


def _chosen(passes: str | None, found: list[str], versions, files, path: str):
    """The pass names, and the target lines naming them."""
    lines = [f"  path: {scalar(path)}"]
    if passes in (None, "all"):
        if not found:
            register = versions.front.facts.register
            raise HarnessError(f"no function in {path} is registered with @{register}")
        order = versions.front.run_order(files, found)
        lines.append("  passes: run-order" if order.entry else "  passes: all")
        return list(order.passes), lines
    names = [n.strip() for n in passes.split(",") if n.strip()]
    unknown = [n for n in names if n not in found]
    if unknown or not names:
        known = ", ".join(found) or "none"
        raise HarnessError(
            f"--passes: {', '.join(unknown) or 'no name'} is not a registered pass in {path} "
            f"(registered: {known})"
        )
    lines.append(
        f"  function: {scalar(names[0])}" if len(names) == 1 else f"  passes: {flow_list(names)}"
    )
    return names, lines
