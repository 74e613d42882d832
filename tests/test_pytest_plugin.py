"""The pytest entry point and `harness snapshot`: a revision against a committed baseline.

The check's outcomes and options are asked of pytest in this process (pytester's
inline run, the plugin loaded from its entry point as any pytest loads it); what a
process of its own shows (the inert plugin's imports, its help, the docs' CI command
at an SGLang root) runs pytest as a command.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import yaml

from harness.engine.outcome import KEPT, VALUE
from harness.matrix.load import load_matrix, shipped_dir
from harness.pytest_plugin import slices
from harness.report.baseline import read
from tests import oracle
from tests.conftest import git_out, run_cli
from tests.helpers import matrix_holding

MATRIX = "sglang-fa4-page-size"


def snapshot(history, rev: str, path) -> str:
    result = run_cli("snapshot", rev, "-o", str(path), "--repo", history.repo())
    assert (result.code, result.err) == (0, "")
    return path.read_text()


def failed_counts(result) -> dict[str, int]:
    """{slice label: changed cells} from the failures pytest printed."""
    heading = r"_ sglang-fa4-page-size\[(.*?)\] _+\n(?:\[gw\d+\] .*\n)?"  # xdist names the worker
    found = dict(re.findall(heading + r"([\d,]+) cells of this", result.stdout.str()))
    return {k: int(v.replace(",", "")) for k, v in found.items()}


def run_pytest(pytester, history, baseline, rev: str, *extra: str):
    return pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--override-matrix", MATRIX, "--override-baseline",
        str(baseline), "--override-repo", history.repo(), "--override-rev", rev, *extra,
    )  # fmt: skip


def slice_counts(select=lambda cell: True) -> dict[str, int]:
    """Per slice (first two axes), how many cells #30835 changes, of those `select` keeps:
    from the predicate."""
    counts: dict[str, int] = {}
    for cell in oracle.all_cells():
        if select(cell) and oracle.page_size(cell, False) != oracle.page_size(cell, True):
            a, d = (cell[n] for n in oracle.NAMES[:2])
            key = f"attention_backend={_fmt(a)},decode_attention_backend={_fmt(d)}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def _fmt(value) -> str:
    return "null" if value is None else str(value)


def test_the_entry_point_is_registered():
    names = {ep.value for ep in entry_points(group="pytest11")}
    assert "harness.pytest_plugin" in names


def test_a_snapshot_holds_every_cell_compactly_and_stably(history, tmp_path):
    text = snapshot(history, "#30835^", tmp_path / "a.json")
    assert snapshot(history, "#30835^", tmp_path / "b.json") == text  # stable
    doc = json.loads(text)
    cubes = sum(len(entry["where"]) for entry in doc["outcomes"])
    assert cubes < 50 and len(text.splitlines()) < 100  # not one object per cell
    assert doc["cells"] == 349_920 and doc["sha"] == history.shas["comment"]
    matrix = load_matrix()
    table = read(str(tmp_path / "a.json"), matrix)
    page = matrix.axis_index("page_size")
    for index, cell in enumerate(oracle.all_cells()):
        outcome = table.outcome_at(index)
        got = outcome.value if outcome.kind == VALUE else None
        if outcome.kind == KEPT:
            got = matrix.axes[page].values[matrix.cell(index)[page]]
        assert got == oracle.page_size(cell, full_clause=False)
    revert = snapshot(history, "#30871", tmp_path / "c.json")
    strip = [line for line in text.splitlines() if '"rev"' not in line and '"sha"' not in line]
    assert strip == [ln for ln in revert.splitlines() if '"rev"' not in ln and '"sha"' not in ln]


def test_passes_against_a_fresh_baseline(pytester, history, tmp_path):
    baseline = tmp_path / "baseline.json"
    snapshot(history, "#30835^", baseline)
    result = run_pytest(pytester, history, baseline, "#30835^")
    result.assert_outcomes(passed=82)


def test_fails_after_30835_with_the_rule_summary(pytester, history, tmp_path):
    baseline = tmp_path / "baseline.json"
    snapshot(history, "#30835^", baseline)
    result = run_pytest(pytester, history, baseline, "#30835", "-n", "0")
    expected = slice_counts()
    result.assert_outcomes(failed=len(expected), passed=82 - len(expected))
    text = result.stdout.str()
    assert failed_counts(result) == expected
    assert "128 -> input page_size" in text and "prefill_cuda_graph = full" in text


def test_a_change_behind_an_input_the_matrix_holds_fixed_fails_the_blind_spot_item(
    pytester, history, tmp_path
):
    matrix = matrix_holding(tmp_path, "prefill_cuda_graph", "breakable")
    baseline = tmp_path / "baseline.json"
    done = run_cli("snapshot", "#30835^", "-o", str(baseline), "--repo", history.repo(),
                   "--matrix", str(matrix))  # fmt: skip
    assert done.code == 0, done.err
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--override-matrix", str(matrix), "--override-baseline",
        str(baseline), "--override-repo", history.repo(), "--override-rev", "#30835",
    )  # fmt: skip
    result.assert_outcomes(failed=1, passed=len(slices(load_matrix(str(matrix)))))
    text = result.stdout.str()
    assert "[blind spots]" in text and "Cannot tell" in text
    assert "prefill_cuda_graph = full takes it the other way" in text


def test_update_rewrites_the_baseline(pytester, history, tmp_path):
    baseline = tmp_path / "baseline.json"
    snapshot(history, "#30835^", baseline)
    result = run_pytest(pytester, history, baseline, "#30835", "--override-update", "-n", "2")
    result.assert_outcomes(passed=82)
    assert json.loads(baseline.read_text())["sha"] == history.shas["pr30835"]


def test_the_inert_plugin_imports_nothing_heavy(tmp_path):
    """Neither importing it nor a pytest run that does not ask for the check (its options
    are added, their value types imported) loads git, yaml or the evaluator."""
    heavy = {
        "git",
        "yaml",
        "harness.engine.explore",
        "harness.scan.versions",
        "harness.matrix.load",
        "harness.session",
        "harness.cli.options",
    }
    show = f"print(sorted({heavy!r} & set(sys.modules)))"
    imported = f"import sys, harness.pytest_plugin; {show}"
    ran = f"import sys, pytest; pytest.main(['-q', '-p', 'no:cacheprovider', {str(tmp_path)!r}]); {show}"
    for code in (imported, ran):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert done.stdout.strip().splitlines()[-1] == "[]"


def test_inert_unless_asked(pytester):
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "collected 1 item" in result.stdout.str()
    assert "override-matrix" not in result.stdout.str()  # (the plugins line names the package)
    assert "--override-matrix" in pytester.runpytest_subprocess("--help").stdout.str()


def test_bad_options_are_usage_errors(pytester, history, tmp_path):
    result = pytester.runpytest_inprocess("--override-matrix", MATRIX)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--override-baseline" in result.stderr.str()
    result = run_pytest(pytester, history, tmp_path / "missing.json", "HEAD")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "does not exist" in result.stderr.str() and "--override-update" in result.stderr.str()
    other = tmp_path / "other.json"
    doc = json.loads(snapshot(history, "HEAD", tmp_path / "ok.json"))
    doc["axes"]["platform"] = ["sm90"]
    other.write_text(json.dumps(doc))
    result = run_pytest(pytester, history, other, "HEAD")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "other axes" in result.stderr.str()


def test_n_auto_runs_no_workers_for_the_check_alone(pytester, history, tmp_path):
    """With test paths given, xdist's workers run the slices too, and a slice #30835
    changes fails there with its rule summary, as without workers."""
    baseline = tmp_path / "baseline.json"
    snapshot(history, "#30835^", baseline)
    alone = run_pytest(pytester, history, baseline, "#30835^", "-n", "auto")
    alone.assert_outcomes(passed=82)
    assert "workers" not in alone.stdout.str() and "[gw0]" not in alone.stdout.str()
    pytester.makepyfile(test_other="def test_other():\n    assert True\n")
    with_paths = run_pytest(pytester, history, baseline, "#30835", "-n", "auto", "test_other.py")
    expected = slice_counts()
    with_paths.assert_outcomes(failed=len(expected), passed=83 - len(expected))
    assert "workers" in with_paths.stdout.str()  # test paths given: xdist decides
    assert failed_counts(with_paths) == expected


# --- the check alone, at an SGLang root whose own tests cannot be imported here ------------

DOCS = Path(__file__).resolve().parents[1] / "docs"
NEEDS_TORCH = "import torch\n\n\ndef test_kernel():\n    assert torch.cuda.is_available()\n"
PYTEST_CONFIGS = ("pyproject.toml", "pytest.ini", "tox.ini", "setup.cfg", "conftest.py")


def ci_commands() -> str:
    """docs/ci.md's pytest block as written (the snapshot, then the pytest command): the
    test runs this very text, so the page and the test cannot drift apart."""
    section = (DOCS / "ci.md").read_text().split("\n## pytest", 1)[1]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    (block,) = [b for b in blocks if "pytest --override-matrix" in b]
    return block


def items_of(matrix_name: str) -> int:
    """The items docs/ci.md promises: one slice per combination of the fewest leading axes
    giving at least 32, plus the blind-spot item (read from the matrix file itself)."""
    axes = yaml.safe_load((shipped_dir() / f"{matrix_name}.yaml").read_text())["axes"]
    count = 1
    for values in axes.values():
        if count >= 32:
            break
        count *= len(values)
    return count + 1


def sglang_tree_whose_tests_need_torch(root: Path) -> None:
    """SGLang's shape: test/ holds tests and a conftest that import torch, and so does
    python/sglang/test/; none of them can be imported on this machine."""
    files = {
        "test/conftest.py": "import torch  # the fixtures SGLang's tests share need torch\n",
        "test/srt/test_fa4_backend.py": NEEDS_TORCH,
        "test/srt/conftest.py": "import torch\n",
        "test/lang/test_srt_backend.py": NEEDS_TORCH,
        "python/sglang/test/test_utils.py": NEEDS_TORCH,
        "scripts/test_ok.py": "def test_ok():\n    assert True\n",
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def run_at(root: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """A command at `root`, with this environment's `harness` and `pytest` first on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)


