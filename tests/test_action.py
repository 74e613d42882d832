"""The composite action (action.yml), run step by step as GitHub runs it, on PR-shaped histories.

Each pull request here is real git: a fixture history, a branch point, a PR
branch and a base branch that moved on after it (upstream's own change of
outcomes), and the workspace at their merge commit, as actions/checkout
leaves it. Expected outcomes come from tests/oracle.py and from git itself,
never from harness. The install step is replaced by `harness --version` (the
test's own harness) except in one test, which runs it as written into a fresh
virtual environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from harness.matrix.load import load_matrix
from harness.testing.gitrepo import IDENTITY
from harness.testing.sglang_fixture import OVERRIDES
from tests import oracle
from tests.actionrun import STAND_INS, Expression, Run, Runner, condition
from tests.conftest import git_out

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
INSTALL = "Install harness from the action's own files"
UPSTREAM_SUBJECT = "Use 256-token pages for FA4 (#30900)"


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **IDENTITY}
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True)  # fmt: skip
    return done.stdout.strip()


def commit(repo: Path, subject: str, files: dict[str, str]) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "--", *files)
    git(repo, "commit", "-q", "--allow-empty", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


@dataclass
class PullRequest:
    workspace: Path  # the merge commit checked out, with full history
    start: str  # where the PR branched off (the merge base)
    base: str  # the base branch's tip, which moved on after the branch point
    head: str

    def event(self, *labels: str) -> dict:
        return {"pull_request": {"number": 30835, "base": {"sha": self.base, "ref": "main"},
                                 "head": {"sha": self.head},
                                 "labels": [{"name": label} for label in labels]}}  # fmt: skip


def open_pr(history, root: Path, pr_files: dict[str, str], start_files=None) -> PullRequest:
    """Branch off the fixture's `comment` commit (after committing `start_files`), commit
    `pr_files` on the PR branch, move the base on with an outcome change of its own (FA4
    pages of 256), and check out the merge commit of the two."""
    git(root.parent, "clone", "-q", str(history.root), str(root))
    git(root, "checkout", "-q", "--detach", history.shas["comment"])
    start = commit(root, "Add the CI matrix", start_files) if start_files else git(root, "rev-parse", "HEAD")  # fmt: skip
    head = commit(root, "The pull request", pr_files)
    git(root, "checkout", "-q", "--detach", start)
    moved = (root / OVERRIDES).read_text().replace("FA4_PAGE_SIZE = 128", "FA4_PAGE_SIZE = 256")
    base = commit(root, UPSTREAM_SUBJECT, {OVERRIDES: moved})
    git(root, "merge", "-q", "--no-edit", head)
    return PullRequest(root, start, base, head)


def at(history, key: str) -> dict[str, str]:
    """The overrides file as the fixture commit `key` has it."""
    return {OVERRIDES: git_out(history.root, "show", f"{history.shas[key]}:{OVERRIDES}")}


def runner(pr: PullRequest, tmp_path: Path, *labels: str, path: str | None = None) -> Runner:
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    harness_bin = str(Path(sys.executable).parent)
    return Runner(
        workspace=pr.workspace, temp=temp, event=pr.event(*labels), actions=dict(STAND_INS),
        env={"PATH": path or f"{harness_bin}{os.pathsep}{os.environ['PATH']}"},
        replaced={} if path else {INSTALL: "harness --version"}, artifacts=tmp_path / "artifacts",
    )  # fmt: skip


def run_action(machine: Runner, **inputs: str) -> Run:
    return machine.run_action(ROOT, inputs)


def report(machine: Runner, name: str = "report.json") -> dict:
    return json.loads((machine.artifacts / "override-report" / name).read_text())


@pytest.fixture
def pr_30835(history, tmp_path) -> PullRequest:
    """#30835's clause as a PR, opened before upstream changed the FA4 page size."""
    return open_pr(history, tmp_path / "checkout", at(history, "pr30835"))


