"""A scan's texts made from git's patches: on real repositories, against `git cat-file`.

Every text a PatchStream makes must be exactly the text of the blob git stores
(decoded as harness decodes Python files); whatever it cannot make with
certainty is None, so the caller reads the blob itself.
"""

from __future__ import annotations

import difflib
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from harness import spans
from harness.gitio import python_source
from harness.patches import Hunk, PatchStream, apply, file_patches
from harness.testing.gitrepo import FixtureRepo

PATH = "pkg/a.py"
HEAD = "# one\n# two\n"  # lines 1 and 2 decide a file's encoding: patches leave them alone


def _history(tmp_path, texts: list[bytes], path: str = PATH) -> tuple[FixtureRepo, list]:
    """A repository with one commit per text of `path`; (sha, blob) per commit."""
    repo = FixtureRepo(tmp_path / "repo")
    made = []
    for n, data in enumerate(texts):
        (repo.root / path).parent.mkdir(parents=True, exist_ok=True)
        (repo.root / path).write_bytes(data)
        repo.git("add", "-A")
        repo.git("commit", "-q", "--allow-empty", "-m", f"edit {n}")
        made.append((repo.git("rev-parse", "HEAD"), repo.git("rev-parse", f"HEAD:{path}")))
    return repo, made


def _stored(repo: FixtureRepo, blob: str) -> str:
    data = subprocess.run(
        ["git", "cat-file", "blob", blob], cwd=repo.root, capture_output=True, check=True
    ).stdout
    return python_source(data, PATH)


def _made(repo: FixtureRepo, made: list, path: str = PATH) -> list[str | None]:
    """Each commit's text after the first, as the stream makes it from the one before."""
    known = {made[0][1]: _stored(repo, made[0][1])}
    out = []
    git_dir = str(repo.root / ".git")
    with PatchStream(git_dir, str(repo.root), [sha for sha, _ in made[1:]], [path]) as stream:
        for _, blob in made[1:]:  # as a scan does: a blob read before is not asked for
            text = known[blob] if blob in known else stream.text(blob, known.get)
            out.append(text)
            known[blob] = text if text is not None else _stored(repo, blob)
    return out


LINES = st.sampled_from(
    ["x = 1\n", "def f():\n", "    return 2\n", '"""doc\n', "-- not a header\n", "diff --git\n",
     "@@ -1 +1 @@\n", "+plus\n", "\\ backslash\n", "é = 'ü'\n", "crlf = 1\r\n", "\n", "\x01\n"]
)  # fmt: skip


@settings(max_examples=20, deadline=None)
@given(st.lists(st.lists(LINES, max_size=12), min_size=2, max_size=5), st.booleans())
def test_every_made_text_is_the_blob_git_stores(tmp_path_factory, bodies, last_has_newline):
    texts = []
    for body in bodies:
        text = HEAD + "".join(body)
        if not last_has_newline and text.endswith("\n") and len(text) > len(HEAD):
            text = text[:-1]  # "\ No newline at end of file"
        texts.append(text.encode())
    repo, made = _history(tmp_path_factory.mktemp("h"), texts)
    got = _made(repo, made)
    for (_, blob), text in zip(made[1:], got, strict=True):
        assert text == _stored(repo, blob), "a plain UTF-8 edit was not made, or made wrong"


def test_an_edit_in_the_middle_of_a_large_file_is_told_to_spans(tmp_path):
    lines = [f"v{n} = {n}\n" for n in range(3000)]
    edited = [*lines[:1500], "inserted = True\n", *lines[1501:]]
    repo, made = _history(tmp_path, [("".join(lines)).encode(), "".join(edited).encode()])
    old = _stored(repo, made[0][1])
    with PatchStream(str(repo.root / ".git"), str(repo.root), [made[1][0]], [PATH]) as stream:
        new = stream.text(made[1][1], {made[0][1]: old}.get)
    assert new == "".join(edited)
    lo, old_hi = spans.told(old, new)
    start = len("".join(lines[:1500]))
    assert (lo, old_hi) == (start, start + len(lines[1500]))
    assert spans.told(old, "".join(edited)) is None  # an equal text, not the one made


