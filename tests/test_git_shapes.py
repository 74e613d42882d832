"""git's odd shapes: paths and subjects are data, links are followed, submodules named.

Every case is a real repository built in tmp_path and the real CLI: a target path
with non-ASCII characters (whatever core.quotePath says), commit subjects holding
any byte but NUL (\\x01, line breaks Python splits on, invalid UTF-8), a target path
git would take as a glob, a target that is a symbolic link (followed at commits as
in the working tree; out of the repository: one line), a target in a submodule.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.helpers import plain_matrix


def version(page: int) -> str:
    """A target that sets page_size to `page` on fa4 and leaves it alone otherwise."""
    return f'''"""Passes."""


def target(view):
    if view.backend == "fa4":
        return {{"page_size": {page}}}
    return {{}}
'''


CHANGED = 3  # cells whose result differs between two versions: fa4 x each input page_size


def matrix_for(tmp_path: Path, path: str) -> str:
    where = tmp_path / f"shapes-{abs(hash(path))}.yaml"
    where.write_text(plain_matrix("shapes", json.dumps(path)), encoding="utf-8")
    return str(where)


def history_of(repo: Path, matrix: str, *args: str) -> tuple[int, list[str], int]:
    """history's exit status, the commits it reports, and how many it considered."""
    result = run_cli("history", *args, "--repo", str(repo), "--matrix", matrix, "--format",
                     "json")  # fmt: skip
    assert result.code in (0, 1), result.err
    report = json.loads(result.out)
    return result.code, [c["sha"] for c in report["commits"]], report["considered"]


# --- paths that are not plain ASCII ----------------------------------------------


@pytest.mark.parametrize("quote", ["true", "false"])
def test_history_finds_the_commits_of_a_non_ascii_target_path(tmp_path, quote):
    path = "pkg/dír é/overrides ü.py"
    repo = FixtureRepo(tmp_path / "repo")
    repo.git("config", "core.quotePath", quote)
    repo.commit("first", {path: version(128)})
    repo.commit("a comment", {path: version(128) + "# same behavior\n"})
    changed = repo.commit("change the page", {path: version(64)})  # its parent was scanned
    matrix = matrix_for(tmp_path, path)
    assert history_of(repo.root, matrix) == (1, [changed], 3)


def test_a_target_path_with_glob_characters_is_that_file_only(tmp_path):
    path = "pkg/over[s].py"
    repo = FixtureRepo(tmp_path / "repo")
    repo.commit("first", {path: version(128)})
    repo.commit("a file the glob would match", {"pkg/overs.py": version(1)})
    changed = repo.commit("change the page", {path: version(64)})
    repo.commit("again the glob's file", {"pkg/overs.py": version(2)})
    assert history_of(repo.root, matrix_for(tmp_path, path)) == (1, [changed], 2)


# --- subjects are data ------------------------------------------------------------

SUBJECTS = [
    "start \x01 of heading",  # history's old record separator
    "a\x0bline\x1cbreak\x85for\u2028python",  # str.splitlines splits on each
    "bytes \udcff\udcfe that are not UTF-8",  # surrogateescape: the raw bytes 0xff 0xfe
    "tab\tand\x1b[31m escape",
]


def subject_history(tmp_path: Path) -> tuple[FixtureRepo, list[str]]:
    """A history whose every commit has an odd subject, the page changing at the third."""
    repo = FixtureRepo(tmp_path / "repo")
    path = "pkg/overrides.py"
    shas = [repo.commit(f"{SUBJECTS[0]} (#11)", {path: version(128)})]
    shas.append(repo.commit(f"{SUBJECTS[1]} (#12)", {path: version(128) + "\n# one\n"}))
    shas.append(repo.commit(f"{SUBJECTS[2]} (#13)", {path: version(64)}))
    shas.append(repo.commit(f"{SUBJECTS[3]} (#14)", {path: version(64) + "\n# two\n"}))
    return repo, shas


def test_history_and_bisect_read_any_byte_in_a_subject(tmp_path):
    repo, shas = subject_history(tmp_path)
    matrix = matrix_for(tmp_path, "pkg/overrides.py")
    assert history_of(repo.root, matrix) == (1, [shas[2]], 4)
    result = run_cli("bisect", shas[0], shas[3], "--repo", str(repo.root), "--matrix", matrix,
                     "--format", "json")  # fmt: skip
    assert result.code == 1, result.err
    assert json.loads(result.out)["culprit"]["sha"] == shas[2]
    text = run_cli("history", "--repo", str(repo.root), "--matrix", matrix)
    assert text.code == 1 and shas[2][:10] in text.out and "Traceback" not in text.err


def test_a_pr_number_after_an_odd_subject_names_its_commit(tmp_path):
    repo, shas = subject_history(tmp_path)
    matrix = matrix_for(tmp_path, "pkg/overrides.py")
    for number, sha in zip((11, 12, 13, 14), shas, strict=True):
        result = run_cli("diff", f"#{number}", sha, "--repo", str(repo.root), "--matrix",
                         matrix, "--format", "json")  # fmt: skip
        assert result.code == 0, result.err  # the same commit: nothing changes
    result = run_cli("diff", "#12", "#13", "--repo", str(repo.root), "--matrix", matrix,
                     "--format", "json")  # fmt: skip
    assert result.code == 1 and len(json.loads(result.out)["changed"]) == CHANGED


# --- symbolic links and submodules -------------------------------------------------

LINK = "pkg/overrides.py"
REAL = "real/passes.py"


