"""The GitHub Actions workflows: what they promise, GitHub's schemas, and their jobs run as
GitHub runs them (tests/actionrun.py), on a PR-shaped history.

The evaluating job runs this repository's action (`uses: ./`, read from this
checkout); the comment job installs harness with the same action and posts to
a loopback stand-in for the API.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.github.comment import marker
from harness.matrix.load import load_matrix
from tests.actionrun import STAND_INS, Run, Runner, condition
from tests.apiserver import Comments, Reply
from tests.conftest import TOKEN
from tests.test_action import INSTALL, PullRequest, at, open_pr

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
EVALUATE = WORKFLOWS / "override-matrix.yml"
COMMENT = WORKFLOWS / "override-matrix-comment.yml"
ACTION = ROOT / "action.yml"
ADOPTION = "OWNER/override-harness@vX"  # how docs/ci.md names the published action


def load(path: Path) -> dict:
    return parse(path.read_text())


def parse(text: str) -> dict:
    data = yaml.safe_load(text)
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def step(job: dict, name: str) -> dict:
    (found,) = [s for s in job["steps"] if s.get("name") == name]
    return found


def uses(job: dict, action: str) -> dict:
    (found,) = [s for s in job["steps"] if s.get("uses", "").split("@")[0] == action]
    return found


def action_inputs() -> set[str]:
    return set(yaml.safe_load(ACTION.read_text())["inputs"])


def test_the_evaluating_job_is_read_only_sees_full_history_and_runs_the_action():
    flow = load(EVALUATE)
    assert flow["name"] == "override-matrix"
    assert set(flow["on"]) == {"pull_request"}
    paths = flow["on"]["pull_request"]["paths"]
    target = load_matrix().target.path
    assert any(fnmatch.fnmatch(target, pattern.replace("**", "*")) for pattern in paths)
    assert any(p.startswith("python/sglang/srt/arg_groups/") for p in paths)  # helpers too
    assert "labeled" in flow["on"]["pull_request"]["types"]  # the ack label re-runs it
    assert flow["permissions"] == {"contents": "read"}
    job = flow["jobs"]["evaluate"]
    assert job["permissions"] == {"contents": "read"}
    checkout = uses(job, "actions/checkout")["with"]
    assert checkout["fetch-depth"] == 0 and checkout["persist-credentials"] is False
    harness = uses(job, "./")
    assert harness["uses"] == "./" and set(harness["with"]) <= action_inputs()
    assert harness["with"]["ack-label"] == "override-change-ok"


def pull_request_workflows() -> list[Path]:
    found = []
    for path in sorted(WORKFLOWS.glob("*.y*ml")):
        triggers = load(path)["on"]
        names = triggers if isinstance(triggers, list | dict) else [triggers]
        if {"pull_request", "pull_request_target"} & set(names):
            found.append(path)
    return found


READS_SETTINGS = re.compile(r"\b(vars|secrets)\s*(\.|\[)")


def test_no_pull_request_workflow_and_not_the_action_reads_variables_or_secrets():
    """GitHub passes neither to pull_request runs from forks: a setting must be in the file."""
    checked = [*pull_request_workflows(), ACTION]
    assert EVALUATE in checked and WORKFLOWS / "ci.yml" in checked
    for path in checked:
        assert not READS_SETTINGS.search(path.read_text()), path
    assert READS_SETTINGS.search("x: ${{ vars.HARNESS_SPEC }}")  # the check can fail
    assert READS_SETTINGS.search("x: ${{ secrets['TOKEN'] }}")


def test_the_commenting_job_never_runs_pr_code():
    flow = load(COMMENT)
    assert flow["on"]["workflow_run"]["workflows"] == [load(EVALUATE)["name"]]
    assert flow["permissions"] == {}
    job = flow["jobs"]["comment"]
    assert job["permissions"] == {"actions": "read", "contents": "read", "pull-requests": "write"}
    assert not READS_SETTINGS.search(COMMENT.read_text())
    checkout = uses(job, "actions/checkout")
    # The default branch (a workflow_run run's ref), never the PR's head or repository.
    assert set(checkout["with"]) == {"path", "persist-credentials"}
    assert checkout["with"]["persist-credentials"] is False
    install = uses(job, f"./{checkout['with']['path']}")
    assert install["with"] == {"install-only": "true"}
    order = [s.get("uses", s.get("name")) for s in job["steps"]]
    assert order.index(install["uses"]) < order.index("actions/download-artifact@v4")
    download = uses(job, "actions/download-artifact")["with"]
    assert download["run-id"] == "${{ github.event.workflow_run.id }}"
    post = step(job, "Post or update the comment")
    assert "harness comment" in post["run"] and '--head-sha "$EXPECTED_HEAD"' in post["run"]
    assert post["env"]["EXPECTED_HEAD"] == "${{ github.event.workflow_run.head_sha }}"
    assert [s for s in job["steps"] if "${{ github.token }}" in str(s)]  # the token is here only
    assert "github.token" not in EVALUATE.read_text()


def schema_check(schema: str, *paths: Path) -> subprocess.CompletedProcess:
    """check-jsonschema with the schema it ships (offline: nothing is downloaded)."""
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", f"vendor.{schema}",
         *map(str, paths)], capture_output=True, text=True,
    )  # fmt: skip


def adoption_examples() -> list[str]:
    """The YAML blocks of docs/ci.md that use the published action."""
    blocks = re.findall(r"```yaml\n(.*?)```", (ROOT / "docs" / "ci.md").read_text(), flags=re.S)
    return [block for block in blocks if ADOPTION in block]


def test_the_workflows_the_action_and_the_docs_examples_match_githubs_schemas(tmp_path):
    examples = []
    for n, text in enumerate(adoption_examples()):
        examples.append(tmp_path / f"example-{n}.yml")
        examples[-1].write_text(text)
    assert len(examples) == 2
    workflows = [*sorted(WORKFLOWS.glob("*.yml")), *examples]
    done = schema_check("github-workflows", *workflows)
    assert done.returncode == 0, done.stdout + done.stderr
    done = schema_check("github-actions", ACTION)
    assert done.returncode == 0, done.stdout + done.stderr

    broken = tmp_path / "action.yml"  # a composite run step without `shell`: GitHub refuses it
    broken.write_text(ACTION.read_text().replace("      shell: bash\n", "", 1))
    assert schema_check("github-actions", broken).returncode == 1


def test_the_docs_examples_are_the_repositorys_workflows_with_the_published_action():
    evaluate, comment = (parse(text) for text in adoption_examples())
    for example in (evaluate, comment):
        assert not READS_SETTINGS.search(yaml.safe_dump(example))
        for s in (s for job in example["jobs"].values() for s in job["steps"]):
            if s.get("uses") == ADOPTION:
                assert set(s.get("with", {})) <= action_inputs()
    ours = load(EVALUATE)
    assert evaluate["on"]["pull_request"] == ours["on"]["pull_request"]
    assert evaluate["permissions"] == ours["permissions"]
    assert (
        uses(evaluate["jobs"]["evaluate"], "actions/checkout")["with"]
        == uses(ours["jobs"]["evaluate"], "actions/checkout")["with"]
    )
    theirs, mine = comment["jobs"]["comment"], load(COMMENT)["jobs"]["comment"]
    assert comment["on"] == load(COMMENT)["on"] and theirs["if"] == mine["if"]
    assert uses(theirs, ADOPTION.split("@")[0])["with"] == {"install-only": "true"}
    assert uses(theirs, "actions/download-artifact") == uses(mine, "actions/download-artifact")
    assert theirs["steps"][-1]["env"] == step(mine, "Post or update the comment")["env"]
    assert not [s for s in theirs["steps"] if s.get("uses", "").startswith("actions/checkout")]


def machine(workspace: Path, tmp_path: Path, event: dict, **fields) -> Runner:
    temp = tmp_path / f"temp-{workspace.name}"
    temp.mkdir()
    harness_bin = str(Path(sys.executable).parent)
    return Runner(
        workspace=workspace, temp=temp, event=event, actions={**STAND_INS, "./": ROOT},
        env={"PATH": f"{harness_bin}{os.pathsep}{os.environ['PATH']}"},
        replaced={INSTALL: "harness --version"}, artifacts=tmp_path / "artifacts", **fields,
    )  # fmt: skip


@pytest.fixture
def pr(history, tmp_path) -> PullRequest:
    return open_pr(history, tmp_path / "checkout", at(history, "pr30835"))


def evaluate(pr: PullRequest, tmp_path: Path, *labels: str) -> tuple[Run, Runner]:
    runner = machine(pr.workspace, tmp_path, pr.event(*labels))
    return runner.run_job(load(EVALUATE)["jobs"]["evaluate"]), runner


def test_the_job_fails_on_a_change_until_the_label_acknowledges_it(pr, tmp_path):
    run, runner = evaluate(pr, tmp_path)
    assert run.failed
    gate = run.step("gate")
    assert gate.code == 1 and "add the label 'override-change-ok'" in gate.stdout
    assert run.step("harness").outputs == {"changed": "true", "status": "1",
                                           "inferred-status": "1"}  # fmt: skip
    assert run.step("actions/checkout@v4").inputs["fetch-depth"] == "0"
    assert (runner.artifacts / "override-report" / "comment.json").is_file()

    labelled = tmp_path / "labelled"
    labelled.mkdir()
    run, _ = evaluate(pr, labelled, "override-change-ok")
    assert not run.failed
    assert run.step("harness").outputs["changed"] == "true"


def test_the_comment_job_posts_one_comment_and_updates_it(pr, tmp_path, github_api):
    evaluate(pr, tmp_path)  # leaves the override-report artifact
    slug = "octo/sglang"
    comments = Comments(github_api, slug, 30835)
    github_api.on("GET", f"/repos/{slug}/pulls/30835", Reply(body={"head": {"sha": pr.head}}))
    event = {"workflow_run": {"id": 5, "event": "pull_request", "conclusion": "failure",
                              "head_sha": pr.head,
                              "html_url": "https://github.invalid/octo/sglang/actions/runs/5"}}  # fmt: skip
    job = load(COMMENT)["jobs"]["comment"]
    for n in range(2):
        workspace = tmp_path / f"comment-job-{n}"
        workspace.mkdir()
        runner = machine(workspace, tmp_path, event, token=TOKEN, event_name="workflow_run")
        runner.actions["./override-harness"] = ROOT  # where the checkout step put the action
        assert condition(job["if"], {"github": runner.github()}, lambda _: True)
        run = runner.run_job(job)
        assert not run.failed, [(s.name, s.stdout + s.stderr) for s in run.all_steps()]
        ran = [s.name for s in run.step("Install harness").inner if s.outcome != "skipped"]
        assert ran == ["Check the inputs", "Set up Python", INSTALL]
        post = run.step("Post or update the comment")
        assert TOKEN not in post.stdout + post.stderr
        assert run.step("actions/download-artifact@v4").inputs["run-id"] == "5"
    (only,) = comments.items
    assert only["body"].startswith(marker("sglang-fa4-page-size"))
    artifacts = "https://github.invalid/octo/sglang/actions/runs/5#artifacts"  # the HTML report
    assert f"[Full report]({artifacts})" in only["body"]
    methods = [s.method for s in github_api.seen if s.method in ("POST", "PATCH")]
    assert methods == ["POST", "PATCH"]


def test_the_comment_job_skips_runs_that_were_not_pull_requests():
    job = load(COMMENT)["jobs"]["comment"]
    for event, conclusion in (("push", "success"), ("pull_request", "cancelled")):
        run = {"workflow_run": {"event": event, "conclusion": conclusion}}
        assert not condition(job["if"], {"github": {"event": run}}, lambda _: True)
