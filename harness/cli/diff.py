"""`harness diff [BASE [HEAD]]`: which cells change their outcome between two revisions."""

from __future__ import annotations

import argparse
import functools
import gc
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace as dataclass_replace
from typing import TYPE_CHECKING

from harness import gitio
from harness.cli.options import (
    GRID_HELP,
    add_command,
    add_evaluation_options,
    set_up,
)
from harness.cli.progress import Progress, progress
from harness.cli.streams import inert_text, write_commands
from harness.engine.batch import Batch
from harness.errors import HarnessError, Unevaluable
from harness.files import write_output
from harness.matrix.load import MAX_CELLS
from harness.option_values import grid_axes, nonnegative
from harness.releases.ranges import resolve_range
from harness.report import formats, jsonfmt, parts
from harness.report.grid import checked_axes
from harness.report.model import DiffReport, build_report
from harness.report.parts import Parts
from harness.report.store import ReportCache, report_key
from harness.session import Session

if TYPE_CHECKING:  # imported when a diff runs: a report read back needs none of it
    from harness.scan.versions import Versions

DIFF_FORMATS = formats.formats("diff")
INFERRED = "inferred"  # --matrix inferred: see harness.scan.inferred
TEMPLATE = "sglang-resolution"  # its target file, world, bindings and model facts

