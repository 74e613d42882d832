"""Bad input: one clear line on stderr, exit 2, never a traceback. And --help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git_out, one_line_error, run_cli

MATRIX = """\
name: tiny
target: {path: overrides.py, function: f, output: page_size}
world: sglang
axes:
  platform: [sm90, sm100]
  page_size: [null, 1]
"""


def test_unknown_revision(history):
    line = one_line_error(run_cli("diff", "nosuchbranch", "HEAD", "--repo", history.repo()))
    assert "unknown revision 'nosuchbranch'" in line and "#PR" in line


def test_unknown_pr_number(history):
    line = one_line_error(run_cli("diff", "#99999", "--repo", history.repo()))
    assert "#99999" in line and "no commit subject ends with (#99999)" in line


def test_not_a_repository(tmp_path):
    line = one_line_error(run_cli("diff", "--repo", str(tmp_path)))
    assert "not a git repository" in line and str(tmp_path) in line


def test_missing_repo_directory(tmp_path):
    line = one_line_error(run_cli("diff", "--repo", str(tmp_path / "nope")))
    assert "no such directory" in line


def test_too_many_revisions(history):
    line = one_line_error(run_cli("diff", "HEAD", "HEAD", "HEAD", "--repo", history.repo()))
    assert "at most two revisions" in line


def test_bare_repository_has_no_working_tree(history, tmp_path):
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", history.repo(), str(bare)], check=True)
    line = one_line_error(run_cli("diff", "HEAD", "--repo", str(bare)))
    assert "bare repository" in line and "two revisions" in line
    assert run_cli("diff", "#30871", "HEAD", "--repo", str(bare)).code == 0


def test_unknown_shipped_matrix():
    line = one_line_error(run_cli("matrix", "--matrix", "no-such-matrix"))
    assert "no shipped matrix" in line and "sglang-fa4-page-size" in line


@pytest.mark.parametrize(
    "text, expected",
    [
        ("name: [unclosed\n", "not valid YAML"),
        (MATRIX.replace("name: tiny\n", ""), "name: missing"),
        (MATRIX + "colour: blue\n", "colour: unknown key"),
        (MATRIX.replace("[null, 1]", "[null, 1, 1]"), "axes.page_size: a value is listed twice"),
        (MATRIX.replace("[null, 1]", "[]"), "axes.page_size: expected a non-empty list"),
        (MATRIX.replace("world: sglang", "world: vllm"), "unknown world 'vllm'"),
        (
            MATRIX.replace("output: page_size", "output: chunk").replace("sglang", "plain"),
            "target.output: chunk must also",
        ),
        (
            MATRIX.replace("[sm90, sm100]", "[sm90, tpu]"),
            "axes.platform: the sglang world does not know",
        ),
        (
            MATRIX.replace("function: f", "function: 3"),
            "target.function: expected a non-empty string",
        ),
        (
            MATRIX.replace("output: page_size}", "output: page_size, roots: python}"),
            "target.roots: needs a list of directories",
        ),
        (
            MATRIX.replace("function: f", "passes: some"),
            "target.passes: needs a list of function names, run in that order, `all` or `run-order`",
        ),
    ],
)
def test_bad_matrix_files_name_file_and_key(history, tmp_path, text, expected):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    line = one_line_error(
        run_cli("diff", "HEAD~1", "HEAD", "--matrix", str(path), "--repo", history.repo())
    )
    assert str(path) in line and expected in line


@pytest.mark.parametrize(
    "where, expected",
    [
        ("gpu=sm100", "no axis 'gpu'"),
        ("platform=sm999", "unknown value 'sm999' for axis platform"),
        ("platform", "expected AXIS=VALUE"),
        ("page_size=True", "unknown value 'True'"),
    ],
)
def test_bad_where(history, where, expected):
    line = one_line_error(run_cli("diff", "--where", where, "--repo", history.repo()))
    assert expected in line


def test_argparse_errors_are_one_line_too():
    result = run_cli("diff", "--format", "yaml")
    line = one_line_error(result)
    assert "invalid choice: 'yaml'" in line and "--help" in line
    assert one_line_error(run_cli("frobnicate"))


@pytest.mark.parametrize("command", ["diff", "matrix", "demo"])
def test_every_command_explains_itself(command):
    result = run_cli(command, "--help")
    assert result.code == 0 and "usage: harness" in result.out and "--" in result.out


def test_console_entry_points_work(history):
    # The installed script sits next to this interpreter: found there, not on PATH.
    script = str(Path(sys.executable).parent / "harness")
    for argv in ([script], [sys.executable, "-m", "harness"]):
        done = subprocess.run([*argv, "diff", "#30871", "HEAD", "--repo", history.repo()],
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "No cell changes page_size" in done.stdout


def test_default_repo_is_the_one_containing_the_current_directory(history, monkeypatch):
    monkeypatch.chdir(history.root / "python" / "sglang")
    result = run_cli("diff", "#30835^", "#30835", "--format", "json")
    assert result.code == 1
    assert git_out(history.root, "rev-parse", "HEAD").strip() == history.shas["order"]


@pytest.mark.parametrize(
    "argv",
    [
        ["diff", "HEAD~1", "HEAD", "--repo", "/nonexistent"],
        ["matrix", "--infer", "HEAD", "--repo", "/nonexistent"],
        ["matrix", "--infer", "pypi:sglang==0.5.23", "--index-url", "http://127.0.0.1:9/simple"],
    ],
    ids=["diff", "infer", "infer-release"],
)
def test_a_matrix_error_comes_before_the_repository_or_the_index_is_opened(tmp_path, argv):
    path = tmp_path / "m.yaml"
    path.write_text(MATRIX.replace("world: sglang", "world: vllm"))
    line = one_line_error(run_cli(*argv, "--matrix", str(path)))
    assert f"{path}: world: unknown world 'vllm'" in line
