"""The command line: one subparser per command, one module per command.

`main` is the only place errors become exit codes: a `HarnessError` is one
line on stderr and exit 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence

from harness import __version__
from harness.cli import (
    bisect,
    comment,
    demo,
    diff,
    explain,
    history,
    matrix,
    passes,
    snapshot,
)
from harness.errors import HarnessError

EXIT_USAGE = 2
EXIT_BUG = 3

DESCRIPTION = """\
See which configurations change their resolved override between git revisions.
Reads the target function from git (no checkout, no GPU, no SGLang install),
runs it over every cell of a matrix, and compares the outcomes."""

EPILOG = """\
exit status: 0 no change (or success), 1 outcomes changed, 2 bad input or
repository error (one line on stderr), 3 a bug in harness (with a traceback).
"""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2), not a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> Parser:
    parser = Parser(
        prog="harness",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (diff, history, bisect, explain, passes, snapshot, comment, matrix, demo):
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (| head): not an error
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception:
        traceback.print_exc()
        print(
            "harness: internal error: this is a bug in harness; please report it with the "
            "traceback above",
            file=sys.stderr,
        )
        return EXIT_BUG
