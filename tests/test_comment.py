"""`harness comment`: one sticky comment per matrix, against a loopback GitHub API."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.github.comment import MAX_BODY, marker
from tests import oracle
from tests.apiserver import Comments, Reply
from tests.conftest import TOKEN, cli_once, one_line_error, run_cli
from tests.helpers import matrix_holding

SLUG, PR = "octo/sglang", 7
MARK = marker("sglang-fa4-page-size")

RULE_ROW = re.compile(r"\| \d+ \| [\d,]+ \| ")  # a row of the rule table, not of the grid


def report_file(history, tmp_path: Path, base: str, head: str, name: str) -> Path:
    """`harness diff BASE HEAD --format json` on the fixture history, written to
    tmp_path/NAME: diffed once a process (about 40 tests here and in four other files
    comment on the same report)."""
    result = cli_once("diff", base, head, "--repo", history.repo(), "--format", "json")
    assert result.code in (0, 1), result.err
    path = tmp_path / name
    path.write_text(result.out)
    return path


def comment(report: Path, *extra: str):
    result = run_cli("comment", "--repo-slug", SLUG, "--pr", str(PR), "--report", str(report),
                     *extra)  # fmt: skip
    assert TOKEN not in result.out + result.err
    return result


def writes(github_api) -> list[tuple[str, str]]:
    return [(s.method, s.path) for s in github_api.seen if s.method in ("POST", "PATCH")]


def test_one_comment_created_then_updated_in_place(github_api, history, tmp_path):
    comments = Comments(github_api, SLUG, PR)
    comments.add("LGTM, but let me run the GPU tests first")
    changed = report_file(history, tmp_path, "#30835^", "#30835", "pr.json")
    first = comment(changed)
    assert first.code == 0 and "created" in first.out
    (mine,) = [c for c in comments.items if c["body"].startswith(MARK)]
    rows = [line for line in mine["body"].splitlines() if RULE_ROW.match(line)]
    assert len(rows) == 3 and all("128 -> input page_size" in row for row in rows)
    expected = len(oracle.changed_between(False, True))
    assert f"{expected:,} of 349,920 cells change `page_size`" in mine["body"]
    assert "<details>" in mine["body"]

    second = comment(changed)
    assert second.code == 0 and "updated" in second.out
    assert len(comments.items) == 2  # the user's comment and ours, still one of ours
    assert writes(github_api) == [
        ("POST", f"/repos/{SLUG}/issues/{PR}/comments"),
        ("PATCH", f"/repos/{SLUG}/issues/comments/{mine['id']}"),
    ]

    unchanged = report_file(history, tmp_path, "#30835^", "#30835^", "same.json")
    third = comment(unchanged)
    assert third.code == 0 and len(comments.items) == 2
    assert "No cell changes `page_size`" in mine["body"] and "| 1 |" not in mine["body"]


def test_no_change_and_no_comment_posts_nothing(github_api, history, tmp_path):
    comments = Comments(github_api, SLUG, PR)
    unchanged = report_file(history, tmp_path, "#30835^", "#30835^", "same.json")
    result = comment(unchanged)
    assert result.code == 0 and "nothing posted" in result.out
    assert comments.items == [] and writes(github_api) == []


def test_the_marker_is_found_on_a_later_page(github_api, history, tmp_path):
    comments = Comments(github_api, SLUG, PR)
    for n in range(130):
        comments.add(f"comment {n}")
    ours = comments.add(MARK + "\nold table")
    report = report_file(history, tmp_path, "#30835^", "#30835", "pr.json")
    assert comment(report).code == 0
    assert len(comments.items) == 131 and ours["body"] != MARK + "\nold table"
    assert writes(github_api) == [("PATCH", f"/repos/{SLUG}/issues/comments/{ours['id']}")]


def test_a_huge_report_is_truncated_with_a_note(github_api, history, tmp_path):
    comments = Comments(github_api, SLUG, PR)
    doc = json.loads(report_file(history, tmp_path, "#30835^", "#30835", "pr.json").read_text())
    rule = doc["summary"][0]
    doc["summary"] = [dict(rule, transition=f"{n} -> {n + 1}") for n in range(3000)]
    big = tmp_path / "big.json"
    big.write_text(json.dumps(doc))
    result = comment(big, "--details-url", "https://ci.invalid/run/1")
    assert result.code == 0
    (body,) = [c["body"] for c in comments.items]
    assert len(body) <= MAX_BODY
    assert body.rstrip().endswith("see [the full report](https://ci.invalid/run/1).*")


def test_untrusted_report_text_is_inert(github_api, history, tmp_path):
    comments = Comments(github_api, SLUG, PR)
    doc = json.loads(report_file(history, tmp_path, "#30835^", "#30835", "pr.json").read_text())
    doc["head"]["subject"] = "ping @everyone <img src=x onerror=alert(1)> | col"
    evil = tmp_path / "evil.json"
    evil.write_text(json.dumps(doc))
    assert comment(evil).code == 0
    (body,) = [c["body"] for c in comments.items]
    assert "@everyone" not in body and "<img" not in body and "\\| col" in body


def test_the_run_link_comes_from_the_actions_environment(github_api, history, tmp_path,
                                                         monkeypatch):  # fmt: skip
    comments = Comments(github_api, SLUG, PR)
    for name, value in {"GITHUB_SERVER_URL": "https://github.invalid", "GITHUB_RUN_ID": "99",
                        "GITHUB_REPOSITORY": SLUG}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    assert comment(report_file(history, tmp_path, "#30835^", "#30835", "pr.json")).code == 0
    link = f"[Full report](https://github.invalid/{SLUG}/actions/runs/99)"
    assert link in comments.items[0]["body"]


def test_a_report_for_another_head_is_refused(github_api, history, tmp_path):
    comments = Comments(github_api, SLUG, PR)
    github_api.on("GET", f"/repos/{SLUG}/pulls/{PR}", Reply(body={"head": {"sha": "f" * 40}}))
    report = report_file(history, tmp_path, "#30835^", "#30835", "pr.json")
    line = one_line_error(comment(report, "--head-sha", "a" * 40))
    assert "aaaaaaaaaa" in line and "ffffffffff" in line
    assert comments.items == [] and writes(github_api) == []


@pytest.mark.parametrize(
    "status, words", [(401, "GITHUB_TOKEN"), (403, "permission"), (404, "not found")]
)
def test_refusals_are_one_line(github_api, history, tmp_path, status, words):
    github_api.on("GET", f"/repos/{SLUG}/issues/{PR}/comments?per_page=100&page=1", Reply(status))
    report = report_file(history, tmp_path, "#30835^", "#30835", "pr.json")
    line = one_line_error(comment(report))
    assert words in line and TOKEN not in line


def test_bad_report_files_are_one_line(tmp_path):
    missing = one_line_error(comment(tmp_path / "nope.json"))
    assert "cannot read" in missing
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    assert "not a harness diff report" in one_line_error(comment(other))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert "not JSON" in one_line_error(comment(broken))


def test_cannot_tell_is_commented_even_with_no_changed_cell(github_api, history, tmp_path):
    """The check fails on blind spots; the PR gets the comment that says why."""
    matrix = matrix_holding(tmp_path, "prefill_cuda_graph", "breakable")
    done = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--matrix", str(matrix),
                   "--format", "json-sample")  # fmt: skip
    assert done.code == 4
    report = tmp_path / "blind.json"
    report.write_text(done.out)
    comments = Comments(github_api, SLUG, PR)
    result = comment(report)
    assert result.code == 0 and "created" in result.out
    (mine,) = comments.items
    assert "Cannot tell" in mine["body"] and "prefill_cuda_graph = full" in mine["body"]


def test_without_a_token_nothing_is_sent_and_it_says_so_in_one_line(github_api, history,
                                                                     tmp_path, monkeypatch):  # fmt: skip
    Comments(github_api, SLUG, PR)
    report = report_file(history, tmp_path, "#30835^", "#30835", "pr.json")
    for value in (None, "", "  \n"):  # unset, empty, a secret that expanded to whitespace
        if value is None:
            monkeypatch.delenv("GITHUB_TOKEN", raising=False)
        else:
            monkeypatch.setenv("GITHUB_TOKEN", value)
        line = one_line_error(comment(report))
        assert "GITHUB_TOKEN" in line and "--dry-run" in line
    assert github_api.seen == []  # not one request, so no retries either


def dry_run_parts(out: str) -> tuple[str, str]:
    """The dry run's verdict line and the body it prints after it."""
    verdict, _, body = out.partition("\n\n")
    return verdict, body


