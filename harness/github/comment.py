"""One sticky PR comment holding the override report, found again by a hidden marker.

The body is rendered from the JSON report (the artifact of a job that ran the
PR's code), so this side never runs PR code. A second run edits the same
comment; when outcomes no longer change, it says so instead of leaving a
stale table; with no change and no comment yet, nothing is posted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.github.client import GitHub
from harness.report.markdown import changed_count, render_document

MAX_BODY = 65_536  # GitHub's limit on a comment body, in characters
PER_PAGE = 100
REQUIRED = ("matrix", "target", "base", "head", "cells", "axes", "changed", "summary")


@dataclass(frozen=True)
class Posted:
    action: str  # "created", "updated", "skipped"
    url: str | None


def marker(matrix: str) -> str:
    return f"<!-- harness:override-matrix:{matrix} -->"


def load_report(path: str) -> dict[str, Any]:
    """The JSON report of `harness diff --format json`, checked enough to render safely."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise HarnessError(f"--report {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise HarnessError(f"--report {path}: not JSON ({exc})") from None
    missing = [key for key in REQUIRED if not isinstance(doc, dict) or key not in doc]
    if missing:
        raise HarnessError(
            f"--report {path}: not a harness diff report (missing {', '.join(missing)}): "
            "write it with harness diff --format json"
        )
    return doc


def body_for(doc: dict[str, Any], sample: int, details: str | None) -> str:
    text = marker(doc["matrix"]) + "\n" + render_document(doc, sample, details)
    return truncate(text, details)


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


def post(client: GitHub, pr: int, doc: dict[str, Any], sample: int, details: str | None) -> Posted:
    """Create or update the one comment for this matrix on PR `pr`."""
    tag = marker(doc["matrix"])
    existing = find_comment(client, pr, tag)
    changed = changed_count(doc)
    if existing is None and not changed:
        return Posted("skipped", None)
    body = body_for(doc, sample, details)
    if existing is None:
        path, what = client.repo_path(f"issues/{pr}/comments"), f"PR #{pr} of {client.slug}"
        made = client.send("POST", path, what, {"body": body})
        return Posted("created", (made or {}).get("html_url"))
    path = client.repo_path(f"issues/comments/{existing['id']}")
    done = client.send("PATCH", path, f"comment {existing['id']} of {client.slug}", {"body": body})
    return Posted("updated", (done or {}).get("html_url"))


def find_comment(client: GitHub, pr: int, tag: str) -> dict[str, Any] | None:
    """The first comment on the PR whose body starts with the marker, through every page."""
    page = 1
    while True:
        path = client.repo_path(f"issues/{pr}/comments?per_page={PER_PAGE}&page={page}")
        found = client.get(path, f"PR #{pr} of {client.slug}") or []
        for comment in found:
            if str(comment.get("body") or "").startswith(tag):
                return comment
        if len(found) < PER_PAGE:
            return None
        page += 1


def check_head(client: GitHub, pr: int, head_sha: str) -> None:
    """Refuse to comment when the report is not for the PR's current head."""
    data = client.get(client.repo_path(f"pulls/{pr}"), f"PR #{pr} of {client.slug}")
    actual = (data.get("head") or {}).get("sha")
    if actual != head_sha:
        raise HarnessError(
            f"the report is for {head_sha[:10]} but PR #{pr}'s head is {str(actual)[:10]}: "
            "not commenting (a newer run will)"
        )
