"""The GitHub Actions workflows: what they promise, and their commands run as GitHub runs them.

The run steps are executed with bash, with the environment variables GitHub
sets (GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, the step's env), on a fixture PR;
the comment workflow posts to a loopback stand-in for the API.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.github.comment import marker
from harness.matrix.load import load_matrix
from tests import oracle
from tests.apiserver import Comments, Reply
from tests.conftest import TOKEN, git_out

ROOT = Path(__file__).resolve().parent.parent
EVALUATE = ROOT / ".github" / "workflows" / "override-matrix.yml"
COMMENT = ROOT / ".github" / "workflows" / "override-matrix-comment.yml"


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def step(job: dict, name: str) -> dict:
    (found,) = [s for s in job["steps"] if s.get("name") == name]
    return found


def uses(job: dict, action: str) -> dict:
    (found,) = [s for s in job["steps"] if s.get("uses", "").startswith(action + "@")]
    return found


def test_the_evaluating_job_is_read_only_and_sees_full_history():
    flow = load(EVALUATE)
    assert flow["name"] == "override-matrix"
    paths = flow["on"]["pull_request"]["paths"]
    target = load_matrix().target.path
    assert any(fnmatch.fnmatch(target, pattern.replace("**", "*")) for pattern in paths)
    assert any(p.startswith("python/sglang/srt/arg_groups/") for p in paths)  # helpers too
    assert "labeled" in flow["on"]["pull_request"]["types"]  # the ack label re-runs it
    assert "harness-spec" in flow["on"]["workflow_call"]["inputs"]
    assert flow["permissions"] == {"contents": "read"}
    job = flow["jobs"]["evaluate"]
    assert job["permissions"] == {"contents": "read"}
    assert "pull_request_target" not in flow["on"]
    assert "secrets." not in EVALUATE.read_text()
    checkout = uses(job, "actions/checkout")["with"]
    assert checkout["fetch-depth"] == 0 and checkout["persist-credentials"] is False
    upload = uses(job, "actions/upload-artifact")["with"]
    assert (upload["name"], upload["path"]) == ("override-report", "override-report/")
    compare = step(job, "Compare outcomes")
    assert "GITHUB_STEP_SUMMARY" in compare["run"] and "--format github" in compare["run"]
    gate = step(job, "Require acknowledgement of changed outcomes")
    assert "steps.compare.outputs.changed == 'true'" in gate["if"]
    assert "github.event.pull_request.labels.*.name" in gate["if"]


def test_the_commenting_job_never_runs_pr_code():
    flow = load(COMMENT)
    assert flow["on"]["workflow_run"]["workflows"] == [load(EVALUATE)["name"]]
    assert flow["permissions"] == {}
    job = flow["jobs"]["comment"]
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert not [s for s in job["steps"] if "actions/checkout" in s.get("uses", "")]
    download = uses(job, "actions/download-artifact")["with"]
    assert download["run-id"] == "${{ github.event.workflow_run.id }}"
    post = step(job, "Post or update the comment")
    assert "harness comment" in post["run"] and '--head-sha "$EXPECTED_HEAD"' in post["run"]
    assert post["env"]["EXPECTED_HEAD"] == "${{ github.event.workflow_run.head_sha }}"


def run_step(script: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """A run step as GitHub runs it: bash -e -o pipefail, harness on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd, env={**os.environ, **env, "PATH": path}, capture_output=True, text=True,
    )  # fmt: skip


@pytest.fixture
def pr_checkout(history, tmp_path) -> tuple[Path, dict]:
    """A checkout of the fixture repository, as if PR #30835 were open against its parent."""
    target = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(history.root), str(target)], check=True)
    event = {"BASE_SHA": history.shas["comment"], "HEAD_SHA": history.shas["pr30835"],
             "PR_NUMBER": "30835"}  # fmt: skip
    return target, event


def github_files(tmp_path: Path) -> dict:
    files = {"GITHUB_STEP_SUMMARY": tmp_path / "summary.md", "GITHUB_OUTPUT": tmp_path / "out"}
    for path in files.values():
        path.touch()
    return {name: str(path) for name, path in files.items()}


def test_the_workflow_commands_report_a_change_on_a_pr(pr_checkout, tmp_path, history):
    checkout, event = pr_checkout
    job = load(EVALUATE)["jobs"]["evaluate"]
    files = github_files(tmp_path)
    job_env = {"MATRIX": "sglang-fa4-page-size", "ACK_LABEL": "override-change-ok"}
    done = run_step(step(job, "Compare outcomes")["run"], checkout, {**job_env, **event, **files})
    assert done.returncode == 0, done.stderr

    report = json.loads((checkout / "override-report" / "report.json").read_text())
    assert len(report["changed"]) == len(oracle.changed_between(False, True))
    assert (checkout / "override-report" / "pr-number").read_text().strip() == "30835"
    assert "<testsuites" in (checkout / "override-report" / "junit.xml").read_text()
    summary = Path(files["GITHUB_STEP_SUMMARY"]).read_text()
    assert "128 -> input page_size" in summary and "| 1 |" in summary
    assert Path(files["GITHUB_OUTPUT"]).read_text() == "changed=true\n"

    path = load_matrix().target.path
    source = git_out(checkout, "show", f"{event['HEAD_SHA']}:{path}").splitlines()
    line = source.index("def _fa4_page_constraint(view) -> Dict[str, Any]:") + 1
    warnings = [w for w in done.stdout.splitlines() if w.startswith("::warning ")]
    assert len(warnings) == 1
    assert f"file={path}," in warnings[0] and f"line={line}" in warnings[0]

    gate = run_step(step(job, "Require acknowledgement of changed outcomes")["run"], checkout,
                    job_env)  # fmt: skip
    assert gate.returncode == 1 and "override-change-ok" in gate.stdout


