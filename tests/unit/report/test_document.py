"""The typed diff document: every part a reader takes is checked as it is read, and the
part that is wrong is named; optional parts have the defaults the writer's history needs."""

from __future__ import annotations

import copy
import json

import pytest

from harness.report.document import DiffDocument, DocumentError, Rule, Side, read_document


def minimal() -> dict:
    """A two-cell diff report of one changed cell, written by hand as the schema says."""
    return {
        "matrix": "m",
        "status": 1,
        "target": {"function": "f", "path": "p.py", "output": "page_size"},
        "base": {"rev": "v1", "sha": None, "subject": "one"},
        "head": {"rev": "HEAD", "sha": "ab" * 20, "subject": "two", "every_cell": "boom"},
        "cells": 2,
        "axes": {"backend": ["fa3", "fa4"]},
        "changed": [{"cell": {"backend": "fa4"}, "base": {"page_size": 1},
                     "head": {"page_size": 128}}],
        "summary": [{"where": {"backend": ["fa4"]}, "cells": 1, "transition": "1 -> 128",
                     "because": [{"text": "`x > 1` flipped", "source": "x > 1"},
                                 {"text": "plain"}], "because_more": 2}],
    }  # fmt: skip


def test_a_whole_document_reads_into_its_parts():
    doc = read_document(minimal())
    assert isinstance(doc, DiffDocument)
    assert (doc.matrix, doc.status, doc.function, doc.path, doc.output) == (
        "m", 1, "f", "p.py", "page_size")  # fmt: skip
    assert doc.base == Side("v1", None, "one", None)
    assert doc.head == Side("HEAD", "ab" * 20, "two", "boom")
    assert doc.changed[0].cell == {"backend": "fa4"} and doc.changed[0].head == {"page_size": 128}
    assert doc.summary == (
        Rule({"backend": ["fa4"]}, 1, "1 -> 128",
             ({"text": "`x > 1` flipped", "source": "x > 1"}, "plain"), 2),
    )  # fmt: skip


def test_optional_parts_take_their_defaults():
    doc = read_document(minimal())
    assert doc.changed_count == 1  # no changed_count: as many as `changed` lists
    assert doc.outputs == () and doc.fields is None and doc.notes == {}
    assert doc.cannot_tell == () and doc.blind_spots == () and doc.changed_defaults == ()


def test_entries_of_another_shape_in_tolerant_parts_are_left_out():
    raw = minimal()
    raw["cannot_tell"] = ["base: no cell evaluated", 7, None]
    raw["changed_defaults"] = [{"field": "a", "base": "1", "head": "2"}, {"field": 3}, "x"]
    raw["blind_spots"] = ["junk", {}]
    doc = read_document(raw)
    assert doc.cannot_tell == ("base: no cell evaluated",)
    assert doc.changed_defaults == (("a", "1", "2"),)
    assert doc.blind_spots == ()


DAMAGE = {
    "the report is not an object": (lambda d: ["not", "a", "report"], "the report"),
    "matrix": (lambda d: d.update(matrix=5), "matrix is not text"),
    "target missing": (lambda d: d.pop("target"), "target is missing"),
    "target.output": (lambda d: d["target"].pop("output"), "target.output is missing"),
    "outputs": (lambda d: d["target"].update(outputs=["a", 2]), "target.outputs[1] is not text"),
    "cells": (lambda d: d.update(cells=True), "cells is not a whole number"),
    "an axis": (lambda d: d["axes"].update(backend="fa3"), "an axis's values is not a list"),
    "base.sha": (lambda d: d["base"].update(sha=12), "base.sha is not text"),
    "head.rev": (lambda d: d["head"].pop("rev"), "head.rev is missing"),
    "changed item": (lambda d: d["changed"].append(3), "changed[1] is not an object"),
    "changed cell": (lambda d: d["changed"][0].update(cell={}),
                     "changed[0].cell does not give every axis a value"),
    "changed head": (lambda d: d["changed"][0].update(head="128"),
                     "changed[0].head is not an object"),
    "changed_count": (lambda d: d.update(changed_count="1"),
                      "changed_count is not a whole number"),
    "rule where": (lambda d: d["summary"][0].update(where=3), "summary[0].where is not an object"),
    "rule cells": (lambda d: d["summary"][0].update(cells=1.0),
                   "summary[0].cells is not a whole number"),
    "a reason": (lambda d: d["summary"][0]["because"].append("text"),
                 "summary[0].because[2] is not an object"),
    "fields group": (lambda d: d.update(fields={"a": {"cells": 1, "summary": [{}]}}),
                     "fields[0].summary[0].where is missing"),
    "a note": (lambda d: d.update(notes={"base": ["x"]}), "a note is not text"),
}  # fmt: skip


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_part_of_the_wrong_shape_is_named(damage):
    change, said = DAMAGE[damage]
    raw = minimal()
    replaced = change(raw)
    with pytest.raises(DocumentError) as raised:
        read_document(replaced if isinstance(replaced, list) else raw)
    assert said in str(raised.value)


def test_hostile_names_stay_out_of_the_message():
    raw = minimal()
    evil = "axis\n::error::pwned"
    raw["axes"][evil] = "not a list"
    raw["fields"] = {evil: {"cells": "x", "summary": []}}
    with pytest.raises(DocumentError) as raised:
        read_document(raw)
    assert "pwned" not in str(raised.value)
    del raw["axes"][evil]
    with pytest.raises(DocumentError) as raised:
        read_document(raw)
    assert str(raised.value) == "fields[0].cells is not a whole number"


def test_reading_does_not_change_the_document():
    raw = minimal()
    kept = copy.deepcopy(raw)
    read_document(raw)
    assert json.dumps(raw, sort_keys=True) == json.dumps(kept, sort_keys=True)
