"""One sticky PR comment holding the override report, found again by a hidden marker.

The body is rendered from the JSON report (the artifact of a job that ran the
PR's code), so this side never runs PR code. A second run edits the same
comment; when outcomes no longer change, it says so instead of leaving a
stale table; with no change and no comment yet, nothing is posted. What would be
done can be worked out without posting (`intend`), and the body without any request.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError, first_line
from harness.github.client import GitHub
from harness.report.document import DiffDocument, DocumentError, read_document
from harness.report.jsonfmt import FORMAT_VERSION
from harness.report.markdown import render_document

MAX_BODY = 65_536  # GitHub's limit on a comment body, in characters
PER_PAGE = 100
MAX_PAGES = 30  # 3,000 comments: past that, the search gives up (one line)
MAX_SEARCH = 120.0  # seconds the search for our comment may take in all
MAX_REPORT = 32 << 20  # bytes of a report read, at most (write it with --format json-sample)
ACTIONS_BOT = "github-actions[bot]"
REQUIRED = {  # key: the JSON type harness diff writes there
    "matrix": str,
    "target": dict,
    "base": dict,
    "head": dict,
    "cells": int,
    "axes": dict,
    "changed": list,
    "summary": list,
}


@dataclass(frozen=True)
class Posted:
    action: str  # "created", "updated", "skipped"
    url: str | None


@dataclass(frozen=True)
class Intent:
    """What posting would do: "create", "update" (comment `number`) or "skip"."""

    action: str
    body: str
    number: int | None = None


def marker(matrix: str) -> str:
    """The hidden line a comment is found again by. The matrix name comes from the report
    (hostile): only letters, digits, `.`, `_` and `-` are kept, so it cannot end the HTML
    comment; a name that had others gets a hash of the original, to stay distinct."""
    kept = re.sub(r"[^A-Za-z0-9._-]", "_", matrix)[:80]
    if kept != matrix:
        kept += "-" + hashlib.sha256(matrix.encode()).hexdigest()[:12]
    return f"<!-- harness:override-matrix:{kept} -->"


def load_report(path: str) -> DiffDocument:
    """The JSON report of `harness diff --format json` (or json-sample), read with a size
    cap and checked part by part (`document.read_document`): it comes from a job that ran
    PR code."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_REPORT + 1)
    except OSError as exc:
        raise HarnessError(f"--report {path}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_REPORT:
        raise HarnessError(
            f"--report {path}: more than {MAX_REPORT >> 20} MB; write the report for the "
            "comment with harness diff --output json-sample=FILE (a sample of cells)"
        )
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise HarnessError(f"--report {path}: not JSON ({first_line(exc)})") from None
    _check_report(doc, path)
    try:
        return read_document(doc)
    except DocumentError as exc:
        raise HarnessError(
            f"--report {path}: not a harness diff report: a part of it has the wrong shape "
            f"({exc}); write it with harness diff --format json"
        ) from None


def _check_report(doc: Any, path: str) -> None:
    if not isinstance(doc, dict):
        raise HarnessError(f"--report {path}: not a harness diff report (not a JSON object)")
    _check_version(doc, path)
    if doc.get("matrix") == "inferred" and ("parts" in doc or "message" in doc):
        kind = "in parts" if "parts" in doc else "nothing to infer"
        raise HarnessError(
            f"--report {path}: a --matrix inferred report ({kind}), which harness comment does "
            "not post: comment the report of a matrix (harness diff --matrix NAME --format "
            "json), as the action does"
        )
    missing = [key for key in REQUIRED if key not in doc]
    if missing:
        raise HarnessError(
            f"--report {path}: not a harness diff report (missing {', '.join(missing)}): "
            "write it with harness diff --format json"
        )
    wrong = [key for key, kind in REQUIRED.items() if not isinstance(doc[key], kind)]
    if "changed_count" in doc and type(doc["changed_count"]) is not int:
        wrong.append("changed_count")
    if wrong:
        raise HarnessError(
            f"--report {path}: not a harness diff report ({', '.join(wrong)} of the wrong type)"
        )


def _check_version(doc: dict[str, Any], path: str) -> None:
    """A report of another format_version may mean other things by the same keys: refused
    with what to do, before its shape is judged. One with none (and the keys of a diff
    report) was written before reports carried it."""
    version = doc.get("format_version")
    if type(version) is int and version == FORMAT_VERSION:
        return
    if "format_version" not in doc and not all(key in doc for key in REQUIRED):
        return  # not a diff report at all: the shape check says so
    said = "no format_version" if "format_version" not in doc else _version_shown(version)
    raise HarnessError(
        f"--report {path}: {said}, and this harness reads format_version {FORMAT_VERSION} "
        "only: write the report with the same harness version as the one commenting "
        "(harness diff --output json-sample=FILE)"
    )


def _version_shown(version: Any) -> str:
    """The report's format_version as a message shows it (the report is hostile: short)."""
    if version is None or type(version) in (bool, int, float):
        return f"format_version {json.dumps(version)[:20]}"
    if type(version) is str:
        return f"format_version {json.dumps(version[:20])}"
    return "a format_version that is not a number"


def body_for(
    doc: DiffDocument, sample: int, details: str | None, grid: tuple[str, str] | None = None
) -> str:
    """The comment's text (`grid`: its axes, None for the best pair). The report is
    hostile: its shape was checked as it was read, and values that do not add up (a rule
    listing more values than its axis has, an outcome of no known kind) are one line
    (exit 2), not a crash."""
    try:
        rendered = render_document(doc, sample, details, grid)
    except ValueError as exc:
        raise HarnessError(
            f"the report is not a harness diff report: a part of it does not add up "
            f"({first_line(exc)[:80]})"
        ) from None
    return truncate(marker(doc.matrix) + "\n" + rendered, details)


def truncate(text: str, details: str | None) -> str:
    """At most MAX_BODY characters, cut at a line, with a note saying where the rest is."""
    if len(text) <= MAX_BODY:
        return text
    where = f"[the full report]({details})" if details else "the JSON report"
    note = f"\n\n*Truncated to fit GitHub's comment size limit; see {where}.*\n"
    cut = text[: MAX_BODY - len(note)]
    cut = cut[: cut.rfind("\n")] if "\n" in cut else cut
    if cut.count("<details>") > cut.count("</details>"):
        cut += "\n\n</details>"
    return cut[: MAX_BODY - len(note)] + note


def cannot_tell(doc: DiffDocument) -> bool:
    """Whether the report says it cannot tell (blind spots, a side not evaluated): worth a
    comment even with no changed cell, since the check fails."""
    return doc.status == 4 or bool(doc.blind_spots)


def worth_posting(doc: DiffDocument) -> bool:
    """Whether the report is worth a new comment (an earlier one is updated regardless)."""
    return bool(doc.changed_count) or cannot_tell(doc)


def intend(
    client: GitHub,
    pr: int,
    doc: DiffDocument,
    sample: int,
    details: str | None,
    grid: tuple[str, str] | None = None,
) -> Intent:
    """What posting the report on PR `pr` would do, found by reading its comments only."""
    body = body_for(doc, sample, details, grid)  # first: a malformed report reads nothing
    existing = find_comment(client, pr, marker(doc.matrix), authors(client))
    if existing is not None:
        return Intent("update", body, existing["id"])
    return Intent("create", body) if worth_posting(doc) else Intent("skip", body)


def post(
    client: GitHub,
    pr: int,
    doc: DiffDocument,
    sample: int,
    details: str | None,
    grid: tuple[str, str] | None = None,
) -> Posted:
    """Create or update the one comment for this matrix on PR `pr`."""
    intent = intend(client, pr, doc, sample, details, grid)
    if intent.action == "skip":
        return Posted("skipped", None)
    if intent.number is None:
        path, what = client.repo_path(f"issues/{pr}/comments"), f"PR #{pr} of {client.slug}"
        made = client.send("POST", path, what, {"body": intent.body})
        return Posted("created", _url(made))
    number, body = intent.number, intent.body
    path = client.repo_path(f"issues/comments/{number}")
    done = client.send("PATCH", path, f"comment {number} of {client.slug}", {"body": body})
    return Posted("updated", _url(done))


def _url(answer: Any) -> str | None:
    url = answer.get("html_url") if isinstance(answer, dict) else None
    return url if isinstance(url, str) else None


def authors(client: GitHub) -> set[str]:
    """Whose comments may be edited: the token's own user, and the Actions bot (an Actions
    token cannot ask who it is: GET /user answers 403)."""
    me = client.get_optional("/user", "the token's user")
    login = me.get("login") if isinstance(me, dict) else None
    return {ACTIONS_BOT} | ({login} if isinstance(login, str) else set())


def find_comment(
    client: GitHub, pr: int, tag: str, by: set[str] | frozenset[str] = frozenset({ACTIONS_BOT})
) -> dict[str, Any] | None:
    """The first comment on the PR written by one of `by` whose body starts with the marker
    (as {"id": N}), through at most MAX_PAGES pages and MAX_SEARCH seconds; each page is
    read as a stream, holding only whether each comment is ours."""
    deadline = time.monotonic() + MAX_SEARCH
    pick = lambda comment: {"id": comment["id"]} if _ours(comment, tag, by) else None  # noqa: E731
    for page in range(1, MAX_PAGES + 1):
        path = client.repo_path(f"issues/{pr}/comments?per_page={PER_PAGE}&page={page}")
        found = client.stream_list(path, f"the comments of PR #{pr} of {client.slug}", pick)
        ours = next((c for c in found if c is not None), None)
        if ours is not None:
            return ours
        if len(found) < PER_PAGE:
            return None
        if time.monotonic() > deadline:
            break
    raise HarnessError(
        f"PR #{pr} of {client.slug} has more comments than harness reads ({MAX_PAGES} pages "
        f"of {PER_PAGE}, {MAX_SEARCH:g} s) without one of ours: not commenting"
    )


def _ours(comment: dict[str, Any], tag: str, by: set[str] | frozenset[str]) -> bool:
    user = comment.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    body = comment.get("body")
    number = comment.get("id")
    return (
        login in by and isinstance(body, str) and body.startswith(tag) and isinstance(number, int)
    )


def check_head(client: GitHub, pr: int, head_sha: str) -> None:
    """Refuse to comment when the report is not for the PR's current head."""
    data = client.get_object(client.repo_path(f"pulls/{pr}"), f"PR #{pr} of {client.slug}")
    head = data.get("head")
    actual = head.get("sha") if isinstance(head, dict) else None
    if actual != head_sha:
        raise HarnessError(
            f"the report is for {head_sha[:10]} but PR #{pr}'s head is {str(actual)[:10]}: "
            "not commenting (a newer run will)"
        )
