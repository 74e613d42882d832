"""The walls an evaluation child puts up before it runs anything from the repository.

Called in the child (`harness.engine.zygote`), after it has read its job and
before it runs it, in this order:

- its pipes moved to fixed descriptors, every other descriptor closed, the
  standard streams on /dev/null; SIGINT ignored (Ctrl-C is the harness's);
- `PR_SET_PDEATHSIG`: it dies with the process that forked it;
- as root, it becomes nobody (root is exempt from RLIMIT_NPROC);
- a new user and network namespace where Linux lets an unprivileged process
  make one: no network;
- no filesystem at all: a Landlock domain that handles every filesystem
  right and grants none, scoped so that no signal reaches a process outside
  it (Landlock ABI 6) and no TCP socket binds or connects (ABI 4); where the
  kernel has no Landlock, a new mount namespace whose root is an empty,
  read-only tmpfs; where neither exists, nothing (the caller refuses to run
  the code unless told `--allow-unconfined`);
- resource limits: CPU time, address space, no file growth, no new
  descriptors, no new processes;
- a seccomp allow-list (libseccomp, through `pyseccomp`): the system calls
  pure computation needs on descriptors it already has, and nothing else.
  Any other call, and any call through another architecture's ABI
  (`int 0x80` on x86_64), kills the process. `kill`, `tgkill` and `prlimit64`
  are allowed towards itself only (faulthandler re-raises SIGXCPU), `fcntl`
  without F_SETOWN/F_SETSIG (which would aim SIGIO at any process), `ioctl` for
  TCGETS only.

Hand-written parts, and why: Landlock is three system calls with a stable
layout, done here with ctypes (the Python bindings on the index are
pre-releases); seccomp uses libseccomp, which knows every architecture's
numbers and the x32 trap.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import resource
import signal
import sys
from dataclasses import dataclass

NOBODY = 65534
OUT_FD, TRACE_FD = 3, 4  # the child's two pipes, after it closes everything else
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x20000, 0x10000000, 0x40000000
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_REC, MS_PRIVATE = 0x4000, 1 << 18

# Landlock (include/uapi/linux/landlock.h): the same numbers on every architecture
LANDLOCK_CREATE_RULESET, LANDLOCK_RESTRICT_SELF = 444, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2

# what pure computation on descriptors it already has needs (CPython 3.11+ on glibc/musl)
ALLOWED_CALLS = (
    "read", "readv", "pread64", "write", "writev", "pwrite64", "close", "lseek", "fstat",
    "newfstatat", "statx", "dup", "dup2", "dup3",
    "mmap", "munmap", "mremap", "mprotect", "madvise", "brk",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "restart_syscall",
    "futex", "sched_yield", "sched_getaffinity", "set_robust_list", "rseq",
    "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time",
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid",
    "getrusage", "getrlimit", "getrandom", "uname", "sysinfo",
    "select", "pselect6", "poll", "ppoll", "exit", "exit_group",
)  # fmt: skip


FCNTL_COMMANDS = (
    0,
    1,
    2,
    3,
    4,
    1030,
)  # F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC
TCGETS = 0x5401


@dataclass(frozen=True)
class Walls:
    """Which walls went up."""

    filesystem: str  # "landlock N", "empty mount namespace", or "" (none)
    network: bool


def confine(
    out: int,
    trace: int,
    seconds: float,
    memory: int,
    parent: int,
    skip: frozenset[str] = frozenset(),
) -> Walls:
    """What the child gives up before any repository code runs, but the seccomp filter
    (`seal`, once faulthandler's handler is registered). `parent` is the pid of the
    process that forked this one, as that process knew it: had it died since the fork,
    this one's parent is another and it ends here. `skip` names walls not to try
    ("landlock", "mount", "seccomp"): how the tests reach the fallbacks."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _fixed_descriptors(out, trace)
    os.environ.clear()
    sys.dont_write_bytecode = True
    space = _address_space()
    _not_root()
    _die_with_parent(parent)  # after the change of user, which clears it
    abi = 0 if "landlock" in skip else landlock_abi()
    network, filesystem = _namespaces(abi < 1 and "mount" not in skip)
    if abi >= 1:
        filesystem = _landlock(abi)
    whole = max(1, int(seconds + 0.999))
    _limit(resource.RLIMIT_CPU, whole, whole + 1)
    _limit(resource.RLIMIT_AS, space + memory)
    _limit(resource.RLIMIT_FSIZE, 0)
    _limit(resource.RLIMIT_NOFILE, TRACE_FD + 1)
    return Walls(filesystem, network)


def _namespaces(mount: bool) -> tuple[bool, str]:
    """(no network, the filesystem wall): a new user and network namespace, and with
    `mount` a new mount namespace whose root is empty."""
    if mount and _unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS):
        return True, _empty_root()
    return _unshare(CLONE_NEWUSER | CLONE_NEWNET), ""


