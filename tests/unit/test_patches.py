"""git's patches for a scan: on real repositories, against `git cat-file`.

Every commit's text, made from its parent's with the patch a PatchStream read,
must be exactly the text of the blob git stores (decoded as harness decodes
Python files); whatever cannot be made with certainty is None, so the caller
reads the blob itself. (Layouts made from patches: tests/unit/closure.)
"""

from __future__ import annotations

import difflib
import itertools
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.gitio import python_source
from harness.patches import Hunk, PatchStream, encoding_kept, file_patches, splice
from harness.testing.gitrepo import FixtureRepo

PATH = "pkg/a.py"
HEAD = "# one\n# two\n"  # lines 1 and 2 decide a file's encoding: patches leave them alone


def _history(tmp_path, texts: list[bytes]) -> tuple[FixtureRepo, list]:
    """A repository with one commit per text of PATH; (sha, blob) per commit."""
    repo = FixtureRepo(tmp_path / "repo")
    made = []
    for n, data in enumerate(texts):
        (repo.root / PATH).parent.mkdir(parents=True, exist_ok=True)
        (repo.root / PATH).write_bytes(data)
        repo.git("add", "-A")
        repo.git("commit", "-q", "--allow-empty", "-m", f"edit {n}")
        made.append((repo.git("rev-parse", "HEAD"), repo.git("rev-parse", f"HEAD:{PATH}")))
    return repo, made


def _stored(repo: FixtureRepo, blob: str) -> str:
    data = subprocess.run(
        ["git", "cat-file", "blob", blob], cwd=repo.root, capture_output=True, check=True
    ).stdout
    return python_source(data, PATH)


def _stream(repo: FixtureRepo, shas: list[str]) -> PatchStream:
    return PatchStream(str(repo.root / ".git"), str(repo.root), shas, [PATH])


def _made(stream: PatchStream, old_text: str, old: str, new: str) -> str | None:
    """The text of blob `new`, made from blob `old`'s text and the stream's patch."""
    patch = stream.patch(new, old)
    if patch is None or not encoding_kept(old_text, patch.hunks):
        return None
    return splice(old_text, patch.hunks)


LINES = st.sampled_from(
    ["x = 1\n", "def f():\n", "    return 2\n", '"""doc\n', "-- not a header\n", "diff --git\n",
     "@@ -1 +1 @@\n", "+plus\n", "\\ backslash\n", "é = 'ü'\n", "crlf = 1\r\n", "\n", "\x01\n"]
)  # fmt: skip


@settings(max_examples=20, deadline=None)
@given(st.lists(st.lists(LINES, max_size=12), min_size=2, max_size=5), st.booleans())
def test_every_text_made_from_a_patch_is_the_blob_git_stores(
    tmp_path_factory, bodies, last_has_newline
):
    texts = []
    for body in bodies:
        text = HEAD + "".join(body)
        if not last_has_newline and text.endswith("\n") and len(text) > len(HEAD):
            text = text[:-1]  # "\ No newline at end of file"
        texts.append(text.encode())
    repo, made = _history(tmp_path_factory.mktemp("h"), texts)
    with _stream(repo, [sha for sha, _ in made[1:]]) as stream:
        for (_, old), (_, new) in itertools.pairwise(made):
            if old != new:  # as a scan asks: only for a blob that changed
                text = _made(stream, _stored(repo, old), old, new)
                assert text == _stored(repo, new), "a plain UTF-8 edit was not made, or wrong"


def test_what_cannot_be_made_with_certainty_is_left_to_the_caller(tmp_path):
    texts = [
        b"# -*- coding: latin-1 -*-\n# two\nx = 1\n",
        b"# -*- coding: latin-1 -*-\n# two\nx = 2\n",  # a coding line: not plain UTF-8
        b"# one\n# two\nx = 2\n",  # the edit touches line 1
        b"# one\n# two\nx = '\x00'\n",  # git calls it binary
        b"# one\n# two\nx = 3\n",  # from a binary file: no text patch either
        b"# one\n# two\nx = 4\n",  # an ordinary edit: made
        b"# one\n# two\nx = '\xff'\n",  # not UTF-8: the ordinary read says why
    ]
    repo, made = _history(tmp_path, texts)
    olds = [_stored(repo, blob) for _, blob in made[:-1]]
    with _stream(repo, [sha for sha, _ in made]) as stream:
        got = [_made(stream, text, old, new)
               for text, ((_, old), (_, new)) in zip(olds, itertools.pairwise(made), strict=True)]  # fmt: skip
    assert got == [None] * 4 + [olds[5], None]


