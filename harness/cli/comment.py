"""`harness comment`: post the diff report as one sticky PR comment."""

from __future__ import annotations

import argparse
import os

from harness.cli.options import add_command, nonnegative, slug_argument

HELP = """\
Create or update one comment on a pull request with the markdown report made
from a JSON report (harness diff --format json). The comment is found again by
a hidden marker naming the matrix, so each run edits it in place; when
outcomes no longer change it says so; with no change and no comment yet,
nothing is posted. It never evaluates code: run it in a job that holds the
write token, on the report artifact of the job that evaluated the PR.

The API is GITHUB_API_URL (default https://api.github.com) and the token
GITHUB_TOKEN, which is never printed."""


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
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness.github.client import GitHub
    from harness.github.comment import check_head, load_report, post

    doc = load_report(args.report)
    client = GitHub(args.repo_slug)
    if args.head_sha:
        check_head(client, args.pr, args.head_sha)
    posted = post(client, args.pr, doc, args.sample, args.details_url or _run_url())
    if posted.action == "skipped":
        print(f"no cell changes and no earlier comment on #{args.pr}: nothing posted")
    else:
        print(f"{posted.action} the comment on #{args.pr}: {posted.url or '(no url returned)'}")
    return 0


def _run_url() -> str | None:
    server, repo, run = (os.environ.get(k) for k in
                         ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))  # fmt: skip
    return f"{server}/{repo}/actions/runs/{run}" if server and repo and run else None


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"expected a pull request number, got {text!r}")
    return int(text)
