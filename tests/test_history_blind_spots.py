"""`history` and `bisect` say "cannot tell" where the matrix could not see: a change
behind an input the matrix holds fixed is a blind spot between the range's ends, never
"no change" (exit 4), in every format."""

from __future__ import annotations

import json

import pytest

from tests.conftest import git_out, run_cli
from tests.helpers import matrix_holding

HINT = "prefill_cuda_graph = full takes it the other way"


@pytest.fixture
def held_fixed(tmp_path):
    """The FA4 matrix with the prefill CUDA-graph mode held at `breakable`: #30835's new
    clause (a full prefill graph keeps its page size) is never taken."""
    return str(matrix_holding(tmp_path, "prefill_cuda_graph", "breakable"))


def run(history, held_fixed, *argv: str):
    return run_cli(*argv, "--repo", history.repo(), "--matrix", held_fixed, "--no-cache")


def test_history_over_a_change_it_cannot_see_cannot_tell(history, held_fixed):
    result = run(history, held_fixed, "history", "#30835^..#30835", "--format", "json")
    doc = json.loads(result.out)
    assert result.code == 4 and doc["commits"] == [] and doc["cannot_tell"] == []
    assert any(HINT in spot["hint"] for spot in doc["blind_spots"])
    assert all(spot["side"] in ("base", "head") for spot in doc["blind_spots"])


def test_bisect_where_good_and_bad_agree_but_it_cannot_see_cannot_tell(history, held_fixed):
    result = run(history, held_fixed, "bisect", "#30835^", "#30835", "--format", "json")
    doc = json.loads(result.out)
    assert result.code == 4 and doc["culprit"] is None and doc["candidates"] == []
    assert any(HINT in spot["hint"] for spot in doc["blind_spots"])


@pytest.mark.parametrize("command", ["history", "bisect"])
def test_every_format_names_the_blind_spot(history, held_fixed, command):
    ends = ["#30835^..#30835"] if command == "history" else ["#30835^", "#30835"]
    shown = {}
    for fmt in ("text", "markdown", "html"):
        result = run(history, held_fixed, command, *ends, "--format", fmt, "-q")
        assert result.code == 4, (fmt, result.err)
        shown[fmt] = result.out
    assert "Cannot tell: the code changed in" in shown["text"] and HINT in shown["text"]
    assert "**Cannot tell: the code changed in" in shown["markdown"]
    assert 'data-status="4"' in shown["html"] and "Blind spots (" in shown["html"]
    assert HINT in shown["html"]


def test_a_change_the_matrix_sees_is_still_a_change(history):
    """The shipped matrix takes the clause both ways: #30835 is found, exit 1."""
    result = run_cli("history", "#30835^..#30835", "--repo", history.repo(), "--no-cache",
                     "--format", "json")  # fmt: skip
    doc = json.loads(result.out)
    assert result.code == 1 and len(doc["commits"]) == 1 and doc["blind_spots"] == []


def test_release_history_cannot_tell_between_its_first_and_last_release(history, held_fixed):
    from harness import gitio
    from tests.releases import Index, Served, build_wheel, package_files

    repo = gitio.open_repo(history.repo())
    files = {v: package_files(repo, gitio.resolve(repo, rev).sha)
             for v, rev in (("0.2.0", "#30835^"), ("0.3.0", "#30835"))}  # fmt: skip
    index = Index([Served(f"sglang-{v}-py3-none-any.whl", build_wheel(f, v))
                   for v, f in files.items()])  # fmt: skip
    try:
        result = run_cli("history", "pypi:sglang", "--index-url", index.url, "--matrix",
                         held_fixed, "--no-cache", "--format", "json")  # fmt: skip
    finally:
        index.close()
    doc = json.loads(result.out)
    assert result.code == 4 and doc["releases"] == [] and doc["considered"] == 2
    assert any(HINT in spot["hint"] for spot in doc["blind_spots"])


def test_a_range_whose_last_commit_cannot_be_evaluated_cannot_tell(history):
    """#30902 breaks the file's syntax: what the range ends with is not known."""
    result = run_cli("history", "#30902^..#30902", "--repo", history.repo(), "--no-cache",
                     "--format", "json")  # fmt: skip
    doc = json.loads(result.out)
    assert result.code == 4 and doc["commits"] == [] and len(doc["skipped"]) == 1
    assert doc["cannot_tell"] == [
        f"the range's last commit, {doc['skipped'][0]['sha'][:10]}, cannot be evaluated"
    ]


def test_a_range_from_the_root_is_searched_from_its_first_evaluable_commit(history, held_fixed):
    result = run(history, held_fixed, "history", "#30835", "--format", "json")
    doc = json.loads(result.out)
    assert result.code == 4 and doc["status"] == 4 and doc["commits"] == []
    assert any(HINT in spot["hint"] for spot in doc["blind_spots"])


def test_a_range_whose_start_cannot_be_evaluated_cannot_tell(history):
    """#30902 breaks the syntax and #30903 repairs it: what #30903 changed is not known."""
    result = run_cli("history", "#30902..#30903", "--repo", history.repo(), "--no-cache",
                     "--format", "json")  # fmt: skip
    doc = json.loads(result.out)
    broken = git_out(history.root, "log", "--format=%H", "-F", "--grep=(#30902)").split()
    assert result.code == 4 and doc["commits"] == [] and len(broken) == 1
    assert doc["cannot_tell"] == [f"the range's start, {broken[0][:10]}, cannot be evaluated"]


def test_a_range_that_lists_no_commit_has_nothing_to_tell(history, held_fixed):
    """B..A with A before B lists no commit: nothing in the range, nothing unseen."""
    result = run(history, held_fixed, "history", "#30835..#30835^", "--format", "json")
    assert result.code == 0 and json.loads(result.out)["considered"] == 0
