"""The git processes harness runs: commands, one long-lived `git cat-file --batch`,
and commands whose output a scan reads as it goes.

harness reads repositories with git itself, with no library in between: a
command is a list of arguments (never a shell line), always names the
repository with `--git-dir` (so a GIT_DIR in the environment cannot point
it elsewhere), and fails as `GitError` carrying git's own message. Only
`harness.gitio` and `harness.patches` use this module.

`start_reading` starts a git command whose output git writes ahead into a
large pipe while the scan works on what came before (see `harness.patches`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import BinaryIO

LOCATING = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")  # would override discovery
# Settings of the user's that would change what harness reads: a signature check printed
# into `git log`, `--follow` on a one-path log, a root commit's changes left out, a
# message re-encoded into another encoding than the UTF-8 harness reads (what
# `harness.gitcommit` reads from the object is UTF-8 too); and a bound on git's own cache
# of inflated objects (96 MB by default: the patches of a 20,000-commit history filled
# it, 125 MB of resident memory; 8 MB costs no time there).
SETTLED = ("log.showSignature=false", "log.follow=false", "log.showRoot=true",
           "i18n.logOutputEncoding=UTF-8", "core.deltaBaseCacheLimit=8m")  # fmt: skip


def git(git_dir: str) -> list[str]:
    """The start of every git command line: the repository named, settings fixed."""
    return ["git", "--git-dir", git_dir, *(part for s in SETTLED for part in ("-c", s))]


def as_bytes(argv: list[str]) -> list[bytes]:
    """A command line as git takes it: UTF-8, a surrogate (a byte of a name that was not
    UTF-8) as the byte it stands for, whatever the locale (under `LANG=C` Python would
    refuse a non-ASCII path: it encodes arguments in ASCII)."""
    return [arg.encode("utf-8", "surrogateescape") for arg in argv]


def in_bytes(path: str | None) -> bytes | None:
    return None if path is None else path.encode("utf-8", "surrogateescape")


class GitError(Exception):
    """A git command failed: its arguments, exit status and what it said."""

    def __init__(self, args: tuple[str, ...], status: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args)} exited with {status}: {stderr.strip()}")
        self.args_run, self.status, self.stderr = args, status, stderr

    @property
    def reason(self) -> str:
        return reason(self.stderr)


# What git says when a name names no one object: no more than harness's own "unknown
# revision" (or "ambiguous", which harness says with the candidates)
SAYS_NOTHING = ("needed a single revision", "bad revision", "ambiguous argument",
                "unknown revision", "not a valid object name", "bad object",
                "is ambiguous")  # fmt: skip
REASON_WIDTH = 240


def reason(stderr: str) -> str:
    """git's own explanation of a failure, from what it wrote on stderr: its first
    `fatal:` line that says more than "no such name", else its first such `error:`
    line ("" when none does), control characters dropped, at most REASON_WIDTH long."""
    lines = [" ".join("".join(c if c.isprintable() else " " for c in line).split())
             for line in stderr.splitlines()]  # fmt: skip
    telling = [line for line in lines if not any(s in line.lower() for s in SAYS_NOTHING)]
    for prefix in ("fatal:", "error:"):
        found = next((line for line in telling if line.startswith(prefix)), None)
        if found is not None:
            return found if len(found) <= REASON_WIDTH else found[: REASON_WIDTH - 3] + "..."
    return ""


class NotARepository(Exception):
    """`discover` found no repository (`reason`: git's own words)."""

    def __init__(self, reason: str, top: str | None = None, fix: str = "") -> None:
        super().__init__(reason)
        self.reason, self.top = reason, top  # top: the repository a subdirectory is in
        self.fix = fix  # a repository git will not read as this user: how to let it


class Repo:
    """A repository: where its objects are (`git_dir`) and its working tree (None: bare).

    `repo.git.NAME(*args)` runs `git NAME args` (underscores become dashes) and returns
    its output without the final newline; `repo.object(spec)` reads one object through a
    `git cat-file --batch` kept open for the run."""

    def __init__(self, git_dir: str, working_tree_dir: str | None) -> None:
        self.git_dir, self.working_tree_dir = git_dir, working_tree_dir
        self.git = Commands(self)
        self.answers: dict = {}  # what harness.gitio asked once of this opened repository
        self._cat: subprocess.Popen | None = None

    @property
    def bare(self) -> bool:
        return self.working_tree_dir is None

    def run(self, *args: str) -> str:
        return self.start(*args).output()

    def complaint(self, *args: str) -> str:
        """git's `reason` for failing `git ARGS` ("" when it succeeds or says nothing
        that explains); what it prints is not kept. For messages about a failure."""
        done = subprocess.run(
            as_bytes([*git(self.git_dir), *args]),
            cwd=in_bytes(self.working_tree_dir or self.git_dir),
            env=_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        return "" if done.returncode == 0 else reason(done.stderr.decode(errors="replace"))

    def start(self, *args: str) -> Started:
        """`git ARGS`, running while the caller goes on; `.output()` waits for what it
        printed (what `run` returns). Pipes, not files: a full disk must not stop harness
        reading; the output's pipe is enlarged, so git seldom waits for the reader."""
        process = subprocess.Popen(
            as_bytes([*git(self.git_dir), *args]),
            cwd=in_bytes(self.working_tree_dir or self.git_dir),
            env=_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        _enlarge(process.stdout)
        return Started(args, process)

    def object(self, spec: str) -> tuple[str, str, bytes] | None:
        """(id, type, content) of the object `spec` names (None: git has none by that name).
        Raises GitError when git cannot give it whole (a corrupt object), after asking a
        fresh `git cat-file` once."""
        if "\n" in spec or not spec:
            return None
        for attempt in range(2):
            try:
                return self._ask(spec)
            except (OSError, ValueError) as exc:
                self.close()
                if attempt:
                    raise GitError(("cat-file", "--batch"), -1, str(exc)) from None
        return None  # not reached

    def _ask(self, spec: str) -> tuple[str, str, bytes] | None:
        if self._cat is None:
            self._cat = subprocess.Popen(
                as_bytes([*git(self.git_dir), "cat-file", "--batch"]),
                env=_environment(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        self._cat.stdin.write(spec.encode("utf-8", "surrogateescape") + b"\n")
        self._cat.stdin.flush()
        return read_object(self._cat.stdout)

    def close(self) -> None:
        """Stop the `git cat-file` this repository keeps (the next read starts another)."""
        cat, self._cat = self._cat, None
        if cat is not None:
            for stream in (cat.stdin, cat.stdout):
                with contextlib.suppress(OSError):
                    stream.close()
            cat.kill()
            cat.wait()


class Started:
    """A git command running on its own (see `Repo.start`)."""

    def __init__(self, args: tuple[str, ...], process: subprocess.Popen) -> None:
        self.args, self.process = args, process

    def output(self) -> str:
        """What git printed, once it is done, without the last newline (undecodable bytes
        replaced); raises GitError as `Repo.run` does."""
        return self.data().decode(errors="replace").removesuffix("\n")

    def data(self) -> bytes:
        """What git printed, as bytes (for `-z` output: paths and subjects are any bytes)."""
        return self.said()[0]

    def said(self) -> tuple[bytes, str]:
        """(what git printed, what it wrote on stderr: warnings, when it succeeded)."""
        stdout, stderr = self.process.communicate()
        if self.process.returncode != 0:
            raise GitError(self.args, self.process.returncode, stderr.decode(errors="replace"))
        return stdout, stderr.decode(errors="replace")

    def close(self) -> None:
        """Stop it if it still runs (its answer is not wanted)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


class Commands:
    """`repo.git.rev_parse("--verify", "HEAD")` runs `git rev-parse --verify HEAD`."""

    def __init__(self, repo: Repo) -> None:
        self._repo = repo

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args: self._repo.run(name.replace("_", "-"), *args)


def discover(path: Path, search_parents: bool) -> Repo:
    """The repository at `path` (with `search_parents`, also one containing it). Raises
    NotARepository."""
    where = str(path)
    try:  # a working tree's clone: one question
        git_dir, bare, tree = _rev_parse(
            where, "--absolute-git-dir", "--is-bare-repository", "--show-toplevel"
        ).splitlines()
    except (NotARepository, ValueError):  # bare, or inside .git: the top is asked apart
        found = _rev_parse(where, "--absolute-git-dir", "--is-bare-repository")
        git_dir, bare = found.splitlines()
        tree = None if bare == "true" else _top_level(where, git_dir)
    if not search_parents and str(path) not in (git_dir, tree):
        raise NotARepository("a directory inside a repository", tree or git_dir)
    return Repo(git_dir, tree)


def _top_level(where: str, git_dir: str) -> str | None:
    try:
        return _rev_parse(where, "--show-toplevel")
    except NotARepository:  # inside the .git directory itself
        parent, name = os.path.split(git_dir)
        return parent if name == ".git" else None


def _rev_parse(where: str, *args: str) -> str:
    try:
        done = subprocess.run(
            as_bytes(["git", "-C", where, "rev-parse", *args]),
            env=_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
    except OSError as exc:
        raise NotARepository(f"cannot run git ({exc.strerror or exc})") from None
    if done.returncode != 0:
        text = done.stderr.decode(errors="replace")
        said = reason(text) or f"git exited with {done.returncode}"
        fix = ""
        if "dubious ownership" in said:  # another user's repository: git's safe.directory
            fix = (
                "it belongs to another user: trust it with `git config --global --add "
                f"safe.directory {where}` as this user, or run harness as its owner"
            )
        raise NotARepository(said, fix=fix)
    return os.fsdecode(done.stdout).removesuffix("\n")  # a path (it may end in " ")


def _environment() -> dict[str, str]:
    """The environment git runs in: no variable that locates another repository, and
    paths after `--` taken literally (a target named `a*.py` is that file, not a glob)."""
    found = {k: v for k, v in os.environ.items() if k not in LOCATING}
    found["GIT_LITERAL_PATHSPECS"] = "1"
    return found


def read_object(out: BinaryIO) -> tuple[str, str, bytes] | None:
    """The next answer of `git cat-file --batch`: (id, type, content), or None for an
    object git does not have. Raises ValueError when the stream ends or is not what git
    writes."""
    header = out.readline()
    if not header.endswith(b"\n"):
        raise ValueError("git cat-file stopped answering")
    fields = header.split()
    if len(fields) != 3 or not fields[2].isdigit():
        return None  # `<name> missing` (or ambiguous): no content follows
    size = int(fields[2])
    body = out.read(size)  # then the newline after it: no copy of a large body to drop it
    if len(body) != size or out.read(1) != b"\n":
        raise ValueError("git cat-file stopped inside an object")
    return fields[0].decode(), fields[1].decode(), body


PIPE_SIZE = 1 << 20  # how far git may run ahead, in bytes (Linux's default ceiling)
F_SETPIPE_SZ = 1031  # Linux's fcntl command (Python names it only from 3.10 on Linux)


def start_reading(
    git_dir: str, args: list[str], lines: list[str], cwd: str | None = None
) -> subprocess.Popen:
    """`git ARGS` (in `cwd`) given `lines` as its input, which it reads whole before it
    writes (`--stdin`); its output on a pipe git may fill up to PIPE_SIZE ahead of the
    reader (stderr dropped: a broken stream is read around)."""
    process = subprocess.Popen(
        as_bytes([*git(git_dir), *args]),
        cwd=in_bytes(cwd),
        env=_environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=PIPE_SIZE,  # fewer, larger reads: a scan reads many short lines
    )
    _enlarge(process.stdout)
    with contextlib.suppress(OSError):  # git gone already: its output ends, and says so
        process.stdin.write("".join(f"{line}\n" for line in lines).encode())
    with contextlib.suppress(OSError):
        process.stdin.close()
    return process


def _enlarge(pipe) -> None:
    """Let git write up to PIPE_SIZE ahead of the reader (Linux; elsewhere a smaller pipe
    only means less writing ahead)."""
    if sys.platform.startswith("linux"):
        import fcntl  # POSIX only

        with contextlib.suppress(OSError):
            fcntl.fcntl(pipe.fileno(), F_SETPIPE_SZ, PIPE_SIZE)
