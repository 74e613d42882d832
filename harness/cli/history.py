"""`harness history [RANGE]`: every commit that changed outcomes, and what it changed."""

from __future__ import annotations

import argparse
import re
import sys

from harness.cli.options import (
    add_command,
    add_evaluation_options,
    set_up,
)
from harness.cli.progress import progress
from harness.errors import HarnessError
from harness.report import formats

HELP = """\
List the commits that changed the outcomes of the matrix's target function.

  harness history              every commit reachable from HEAD
  harness history A..B         commits after A, up to B (either side may be
                               left out: A.. means A..HEAD)
  harness history REV          every commit reachable from REV
  harness history pypi:NAME    every release of NAME on the package index, each
                               against the one before (--releases A..B: from A
                               to B; --pre: pre-releases too)

Only commits that change the target file are considered (as git log -- PATH).
Each is compared with its first parent; a commit whose change exactly undoes
an earlier one is marked "reverts <sha> (#PR)". Commits that cannot be
evaluated (a syntax error, no such function) are listed as skipped and the
comparison carries on from the last evaluable commit. Each distinct version of
the function is evaluated once and cached on disk.

When no commit changed outcomes, blind spots are looked for between where the
scan started (the first commit's parent, else the first evaluable commit) and
the tip (for releases: the first and last evaluable one), as `harness diff`
looks for them: code that changed in the range where the matrix took a
condition one way or never, so a change there would show in no commit's
comparison. (A change made and undone inside the range is not looked for.)

Exit status: 0 no commit changed outcomes and nothing was unseen, 1 some did,
2 error, 4 cannot tell: no commit changed outcomes, but there are blind spots,
or the range's start or last commit cannot be evaluated."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "history", "list the commits that changed outcomes", HELP)
    parser.add_argument("range", nargs="?", metavar="RANGE", help="A..B, or one revision")
    parser.add_argument(
        "--releases",
        metavar="A..B",
        help="with pypi:NAME: only the releases from version A to version B (either side may "
        "be left out)",
    )
    parser.add_argument("--pre", action="store_true", help="with pypi:NAME: include pre-releases")
    parser.add_argument(
        "--first-parent",
        action="store_true",
        help="follow only the first parent of merges (the mainline's own commits)",
    )
    add_evaluation_options(parser, run, formats.formats("history"))


def run(args: argparse.Namespace) -> int:
    from harness.report.history import status_of
    from harness.scan.history import history

    session = set_up(args)
    project = _project(args)
    versions = session.versions()
    if project is not None:
        from harness.scan.releases import release_history  # only here: it loads an HTTP client

        cache, span = session.directory, args.releases
        with progress(args, "history") as bar:
            found = release_history(
                versions,
                project,
                span,
                args.pre,
                args.index_url,
                cache,
                session.where,
                bar,
                cert=args.cert,
            )
    else:
        if args.releases or args.pre:
            raise HarnessError("--releases and --pre go with a pypi:NAME range")
        text, revisions = parse_range(args.range, session.resolve)
        tip = session.resolve(revisions[-1])  # blind spots are looked for up to it
        with progress(args, "history") as bar:
            found = history(session.repo, versions, text, revisions, session.where,
                            args.first_parent, bar, tip)  # fmt: skip
    if not found.considered and project is None:
        print(
            f"harness: warning: no commit in {text} changes {session.matrix.target.path}: "
            "is --repo an SGLang clone, and --matrix the right target?",
            file=sys.stderr,
        )
    args.status = status_of(found)  # the answer, even if the reader goes away
    sys.stdout.write(formats.text("history", args.format, found))
    sys.stdout.flush()
    return args.status


def _project(args: argparse.Namespace) -> str | None:
    """NAME, when the range is `pypi:NAME` (a pin, pypi:NAME==V, is one release, not a range)."""
    text = args.range or ""
    if not text.startswith("pypi:"):
        return None
    name = text.removeprefix("pypi:")
    if "==" in name or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise HarnessError(
            f"range {text!r}: history over releases takes pypi:NAME (and --releases A..B), "
            "not a pinned version"
        )
    return name


def parse_range(text: str | None, resolve) -> tuple[str, list[str]]:
    """The range as shown, and as rev-list arguments: `A..B` -> ^A B; `B` -> B."""
    if text is None:
        return "HEAD", [resolve("HEAD").sha]
    if "..." in text:
        raise HarnessError(f"range {text!r}: symmetric ranges (A...B) are not supported; use A..B")
    if ".." not in text:
        return text, [resolve(text).sha]
    older, newer = text.split("..", 1)
    return text, [f"^{resolve(older or 'HEAD').sha}", resolve(newer or "HEAD").sha]
