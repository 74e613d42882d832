"""Evaluated code runs in a worker process with hard limits.

The harness forks; the child confines itself before running anything from
the repository, and sends back plain data only (JSON, `harness.engine.plain`),
which the parent reads with a deadline and a size cap. In the child:

- a CPU-time limit (RLIMIT_CPU): at the limit the kernel signals it and
  `faulthandler` writes the Python stack from C (so a loop inside one C
  call, `10 ** 10 ** 9`, is caught too), and the child dies; the parent kills
  it from outside at twice the limit of wall-clock time whatever it does;
- an address-space limit (RLIMIT_AS, on top of what the process already had):
  allocation past it is a MemoryError;
- no environment variables, no open files but its two pipes, no new files
  (RLIMIT_NOFILE, RLIMIT_FSIZE), no bytecode written (an import writes no
  `.pyc` into the install, whatever the limits let through), no new processes
  (RLIMIT_NPROC), and, where Linux lets an unprivileged process make
  namespaces, no network;
- SIGINT ignored: Ctrl-C is the parent's, which then kills the child.

What crosses back is what the parent trusts: an outcome the code raised
`SystemExit` in is that cell's error outcome, never the harness's exit.
Where `os.fork` does not exist (Windows) the code runs in-process, under the
static policy only, and a warning says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import fcntl
import json
import mmap
import os
import re
import resource
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.engine.limits import Limits
from harness.engine.plain import Malformed
from harness.errors import Unevaluable

T = TypeVar("T")

NOBODY = 65534
OUT_FD, TRACE_FD = 3, 4  # the child's two pipes, after it closes everything else
ANSWERED = -1  # the status of a child that sent a whole answer and closed its pipe
HEADER = 8  # bytes of the header's length, big-endian
MAX_HEADER = 64 << 20  # what the parent reads of the JSON part, at most
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
FRAME = re.compile(r'File "([^"/<][^"]*)@[^"@]*", line (\d+)')


class WorkerFailed(RuntimeError):
    """The worker broke in a way the evaluated code cannot cause: a harness bug."""


Encode = Callable[[Any], tuple[Any, bytes]]
Decode = Callable[[Any, bytes], Any]


def isolated(
    work: Callable[[], T], encode: Encode, decode: Decode, limits: Limits, room: int = 0
) -> T:
    """`work()` run in a confined child; its result crosses back as `encode` wrote it and
    `decode` reads it. Raises Unevaluable (the code's reason, or an overrun)."""
    return start(work, encode, decode, limits, room).result()


def start(
    work: Callable[[], T], encode: Encode, decode: Decode, limits: Limits, room: int = 0
) -> Running | Done:
    """`isolated`, started: the child runs while the caller goes on; `.result()` waits.
    A binary part of up to `room` bytes crosses through shared memory (a table's codes:
    no copy through the pipe)."""
    if not hasattr(os, "fork"):
        _warn_in_process()
        return Done(lambda: decode(*encode(work())))
    sys.stdout.flush()
    sys.stderr.flush()
    _reap()
    shared = mmap.mmap(-1, max(room, 1))
    out_r, out_w = os.pipe()
    trace_r, trace_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _child(work, encode, out_w, trace_w, limits, shared)
    os.close(out_w)
    os.close(trace_w)
    return Running(pid, out_r, trace_r, shared, decode, limits, time.monotonic())


@dataclass
class Done:
    """An answer computed in-process (no fork on this platform), when it is asked for."""

    compute: Callable[[], Any]

    def result(self) -> Any:
        return self.compute()


@dataclass
class Running:
    """A child at work; `result()` collects its answer once."""

    pid: int
    out: int
    trace: int
    shared: mmap.mmap
    decode: Decode
    limits: Limits
    started: float

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
        try:
            data, status = _collect(self.pid, self.out, self.limits, self.started)
            dump = _drain(self.trace) if status != ANSWERED else ""
            return _answer(data, status, dump, self.decode, self.limits, self.shared)
        finally:
            os.close(self.out)
            os.close(self.trace)
            self.shared.close()


def _answer(
    data: bytes, status: int | None, dump: str, decode: Decode, limits: Limits, shared: mmap.mmap
) -> Any:
    if _overran(data, status, dump):
        raise Unevaluable(f"ran past {limits.describe_time()} ({_last_line(dump)})")
    if status != ANSWERED and os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise Unevaluable(f"the evaluation died on signal {name}")
    header, payload = _split(data)
    room = header.get("shared")
    if type(room) is int and 0 <= room <= len(shared) and not payload:
        payload = shared[:room]
    kind = header.get("kind")
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
    """Killed for time: from outside (None), by the kernel, or by its own watchdog."""
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
    except ValueError as exc:
        raise WorkerFailed(f"the worker's answer is not JSON: {exc}") from None
    if type(header) is not dict:
        raise WorkerFailed("the worker's answer is not an object")
    return header, data[HEADER + size :]


def _collect(pid: int, fd: int, limits: Limits, started: float) -> tuple[bytes, int | None]:
    """Everything the child writes, and its exit status: None when it ran past twice the
    limit in wall-clock time (it is then killed), ANSWERED when it closed the pipe after a
    whole answer (it is then reaped later, instead of waiting for its exit)."""
    deadline = started + 2 * limits.seconds
    cap = MAX_HEADER + 4 * limits.memory
    chunks, size = [], 0
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
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
            _unreaped.append(pid)
            return data, ANSWERED
        return data, _wait(pid, deadline)
    except BaseException:
        _kill(pid)
        raise


def _whole(data: bytes) -> bool:
    """Whether `data` holds a header of the length it announces (the child's last write)."""
    return len(data) >= HEADER and HEADER + int.from_bytes(data[:HEADER], "big") <= len(data)


def _reap(block: bool = False) -> None:
    """Collect the exit of children that answered (they exit right after)."""
    for pid in list(_unreaped):
        try:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _unreaped.remove(pid)


_unreaped: list[int] = []  # children that answered and have not been waited for yet


def reap_all() -> None:
    """Wait for every child that answered (for a caller measuring its children)."""
    _reap(block=True)


def _wait(pid: int, deadline: float) -> int | None:
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            _kill(pid)
            return None
        time.sleep(0.001)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _drain(fd: int) -> str:
    """What faulthandler wrote (the child is gone: the pipe holds all of it)."""
    chunks = []
    while select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)[-(1 << 16) :].decode(errors="replace")