HELP = """\
Compare the outcomes of the matrix's target function at two revisions.

  harness diff                 HEAD against the working tree
  harness diff REV             REV against the working tree
  harness diff BASE HEAD       BASE against HEAD (BASE..HEAD says the same)
  harness diff BASE...HEAD     where HEAD left BASE (their merge base) against
                               HEAD: what a branch changes, without what BASE
                               gained since
  harness diff --pr N          a PR against its base: the commit ending in
                               (#N) against its parent; with --github, an
                               open PR's head against where it left its base

A revision is anything git understands (sha, branch, tag, HEAD~3) or #N /
pr:N for the commit whose subject ends in (#N), optionally with a suffix such
as #30835^ for its parent; or a release, with no repository needed:
pypi:NAME==VERSION (from --index-url), wheel:PATH or sdist:PATH.

  harness diff pypi:sglang==0.5.18 pypi:sglang==0.5.23

--matrix inferred builds the matrix from the code of both revisions: the
passes whose code differs (and those after them that read what they declare),
an axis for every input they compare with literals (null, the literals, one
value none of them names) and every platform the world tells apart.

Formats: text (rules, then a sample of cells), markdown (for a step summary
or a PR comment), json (every changed cell), json-sample (the same document
with --sample cells and their count: what harness comment reads), junit (one
failed test case per rule), github (for Actions: a ::warning on each changed
line the rules' reasons point at, a ::notice for a line only the base has; at
the target function only when no line of its code changed), html (one
self-contained page, nothing loaded from the network: a grid of the changed
cells over any two axes, the rules with the code of each reason at base and
head, where it looked and the blind spots, the changed cells (up to 5,000)
filterable by axis values; docs/report-html.md). junit and github
also carry one entry per blind spot (github: on the changed line). --output
FORMAT=FILE writes more formats from the same evaluation, e.g. every report a
CI job keeps, in one run.

Where it looked: every condition of the code (target, helpers, other files)
records which way it went on the matrix. A changed line whose condition was
not taken both ways, or whose block was never entered, is a blind spot: a
change there would not show on the matrix's cells. Each is named with the
input that would take it the other way (e.g. `prefill_cuda_graph is breakable
on every cell; prefill_cuda_graph = full takes it the other way`).

Exit status: 0 no cell changed and every changed condition was taken both
ways; 1 cells changed (blind spots are listed after the rules); 2 error;
4 cannot tell: no cell changed but there are blind spots, or a side could
not be evaluated (unevaluable, or the head has no target), so nothing was
compared. A base without the target against an evaluable head is a change."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "diff", "compare outcomes between two revisions", HELP)
    parser.add_argument("revisions", nargs="*", metavar="REV", help="zero, one or two revisions")
    parser.add_argument(
        "--pr", type=_pr_number, metavar="N", help="compare PR #N with its base (see above)"
    )
    parser.add_argument(
        "--sample",
        type=nonnegative,
        default=10,
        metavar="N",
        help="changed cells listed by text, markdown and json-sample reports (default 10; "
        "json lists all)",
    )
    parser.add_argument(
        "--output",
        type=_output,
        action="append",
        default=[],
        metavar="FORMAT=FILE",
        help="also write the report in FORMAT to FILE (a regular file is replaced whole or "
        "not at all, keeping its mode; a FIFO or device is written in place; '-' is standard "
        f"output); repeat for several ({', '.join(DIFF_FORMATS)})",
    )
    parser.add_argument(
        "--exhaustive",
        action="store_true",
        help="run the function on every cell instead of once per decision path (slower; "
        "for functions that are not pure)",
    )
    parser.add_argument("--grid", type=grid_axes, metavar="ROWS,COLUMNS", help=GRID_HELP)
    add_evaluation_options(parser, run, DIFF_FORMATS)


def run(args: argparse.Namespace) -> int:
    if len(args.revisions) > 2:
        shown = " ".join(args.revisions)
        raise HarnessError(
            f"harness diff takes at most two revisions, got {len(args.revisions)}: {shown}"
        )
    inferred = args.matrix == INFERRED
    if inferred and args.where:
        raise HarnessError(
            "--where does not apply to --matrix inferred (its axes come from the code): "
            "write the inferred matrix to a file first (harness matrix --infer) and use that"
        )
    with progress(args, "diff: reading the revisions") as bar:
        report = evaluated(args, bar)
    if report is None:
        return nothing_inferred(args)
    if args.grid:
        check_grid(report, args.grid)
    args.status = report.status  # the answer, even if the reader goes away
    formats = {args.format, *(fmt for fmt, _ in args.output)}
    code = code_sources(args, report) if "html" in formats else None
    for fmt, path in args.output:
        write_file(path, chunks(report, fmt, args.sample, code, args.grid), fmt)  # streamed
    write(report, args.format, args.sample, code, args.grid)
    return args.status


def code_sources(args: argparse.Namespace, report: DiffReport | Parts) -> Callable:
    """(side, path) -> that file's text at the report's base or head (None: not there, or
    not readable), read when asked and once, for the code an html report shows."""
    reports = report.reports if isinstance(report, Parts) else [report]
    if not reports:
        return lambda side, path: None
    revisions = {"base": reports[0].base, "head": reports[0].head}  # the parts share them
    in_git = [r for r in revisions.values() if r.kind != gitio.RELEASE]
    repo = gitio.open_repo(args.repo) if in_git else None

    @functools.cache
    def read(side: str, path: str) -> str | None:
        try:
            return gitio.read_file(repo, revisions[side], path)
        except (HarnessError, Unevaluable, OSError):
            return None

    return read


def evaluated(args: argparse.Namespace, bar: Progress) -> DiffReport | Parts | None:
    """The report the options ask for (None: --matrix inferred found nothing to infer)."""
    inferred = args.matrix == INFERRED
    session = set_up(template(args) if inferred else args)
    if args.grid and not inferred:  # before the evaluation: a misspelt axis costs nothing
        checked_axes(session.matrix.axis_names, args.grid)
    base, head = pick_revisions(session, args)
    if inferred:
        bar.stage(f"diff: inferring the matrix from {base.label} and {head.label}")
        return inferred_report(session, base, head, args, bar)
    bar.stage(f"diff: evaluating {base.label} and {head.label}")
    return diff_report(session, base, head, args.exhaustive)


def inferred_report(
    session: Session,
    base: gitio.Revision,
    head: gitio.Revision,
    args: argparse.Namespace,
    bar: Progress,
) -> DiffReport | Parts | None:
    """The report on the matrix (or, split, the matrices) inferred from both revisions'
    code; None when no pass's code, place in the run order or read default differs."""
    from harness.scan.inferred import inferred_matrix

    versions = session.versions()
    inferred = inferred_matrix(versions, base, head, args.max_cells)
    if inferred is None:
        return None
    with _out_of_collection():  # the revisions' parsed files, kept for the diffs
        reports = parts_reports(session, versions, inferred.matrices, base, head, args, bar)
    if not inferred.whole:
        (report,) = reports
        unseen = "; ".join(filter(None, [report.unseen, *inferred.unseen])) or None
        return dataclass_replace(report, unseen=unseen)
    return Parts(reports, inferred.whole, args.max_cells, inferred.unseen)


