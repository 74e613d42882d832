"""Releases as revisions, against a real simple-API index on loopback serving wheels and
sdists of our own SGLang-shaped package: the answers equal the git-based ones for the same
files, and reading a release costs a few percent of its wheel."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import yaml

from harness import gitio
from tests import oracle
from tests.conftest import one_line_error, run_cli
from tests.releases import Index, Served, build_sdist, build_wheel, package_files

WHEEL = "sglang-{}-py3-none-any.whl"


@pytest.fixture(scope="module")
def archives(history) -> dict[str, bytes]:
    """0.1.0: before #30835 (an sdist only), 0.2.0: before it too (a wheel), 0.3.0: #30835,
    0.4.0: the revert, yanked, 0.5.0: the last commit."""
    repo = gitio.open_repo(history.repo())
    files = {name: package_files(repo, gitio.resolve(repo, rev).sha)
             for name, rev in (("before", "#30835^"), ("pr", "#30835"), ("revert", "#30871"),
                               ("head", "HEAD"))}  # fmt: skip
    return {
        "0.1.0": build_sdist(files["before"], "0.1.0"),
        "0.2.0": build_wheel(files["before"], "0.2.0"),
        "0.3.0": build_wheel(files["pr"], "0.3.0"),
        "0.4.0": build_wheel(files["revert"], "0.4.0"),
        "0.5.0": build_wheel(files["head"], "0.5.0"),
    }


@pytest.fixture
def index(archives):
    served = Index([
        Served("sglang-0.1.0.tar.gz", archives["0.1.0"]),
        *(Served(WHEEL.format(v), archives[v]) for v in ("0.2.0", "0.3.0", "0.5.0")),
        Served(WHEEL.format("0.4.0"), archives["0.4.0"], yanked="a bad build"),
    ])  # fmt: skip
    yield served
    served.close()


def diff(*argv: str) -> tuple[int, dict, str]:
    result = run_cli("diff", *argv, "--format", "json")
    assert result.code in (0, 1, 4), result.err
    return result.code, json.loads(result.out), result.err


def changed_cells(report: dict) -> dict:
    return {oracle.key(i["cell"]): (i["base"]["page_size"], i["head"]["page_size"])
            for i in report["changed"]}  # fmt: skip


@pytest.mark.parametrize("ranges, html", [(True, False), (False, False), (True, True)],
                         ids=["ranges-json", "whole-json", "ranges-html"])  # fmt: skip
def test_two_releases_compare_as_their_commits_do(index, history, tmp_path, ranges, html):
    index.ranges, index.html = ranges, html
    code, report, _ = diff("pypi:sglang==0.2.0", "pypi:sglang==0.3.0", "--index-url", index.url,
                           "--no-cache")  # fmt: skip
    assert code == 1 and changed_cells(report) == oracle.changed_between(False, True)
    assert report["base"]["rev"] == "pypi:sglang==0.2.0" and report["base"]["sha"] is None
    assert report["head"]["subject"] == "sglang 0.3.0 (sglang-0.3.0-py3-none-any.whl)"
    _, by_git, _ = diff("#30835^", "#30835", "--repo", history.repo(), "--no-cache")
    assert report["changed"] == by_git["changed"] and report["summary"] == by_git["summary"]


def test_reading_a_release_costs_a_few_percent_of_its_wheel(index, archives):
    code, _, _ = diff("pypi:sglang==0.3.0", "pypi:sglang==0.3.0", "--index-url", index.url,
                      "--no-cache")  # fmt: skip
    assert code == 0
    wheel = len(archives["0.3.0"])
    assert index.sent <= 0.05 * wheel, (index.sent, wheel)


def test_a_second_run_reads_only_the_end_of_each_wheel(index, tmp_path):
    """With ranges, a wheel's directory is read afresh each run (the index's sha256 never
    covered it); the members come from the cache, checked against it."""
    cache = tmp_path / "cache"
    first = diff("pypi:sglang==0.2.0", "pypi:sglang==0.3.0", "--index-url", index.url,
                 "--cache-dir", str(cache))  # fmt: skip
    requests_before, sent_before = len(index.requests), index.sent
    again = diff("pypi:sglang==0.2.0", "pypi:sglang==0.3.0", "--index-url", index.url,
                 "--cache-dir", str(cache))  # fmt: skip
    assert again[1] == first[1]
    assert sorted(index.requests[requests_before:]) == [f"/files/{WHEEL.format(v)}"
                                                        for v in ("0.2.0", "0.3.0")]  # fmt: skip
    assert index.sent - sent_before <= 2 * (64 << 10)


def test_a_second_run_of_checked_whole_downloads_reads_nothing(index, tmp_path):
    index.ranges = False
    cache = tmp_path / "cache"
    first = diff("pypi:sglang==0.1.0", "pypi:sglang==0.3.0", "--index-url", index.url,
                 "--cache-dir", str(cache))  # fmt: skip
    requests_before = len(index.requests)
    again = diff("pypi:sglang==0.1.0", "pypi:sglang==0.3.0", "--index-url", index.url,
                 "--cache-dir", str(cache))  # fmt: skip
    assert again[1] == first[1] and len(index.requests) == requests_before


def test_an_sdist_only_release_is_downloaded_whole_and_read(index):
    code, report, _ = diff("pypi:sglang==0.1.0", "pypi:sglang==0.3.0", "--index-url", index.url,
                           "--no-cache")  # fmt: skip
    assert code == 1 and changed_cells(report) == oracle.changed_between(False, True)
    assert report["base"]["subject"] == "sglang 0.1.0 (sglang-0.1.0.tar.gz)"


def test_a_wrong_sha256_is_refused_in_one_line(archives):
    lying = Index([Served(WHEEL.format("0.2.0"), archives["0.2.0"], sha256="0" * 64)],
                  ranges=False)  # fmt: skip
    try:
        line = one_line_error(run_cli("diff", "pypi:sglang==0.2.0", "pypi:sglang==0.2.0",
                                      "--index-url", lying.url, "--no-cache"))  # fmt: skip
    finally:
        lying.close()
    assert "sha256" in line and "refusing" in line


def test_local_wheel_and_sdist_files_are_revisions(archives, tmp_path):
    wheel, sdist = tmp_path / WHEEL.format("0.3.0"), tmp_path / "sglang-0.1.0.tar.gz"
    wheel.write_bytes(archives["0.3.0"])
    sdist.write_bytes(archives["0.1.0"])
    code, report, _ = diff(f"sdist:{sdist}", f"wheel:{wheel}", "--no-cache")
    assert code == 1 and changed_cells(report) == oracle.changed_between(False, True)


def test_a_yanked_pin_warns_and_history_skips_it(index):
    _, _, err = diff("pypi:sglang==0.3.0", "pypi:sglang==0.4.0", "--index-url", index.url,
                     "--no-cache")  # fmt: skip
    assert "sglang 0.4.0 is yanked on the index: a bad build" in err
    result = run_cli("history", "pypi:sglang", "--index-url", index.url, "--no-cache",
                     "--format", "json")  # fmt: skip
    assert result.code == 1, result.err
    doc = json.loads(result.out)
    assert [r["version"] for r in doc["releases"]] == ["0.3.0", "0.5.0"]
    assert doc["releases"][0]["cells_changed"] == len(oracle.changed_between(False, True))
    assert set(doc["releases"][0]) == {"version", "date", "cells_changed", "reverts", "summary"}
    assert doc["releases"][1]["reverts"] == "0.3.0"
    assert doc["skipped"] == [{"version": "0.4.0", "reason": "yanked: a bad build"}]


def test_history_over_a_span_of_releases(index):
    result = run_cli("history", "pypi:sglang", "--releases", "0.3.0..0.5.0", "--index-url",
                     index.url, "--no-cache", "--format", "json")  # fmt: skip
    doc = json.loads(result.out)
    assert doc["considered"] == 2 and [r["version"] for r in doc["releases"]] == ["0.5.0"]


def test_a_release_is_named_by_its_whole_version_in_every_history_list(archives):
    """A version is no sha: `0.3.0.post1` is listed whole (it was cut to ten characters,
    `0.3.0.post`), in the changes and among the releases skipped."""
    served = Index([Served(WHEEL.format("0.2.0"), archives["0.2.0"]),
                    Served(WHEEL.format("0.3.0.post1"), archives["0.3.0"]),
                    Served(WHEEL.format("0.4.0.post12"), build_wheel(
                        {"sglang/srt/arg_groups/overrides.py": "def broken(\n"}, "0.4.0.post12"))])  # fmt: skip
    try:
        result = run_cli("history", "pypi:sglang", "--index-url", served.url, "--no-cache")
    finally:
        served.close()
    changes = [line for line in result.out.splitlines() if line.startswith("0.3.0")]
    skipped = [line for line in result.out.splitlines() if line.startswith("  0.4.0")]
    assert changes and changes[0].split()[0] == "0.3.0.post1", (result.out, result.err)
    assert skipped and skipped[0].split()[0] == "0.4.0.post12", result.out


def test_bisect_between_releases_names_the_release(index):
    result = run_cli("bisect", "pypi:sglang==0.1.0", "pypi:sglang==0.3.0", "--index-url",
                     index.url, "--no-cache", "--format", "json")  # fmt: skip
    assert result.code == 1, result.err  # found
    assert json.loads(result.out)["culprit"]["sha"] == "0.3.0"


@pytest.mark.parametrize(
    "argv, words",
    [
        (["pypi:sglang==9.9.9", "pypi:sglang==0.2.0"], ["no file of version 9.9.9", "0.5.0"]),
        (["pypi:nothing==1.0", "pypi:nothing==1.0"], ["no such project", "nothing"]),
        (["pypi:sglang", "pypi:sglang==0.2.0"], ["pypi:NAME==VERSION"]),
        (["pypi:sglang==x.y", "pypi:sglang==0.2.0"], ["not a version"]),
        (["wheel:/no/such.whl", "pypi:sglang==0.2.0"], ["cannot read /no/such.whl"]),
    ],
    ids=["version", "project", "unpinned", "bad-version", "no-file"],
)
def test_a_release_that_names_nothing_is_one_line(index, argv, words):
    line = one_line_error(run_cli("diff", *argv, "--index-url", index.url, "--no-cache"))
    for word in words:
        assert word in line


def test_a_target_the_package_does_not_hold_is_absent(index, tmp_path):
    matrix = tmp_path / "m.yaml"
    shipped = Path(__file__).resolve().parents[1] / "matrices" / "sglang-fa4-page-size.yaml"
    matrix.write_text(shipped.read_text().replace("arg_groups/overrides.py", "nowhere.py"))
    code, report, _ = diff("pypi:sglang==0.2.0", "pypi:sglang==0.3.0", "--index-url", index.url,
                           "--no-cache", "--matrix", str(matrix))  # fmt: skip
    assert code == 4 and report["cannot_tell"] == [
        f"{side} has no _fa4_page_constraint in python/sglang/srt/nowhere.py"
        for side in ("base", "head")
    ]
    assert (
        "absent" in report["notes"]["head"]
        and "nowhere.py is not in sglang 0.3.0" in (report["notes"]["head"])
    )


@pytest.mark.real_index
@pytest.mark.skipif(not os.environ.get("HARNESS_TEST_REAL_INDEX"),
                    reason="reads the real package index: set HARNESS_TEST_REAL_INDEX=1")  # fmt: skip
def test_sglang_releases_from_the_real_index(tmp_path):
    result = run_cli("diff", "pypi:sglang==0.5.18", "pypi:sglang==0.5.23", "--cache-dir",
                     str(tmp_path), "--format", "json")  # fmt: skip
    assert result.code in (0, 1), result.err
    report = json.loads(result.out)
    assert report["notes"] == {} and report["cells"] == 349_920


def test_a_damaged_member_is_one_line(archives):
    data = bytearray(archives["0.3.0"])
    at = data.find(b"sglang/srt/arg_groups/overrides.py") + 200  # in its compressed data
    data[at] ^= 0xFF
    served = Index([Served(WHEEL.format("0.3.0"), bytes(data))])
    try:
        line = one_line_error(run_cli("diff", "pypi:sglang==0.3.0", "pypi:sglang==0.3.0",
                                      "--index-url", served.url, "--no-cache"))  # fmt: skip
    finally:
        served.close()
    assert "sglang 0.3.0" in line and ("CRC" in line or "inflated" in line), line


@pytest.mark.parametrize("page", [b"{not json", b'{"files": 5}', b"[1, 2]"])
def test_an_index_page_of_the_wrong_shape_is_one_line(page, tmp_path):
    served = Index([])
    served.listing = lambda: (page, "application/vnd.pypi.simple.v1+json")
    try:
        line = one_line_error(run_cli("diff", "pypi:sglang==0.3.0", "pypi:sglang==0.3.0",
                                      "--index-url", served.url, "--no-cache"))  # fmt: skip
    finally:
        served.close()
    assert "package index" in line


def test_a_pipeline_drawing_on_other_modules_reads_them_from_the_wheel(index, history):
    """The pipeline's closure spans several files of the package: each is mapped too."""
    pipeline = ("--matrix", "sglang-page-size-pipeline", "--no-cache")
    code, report, _ = diff("pypi:sglang==0.2.0", "pypi:sglang==0.3.0", "--index-url", index.url,
                           *pipeline)  # fmt: skip
    _, by_git, _ = diff("#30835^", "#30835", "--repo", history.repo(), *pipeline)
    # a helper module the wheel did not give would make the release unevaluable (a note)
    assert code == 1 and report["notes"] == {} and report["changed"] == by_git["changed"]