def test_a_dry_run_without_a_token_prints_the_body_and_sends_nothing(github_api, history,
                                                                     tmp_path, monkeypatch):  # fmt: skip
    Comments(github_api, SLUG, PR)
    monkeypatch.delenv("GITHUB_TOKEN")
    changed = report_file(history, tmp_path, "#30835^", "#30835", "pr.json")
    result = comment(changed, "--dry-run")
    assert result.code == 0, result.err
    verdict, body = dry_run_parts(result.out)
    assert "nothing posted" in verdict and "create or update" in verdict
    assert "comments were not read" in verdict
    expected = len(oracle.changed_between(False, True))
    assert body.startswith(MARK + "\n")
    assert f"{expected:,} of 349,920 cells change `page_size`" in body
    unchanged = report_file(history, tmp_path, "#30835^", "#30835^", "same.json")
    verdict, body = dry_run_parts(comment(unchanged, "--dry-run").out)
    assert "update an earlier comment, or post nothing" in verdict
    assert "No cell changes `page_size`" in body
    assert github_api.seen == []


def test_a_dry_run_with_a_token_reads_the_comments_and_writes_none(github_api, history,
                                                                   tmp_path):  # fmt: skip
    comments = Comments(github_api, SLUG, PR)
    changed = report_file(history, tmp_path, "#30835^", "#30835", "pr.json")
    unchanged = report_file(history, tmp_path, "#30835^", "#30835^", "same.json")
    verdict, _ = dry_run_parts(comment(unchanged, "--dry-run").out)
    assert f"would post nothing on #{PR}" in verdict
    verdict, body = dry_run_parts(comment(changed, "--dry-run").out)
    assert f"would create the comment on #{PR}" in verdict
    assert comments.items == [] and writes(github_api) == []

    assert comment(changed).code == 0  # posted for real: the body is the one shown
    (mine,) = comments.items
    assert mine["body"].rstrip("\n") == body.rstrip("\n")
    verdict, _ = dry_run_parts(comment(unchanged, "--dry-run").out)
    assert f"would update comment {mine['id']} on #{PR}" in verdict
    assert len(writes(github_api)) == 1  # the POST; the dry runs wrote nothing


