"""Options several commands share."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import gitio
from harness.engine.limits import DEFAULT_LIMITS, Limits
from harness.errors import HarnessError
from harness.matrix.cells import parse_where
from harness.matrix.load import DEFAULT_MATRIX, MAX_CELLS, load_matrix
from harness.matrix.model import Matrix
from harness.releases.resolver import revision_resolver as revision_resolver_of
from harness.releases.revisions import is_release
from harness.scan.cache import TableCache, default_directory, documents_in

if TYPE_CHECKING:  # what only some runs need is imported when they need it: a warm diff
    from harness.github.prs import OnlinePRs  # starts in a fraction of a cold one
    from harness.scan.versions import Versions

FORMATS = ("text", "markdown", "json")


def add_command(commands: argparse._SubParsersAction, name: str, summary: str, description: str):
    """A subcommand whose --help keeps the description's own line breaks (and --quiet)."""
    parser = commands.add_parser(
        name,
        help=summary,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_quiet_option(parser)
    return parser


def add_quiet_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress line and no informational lines on stderr (warnings that change "
        "what the result means still print); the report itself is the same",
    )


def add_matrix_option(parser: argparse.ArgumentParser, default: str = DEFAULT_MATRIX) -> None:
    parser.add_argument(
        "--matrix",
        metavar="NAME|PATH",
        default=default,
        help="a shipped matrix by name, or a matrix file: a path with a `/` or ending in "
        f".yaml/.yml (a bare name is never read from the working directory) (default: {default})",
    )
    parser.add_argument(
        "--max-cells",
        metavar="N",
        type=nonnegative,
        default=MAX_CELLS,
        help=f"refuse a matrix of more cells than this, before allocating anything "
        f"(default: {MAX_CELLS:,}; a table takes 4 bytes per cell)",
    )


def add_repo_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo",
        metavar="PATH",
        help="the git repository to read (default: the one containing the current directory)",
    )


def add_where_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--where",
        metavar="AXIS=V[,V...]",
        action="append",
        default=[],
        help="only cells whose AXIS has one of these values, written as in the matrix file "
        "(null, true, 16, fa4); repeat for more axes",
    )


def nonnegative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def grid_axes(text: str) -> tuple[str, str]:
    """`--grid ROWS,COLUMNS`: two axis names (checked against the matrix later)."""
    names = tuple(name.strip() for name in text.split(","))
    if len(names) != 2 or not all(names):
        raise argparse.ArgumentTypeError(
            f"expected two axes as ROWS,COLUMNS, e.g. prefill_cuda_graph,platform, got {text!r}"
        )
    return names  # type: ignore[return-value]


GRID_HELP = (
    "the axes of the grid of changed cells (markdown; shown first in html), as ROWS,COLUMNS "
    "(default: the pair that best separates changed from unchanged cells)"
)


def add_cache_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where outcome tables are kept between runs "
        "(default: $XDG_CACHE_HOME/harness, else ~/.cache/harness)",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the on-disk cache"
    )


def cache_directory(args: argparse.Namespace) -> Path | None:
    """--cache-dir, else the default; None with --no-cache. Outcome tables and release
    members both live there."""
    if getattr(args, "no_cache", False):
        return None
    given = getattr(args, "cache_dir", None)
    if given and Path(given).exists() and not Path(given).is_dir():
        raise HarnessError(
            f"--cache-dir {given}: not a directory; pass a directory (it is made if "
            "missing) or --no-cache"
        )
    return Path(given) if given else default_directory()


def documents_directory(args: argparse.Namespace) -> Path | None:
    """Where parsed matrix documents are kept (None: nowhere; a --cache-dir that is not a
    directory is reported later, in its turn, by `cache_directory`)."""
    try:
        directory = cache_directory(args)
    except HarnessError:
        return None
    return documents_in(directory) if directory else None


def table_cache(args: argparse.Namespace) -> TableCache:
    return TableCache(cache_directory(args))


def add_revision_options(parser: argparse.ArgumentParser) -> None:
    """Options that change how revisions resolve (#N / pr:N, pypi:NAME==VERSION)."""
    parser.add_argument(
        "--index-url",
        metavar="URL",
        help="the package index pypi:NAME==VERSION revisions are read from (its simple API; "
        "default: PIP_INDEX_URL, else pip's configured index-url, else "
        "https://pypi.org/simple)",
    )
    parser.add_argument(
        "--cert",
        metavar="FILE",
        help="a PEM file of the CA certificates the package index's certificate is checked "
        "against, as pip's --cert (default, the first set: PIP_CERT, REQUESTS_CA_BUNDLE, "
        "CURL_CA_BUNDLE, SSL_CERT_FILE, pip's configured cert; else the system's store)",
    )
    parser.add_argument(
        "--github",
        metavar="OWNER/REPO",
        type=slug_argument,
        help="resolve #N through the GitHub API when no local commit subject ends in (#N): "
        "a merged PR is its merge commit, an open one its head (base URL from "
        "GITHUB_API_URL, token from GITHUB_TOKEN)",
    )