def no_processes() -> None:
    """RLIMIT_NPROC at 0 (no thread either: a thread is a process)."""
    _limit(getattr(resource, "RLIMIT_NPROC", None), 0)


def _fixed_descriptors(out: int, trace: int) -> None:
    out, trace = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (out, trace))
    os.dup2(out, OUT_FD)
    os.dup2(trace, TRACE_FD)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(TRACE_FD + 1, _max_fd())


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _die_with_parent(parent: int) -> None:
    """SIGKILL when the process that forked this one dies; and now, if it died already
    (before the kernel was asked)."""
    libc = _libc()
    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(70)


def _not_root() -> None:
    if os.geteuid() != 0:
        return
    try:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    except OSError:
        pass


def _unshare(flags: int) -> bool:
    libc = _libc()
    return libc is not None and libc.unshare(flags) == 0


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where it has none."""
    libc = _libc()
    if libc is None or os.uname().machine not in ("x86_64", "aarch64"):
        return 0
    version = libc.syscall(LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return max(0, version)


def _landlock(abi: int) -> str:
    """A Landlock domain that grants no filesystem right (nor TCP, nor signals out)."""
    libc = _libc()
    fs = FS_RIGHTS_BY_ABI[max(a for a in FS_RIGHTS_BY_ABI if a <= abi)]
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = _RulesetAttr(fs, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = libc.syscall(LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        return ""
    try:
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return ""
        if libc.syscall(LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
            return ""
    finally:
        os.close(ruleset)
    return f"landlock {abi}"


def _empty_root() -> str:
    """Inside a new mount namespace: a root that is an empty read-only tmpfs."""
    mount = _libc().mount
    if mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return ""
    where = b"/tmp" if os.path.isdir("/tmp") else b"/"
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if mount(b"none", where, b"tmpfs", flags, b"size=4k,mode=555") != 0:
        return ""
    try:
        os.chdir(where)
        os.chroot(".")
        os.chdir("/")
    except OSError:
        return ""
    mount(None, b"/", None, MS_REMOUNT | MS_RDONLY | flags, None)
    return "empty mount namespace"


def seal(skip: frozenset[str] = frozenset()) -> bool:
    """The seccomp allow-list, on every thread; any other call or architecture kills the
    process. False where there is no seccomp (the other walls stand)."""
    if not sys.platform.startswith("linux") or "seccomp" in skip:
        return False
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError):
        return False
    try:
        rules = seccomp.SyscallFilter(defaction=seccomp.KILL_PROCESS)
        rules.set_attr(seccomp.Attr.CTL_TSYNC, 1)  # faulthandler's thread too
        rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)  # not the thread
        for name in ALLOWED_CALLS:
            with contextlib.suppress(Exception):  # a call this architecture does not have
                rules.add_rule(seccomp.ALLOW, name)
        me = os.getpid()
        rules.add_rule(seccomp.ALLOW, "kill", seccomp.Arg(0, seccomp.EQ, me))
        rules.add_rule(seccomp.ALLOW, "tgkill", seccomp.Arg(0, seccomp.EQ, me))
        for pid in (0, me):  # its own limits only (another process's could be lowered)
            rules.add_rule(seccomp.ALLOW, "prlimit64", seccomp.Arg(0, seccomp.EQ, pid))
        for command in FCNTL_COMMANDS:  # not F_SETOWN/F_SETSIG: a signal to anyone
            rules.add_rule(seccomp.ALLOW, "fcntl", seccomp.Arg(1, seccomp.EQ, command))
        rules.add_rule(seccomp.ALLOW, "ioctl", seccomp.Arg(1, seccomp.EQ, TCGETS))  # isatty
        rules.load()
    except Exception:
        return False
    return True


def _address_space() -> int:
    """Bytes of address space this process already has: the limit is on what the
    evaluation adds to it."""
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