def test_what_cannot_be_made_with_certainty_is_left_to_the_caller(tmp_path):
    texts = [
        b"# -*- coding: latin-1 -*-\n# two\nx = 1\n",  # a new file: no text before it
        b"# -*- coding: latin-1 -*-\n# two\nx = 2\n",  # a coding line: not plain UTF-8
        b"# one\n# two\nx = 2\n",  # the edit touches line 1
        b"# one\n# two\nx = '\x00'\n",  # git calls it binary
        b"# one\n# two\nx = 3\n",  # from a binary file: no text patch either
        b"# one\n# two\nx = 4\n",  # an ordinary edit: made
        b"# one\n# two\nx = '\xff'\n",  # not UTF-8: the ordinary read says why
    ]
    repo, made = _history(tmp_path, texts)
    known = {blob: _stored(repo, blob) for _, blob in made[:-1]}
    with PatchStream(str(repo.root / ".git"), str(repo.root), [s for s, _ in made], [PATH]) as s:
        got = [s.text(blob, known.get) for _, blob in made]
    assert got == [None] * 5 + [known[made[5][1]], None]


def test_a_blob_out_of_order_or_without_a_base_is_none_and_the_rest_still_come(tmp_path):
    texts = [(HEAD + f"k = {n}\n").encode() for n in range(5)]
    repo, made = _history(tmp_path, texts)
    stored = {blob: _stored(repo, blob) for _, blob in made}
    shas = [sha for sha, _ in made[1:]]
    with PatchStream(str(repo.root / ".git"), str(repo.root), shas, [PATH]) as stream:
        assert stream.text(made[2][1], lambda blob: None) is None  # no text to patch from
        assert stream.text("f" * 40, stored.get) is None  # no such patch
        assert stream.text(made[3][1], stored.get) == stored[made[3][1]]
        assert stream.text(made[4][1], stored.get) == stored[made[4][1]]


def test_a_stream_whose_git_went_away_answers_none(tmp_path):
    repo, made = _history(tmp_path, [(HEAD + f"a = {n}\n").encode() for n in range(3)])
    stream = PatchStream(str(repo.root / ".git"), str(repo.root), [s for s, _ in made], [PATH])
    stream.close()
    stored = {blob: _stored(repo, blob) for _, blob in made}
    assert [stream.text(blob, stored.get) for _, blob in made[1:]] == [None, None]


@given(st.binary(max_size=400))
def test_nonsense_is_an_error_or_some_patches_never_a_crash(data):
    try:
        found = file_patches(data)
    except ValueError:
        return
    assert all(isinstance(p.old, str) and isinstance(p.new, str) for p in found)


@settings(max_examples=200)
@given(
    st.lists(st.sampled_from(["a\n", "b\n", "c\n", "dd\n", "\n"]), max_size=30),
    st.lists(st.sampled_from(["a\n", "b\n", "c\n", "ee\n", "\n"]), max_size=30),
)
def test_hunks_from_difflib_take_one_text_to_the_other(old_body, new_body):
    old, new = ["1\n", "2\n", *old_body], ["1\n", "2\n", *new_body]
    hunks = tuple(
        Hunk(i1, "".join(old[i1:i2]).encode(), "".join(new[j1:j2]).encode())
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new).get_opcodes()
        if tag != "equal"
    )
    made = apply("".join(old), [(0, 0)], hunks)
    if not hunks:
        assert made is None  # nothing to apply: the caller reads the blob
        return
    text, marks, lo, old_hi = made
    assert text == "".join(new)
    for line, position in marks:  # every mark left behind is a true line start
        assert position == len("".join(new[:line]))
    assert "".join(old)[:lo] == text[:lo]
    assert "".join(old)[old_hi:] == text[len(text) - (len("".join(old)) - old_hi) :]