# --- the child -------------------------------------------------------------------


def _child(
    work: Callable[[], Any],
    encode: Encode,
    out: int,
    trace: int,
    limits: Limits,
    shared: mmap.mmap,
) -> None:
    status = 0
    try:
        _confine(out, trace, limits)
        dump = open(TRACE_FD, "w", closefd=False)  # noqa: SIM115 (lives as long as the child)
        faulthandler.register(signal.SIGXCPU, file=dump, all_threads=False, chain=True)
        faulthandler.dump_traceback_later(1.5 * limits.seconds, exit=True, file=dump)
        _limit(getattr(resource, "RLIMIT_NPROC", None), 0)  # after the watchdog's thread
        header, payload = _run(work, encode)
        if payload and len(payload) <= len(shared):
            shared[: len(payload)] = payload
            header, payload = {**header, "shared": len(payload)}, b""
        _send(header, payload)
        os.close(OUT_FD)  # the parent reads the answer now, not after this process is gone
    except BaseException:
        status = 70
        _send({"kind": "crash", "trace": traceback.format_exc(limit=20)}, b"")
    finally:
        os._exit(status)


def _run(work: Callable[[], Any], encode: Encode) -> tuple[dict, bytes]:
    try:
        result, payload = encode(work())
        return {"kind": "ok", "result": result}, payload
    except Unevaluable as exc:
        return {"kind": "unevaluable", "reason": str(exc), "missing": exc.missing}, b""
    except MemoryError:
        reason = "ran out of memory under the worker's limit (--memory-limit)"
        return {"kind": "unevaluable", "reason": reason}, b""
    except BaseException:
        return {"kind": "crash", "trace": traceback.format_exc(limit=20)}, b""


