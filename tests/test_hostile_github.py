"""The comment path and the API client against hostile input: a report written by a job
that ran PR code, and API servers that misbehave (real loopback servers throughout)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness.cli.main import redacted
from harness.github.comment import MAX_PAGES, MAX_REPORT, PER_PAGE, marker
from tests.apiserver import Comments, Reply
from tests.conftest import TOKEN, one_line_error, run_cli
from tests.test_comment import MARK, PR, SLUG, comment, report_file, writes
from tests.test_github import PULL, pull


@pytest.fixture
def report(history, tmp_path) -> dict:
    return json.loads(report_file(history, tmp_path, "#30835^", "#30835", "pr.json").read_text())


def write(tmp_path: Path, doc, name: str = "evil.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def test_the_matrix_name_cannot_break_out_of_the_marker(github_api, report, tmp_path):
    comments = Comments(github_api, SLUG, PR)
    report["matrix"] = "x --> @everyone <img src=x> <!--"
    assert comment(write(tmp_path, report)).code == 0
    (body,) = [c["body"] for c in comments.items]
    first, rest = body.split("\n", 1)
    assert first.startswith("<!-- harness:override-matrix:x_") and first.count("-->") == 1
    assert "@everyone" not in body and "<img" not in body and "<!--" not in rest
    assert marker("x --> y") != marker("x --- y")  # kept distinct by the hash


def test_only_our_own_comments_are_edited(github_api, history, tmp_path):
    comments = Comments(github_api, SLUG, PR)
    planted = comments.add(MARK + "\nplanted by someone else", author="mallory")
    assert comment(report_file(history, tmp_path, "#30835^", "#30835", "pr.json")).code == 0
    assert planted["body"].endswith("planted by someone else")  # untouched
    assert [m for m, _ in writes(github_api)] == ["POST"]
    ours = comments.items[-1]
    assert ours["user"]["login"] == "github-actions[bot]" and ours["body"].startswith(MARK)


def test_a_personal_token_edits_its_own_user_s_comment(github_api, history, tmp_path):
    comments = Comments(github_api, SLUG, PR, login="harness-bot")
    mine = comments.add(MARK + "\nan earlier run")
    assert comment(report_file(history, tmp_path, "#30835^", "#30835", "pr.json")).code == 0
    assert [m for m, _ in writes(github_api)] == ["PATCH"]
    assert "an earlier run" not in mine["body"]


def test_a_report_over_the_cap_is_refused_without_reading_it_whole(github_api, tmp_path):
    Comments(github_api, SLUG, PR)
    huge = tmp_path / "huge.json"
    with huge.open("w") as out:
        out.write('{"matrix": "m", "changed": [')
        chunk = ", ".join(['{"cell": {"a": 1}}'] * 10_000)
        while out.tell() <= MAX_REPORT:
            out.write(chunk + ", ")
        out.write('{"cell": {}}]}')
    line = one_line_error(comment(huge))
    assert "more than 32 MB" in line and "json-sample" in line
    assert github_api.seen == []


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda d: d.update(matrix=5), "matrix"),
        (lambda d: d.update(changed={"not": "a list"}), "changed"),
        (lambda d: d.update(changed_count="many"), "changed_count"),
        (lambda d: d.update(summary=[{"where": 5, "cells": 1, "transition": "x"}]), "shape"),
        (lambda d: d.update(changed=[1, 2, 3]), "shape"),
        (lambda d: d["target"].pop("output"), "shape"),
    ],
    ids=["matrix", "changed", "changed_count", "summary-where", "changed-items", "target"],
)
def test_a_report_of_the_wrong_shape_is_one_line(github_api, report, tmp_path, damage, words):
    Comments(github_api, SLUG, PR)
    damage(report)
    line = one_line_error(comment(write(tmp_path, report)))
    assert "not a harness diff report" in line and words in line
    assert writes(github_api) == []


@pytest.mark.parametrize("text", ["[1, 2]", '{"matrix": ' + "[" * 100_000, "\xff\xfe", "null"])
def test_a_report_that_is_not_a_json_object_is_one_line(tmp_path, text):
    line = one_line_error(comment(write(tmp_path, text)))
    assert "not JSON" in line or "not a harness diff report" in line


def test_comment_pages_that_never_end_are_capped(github_api, history, tmp_path):
    Comments(github_api, SLUG, PR)
    full = [{"id": n, "body": "me too", "user": {"login": "fan"}} for n in range(PER_PAGE)]
    github_api.serve("GET", f"/repos/{SLUG}/issues/{PR}/comments", lambda seen: Reply(body=full))
    line = one_line_error(comment(report_file(history, tmp_path, "#30835^", "#30835", "pr.json")))
    assert f"{MAX_PAGES} pages" in line and "not commenting" in line
    pages = [s for s in github_api.seen if "/comments" in s.path]
    assert len(pages) == MAX_PAGES and writes(github_api) == []


def test_an_api_answer_that_is_not_json_is_one_line(github_api, tmp_path, history):
    Comments(github_api, SLUG, PR)
    github_api.serve("GET", f"/repos/{SLUG}/issues/{PR}/comments",
                     lambda seen: Reply(body="<html>a proxy's error page</html>"))  # fmt: skip
    line = one_line_error(comment(report_file(history, tmp_path, "#30835^", "#30835", "pr.json")))
    assert "not a list" in line or "not JSON" in line


@pytest.mark.usefixtures("no_retry_pauses")
def test_a_dripping_server_is_cut_off_as_a_whole(github_api, history, monkeypatch):
    monkeypatch.setenv("HARNESS_HTTP_TIMEOUT", "0.3")  # each byte comes within it
    github_api.on("GET", PULL.format(42), Reply(body=pull(42, True), drip=0.1))
    started = time.monotonic()
    line = one_line_error(run_cli("diff", "#42^", "#42", "--repo", history.repo(), "--github",
                                  "octo/sglang"))  # fmt: skip
    assert "no whole answer within 0.3 s" in line and TOKEN not in line
    assert time.monotonic() - started < 30  # four attempts of 0.3 s (no pauses between)


def test_a_token_with_a_trailing_newline_works_and_one_broken_inside_is_refused(
    github_api, history, tmp_path, monkeypatch
):
    comments = Comments(github_api, SLUG, PR)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN + "\n")
    assert comment(report_file(history, tmp_path, "#30835^", "#30835", "pr.json")).code == 0
    assert comments.items and github_api.seen[-1].headers["Authorization"] == f"Bearer {TOKEN}"
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN[:10] + "\n" + TOKEN[10:])
    result = comment(report_file(history, tmp_path, "#30835^", "#30835", "again.json"))
    line = one_line_error(result)
    assert "GITHUB_TOKEN has a space, newline or control character" in line
    assert TOKEN[:10] not in result.err and TOKEN[10:] not in result.err


def test_a_traceback_never_shows_the_token(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN + "\n")
    try:
        raise ValueError(f"Invalid header value b'Bearer {TOKEN}\\n'")
    except ValueError:
        import traceback

        text = redacted(traceback.format_exc())
    assert TOKEN not in text and "<GITHUB_TOKEN>" in text
