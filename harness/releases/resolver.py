"""A revision expression to a Revision: a release, or a commit of the repository."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import gitio
from harness.releases.revisions import is_release


def revision_resolver(
    repo: Any,
    index: str | None = None,
    cache: Path | None = None,
    lookup: Any = None,
    cert: str | None = None,
) -> Callable[[str], gitio.Revision]:
    """expr -> Revision: a release (see `harness.releases.release.resolve_revision`; `cert`
    is `--cert`), else a commit of `repo` (`gitio.resolve`, with `lookup` for #N), without
    loading the release readers for a commit."""

    def resolve(expr: str) -> gitio.Revision:
        if repo is not None and not is_release(expr):
            return gitio.resolve(repo, expr, lookup)
        from harness.releases.release import resolve_revision

        return resolve_revision(repo, expr, index, cache, lookup, cert)

    return resolve
