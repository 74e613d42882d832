"""`harness passes [REV]`: every registered pass, and what stands between it and an evaluation."""

from __future__ import annotations

import argparse
import sys

from harness.cli.options import add_command, add_evaluation_options, set_up
from harness.cli.progress import progress
from harness.errors import HarnessError
from harness.matrix.model import Matrix
from harness.report import formats

PIPELINE_MATRIX = "sglang-page-size-pipeline"

HELP = f"""\
List every function registered with @register_post_process in the target
file at REV (default HEAD), in file order, with its line, the fields it
declares, the view attributes and world names it reads (through the helpers
it calls, in any file of the repository), and what stands between it and an
evaluation under --matrix (default: {PIPELINE_MATRIX}; on SGLang's own
releases, --matrix sglang-resolution answers every pass):

  needs field X   the matrix does not declare view attribute X: adding it
                  under `fields:` or `axes:` is all it takes
  blocked by N    neither the world nor the repository can supply the name N
                  (the reason names the file, the line and the fix)

Each pass also shows where SGLang runs it: not reached from the entry point
(then it runs last), the `if` a handler runs it under, and the cells the
matrix's guard runs it on; and, run alone over the matrix, the conditions (in
it and its helpers) no cell takes both ways: a change there would be a blind
spot of `harness diff`.

Exit status: 0 every pass evaluates, 1 some do not, 2 error."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "passes", "show how much of the resolution code evaluates", HELP)
    parser.add_argument("rev", nargs="?", default="HEAD", metavar="REV")
    shown = formats.formats("passes")
    add_evaluation_options(parser, run, shown, where=False, matrix=PIPELINE_MATRIX)


def refuse_entry(matrix: Matrix) -> None:
    """An entry's target file registers no pass (SGLang's pipeline calls those of
    `overrides.py`): listing none there would say nothing."""
    target = matrix.target
    if target.entry:
        raise HarnessError(
            f"--matrix {matrix.name} targets an entry ({target.passes[0]} in "
            f"{target.path}), which runs the passes it calls; passes lists those a target file "
            f"registers: use --matrix sglang-resolution, or a matrix whose target.path is that file"
        )


def run(args: argparse.Namespace) -> int:
    from harness.scan.passes import passes_at

    with progress(args, "passes: reading the revision") as bar:
        session = set_up(args)
        refuse_entry(session.matrix)
        revision = session.resolve(args.rev)
        bar.stage(f"passes: surveying and running the passes at {revision.label}")
        reports = passes_at(session.versions(), revision)
    sys.stdout.write(formats.text("passes", args.format, session.matrix, revision, reports))
    return 0 if all(r.evaluable for r in reports) else 1
