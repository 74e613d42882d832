"""docs/report.schema.json against every JSON report harness writes: each command with
--format json on the fixture history (and a loopback package index), each report one
kind of the schema, carrying format_version 1; the schema itself is valid and refuses
what is not a report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from harness import gitio
from tests.conftest import cli_once, run_cli
from tests.helpers import (
    REPORT_SCHEMA,
    _closed_validator,
    _compiled_validator,
    check_report,
    closed_kinds,
    open_kinds,
)
from tests.releases import Index, Served, build_wheel, package_files

SCHEMA = json.loads(REPORT_SCHEMA.read_text(encoding="utf-8"))
KINDS = [entry["$ref"].removeprefix("#/$defs/") for entry in SCHEMA["anyOf"]]
FA4_CELL = [f"--where={axis}={value}" for axis, value in (
    ("attention_backend", "fa4"), ("decode_attention_backend", "null"),
    ("prefill_attention_backend", "null"), ("use_mla", "false"),
    ("speculative_eagle_topk", "null"), ("prefill_cuda_graph", "full"),
    ("platform", "sm100"), ("page_size", "16"))]  # fmt: skip

# name: (harness arguments, INITIAL for the first commit; the kind of report it writes)
CASES = {
    "diff": (["diff", "#30835^", "#30835", "--format", "json"], "diff"),
    "diff json-sample": (["diff", "#30835^", "#30835", "--format", "json-sample"], "diff"),
    "diff unevaluable head": (["diff", "#30902^", "#30902", "--format", "json"], "diff"),
    "diff pipeline": (
        ["diff", "#31010", "#31030", "--matrix", "sglang-page-size-pipeline", "--format", "json"],
        "diff",
    ),
    "diff inferred": (
        ["diff", "#30835^", "#30835", "--matrix", "inferred", "--format", "json"],
        "diff",
    ),
    "diff inferred, nothing to infer": (
        ["diff", "#30835", "#30850", "--matrix", "inferred", "--format", "json"],
        "nothing_inferred",
    ),
    "history": (["history", "--format", "json"], "history"),
    "bisect found": (["bisect", "INITIAL", "#30835", "--format", "json"], "bisect"),
    "bisect nothing changed": (["bisect", "#30835", "#30850", "--format", "json"], "bisect"),
    "explain": (["explain", "#30835", *FA4_CELL, "--format", "json"], "explain"),
    "explain unevaluable": (["explain", "#30902", *FA4_CELL, "--format", "json"], "explain"),
    "explain range": (
        ["explain", "#30835^..#30835", *FA4_CELL, "--format", "json"],
        "explain_range",
    ),
    "passes": (["passes", "--format", "json"], "passes"),
    "passes resolution": (
        ["passes", "--matrix", "sglang-resolution", "--format", "json"],
        "passes",
    ),
    "matrix": (["matrix", "--format", "json"], "matrix"),
}


def emitted(argv: list[str], history) -> dict:
    """The JSON report of `harness ARGV` on the fixture history (each command run once a
    process: two tests read each), a fresh copy."""
    args = [history.shas["initial"] if a == "INITIAL" else a for a in argv]
    where = [] if args[0] == "matrix" else ["--repo", history.repo()]
    result = cli_once(*args, *where)
    assert result.code in (0, 1, 4), result.err
    return json.loads(result.out)


def kinds_of(doc: dict) -> list[str]:
    """The schema's kinds of report the document is, by the published (open) schema (an
    explain report with no passes is a passes report too, to a schema that lets keys in)."""
    return open_kinds(doc)


def open_validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{kind}", "$defs": SCHEMA["$defs"]})


@pytest.mark.parametrize("name", list(CASES))
def test_each_command_s_json_is_one_kind_of_report(name, history):
    argv, kind = CASES[name]
    doc = emitted(argv, history)
    assert doc["format_version"] == 1
    check_report(doc, argv[0])  # closed: no key the schema does not describe
    assert closed_kinds(doc) == [kind]  # exactly one kind of report
    assert kind in kinds_of(doc)  # and a reader's open schema takes it as that kind


def test_every_kind_of_report_is_made_here_or_where_it_is_made():
    made = {kind for _, kind in CASES.values()} | {"release_history"}  # and demo: below
    assert set(KINDS) - {"diff_parts"} <= made, set(KINDS) - made
    # diff_parts: tests/test_inferred.py makes it (an inferred matrix past --max-cells)


def test_diff_output_files_and_demo_are_diff_reports(history, tmp_path):
    full, sample = tmp_path / "full.json", tmp_path / "sample.json"
    result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(),
                     "--output", f"json={full}", "--output", f"json-sample={sample}")  # fmt: skip
    assert result.code == 1
    for path in (full, sample):
        doc = json.loads(path.read_text())
        check_report(doc, "diff")
        assert doc["format_version"] == 1 and kinds_of(doc) == ["diff"]
    demo = json.loads(run_cli("demo", "--format", "json").out)
    check_report(demo, "demo")
    assert kinds_of(demo) == ["diff"]


def test_matrix_cells_are_cells_not_reports():
    result = run_cli("matrix", "--cells", "--format", "json", "--where", "platform=sm100",
                     "--where", "attention_backend=fa4", "--where", "page_size=16")  # fmt: skip
    lines = result.out.splitlines()
    assert len(lines) == 9 * 9 * 2 * 4 * 4  # the other axes' sizes (tests/oracle.py)
    cell = open_validator("matrix_cell")
    for line in lines:
        doc = json.loads(line)
        assert cell.is_valid(doc) and kinds_of(doc) == [] and "format_version" not in doc


@pytest.fixture(scope="module")
def index(history):
    repo = gitio.open_repo(history.repo())
    wheels = [
        Served(f"sglang-{version}-py3-none-any.whl",
               build_wheel(package_files(repo, gitio.resolve(repo, rev).sha), version))
        for version, rev in (("0.1.0", "#30835^"), ("0.2.0", "#30835"))
    ]  # fmt: skip
    served = Index(wheels)
    yield served
    served.close()


def test_release_history_and_bisect_over_releases(index):
    argv = ["pypi:sglang", "--index-url", index.url, "--no-cache", "--format", "json"]
    releases = json.loads(run_cli("history", *argv).out)
    check_report(releases, "history")
    assert releases["format_version"] == 1 and kinds_of(releases) == ["release_history"]
    assert [r["version"] for r in releases["releases"]] == ["0.2.0"]
    found = run_cli("bisect", "pypi:sglang==0.1.0", "pypi:sglang==0.2.0", *argv[1:])
    doc = json.loads(found.out)
    check_report(doc, "bisect")
    assert kinds_of(doc) == ["bisect"] and doc["culprit"]["sha"] == "0.2.0"


def test_the_schema_is_valid_and_refuses_what_is_not_a_report(history):
    Draft202012Validator.check_schema(SCHEMA)
    doc = emitted(CASES["diff json-sample"][0], history)
    broken = [
        {k: v for k, v in doc.items() if k != "format_version"},  # written before versions
        {**doc, "format_version": 2},  # a later, incompatible shape
        {**doc, "status": "1"},
        {**doc, "summary": [{"where": {}, "cells": 0, "transition": "a -> b"}]},
        {**doc, "base": {**doc["base"], "line": "73"}},
    ]
    for bad in broken:
        assert kinds_of(bad) == []
        with pytest.raises(AssertionError, match=r"report\.schema\.json"):
            check_report(bad, "diff")
    with pytest.raises(AssertionError, match="'extra' was unexpected"):
        check_report({**doc, "extra": 1}, "diff")  # undescribed: the tests' closed schema
    assert kinds_of({**doc, "extra": 1}) == ["diff"]  # a reader's open one takes it


def test_the_schema_is_where_the_docs_say():
    docs = Path(REPORT_SCHEMA).parent
    assert "report.schema.json" in (docs / "cli.md").read_text()
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def mutants(doc: dict):
    """The document, and versions of it with one key dropped, retyped or added, at the top
    and one level down: what a report that drifts from the schema looks like."""
    yield doc
    for key in list(doc)[:8]:
        yield {k: v for k, v in doc.items() if k != key}
        yield {**doc, key: {"x": [1]}}
        value = doc[key]
        if isinstance(value, dict) and value:
            yield {**doc, key: {**value, "undescribed": 1}}
        if isinstance(value, list) and value and isinstance(value[0], dict):
            first = dict(value[0])
            yield {**doc, key: [{**first, "undescribed": 1}, *value[1:]]}
            yield {**doc, key: [{k: v for k, v in first.items() if k != next(iter(first))}]}
    yield {**doc, "undescribed": 1}


@pytest.mark.parametrize("name", list(CASES))
def test_the_compiled_check_and_jsonschema_give_the_same_verdicts(name, history):
    """check_report asks the compiled validator first (fast on a 138 MB report) and
    jsonschema only to say where a report is wrong: both must take and refuse the same
    documents, each command's and its mutants."""
    from jsonschema.exceptions import best_match

    argv, kind = CASES[name]
    whole = emitted(argv, history)
    assert best_match(_closed_validator(kind).iter_errors(whole)) is None
    assert _compiled_validator(kind)(whole)
    shown = _shortened(whole)  # the kinds a report is, by either, open or closed
    for other in KINDS:
        by_jsonschema = open_validator(other).is_valid(shown)
        assert _compiled_validator(other, closed=False)(shown) == by_jsonschema, other
        assert _compiled_validator(other)(shown) == _closed_validator(other).is_valid(shown)
    for doc in mutants(shown):  # what a mutant drifts in is near the top
        by_jsonschema = best_match(_closed_validator(kind).iter_errors(doc)) is None
        assert _compiled_validator(kind)(doc) == by_jsonschema, json.dumps(doc)[:300]


def _shortened(doc: dict, most: int = 12) -> dict:
    """The document with its long lists cut to their first `most` items (a diff's 1,736
    changed cells): as valid as it was, and quick for jsonschema to read 30 times."""
    return {k: v[:most] if isinstance(v, list) else v for k, v in doc.items()}
