"""A second process that makes the states of a scan's later commits.

A history spends most of its time reading and parsing each commit's files,
one commit after the other, on one core. With a long range, a forked
process (the scout) makes the states of the later part while the scan
works through the earlier part, and sends them back as plain data: each
commit's blob ids, its state's facts and the outcome tables it made. The
scan files them where it finds states by blob (`Versions.adopt`), so when
it reaches those commits it reads nothing; everything else about the scan
(comparisons, reverts, skipped commits, why rules changed) is unchanged.

The scout runs harness's own code on the repository's text, as the scan
does; the code it evaluates runs in workers of its own, under the same
limits. Should it fail in any way, the scan makes those states itself.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from harness import gitio
from harness.engine.outcome import CODE_TYPE, Outcome, OutcomeTable
from harness.gitcmd import Repo
from harness.scan.cache import plain, plain_load
from harness.scan.coverage import PassCoverage
from harness.scan.versions import State, Versions

MIN_COMMITS = 200  # below this, forking and a cold parse cost more than they save
SHARE = 0.45  # of the commits, the later part the scout takes (it starts colder)

States = Callable[[Versions, list[gitio.Commit]], Iterator[tuple[gitio.Commit, State]]]


@dataclass
class Scout:
    """A forked process at work on `commits` (the later part of a scan)."""

    pid: int
    fd: int
    commits: list[gitio.Commit]

    def adopt_into(self, versions: Versions) -> bool:
        """Wait for the scout and file its states in `versions`; False: it failed, and the
        scan makes them itself."""
        try:
            found = _decode(_read_all(self.fd), versions.matrix.size)
        except Exception:  # whatever a scout that died halfway sent
            found = None
        finally:
            os.close(self.fd)
            _wait(self.pid)
        if found is None:
            return False
        for blobs, state in found:
            versions.adopt(blobs, state)
        return True


def start(
    versions: Versions, commits: list[gitio.Commit], states: States
) -> tuple[int, Scout | None]:
    """Fork a scout for the later part of `commits` when the range is long enough; returns
    where its part starts (len(commits): no scout) and the scout."""
    if len(commits) < MIN_COMMITS or not hasattr(os, "fork"):
        return len(commits), None
    split = len(commits) - int(len(commits) * SHARE)
    later = commits[split:]
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the scout: never returns
        os.close(read)
        _scout(versions, later, states, write)
    os.close(write)
    return split, Scout(pid, read, later)


def _scout(versions: Versions, commits: list[gitio.Commit], states: States, fd: int) -> None:
    status = 0
    try:
        repo = Repo(versions.repo.git_dir, versions.repo.working_tree_dir)  # its own git
        own = Versions(repo, versions.matrix, versions.cache, versions.exhaustive, versions.limits)
        with own.reading_ahead(commits):
            made = [(own.blobs_at.get(c.sha, {}), s) for c, s in states(own, commits)]
        _send(fd, _encode(made))
    except BaseException:  # the scan carries on without it
        status = 70
    finally:
        os._exit(status)


def _encode(made: list[tuple[dict, State]]) -> bytes:
    tables: dict[str, tuple] = {}
    records = []
    for blobs, state in made:
        if state.key not in tables:
            tables[state.key] = ([(o.kind, o.value) for o in state.table.outcomes],
                                 state.table.codes.tobytes())  # fmt: skip
        records.append((tuple(sorted(blobs.items())), _record(state)))
    data = (tables, records)
    if not plain(data):
        raise ValueError("a value that does not travel as plain data")
    return pickle.dumps(data, protocol=5)


def _record(state: State) -> tuple:
    coverage = tuple((c.name, c.cells, c.why) for c in state.coverage)
    return (state.key, state.reason, state.line, state.sha, state.skipped, state.files,
            state.impure, state.defaults, state.unguarded, coverage,
            state.unused_guards)  # fmt: skip


def _decode(payload: bytes, size: int) -> list[tuple[tuple, State]] | None:
    if not payload:
        return None
    tables, records = plain_load(payload)
    made = {key: _table(outcomes, codes, size) for key, (outcomes, codes) in tables.items()}
    out = []
    for blobs, record in records:
        key, reason, line, sha, skipped, files, impure, defaults, unguarded, cov, unused = record
        coverage = tuple(PassCoverage(*c) for c in cov)
        state = State(key, made[key], reason, line, sha, skipped, files, None, impure,
                      defaults, unguarded, coverage, unused)  # fmt: skip
        out.append((blobs, state))
    return out


def _table(outcomes: Iterable[tuple[str, Any]], raw: bytes, size: int) -> OutcomeTable:
    codes = array(CODE_TYPE)
    codes.frombytes(raw)
    found = [Outcome(kind, value) for kind, value in outcomes]
    if len(codes) != size or (codes and max(codes) >= len(found)):
        raise ValueError("not a table of this matrix")
    return OutcomeTable(found, codes)


def _send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.close(fd)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _wait(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
