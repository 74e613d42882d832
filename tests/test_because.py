"""`because` after a refactor: the reason the change touched comes first, cut reasons are
counted, and the annotations land on changed lines inside git's own diff.

The history: the fixture's overrides file in its helper spelling, then one commit
that respells every platform and MLA check (`is_sm100_supported()` ->
`get_platform().is_sm100`, `view.use_mla_backend()` -> `use_mla_backend(view)`) and
also adds PR #30835's clause. Expected lines are found in the fixture's text,
expected counts in its `if` (read with `ast`), expected hunks in `git diff`'s output.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from harness.engine.events import OPERAND, Event
from harness.scan.because import Changes, Difference, ranked
from harness.scan.blind import Hunk
from harness.testing.gitrepo import FixtureRepo
from harness.testing.sglang_fixture import (
    FULL_CLAUSE,
    OVERRIDES,
    README,
    Overrides,
    overrides_source,
    package_files,
)
from tests.conftest import git_out, run_cli
from tests.helpers import PATH, commit_versions, module

CLAUSE = FULL_CLAUSE.strip().removeprefix("and ")
BEFORE = Overrides()
AFTER = replace(BEFORE, spelling="platform", full_clause=True)


@dataclass
class Refactor:
    root: Path
    base: str
    head: str

    def run(self, *args: str, base: str | None = None, head: str | None = None):
        revs = (base or self.base, head or self.head)
        return run_cli("diff", *revs, "--repo", str(self.root), *args)

    def json(self, **revs) -> dict:
        return json.loads(self.run("--format", "json", **revs).out)


@pytest.fixture(scope="module")
def refactor(tmp_path_factory) -> Refactor:
    root = tmp_path_factory.mktemp("refactor") / "sglang"
    repo = FixtureRepo(root)
    files = {"README.md": README, **package_files(), OVERRIDES: overrides_source(BEFORE)}
    base = repo.commit("Add server-argument post-process passes (#30001)", files)
    subject = "Read the platform through get_platform(); skip FA4 pages under full graphs"
    head = repo.commit(subject, {OVERRIDES: overrides_source(AFTER)})
    return Refactor(root, base, head)


def line_of(text: str, needle: str) -> int:
    (found,) = [n for n, line in enumerate(text.splitlines(), 1) if needle in line]
    return found


def operands(source: str) -> set[str]:
    """The operands of `_fa4_page_constraint`'s `if`, as the trace records them: each leaf
    of its and/or structure, and each `not` together with what it negates."""
    tree = ast.parse(source)
    (function,) = [n for n in tree.body if getattr(n, "name", "") == "_fa4_page_constraint"]
    (test,) = [n.test for n in ast.walk(function) if isinstance(n, ast.If)]
    found, todo = set(), [test]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.BoolOp):
            todo.extend(node.values)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            found.add(ast.unparse(node))
            todo.append(node.operand)
        else:
            found.add(ast.unparse(node))
    return found


def test_the_added_clause_is_the_first_reason_of_every_rule(refactor):
    report = refactor.json()
    head = overrides_source(AFTER)
    assert report["summary"]
    for rule in report["summary"]:
        first = rule["because"][0]
        assert (first["source"], first["base"]) == (CLAUSE, None)
        assert first["head"] == {"line": line_of(head, CLAUSE), "value": False}
    text = refactor.run().out
    assert f"because `{CLAUSE}` (line {line_of(head, CLAUSE)}) is new at head" in text


def test_cut_reasons_are_counted_in_every_format(refactor):
    """On the rules' cells (fa4, not MLA, SM100, topk <= 1, full graphs) every operand is
    reached at both revisions and the shared ones agree, so the differences are the
    operands only one revision has."""
    differing = operands(overrides_source(BEFORE)) ^ operands(overrides_source(AFTER))
    report = refactor.json()
    for rule in report["summary"]:
        shown = len(rule["because"])
        assert 0 < shown < len(differing)
        assert rule["because_more"] == len(differing) - shown
        assert {b["source"] for b in rule["because"]} <= differing
    more = len(differing) - len(report["summary"][0]["because"])
    assert f"\n     and {more} more\n" in refactor.run().out
    markdown = refactor.run("--format", "markdown").out
    assert markdown.count(f"<br>and {more} more |") == len(report["summary"])


def test_a_report_read_back_from_the_cache_keeps_the_count_and_the_lines(refactor):
    first = [refactor.run("--format", f).out for f in ("text", "github")]
    again = [refactor.run("--format", f).out for f in ("text", "github")]
    assert again == first and "more\n" in first[0]


HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


def hunks(root: Path, base: str, head: str, path: str) -> dict[str, list[range]]:
    """{"base": old line ranges, "head": new line ranges} of `git diff -U0` (changed lines
    only: no context)."""
    out = git_out(root, "diff", "-U0", base, head, "--", path)
    found: dict[str, list[range]] = {"base": [], "head": []}
    for start, count, new_start, new_count in HUNK.findall(out):
        for side, first, n in (("base", start, count), ("head", new_start, new_count)):
            found[side].append(range(int(first), int(first) + int(n or 1)))
    return found


def annotations(out: str, title: str) -> list[tuple[str, str, int]]:
    """(command, file, line) of each annotation whose title starts with `title`."""
    pattern = re.compile(r"^::(warning|notice) file=([^,]+),line=(\d+),title=([^:]+)::")
    found = [pattern.match(line) for line in out.splitlines()]
    return [(m[1], m[2], int(m[3])) for m in found if m and m[4].startswith(title)]


def inside(line: int, ranges: list[range]) -> bool:
    return any(line in r for r in ranges)


def test_the_warning_is_on_the_added_clause_inside_the_diff(refactor):
    out = refactor.run("--format", "github").out
    changed = hunks(refactor.root, refactor.base, refactor.head, OVERRIDES)
    found = annotations(out, "sglang-fa4-page-size%3A _fa4_page_constraint")
    head = overrides_source(AFTER)
    assert found == [("warning", OVERRIDES, line_of(head, CLAUSE))]
    assert all(inside(line, changed["head"]) for _, _, line in found)
    assert line_of(head, "def _fa4_page_constraint") not in [line for _, _, line in found]


def test_a_removed_clause_is_a_notice_on_its_base_line_inside_the_diff(refactor):
    out = refactor.run("--format", "github", base=refactor.head, head=refactor.base).out
    changed = hunks(refactor.root, refactor.head, refactor.base, OVERRIDES)
    found = annotations(out, "sglang-fa4-page-size%3A _fa4_page_constraint")
    assert found == [("notice", OVERRIDES, line_of(overrides_source(AFTER), CLAUSE))]
    assert all(inside(line, changed["base"]) for _, _, line in found)


HELPER = """
def _is_fa4(view):
    return view.attention_backend == "fa4"


