"""What evaluated code means: decorators run as Python runs them, impure code on every cell.

Expected outcomes are worked out by running the fixture module as plain
Python, loaded afresh for every cell as in SGLang, where one process resolves
one configuration (it is our own trusted text here).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.helpers import commit_versions
from tests.test_hostile import BASE, MATRIX

AXES = {"backend": ["fa3", "fa4", "flashinfer"], "page_size": [None, 1, 64]}

DECORATED = """
def always_64(fn):
    def wrapper(view):
        return {"page_size": 64}
    return wrapper

@always_64
def target(view):
    if view.backend == "fa4":
        return {"page_size": 128}
    return {}
"""

IMPURE = """
SEEN = []

def target(view):
    SEEN.append(view.backend)
    if len(SEEN) > 4:
        return {"page_size": 64}
    return {}
"""


class View:
    def __init__(self, cell: dict) -> None:
        self.__dict__.update(cell)


def plain_python(source: str) -> list[tuple[dict, int | None]]:
    """(cell, resolved page_size) for every cell, in matrix order, by plain Python: the
    module loaded afresh for each cell (its first call, as SGLang's one per process)."""
    code = compile(source, "fixture", "exec")
    out = []
    for values in itertools.product(*AXES.values()):
        cell = dict(zip(AXES, values, strict=True))
        space: dict = {}
        exec(code, space)
        declared = space["target"](View(cell))
        out.append((cell, declared.get("page_size", cell["page_size"])))
    return out


def changed(base: str, head: str) -> list[dict]:
    before, after = plain_python(base), plain_python(head)
    return [
        {"cell": cell, "base": {"page_size": b}, "head": {"page_size": h}}
        for (cell, b), (_, h) in zip(before, after, strict=True)
        if b != h
    ]


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(MATRIX)
    return path


def diff(tmp_path: Path, matrix: Path, head: str, *extra: str) -> tuple[int, dict]:
    base = BASE.format(marker="")
    shas = commit_versions(tmp_path / "repo", [base, head])
    done = run_cli("diff", *shas, "--matrix", str(matrix), "--repo", str(tmp_path / "repo"),
                   "--format", "json", *extra)  # fmt: skip
    assert done.code in (0, 1, 4), done.err
    return done.code, json.loads(done.out)


def test_a_decorator_that_replaces_the_function_is_run(tmp_path, matrix):
    code, report = diff(tmp_path, matrix, DECORATED, "--no-cache")
    assert code == 1
    assert report["changed"] == changed(BASE.format(marker=""), DECORATED)


def test_a_decorator_nothing_defines_makes_the_revision_unevaluable(tmp_path, matrix):
    head = DECORATED.replace("@always_64", "@lru_cache")
    code, report = diff(tmp_path, matrix, head, "--no-cache")
    assert code == 4 and "name lru_cache" in report["notes"]["head"]


def test_impure_code_runs_on_every_cell_and_the_report_says_why(tmp_path, matrix):
    expected = changed(BASE.format(marker=""), IMPURE)
    code, report = diff(tmp_path, matrix, IMPURE, "--cache-dir", str(tmp_path / "cache"))
    assert code == 1 and report["changed"] == expected
    assert "calls SEEN.append()" in report["head"]["every_cell"]
    assert "every_cell" not in report["base"]
    _, again = diff(tmp_path, matrix, IMPURE, "--exhaustive", "--cache-dir",
                    str(tmp_path / "cache"))  # fmt: skip
    assert again["changed"] == expected
