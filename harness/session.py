"""A run's context, opened once from plain arguments by each entry (the CLI and the
pytest plugin each read their options into `session_of`): the matrix and its selected
cells, the repository, how revision expressions resolve, the cache and the worker's
limits. `Session.versions` is the one place a run's `Versions` is made, so every entry
evaluates under the same cache and limits."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import gitio
from harness.engine.limits import DEFAULT_LIMITS, Limits
from harness.engine.worlds import world_named
from harness.errors import HarnessError
from harness.matrix.cells import parse_where
from harness.matrix.load import MAX_CELLS, load_matrix
from harness.matrix.model import Matrix
from harness.releases.resolver import revision_resolver
from harness.releases.revisions import is_release
from harness.scan.cache import TableCache, default_directory, documents_in

if TYPE_CHECKING:  # what only some runs need is imported when they need it: a warm diff
    from harness.github.prs import OnlinePRs  # starts in a fraction of a cold one
    from harness.scan.versions import Versions


@dataclass(frozen=True)
class Session:
    """The matrix, the selected cells, the repository and its revision resolver, the cache
    and the limits: what a run evaluates with."""

    matrix: Matrix
    where: tuple[int, ...] | None  # the selected cells as a cube of value masks
    repo: Any  # None: every revision the run names is a release, and no repository was given
    resolve: Callable[[str], gitio.Revision]
    online: OnlinePRs | None  # with a GitHub repository to resolve #N through
    cache: TableCache
    limits: Limits

    @property
    def directory(self) -> Path | None:
        """The cache directory (outcome tables, release members); None: nothing is kept."""
        return self.cache.directory

    def versions(self, exhaustive: bool = False) -> Versions:
        """The run's states of the matrix's target, under its cache and limits."""
        from harness.scan.versions import Versions

        return Versions(self.repo, self.matrix, self.cache, exhaustive, self.limits)


def open_session(
    matrix: str,
    *,
    repo: str | None = None,
    revisions: Iterable[str] = (),
    where: Iterable[str] = (),
    max_cells: int = MAX_CELLS,
    cache_dir: str | None = None,
    no_cache: bool = False,
    limits: Limits = DEFAULT_LIMITS,
    index_url: str | None = None,
    cert: str | None = None,
    github: str | None = None,
) -> Session:
    """Load and check everything the arguments name, in the order users expect errors:
    the matrix, the cells `where` selects (`AXIS=V[,V...]` each), the repository (not
    opened when every one of `revisions` is a release and `repo` is None), the GitHub
    repository #N resolves through (`github`: OWNER/REPO), the cache directory (None: the
    default one; `no_cache`: none) and the package index releases are read from."""
    loaded = load_matrix(matrix, max_cells, documents_directory(cache_dir, no_cache))
    world_named(loaded.world, loaded.source)  # a matrix error, before anything is opened
    cells = parse_where(loaded, list(where))
    named = list(revisions)
    only_releases = bool(named) and all(is_release(expr) for expr in named)
    opened = None if only_releases and not repo else gitio.open_repo(repo)
    online = online_prs(github, opened)
    lookup = online.commit if online else None
    directory = cache_directory(cache_dir, no_cache)
    resolve = revision_resolver(opened, index_url, directory, lookup, cert)
    return Session(loaded, cells, opened, resolve, online, TableCache(directory), limits)


def session_of(matrix: str, revisions: Iterable[str], value: Callable[[str], Any]) -> Session:
    """`open_session` from the options a diff shares with the pytest entry
    (`harness.option_values.OPTIONS`), each read by `value(name)`: how both entries map
    their options onto a run."""
    limits = Limits(value("time-limit"), value("memory-limit"), value("allow-unconfined"))
    return open_session(
        matrix,
        repo=value("repo"),
        revisions=revisions,
        where=value("where"),
        max_cells=value("max-cells"),
        cache_dir=value("cache-dir"),
        no_cache=value("no-cache"),
        limits=limits,
        index_url=value("index-url"),
        cert=value("cert"),
        github=value("github"),
    )


def cache_directory(given: str | None, no_cache: bool = False) -> Path | None:
    """`given`, else the default; None with `no_cache`. Outcome tables, release members and
    parsed matrix documents all live there."""
    if no_cache:
        return None
    if given and Path(given).exists() and not Path(given).is_dir():
        raise HarnessError(
            f"--cache-dir {given}: not a directory; pass a directory (it is made if "
            "missing) or --no-cache"
        )
    return Path(given) if given else default_directory()


def documents_directory(given: str | None, no_cache: bool = False) -> Path | None:
    """Where parsed matrix documents are kept (None: nowhere; a cache directory that is not
    a directory is reported later, in its turn, by `cache_directory`)."""
    try:
        directory = cache_directory(given, no_cache)
    except HarnessError:
        return None
    return documents_in(directory) if directory else None


def online_prs(github: str | None, repo: Any) -> OnlinePRs | None:
    """#N through the GitHub API of `github` (OWNER/REPO), for a run with a repository."""
    if not github or repo is None:
        return None
    from harness.github.client import GitHub
    from harness.github.prs import OnlinePRs

    return OnlinePRs(repo, GitHub(github))
