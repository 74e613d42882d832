"""The worker process on its own, without the static policy in front of it.

Each work function here is plain harness-side Python that goes straight for
the machine (os.system, open, os.environ, a socket): the confinement alone
must stop it. The policy is the first wall; these check the second.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from harness.engine import worker
from harness.engine.limits import Limits
from harness.engine.worker import WorkerFailed, isolated
from harness.errors import Unevaluable

LIMITS = Limits(seconds=1.0, memory=1 << 30)


def run(work, limits: Limits = LIMITS):
    return isolated(work, lambda result: (result, b""), lambda header, payload: header, limits)


def test_an_answer_crosses_back_as_plain_data():
    assert run(lambda: {"l": [1, "two", None]}) == {"l": [1, "two", None]}


def test_no_process_runs(tmp_path: Path):
    marker = tmp_path / "ran"
    status = run(lambda: os.system(f"touch {marker}"))
    assert status != 0 and not marker.exists()

    def spawn():
        try:
            os.fork()
        except OSError as exc:
            return exc.errno
        os._exit(0)

    assert isinstance(run(spawn), int)


def test_no_file_is_written_and_nothing_is_read_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_SECRET", "s3cr3t")
    target = tmp_path / "written"

    def write():
        try:
            with open(target, "w") as handle:
                handle.write("x")
        except OSError as exc:
            return exc.errno
        return "written"

    assert run(write) != "written" and not target.exists()
    assert run(lambda: os.environ.get("HARNESS_TEST_SECRET")) is None
    assert run(lambda: len(os.environ)) == 0


def namespaces_allowed() -> bool:
    """Whether this kernel lets a process make user and network namespaces (probed in a
    throwaway child, as the worker does it)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0 if worker._no_network() else 1)
    return os.waitpid(pid, 0)[1] == 0


def test_no_network_where_linux_allows_namespaces():
    if not namespaces_allowed():
        pytest.skip("this kernel does not let unprivileged processes make namespaces")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        def connect():
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError as exc:
                return exc.errno
            return "connected"

        assert run(connect) != "connected"
        assert socket.create_connection(("127.0.0.1", port), timeout=1)  # the parent can


@pytest.mark.parametrize(
    "work", [lambda: any(iter(int, 1)), lambda: 10**10**9], ids=["loop", "power"]
)
def test_runaway_work_ends_unevaluable_within_twice_the_limit(work):
    started = time.monotonic()
    with pytest.raises(Unevaluable, match=r"ran past 1 s"):
        run(work)
    assert time.monotonic() - started < 2 * LIMITS.seconds + 0.5


def test_memory_past_the_limit_is_unevaluable():
    with pytest.raises(Unevaluable, match="ran out of memory"):
        run(lambda: bytearray(2 << 30))


def test_a_malformed_answer_is_a_harness_failure_not_a_result():
    def decode(header, payload):
        raise ValueError("not what the harness writes")

    with pytest.raises(WorkerFailed, match="malformed"):
        isolated(lambda: 1, lambda r: (r, b""), decode, LIMITS)


def test_system_exit_in_the_worker_does_not_end_the_harness():
    def leave():
        raise SystemExit(0)

    with pytest.raises(WorkerFailed, match="SystemExit"):
        run(leave)
