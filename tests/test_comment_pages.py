"""A PR's comment pages are read as a stream with a per-page cap: a page of long comments
past the old 16 MB answer cap is read, and our comment behind it is found and updated; a
page past the cap is one line. A real loopback API throughout."""

from __future__ import annotations

import json

from harness.github.client import MAX_ANSWER, MAX_PAGE
from harness.github.comment import PER_PAGE
from tests.apiserver import Comments, Reply
from tests.conftest import one_line_error
from tests.test_comment import MARK, PR, SLUG, comment, report_file, writes

LONGEST = 65_536  # characters of a comment body, GitHub's limit


def test_a_page_of_long_comments_is_read_and_ours_behind_it_is_updated(
    github_api, history, tmp_path
):
    comments = Comments(github_api, SLUG, PR)
    for _ in range(PER_PAGE + 50):
        comments.add("é" * LONGEST, author="fan")  # each character sent as \u00e9
    ours = comments.add(MARK + "\nan earlier run", author="github-actions[bot]")
    first_page = json.dumps(comments.items[:PER_PAGE]).encode()
    assert MAX_ANSWER < len(first_page) <= MAX_PAGE  # past the old cap, within the new
    result = comment(report_file(history, tmp_path, "#30835^", "#30835", "pr.json"))
    assert result.code == 0, result.err
    assert writes(github_api) == [("PATCH", f"/repos/{SLUG}/issues/comments/{ours['id']}")]
    assert "an earlier run" not in ours["body"]


def test_a_page_past_the_cap_is_one_line(github_api, history, tmp_path):
    Comments(github_api, SLUG, PR)
    huge = [{"id": 1, "body": "x" * (MAX_PAGE + 1), "user": {"login": "fan"}}]
    github_api.serve("GET", f"/repos/{SLUG}/issues/{PR}/comments", lambda seen: Reply(body=huge))
    line = one_line_error(comment(report_file(history, tmp_path, "#30835^", "#30835", "pr.json")))
    assert f"more than {MAX_PAGE >> 20} MB" in line
    assert writes(github_api) == []


def test_a_page_whose_items_are_not_objects_is_one_line(github_api, history, tmp_path):
    Comments(github_api, SLUG, PR)
    github_api.serve("GET", f"/repos/{SLUG}/issues/{PR}/comments",
                     lambda seen: Reply(body=[{"id": 1}, "not an object"]))  # fmt: skip
    line = one_line_error(comment(report_file(history, tmp_path, "#30835^", "#30835", "pr.json")))
    assert "not a list of objects" in line and writes(github_api) == []
