"""The zygote: a fresh interpreter that forks one confined child per evaluation.

The harness spawns it (`harness.engine.spawn`): `python -I -S`, an empty
environment, no descriptor but its socket. It imports the evaluation modules,
says it is ready, and waits. For each job the harness sends four descriptors
(the job's pipe, the answer's, faulthandler's, and a status pipe) and the
zygote forks: the child reads the job (a pickle the harness wrote: the
closure's source, the matrix, the limits, as data), puts its walls up
(`harness.engine.confine`), runs it and writes the answer. The zygote itself
never reads a job and never runs repository code: every child starts from the
same clean state, holding no secret, since the zygote never had one.

The status pipe carries the child's pid (8 bytes) as soon as it exists, then
its wait status (4 bytes) once the zygote has reaped it. When the harness goes
away its end of the socket closes: the zygote kills its children and exits
(each child also dies with the zygote: PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import importlib
import json
import linecache
import os
import pickle
import select
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from typing import Any

from harness.engine.confine import OUT_FD, TRACE_FD, confine, no_processes, seal
from harness.errors import Unevaluable

PRELOAD = (  # every module a job's pickle or its run needs: nothing is read from disk after
    "harness.engine.explore", "harness.engine.trace", "harness.engine.whatif",
    "harness.scan.infer", "harness.engine.worlds", "pyseccomp", "encodings.idna",
    "encodings.utf_16", "encodings.utf_32", "encodings.latin_1", "encodings.ascii",
    "encodings.cp1252", "encodings.unicode_escape", "encodings.raw_unicode_escape",
    "encodings.punycode", "encodings.utf_8_sig", "encodings.utf_16_le", "encodings.utf_16_be",
    "encodings.utf_32_le", "encodings.utf_32_be",  # (what json.loads of bytes decodes with)
)  # fmt: skip
HEADER = 8  # bytes of an answer header's length, big-endian
NO_SECCOMP = (
    "this machine gives evaluated code no seccomp filter (Linux with libseccomp: install "
    "libseccomp2): pass --allow-unconfined to evaluate with the other walls only"
)
NO_WALL = (
    "this machine gives evaluated code no filesystem wall (neither Landlock, Linux 5.13+, "
    "nor unprivileged user and mount namespaces): pass --allow-unconfined to evaluate with "
    "the other walls only"
)


def main(argv: list[str]) -> None:
    """The zygote's life: `argv` is [_, socket fd, walls to skip (comma-separated)]."""
    sock = socket.socket(fileno=int(argv[1]))
    skip = frozenset(argv[2].split(",")) - {""}
    for name in PRELOAD:
        with contextlib.suppress(ImportError, OSError):  # pyseccomp without libseccomp
            importlib.import_module(name)
    gc.freeze()  # what the imports made is every child's: collections need not walk it
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the harness's
    children: dict[int, int] = {}  # pid -> its status pipe
    try:
        sock.sendall(b"R")
        _serve(sock, wake_r, children, skip, (wake_r, wake_w))
    except OSError:
        pass  # the harness went away: so does the zygote
    finally:
        for pid in children:
            _kill(pid)
    os._exit(0)


def _serve(
    sock: socket.socket, wake: int, children: dict, skip: frozenset, own: tuple[int, int]
) -> None:
    while True:
        ready = select.select([sock, wake], [], [])[0]
        if wake in ready:
            while _drained(wake):
                pass
            _reap(children)
        if sock in ready:
            message, fds, _, _ = socket.recv_fds(sock, 1, 4)  # one byte per job, its fds on it
            if not message or len(fds) != 4:
                return  # the harness has gone
            zygote = os.getpid()  # the child's parent, unless the zygote dies first
            pid = os.fork()
            if pid == 0:
                sock.close()
                for fd in own:
                    os.close(fd)
                _child(fds, skip, zygote)  # never returns
            for fd in fds[:3]:
                os.close(fd)
            children[pid] = fds[3]
            _tell(fds[3], pid.to_bytes(8, "big"))


def _drained(fd: int) -> bool:
    try:
        return bool(os.read(fd, 512))
    except BlockingIOError:
        return False


def _reap(children: dict[int, int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = children.pop(pid, None)
        if fd is not None:
            _tell(fd, status.to_bytes(4, "big", signed=True))
            os.close(fd)


def _tell(fd: int, data: bytes) -> None:
    with contextlib.suppress(OSError):  # the harness closed its end: it needs no status
        os.write(fd, data)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


# --- the child -------------------------------------------------------------------


def _child(fds: list[int], skip: frozenset[str], zygote: int) -> None:
    job_r, out, trace, status_w = fds
    os.close(status_w)
    status = 0
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        work, encode, limits = _unpickled(_read_all(job_r))
        os.close(job_r)
        _yield_to_others(limits.behind)
        walls = confine(out, trace, limits.seconds, limits.memory, zygote, skip)
        if not walls.filesystem and not limits.unconfined:
            _send({"kind": "refused", "reason": NO_WALL}, b"")
            return
        dump = open(TRACE_FD, "w", closefd=False)  # noqa: SIM115 (lives as long as the child)
        faulthandler.register(signal.SIGXCPU, file=dump, all_threads=False, chain=True)
        no_processes()
        linecache.updatecache = _no_source  # tracebacks and warnings read no file
        if not seal(skip) and "seccomp" not in skip and not limits.unconfined:
            _send({"kind": "refused", "reason": NO_SECCOMP}, b"")
            return
        _send(*_run(work, encode))
        os.close(OUT_FD)  # the parent reads the answer now, not after this process is gone
    except BaseException:
        status = 70
        _send({"kind": "crash", "trace": traceback.format_exc(limit=20)}, b"")
    finally:
        os._exit(status)


def _yield_to_others(behind: int) -> None:
    """A job whose answer is wanted after others' runs `behind` niceness levels below the
    zygote's (the harness's own): any process may lower its own priority."""
    if behind > 0:
        with contextlib.suppress(OSError):
            os.nice(behind)


def _unpickled(job: bytes) -> tuple:
    """The job (trusted: the harness pickled it), read with the collector off: a job is
    tens of thousands of small objects, none of them garbage, and collecting while they
    are made walks them all again and again. They are then moved out of its sight."""
    gc.disable()
    try:
        return pickle.loads(job)
    finally:
        gc.freeze()
        gc.enable()


def _no_source(*_: Any) -> list[str]:
    return []


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _run(work: Callable[[], Any], encode: Callable[[Any], tuple[Any, bytes]]) -> tuple:
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


if __name__ == "__main__":
    main(sys.argv)