def test_no_change_sets_changed_false(pr_checkout, tmp_path, history):
    checkout, event = pr_checkout
    event["HEAD_SHA"] = history.shas["comment"]
    files = github_files(tmp_path)
    job = load(EVALUATE)["jobs"]["evaluate"]
    done = run_step(step(job, "Compare outcomes")["run"], checkout,
                    {"MATRIX": "sglang-fa4-page-size", **event, **files})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert Path(files["GITHUB_OUTPUT"]).read_text() == "changed=false\n"
    assert "::warning" not in done.stdout


def test_the_comment_job_posts_one_comment_and_updates_it(pr_checkout, tmp_path, github_api):
    checkout, event = pr_checkout
    evaluate = load(EVALUATE)["jobs"]["evaluate"]
    env = {"MATRIX": "sglang-fa4-page-size", **event, **github_files(tmp_path)}
    assert run_step(step(evaluate, "Compare outcomes")["run"], checkout, env).returncode == 0

    artifact_dir = tmp_path / "comment-job"  # what download-artifact leaves in the workspace
    shutil.copytree(checkout / "override-report", artifact_dir / "override-report")
    slug = "octo/sglang"
    comments = Comments(github_api, slug, 30835)
    github_api.on("GET", f"/repos/{slug}/pulls/30835",
                  Reply(body={"head": {"sha": event["HEAD_SHA"]}}))  # fmt: skip
    post = step(load(COMMENT)["jobs"]["comment"], "Post or update the comment")
    job_env = {"GITHUB_TOKEN": TOKEN, "REPO_SLUG": slug, "EXPECTED_HEAD": event["HEAD_SHA"],
               "RUN_URL": "https://github.invalid/octo/sglang/actions/runs/5",
               "GITHUB_API_URL": github_api.url}  # fmt: skip
    for _ in range(2):
        done = run_step(post["run"], artifact_dir, job_env)
        assert done.returncode == 0, done.stderr
        assert TOKEN not in done.stdout + done.stderr
    (only,) = comments.items
    assert only["body"].startswith(marker("sglang-fa4-page-size"))
    assert "[Full report](https://github.invalid/octo/sglang/actions/runs/5)" in only["body"]
    methods = [s.method for s in github_api.seen if s.method in ("POST", "PATCH")]
    assert methods == ["POST", "PATCH"]


def test_a_pr_whose_code_raises_system_exit_fails_the_gate(pr_checkout, tmp_path):
    """Raising SystemExit(0) on some cells is those cells' error, not the job's exit 0."""
    checkout, event = pr_checkout
    path = load_matrix().target.path
    subprocess.run(["git", "checkout", "-q", event["BASE_SHA"]], cwd=checkout, check=True)
    source = (checkout / path).read_text()
    anchor = '    """FA4 on Blackwell datacenter GPUs reads the KV cache in 128-token pages."""\n'
    assert anchor in source
    exits = '    if view.attention_backend == "triton":\n        raise SystemExit(0)\n'
    (checkout / path).write_text(source.replace(anchor, anchor + exits))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "commit", "-qam", "exit early"], cwd=checkout, check=True)
    event["HEAD_SHA"] = git_out(checkout, "rev-parse", "HEAD").strip()
    files = github_files(tmp_path)
    job = load(EVALUATE)["jobs"]["evaluate"]
    job_env = {"MATRIX": "sglang-fa4-page-size", "ACK_LABEL": "override-change-ok"}
    done = run_step(step(job, "Compare outcomes")["run"], checkout, {**job_env, **event, **files})
    assert done.returncode == 0, done.stderr
    assert Path(files["GITHUB_OUTPUT"]).read_text() == "changed=true\n"
    report = json.loads((checkout / "override-report" / "report.json").read_text())
    matrix = load_matrix()
    triton = matrix.size // len(matrix.axes[matrix.axis_index("attention_backend")].values)
    assert len(report["changed"]) == triton
    assert all(c["cell"]["attention_backend"] == "triton" for c in report["changed"])
    assert all(c["head"] == {"error": "SystemExit: 0"} for c in report["changed"])
    gate = run_step(step(job, "Require acknowledgement of changed outcomes")["run"], checkout,
                    job_env)  # fmt: skip
    assert gate.returncode == 1


