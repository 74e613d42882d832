"""Every release of a package that changed outcomes: `harness history pypi:NAME`.

Releases are taken in PEP 440 order (pre-releases only when asked, yanked ones
left out and listed as skipped), each compared with the previous evaluable one,
exactly as `history` compares a commit with its parent; the report is the same,
with a release where a commit would be.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from packaging.version import InvalidVersion, Version

from harness import gitio
from harness.errors import HarnessError
from harness.releases.index import DistFile, choose, index_http, index_url, project_files
from harness.releases.release import ReleaseRevision, release_for
from harness.scan.compare import compare
from harness.scan.history import (
    HistoryReport,
    Skipped,
    because_of,
    record_change,
    with_blind_spots,
)
from harness.scan.versions import Versions


def release_history(
    versions: Versions,
    name: str,
    releases: str | None,
    pre: bool,
    index: str | None,
    cache: Path | None,
    where: tuple[int, ...] | None = None,
    on_release: Callable[[int, int], None] | None = None,
    cert: str | None = None,
) -> HistoryReport:
    """Scan the releases of `name` (`releases`: "A..B", either side optional; `cert`:
    --cert, see `harness.releases.tls`)."""
    url, http = index_url(index), index_http(cert)
    files = project_files(http, url, name)
    chosen, yanked = _releases(files, name, releases, pre)
    report = HistoryReport(versions.matrix, _shown(name, releases), len(chosen), None)
    report.releases = True
    report.skipped += [Skipped(_as_commit(f, name), f"yanked{': ' + f.yanked if f.yanked else ''}")
                       for f in yanked]  # fmt: skip
    last, first_revision, last_revision = None, None, None  # evaluable ones
    for done, dist in enumerate(chosen, 1):
        release = release_for(dist, http, cache)
        revision = ReleaseRevision(f"pypi:{name}=={dist.version}", release.subject,
                                   dist.uploaded, release)  # fmt: skip
        state, commit = versions.at(revision), _as_commit(dist, name)
        if on_release is not None:
            on_release(done, len(chosen))
        report.last = (commit, state.reason)
        if not state.evaluable:
            report.skipped.append(Skipped(commit, state.reason))
            continue
        first_revision, last_revision = first_revision or revision, revision
        if last is None:
            report.baseline = commit
        elif last.key != state.key:
            change = record_change(report, commit, compare(versions.matrix, last.table, state.table,
                                                     where))  # fmt: skip
            if change:
                change.because = because_of(versions, last, state, change)
        last = state
    two = first_revision is not None and last_revision is not first_revision
    return with_blind_spots(versions, report, (first_revision, last_revision) if two else None)


def _releases(files: list[DistFile], name: str, span: str | None, pre: bool):
    """The file read for each release in the span, in version order; and the yanked ones."""
    low, high = _bounds(span, name)
    by_version: dict[Version, list[DistFile]] = {}
    for f in files:
        by_version.setdefault(f.version, []).append(f)
    chosen, yanked = [], []
    for version in sorted(by_version):
        if (low and version < low) or (high and version > high):
            continue
        if (version.is_prerelease or version.is_devrelease) and not pre:
            continue
        usable = [f for f in by_version[version] if f.yanked is None]
        if usable:
            chosen.append(choose(usable, version, f"{name} {version}"))
        else:
            yanked.append(choose(by_version[version], version, f"{name} {version}"))
    if not chosen:
        raise HarnessError(f"pypi:{name}: no release in {span or 'the index'} to compare")
    return chosen, yanked


def _bounds(span: str | None, name: str) -> tuple[Version | None, Version | None]:
    if span is None:
        return None, None
    if ".." not in span:
        raise HarnessError(f"--releases {span!r}: expected A..B, e.g. 0.5.18..0.5.23")
    try:
        return tuple(Version(side) if side else None for side in span.split("..", 1))
    except InvalidVersion:
        raise HarnessError(f"--releases {span!r}: each side must be a version of {name}") from None


def _as_commit(dist: DistFile, name: str) -> gitio.Commit:
    """A release in a history report's place for a commit: the version is its id."""
    return gitio.Commit(str(dist.version), None, dist.uploaded, f"{name} {dist.version}")


def _shown(name: str, span: str | None) -> str:
    return f"pypi:{name}" + (f" {span}" if span else "")
