"""`harness demo`: the point of the tool in one command, with no SGLang clone.

Builds a small SGLang-shaped history (our own fixture, in a temporary
directory) containing PR #30835 and its revert, then diffs #30835 against
its parent, as a maintainer would have before merging it.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from harness.cli.diff import write
from harness.cli.options import add_command
from harness.cli.progress import progress
from harness.errors import HarnessError

HELP = """\
Build a small SGLang-shaped git history in a temporary directory (with PR
#30835 and its revert among other commits) and run
`harness diff '#30835^' '#30835'` on it."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands, "demo", "diff PR #30835 against its parent on a built-in example history", HELP
    )
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="build the example repository in DIR (must not exist) and keep it, to try "
        "other commands on it",
    )
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.keep:
        root = Path(args.keep)
        if root.exists():
            raise HarnessError(f"--keep {args.keep}: already exists; name a new directory")
        return show(root, args)
    scratch = tempfile.mkdtemp(prefix="harness-demo-")
    try:
        return show(Path(scratch) / "sglang", args)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def show(root: Path, args: argparse.Namespace) -> int:
    from harness.matrix.load import DEFAULT_MATRIX
    from harness.report.model import build_report
    from harness.scan.diff import diff
    from harness.session import open_session
    from harness.testing.sglang_fixture import build_history

    fmt = args.format
    with progress(args, "demo: building the example history") as bar:
        build_history(root)
        run = open_session(DEFAULT_MATRIX, repo=str(root), no_cache=True)
        repo, base, head = run.repo, run.resolve("#30835^"), run.resolve("#30835")
        bar.stage("demo: evaluating #30835^ and #30835")
        report = build_report(diff(run.versions(), base, head))
    if fmt == "text":
        print(f"Example SGLang history in {root}:")
        print(repo.git.log("--format=  %h %s"))
        print(f"\n$ harness diff '#30835^' '#30835' --repo {root}\n")
    write(report, fmt, sample=5)
    if fmt == "text":
        print(
            "\nThe revert (#30871) flips exactly these cells back. To try more commands on "
            "this history, rerun with --keep DIR."
        )
    return 0