def test_a_patch_from_another_blob_or_out_of_reach_is_none_and_the_rest_still_come(tmp_path):
    repo, made = _history(tmp_path, [(HEAD + f"k = {n}\n").encode() for n in range(5)])
    blobs = [blob for _, blob in made]
    with _stream(repo, [sha for sha, _ in made[1:]]) as stream:
        assert stream.patch(blobs[2], blobs[0]) is None  # git's patch is from blobs[1]
        assert stream.patch("f" * 40, blobs[0]) is None  # no such patch
        assert splice(_stored(repo, blobs[2]), stream.patch(blobs[3], blobs[2]).hunks) == (
            _stored(repo, blobs[3])
        )
        assert stream.patch(blobs[4], blobs[3]) is not None


def test_a_stream_whose_git_went_away_has_no_patches(tmp_path):
    repo, made = _history(tmp_path, [(HEAD + f"a = {n}\n").encode() for n in range(3)])
    stream = _stream(repo, [sha for sha, _ in made])
    stream.close()
    assert [stream.patch(new, old) for (_, old), (_, new) in itertools.pairwise(made)] == [None] * 2


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
    st.integers(0, 3),
)
def test_hunks_from_difflib_take_one_text_to_the_other(old_body, new_body, first_line):
    old, new = ["1\n", "2\n", *old_body], ["1\n", "2\n", *new_body]
    hunks = tuple(
        Hunk(i1, "".join(old[i1:i2]).encode(), "".join(new[j1:j2]).encode())
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new).get_opcodes()
        if tag != "equal"
    )
    assert splice("".join(old), hunks) == "".join(new)
    assert encoding_kept("".join(old), hunks) == bool(hunks)
    # the same hunks on the part of the file from `first_line` on (what a layout patches)
    shown = min(first_line, min((h.before for h in hunks), default=0))
    assert splice("".join(old[shown:]), hunks, shown) == "".join(new[shown:])


def test_hunks_that_do_not_fit_the_text_make_nothing():
    text = "a\nb\nc"  # its last line has no newline
    assert splice(text, (Hunk(1, b"x\n", b"y\n"),)) is None  # line 2 is "b", not "x"
    assert splice(text, (Hunk(5, b"", b"y\n"),)) is None  # past the end
    assert splice(text, (Hunk(1, b"b", b"y\n"),)) is None  # "b" alone is not a whole line
    assert splice(text, (Hunk(0, b"a\n", b"y"),)) is None  # only the last line may lack \n
    assert splice(text, (Hunk(2, b"", b"d\n"),)) == "a\nb\nd\nc"
    assert splice(text, (Hunk(1, b"b\n", b""), Hunk(0, b"a\n", b""))) is None  # disorder


def test_the_user_s_diff_settings_do_not_change_what_is_read(tmp_path):
    """Context between hunks, colour, external drivers: git's config may ask for any of
    them; the stream asks git for plain -U0 hunks whatever the config says."""
    lines = [f"v{n} = {n}\n" for n in range(40)]
    edited = list(lines)
    edited[10], edited[13] = "v10 = 'ten'\n", "v13 = 'thirteen'\n"  # two hunks, close by
    repo, made = _history(tmp_path, [(HEAD + "".join(v)).encode() for v in (lines, edited)])
    for key, value in (("diff.interHunkContext", "5"), ("color.ui", "always"),
                       ("diff.noprefix", "true"), ("diff.external", "false")):  # fmt: skip
        repo.git("config", key, value)
    (_, old), (sha, new) = made
    with _stream(repo, [sha]) as stream:
        assert _made(stream, _stored(repo, old), old, new) == _stored(repo, new)
