"""#N and --pr N through the GitHub API, against a real HTTP server on loopback."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from harness.testing.sglang_fixture import OVERRIDES, Overrides, overrides_source
from tests import oracle
from tests.apiserver import Reply
from tests.conftest import TOKEN, git_out, one_line_error, rev_sha, run_cli

PULL = "/repos/octo/sglang/pulls/{}"
PULL_OR = "/repos/o/r/pulls/{}"
FORWARD = oracle.changed_between(False, True)


@pytest.fixture
def upstream(tmp_path) -> dict:
    """An upstream repository: main with a squash-merged change whose subject has no (#N),
    and PR #7's head, reachable only as refs/pull/7/head."""
    repo = FixtureRepo(tmp_path / "upstream")
    shas = {"base": repo.commit("Add passes", {OVERRIDES: overrides_source(Overrides())})}
    repo.git("checkout", "-q", "-b", "feature")
    shas["pr7"] = repo.commit("Full graphs keep their page size", {
        OVERRIDES: overrides_source(Overrides(full_clause=True)),
    })  # fmt: skip
    repo.git("update-ref", "refs/pull/7/head", shas["pr7"])
    repo.git("checkout", "-q", "main")
    repo.git("branch", "-q", "-D", "feature")
    shas["squash"] = repo.commit("Restrict FA4 pages (no number in this subject)", {
        OVERRIDES: overrides_source(Overrides(full_clause=True, chunk=4096)),
    })  # fmt: skip
    shas["root"] = repo.root
    return shas


@pytest.fixture
def local(upstream, tmp_path) -> Path:
    target = tmp_path / "local"
    subprocess.run(
        ["git", "clone", "-q", "--no-local", str(upstream["root"]), str(target)], check=True
    )
    return target


def pull(number: int, merged: bool, merge_commit=None, head="0" * 40, base=None, url=None):
    return {
        "number": number,
        "merged": merged,
        "merge_commit_sha": merge_commit,
        "head": {"sha": head},
        "base": {"sha": base, "repo": {"clone_url": url}},
    }


def diff_json(repo: Path, *args: str) -> tuple[int, dict, str]:
    result = run_cli("diff", "--repo", str(repo), "--format", "json", "--github", "octo/sglang",
                     *args)  # fmt: skip
    assert TOKEN not in result.out + result.err
    return result.code, json.loads(result.out) if result.out else {}, result.err


def changed(report: dict) -> dict:
    return {
        oracle.key(i["cell"]): (i["base"]["page_size"], i["head"]["page_size"])
        for i in report["changed"]
    }


def test_a_merged_pr_is_its_merge_commit(github_api, upstream, local):
    github_api.on("GET", PULL.format(42), Reply(body=pull(42, True, upstream["squash"])))
    code, report, _ = diff_json(local, "#42^", "#42")
    assert code == 1
    assert rev_sha(report["head"]) == {"rev": "#42", "sha": upstream["squash"]}
    assert report["base"]["sha"] == upstream["base"]
    assert changed(report) == FORWARD
    (seen,) = {(s.method, s.path) for s in github_api.seen}
    assert seen == ("GET", PULL.format(42))
    assert github_api.seen[0].headers["Authorization"] == f"Bearer {TOKEN}"


def test_an_open_pr_is_fetched_as_refs_pull_without_writing_a_ref(github_api, upstream, local):
    refs_before = git_out(local, "for-each-ref")
    assert subprocess.run(["git", "cat-file", "-e", upstream["pr7"]], cwd=local).returncode != 0
    github_api.on("GET", PULL.format(7), Reply(body=pull(
        7, False, head=upstream["pr7"], base=upstream["squash"], url=str(upstream["root"]),
    )))  # fmt: skip
    code, report, _ = diff_json(local, "--pr", "7")
    assert code == 1
    assert rev_sha(report["head"]) == {"rev": "#7", "sha": upstream["pr7"]}
    assert rev_sha(report["base"]) == {
        "rev": "#7 base",
        "sha": upstream["base"],
    }  # where it branched
    assert changed(report) == FORWARD
    assert git_out(local, "for-each-ref") == refs_before
    assert not (local / ".git" / "FETCH_HEAD").exists()


def test_offline_resolution_comes_first(github_api, history):
    code, report, _ = diff_json(history.root, "--pr", "30835")
    assert code == 1 and report["head"]["sha"] == history.shas["pr30835"]
    assert github_api.seen == []


def test_server_errors_and_rate_limits_are_retried(github_api, upstream, local):
    ok = Reply(body=pull(42, True, upstream["squash"]))
    reset = str(int(time.time()) + 1)
    github_api.on("GET", PULL.format(42),
        Reply(503), Reply(429, headers={"Retry-After": "1"}),
        Reply(403, headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}), ok,
    )  # fmt: skip
    code, report, err = diff_json(local, "#42^", "#42")
    assert (code, report["head"]["sha"], err) == (1, upstream["squash"], "")
    assert len(github_api.seen) == 4


