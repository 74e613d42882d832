"""Options several commands share."""

from __future__ import annotations

import argparse
from typing import Any

from harness.engine.limits import Limits
from harness.matrix.load import DEFAULT_MATRIX
from harness.option_values import OPTIONS
from harness.session import Session, session_of

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


def add_shared(parser: argparse.ArgumentParser, *names: str) -> None:
    """Options a diff shares with the pytest entry, as `harness.option_values` declares them."""
    for name in names:
        parser.add_argument(f"--{name}", **OPTIONS[name])


def add_matrix_option(parser: argparse.ArgumentParser, default: str = DEFAULT_MATRIX) -> None:
    parser.add_argument(
        "--matrix",
        metavar="NAME|PATH",
        default=default,
        help="a shipped matrix by name, or a matrix file: a path with a `/` or ending in "
        f".yaml/.yml (a bare name is never read from the working directory) (default: {default})",
    )
    add_shared(parser, "max-cells")


def add_repo_option(parser: argparse.ArgumentParser) -> None:
    add_shared(parser, "repo")


def add_where_option(parser: argparse.ArgumentParser) -> None:
    add_shared(parser, "where")


GRID_HELP = (
    "the axes of the grid of changed cells (markdown; shown first in html), as ROWS,COLUMNS "
    "(default: the pair that best separates changed from unchanged cells)"
)


def add_cache_options(parser: argparse.ArgumentParser) -> None:
    add_shared(parser, "cache-dir", "no-cache")


def add_revision_options(parser: argparse.ArgumentParser) -> None:
    """Options that change how revisions resolve (#N / pr:N, pypi:NAME==VERSION)."""
    add_shared(parser, "index-url", "cert", "github")


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
    add_shared(parser, "time-limit", "memory-limit", "allow-unconfined")


def limits_of(args: argparse.Namespace) -> Limits:
    return Limits(args.time_limit, args.memory_limit, args.allow_unconfined)


def set_up(args: argparse.Namespace) -> Session:
    """The run's session, from the options every evaluating command takes (one it does
    not take has its default)."""

    def value(name: str) -> Any:
        return getattr(args, name.replace("-", "_"), OPTIONS[name].get("default"))

    return session_of(args.matrix, named_revisions(args), value)
