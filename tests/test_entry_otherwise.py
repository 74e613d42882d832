"""An entry with `otherwise:`: each revision runs the first entry its files define, as
SGLang's resolution moved from `ServerArgs.__post_init__` (0.5.18 and earlier) to
`run_resolution_pipeline` (0.5.19 on). One matrix then reads a history across the move:
the commit that moves the same resolution into the new entry changes no cell, and the
commits before and after it that change what it resolves are found.

The fixture history, in SGLang's shapes and our own words: two commits of a
`__post_init__` with `_handle_*` methods, then the same resolution moved to a pipeline
of handler functions (`__post_init__` left empty, as SGLang left it), then a change to
the pipeline. Every expected outcome comes from running each commit's own files in
plain Python (constructing `ServerArgs`, then calling the pipeline where there is one).
"""

from __future__ import annotations

import itertools
import json
import os
import types
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import one_line_error, run_cli
from tests.releases import build_wheel
from tests.test_entry import (
    FIELDS,
    OUTPUTS,
    PKG,
    POST_INIT,
    POST_INIT_AXES,
    POST_INIT_VERSIONS,
    harness_outcomes,
    imported,
    outcome_of,
    post_init_outcomes,
)

ARGS = "python/sglang/srt/server_args.py"
PIPELINE_PATH = f"{PKG}/pipeline.py"
RAW_ARGS = '''\
# Written for harness's tests, shaped like SGLang's server_args.py after the registry.
"""Server arguments: construction leaves them as asked; the pipeline resolves them."""

from __future__ import annotations

import dataclasses
from typing import Optional


@dataclasses.dataclass
class ServerArgs:
{FIELDS}
    def __post_init__(self):
        """Construction leaves the record at what the caller asked for."""
'''
PIPELINE = '''\
# Written for harness's tests, shaped like SGLang's pipeline.py.
"""Ordered configuration resolution: one handler function per concern."""

from __future__ import annotations

from typing import Any

from sglang.srt.utils import is_sm100_supported


def handle_attention_backend(server_args: Any) -> None:
    if server_args.attention_backend is None:
        server_args.attention_backend = "fa4" if is_sm100_supported() else "fa3"


def handle_speculative_decoding(server_args: Any) -> None:
    if server_args.speculative_algorithm is None:
        return
    if server_args.speculative_eagle_topk is None:
        server_args.speculative_eagle_topk = 4
    assert server_args.speculative_eagle_topk == 1 or server_args.page_size in (None, 1), (
        "topk above one needs page size 1"
    )


def handle_page_size(server_args: Any) -> None:
    if server_args.attention_backend == "fa4" and {fa4_condition}:
        server_args.page_size = 128
        return
    if server_args.page_size is None:
        server_args.page_size = 1


def run_resolution_pipeline(server_args: Any) -> None:
    """Resolve the server arguments in dependency order."""
    handle_attention_backend(server_args)
    handle_speculative_decoding(server_args)
    handle_page_size(server_args)
'''
OTHERWISE = f"  otherwise: {{path: {ARGS}, entry: ServerArgs.__post_init__}}\n"
MATRIX = (
    f"name: otherwise-test\ntarget:\n  path: {PIPELINE_PATH}\n  entry: run_resolution_pipeline\n"
    f"{OTHERWISE}  output: [{', '.join(OUTPUTS)}]\nworld: sglang\naxes:\n"
    + "".join(
        f"  {name}: [{', '.join('null' if v is None else str(v) for v in values)}]\n"
        for name, values in POST_INIT_AXES.items()
    )
)


def old(key: str) -> dict[str, str]:
    return {ARGS: POST_INIT.format(FIELDS=FIELDS, **POST_INIT_VERSIONS[key])}


def new(fa4_condition: str) -> dict[str, str]:
    return {ARGS: RAW_ARGS.format(FIELDS=FIELDS), f"{PKG}/__init__.py": "",
            PIPELINE_PATH: PIPELINE.format(fa4_condition=fa4_condition)}  # fmt: skip