def summary_of(done: subprocess.CompletedProcess) -> dict[str, int]:
    """pytest's last line, `82 passed in 3.1s`, as {"passed": 82}."""
    last = done.stdout.strip().splitlines()[-1]
    return {kind: int(n) for n, kind in re.findall(r"(\d+) (\w+)", last.split(" in ")[0])}


def test_the_ci_command_passes_verbatim_at_an_sglang_root_whose_tests_need_torch(clone):
    assert importlib.util.find_spec("torch") is None  # else the tree's tests could import
    sglang_tree_whose_tests_need_torch(clone)
    assert [name for name in PYTEST_CONFIGS if (clone / name).exists()] == []  # none added
    own = run_at(clone, ["pytest", "-p", "no:cacheprovider"])
    assert own.returncode != 0 and "No module named 'torch'" in own.stdout + own.stderr
    done = run_at(clone, ["bash", "-ec", ci_commands()])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
    assert summary_of(done) == {"passed": items_of(MATRIX)}
    assert "torch" not in done.stdout + done.stderr and "[gw0]" not in done.stdout


def test_paths_on_the_command_line_are_collected_beside_the_check(clone):
    sglang_tree_whose_tests_need_torch(clone)
    baseline = clone / "baseline.json"
    assert run_cli("snapshot", "HEAD", "-o", str(baseline), "--repo", str(clone)).code == 0
    check = ["pytest", "-p", "no:cacheprovider", "--override-matrix", MATRIX,
             "--override-baseline", str(baseline)]  # fmt: skip
    done = run_at(clone, [*check, "scripts/test_ok.py"])
    assert done.returncode == 0, done.stdout[-4000:]
    assert summary_of(done) == {"passed": items_of(MATRIX) + 1}
    done = run_at(clone, [*check, "test/lang/test_srt_backend.py"])
    assert done.returncode != 0 and "No module named 'torch'" in done.stdout + done.stderr


