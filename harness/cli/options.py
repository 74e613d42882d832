"""Options several commands share."""

from __future__ import annotations

import argparse

from harness.engine.limits import DEFAULT_LIMITS, Limits
from harness.matrix.load import DEFAULT_MATRIX, MAX_CELLS
from harness.option_values import (
    memory_size,
    nonnegative,
    positive_seconds,
    slug_argument,
)
from harness.session import Session, open_session

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


RELEASE_ARGUMENTS = ("revisions", "rev", "good", "bad", "range")  # where commands keep revisions


def named_revisions(args: argparse.Namespace) -> list[str]:
    """Every revision expression the command names (all releases: no repository is needed)."""
    named = []
    for name in RELEASE_ARGUMENTS:
        value = getattr(args, name, None)
        named += value if isinstance(value, list) else [value] if isinstance(value, str) else []
    return named


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


def limits_of(args: argparse.Namespace) -> Limits:
    return Limits(args.time_limit, args.memory_limit, args.allow_unconfined)


def set_up(args: argparse.Namespace) -> Session:
    """The run's session, from the options every evaluating command takes."""
    return open_session(
        args.matrix,
        repo=args.repo,
        revisions=named_revisions(args),
        where=getattr(args, "where", []),
        max_cells=args.max_cells,
        cache_dir=getattr(args, "cache_dir", None),
        no_cache=getattr(args, "no_cache", False),
        limits=limits_of(args),
        index_url=args.index_url,
        cert=args.cert,
        github=args.github,
    )