# oldest first; "moved" resolves as "unset" does, in the pipeline's shape
COMMITS = {
    "initial": old("initial"),
    "unset": old("unset"),
    "moved": new("server_args.page_size is None"),
    "always": new("True"),
}


def pipeline_outcomes(root: Path) -> list:
    """Per cell, what constructing `ServerArgs` and running the pipeline written at
    `root` resolves in plain Python, `is_sm100_supported()` answered for the cell."""
    found = []
    for cell in cells():
        utils = types.ModuleType("sglang.srt.utils")
        utils.is_sm100_supported = lambda sm100=cell["platform"] == "sm100": sm100
        with imported(root, cell["platform"], {"sglang.srt.utils": utils}) as (made, run):
            server_args = made(**{k: v for k, v in cell.items() if k != "platform"})
            found.append(
                outcome_of(run, server_args, lambda s: tuple(getattr(s, f) for f in OUTPUTS))
            )
    return found


def cells() -> list[dict]:
    names = list(POST_INIT_AXES)
    return [dict(zip(names, v, strict=True)) for v in itertools.product(*POST_INIT_AXES.values())]


def plain(files: dict[str, str], tree: Path) -> list:
    """What the commit holding `files` resolves in plain Python."""
    if PIPELINE_PATH not in files:
        return post_init_outcomes(files[ARGS])
    for path, text in files.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    return pipeline_outcomes(tree)


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, dict[str, str], Path, dict[str, list]]:
    root = tmp_path_factory.mktemp("otherwise")
    fixture, shas, expected, tree = FixtureRepo(root / "repo"), {}, {}, {}
    for n, (key, files) in enumerate(COMMITS.items(), 1):
        tree.update(files)
        shas[key] = fixture.commit(f"{key} (#{n})", files)
        expected[key] = plain(dict(tree), root / f"tree-{key}")
    matrix = root / "otherwise.yaml"
    matrix.write_text(MATRIX)
    return root / "repo", shas, matrix, expected


def changed(expected: dict, base: str, head: str) -> int:
    return sum(a != b for a, b in zip(expected[base], expected[head], strict=True))


@pytest.mark.parametrize("key", list(COMMITS))
def test_each_revision_runs_the_first_entry_it_defines(history, key):
    root, shas, matrix, expected = history
    assert harness_outcomes(root, shas[key], matrix) == expected[key]


