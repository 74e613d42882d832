"""Evaluated code runs in a confined child of a fresh interpreter, with hard limits.

The harness never forks itself to run repository code: it hands a job (the
work, pickled: the closure's source, the matrix, the limits) to its zygote
(`harness.engine.spawn`, `harness.engine.zygote`), a `python -I -S` spawned
with an empty environment, which forks one child per job. The child puts its
walls up (`harness.engine.confine`: no filesystem, no network, no signals out,
a seccomp allow-list, CPU and memory limits, death with its parent) and sends
back plain data only (JSON, `harness.engine.plain`), which the harness reads
with a deadline and a size cap:

- CPU time is the child's own (RLIMIT_CPU): at the limit the kernel signals
  it, `faulthandler` writes the Python stack from C (so a loop inside one C
  call, `10 ** 10 ** 9`, is caught too) and the child dies; the harness kills
  it from outside at twice the limit of wall-clock time counted from when it
  starts reading the answer (its own work on another revision never counts
  against this one);
- allocation past the address-space limit is a MemoryError.

What crosses back is what the harness trusts: an outcome the code raised
`SystemExit` in is that cell's error outcome, never the harness's exit.
Where there is no `os.fork` (Windows) the code runs in-process, under the
static policy only, and a warning says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.engine import spawn
from harness.engine.limits import Limits
from harness.engine.plain import Malformed
from harness.errors import HarnessError, Unevaluable
from harness.matrix.load import MAX_CELLS

T = TypeVar("T")

ANSWERED = -1  # the status of a child that sent a whole answer and closed its pipe
HEADER = 8  # bytes of the header's length, big-endian
MAX_HEADER = 64 << 20  # what the parent reads of the JSON part, at most
MAX_PAYLOAD = 4 * MAX_CELLS  # and of the binary part (an outcome table's codes, 4 bytes a cell)
FRAME = re.compile(r'File "([^"/<][^"]*)@[^"@]*", line (\d+)')
STARVED_AT_MOST = 10  # x the limit, in wall-clock time, for a child starved of CPU
DIED = {signal.SIGSYS: "made a system call outside the allow-list (seccomp)"}


class WorkerFailed(RuntimeError):
    """The worker broke in a way the evaluated code cannot cause: a harness bug."""


Encode = Callable[[Any], tuple[Any, bytes]]
Decode = Callable[[Any, bytes], Any]


def isolated(work: Callable[[], T], encode: Encode, decode: Decode, limits: Limits) -> T:
    """`work()` run in a confined child; its result crosses back as `encode` wrote it and
    `decode` reads it. Raises Unevaluable (the code's reason, or an overrun). `work` and
    `encode` cross to the child pickled: module-level functions, partials of them."""
    return start(work, encode, decode, limits).result()


def start(work: Callable[[], T], encode: Encode, decode: Decode, limits: Limits) -> Running | Done:
    """`isolated`, started: the child runs while the caller goes on; `.result()` waits."""
    if not hasattr(os, "fork"):
        _warn_in_process()
        return Done(lambda: decode(*encode(work())))
    job = spawn.job_bytes(work, encode, limits)
    try:
        child = spawn.zygote().submit(job)
    except spawn.Unstartable as exc:
        raise HarnessError(str(exc)) from None
    except spawn.ZygoteFailed as exc:
        raise WorkerFailed(str(exc)) from None
    return Running(child, decode, limits)


@dataclass
class Done:
    """An answer computed in-process (no fork on this platform), when it is asked for."""

    compute: Callable[[], Any]

    def result(self) -> Any:
        return self.compute()


@dataclass
class Running:
    """A child at work; `result()` collects its answer once."""

    child: spawn.Submitted
    decode: Decode
    limits: Limits

    answer: tuple[bool, Any] | None = None  # (succeeded, value or exception), once collected

    def result(self) -> Any:
        """The answer (or the exception it is), collected the first time it is asked for."""
        if self.answer is None:
            try:
                self.answer = (True, self._collect())
            except (Unevaluable, WorkerFailed) as exc:
                self.answer = (False, exc)
        succeeded, value = self.answer
        if not succeeded:
            raise value
        return value

    def _collect(self) -> Any:
        child = self.child
        try:
            try:
                pid = child.pid()
            except spawn.ZygoteFailed as exc:
                raise WorkerFailed(str(exc)) from None
            data, status = _collect(pid, child.out, child.status, self.limits)
            dump = _drain(child.trace) if status != ANSWERED else ""
            return _answer(data, status, dump, self.decode, self.limits)
        finally:
            for fd in (child.out, child.trace, child.status):
                os.close(fd)


def _answer(data: bytes, status: int | None, dump: str, decode: Decode, limits: Limits) -> Any:
    if _overran(data, status, dump):
        raise Unevaluable(f"ran past {limits.describe_time()} ({_last_line(dump)})")
    if status != ANSWERED and os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        name = signal.Signals(number).name
        why = f" ({DIED[number]})" if number in DIED else ""
        raise Unevaluable(f"the evaluation died on signal {name}{why}")
    header, payload = _split(data)
    kind = header.get("kind")
    if kind == "refused" and type(header.get("reason")) is str:
        raise HarnessError(header["reason"])
    if kind == "ok":
        try:
            return decode(header.get("result"), payload)
        except (Malformed, KeyError, TypeError, ValueError, IndexError) as exc:
            raise WorkerFailed(f"the worker's answer is malformed: {exc}") from None
    if kind == "unevaluable" and type(header.get("reason")) is str:
        missing = header.get("missing")
        raise Unevaluable(header["reason"], missing if type(missing) is str else None)
    raise WorkerFailed(f"the evaluation worker failed:\n{header.get('trace', header)}")


def _overran(data: bytes, status: int | None, dump: str) -> bool:
    """Killed for time: from outside (None), or by the kernel (SIGXCPU, SIGKILL)."""
    if status is None or (not data and dump):
        return True
    if status == ANSWERED:
        return False
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL)


def _last_line(dump: str) -> str:
    """`last line reached: path:N` from faulthandler's dump (innermost frame first)."""
    found = FRAME.search(dump)
    if found is None:
        return "last line reached: unknown"
    return f"last line reached: {found.group(1)}:{found.group(2)}"


def _split(data: bytes) -> tuple[dict, bytes]:
    if len(data) < HEADER:
        raise WorkerFailed("the evaluation worker exited without an answer")
    size = int.from_bytes(data[:HEADER], "big")
    if size > MAX_HEADER or HEADER + size > len(data):
        raise WorkerFailed("the evaluation worker's answer is truncated")
    try:
        header = json.loads(data[HEADER : HEADER + size])
    except (ValueError, RecursionError) as exc:
        raise WorkerFailed(f"the worker's answer is not JSON: {exc}") from None
    if type(header) is not dict:
        raise WorkerFailed("the worker's answer is not an object")
    return header, data[HEADER + size :]


def _collect(pid: int, fd: int, status_fd: int, limits: Limits) -> tuple[bytes, int | None]:
    """Everything the child writes, and its exit status: None when it ran past twice the
    limit in wall-clock time from now (it is then killed), ANSWERED when it closed the
    pipe after a whole answer (its exit is then not waited for)."""
    deadline = time.monotonic() + 2 * limits.seconds
    last = time.monotonic() + STARVED_AT_MOST * limits.seconds
    cap = MAX_HEADER + MAX_PAYLOAD
    chunks, size = [], 0
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                if time.monotonic() < last and _starved(pid, limits.seconds):
                    deadline += limits.seconds
                    continue
                _kill(pid)
                return b"", None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > cap:
                _kill(pid)
                raise WorkerFailed("the evaluation worker sent more than it can")
            chunks.append(chunk)
        data = b"".join(chunks)
        if _whole(data):
            return data, ANSWERED
        return data, _wait(pid, status_fd, deadline)
    except BaseException:
        _kill(pid)
        raise


def _starved(pid: int, seconds: float) -> bool:
    """Whether the child is waiting for a CPU with time left (a loaded machine, not a
    runaway): runnable, and under its CPU limit. False where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        used = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return False
    return fields[0] == "R" and used < seconds


def _whole(data: bytes) -> bool:
    """Whether `data` holds a header of the length it announces (the child's last write)."""
    return len(data) >= HEADER and HEADER + int.from_bytes(data[:HEADER], "big") <= len(data)


def reap_all() -> None:
    """Stop the zygote and wait for it (for a caller measuring its children)."""
    spawn.shutdown()


def _wait(pid: int, status_fd: int, deadline: float) -> int | None:
    """The child's wait status, as the zygote reports it; None past the deadline."""
    data = spawn.read_exactly(status_fd, 4, deadline)
    if data is None:
        _kill(pid)
        return None
    if len(data) < 4:
        raise WorkerFailed("the evaluation zygote went away")
    return int.from_bytes(data, "big", signed=True)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _drain(fd: int) -> str:
    """What faulthandler wrote (the child is gone: the pipe holds all of it)."""
    chunks = []
    while select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)[-(1 << 16) :].decode(errors="replace")


_warned: list[bool] = []


def _warn_in_process() -> None:
    if not _warned:
        _warned.append(True)
        print(
            "harness: warning: no os.fork here: evaluated code runs in-process, under the "
            "static policy only (no time or memory limit)",
            file=sys.stderr,
        )
