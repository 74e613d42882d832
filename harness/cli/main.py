"""The command line: one subparser per command, one module per command.

`main` is the only place errors become exit codes: a `HarnessError` is one
line on stderr and exit 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

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
from harness.cli.preload import before_evaluation
from harness.cli.streams import OutputClosed, settle
from harness.engine import spawn
from harness.errors import CannotTell, HarnessError, quieted
from harness.gitcmd import GitError

EXIT_USAGE = 2
EXIT_BUG = 3
EXIT_CANNOT_TELL = 4

DESCRIPTION = """\
See which configurations change their resolved override between git revisions.
Reads the target function from git (no checkout, no GPU, no SGLang install),
runs it over every cell of a matrix, and compares the outcomes."""

EPILOG = """\
exit status: 0 no change (or success), 1 outcomes changed (when the reader of
the output goes away, as `| head` does, the status is still the command's own,
and nothing is said), 2 bad input, a repository error or output that cannot be
written (a full disk, a closed stdout; one line on stderr), 3 a bug in harness
(with a traceback), 4 cannot tell (a side could not be evaluated, or the code
changed where the matrix does not reach: blind spots), 130 interrupted (Ctrl-C,
SIGTERM or SIGHUP).
"""


SECRETS = ("GITHUB_TOKEN",)  # environment variables whose values never reach the output


def redacted(text: str) -> str:
    """`text` with every secret's value (and its stripped form) replaced, and the
    credentials of any URL (`redact_credentials`): a bug report's traceback must be safe to
    paste, whatever an exception message quoted; so must an error line."""
    from harness.http import redact_credentials  # here: only a failure pays for its import

    for name in SECRETS:
        value = os.environ.get(name, "")
        for form in {value, value.strip()}:
            if len(form) >= 4:
                text = text.replace(form, f"<{name}>")
    return redact_credentials(text)


def _stdout_gone() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush fails no more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


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


EXIT_INTERRUPTED = 130
OUTPUT_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG)


def console_main() -> int:
    """The `harness` command (and `python -m harness`): `main`, in a process of its own."""
    fewer_collections()
    stop_on_termination()
    settle()  # a closed or ASCII-only stdout: written escaped, or one line
    leave(main())


def leave(status: int) -> NoReturn:
    """End the process with `status` once its output is out and its zygote stopped,
    without the interpreter's teardown: freeing every parsed file and table one object
    at a time took 1.5 s after a split inferred diff, for nothing (the process ends).
    Files are closed where they are written; the remaining threads are daemons."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # `main` said what a failed write was
            stream.flush()
    spawn.shutdown()
    os._exit(status)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP: handled as Ctrl-C is (files being written are removed, workers
    stopped, exit 130), since a CI runner's cancel or a closed terminal is an interrupt."""


def stop_on_termination() -> None:
    """Turn SIGTERM and SIGHUP into `Terminated` in the main thread: only in a process of
    harness's own. A second one is not caught: it ends the process at once."""

    def terminate(signum: int, _frame) -> None:
        signal.signal(signum, signal.SIG_DFL)
        raise Terminated(signal.Signals(signum).name)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, terminate)


def fewer_collections() -> None:
    """harness's heap is mostly acyclic (syntax trees, outcome tables), freed by reference
    counting as it goes; the cyclic collector's passes over it cost a 1,000-commit history
    a tenth of its time, for a few cycles per commit. So they run far less often: only in
    a process of harness's own, never inside a caller's (pytest's)."""
    gc.freeze()  # what the imports made lives as long as the process
    gc.set_threshold(100_000, 50, 100)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with quieted(getattr(args, "quiet", False)):  # --quiet: informational lines say nothing
        return _handled(args)


def _handled(args: argparse.Namespace) -> int:
    """The command's exit status; each kind of failure becomes its status here, once."""
    try:
        if getattr(args, "evaluates", False):
            before_evaluation()
        status = args.handler(args)
        sys.stdout.flush()  # a write that fails, fails here, not in the interpreter's exit
        return status
    except CannotTell as exc:
        print(f"harness: cannot tell: {redacted(str(exc))}", file=sys.stderr)
        return EXIT_CANNOT_TELL
    except HarnessError as exc:
        print(f"harness: error: {redacted(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except GitError as exc:
        if not exc.reason:  # git said nothing that explains it: harness asked wrongly
            return _bug()
        print(f"harness: error: git {exc.args_run[0]} failed: git says {exc.reason!r}; fix "
              "what git names (`git fsck` checks the repository), or clone it again",
              file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    except BrokenPipeError:
        _stdout_gone()  # the reader went away (| head): the answer stands, quietly
        return getattr(args, "status", 0)
    except OutputClosed as exc:
        print(f"harness: error: cannot write the output: {exc.strerror} (give it "
              "one: `> FILE`, or `> /dev/null` to discard the report)",
              file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    except OSError as exc:
        if exc.errno not in OUTPUT_ERRORS:  # raised out of the interpreter, it would be exit 1
            return _bug()
        _stdout_gone()
        print(f"harness: error: cannot write the output: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        why = f" ({exc})" if isinstance(exc, Terminated) else ""
        print(f"harness: interrupted{why}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception:
        return _bug()


def _bug() -> int:
    """Say that the exception being handled is harness's own bug: its traceback, one line."""
    print(redacted(traceback.format_exc()), end="", file=sys.stderr)
    print(
        "harness: internal error: this is a bug in harness; please report it with the "
        "traceback above",
        file=sys.stderr,
    )
    return EXIT_BUG
