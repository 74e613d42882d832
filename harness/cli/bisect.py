"""`harness bisect GOOD BAD`: the first commit whose outcomes differ from GOOD's."""

from __future__ import annotations

import argparse
import sys

from harness.cli.options import add_command, add_evaluation_options, set_up

HELP = """\
Find the first commit between GOOD and BAD whose outcomes differ from GOOD's.

  harness bisect '#30835^' main
  harness bisect v0.5.0 HEAD --where platform=sm100 --where attention_backend=fa4
  harness bisect pypi:sglang==0.5.16 pypi:sglang==0.5.23   (over the releases)

A binary search over the commits that change the target file, reading each
from git: nothing is checked out. --where limits the comparison to some cells
(repeatable, one axis each). A commit that cannot be evaluated is skipped, as
`git bisect skip` does; when skipped commits leave the answer open, every
candidate is listed. Each step is printed as it is decided.

Exit status: 0 found (a culprit, or candidates), 1 no selected cell differs
between GOOD and BAD, 2 error."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "bisect", "find the commit that changed outcomes", HELP)
    parser.add_argument("good", metavar="GOOD", help="a revision with the old outcomes")
    parser.add_argument("bad", metavar="BAD", help="a later revision with changed outcomes")
    parser.add_argument(
        "--first-parent", action="store_true", help="search the first-parent chain only"
    )
    add_evaluation_options(parser, run)


def run(args: argparse.Namespace) -> int:
    from harness.report import bisect as report
    from harness.scan.bisect import bisect

    setup = set_up(args)
    matrix, repo, where = setup.matrix, setup.repo, setup.where
    good, bad = setup.resolve(args.good), setup.resolve(args.bad)
    versions = setup.versions()
    live = args.format == "text"
    steps = 0

    def show(step) -> None:  # the header waits for GOOD and BAD to pass their checks
        nonlocal steps
        steps += 1
        if steps == 1:
            _write(report.header(matrix, good, bad) + "\n")
        _write(report.step_line(steps, step) + "\n")

    result = bisect(repo, versions, good, bad, where, args.first_parent, show if live else None)
    args.status = 0 if result.found else 1  # the answer, even if the reader goes away
    if live:
        head = "\n" if steps else report.header(matrix, good, bad) + "\n"
        _write(head + report.conclusion_text(matrix, result))
    elif args.format == "json":
        _write(report.render_json(matrix, result))
    else:
        _write(report.render_markdown(matrix, result))
    return args.status


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
