"""`harness comment`: post the diff report as one sticky PR comment."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from harness.cli.options import GRID_HELP, add_command
from harness.cli.progress import progress
from harness.errors import HarnessError
from harness.option_values import grid_axes, nonnegative, slug_argument

if TYPE_CHECKING:
    from harness.report.document import DiffDocument

HELP = """\
Create or update one comment on a pull request with the markdown report made
from a JSON report (harness diff --format json). The comment is found again by
a hidden marker naming the matrix, so each run edits it in place; when
outcomes no longer change it says so; with no change and no comment yet,
nothing is posted. It never evaluates code: run it in a job that holds the
write token, on the report artifact of the job that evaluated the PR.

The API is GITHUB_API_URL (default https://api.github.com) and the token
GITHUB_TOKEN, which is never printed; without GITHUB_TOKEN, nothing is sent
(exit 2). --dry-run posts nothing: it prints what it would do and the comment's
body. It needs no token: with none, it sends no request at all (so it cannot
tell whether the PR has a comment to update); with one, it reads the PR's
comments to say whether it would create, update or skip.

Exit status: 0 posted, skipped or dry run; 2 error (a report of another
format_version is refused: comment with the harness version that wrote it)."""


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "comment", "post the report as one sticky PR comment", HELP)
    parser.add_argument("--repo-slug", required=True, metavar="OWNER/REPO", type=slug_argument,
                        help="the repository the pull request belongs to")  # fmt: skip
    parser.add_argument("--pr", required=True, type=_positive, metavar="N",
                        help="the pull request number")  # fmt: skip
    parser.add_argument("--report", required=True, metavar="FILE",
                        help="the JSON report of harness diff --format json")  # fmt: skip
    parser.add_argument("--head-sha", metavar="SHA",
                        help="refuse to comment unless the PR's head is this commit (guards "
                        "against a report from another PR's run)")  # fmt: skip
    parser.add_argument("--details-url", metavar="URL",
                        help="a link to the full report (default: this workflow run, from "
                        "GITHUB_SERVER_URL, GITHUB_REPOSITORY and GITHUB_RUN_ID)")  # fmt: skip
    parser.add_argument("--sample", type=nonnegative, default=10, metavar="N",
                        help="changed cells in the collapsed sample (default 10)")  # fmt: skip
    parser.add_argument("--grid", type=grid_axes, metavar="ROWS,COLUMNS", help=GRID_HELP)
    parser.add_argument("--dry-run", action="store_true",
                        help="post nothing: print what would be done and the comment's body "
                        "(no token needed)")  # fmt: skip
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness.github.client import GitHub
    from harness.github.comment import check_head, intend, load_report, post

    doc = load_report(args.report)
    details = args.details_url or _run_url()
    if not _has_token():
        if args.dry_run:
            return dry_run_offline(args, doc, details)
        raise HarnessError(
            "harness comment needs GITHUB_TOKEN (a token that may write the pull request's "
            "comments) and it is not set: nothing was sent; set it, or pass --dry-run to "
            "see the comment"
        )
    with progress(args, f"comment: asking the GitHub API about #{args.pr}"):
        client = GitHub(args.repo_slug)
        if args.head_sha:
            check_head(client, args.pr, args.head_sha)
        if args.dry_run:
            intent = intend(client, args.pr, doc, args.sample, details, args.grid)
        else:
            posted = post(client, args.pr, doc, args.sample, details, args.grid)
    if args.dry_run:
        return dry_run_online(args, intent)
    if posted.action == "skipped":
        print(f"no cell changes and no earlier comment on #{args.pr}: nothing posted")
    else:
        print(f"{posted.action} the comment on #{args.pr}: {posted.url or '(no url returned)'}")
    return 0


def dry_run_offline(args: argparse.Namespace, doc: DiffDocument, details: str | None) -> int:
    """--dry-run without a token: the body, and what is known of the action without
    reading the PR's comments (no request at all)."""
    from harness.github.comment import body_for, worth_posting

    body = body_for(doc, args.sample, details, args.grid)
    maybe = "create or update the comment" if worth_posting(doc) else (
        "update an earlier comment, or post nothing if there is none"
    )  # fmt: skip
    _print_dry(f"would {maybe} on #{args.pr} (no GITHUB_TOKEN: the comments were not read)", body)
    return 0


def dry_run_online(args: argparse.Namespace, intent) -> int:
    """--dry-run with a token: what the PR's comments (read, never written) say it would do."""
    said = {
        "create": f"would create the comment on #{args.pr}",
        "update": f"would update comment {intent.number} on #{args.pr}",
        "skip": f"would post nothing on #{args.pr} (no cell changes and no earlier comment)",
    }[intent.action]
    _print_dry(said, intent.body)
    return 0


def _print_dry(said: str, body: str) -> None:
    print(f"dry run, nothing posted: {said}; the body:\n")
    print(body, end="" if body.endswith("\n") else "\n")


def _has_token() -> bool:
    """Whether GITHUB_TOKEN holds anything (surrounding whitespace aside)."""
    return bool(os.environ.get("GITHUB_TOKEN", "").strip())


def _run_url() -> str | None:
    server, repo, run = (os.environ.get(k) for k in
                         ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))  # fmt: skip
    return f"{server}/{repo}/actions/runs/{run}" if server and repo and run else None


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"expected a pull request number, got {text!r}")
    return int(text)
