"""Options several commands share."""

from __future__ import annotations

import argparse

from harness.matrix import DEFAULT_MATRIX

FORMATS = ("text", "markdown", "json")


def add_command(commands: argparse._SubParsersAction, name: str, summary: str, description: str):
    """A subcommand whose --help keeps the description's own line breaks."""
    return commands.add_parser(
        name,
        help=summary,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_matrix_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--matrix",
        metavar="NAME|PATH",
        default=DEFAULT_MATRIX,
        help=f"a shipped matrix by name, or a matrix file (default: {DEFAULT_MATRIX})",
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
