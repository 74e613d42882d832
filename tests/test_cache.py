"""The on-disk cache: reused across runs, and never the source of a wrong answer."""

from __future__ import annotations

import json
from pathlib import Path

from tests import oracle
from tests.conftest import run_cli

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


def cache_files(cache: Path) -> list[Path]:
    return sorted(cache.glob("tables/*/*.bin"))


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
