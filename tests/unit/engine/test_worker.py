"""The worker process on its own, without the static policy in front of it.

Each work function here is plain harness-side Python that goes straight for
the machine (os.system, open, os.environ, a socket, a signal, a raw system
call): the confinement alone must stop it. The policy is the first wall; these
check the second. Work crosses to the child pickled, so each is a module-level
function (or a partial of one).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import mmap
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.engine import confine, spawn, worker
from harness.engine.limits import Limits
from harness.engine.worker import WorkerFailed, isolated, start
from harness.errors import HarnessError, Unevaluable

LIMITS = Limits(seconds=1.0, memory=1 << 30)
LINUX = sys.platform.startswith("linux")


def as_is(result):
    return result, b""


def header_only(header, payload):
    return header


def run(work, limits: Limits = LIMITS):
    return isolated(work, as_is, header_only, limits)


@contextlib.contextmanager
def walls_skipped(*names: str):
    """A zygote whose children do not try the named walls (how the tests reach each
    wall alone, and the fallbacks)."""
    spawn.shutdown()
    os.environ[spawn.SKIP_ENV] = ",".join(names)
    try:
        yield
    finally:
        del os.environ[spawn.SKIP_ENV]
        spawn.shutdown()


# --- work functions (module level: they cross pickled) ------------------------------


def plain_answer():
    return {"l": [1, "two", None]}


def shell(marker: str):
    return os.system(f"touch {marker}")


def fork_once():
    try:
        os.fork()
    except OSError as exc:
        return exc.errno
    os._exit(0)


def write_file(target: str):
    try:
        with open(target, "w") as handle:
            handle.write("x")
    except OSError as exc:
        return exc.errno
    return "written"


def read_file(path: str):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode(errors="replace")
    except OSError as exc:
        return exc.errno


def change_tree(where: str):
    """mkdir, symlink and unlink: what RLIMIT_FSIZE did not stop."""
    done = []
    for name, act in (
        ("mkdir", lambda: os.mkdir(os.path.join(where, "made"))),
        ("symlink", lambda: os.symlink("/etc/passwd", os.path.join(where, "link"))),
        ("unlink", lambda: os.unlink(os.path.join(where, "keep"))),
    ):
        try:
            act()
            done.append(name)
        except OSError:
            pass
    return done


def environment_size():
    return len(os.environ)


def connect(port: int):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError as exc:
        return exc.errno
    return "connected"


def signal_parent():
    try:
        os.kill(os.getppid(), signal.SIGTERM)
    except OSError as exc:
        return exc.errno
    return "sent"


def i386_getpid():
    """getpid through the i386 ABI (`int 0x80`, eax = 20), from executable memory."""
    code = b"\xb8\x14\x00\x00\x00\xcd\x80\xc3"  # mov eax, 20; int 0x80; ret
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    return ctypes.CFUNCTYPE(ctypes.c_int)(address)()


def spin():
    return any(iter(int, 1))


def power():
    return 10**10**9


def allocate():
    return bytearray(2 << 30)


def leave():
    raise SystemExit(0)


def large_answer():
    return "x" * (1 << 20)


def one():
    return 1


# --- the tests ------------------------------------------------------------------------


def test_an_answer_crosses_back_as_plain_data():
    assert run(plain_answer) == {"l": [1, "two", None]}


def test_no_process_runs(tmp_path: Path):
    marker = tmp_path / "ran"
    with pytest.raises(Unevaluable, match="SIGSYS"):  # execve: not on the allow-list
        run(functools.partial(shell, str(marker)))
    assert not marker.exists()
    with pytest.raises(Unevaluable, match="SIGSYS"):
        run(fork_once)


def test_no_file_is_written_or_read(tmp_path):
    target = tmp_path / "written"
    secret = tmp_path / "secret"
    secret.write_text("s3cr3t")
    for work in (functools.partial(write_file, str(target)), functools.partial(read_file, secret)):
        with pytest.raises(Unevaluable, match="SIGSYS"):
            run(work)
    assert not target.exists()


@pytest.mark.skipif(not LINUX or confine.landlock_abi() < 1, reason="no Landlock here")
def test_landlock_alone_refuses_every_path(tmp_path):
    (tmp_path / "keep").write_text("kept")
    secret = tmp_path / "secret"
    secret.write_text("s3cr3t")
    with walls_skipped("seccomp"):
        assert run(functools.partial(read_file, str(secret))) != "s3cr3t"
        assert run(functools.partial(read_file, "/proc/self/environ")) != ""
        assert run(functools.partial(write_file, str(tmp_path / "w"))) != "written"
        assert run(functools.partial(change_tree, str(tmp_path))) == []
    assert (tmp_path / "keep").exists() and not (tmp_path / "made").exists()


def test_the_empty_mount_namespace_stands_in_for_landlock(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cr3t")
    with walls_skipped("seccomp", "landlock"):
        try:
            answer = run(functools.partial(read_file, str(secret)))
        except HarnessError:
            pytest.skip("no unprivileged mount namespaces here either")
        assert answer != "s3cr3t"
        assert run(functools.partial(change_tree, str(tmp_path))) == []


def test_no_filesystem_wall_is_refused_unless_allowed(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cr3t")
    with walls_skipped("seccomp", "landlock", "mount"):
        with pytest.raises(HarnessError, match="--allow-unconfined"):
            run(one)
        unconfined = Limits(LIMITS.seconds, LIMITS.memory, unconfined=True)
        assert run(one, unconfined) == 1


def test_the_child_never_had_the_harness_environment(monkeypatch):
    """Spawned with an empty environment: /proc/PID/environ of the zygote and of a child
    at work hold nothing, whatever the harness's environment holds."""
    spawn.shutdown()
    monkeypatch.setenv("HARNESS_TEST_SECRET", "s3cr3t")
    running = start(spin, as_is, header_only, LIMITS)
    child = running.child.pid()
    assert Path(f"/proc/{child}/environ").read_bytes() == b""
    assert Path(f"/proc/{spawn.zygote().process.pid}/environ").read_bytes() == b""
    assert os.environ["HARNESS_TEST_SECRET"] == "s3cr3t"
    assert run(environment_size) == 0
    with pytest.raises(Unevaluable):
        running.result()


