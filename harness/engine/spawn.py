"""The harness's side of the zygote (`harness.engine.zygote`): spawn it, hand it jobs.

One zygote per harness process, spawned at the first `warm()` or job: a fresh
`python -I -S` with an empty environment, whose only descriptor is its end of
a socket. `submit` gives it a job's pipes and writes the job: the child's pid
comes back on the status pipe, then its wait status.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import select
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness

READY_SECONDS = 120.0  # how long the zygote may take to import what it needs
SKIP_ENV = "HARNESS_TEST_SKIP_WALLS"  # tests only: walls not to try, comma-separated
BOOT = (
    "import sys, json; sys.path[:0] = json.loads(sys.argv[3]); "
    "from harness.engine.zygote import main; main(sys.argv)"
)


class ZygoteFailed(RuntimeError):
    """The zygote could not start or went away: a harness bug or a broken install."""


class Unstartable(ZygoteFailed):
    """The zygote's interpreter cannot be run at all (this user may not execute it): the
    setup's to fix, said in one line."""


@dataclass
class Submitted:
    """A job's child: the parent's ends of its pipes. The status pipe first carries the
    child's pid (`pid()` reads it when it is needed), then its wait status."""

    out: int
    trace: int
    status: int
    known: int | None = None

    def pid(self) -> int:
        if self.known is None:
            data = read_exactly(self.status, 8, time.monotonic() + READY_SECONDS)
            if data is None or len(data) < 8:
                raise ZygoteFailed("the evaluation zygote did not start the job")
            self.known = int.from_bytes(data, "big")
        return self.known


class Zygote:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        argv = [sys.executable, "-I", "-S", "-c", BOOT, str(theirs.fileno()),
                os.environ.get(SKIP_ENV, ""), json.dumps(import_path())]  # fmt: skip
        try:
            self.process = subprocess.Popen(
                argv,
                env={},
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,  # a terminal's Ctrl-C is the harness's alone
            )
        except OSError as exc:  # not executable by this user, gone, out of processes
            ours.close()
            raise Unstartable(
                f"cannot start the interpreter that evaluates ({sys.executable}): "
                f"{exc.strerror or exc}; run harness with a Python this user may execute"
            ) from None
        finally:
            theirs.close()
        self.sock = ours
        self.ready = False

    def wait_ready(self) -> None:
        if self.ready:
            return
        if not select.select([self.sock], [], [], READY_SECONDS)[0] or self.sock.recv(1) != b"R":
            raise ZygoteFailed("the evaluation zygote did not start (see the lines above)")
        self.ready = True

    def submit(self, job: bytes) -> Submitted:
        self.wait_ready()
        job_r, job_w = _job_file(job)
        pipes = [os.pipe() for _ in range(3)]  # out, trace, status
        theirs = [job_r, *(w for _, w in pipes)]
        try:
            socket.send_fds(self.sock, [b"J"], theirs)
        except OSError as exc:
            for fd in [*theirs, *(r for r, _ in pipes), *([] if job_w is None else [job_w])]:
                os.close(fd)
            raise ZygoteFailed(f"the evaluation zygote has gone: {exc}") from None
        for fd in theirs:
            os.close(fd)
        if job_w is not None:
            _write_all(job_w, job)
        return Submitted(pipes[0][0], pipes[1][0], pipes[2][0])

    def close(self) -> None:
        self.sock.close()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()


def job_bytes(work: Any, encode: Any, limits: Any) -> bytes:
    """The job as the child reads it (its modules come from the zygote's `import_path`)."""
    return pickle.dumps((work, encode, limits))


def import_path() -> list[str]:
    """Where the zygote and its children import from: harness's own root, then the
    entries of sys.path inside the interpreter's prefixes (the standard library, the
    environment's site-packages). Never the working directory, `PYTHONPATH` or anything
    else on the caller's path: a pull request's checkout may be there, and a file in it
    named like a module the zygote imports would run before any wall is up."""
    root = Path(harness.__file__).resolve().parent.parent
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                            sys.base_exec_prefix)}  # fmt: skip
    kept = [str(root)]
    for entry in sys.path:
        where = Path(entry).resolve() if entry else None
        inside = where is not None and any(where.is_relative_to(p) for p in prefixes)
        if inside and str(where) not in kept:
            kept.append(str(where))
    return kept


def _job_file(job: bytes) -> tuple[int, int | None]:
    """Where the child reads the job, and where the parent writes it once the child has
    its end (None: it is written already). On Linux an anonymous file in memory, written
    whole at once: a pipe's writer waits for the reader, 64 KiB at a time, and a split
    diff's dozen children, all starting, held the parent in turn, whose own work is the
    run's longest path. A pipe where there is no such file."""
    try:
        fd = os.memfd_create("harness-job", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return os.pipe()
    try:
        view = memoryview(job)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        return os.pipe()
    return fd, None


def _write_all(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BrokenPipeError:
        pass  # the child died before reading it all: its status says why
    finally:
        os.close(fd)


def read_exactly(fd: int, size: int, deadline: float) -> bytes | None:
    """`size` bytes from `fd`; fewer when it closes first, None past `deadline`
    (`time.monotonic()`)."""
    data = b""
    while len(data) < size:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data


_lock = threading.Lock()
_zygote: list[Zygote] = []  # the process's zygote, once spawned


def zygote() -> Zygote:
    """The process's zygote, spawned (again, if it died) when needed."""
    with _lock:
        if _zygote and _zygote[0].process.poll() is not None:
            _zygote.pop().sock.close()
        if not _zygote:
            _zygote.append(Zygote())
        return _zygote[0]


def warm() -> None:
    """Spawn the zygote now, so that it imports while the harness reads git (if it cannot
    start, the first job tries again and its evaluation says why)."""
    if hasattr(os, "fork") and hasattr(socket, "send_fds"):
        with contextlib.suppress(ZygoteFailed):
            zygote()


def shutdown() -> None:
    """Stop the zygote (its children die with it) and wait for it."""
    with _lock:
        while _zygote:
            _zygote.pop().close()