def test_an_index_on_disk_works_as_pip_reads_one(archives, tmp_path):
    """A file: index (a directory per project holding index.html), as air-gapped mirrors are."""
    files = tmp_path / "files"
    files.mkdir()
    links = []
    for version in ("0.2.0", "0.3.0"):
        name = WHEEL.format(version)
        (files / name).write_bytes(archives[version])
        sha = hashlib.sha256(archives[version]).hexdigest()
        links.append(f'<a href="../../files/{name}#sha256={sha}">{name}</a>')
    project = tmp_path / "simple" / "sglang"
    project.mkdir(parents=True)
    (project / "index.html").write_text("<html><body>" + "\n".join(links) + "</body></html>")
    code, report, _ = diff("pypi:sglang==0.2.0", "pypi:sglang==0.3.0", "--index-url",
                           (tmp_path / "simple").as_uri(), "--no-cache")  # fmt: skip
    assert code == 1 and changed_cells(report) == oracle.changed_between(False, True)


def test_a_matrix_is_inferred_from_a_release_with_no_repository(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no repository here
    out = tmp_path / "m.yaml"
    result = run_cli("matrix", "--infer", "pypi:sglang==0.3.0", "--passes",
                     "_fa4_page_constraint", "--index-url", index.url, "-o", str(out))  # fmt: skip
    assert result.code == 0, result.err
    axes = yaml.safe_load(out.read_text())["axes"]
    assert axes["attention_backend"] == [None, "fa4", "other"]
    assert "full" in axes["prefill_cuda_graph"]  # 0.3.0 holds #30835's clause


def test_a_releases_passes_are_its_own_in_a_repository_or_none(index, history, tmp_path,
                                                               monkeypatch):  # fmt: skip
    """`passes pypi:...` lists the release's passes, as its commit has them: they were the
    working tree's in a repository (a silent wrong answer), and a traceback outside one."""

    def passes(*argv: str) -> list:
        result = run_cli("passes", *argv, "--format", "json")
        assert result.code in (0, 1), result.err
        return json.loads(result.out)["passes"]

    release = ("pypi:sglang==0.2.0", "--index-url", index.url, "--no-cache")
    by_git = passes("#30835^", "--repo", history.repo(), "--no-cache")
    assert by_git != passes("HEAD", "--repo", history.repo(), "--no-cache")  # it can tell
    assert passes(*release, "--repo", history.repo()) == by_git
    monkeypatch.chdir(tmp_path)  # no repository here
    assert passes(*release) == by_git