def namespaces_allowed() -> bool:
    """Whether this kernel lets a process make user and network namespaces (probed in a
    throwaway child, as the worker does it)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0 if confine._unshare(confine.CLONE_NEWUSER | confine.CLONE_NEWNET) else 1)
    return os.waitpid(pid, 0)[1] == 0


def test_no_network_where_linux_allows_namespaces():
    if not namespaces_allowed():
        pytest.skip("this kernel does not let unprivileged processes make namespaces")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with walls_skipped("seccomp"):  # the namespace and Landlock alone
            assert run(functools.partial(connect, port)) != "connected"
        with pytest.raises(Unevaluable, match="SIGSYS"):  # socket: not on the allow-list
            run(functools.partial(connect, port))
        assert socket.create_connection(("127.0.0.1", port), timeout=1)  # the parent can


def test_no_signal_reaches_another_process():
    with pytest.raises(Unevaluable, match="SIGSYS"):
        run(signal_parent)
    if confine.landlock_abi() >= 6:
        with walls_skipped("seccomp"):  # Landlock's signal scope alone
            assert run(signal_parent) != "sent"
    assert run(one) == 1  # the zygote is still there


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the i386 ABI is x86_64's")
def test_a_foreign_system_call_abi_kills_the_child():
    with pytest.raises(Unevaluable, match="SIGSYS"):
        run(i386_getpid)
    with walls_skipped("seccomp"):  # the test can fail: without the filter it returns
        assert run(i386_getpid) > 0


@pytest.mark.parametrize("work", [spin, power], ids=["loop", "power"])
def test_runaway_work_ends_unevaluable_within_twice_the_limit(work):
    """Stopped at its CPU limit; in wall-clock time, at twice the limit, or later only
    while a loaded machine keeps it from a CPU (`worker.STARVED_AT_MOST`)."""
    spawn.zygote().wait_ready()  # its start is the harness's time, not the child's
    started = time.monotonic()
    with pytest.raises(Unevaluable, match=r"ran past 1 s"):
        run(work)
    assert time.monotonic() - started < worker.STARVED_AT_MOST * LIMITS.seconds + 1


def test_the_harness_s_own_delay_never_counts_against_a_child():
    """A child that answered while the harness was busy elsewhere (its answer larger than
    a pipe holds, so it waits on the harness) did not run past anything."""
    running = start(large_answer, as_is, header_only, LIMITS)
    time.sleep(2.5 * LIMITS.seconds)
    assert running.result() == "x" * (1 << 20)


def test_memory_past_the_limit_is_unevaluable():
    with pytest.raises(Unevaluable, match="ran out of memory"):
        run(allocate)


def test_a_malformed_answer_is_a_harness_failure_not_a_result():
    def decode(header, payload):
        raise ValueError("not what the harness writes")

    with pytest.raises(WorkerFailed, match="malformed"):
        isolated(one, as_is, decode, LIMITS)


def test_system_exit_in_the_worker_does_not_end_the_harness():
    with pytest.raises(WorkerFailed, match="SystemExit"):
        run(leave)


HOLDER = """
import sys
from harness.engine import spawn
from harness.engine.limits import Limits
from harness.engine.worker import start
from tests.unit.engine.test_worker import as_is, header_only, spin
running = start(spin, as_is, header_only, Limits(30.0, 1 << 30))
print(spawn.zygote().process.pid, flush=True)
running.result()
"""


def descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            with contextlib.suppress(OSError):
                children = {int(c) for c in (task / "children").read_text().split()}
                todo.extend(children - found)
                found |= children
    return found


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_the_workers_die_with_the_harness():
    root = str(Path(__file__).resolve().parents[3])
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, cwd=root)
    zygote = int(holder.stdout.readline())
    deadline = time.monotonic() + 10
    while not descendants(zygote) and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = descendants(zygote) | {zygote}
    assert len(workers) == 2
    holder.kill()
    holder.wait()
    deadline = time.monotonic() + 5
    while any(Path(f"/proc/{pid}").exists() for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [pid for pid in workers if _running(pid)]
    assert alive == []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_a_worker_dies_when_its_zygote_is_killed():
    """Killed outright, the zygote kills no one: each worker, confined (and, under root,
    no longer root), still dies with it (the kernel's parent-death signal, which a change
    of user would otherwise clear)."""
    root = str(Path(__file__).resolve().parents[3])
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, cwd=root)
    try:
        zygote = int(holder.stdout.readline())
        deadline = time.monotonic() + 10
        while not (sealed := [p for p in descendants(zygote) if _sealed(p)]):
            assert time.monotonic() < deadline, "no worker confined itself in 10 s"
            time.sleep(0.05)
        os.kill(zygote, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while any(_running(pid) for pid in sealed) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in sealed if _running(pid)] == []
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.skipif(not LINUX, reason="the parent-death signal is Linux's")
def test_a_child_whose_zygote_died_before_it_confined_itself_ends_there():
    """The zygote forks, then dies before its child confines itself (the child is still
    reading its job): no parent-death signal will come, so the child, which knows the
    zygote's pid from before the fork, ends when it finds another parent."""
    read_end, write_end = os.pipe()
    zygote = os.fork()
    if zygote == 0:
        me = os.getpid()
        if os.fork() == 0:
            while os.getppid() == me:  # until the zygote has gone
                time.sleep(0.01)
            try:
                confine.confine(write_end, write_end, 1.0, 1 << 30, me,
                                frozenset({"landlock", "mount", "seccomp"}))  # fmt: skip
                os.write(confine.OUT_FD, b"carried on")
            except BaseException as exc:  # not how it should end either: say so
                for fd in (confine.OUT_FD, write_end):
                    with contextlib.suppress(OSError):
                        os.write(fd, f"raised {exc!r}".encode())
            finally:
                os._exit(0)
        os._exit(0)
    os.waitpid(zygote, 0)
    os.close(write_end)
    said, deadline = b"", time.monotonic() + 20
    while time.monotonic() < deadline:
        if select.select([read_end], [], [], 0.1)[0]:
            chunk = os.read(read_end, 64)
            if not chunk:  # the child's end closed: it has ended
                break
            said += chunk
    os.close(read_end)
    assert said == b""