@pytest.mark.parametrize(
    "version, words",
    [(2, "format_version 2,"), ("1", 'format_version "1"'), (None, "format_version null"),
     ([1], "not a number"), ("absent", "no format_version")],
)  # fmt: skip
def test_a_report_of_an_unknown_format_version_is_refused(github_api, history, tmp_path,
                                                          version, words):  # fmt: skip
    comments = Comments(github_api, SLUG, PR)
    doc = json.loads(report_file(history, tmp_path, "#30835^", "#30835", "pr.json").read_text())
    if version == "absent":
        del doc["format_version"]
    else:
        doc["format_version"] = version
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    for extra in ((), ("--dry-run",)):
        line = one_line_error(comment(other, *extra))
        assert words in line and "this harness reads format_version 1" in line
    assert comments.items == [] and github_api.seen == []


def test_an_inferred_report_in_parts_or_with_nothing_to_infer_is_refused_in_one_line(tmp_path):
    """Neither is a diff of one matrix: one line naming what it is, exit 2, nothing sent."""
    for doc in (
        {"format_version": 1, "matrix": "inferred", "status": 1, "message": "split",
         "cells": 9, "unseen": [], "parts": []},
        {"format_version": 1, "matrix": "inferred", "status": 0, "cannot_tell": [],
         "blind_spots": [], "changed_count": 0, "changed": [], "summary": [],
         "message": "nothing changed"},
    ):  # fmt: skip
        path = tmp_path / "report.json"
        path.write_text(json.dumps(doc))
        done = run_cli("comment", "--repo-slug", "o/r", "--pr", "1", "--report", str(path),
                       "--dry-run")  # fmt: skip
        assert done.code == 2 and len(done.err.splitlines()) == 1
        assert "--matrix inferred report" in done.err and "does not post" in done.err