def test_the_action_is_composite_and_takes_its_settings_from_inputs_only():
    assert ACTION["runs"]["using"] == "composite"
    inputs = ACTION["inputs"]
    assert {"matrix", "ack-label", "fail-on", "base", "head", "python-version"} <= set(inputs)
    # Defaults are plain strings: the PR's revisions are read where the steps run.
    assert all("${{" not in str(spec.get("default", "")) for spec in inputs.values())
    assert all(not spec.get("required", False) for spec in inputs.values())
    steps = ACTION["runs"]["steps"]
    install = next(s for s in steps if s.get("name") == INSTALL)
    assert '"$GITHUB_ACTION_PATH"' in install["run"] and "pip install" in install["run"]
    for step in steps:
        if "run" in step:
            assert step["shell"] == "bash"
            assert "${{" not in step["run"], step["name"]  # inputs reach scripts via env only
    text = (ROOT / "action.yml").read_text()
    assert "vars." not in text and "secrets." not in text


def test_a_pr_is_diffed_from_its_merge_base_and_fails_until_acknowledged(pr_30835, tmp_path):
    machine = runner(pr_30835, tmp_path)
    run = run_action(machine)

    assert run.failed
    merge_base = git(pr_30835.workspace, "merge-base", pr_30835.base, pr_30835.head)
    assert merge_base == pr_30835.start != pr_30835.base
    full = report(machine)
    assert (full["base"]["sha"], full["head"]["sha"]) == (merge_base, pr_30835.head)
    expected = oracle.changed_between(False, True)  # only the PR's clause, not upstream's 256
    assert len(full["changed"]) == len(expected)
    assert {c["cell"]["prefill_cuda_graph"] for c in full["changed"]} == {"full"}
    inferred = report(machine, "inferred.json")
    assert inferred["matrix"] == "inferred" and inferred["changed"]
    assert all(c["cell"]["prefill_cuda_graph"] == "full" for c in inferred["changed"])

    artifact = machine.artifacts / "override-report"
    assert (artifact / "pr-number").read_text() == "30835\n"
    assert (artifact / "head-sha").read_text() == f"{pr_30835.head}\n"
    assert json.loads((artifact / "comment.json").read_text())["changed_count"] == len(expected)
    assert "<testsuites" in (artifact / "junit.xml").read_text()
    page = (artifact / "report.html").read_text()  # the page the comment links to
    assert f"Changed: {len(expected):,} of 349,920 cells" in page
    assert 'data-status="1"' in (artifact / "inferred.html").read_text()
    assert machine.summary.count("128 -> input page_size") >= 2  # both steps' reports

    compare = run.step("compare")
    assert (compare.outcome, compare.outputs) == ("success", {"status": "1", "changed": "true"})
    warnings = [w for w in compare.stdout.splitlines() if w.startswith("::warning ")]
    assert warnings and all(f"file={OVERRIDES}," in w for w in warnings)
    gate = run.step("gate")
    assert gate.code == 1 and "::error::" in gate.stdout and "override-change-ok" in gate.stdout
    assert run.outputs == {"changed": "true", "status": "1", "inferred-status": "1"}
    assert run.step("Upload the report").outcome == "success"


def test_the_label_acknowledges_a_change(pr_30835, tmp_path):
    machine = runner(pr_30835, tmp_path, "override-change-ok")
    run = run_action(machine, inferred="false")
    assert not run.failed, failures(run)
    assert run.outputs["changed"] == "true"
    assert "::notice::" in run.step("gate").stdout


def test_another_label_name_is_an_input(pr_30835, tmp_path):
    machine = runner(pr_30835, tmp_path, "override-change-ok")
    run = run_action(machine, inferred="false", **{"ack-label": "page-size-change-ok"})
    assert run.failed and "page-size-change-ok" in run.step("gate").stdout


def test_fail_on_cannot_tell_reports_a_change_without_failing(pr_30835, tmp_path):
    machine = runner(pr_30835, tmp_path)
    run = run_action(machine, inferred="false", **{"fail-on": "cannot-tell"})
    assert not run.failed, failures(run)
    assert run.outputs["changed"] == "true"
    assert "::warning::" in run.step("gate").stdout
    assert report(machine)["changed"]


def fixed_prefill_matrix() -> str:
    """The shipped matrix with the prefill CUDA graph held at `breakable`: blind to #30835."""
    doc = yaml.safe_load((ROOT / "matrices" / "sglang-fa4-page-size.yaml").read_text())
    del doc["axes"]["prefill_cuda_graph"]
    doc["fields"]["prefill_cuda_graph"] = "breakable"
    return yaml.safe_dump(doc, sort_keys=False)


