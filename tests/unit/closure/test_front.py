"""The extraction front door (`closure/front.py`), on files held in memory: no git, no
worker. What the files alone decide is made again only when a file it read differs."""

from __future__ import annotations

from harness.closure.facts import PLAIN
from harness.closure.front import Extractor
from harness.closure.modules import RevisionFiles
from harness.errors import Absent
from harness.scan.versions import bind_matrix
from tests.unit.tables import small_matrix

TARGET = "def target(view):\n    return {'page_size': LIMIT}\n\n\nLIMIT = 16\n"


def extractor(**target) -> Extractor:
    matrix = small_matrix([2], target={"path": "m.py", "output": "page_size", **target})
    return Extractor(matrix, bind_matrix(matrix).names, None, PLAIN)


def files(text: str, **more: str) -> RevisionFiles:
    return RevisionFiles.of({"m.py": text, **more}, "m.py")


def test_a_memo_is_made_again_only_when_a_file_it_read_differs():
    front, made = extractor(function="target"), []

    def compute(found: RevisionFiles) -> str:
        made.append(found.read("m.py"))
        return found.read("m.py").upper()

    texts = ["a\n", "a\n", "b\n", "b\n", "a\n"]
    answers = [front.texts_memo("m", files(t, **{"other.py": t * 2}), compute) for t in texts]
    assert answers == [t.upper() for t in texts]
    assert made == ["a\n", "b\n", "a\n"]  # one memo kept: back to "a" is made again
    shared, made[:] = extractor(function="target").sharing(front), []
    for t in ["a\n", "b\n", "a\n", "b\n"]:
        shared.texts_memo("n", files(t), compute)
    assert made == ["a\n", "b\n"]  # sharing keeps two: a diff goes back and forth


def test_the_same_files_give_the_very_same_closure_and_an_edit_another():
    front = extractor(function="target")
    first, again = front.extract(files(TARGET)), front.extract(files(TARGET))
    assert first is again and first.digest == again.digest
    edited = front.extract(files(TARGET.replace("LIMIT = 16", "LIMIT = 64")))
    assert edited.digest != first.digest


def test_registered_passes_and_their_absence():
    front = extractor(passes="all")
    text = (
        "def register_post_process(fn):\n    return fn\n\n\n"
        "@register_post_process\ndef _one(view):\n    return {}\n\n\n"
        "@register_post_process\ndef _two(view):\n    return {'page_size': 1}\n"
    )
    pipeline = front.extract(files(text))
    assert [name for name, _ in pipeline.passes] == ["_one", "_two"]
    try:
        front.extract(files("def target(view):\n    return {}\n"))
    except Absent as exc:
        assert "no function is registered with @register_post_process in m.py" in str(exc)
    else:
        raise AssertionError("a file registering nothing has no passes to run")
