"""The options the pytest entry shares with `harness diff` (`--override-` and diff's name):
each acts as diff's does, and a message about one names it as the pytest user typed it."""

from __future__ import annotations

import pytest

from harness import gitio
from harness.testing.gitrepo import FixtureRepo
from harness.testing.sglang_fixture import OVERRIDES, Overrides, overrides_source
from tests import oracle
from tests.apiserver import Reply
from tests.conftest import run_cli
from tests.helpers import commit_versions, plain_matrix
from tests.releases import Index, Served, build_wheel, package_files
from tests.test_hostile import BASE
from tests.test_pytest_plugin import MATRIX, failed_counts, run_pytest, slice_counts

WHEEL = "sglang-{}-py3-none-any.whl"


def snapshot(rev: str, path, *where: str) -> None:
    """A baseline written without the on-disk cache (the tests below watch the cache)."""
    done = run_cli("snapshot", rev, "-o", str(path), "--no-cache", *where)
    assert (done.code, done.err) == (0, "")


def test_where_keeps_the_slices_and_the_cells_it_names(pytester, history, tmp_path):
    baseline = tmp_path / "baseline.json"
    snapshot("#30835^", baseline, "--repo", history.repo())
    result = run_pytest(pytester, history, baseline, "#30835", "--override-where",
                        "attention_backend=fa4", "--override-where", "page_size=16,64")  # fmt: skip
    expected = slice_counts(
        lambda c: c["attention_backend"] == "fa4" and c["page_size"] in (16, 64)
    )
    nine = len(oracle.AXES["decode_attention_backend"])  # the fa4 slices, one per decode backend
    result.assert_outcomes(failed=len(expected), passed=nine + 1 - len(expected))
    assert failed_counts(result) == expected
    assert expected != slice_counts(lambda c: c["attention_backend"] == "fa4")  # page_size cut


def test_the_cache_is_where_the_options_say(pytester, history, tmp_path, private_cache):
    baseline, kept = tmp_path / "baseline.json", tmp_path / "kept"
    snapshot("#30835^", baseline, "--repo", history.repo())
    result = run_pytest(pytester, history, baseline, "#30835^", "--override-cache-dir", str(kept))
    result.assert_outcomes(passed=82)
    assert any((kept / "tables").iterdir()) and not private_cache.exists()
    result = run_pytest(pytester, history, baseline, "#30835^", "--override-no-cache")
    result.assert_outcomes(passed=82)
    assert not private_cache.exists()  # the default directory is not used either


def test_the_time_limit_is_the_runs(pytester, tmp_path):
    spin = BASE.format(marker="") + "\ndef slow(view):\n    while True:\n        pass\n"
    spin = spin.replace("def target(view):\n", "def target(view):\n    slow(view)\n", 1)
    shas = commit_versions(tmp_path / "repo", [BASE.format(marker=""), spin])
    matrix = tmp_path / "m.yaml"
    matrix.write_text(plain_matrix("spin"))
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--override-matrix", str(matrix), "--override-repo",
        str(tmp_path / "repo"), "--override-rev", f"{shas[0]}...{shas[1]}", "--override-no-cache",
        "--override-time-limit", "1", "--override-memory-limit", "512M",
    )  # fmt: skip
    result.assert_outcomes(failed=3 * 3 + 1)  # each cell is a slice, and the blind-spot item
    assert "ran past 1 s" in result.stdout.str()  # not diff's default of 60 s


def test_releases_are_read_from_the_index_the_option_names(pytester, history, tmp_path):
    repo = gitio.open_repo(history.repo())
    files = {v: package_files(repo, gitio.resolve(repo, rev).sha)
             for v, rev in (("0.2.0", "#30835^"), ("0.3.0", "#30835"))}  # fmt: skip
    index = Index([Served(WHEEL.format(v), build_wheel(f, v)) for v, f in files.items()])
    try:
        baseline = tmp_path / "baseline.json"
        snapshot("pypi:sglang==0.2.0", baseline, "--index-url", index.url)
        result = pytester.runpytest_inprocess(
            "-p", "no:cacheprovider", "--override-matrix", MATRIX, "--override-baseline",
            str(baseline), "--override-rev", "pypi:sglang==0.3.0", "--override-index-url",
            index.url,
        )  # fmt: skip
    finally:
        index.close()
    expected = slice_counts()
    result.assert_outcomes(failed=len(expected), passed=81 - len(expected), skipped=1)
    assert failed_counts(result) == expected  # no repository: blind spots are not looked for