def test_a_matrix_file_in_the_repository_is_read_as_the_base_has_it(pr_checkout, tmp_path):
    """A PR that edits the matrix to hide its change still faces the base's matrix."""
    checkout, event = pr_checkout
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    shipped = (ROOT / "matrices" / "sglang-fa4-page-size.yaml").read_text()
    subprocess.run(["git", "checkout", "-q", event["BASE_SHA"]], cwd=checkout, check=True)
    (checkout / "ci").mkdir()
    (checkout / "ci" / "matrix.yaml").write_text(shipped)
    subprocess.run([*git, "add", "ci/matrix.yaml"], cwd=checkout, check=True)
    subprocess.run([*git, "commit", "-qm", "our matrix"], cwd=checkout, check=True)
    base = git_out(checkout, "rev-parse", "HEAD").strip()
    subprocess.run(["git", "checkout", "-q", event["HEAD_SHA"]], cwd=checkout, check=True)
    subprocess.run(["git", "merge", "-q", "--no-edit", base], cwd=checkout, check=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})  # fmt: skip
    hidden = shipped.replace("platform: [sm90, sm100, sm120]", "platform: [sm90, sm120]")
    assert hidden != shipped
    (checkout / "ci" / "matrix.yaml").write_text(hidden)  # no sm100 cell: the change hides
    subprocess.run([*git, "commit", "-qam", "hide the change"], cwd=checkout, check=True)
    event = {**event, "BASE_SHA": base, "HEAD_SHA": git_out(checkout, "rev-parse", "HEAD").strip()}
    files = github_files(tmp_path)
    job = load(EVALUATE)["jobs"]["evaluate"]
    env = {"MATRIX": "ci/matrix.yaml", **event, **files}
    done = run_step(step(job, "Compare outcomes")["run"], checkout, env)
    assert done.returncode == 0, done.stderr
    assert Path(files["GITHUB_OUTPUT"]).read_text() == "changed=true\n"
    report = json.loads((checkout / "override-report" / "report.json").read_text())
    assert "sm100" in report["axes"]["platform"]
    assert len(report["changed"]) == len(oracle.changed_between(False, True))


def test_a_change_in_a_blind_spot_fails_the_job_and_the_label_cannot_acknowledge_it(
    pr_checkout, tmp_path
):
    """A matrix holding the prefill graph fixed cannot see #30835: exit 4, the step fails
    with the reason, and the acknowledgement step never runs (`changed` is not set)."""
    checkout, event = pr_checkout
    doc = yaml.safe_load((ROOT / "matrices" / "sglang-fa4-page-size.yaml").read_text())
    del doc["axes"]["prefill_cuda_graph"]
    doc["fields"]["prefill_cuda_graph"] = "breakable"
    matrix = tmp_path / "fixed.yaml"
    matrix.write_text(yaml.safe_dump(doc, sort_keys=False))
    files = github_files(tmp_path)
    job = load(EVALUATE)["jobs"]["evaluate"]
    env = {"MATRIX": "sglang-fa4-page-size", "ACK_LABEL": "override-change-ok", **event, **files}
    script = step(job, "Compare outcomes")["run"]
    assert script.count('matrix="$MATRIX"') == 1
    script = script.replace('matrix="$MATRIX"', f'matrix="{matrix}"')  # a file outside the repo
    done = run_step(script, checkout, env)
    assert done.returncode == 4
    assert "::error::harness cannot tell" in done.stdout and "override-change-ok" in done.stdout
    assert "changed=" not in Path(files["GITHUB_OUTPUT"]).read_text()
    assert "prefill_cuda_graph = full" in Path(files["GITHUB_STEP_SUMMARY"]).read_text()
    report = json.loads((checkout / "override-report" / "report.json").read_text())
    assert report["status"] == 4 and report["blind_spots"]


def test_the_inferred_step_sees_the_pr_and_counts_for_the_acknowledgement(pr_checkout, tmp_path):
    checkout, event = pr_checkout
    job = load(EVALUATE)["jobs"]["evaluate"]
    env = {"MATRIX": "sglang-fa4-page-size", "ACK_LABEL": "override-change-ok", **event}
    assert run_step(step(job, "Compare outcomes")["run"], checkout,
                    {**env, **github_files(tmp_path)}).returncode == 0  # fmt: skip
    files = github_files(tmp_path / "inferred") if (tmp_path / "inferred").mkdir() is None else {}
    done = run_step(step(job, "Compare outcomes on the inferred matrix")["run"], checkout,
                    {**env, **files})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert Path(files["GITHUB_OUTPUT"]).read_text() == "changed=true\n"
    report = json.loads((checkout / "override-report" / "inferred.json").read_text())
    assert report["matrix"] == "inferred" and report["changed"]
    assert all(item["cell"]["prefill_cuda_graph"] == "full" for item in report["changed"])
    gate = step(job, "Require acknowledgement of changed outcomes")["if"]
    assert "steps.inferred.outputs.changed == 'true'" in gate