def test_a_slow_answer_is_retried(github_api, upstream, local, monkeypatch):
    monkeypatch.setenv("HARNESS_HTTP_TIMEOUT", "0.5")
    ok = Reply(body=pull(42, True, upstream["squash"]))
    github_api.on("GET", PULL.format(42), Reply(body={}, delay=2.0), ok)
    code, report, _ = diff_json(local, "#42^", "#42")
    assert (code, report["head"]["sha"]) == (1, upstream["squash"])
    assert len(github_api.seen) == 2


@pytest.mark.parametrize(
    "reply, words",
    [
        (Reply(401, {"message": "Bad credentials"}), ["HTTP 401", "GITHUB_TOKEN"]),
        (Reply(404, {"message": "Not Found"}), ["PR #42 of octo/sglang not found", "--github"]),
        (Reply(403, {"message": "Forbidden"}), ["HTTP 403", "permission"]),
        (Reply(429, headers={"Retry-After": "3600"}), ["rate limiting", "3600 s"]),
        (Reply(502), ["failed after 4 attempts", "HTTP 502"]),
    ],
    ids=["401", "404", "403", "rate-limit-too-long", "5xx-persists"],
)
@pytest.mark.usefixtures("no_retry_pauses")
def test_refusals_are_one_line_without_the_token(github_api, local, reply, words):
    github_api.on("GET", PULL.format(42), reply)
    result = run_cli("diff", "#42^", "#42", "--repo", str(local), "--github", "octo/sglang")
    line = one_line_error(result)
    assert TOKEN not in line
    for word in words:
        assert word in line
    assert len(github_api.seen) == (4 if reply.status >= 500 else 1)


def test_an_unknown_pr_without_github_suggests_it(local):
    line = one_line_error(run_cli("diff", "--pr", "42", "--repo", str(local)))
    assert "--github OWNER/REPO" in line


def test_history_and_bisect_accept_github_for_their_endpoints(github_api, upstream, local):
    github_api.on("GET", PULL.format(42), Reply(body=pull(42, True, upstream["squash"])))
    result = run_cli("bisect", upstream["base"], "#42", "--repo", str(local),
                     "--github", "octo/sglang", "--format", "json")  # fmt: skip
    assert result.code == 1  # found
    assert json.loads(result.out)["culprit"]["sha"] == upstream["squash"]
    result = run_cli("history", "#42^..#42", "--repo", str(local), "--github", "octo/sglang")
    assert result.code == 1 and upstream["squash"][:10] in result.out


def test_an_unfetchable_open_pr_is_one_line(github_api, upstream, local, tmp_path):
    github_api.on("GET", PULL_OR.format(8), Reply(body=pull(
        8, False, head="1" * 40, base=upstream["squash"], url=str(tmp_path / "gone"),
    )))  # fmt: skip
    line = one_line_error(run_cli("diff", "--pr", "8", "--repo", str(local), "--github", "o/r"))
    assert "cannot fetch refs/pull/8/head" in line and "gone" in line