def parts_reports(session: Session, versions: Versions, matrices, base, head, args, bar) -> list:
    """The report of each inferred matrix, read back or evaluated. Every evaluation is
    started before the first is waited for, and every blind-spot search before the first
    report is finished; BATCH parts' evaluations (then searches) of one revision share
    a worker (`harness.engine.batch`): the workers of later parts run while the parent
    compares and explains the earlier ones."""
    parts = [dataclass_replace(session, matrix=matrix, where=None) for matrix in matrices]
    reports = [cached_report(part, base, head, args.exhaustive) for part in parts]
    started, evaluations = {}, _Batches(session.limits, ("base", "head"))
    for n, part in enumerate(parts):
        if reports[n] is None:
            shared, batch = versions.sharing(part.matrix, args.exhaustive), evaluations.next()
            plans = [_start(shared, base, batch["base"]), _start(shared, head, batch["head"])]
            started[n] = (shared, plans)
    evaluations.submit()
    from harness.scan.diff import start_diff

    finishing, helpers = {}, _Batches(session.limits, ("base", "head", "traces"))
    for n, (shared, plans) in started.items():  # each compared, its searches started
        bar.stage(f"diff: evaluating {parts[n].matrix.name} ({n + 1}/{len(parts)})")
        finishing[n] = start_diff(shared, base, head, parts[n].where, plans, helpers.next())
    helpers.submit()
    for n, finish in finishing.items():  # then each waited for, in order
        reports[n] = kept_report(parts[n], base, head, args.exhaustive, finish())
    return reports


BATCH = 8  # parts whose jobs share a worker (per revision): the first answer early