def _fa4_page_constraint(view):
    if _is_fa4(view) and get_platform().is_sm100:
        return {"page_size": 128}
    return {}
"""

HELPER_WIDER = HELPER.replace(
    '    return view.attention_backend == "fa4"\n',
    '    return view.attention_backend == "fa4" or view.decode_attention_backend == "fa4"\n',
)


def test_a_change_inside_a_helper_is_annotated_on_the_helper_s_changed_line(tmp_path):
    """The traced `if` reads `_is_fa4(view)` on an unchanged line: no reason names a
    changed line, so the warning goes to the line that did change."""
    texts = [module(HELPER), module(HELPER_WIDER)]
    shas = commit_versions(tmp_path, texts)
    out = run_cli("diff", *shas, "--repo", str(tmp_path), "--format", "github").out
    found = annotations(out, "sglang-fa4-page-size%3A _fa4_page_constraint")
    changed = hunks(tmp_path, *shas, PATH)
    assert found == [("warning", PATH, line_of(texts[1], "or view.decode_attention_backend"))]
    assert inside(found[0][2], changed["head"])


REMOVED_BLOCK = """
def _fa4_page_constraint(view):
    page_size = view.page_size
    if view.attention_backend == "fa4":
        page_size = 128
    if page_size is None:
        if is_hip():
            page_size = 64
    return {"page_size": page_size} if page_size != view.page_size else {}
