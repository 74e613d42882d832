"""Two revisions from one range expression, as `git diff` reads it: `A..B` is A against B,
`A...B` is where B left A (their merge base) against B.

Beside `resolver.py`, which turns one expression into a Revision: every command that
takes a revision pair (diff, explain, bisect, the pytest entry's `--override-rev`) reads a
range through `resolve_range`, so `main...feature` means the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from harness import gitio
from harness.errors import HarnessError
from harness.releases.revisions import is_release


def split_range(expr: str) -> tuple[str, str, bool] | None:
    """(A, B, whether three dots) for `A..B` or `A...B`, an empty side meaning HEAD; None
    for a single revision (a release is one, even when its path holds `..`)."""
    if ".." not in expr or is_release(expr):
        return None
    three = "..." in expr
    first, _, second = expr.partition("..." if three else "..")
    return first or "HEAD", second or "HEAD", three


def resolve_range(
    repo: Any, resolve: Callable[[str], gitio.Revision], expr: str
) -> tuple[gitio.Revision, gitio.Revision] | None:
    """The (base, head) a range names, each resolved by `resolve`; None when `expr` is not a
    range of a repository's commits. For `A...B` the base is A and B's merge base, its
    `expr` the range (so reports name it as the user did); no merge base is an error."""
    parts = split_range(expr) if repo is not None else None
    if parts is None:
        return None
    first, second, three = parts
    base, head = resolve(first), resolve(second)
    if not three:
        return base, head
    if gitio.RELEASE in (base.kind, head.kind):
        raise HarnessError(
            f"{expr}: a merge base needs two commits, and a release is none; write "
            f"{first}..{second} or name the two revisions to compare"
        )
    found = gitio.merge_base(repo, base.sha, head.sha)
    if found is None:
        raise HarnessError(
            f"{expr}: {first} and {second} share no history (no merge base); name the two "
            "revisions to compare instead" + gitio.shallow_hint(repo)
        )
    return replace(resolve(found), expr=f"{first}...{second}"), head
