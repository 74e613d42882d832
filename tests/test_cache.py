"""The on-disk cache: reused across runs, and never the source of a wrong answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import oracle
from tests.conftest import git_out, run_cli

REVS = ("#30835^", "#30835")


def diff_json(history, cache: Path, *extra: str):
    result = run_cli(
        "diff", *REVS, "--repo", history.repo(), "--format", "json", "--cache-dir", str(cache),
        *extra,
    )  # fmt: skip
    return result, json.loads(result.out)


def changed(report: dict) -> dict:
    return {
        oracle.key(i["cell"]): (i["base"]["page_size"], i["head"]["page_size"])
        for i in report["changed"]
    }


def cache_files(cache: Path, kind: str = "tables") -> list[Path]:
    return sorted(cache.glob(f"{kind}/*/*.bin"))


def forget_reports(cache: Path) -> None:
    """Remove the stored reports, so that the next diff reads the tables."""
    for path in cache_files(cache, "reports"):
        path.unlink()


def test_a_second_run_reads_the_tables_it_wrote(history, tmp_path):
    cache = tmp_path / "cache"
    first, report = diff_json(history, cache)
    assert first.code == 1 and first.err == ""
    files = cache_files(cache)
    assert len(files) == 2  # one table per side: the two closures differ
    stamps = [f.stat().st_mtime_ns for f in files]
    second, again = diff_json(history, cache)
    assert again == report and second.err == ""
    assert [f.stat().st_mtime_ns for f in cache_files(cache)] == stamps
    assert changed(again) == oracle.changed_between(False, True)


def test_the_default_cache_is_under_xdg_cache_home(history, private_cache):
    result = run_cli("diff", *REVS, "--repo", history.repo())
    assert result.code == 1
    assert len(cache_files(private_cache)) == 2


def test_no_cache_writes_nothing(history, private_cache):
    result = run_cli("diff", *REVS, "--repo", history.repo(), "--no-cache")
    assert result.code == 1 and not private_cache.exists()


def test_a_damaged_file_is_replaced_and_the_answer_stays_right(history, tmp_path):
    cache = tmp_path / "cache"
    diff_json(history, cache)
    damaged = cache_files(cache)[0]
    data = bytearray(damaged.read_bytes())
    data[-5] ^= 0xFF
    damaged.write_bytes(bytes(data))
    forget_reports(cache)
    result, report = diff_json(history, cache)
    warnings = result.err.strip().splitlines()
    assert len(warnings) == 1 and "damaged" in warnings[0] and "replaced" in warnings[0]
    assert changed(report) == oracle.changed_between(False, True)
    assert damaged.read_bytes() != bytes(data)  # written again, whole
    again, report = diff_json(history, cache)
    assert again.err == "" and changed(report) == oracle.changed_between(False, True)


def test_a_table_filed_under_another_key_is_not_believed(history, tmp_path):
    """Swap the two files: each is intact, but stored for the other closure."""
    cache = tmp_path / "cache"
    diff_json(history, cache)
    a, b = cache_files(cache)
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    forget_reports(cache)
    result, report = diff_json(history, cache)
    assert "damaged" in result.err
    assert changed(report) == oracle.changed_between(False, True)


def test_an_unwritable_default_cache_warns_once_and_carries_on(history, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    result = run_cli("diff", *REVS, "--repo", history.repo(), "--format", "json")
    warnings = result.err.strip().splitlines()
    assert len(warnings) == 1 and "cannot write" in warnings[0]
    assert "remove" not in warnings[0]  # the file is not ours to remove
    assert changed(json.loads(result.out)) == oracle.changed_between(False, True)
    assert blocker.read_text() == "a file where the cache directory should be\n"


def test_a_cache_dir_that_is_a_file_is_one_line_and_nothing_else(history, tmp_path):
    blocker = tmp_path / "hostname"
    blocker.write_text("myhost\n")
    result = run_cli("diff", *REVS, "--repo", history.repo(), "--cache-dir", str(blocker))
    assert result.code == 2 and result.out == ""
    (line,) = result.err.strip().splitlines()
    assert f"--cache-dir {blocker}: not a directory" in line and "remove" not in line
    assert blocker.read_text() == "myhost\n"


def test_the_same_diff_asked_again_is_read_back_without_evaluating(history, tmp_path):
    cache = tmp_path / "cache"
    first, _ = diff_json(history, cache)
    assert len(cache_files(cache, "reports")) == 1
    for table in cache_files(cache):
        table.unlink()  # were anything evaluated again, its tables would be written again
    second, again = diff_json(history, cache)
    assert (second.code, second.out, second.err) == (first.code, first.out, "")
    assert cache_files(cache) == [] and changed(again) == oracle.changed_between(False, True)


@pytest.mark.parametrize("fmt", ["text", "markdown", "json-sample", "junit", "github"])
def test_a_report_read_back_renders_as_the_evaluated_one(history, tmp_path, fmt):
    cache = tmp_path / "cache"
    where = ("--repo", history.repo(), "--format", fmt)
    cold = run_cli("diff", *REVS, *where, "--no-cache")
    run_cli("diff", *REVS, *where, "--cache-dir", str(cache))
    for table in cache_files(cache):
        table.unlink()
    warm = run_cli("diff", *REVS, *where, "--cache-dir", str(cache))
    assert (warm.code, warm.out) == (cold.code, cold.out) and cold.code == 1
    assert cache_files(cache) == []  # it was read back, not evaluated


def test_what_shapes_a_report_is_part_of_its_key(history, tmp_path):
    """Another selection of cells, or the revisions named otherwise, is another report."""
    cache = tmp_path / "cache"
    diff_json(history, cache)
    _, selected = diff_json(history, cache, "--where", "attention_backend=fa4")
    assert changed(selected) == {
        key: change
        for key, change in oracle.changed_between(False, True).items()
        if key[oracle.NAMES.index("attention_backend")] == ("str", "fa4")
    }
    log = git_out(history.root, "log", "--format=%H %P %s").splitlines()
    head, base = next(
        line.split()[:2]
        for line in log
        if line.endswith("Page size = 1 (#30835)") and "Revert" not in line
    )
    by_sha = run_cli("diff", base, head, "--repo", history.repo(), "--cache-dir", str(cache))
    assert f"base: {base[:10]}" in by_sha.out and "#30835^" not in by_sha.out
    assert len(cache_files(cache, "reports")) == 3


def test_a_damaged_report_is_replaced_and_one_filed_elsewhere_is_not_believed(history, tmp_path):
    cache = tmp_path / "cache"
    diff_json(history, cache)
    diff_json(history, cache, "--where", "attention_backend=fa4")
    a, b = cache_files(cache, "reports")
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)  # each whole, but stored for the other diff
    b.write_bytes(data_a)
    result, report = diff_json(history, cache)
    assert "damaged" in result.err and changed(report) == oracle.changed_between(False, True)
    damaged = bytearray(a.read_bytes())
    damaged[-3] ^= 0xFF
    a.write_bytes(bytes(damaged))
    b.write_bytes(bytes(damaged))
    result, report = diff_json(history, cache)
    assert "damaged" in result.err and changed(report) == oracle.changed_between(False, True)
    again, _ = diff_json(history, cache)
    assert again.err == ""  # written again, whole


def test_a_revision_that_cannot_be_evaluated_leaves_no_report(history, tmp_path):
    cache = tmp_path / "cache"
    where = ("--repo", history.repo(), "--cache-dir", str(cache), "--format", "json")
    result = run_cli("diff", "#30871", "#30902", *where)  # #30902 has a syntax error
    assert "unevaluable" in result.out
    assert cache_files(cache, "reports") == []