def _sealed(pid: int) -> bool:
    """Whether the process runs under a seccomp filter (the worker, once confined)."""
    with contextlib.suppress(OSError):
        return "Seccomp:\t2" in Path(f"/proc/{pid}/status").read_text()
    return False


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def lower_limits_of(pid: int):
    """prlimit64 on another process (its open files to 0), through ctypes."""
    libc = ctypes.CDLL(None, use_errno=True)
    limit = (ctypes.c_uint64 * 2)(0, 0)
    return libc.prlimit(pid, 7, ctypes.byref(limit), None)  # RLIMIT_NOFILE


def aim_sigio_at(pid: int):
    """F_SETOWN on the answer pipe: the kernel would signal `pid` when it is read."""
    import fcntl

    return fcntl.fcntl(3, fcntl.F_SETOWN, pid)


@pytest.mark.skipif(not LINUX, reason="seccomp is Linux's")
def test_no_limit_or_signal_owner_is_set_on_another_process():
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        for work in (lower_limits_of, aim_sigio_at):
            with pytest.raises(Unevaluable, match="SIGSYS"):
                run(functools.partial(work, other.pid))
        limits = Path(f"/proc/{other.pid}/limits").read_text()
        assert "Max open files            0" not in limits
    finally:
        other.kill()
        other.wait()


PLANTED = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\nraise ImportError\n"


def test_a_module_in_the_working_directory_never_reaches_the_zygote(history, tmp_path):
    """`python -m harness` in a pull request's checkout: the checkout is on sys.path, and
    a file there named like a module the zygote imports (pyseccomp) must not run."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    marker = tmp_path / "marker"
    (checkout / "pyseccomp.py").write_text(PLANTED.format(marker=str(marker)))
    root = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "PYTHONPATH": f"{checkout}{os.pathsep}{root}"}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "diff", "#30835^", "#30835", "--repo",
         history.repo(), "--no-cache", "--format", "json"],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert not marker.exists()


def test_an_interpreter_this_user_cannot_run_is_one_line(tmp_path, monkeypatch):
    """The zygote's Python not executable by the user (a venv linking into another user's
    home, as CI set up by root gives): the first job says so, as an error with its fix,
    never a traceback out of the interpreter (whose exit status, 1, reads 'changed')."""
    locked = tmp_path / "python"
    locked.write_text("")
    locked.chmod(0o644)  # no execute bit: not even root may run it
    spawn.shutdown()
    monkeypatch.setattr(sys, "executable", str(locked))
    try:
        spawn.warm()  # what a command does first: it must not raise
        with pytest.raises(HarnessError, match=r"cannot start the interpreter .*python\): "
                                               r"Permission denied; run harness with"):  # fmt: skip
            run(functools.partial(os.getpid))
    finally:
        spawn.shutdown()
