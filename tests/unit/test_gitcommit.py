"""A commit's date and subject, read from its object, are what `git log` shows for it.

git itself is the oracle: each commit object is written by `git hash-object`, and
`git log -1 --format=%cI%x00%s` says what it shows; where the reader answers, it
answers the same (a UTC date as `+00:00`, which newer gits may write `Z`)."""

from __future__ import annotations

import os
import subprocess

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harness import gitcommit, gitio
from harness.testing.gitrepo import IDENTITY, FixtureRepo

TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # the empty tree's id
# git's whitespace (space, tab, CR, LF) and two characters Python's isspace() also takes
MESSAGE = st.text(st.sampled_from([" ", "\t", "\r", "\n", "\v", "\f", "a", "b", "é", "\x00",
                                   "#"]), max_size=30)  # fmt: skip
ZONES = st.tuples(st.sampled_from("+-"), st.integers(0, 25), st.integers(0, 99))


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("commits")
    FixtureRepo(root).commit("first", {"a.txt": "a\n"})
    return root


def git(repo, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], input=data, check=True,
                          capture_output=True, env={**os.environ, **IDENTITY}).stdout  # fmt: skip


def write(repo, raw: bytes) -> str:
    return git(repo, "hash-object", "-t", "commit", "-w", "--literally", "--stdin",
               data=raw).decode().strip()  # fmt: skip


def shown(repo, sha: str) -> tuple[str, str]:
    out = git(repo, "log", "-1", "--format=%cI%x00%s", sha).decode(errors="replace")
    date, subject = out.removesuffix("\n").split("\0", 1)
    return date.replace("Z", "+00:00"), subject


def raw_commit(seconds: int, zone: tuple, message: str, extra: str = "") -> bytes:
    sign, hours, minutes = zone
    return (f"tree {TREE}\nauthor A <a@x> 1 +0000\n"
            f"committer C <c@x> {seconds} {sign}{hours:02d}{minutes:02d}\n{extra}\n"
            f"{message}").encode()  # fmt: skip


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seconds=st.integers(100_000, 4_000_000_000), zone=ZONES, message=MESSAGE
)  # git shows none before 1970
@example(seconds=100_000, zone=("+", 0, 0), message="\n \t\nab \r\nb\n\nc")  # blank lines first
@example(seconds=100_000, zone=("-", 0, 0), message="a\v\n\fb")  # not git's whitespace
def test_what_the_reader_answers_is_what_git_log_shows(repo, seconds, zone, message):
    raw = raw_commit(seconds, zone, message)
    read = gitcommit.date_and_subject(raw)
    if read is not None:
        assert read == shown(repo, write(repo, raw))
    ordinary = zone[1] < 24 and zone[2] < 60 and "\x00" not in message
    assert (read is not None) == ordinary  # else git's own text is asked for


@pytest.mark.parametrize(
    "extra",
    ["encoding ISO-8859-1\n", "gpgsig -----BEGIN-----\n \n x\n -----END-----\n"],
)
def test_headers_the_message_is_read_by_are_heeded(repo, extra):
    """An `encoding` header: git log re-encodes by it, so git is asked; a signature's
    continuation lines (one is a lone space) are header lines, not the message."""
    raw = raw_commit(1_760_000_000, ("+", 5, 30), "caf\xe9 subject\n\nbody", extra)
    if extra.startswith("encoding"):
        assert gitcommit.date_and_subject(raw.replace("é".encode(), b"\xe9")) is None
    else:
        assert gitcommit.date_and_subject(raw) == ("2025-10-09T14:23:20+05:30", "café subject")


def test_a_revision_resolves_to_what_git_log_shows_either_way(repo):
    """Through gitio: a commit read from its object, and one git is asked about (an
    `encoding` header), both say what git log says; a tag is peeled."""
    plain = write(repo, raw_commit(1_700_000_000, ("-", 3, 0), "plain\n"))
    encoded = write(
        repo,
        raw_commit(1_700_000_000, ("+", 0, 0), "caf\xe9\n", "encoding ISO-8859-1\n").replace(
            "é".encode(), b"\xe9"
        ),
    )
    git(repo, "tag", "-a", "-m", "t", "peeled", plain)
    opened = gitio.open_repo(str(repo))
    for expr, sha in ((plain, plain), (encoded, encoded), ("peeled", plain)):
        revision = gitio.resolve(opened, expr)
        assert (revision.sha, revision.date, revision.subject) == (sha, *shown(repo, sha))


def test_a_subject_is_read_as_written_whatever_encoding_git_is_told_to_show(tmp_path):
    """A user's `i18n.logOutputEncoding` would have `git log` re-encode what it shows:
    harness reads text as UTF-8, so git is told to show UTF-8, and a subject reads as it
    was written whether it is read from the object or asked of git (an `encoding`
    header)."""
    FixtureRepo(tmp_path).commit("first", {"a.txt": "a\n"})
    git(tmp_path, "config", "i18n.logOutputEncoding", "ISO-8859-1")
    utf8 = write(tmp_path, raw_commit(1_700_000_000, ("+", 1, 0), "café ünï\n"))
    latin1 = write(
        tmp_path,
        raw_commit(1_700_000_000, ("+", 1, 0), "café ünï\n", "encoding ISO-8859-1\n")
        .decode()
        .encode("latin-1"),
    )
    opened = gitio.open_repo(str(tmp_path))
    for sha in (utf8, latin1):
        assert gitio.resolve(opened, sha).subject == "café ünï"