def test_moving_the_resolution_into_the_new_entry_changes_no_cell(history):
    root, shas, matrix, expected = history
    assert changed(expected, "unset", "moved") == 0  # the fixture's premise, in plain Python
    assert changed(expected, "moved", "always") > 0
    done = run_cli("diff", shas["unset"], shas["moved"], "--repo", str(root), "--matrix",
                   str(matrix), "--format", "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    assert (done.code, report["changed"], report["notes"]) == (0, [], {}), done.err
    ran = f"ServerArgs.__post_init__ in {ARGS}"
    assert report["base"]["ran"] == ran and "ran" not in report["head"]
    assert report["target"]["otherwise"] == [{"path": ARGS, "entry": "ServerArgs.__post_init__"}]
    text = run_cli("diff", shas["unset"], shas["moved"], "--repo", str(root), "--matrix",
                   str(matrix), "--no-cache").out  # fmt: skip
    assert f"ran {ran} (target.otherwise): {PIPELINE_PATH} does not exist here" in text


def test_history_across_the_move_lists_the_changes_on_either_side_of_it(history):
    root, shas, matrix, expected = history
    done = run_cli("history", "--repo", str(root), "--matrix", str(matrix), "--format", "json",
                   "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    found = {commit["sha"]: commit["cells_changed"] for commit in report["commits"]}
    wanted = {shas[k]: changed(expected, a, k) for a, k in (("initial", "unset"),
                                                             ("moved", "always"))}  # fmt: skip
    assert found == wanted and done.code == 1, done.err


@pytest.mark.parametrize(
    "pipeline",
    [
        "from sglang.srt.arg_groups._impl import run_resolution_pipeline\n",
        "def _run(server_args):\n    pass\n\n\nrun_resolution_pipeline = _run\n",
        "def other(server_args):\n    pass\n",
    ],
    ids=["imported", "rebound", "missing"],
)
def test_a_file_that_does_not_define_its_entry_is_not_passed_over(tmp_path, pipeline):
    """`otherwise:` is for a revision without the entry's file: where the file is there
    and does not define the entry as a function (it imports it, binds it to another, or
    lacks it), the revision has no target (exit 4), whatever `__post_init__` does."""
    repo = FixtureRepo(tmp_path / "repo")
    files = {**old("unset"), f"{PKG}/__init__.py": "", PIPELINE_PATH: pipeline,
             f"{PKG}/_impl.py": PIPELINE.format(fa4_condition="True")}  # fmt: skip
    sha = repo.commit("moved away", files)
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX)
    done = run_cli("snapshot", sha, "--repo", str(tmp_path / "repo"), "--matrix", str(matrix),
                   "--no-cache")  # fmt: skip
    assert done.code == 4 and "run_resolution_pipeline" in done.err, done.err
    assert "__post_init__" not in done.err and done.out == ""


def test_a_trace_of_an_otherwise_entry_shows_its_own_files_lines(tmp_path):
    """`explain` of a revision that ran `ServerArgs.__post_init__` shows that method's
    conditions as written in server_args.py, not rebuilt from the syntax tree (as where
    the text was read from the matrix's own file, which does not exist)."""
    written = '        if self.page_size is None and self.attention_backend == "fa3":\n'
    written += "            self.page_size = 0x2\n"
    text = old("unset")[ARGS].replace(
        "        self._handle_attention_backend()\n",
        written + "        self._handle_attention_backend()\n",
    )
    sha = FixtureRepo(tmp_path / "repo").commit("old", {ARGS: text})
    (tmp_path / "m.yaml").write_text(MATRIX)
    done = run_cli("explain", sha, "--repo", str(tmp_path / "repo"), "--matrix",
                   str(tmp_path / "m.yaml"), "--where", "attention_backend=fa3", "--where",
                   "platform=sm90", "--where", "page_size=null", "--where",
                   "speculative_algorithm=null", "--where", "speculative_eagle_topk=null",
                   "--no-cache")  # fmt: skip
    assert done.code == 0, done.err
    # as written (double quotes), not rebuilt from the syntax tree (single quotes)
    assert 'self.page_size is None and self.attention_backend == "fa3"' in done.out, done.out


def test_an_entry_that_is_there_but_cannot_be_read_is_not_passed_over(tmp_path):
    """A revision that has the target's own file but cannot be read (a syntax error)
    cannot be evaluated: `otherwise:` is for a revision without it, not a fallback."""
    repo = FixtureRepo(tmp_path / "repo")
    broken = {**new("True"), PIPELINE_PATH: "def run_resolution_pipeline(server_args)\n"}
    repo.commit("old", old("unset"))
    sha = repo.commit("broken", {**broken, ARGS: old("unset")[ARGS]})
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX)
    done = run_cli("snapshot", sha, "--repo", str(tmp_path / "repo"), "--matrix", str(matrix),
                   "--no-cache")  # fmt: skip
    assert done.code == 4 and f"syntax error in {PIPELINE_PATH}" in done.err, done.err


def test_a_revision_defining_no_entry_names_each_one_it_lacks(tmp_path):
    repo = FixtureRepo(tmp_path / "repo")
    sha = repo.commit("none", {ARGS: "class ServerArgs:\n    pass\n"})
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX)
    done = run_cli("snapshot", sha, "--repo", str(tmp_path / "repo"), "--matrix", str(matrix),
                   "--no-cache")  # fmt: skip
    assert done.code == 4, done.err
    assert f"{PIPELINE_PATH} does not exist" in done.err
    assert f"no method __post_init__ of class ServerArgs in {ARGS}" in done.err