# --- --override-rev A...B: the range's base stands in for a baseline ------------------------


def test_a_range_compares_where_the_branch_left_with_its_head(pytester, clone, history):
    """`HEAD...feature` (feature: #30835's clause on #30835^) fails exactly the slices the
    predicate says #30835 changes: its base is `git merge-base HEAD feature`, not HEAD."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "checkout", "-q", "-b", "feature", history.shas["comment"]],
                   cwd=clone, check=True)  # fmt: skip
    subprocess.run([*git, "cherry-pick", history.shas["pr30835"]], cwd=clone, check=True,
                   capture_output=True)  # fmt: skip
    subprocess.run([*git, "checkout", "-q", "-"], cwd=clone, check=True)
    base = git_out(clone, "merge-base", "HEAD", "feature").strip()
    assert base == history.shas["comment"] != git_out(clone, "rev-parse", "HEAD").strip()
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--override-matrix", MATRIX, "--override-repo", str(clone),
        "--override-rev", "HEAD...feature",
    )  # fmt: skip
    expected = slice_counts()
    result.assert_outcomes(failed=len(expected), passed=items_of(MATRIX) - len(expected))
    text = result.stdout.str()
    assert failed_counts(result) == expected
    assert f"differ from HEAD...feature ({base[:10]}) at feature" in text


def test_a_range_names_its_own_base(pytester, history, tmp_path):
    baseline = tmp_path / "baseline.json"
    snapshot(history, "HEAD", baseline)
    common = ["--override-matrix", MATRIX, "--override-repo", history.repo()]
    for extra in (["--override-baseline", str(baseline)], ["--override-update"]):
        result = pytester.runpytest_inprocess(*common, "--override-rev", "HEAD~2...HEAD", *extra)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert f"is a range, whose base is the baseline: drop {extra[0]}" in result.stderr.str()


def test_a_range_with_an_unevaluable_end_fails_every_item(pytester, history):
    """#30902 breaks the file's syntax: nothing can be compared, and no slice passes."""
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--override-matrix", MATRIX, "--override-repo",
        history.repo(), "--override-rev", "#30902^...#30902",
    )  # fmt: skip
    result.assert_outcomes(failed=items_of(MATRIX))  # the blind-spot item too
    assert (
        "harness: cannot tell: #30902^...#30902: unevaluable: syntax error" in result.stdout.str()
    )