class _Batches:
    """A batch per name (each revision: "base", "head"), new for each next BATCH parts."""

    def __init__(self, limits, names: tuple[str, ...]) -> None:
        self.limits, self.names, self.parts = limits, names, 0
        self.current: dict[str, Batch] = {}

    def next(self) -> dict[str, Batch]:
        if self.parts % BATCH == 0:
            self.submit()
            behind = min(2 * (self.parts // BATCH), 19)  # the first parts' workers first
            limits = dataclass_replace(self.limits, behind=behind)
            self.current = {name: Batch(limits) for name in self.names}
        self.parts += 1
        return self.current

    def submit(self) -> None:
        for batch in self.current.values():
            batch.submit()


def _start(versions: Versions, revision: gitio.Revision, batch: Batch):
    """`versions.start(revision)`, its evaluation (if any) joining `batch`."""
    versions.tables.batch = batch
    try:
        return versions.start(revision)
    finally:
        versions.tables.batch = None


@contextmanager
def _out_of_collection() -> Iterator[None]:
    """The objects made so far left out of the cyclic garbage collector while the diffs
    run: its collections would otherwise walk every parsed file the run keeps for them,
    again and again. Objects no longer referenced are still freed; cycles among them
    wait."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


UNCHANGED = (
    "No registered pass's code, run order or declared defaults differ between the two "
    "revisions: nothing changed."
)


def nothing_inferred(args: argparse.Namespace) -> int:
    """--matrix inferred with nothing to infer: the one line, in each format asked for (a
    JSON report is a document that says so, so that CI finds the file it expects)."""
    for fmt, path in args.output:
        write_file(path, _unchanged(fmt), fmt)
    sys.stdout.write(_unchanged(args.format))
    return 0


def _unchanged(fmt: str) -> str:
    if fmt in ("json", "json-sample"):
        return json.dumps(jsonfmt.nothing_inferred(INFERRED, UNCHANGED)) + "\n"
    if fmt == "html":
        from harness.report import html

        return html.message_page("diff --matrix inferred", UNCHANGED)
    return "" if fmt in ("junit", "github") else UNCHANGED + "\n"


def template(args: argparse.Namespace) -> argparse.Namespace:
    """The options as `set_up` reads them for --matrix inferred: the whole-resolution matrix,
    for its target file, world and model facts only (its cells are never made)."""
    return argparse.Namespace(**{**vars(args), "matrix": TEMPLATE, "max_cells": MAX_CELLS})


def diff_report(
    session: Session,
    base: gitio.Revision,
    head: gitio.Revision,
    exhaustive: bool,
) -> DiffReport:
    """The report of BASE against HEAD: read back when the same two commits were compared
    the same way before (see `harness.report.store`), else evaluated and kept."""
    found = cached_report(session, base, head, exhaustive)
    if found is not None:
        return found
    return evaluated_report(session, base, head, exhaustive, session.versions(exhaustive))


def cached_report(session: Session, base, head, exhaustive: bool) -> DiffReport | None:
    """The report of the same two commits compared the same way before, if kept."""
    key = report_key(session.matrix, base, head, session.where, (exhaustive, session.limits))
    return ReportCache(session.cache).get(key, session.matrix, base, head) if key else None


def evaluated_report(
    session: Session, base, head, exhaustive: bool, versions: Versions
) -> DiffReport:
    """The report evaluated on `versions`, and kept."""
    from harness.scan.diff import diff  # only now: a report read back needs none of it

    return kept_report(session, base, head, exhaustive, diff(versions, base, head, session.where))


def kept_report(session: Session, base, head, exhaustive: bool, found) -> DiffReport:
    """The report of a diff, kept for the next run that compares the same way."""
    report = build_report(found)
    key = report_key(session.matrix, base, head, session.where, (exhaustive, session.limits))
    if key:
        ReportCache(session.cache).put(key, report)
    return report


def pick_revisions(
    session: Session, args: argparse.Namespace
) -> tuple[gitio.Revision, gitio.Revision]:
    """As `git diff`: none -> HEAD vs working tree; one -> REV vs working tree, or a range's
    two (`harness.releases.ranges`); two -> both."""
    revisions, repo, resolve = args.revisions, session.repo, session.resolve
    if args.pr is not None:
        from harness.github.prs import pr_revisions

        if revisions:
            raise HarnessError(
                f"harness diff --pr {args.pr} takes no revisions, got: {' '.join(revisions)}"
            )
        return pr_revisions(repo, args.pr, session.online)
    if len(revisions) == 2:
        return resolve(revisions[0]), resolve(revisions[1])
    ranged = resolve_range(repo, resolve, revisions[0]) if revisions else None
    if ranged is not None:
        return ranged
    return resolve(revisions[0] if revisions else "HEAD"), gitio.worktree(repo)


def _pr_number(text: str) -> int:
    digits = text.removeprefix("#")
    if not digits.isdigit() or int(digits) == 0:
        raise argparse.ArgumentTypeError(f"expected a PR number such as 30835, got {text!r}")
    return int(digits)


def check_grid(report: DiffReport | Parts, grid: tuple[str, str]) -> None:
    """--grid names two axes of the report's matrix, or of one part's (HarnessError)."""
    reports = report.reports if isinstance(report, Parts) else [report]
    if reports and not any(part_grid(one, grid) for one in reports):
        checked_axes(reports[0].matrix.axis_names, grid)


def part_grid(report: DiffReport, grid: tuple[str, str] | None) -> tuple[str, str] | None:
    """--grid for one part of an inferred diff: its axes if the part has both, else None
    (the part's best pair)."""
    names = report.matrix.axis_names
    return grid if grid and grid[0] != grid[1] and set(grid) <= set(names) else None


def write(
    report: DiffReport,
    fmt: str,
    sample: int,
    code: Callable | None = None,
    grid: tuple[str, str] | None = None,
) -> None:
    batch: list[str] = []  # a large json report is thousands of chunks: write them in blocks
    size = 0  # of at most about a megabyte (a chunk of large outcomes is one already)
    out = functools.partial(write_commands, sys.stdout) if fmt == "github" else sys.stdout.write
    for chunk in chunks(report, fmt, sample, code, grid):
        batch.append(chunk)
        size += len(chunk)
        if len(batch) >= 512 or size >= 1 << 20:
            out("".join(batch))
            batch.clear()
            size = 0
    out("".join(batch))
    sys.stdout.flush()


def chunks(
    report: DiffReport | Parts,
    fmt: str,
    sample: int,
    code: Callable | None = None,
    grid: tuple[str, str] | None = None,
) -> Iterator[str]:
    """The report in `fmt`, in pieces (a large json report streams); `code`: the files an
    html report shows code from (`code_sources`); `grid`: the grid's axes (--grid)."""
    if isinstance(report, Parts) and fmt != "html":  # html: one page holds them all
        one = lambda part: "".join(chunks(part, fmt, sample, grid=part_grid(part, grid)))  # noqa: E731
        yield parts.render(report, fmt, one, sample)
        return
    found = formats.render("diff", fmt, report, formats.Shown(sample, code, grid))
    if isinstance(found, str):
        yield found
    else:
        yield from found


def write_file(path: str, text_: str | Iterator[str], fmt: str = "text") -> None:
    """Write one `--output FORMAT=PATH`; a text report is written as standard output
    shows it (`harness.cli.streams.Inert`): a log that prints the file runs no command."""
    if fmt == "text":
        text_ = inert_text(text_)
    try:
        write_output(path, text_, commands=fmt == "github")  # "-": standard output
    except OSError as exc:
        raise HarnessError(f"--output {path}: cannot write it ({exc.strerror or exc})") from None


def _output(text_: str) -> tuple[str, str]:
    fmt, sep, path = text_.partition("=")
    if not sep or fmt not in DIFF_FORMATS or not path:
        raise argparse.ArgumentTypeError(
            f"expected FORMAT=FILE with FORMAT one of {', '.join(DIFF_FORMATS)}, got {text_!r}"
        )
    return fmt, path