def slug_argument(text: str) -> str:
    from harness.github.client import check_slug

    try:
        return check_slug(text)
    except HarnessError:
        raise argparse.ArgumentTypeError(f"expected OWNER/REPO, got {text!r}") from None


def online_prs(args: argparse.Namespace, repo) -> OnlinePRs | None:
    if not args.github:
        return None
    from harness.github.client import GitHub
    from harness.github.prs import OnlinePRs

    return OnlinePRs(repo, GitHub(args.github))


def revision_resolver(
    repo,
    online: OnlinePRs | None,
    index: str | None = None,
    cache: Path | None = None,
    cert: str | None = None,
) -> Callable[[str], gitio.Revision]:
    """expr -> Revision: a release (pypi:, wheel:, sdist:; `cert` is --cert), else a commit
    of `repo`; #N falls back to the GitHub API when `online` is given."""
    return revision_resolver_of(repo, index, cache, online.commit if online else None, cert)


RELEASE_ARGUMENTS = ("revisions", "rev", "good", "bad", "range")  # where commands keep revisions


def only_releases(args: argparse.Namespace) -> bool:
    """Whether every revision the command names is a release (then no repository is needed)."""
    named = []
    for name in RELEASE_ARGUMENTS:
        value = getattr(args, name, None)
        named += value if isinstance(value, list) else [value] if isinstance(value, str) else []
    return bool(named) and all(is_release(expr) for expr in named)


def add_evaluation_options(
    parser: argparse.ArgumentParser,
    handler,
    formats: tuple[str, ...] | None = FORMATS,
    where: bool = True,
    matrix: str = DEFAULT_MATRIX,
) -> None:
    """What every command that evaluates revisions takes, after its own arguments."""
    if formats:
        parser.add_argument("--format", choices=formats, default="text", help="report format")
    if where:
        add_where_option(parser)
    add_matrix_option(parser, matrix)
    add_repo_option(parser)
    add_revision_options(parser)
    add_cache_options(parser)
    add_limit_options(parser)
    parser.set_defaults(handler=handler)


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    """The evaluation worker's limits (see Security model in the README); a command that
    takes them evaluates code (`harness.cli.preload`)."""
    parser.set_defaults(evaluates=True)
    parser.add_argument(
        "--time-limit",
        metavar="SECONDS",
        type=positive_seconds,
        default=DEFAULT_LIMITS.seconds,
        help="CPU time one revision's evaluation may take before it is stopped and reported "
        f"unevaluable (default: {DEFAULT_LIMITS.seconds:g})",
    )
    parser.add_argument(
        "--memory-limit",
        metavar="SIZE",
        type=memory_size,
        default=DEFAULT_LIMITS.memory,
        help="address space the evaluation worker may add to the harness's own, e.g. 512M "
        "or 4G "
        f"(default: {DEFAULT_LIMITS.memory >> 30}G)",
    )
    parser.add_argument(
        "--allow-unconfined",
        action="store_true",
        help="evaluate even where this machine gives evaluated code no filesystem wall "
        "(no Landlock and no unprivileged mount namespaces): only for code you trust "
        "(docs/security.md)",
    )


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"expected more than 0 and at most 86400, got {text}")
    return value


UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def memory_size(text: str) -> int:
    number, unit = text.rstrip("KMGkmg"), text[len(text.rstrip("KMGkmg")) :].upper()
    try:
        value = int(float(number) * UNITS[unit])
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(
            f"expected a size such as 512M or 4G, got {text!r}"
        ) from None
    if value < 64 << 20:
        raise argparse.ArgumentTypeError(f"expected at least 64M, got {text}")
    return value


def limits_of(args: argparse.Namespace) -> Limits:
    return Limits(args.time_limit, args.memory_limit, args.allow_unconfined)


@dataclass
class Setup:
    """The matrix, the selected cells, the repository and its revision resolver."""

    matrix: Matrix
    where: tuple[int, ...] | None
    repo: Any
    resolve: Callable[[str], gitio.Revision]
    online: OnlinePRs | None  # with --github
    cache: TableCache
    limits: Limits

    def versions(self, exhaustive: bool = False) -> Versions:
        """The run's states of the matrix's target, under its cache and limits."""
        from harness.scan.versions import Versions

        return Versions(self.repo, self.matrix, self.cache, exhaustive, self.limits)


def set_up(args: argparse.Namespace) -> Setup:
    """Load and check everything the options name, in the order users expect errors."""
    matrix = load_matrix(args.matrix, args.max_cells, documents_directory(args))
    where = parse_where(matrix, getattr(args, "where", []))
    repo = None if only_releases(args) and not args.repo else gitio.open_repo(args.repo)
    online = online_prs(args, repo) if repo is not None else None
    resolver = revision_resolver(repo, online, args.index_url, cache_directory(args), args.cert)
    return Setup(matrix, where, repo, resolver, online, table_cache(args), limits_of(args))