@pytest.mark.parametrize("fail_on", ["change", "cannot-tell"])
def test_cannot_tell_fails_and_no_label_acknowledges_it(history, tmp_path, fail_on):
    pr = open_pr(history, tmp_path / "checkout", at(history, "pr30835"),
                 start_files={"ci/matrix.yaml": fixed_prefill_matrix()})  # fmt: skip
    machine = runner(pr, tmp_path, "override-change-ok")
    run = run_action(machine, matrix="ci/matrix.yaml", **{"fail-on": fail_on})

    assert run.failed
    compare = run.step("compare")
    assert compare.code == 4 and compare.outputs == {"status": "4"}
    assert "::error::harness cannot tell" in compare.stdout
    assert "override-change-ok" in compare.stdout  # says the label does not acknowledge it
    assert run.step("inferred").outcome == "skipped"
    assert run.step("gate").outcome == "skipped"
    assert run.outputs == {"changed": "", "status": "4", "inferred-status": ""}
    assert "prefill_cuda_graph = full" in machine.summary
    full = report(machine)
    assert full["status"] == 4 and full["blind_spots"]
    assert run.step("Upload the report").outcome == "success"


def test_a_pr_that_changes_no_outcome_passes(history, tmp_path):
    docs = {"docs/page_size.md": "# Page size\n\nA sentence the PR adds.\n"}
    pr = open_pr(history, tmp_path / "checkout", docs)
    machine = runner(pr, tmp_path)
    run = run_action(machine)
    assert not run.failed, failures(run)
    assert run.outputs == {"changed": "false", "status": "0", "inferred-status": "0"}
    assert report(machine)["changed"] == []
    assert "::warning" not in run.step("compare").stdout


def test_a_matrix_file_is_read_as_the_merge_base_has_it(history, tmp_path):
    """A PR that edits the matrix to hide its change still faces the base's matrix."""
    shipped = (ROOT / "matrices" / "sglang-fa4-page-size.yaml").read_text()
    hidden = shipped.replace("platform: [sm90, sm100, sm120]", "platform: [sm90, sm120]")
    assert hidden != shipped
    pr_files = {**at(history, "pr30835"), "ci/matrix.yaml": hidden}  # no sm100 cell
    pr = open_pr(history, tmp_path / "checkout", pr_files, start_files={"ci/matrix.yaml": shipped})
    assert (pr.workspace / "ci" / "matrix.yaml").read_text() == hidden  # what the checkout holds
    machine = runner(pr, tmp_path, "override-change-ok")
    run = run_action(machine, matrix="ci/matrix.yaml", inferred="false")
    assert run.step("compare").outputs["changed"] == "true"
    full = report(machine)
    assert "sm100" in full["axes"]["platform"]
    assert len(full["changed"]) == len(oracle.changed_between(False, True))


def test_a_matrix_file_missing_at_the_merge_base_is_an_error(pr_30835, tmp_path):
    run = run_action(runner(pr_30835, tmp_path), matrix="ci/matrix.yaml")
    compare = run.step("compare")
    assert compare.code == 2
    (line,) = [x for x in compare.stdout.splitlines() if x.startswith("::error::")]
    assert "ci/matrix.yaml" in line and pr_30835.start in line


def test_a_pr_whose_code_raises_system_exit_fails_the_gate(history, tmp_path):
    """Raising SystemExit(0) on some cells is those cells' error, not the job's exit 0."""
    source = at(history, "comment")[OVERRIDES]
    anchor = '    """FA4 on Blackwell datacenter GPUs reads the KV cache in 128-token pages."""\n'
    assert anchor in source
    exits = '    if view.attention_backend == "triton":\n        raise SystemExit(0)\n'
    pr = open_pr(
        history, tmp_path / "checkout", {OVERRIDES: source.replace(anchor, anchor + exits)}
    )
    machine = runner(pr, tmp_path)
    run = run_action(machine, inferred="false")
    assert run.failed and run.step("gate").code == 1
    assert run.step("inferred").outcome == "skipped"
    matrix = load_matrix()
    triton = matrix.size // len(matrix.axes[matrix.axis_index("attention_backend")].values)
    changed = report(machine)["changed"]
    assert len(changed) == triton
    assert all(c["cell"]["attention_backend"] == "triton" for c in changed)
    assert all(c["head"] == {"error": "SystemExit: 0"} for c in changed)


