"""SGLang's own definition of a name the world answers: a change to it is a blind spot.

The passes import `get_platform` from `runtime_context.py`, where SGLang
defines it; the world answers it from the cell and never runs that file. A
pull request that edits only that definition changes what SGLang computes
(shown here by importing the fixture's files in plain Python on a machine
that says it is SM100) and nothing the harness evaluates: the diff must say
"cannot tell" (exit 4) naming the statement that changed, never "no change".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.helpers import fa4_matrix

PACKAGE = "python/sglang/srt"
PASSES_PATH = f"{PACKAGE}/arg_groups/overrides.py"
RUNTIME = f"{PACKAGE}/runtime_context.py"
UTILS = f"{PACKAGE}/utils/__init__.py"
COMMON = f"{PACKAGE}/utils/common.py"

PASSES = '''\
"""Post-process passes (a contributor's version)."""

import logging

from sglang.srt.runtime_context import get_platform
from sglang.srt.utils import is_hip

logger = logging.getLogger(__name__)


def _fa4_page_constraint(view):
    if view.attention_backend == "fa4" and get_platform().is_sm100 and not is_hip():
        return {"page_size": 128}
    return {}
'''

RUNTIME_TEXT = '''\
"""The machine's facts, read once per process."""

import os

_PROBES = {"is_sm100": "SM100"}


class _Platform:
    def __init__(self):
        self.is_sm100 = os.environ.get("FIXTURE_GPU") == _PROBES["is_sm100"]


_PLATFORM = _Platform()


def get_platform():
    """The machine's facts."""
    return _PLATFORM


def unrelated_helper(x):
    return x + 1
'''

COMMON_TEXT = '''\
"""Machine probes."""

import os


def _vendor():
    return os.environ.get("FIXTURE_VENDOR", "nvidia")


def is_hip():
    return _vendor() == "amd"
'''

MATRIX = fa4_matrix("stand-ins")


def repository(tmp_path: Path, head: dict[str, str]) -> tuple[FixtureRepo, list[str]]:
    """Base: the fixture package; head: the same with `head`'s files replaced."""
    files = {
        PASSES_PATH: PASSES,
        RUNTIME: RUNTIME_TEXT,
        UTILS: "from .common import *\n",
        COMMON: COMMON_TEXT,
        f"{PACKAGE}/arg_groups/__init__.py": "",
    }
    repo = FixtureRepo(tmp_path / "repo")
    shas = [repo.commit("base", files), repo.commit("head", {**files, **head})]
    return repo, shas


def diff(tmp_path: Path, head: dict[str, str], matrix: str = MATRIX):
    repo, shas = repository(tmp_path, head)
    (tmp_path / "matrix.yaml").write_text(matrix)
    done = run_cli(
        "diff", *shas, "--repo", str(repo.root), "--matrix", str(tmp_path / "matrix.yaml"),
        "--format", "json", "--no-cache",
    )  # fmt: skip
    return done, json.loads(done.out)


def as_sglang_runs_it(tmp_path: Path, head: dict[str, str], sha_index: int) -> dict:
    """What the pass returns for fa4 when SGLang imports the files on an SM100 machine."""
    repo, shas = repository(tmp_path, head)
    root, tree = repo.root, tmp_path / f"tree{sha_index}"
    subprocess.run(["git", "-C", str(root), "worktree", "add", "-q", str(tree), shas[sha_index]],
                   check=True, capture_output=True)  # fmt: skip
    return fa4_result(tree)


def fa4_result(tree: Path) -> dict:
    """What the pass returns for fa4 when plain Python imports the files under `tree` on an
    SM100 machine."""
    script = (
        "import json, sys; sys.path.insert(0, 'python')\n"
        "from types import SimpleNamespace\n"
        "from sglang.srt.arg_groups.overrides import _fa4_page_constraint\n"
        "print(json.dumps(_fa4_page_constraint(SimpleNamespace(attention_backend='fa4'))))\n"
    )
    env = {**os.environ, "FIXTURE_GPU": "SM100"}
    run = subprocess.run([sys.executable, "-c", script], cwd=tree, env=env,
                         capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(run.stdout)


def line_of(text: str, fragment: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


SWAPPED = RUNTIME_TEXT.replace('"is_sm100": "SM100"', '"is_sm100": "SM90"')


def test_a_changed_home_definition_changes_what_sglang_computes(tmp_path: Path):
    """The premise, checked in plain Python: the head's own get_platform says SM90 where
    the machine is SM100, so SGLang's fa4 page size is gone."""
    head = {RUNTIME: SWAPPED}
    assert as_sglang_runs_it(tmp_path / "a", head, 0) == {"page_size": 128}
    assert as_sglang_runs_it(tmp_path / "b", head, 1) == {}


def test_a_change_to_the_definition_the_world_stands_for_is_cannot_tell(tmp_path: Path):
    done, report = diff(tmp_path, {RUNTIME: SWAPPED})
    assert done.code == 4, done.out + done.err
    assert report["changed"] == []
    [spot] = report["blind_spots"]
    assert (spot["side"], spot["path"]) == ("head", RUNTIME)
    assert spot["line"] == line_of(SWAPPED, "_PROBES = ")  # the statement that changed
    assert spot["function"] == "get_platform" and spot["seen"] == "never run"
    assert "bindings:" in spot["hint"]


def test_the_definition_is_followed_through_a_re_export_into_its_helpers(tmp_path: Path):
    """`is_hip` is imported from `sglang.srt.utils`, which takes it from `common.py` with
    `import *`; the edit is in a helper `is_hip` calls."""
    head = COMMON_TEXT.replace('== "amd"', '!= "amd"')
    done, report = diff(tmp_path, {COMMON: head})
    assert done.code == 4, done.out + done.err
    [spot] = report["blind_spots"]
    assert (spot["path"], spot["line"]) == (COMMON, line_of(head, '!= "amd"') - 1)
    assert spot["function"] == "is_hip"


@pytest.mark.parametrize(
    "edit",
    [
        RUNTIME_TEXT.replace("return x + 1", "return x + 2"),  # a function it does not read
        RUNTIME_TEXT.replace('"""The machine\'s facts."""', '"""Facts, answered early."""'),
        RUNTIME_TEXT.replace("_PLATFORM = _Platform()", "_PLATFORM = _Platform()  # once"),
        RUNTIME_TEXT + "\n\ndef another_probe():\n    return None\n",
    ],
    ids=["unrelated-function", "docstring", "comment", "new-function"],
)
def test_edits_that_leave_the_definition_as_it_was_are_no_change(edit: str, tmp_path: Path):
    done, report = diff(tmp_path, {RUNTIME: edit})
    assert done.code == 0, done.out + done.err
    assert report["blind_spots"] == []


def test_a_name_the_matrix_binds_on_purpose_is_not_compared(tmp_path: Path):
    matrix = MATRIX + "bindings:\n  get_platform: {call: {object: {is_sm100: true}}}\n"
    done, report = diff(tmp_path, {RUNTIME: SWAPPED}, matrix)
    assert done.code == 0, done.out + done.err
    assert report["blind_spots"] == []


def test_with_changed_cells_the_spot_is_listed_after_them(tmp_path: Path):
    """A change the cells show (exit 1), and the definition change named beside it."""
    passes = PASSES.replace("128", "64")
    done, report = diff(tmp_path, {PASSES_PATH: passes, RUNTIME: SWAPPED})
    assert done.code == 1, done.out + done.err
    expected = {("fa4", "sm100", p) for p in (None, 1)}  # the pass decides fa4 on sm100
    changed = {tuple(c["cell"][a] for a in ("attention_backend", "platform", "page_size"))
               for c in report["changed"]}  # fmt: skip
    assert changed == expected
    assert [s["function"] for s in report["blind_spots"]] == ["get_platform"]
    text = run_cli("diff", *report_shas(report), "--repo", str(tmp_path / "repo"),
                   "--matrix", str(tmp_path / "matrix.yaml"), "--no-cache")  # fmt: skip
    assert text.code == 1 and "never run" in text.out and f"{RUNTIME}:" in text.out


def report_shas(report: dict) -> list[str]:
    return [report["base"]["sha"], report["head"]["sha"]]


def test_a_name_only_the_head_imports_is_compared_with_the_bases_definition(tmp_path: Path):
    """The pull request starts reading `is_hip` and, in the same change, edits SGLang's
    definition of it: the base's code never imported it, its definition still counts."""
    passes = PASSES.replace(" and not is_hip()", "").replace(
        "from sglang.srt.utils import is_hip\n", ""
    )
    head_common = COMMON_TEXT.replace('== "amd"', '!= "amd"')
    repo, _ = repository(tmp_path, {})
    root = repo.root
    base = repo.commit("base without is_hip", {PASSES_PATH: passes})
    head = repo.commit("head", {PASSES_PATH: PASSES, COMMON: head_common})
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    done = run_cli("diff", base, head, "--repo", str(root), "--matrix",
                   str(tmp_path / "matrix.yaml"), "--format", "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    never_run = [
        (s["function"], s["path"]) for s in report["blind_spots"] if s["seen"] == "never run"
    ]
    assert never_run == [("is_hip", COMMON)]
    assert done.code == 4  # no cell changed: is_hip is False on every platform of the matrix


@pytest.mark.parametrize("depth", [400, 5000])
def test_a_home_file_past_the_parsing_bounds_is_cannot_tell_in_one_report(depth, tmp_path):
    """A definition nested past the harness's cap (or Python's) cannot be compared: said
    as a blind spot with the reason, never a crash and never "no change"."""
    deep = "_DEPTH = " + "-" * depth + "1\n"
    head = RUNTIME_TEXT.replace("_PLATFORM = _Platform()", deep + "_PLATFORM = _Platform()")
    done, report = diff(tmp_path, {RUNTIME: head.replace("_Platform()", "_Platform(_DEPTH)")})
    assert done.code == 4, done.out + done.err
    [spot] = report["blind_spots"]
    assert spot["path"] == RUNTIME and "could not be read" in spot["hint"]


def test_inferred_with_no_pass_changed_still_compares_the_definitions(tmp_path: Path):
    """`--matrix inferred` finds no pass whose code changed: that is "nothing changed"
    only if SGLang's definitions the passes draw on did not change either."""
    registered = PASSES.replace(
        "import logging\n",
        "import logging\n\nfrom sglang.srt.arg_groups.registry import register_post_process\n",
    ).replace("\ndef _fa4", "\n@register_post_process\ndef _fa4")
    for name, runtime, code in (("swapped", SWAPPED, 4), ("unread", UNREAD_EDIT, 0)):
        repo, _ = repository(tmp_path / name, {PASSES_PATH: registered, RUNTIME: runtime})
        repo.commit("base again", {PASSES_PATH: registered, RUNTIME: RUNTIME_TEXT})
        base = repo.commit("head again", {PASSES_PATH: registered, RUNTIME: runtime})
        done = run_cli("diff", f"{base}~1", base, "--repo", str(repo.root), "--matrix",
                       "inferred", "--no-cache")  # fmt: skip
        assert done.code == code, done.out + done.err
        assert ("get_platform" in done.err) is (code == 4), done.err


UNREAD_EDIT = RUNTIME_TEXT.replace("return x + 1", "return 2")  # nothing draws on it


def test_a_world_name_imported_inside_the_pass_is_compared_too(tmp_path: Path):
    inside = PASSES.replace("from sglang.srt.runtime_context import get_platform\n", "").replace(
        "def _fa4_page_constraint(view):\n",
        "def _fa4_page_constraint(view):\n"
        "    from sglang.srt.runtime_context import get_platform\n\n",
    )
    repo = FixtureRepo(tmp_path / "repo")
    files = {PASSES_PATH: inside, RUNTIME: RUNTIME_TEXT, UTILS: "from .common import *\n",
             COMMON: COMMON_TEXT}  # fmt: skip
    shas = [repo.commit("base", files), repo.commit("head", {**files, RUNTIME: SWAPPED})]
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    done = run_cli("diff", *shas, "--repo", str(repo.root), "--matrix",
                   str(tmp_path / "matrix.yaml"), "--format", "json", "--no-cache")  # fmt: skip
    assert done.code == 4, done.out + done.err
    assert [s["function"] for s in json.loads(done.out)["blind_spots"]] == ["get_platform"]


def test_a_definition_the_head_no_longer_has_where_its_code_imports_it_is_cannot_tell(tmp_path):
    """The head's own code imports get_platform from runtime_context.py, which no longer
    defines it statically (a function made at import): not "nothing to compare"."""
    made = RUNTIME_TEXT.replace("def get_platform():", "def _make():").replace(
        "def unrelated_helper", "get_platform = _make\n\n\ndef unrelated_helper"
    )
    made = made.replace("get_platform = _make", "globals()['get_platform'] = _make")
    done, report = diff(tmp_path, {RUNTIME: made})
    assert done.code == 4, done.out + done.err
    [spot] = report["blind_spots"]
    assert spot["function"] == "get_platform" and "could not be read" in spot["hint"]


def test_a_pull_request_that_edits_only_its_pass_reads_no_definition(tmp_path: Path):
    """Only the passes' file changed: no definition the world answers can have, and none is
    read; a home file nested past the parsing bounds at both revisions says nothing."""
    deep = RUNTIME_TEXT + "\n_DEEP = " + "-" * 5000 + "1\n"
    repo = FixtureRepo(tmp_path / "repo")
    files = {PASSES_PATH: PASSES, RUNTIME: deep, UTILS: "from .common import *\n",
             COMMON: COMMON_TEXT}  # fmt: skip
    shas = [
        repo.commit("base", files),
        repo.commit("head", {PASSES_PATH: PASSES.replace("128", "64")}),
    ]
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    done = run_cli("diff", *shas, "--repo", str(repo.root), "--matrix",
                   str(tmp_path / "matrix.yaml"), "--format", "json", "--no-cache")  # fmt: skip
    assert done.code == 1, done.out + done.err
    assert json.loads(done.out)["blind_spots"] == []


SWALLOWED = """class _Swallow:
    def __init__(self):
        self.failed = []

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        self.failed.append(kind is not None)
        return True


def _fa4_page_constraint(view):
    caught = _Swallow()
    with caught:
        is_hip(view)
    size = {True: 64, False: 128}[any(caught.failed)]
"""


def test_a_helper_sglang_defines_with_no_parameter_refuses_an_argument(tmp_path: Path):
    """SGLang's `is_hip()` takes nothing: called with the view it raises TypeError, which a
    context manager can swallow with no condition for a blind spot to name. The world's
    raises it too, so the page size is SGLang's."""
    text = PASSES.replace("def _fa4_page_constraint(view):\n", SWALLOWED).replace(
        'return {"page_size": 128}', 'return {"page_size": size}'
    )
    head = {PASSES_PATH: text}
    assert as_sglang_runs_it(tmp_path / "sglang", head, 1) == {"page_size": 64}
    done, report = diff(tmp_path, head)
    assert done.code == 1, (done.err, report)
    changed = {(c["cell"]["attention_backend"], c["cell"]["platform"]): c["head"]["page_size"]
               for c in report["changed"]}  # fmt: skip
    assert changed == {("fa4", "sm100"): 64}


PARTIAL_COMMON = '''\
"""Machine probes."""

import os
from functools import lru_cache, partial


def _check_device(majors):
    return os.environ.get("FIXTURE_GPU", "") in [f"SM{major}0" for major in majors]


is_sm100_supported = lru_cache(maxsize=1)(partial(_check_device, majors=(10,)))
'''

PARTIAL_PASSES = '''\
"""Post-process passes."""

from sglang.srt.utils import is_sm100_supported


def _fa4_page_constraint(view):
    if view.attention_backend == "fa4" and is_sm100_supported():
        return {"page_size": 128}
    return {}
'''


def test_a_check_sglang_makes_from_a_partial_refuses_arguments(tmp_path: Path):
    """SGLang's `is_sm100_supported` is an lru_cache of a partial: a keyword replaces what
    the partial fixes, so `is_sm100_supported(majors=(9,))` asks about SM90 (plain Python,
    on an SM100 machine: the page size is gone). The world cannot answer that: the call
    is refused and the diff cannot tell, never "no change"."""
    head = PARTIAL_PASSES.replace("is_sm100_supported()", "is_sm100_supported(majors=(9,))")
    files = {COMMON: PARTIAL_COMMON, UTILS: "from .common import *\n",
             f"{PACKAGE}/arg_groups/__init__.py": ""}  # fmt: skip
    assert _runs(tmp_path / "base", {**files, PASSES_PATH: PARTIAL_PASSES}) == {"page_size": 128}
    assert _runs(tmp_path / "head", {**files, PASSES_PATH: head}) == {}
    repo = FixtureRepo(tmp_path / "repo")
    shas = [repo.commit("base", {**files, PASSES_PATH: PARTIAL_PASSES}),
            repo.commit("head", {PASSES_PATH: head})]  # fmt: skip
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    done = run_cli("diff", *shas, "--repo", str(repo.root), "--matrix",
                   str(tmp_path / "matrix.yaml"), "--no-cache")  # fmt: skip
    assert done.code == 4, done.out + done.err
    assert "is_sm100_supported() called with arguments" in done.out + done.err


def _runs(root: Path, files: dict[str, str]) -> dict:
    """`fa4_result` of `files` written under `root`."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return fa4_result(root)
