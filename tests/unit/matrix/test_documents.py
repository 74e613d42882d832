"""A matrix file's document, read back from its JSON copy instead of parsed again."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.matrix import documents
from harness.matrix.load import load_matrix, shipped_dir


def _copies(directory) -> list:
    return sorted(directory.glob("*.json"))


def _refuse_parsing(monkeypatch) -> None:
    def refuse(text, source):
        raise AssertionError("parsed again")

    monkeypatch.setattr(documents, "parse_yaml", refuse)


def test_a_document_parsed_once_is_read_back_as_the_same_matrix(tmp_path, monkeypatch):
    fresh = load_matrix("sglang-resolution")
    load_matrix("sglang-resolution", documents=tmp_path)
    assert len(_copies(tmp_path)) == 1
    _refuse_parsing(monkeypatch)
    again = load_matrix("sglang-resolution", documents=tmp_path)
    assert again == fresh  # axes, fields, bindings, guards, target, digest: all of it


def test_a_damaged_copy_is_parsed_again_and_written_over(tmp_path):
    fresh = load_matrix("sglang-fa4-page-size", documents=tmp_path)
    (copy,) = _copies(tmp_path)
    data = bytearray(copy.read_bytes())
    data[-10] ^= 0x01  # a digit or a letter of the document, say
    copy.write_bytes(bytes(data))
    assert load_matrix("sglang-fa4-page-size", documents=tmp_path) == fresh
    assert copy.read_bytes() != bytes(data)


def test_a_document_json_cannot_hold_is_not_copied(tmp_path):
    source = (shipped_dir() / "sglang-fa4-page-size.yaml").read_text()
    dated = tmp_path / "dated.yaml"  # YAML reads an unquoted date as a date, not a string
    dated.write_text(source.replace("description: >-\n", "description: 2024-05-01\nx: >-\n"))
    dated.write_text("\n".join(line for line in dated.read_text().splitlines()
                               if not line.startswith(("x: ", "  _fa4", "  PR #30835"))))  # fmt: skip
    matrix = load_matrix(str(dated), documents=tmp_path / "copies")
    assert matrix.description == "2024-05-01"
    assert not (tmp_path / "copies").exists()
    assert documents.exactly_json({"a": [1, 2.5, None, True, "x"]})
    assert not documents.exactly_json({1: "int key"})
    assert not documents.exactly_json({"x": float("nan")})


def test_an_invalid_file_is_the_same_one_line_error_with_copies(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nname: y\n")
    with pytest.raises(HarnessError, match="appears twice"):
        load_matrix(str(bad), documents=tmp_path / "copies")
    assert not (tmp_path / "copies").exists()