def failures(run: Run) -> list[tuple[str, str]]:
    return [(s.name, s.stdout[-2000:] + s.stderr[-2000:]) for s in run.all_steps()
            if s.outcome == "failure"]  # fmt: skip


def error_lines(run: Run) -> list[str]:
    return [x for s in run.steps for x in s.stdout.splitlines() if x.startswith("::error::")]


@pytest.mark.parametrize(
    ("inputs", "named"),
    [({"fail-on": "never"}, "fail-on is 'never'"), ({"inferred": "yes"}, "inferred is 'yes'"),
     ({"install-only": "1"}, "install-only is '1'"), ({"matrix": ""}, "matrix is empty")],
)  # fmt: skip
def test_a_bad_input_is_one_error_line_before_anything_runs(pr_30835, tmp_path, inputs, named):
    run = run_action(runner(pr_30835, tmp_path), **inputs)
    (line,) = error_lines(run)
    assert named in line
    assert run.steps[0].code == 2
    assert [s.outcome for s in run.steps[1:]] == ["skipped"] * (len(run.steps) - 1)


def test_outside_a_pull_request_base_and_head_are_required(pr_30835, tmp_path):
    machine = runner(pr_30835, tmp_path)
    machine.event = {"push": {}}
    run = run_action(machine)
    (line,) = error_lines(run)
    assert "set its base and head inputs" in line
    machine.temp = tmp_path / "again"
    machine.temp.mkdir()
    run = run_action(machine, base=pr_30835.base, head=pr_30835.head, inferred="false",
                     **{"pr-number": ""})  # fmt: skip
    assert run.step("compare").outputs == {"status": "1", "changed": "true"}


def test_a_shallow_checkout_is_told_to_fetch_the_history(history, pr_30835, tmp_path):
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{pr_30835.workspace}", str(shallow))
    pr = PullRequest(shallow, pr_30835.start, pr_30835.base, pr_30835.head)
    run = run_action(runner(pr, tmp_path))
    (line,) = error_lines(run)
    assert "fetch-depth: 0" in line
    assert run.step("revisions").code == 2
    assert run.step("Upload the report").outcome == "skipped"


def test_install_only_installs_and_does_nothing_else(pr_30835, tmp_path):
    machine = runner(pr_30835, tmp_path)
    run = run_action(machine, **{"install-only": "true"})
    assert not run.failed
    ran = [s.name for s in run.steps if s.outcome != "skipped"]
    assert ran == ["Check the inputs", "Set up Python", INSTALL]
    assert not machine.artifacts.exists()


def test_the_install_step_installs_harness_from_the_actions_own_files(pr_30835, tmp_path):
    """As written: pip installs the action's directory into a fresh environment (from the
    package index, as on GitHub), and every later step runs that harness."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    assert not (venv / "bin" / "harness").exists()
    machine = runner(pr_30835, tmp_path, "override-change-ok",
                     path=f"{venv / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")  # fmt: skip
    run = run_action(machine, inferred="false")
    install = run.step(INSTALL)
    assert install.code == 0, install.stderr
    assert install.stdout.strip().startswith("harness ")
    assert (venv / "bin" / "harness").exists()
    assert not run.failed
    assert len(report(machine)["changed"]) == len(oracle.changed_between(False, True))


@pytest.mark.parametrize(
    ("expr", "value"),
    [("'Abc' == 'abc'", True), ("1 == '1'", True), ("null == 0", True), ("'' || 'x'", "x"),
     ("'a' && 'b'", "b"), ("!''", True), ("contains(e.labels.*.name, 'OK')", True),
     ("contains(e.labels.*.name, 'no')", False), ("e.missing.deeper", None),
     ("startsWith('refs/pull', 'refs/')", True)],
)  # fmt: skip
def test_the_runner_reads_expressions_as_github_documents_them(expr, value):
    """The test runner's own semantics, from GitHub's expression reference."""
    contexts = {"e": {"labels": [{"name": "ok"}, {"name": "other"}]}}
    assert Expression(expr, contexts, lambda _: True).value() == value


def test_an_if_without_a_status_function_needs_success():
    assert condition("true", {}, lambda name: name != "success") is False
    assert condition("always() && true", {}, lambda name: name != "success") is True