"""

WITHOUT_BLOCK = REMOVED_BLOCK.replace(
    '    if view.attention_backend == "fa4":\n        page_size = 128\n', ""
).replace("        if is_hip():", "        if get_platform().is_hip:")


def test_a_removed_block_comes_before_a_respelling_only_one_side_reached(tmp_path):
    """On fa4 with no page size, the base forces 128 and never asks `is_hip()`; the head
    lost that block, so it asks the respelled `get_platform().is_hip` (False). Both stand
    on changed lines; the removed check is the change, the respelling only the path."""
    texts = [module(REMOVED_BLOCK), module(WITHOUT_BLOCK)]
    shas = commit_versions(tmp_path, texts)
    report = json.loads(run_cli("diff", *shas, "--repo", str(tmp_path), "--format", "json").out)
    (rule,) = report["summary"]
    first, second = rule["because"][:2]
    gone = 'view.attention_backend == "fa4"'
    assert (first["source"], first["head"]) == (gone, None)
    assert first["base"] == {"line": line_of(texts[0], gone), "value": True}
    assert (second["source"], second["base"]) == ("get_platform().is_hip", None)


def event(line: int, source: str, value) -> Event:
    return Event(OPERAND, line, source, source, value)


def test_a_respelling_next_to_a_new_clause_is_paired_with_its_like():
    """One hunk replaces line 3 (`is_sm100_supported()`) by lines 3-4 (a new clause, then
    `get_platform().is_sm100`); all three were True on the cell. The clause, met first
    and as True as the old call, is still not taken for its respelling."""
    clause, old, new = "view.enable_dp_attention", "is_sm100_supported()", "get_platform().is_sm100"
    moved = "view.page_size is None"
    found = [
        Difference(None, event(3, clause, True)),
        Difference(None, event(4, new, True)),
        Difference(event(3, old, True), None),
        Difference(event(9, moved, True), event(10, moved, False)),
    ]
    changes = Changes(PATH, (Hunk(PATH, range(3, 4), PATH, range(3, 5)),))
    reached = {"base": {3, 9}, "head": {3, 4, 10}}
    assert [d.source for d in ranked(found, changes, reached)] == [
        clause,
        moved,  # on an unchanged line: a change elsewhere moved it
        new,
        old,
    ]


def test_one_reading_of_the_definitions_gives_what_each_reader_found(history):
    """A diff reads each side's definitions once (`blind.both_definitions`, from the files)
    for its blind spots and its rules' reasons; on every pair of consecutive commits of the
    fixture history, the hunks and changed lines are those each found reading on its own
    (the reasons from the closure's own text)."""
    import itertools

    from harness import gitio
    from harness.matrix.load import load_matrix
    from harness.scan.because import changes_between
    from harness.scan.blind import Side, both_definitions, changed_by_side, hunks
    from harness.scan.versions import Versions

    handle = gitio.open_repo(str(history.root))
    versions = Versions(handle, load_matrix("sglang-resolution"))
    revisions = [gitio.resolve(handle, sha) for sha in history.shas.values()]
    compared = 0
    for base, head in itertools.pairwise(revisions):
        codes = [versions.code_at(r) for r in (base, head)]
        if None in codes:
            continue
        sides = [Side(name, code.closure, b"", (), versions.files_at(r).read, r.label)
                 for name, code, r in zip(("base", "head"), codes, (base, head), strict=True)]  # fmt: skip
        defs = both_definitions(*sides)
        assert hunks(None, None, defs) == list(changes_between(*codes).hunks)
        assert changed_by_side(*sides, defs) == changed_by_side(*sides)
        compared += bool(hunks(None, None, defs))
    assert compared >= 3  # pairs with changed code, not only equal ones