def test_pr_numbers_resolve_through_the_github_option(pytester, github_api, tmp_path):
    local = FixtureRepo(tmp_path / "local")
    local.commit("Add passes", {OVERRIDES: overrides_source(Overrides())})
    squash = local.commit("Restrict FA4 pages (no number in this subject)", {
        OVERRIDES: overrides_source(Overrides(full_clause=True)),
    })  # fmt: skip
    merged = {"number": 42, "merged": True, "merge_commit_sha": squash, "head": {"sha": "0" * 40},
              "base": {"sha": None, "repo": {"clone_url": None}}}  # fmt: skip
    github_api.on("GET", "/repos/octo/sglang/pulls/42", Reply(body=merged))
    common = ["-p", "no:cacheprovider", "--override-matrix", MATRIX, "--override-repo",
              str(local.root), "--override-rev", "#42^...#42"]  # fmt: skip
    result = pytester.runpytest_inprocess(*common, "--override-github", "octo/sglang")
    expected = slice_counts()
    result.assert_outcomes(failed=len(expected), passed=82 - len(expected))
    assert failed_counts(result) == expected
    result = pytester.runpytest_inprocess(*common)  # no API: the local history has no #42
    assert "--override-github OWNER/REPO" in result.stdout.str()


@pytest.mark.parametrize(
    "option, words",
    [
        (["--override-time-limit", "0"], ["--override-time-limit", "more than 0"]),
        (["--override-memory-limit", "lots"], ["--override-memory-limit", "512M or 4G"]),
        (["--override-where", "nope=1"], ["--override-where 'nope=1'", "no axis 'nope'"]),
        (["--override-max-cells", "10"], ["--override-max-cells"]),
        (["--override-github", "not a slug"], ["--override-github", "OWNER/REPO"]),
    ],
    ids=["time", "memory", "where", "max-cells", "github"],
)
def test_bad_values_are_usage_errors_naming_the_option(pytester, history, tmp_path, option, words):
    """Said before the baseline is read (none is written here: its absence is not what
    the usage error is about)."""
    result = run_pytest(pytester, history, tmp_path / "baseline.json", "HEAD", *option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    for word in words:
        assert word in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_a_cache_dir_that_is_a_file_names_the_pytest_options(pytester, history, tmp_path):
    baseline, file = tmp_path / "baseline.json", tmp_path / "file"  # no baseline: said first
    file.write_text("")
    result = run_pytest(pytester, history, baseline, "HEAD", "--override-cache-dir", str(file))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--override-cache-dir {file}: not a directory" in result.stderr.str()
    assert "or --override-no-cache" in result.stderr.str()


def test_only_option_names_are_respelled_never_what_the_user_typed():
    from harness.pytest_plugin import spelled

    assert spelled("harness: --cache-dir x: not a directory; pass one or --no-cache") == (
        "harness: --override-cache-dir x: not a directory; pass one or --override-no-cache"
    )
    assert spelled("ran out of memory (--memory-limit)") == (
        "ran out of memory (--override-memory-limit)"
    )
    typed = [
        "unknown value '--repo' for axis page_size",  # an axis value
        "not a git repository: /tmp/x/--cert",  # a path
        "baseline /tmp/--cert/b.json does not exist",
        "--override-repo-slug and --repo-slug are other options",
        "CA certificates, as pip's --cert (default: PIP_CERT)",  # pip's option, not ours
    ]
    assert [spelled(text) for text in typed] == typed
