"""Pull requests to commits: offline by subject, online through the GitHub API.

A merged PR is its merge commit (the squash commit, on SGLang). An open PR
is its head, fetched as `refs/pull/N/head` into the object store when the
local repository lacks it (no ref and no FETCH_HEAD are written), and its
base, for `diff --pr N`, is where its head left the base branch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from harness import gitio
from harness.errors import HarnessError
from harness.gitcmd import Repo
from harness.github.client import GitHub


@dataclass(frozen=True)
class PullRequest:
    number: int
    merged: bool
    merge_commit: str | None
    head: str
    base: str | None
    clone_url: str | None


SHA = re.compile(r"^[0-9a-f]{40}$")


def fetch_pull(client: GitHub, number: int) -> PullRequest:
    what = f"PR #{number} of {client.slug}"
    data = client.get_object(client.repo_path(f"pulls/{number}"), what)
    try:
        return _pull_from(number, data)
    except (KeyError, TypeError, AttributeError, ValueError):
        raise HarnessError(
            f"the GitHub API at {client.base} answered PR #{number} without the expected "
            "fields (head.sha, merged): is GITHUB_API_URL a GitHub API?"
        ) from None


def _pull_from(number: int, data: dict[str, Any]) -> PullRequest:
    """The fields harness uses, each checked: what reaches git is a sha or a plain URL."""
    base = data.get("base") or {}
    return PullRequest(
        number,
        bool(data.get("merged") or data.get("merged_at")),
        _sha(data.get("merge_commit_sha"), optional=True),
        _sha(data["head"]["sha"]),
        _sha(base.get("sha"), optional=True),
        _url((base.get("repo") or {}).get("clone_url")),
    )


def _sha(value: Any, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not SHA.match(value):
        raise ValueError("not a sha")
    return value


def _url(value: Any) -> str | None:
    """A clone URL git may fetch from: no option (`-...`), no remote helper (`ext::`)."""
    if value is None:
        return None
    if not isinstance(value, str) or value.startswith("-") or "::" in value:
        raise ValueError("not a clone URL")
    return value


class OnlinePRs:
    """PR numbers to local commits through the API, fetching open PRs' heads if needed."""

    def __init__(self, repo: Repo, client: GitHub) -> None:
        self.repo, self.client = repo, client
        self.pulls: dict[int, PullRequest] = {}

    def pull(self, number: int) -> PullRequest:
        if number not in self.pulls:
            self.pulls[number] = fetch_pull(self.client, number)
        return self.pulls[number]

    def commit(self, number: int) -> str:
        """The commit #number stands for: its merge commit when merged, else its head."""
        pr = self.pull(number)
        if pr.merged:
            if not pr.merge_commit or not gitio.has_commit(self.repo, pr.merge_commit):
                raise HarnessError(
                    f"#{number} was merged as {pr.merge_commit or '(unknown)'}, which is not in "
                    f"{gitio.where_of(self.repo)}: git fetch the base branch"
                )
            return pr.merge_commit
        if not gitio.has_commit(self.repo, pr.head):
            gitio.fetch_objects(self.repo, self._source(pr), f"refs/pull/{number}/head")
            if not gitio.has_commit(self.repo, pr.head):
                raise HarnessError(
                    f"#{number}: fetched refs/pull/{number}/head but its head {pr.head[:10]} "
                    "is still missing; the PR may have moved: retry"
                )
        return pr.head

    def base_of(self, number: int, head: str) -> str:
        """Where an open PR's head left its base branch (the parent of a merged one)."""
        pr = self.pull(number)
        if pr.merged or not pr.base:
            return f"{head}^"
        if not gitio.has_commit(self.repo, pr.base):
            raise HarnessError(
                f"#{number}: its base {pr.base[:10]} is not in {gitio.where_of(self.repo)}: "
                "git fetch the base branch"
            )
        found = gitio.merge_base(self.repo, pr.base, head)
        if found is None:
            raise HarnessError(f"#{number}: its head and base share no history")
        return found

    def _source(self, pr: PullRequest) -> str:
        remote = gitio.remote_for(self.repo, self.client.slug)
        if remote:
            return remote
        if pr.clone_url:
            return pr.clone_url
        raise HarnessError(
            f"#{pr.number}: no remote points at {self.client.slug} to fetch its head from: "
            f"git remote add upstream https://github.com/{self.client.slug}"
        )


def pr_revisions(
    repo: Repo, number: int, online: OnlinePRs | None
) -> tuple[gitio.Revision, gitio.Revision]:
    """`diff --pr N`: (base, head). Offline: the commit ending in (#N) and its parent."""
    try:
        head = gitio.find_pr_commit(repo, number)
    except HarnessError:
        if online is None:
            raise
        head = online.commit(number)
        base = online.base_of(number, head)
    else:
        base = f"{head}^"
    return (
        replace(gitio.resolve(repo, base), expr=f"#{number} base"),
        replace(gitio.resolve(repo, head), expr=f"#{number}"),
    )
