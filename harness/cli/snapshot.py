"""`harness snapshot [REV] -o FILE`: a revision's whole outcome table, as a baseline file."""

from __future__ import annotations

import argparse

from harness.cli.options import add_command, add_evaluation_options, set_up
from harness.cli.progress import progress
from harness.errors import CannotTell

HELP = """\
Write the outcome table of the matrix's target at REV (default HEAD; a
release such as pypi:sglang==0.5.23 works too) as a baseline file: per
outcome, the cubes of cells that have it (exact, disjoint, in a fixed order,
one per line). The pytest entry point compares a revision
with it:

  harness snapshot HEAD -o tests/override-baseline.json
  pytest --override-matrix sglang-fa4-page-size \\
         --override-baseline tests/override-baseline.json

Exit status: 0 written, 2 error, 4 cannot tell: the target cannot be
evaluated at REV (or is absent there), and nothing is written."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "snapshot", "write a revision's outcomes as a baseline", HELP)
    parser.add_argument("rev", nargs="?", default="HEAD", metavar="REV")
    parser.add_argument("-o", "--output", default="-", metavar="FILE",
                        help="where to write it (default: standard output)")  # fmt: skip
    add_evaluation_options(parser, run, formats=None, where=False)


def run(args: argparse.Namespace) -> int:
    from harness.report import baseline

    with progress(args, "snapshot: reading the revision") as bar:
        session = set_up(args)
        revision = session.resolve(args.rev)
        bar.stage(f"snapshot: evaluating {revision.label}")
        state = session.versions().at(revision)
    if not state.evaluable:  # a baseline of no outcome compares nothing: say so, write none
        raise CannotTell(f"{revision.label}: nothing written: {state.reason}")
    baseline.snapshot(session.matrix, revision, state.table, args.output)
    return 0