def _send(header: dict, payload: bytes) -> None:
    text = json.dumps(header).encode()
    data = len(text).to_bytes(HEADER, "big") + text + payload
    view = memoryview(data)
    while view:
        view = view[os.write(OUT_FD, view) :]


def _confine(out: int, trace: int, limits: Limits) -> None:
    """Everything the child gives up before any repository code runs."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out, trace = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (out, trace))
    os.dup2(out, OUT_FD)
    os.dup2(trace, TRACE_FD)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(TRACE_FD + 1, _max_fd())
    os.environ.clear()
    sys.dont_write_bytecode = True  # no .pyc into the install, whatever the limits allow
    _not_root()
    _no_network()
    _no_programs()
    seconds = max(1, int(limits.seconds + 0.999))
    _limit(resource.RLIMIT_CPU, seconds, seconds + 1)
    _limit(resource.RLIMIT_AS, _address_space() + limits.memory)
    _limit(resource.RLIMIT_FSIZE, 0)
    _limit(resource.RLIMIT_NOFILE, TRACE_FD + 1)


def _address_space() -> int:
    """Bytes of address space this process already has (the harness's own, or a pytest
    run's that imported torch): the limit is on what the evaluation adds to it."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _limit(kind: int | None, soft: int, hard: int | None = None) -> None:
    if kind is None:
        return
    with contextlib.suppress(ValueError, OSError):  # not enforced here: the other walls stand
        resource.setrlimit(kind, (soft, soft if hard is None else hard))


def _max_fd() -> int:
    try:
        return min(os.sysconf("SC_OPEN_MAX"), 1 << 16)
    except (ValueError, OSError):
        return 1024


def _no_network() -> bool:
    """A new, empty network namespace (Linux, when unprivileged namespaces are allowed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0
    except (OSError, AttributeError):
        return False


def _not_root() -> None:
    """As root, become nobody: root is exempt from RLIMIT_NPROC."""
    if os.geteuid() != 0:
        return
    try:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    except OSError:
        pass


# seccomp: execve and execveat fail with EPERM (no other program runs in the child)
SECCOMP_ARCHES = {  # machine: (AUDIT_ARCH, execve, execveat)
    "x86_64": (0xC000003E, 59, 322),
    "aarch64": (0xC00000B7, 221, 281),
}
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
RET_ALLOW, RET_EPERM = 0x7FFF0000, 0x00050000 | 1


class _Filter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    ]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def _no_programs() -> bool:
    """A seccomp filter refusing execve (Linux on x86_64 and aarch64)."""
    arch = SECCOMP_ARCHES.get(os.uname().machine)
    if not sys.platform.startswith("linux") or arch is None:
        return False
    audit, execve, execveat = arch
    ld, jeq, ret = 0x20, 0x15, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_RET|K
    rules = [
        (ld, 0, 0, 4),  # seccomp_data.arch
        (jeq, 1, 0, audit),
        (ret, 0, 0, RET_ALLOW),  # another ABI: leave it to the other walls
        (ld, 0, 0, 0),  # seccomp_data.nr
        (jeq, 2, 0, execve),
        (jeq, 1, 0, execveat),
        (ret, 0, 0, RET_ALLOW),
        (ret, 0, 0, RET_EPERM),
    ]
    filters = (_Filter * len(rules))(*(_Filter(*r) for r in rules))
    program = _Program(len(rules), filters)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) == 0
    except (OSError, AttributeError):
        return False


_warned: list[bool] = []


def _warn_in_process() -> None:
    if not _warned:
        _warned.append(True)
        print(
            "harness: warning: no os.fork here: evaluated code runs in-process, under the "
            "static policy only (no time or memory limit)",
            file=sys.stderr,
        )
