"""`harness bisect GOOD BAD`: the first commit whose outcomes differ from GOOD's."""

from __future__ import annotations

import argparse
import sys

from harness import gitio
from harness.cli.options import add_command, add_evaluation_options, set_up
from harness.cli.progress import Progress, progress
from harness.errors import HarnessError
from harness.releases.ranges import resolve_range
from harness.report import formats
from harness.session import Session

HELP = """\
Find the first commit between GOOD and BAD whose outcomes differ from GOOD's.

  harness bisect '#30835^' main
  harness bisect main...feature   (GOOD: where feature left main, BAD: feature)
  harness bisect v0.5.0 HEAD --where platform=sm100 --where attention_backend=fa4
  harness bisect pypi:sglang==0.5.16 pypi:sglang==0.5.23   (over the releases)

A binary search over the commits that change the target file, reading each
from git: nothing is checked out. --where limits the comparison to some cells
(repeatable, one axis each). A commit that cannot be evaluated is skipped, as
`git bisect skip` does; when skipped commits leave the answer open, every
candidate is listed. Each step is printed as it is decided. One range stands
for both, as `harness diff` reads it: GOOD..BAD, or A...B for A and B's merge
base as GOOD and B as BAD. GOOD may predate the target (the search then finds
where it appeared).

Exit status, as diff's: 0 no selected cell differs between GOOD and BAD, and
the matrix saw all that changed between them; 1 found the first bad commit;
2 error (a revision that does not exist, GOOD not an ancestor of BAD, a bad
--where); 4 cannot tell: GOOD or BAD cannot be evaluated, or BAD has no target
(one line says why), or skipped commits hide which of the listed candidates
changed outcomes (every commit between, when none could run), or no cell
differs but the code changed where the matrix did not take every way (the
blind spots, listed as `harness diff GOOD BAD` lists them)."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "bisect", "find the commit that changed outcomes", HELP)
    parser.add_argument(
        "good", metavar="GOOD", help="a revision with the old outcomes, or a range GOOD..BAD, A...B"
    )
    parser.add_argument(
        "bad", metavar="BAD", nargs="?", help="a later revision with changed outcomes"
    )
    parser.add_argument(
        "--first-parent", action="store_true", help="search the first-parent chain only"
    )
    add_evaluation_options(parser, run, formats.formats("bisect"))


def run(args: argparse.Namespace) -> int:
    with progress(args, "bisect: reading the revisions") as bar:
        return search(args, bar)


def search(args: argparse.Namespace, bar: Progress) -> int:
    """The search, its steps written as they are decided (text), then the answer; what is
    written goes around the progress line."""
    from harness.report import bisect as report
    from harness.scan.bisect import bisect

    session = set_up(args)
    matrix, repo, where = session.matrix, session.repo, session.where
    good, bad = ends(session, args.good, args.bad)
    versions = session.versions()
    bar.stage(f"bisect: searching between {good.label} and {bad.label}")
    live = args.format == "text"
    steps = 0

    def show(step) -> None:  # the header waits for GOOD and BAD to pass their checks
        nonlocal steps
        steps += 1
        if steps == 1:
            _write(bar, report.header(matrix, good, bad) + "\n")
        _write(bar, report.step_line(steps, step) + "\n")

    result = bisect(repo, versions, good, bad, where, args.first_parent, show if live else None)
    args.status = report.status_of(result)  # the answer, even if the reader goes away
    head = ("\n" if steps else report.header(matrix, good, bad) + "\n") if live else ""
    _write(bar, head + formats.text("bisect", args.format, matrix, result))
    return args.status


def ends(session: Session, good: str, bad: str | None) -> tuple[gitio.Revision, gitio.Revision]:
    """GOOD and BAD as given, or the two a range names (`harness.releases.ranges`)."""
    if bad is not None:
        return session.resolve(good), session.resolve(bad)
    ranged = resolve_range(session.repo, session.resolve, good)
    if ranged is None:
        raise HarnessError(
            f"harness bisect {good}: give GOOD and BAD, or one range GOOD..BAD or A...B "
            "(from where B left A)"
        )
    return ranged


def _write(bar: Progress, text: str) -> None:
    with bar.paused():
        sys.stdout.write(text)
        sys.stdout.flush()