def linked_repo(tmp_path: Path) -> tuple[FixtureRepo, list[str]]:
    """The target is a link to real/passes.py; that file changes, the link never does."""
    repo = FixtureRepo(tmp_path / "repo")
    repo.write(REAL, version(128))
    (repo.root / "pkg").mkdir()
    os.symlink("../real/passes.py", repo.root / LINK)
    repo.git("add", "--", REAL, LINK)
    repo.ticks += 1
    repo.git("commit", "-q", "-m", "first")
    shas = [repo.git("rev-parse", "HEAD")]
    shas.append(repo.commit("unrelated", {"README": "x"}))
    shas.append(repo.commit("change the page", {REAL: version(64)}))
    return repo, shas


def test_a_linked_target_is_read_through_its_link_at_commits(tmp_path):
    repo, shas = linked_repo(tmp_path)
    matrix = matrix_for(tmp_path, LINK)
    for target in (matrix, matrix_for(tmp_path, REAL)):  # through the link, and directly
        result = run_cli("diff", shas[0], shas[2], "--repo", str(repo.root), "--matrix", target,
                         "--format", "json")  # fmt: skip
        assert result.code == 1, result.err
        assert len(json.loads(result.out)["changed"]) == CHANGED
    assert history_of(repo.root, matrix)[:2] == (1, [shas[2]])


def test_head_against_its_own_clean_working_tree_through_a_link_is_no_change(tmp_path):
    repo, _ = linked_repo(tmp_path)
    result = run_cli("diff", "HEAD", "--repo", str(repo.root), "--matrix",
                     matrix_for(tmp_path, LINK), "--format", "json")  # fmt: skip
    assert result.code == 0, result.err
    assert json.loads(result.out)["changed"] == []


def test_a_link_out_of_the_repository_is_one_line_at_commits_and_in_the_tree(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text(version(128))
    repo = FixtureRepo(tmp_path / "repo")
    repo.commit("first", {"README": "x"})
    (repo.root / "pkg").mkdir()
    os.symlink(str(outside), repo.root / LINK)
    os.symlink("../../outside.py", repo.root / "pkg" / "up.py")
    repo.git("add", "--", LINK, "pkg/up.py")
    repo.ticks += 1
    repo.git("commit", "-q", "-m", "links out")
    for path in (LINK, "pkg/up.py"):
        matrix = matrix_for(tmp_path, path)
        for revs in (["HEAD~1", "HEAD"], ["HEAD"]):  # at a commit; the working tree
            result = run_cli("diff", *revs, "--repo", str(repo.root), "--matrix", matrix)
            assert result.code == 4, (result.code, result.err)
            said = [line for line in result.out.splitlines() if "leads out of" in line]
            assert said and f"{path} (" in said[0] and "Traceback" not in result.err


def test_a_target_inside_a_submodule_is_named_as_such(tmp_path):
    inner = FixtureRepo(tmp_path / "repo" / "vendor")
    inner.commit("inner", {"overrides.py": version(128)})
    repo = FixtureRepo(tmp_path / "repo")
    repo.write("README", "x")
    repo.git("add", "README", "vendor")  # vendor is a repository: a gitlink (submodule)
    repo.ticks += 1
    repo.git("commit", "-q", "-m", "with a submodule")
    mode = repo.git("ls-tree", "HEAD", "vendor").split()[0]
    assert mode == "160000"
    matrix = matrix_for(tmp_path, "vendor/overrides.py")
    for revs in (["HEAD", "HEAD"], ["HEAD"]):
        result = run_cli("diff", *revs, "--repo", str(repo.root), "--matrix", matrix)
        assert result.code == 4, (result.code, result.err)
        said = [line for line in result.out.splitlines() if "inside the submodule" in line]
        assert said and "vendor/overrides.py" in said[0] and "Traceback" not in result.err


def test_a_repository_directory_ending_in_a_space_is_found(tmp_path):
    repo = FixtureRepo(tmp_path / "repo ")
    repo.commit("first", {LINK: version(128)})
    changed = repo.commit("change", {LINK: version(64)})
    matrix = matrix_for(tmp_path, LINK)
    assert history_of(repo.root, matrix) == (1, [changed], 2)
    done = subprocess.run(["git", "-C", str(repo.root), "rev-parse", "--show-toplevel"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert done.stdout == f"{repo.root}\n"


# --- a long history: memory bounded by what a scan remembers, answers unchanged ------


def test_a_history_longer_than_what_is_remembered_gives_the_same_answer(tmp_path, monkeypatch):
    """Versions remembers a bounded number of commits and parsed pieces (history's memory
    does not grow with its length): with the bounds made tiny, a scan that forgets most of
    what it saw still names exactly the commits that change the page, reverts included."""
    from harness import gitio
    from harness.matrix.load import load_matrix
    from harness.scan import versions as versions_module
    from harness.scan.history import history

    path = "pkg/overrides.py"
    repo = FixtureRepo(tmp_path / "repo")
    pages = [128] * 15 + [64] * 15 + [128] * 15  # the page changes at 15, back at 30
    shas = [repo.commit(f"step {n}", {path: version(page) + f"# step {n}\n"})
            for n, page in enumerate(pages)]  # fmt: skip
    matrix = load_matrix(matrix_for(tmp_path, path))
    monkeypatch.setattr(versions_module, "REMEMBERED", 3)
    monkeypatch.setattr(versions_module, "SAME_BLOB", 1)
    handle = gitio.open_repo(str(repo.root))
    scan = versions_module.Versions(handle, matrix)
    scan.front.sources.max_pieces = 2
    report = history(handle, scan, "HEAD", ["HEAD"])
    assert [c.commit.sha for c in report.changes] == [shas[15], shas[30]]
    assert report.changes[1].reverts is not None and report.changes[1].reverts.sha == shas[15]
    assert len(scan.blobs_at) <= 3 and len(scan.by_blob) <= 3
    assert all(len(same) <= 1 for same in scan.by_blob.values())
    assert len(scan.front.sources.pieces) <= 2