@pytest.mark.parametrize(
    "target, wrong",
    [
        ("  path: a.py\n  function: f\n  otherwise: {path: b.py, entry: g}\n",
         "target.otherwise"),
        ("  path: a.py\n  entry: f\n  otherwise: []\n", "target.otherwise"),
        ("  path: a.py\n  entry: f\n  otherwise: {path: ../b.py, entry: g}\n",
         "target.otherwise.path"),
        ("  path: a.py\n  entry: f\n  otherwise: [{path: b.py}]\n",
         "target.otherwise[0].entry"),
        ("  path: a.py\n  entry: f\n  otherwise: {path: b.py, entry: a.b.c}\n",
         "target.otherwise.entry"),
        ("  path: a.py\n  entry: f\n  otherwise: {path: b.py, entry: g, output: x}\n",
         "target.otherwise.output"),
    ],
)  # fmt: skip
def test_a_bad_otherwise_is_one_line_naming_the_key(tmp_path, target, wrong):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(f"name: m\ntarget:\n{target}  output: page_size\naxes:\n  page_size: [1]\n")
    line = one_line_error(run_cli("matrix", "--matrix", str(matrix)))
    assert wrong in line, line


def test_releases_on_either_side_of_the_move_compare_as_their_commits_do(history, tmp_path):
    """A release is read from its archive, whose layout is found from the first of the
    entry's files it holds: a wheel from before the pipeline (no `pipeline.py`) runs
    `otherwise:` as its commit does."""
    root, shas, matrix, expected = history
    wheels = {}
    for key in ("unset", "moved"):
        tree = {}
        for files in list(COMMITS.values())[: list(COMMITS).index(key) + 1]:
            tree.update(files)
        wheels[key] = tmp_path / f"sglang-{key}.whl"
        packaged = {path.removeprefix("python/"): text for path, text in tree.items()}
        wheels[key].write_bytes(build_wheel(packaged, "1.0.0"))
    done = run_cli("diff", f"wheel:{wheels['unset']}", f"wheel:{wheels['moved']}", "--matrix",
                   str(matrix), "--format", "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    assert (done.code, report["changed"], report["notes"]) == (0, [], {}), done.err
    assert report["base"]["ran"] == f"ServerArgs.__post_init__ in {ARGS}"
    done = run_cli("diff", f"wheel:{wheels['unset']}", shas["always"], "--repo", str(root),
                   "--matrix", str(matrix), "--format", "json", "--no-cache")  # fmt: skip
    assert len(json.loads(done.out)["changed"]) == changed(expected, "unset", "always") > 0


RELEASES = os.environ.get("HARNESS_TEST_SGLANG_RELEASES")  # a repository of SGLang's releases


@pytest.mark.skipif(not RELEASES, reason="set HARNESS_TEST_SGLANG_RELEASES to a repository "
                    "built by sglang-release-history")  # fmt: skip
def test_the_shipped_entry_matrix_runs_each_release_as_it_runs_itself():
    """`sglang-entry-llama` across SGLang's move to the pipeline (0.5.18 -> 0.5.19): the
    older side runs `ServerArgs.__post_init__`, the newer `run_resolution_pipeline`,
    every cell evaluates on both, and a backend the user names is the one resolved
    (SGLang keeps an explicit choice where it accepts it)."""
    done = run_cli("diff", "v0.5.18", "v0.5.19", "--repo", RELEASES, "--matrix",
                   "sglang-entry-llama", "--format", "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    assert report["notes"] == {} and done.code in (0, 1, 4), done.err
    assert report["base"]["ran"] == f"ServerArgs.__post_init__ in {ARGS}"
    assert "ran" not in report["head"]
    for tag in ("v0.5.18", "v0.5.19"):
        done = run_cli("snapshot", tag, "--repo", RELEASES, "--matrix", "sglang-entry-llama",
                       "--no-cache")  # fmt: skip
        checked = 0
        for outcome in json.loads(done.out)["outcomes"]:
            cubes = outcome["where"]
            named = [c for c in cubes if None not in c.get("attention_backend", [None])]
            if named and "declares" in outcome["outcome"]:
                assert "attention_backend" not in outcome["outcome"]["declares"], outcome
                checked += 1
        assert checked, "no outcome of a named backend"
