"""The parent's work on a pull request's content is bounded (docs/security.md, Bounds).

Each test builds a head revision that is oversized in one way (a bloated file, a
deeply nested expression, huge literals, a value or a table past the evaluation's
budget, outcome text on every cell) and runs `harness diff` on it as a reviewer
would. What must hold: the run ends as "cannot tell" (exit 4) with one line that
names what was over which bound and where, or it completes; never a traceback
(exit 3). Sizes are generated here, from the documented bounds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.helpers import PATH, commit_versions, plain_matrix
from tests.test_resolution import MATRIX as RESOLUTION
from tests.test_resolution import VERSIONS, files

MATRIX = plain_matrix("bounds")

BASE = '''\
"""Post-process passes (a contributor's version)."""


def target(view):
    if view.backend == "fa4":
        return {"page_size": 128}
    return {}
'''

HELPER = "python/sglang/srt/arg_groups/limits.py"
USES_HELPER = '''\
"""Post-process passes that draw on a helper module."""

from sglang.srt.arg_groups.limits import forced


def target(view):
    if view.backend == "fa4":
        return {"page_size": forced()}
    return {}
'''
HELPER_SOURCE = '''\
"""Limits."""


def forced():
    return 128
'''

SOURCE_CAP = 1 << 20  # characters, as docs/security.md states
NESTING_CAP = 200  # levels below a top-level statement, as docs/security.md states


def diff(tmp_path: Path, versions: list[str], *extra: str, matrix: str = MATRIX, files=None):
    """`harness diff` of the first version against the last, as JSON on stdout."""
    (tmp_path / "bounds.yaml").write_text(matrix)
    root = tmp_path / "repo"
    shas = commit_versions(root, versions, files)
    return run_cli(
        "diff", shas[0], shas[-1], "--matrix", str(tmp_path / "bounds.yaml"),
        "--repo", str(root), "--format", "json", "--no-cache", *extra,
    )  # fmt: skip


def cannot_tell(done, *says: str) -> str:
    """The head's one-line reason, after checking the run ended as cannot tell."""
    assert done.code == 4, (done.code, done.err[-2000:])
    assert "Traceback" not in done.err
    note = json.loads(done.out)["notes"]["head"]
    assert "\n" not in note
    for part in says:
        assert part in note, note
    return note


def padded(source: str, size: int) -> str:
    """`source` followed by module-level assignments until it is exactly `size` characters."""
    line = "PADDING = 0  # a pull request's bloat\n"
    text = source + "\n" + line * ((size - len(source) - 1) // len(line))
    return text + "#" * (size - len(text) - 1) + "\n"


# --- size ----------------------------------------------------------------------------


def test_a_target_file_over_the_cap_is_unevaluable_naming_it_its_size_and_the_cap(tmp_path):
    bloated = padded(BASE, SOURCE_CAP + 1)
    assert len(bloated) == SOURCE_CAP + 1
    done = diff(tmp_path, [BASE, bloated])
    cannot_tell(done, PATH, f"{SOURCE_CAP + 1:,} characters", f"{SOURCE_CAP:,}")


def test_a_target_file_at_the_cap_is_read(tmp_path):
    at_cap = padded(BASE.replace("128", "256"), SOURCE_CAP)
    done = diff(tmp_path, [BASE, at_cap])
    assert done.code == 1, done.err
    heads = {item["head"]["page_size"] for item in json.loads(done.out)["changed"]}
    assert heads == {256}


def test_a_closure_file_over_the_cap_is_unevaluable_naming_it(tmp_path):
    helper = padded(HELPER_SOURCE, SOURCE_CAP + 10)
    repo = tmp_path / "repo"
    (tmp_path / "bounds.yaml").write_text(MATRIX)
    shas = commit_versions(repo, [USES_HELPER], {HELPER: HELPER_SOURCE})
    head = FixtureRepo(repo).commit("bloat the helper", {HELPER: helper})
    done = run_cli(
        "diff", shas[0], head, "--matrix", str(tmp_path / "bounds.yaml"), "--repo", str(repo),
        "--format", "json", "--no-cache",
    )  # fmt: skip
    cannot_tell(done, HELPER, f"{SOURCE_CAP + 10:,} characters")


# --- depth ---------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [NESTING_CAP - 1, 900])
def test_a_deeply_nested_unused_expression_is_one_line_naming_its_line(tmp_path, depth):
    deep = BASE + "\n\nUNUSED = " + "-" * depth + "1\n"
    line = deep.count("\n")  # the statement is the last line
    done = diff(tmp_path, [BASE, deep])
    cannot_tell(done, f"{PATH} line {line}:", f"more than {NESTING_CAP} levels")


def test_an_expression_too_deep_for_the_parser_is_one_line_not_a_crash(tmp_path):
    deep = BASE + "\n\nUNUSED = " + "-" * 5_000 + "1\n"  # RecursionError in ast.parse
    done = diff(tmp_path, [BASE, deep])
    cannot_tell(done, PATH, "nested too deeply for Python to parse")


def test_nesting_at_the_cap_is_read(tmp_path):
    # a statement's value sits one level below it: NESTING_CAP - 2 minus signs and the
    # number put the number at the cap
    nested = BASE.replace("return {}", "return {}\n\n\nUNUSED = " + "-" * (NESTING_CAP - 2) + "1")
    done = diff(tmp_path, [BASE, nested])
    assert done.code == 0, (done.err, done.out[-500:])


# --- literal magnitude (a declared default, read with ast in the parent) -------------


def resolution_diff(tmp_path: Path, tokens: str):
    """The resolution test's repository, its head declaring `max_prefill_tokens = TOKENS`
    (a pass reads the field, so its default is evaluated)."""
    repo = FixtureRepo(tmp_path / "repo")
    base = repo.commit("base", files(VERSIONS["initial"]))
    head = repo.commit("head", files({**VERSIONS["initial"], "tokens": tokens}))
    (tmp_path / "m.yaml").write_text(RESOLUTION)
    return run_cli(
        "diff", base, head, "--repo", str(tmp_path / "repo"), "--matrix", str(tmp_path / "m.yaml"),
        "--format", "json", "--no-cache",
    )  # fmt: skip


HEX_DIGITS = 5_000  # an int of 20,000 bits, past CPython's 4,300-digit repr limit
BIG_TERMS = 150  # products of 4,000-digit numbers: minutes of arithmetic if evaluated
LITERALS = {
    "hex": ("0x" + "f" * HEX_DIGITS, f"an int of {4 * HEX_DIGITS:,} bits"),
    "hex-times-float": ("0x" + "f" * 300 + " * 1.5", f"an int of {4 * 300:,} bits"),
    "products": (" * ".join(["9" * 4_000] * BIG_TERMS), "bits (more than 64)"),
    "string": ('"' + "A" * 20_000 + '"', "a str of 20,000 characters"),
    "many-nodes": ("(" + ", ".join(["1"] * 2_000) + ")", "more than 1,000 nodes"),
    "overflowing-sum": (" + ".join(["1e308"] * 3), "computed"),
}


@pytest.mark.parametrize("name", sorted(LITERALS))
def test_a_default_past_the_literal_bounds_is_refused_by_name(tmp_path, name):
    tokens, says = LITERALS[name]
    done = resolution_diff(tmp_path, tokens)
    server_args = "python/sglang/srt/server_args.py:20"  # max_prefill_tokens' line
    cannot_tell(done, "max_prefill_tokens", server_args, says)


def test_a_default_within_the_bounds_is_still_computed(tmp_path):
    done = resolution_diff(tmp_path, "1024 * 1024 * 1024 * 16")
    assert done.code == 1, done.err
    changed = json.loads(done.out)["changed_defaults"]
    assert changed == [{"field": "max_prefill_tokens", "base": "4096", "head": str(16 << 30)}]


# --- budgets on what the evaluation answers ------------------------------------------


def grid(*sizes: int) -> str:
    """A matrix whose axes a, b, c, ... have `sizes` values each (0, 1, ...), and the
    output page_size a one-value axis."""
    axes = "".join(f"  {chr(97 + n)}: {list(range(size))}\n" for n, size in enumerate(sizes))
    axes += "  page_size: [null]\n"  # the output: an input too
    return MATRIX.replace("  backend: [fa3, fa4, flashinfer]\n  page_size: [null, 1, 64]\n", axes)


RETURNS = '''\
"""Post-process passes (a contributor's version)."""


def target(view):
    return {{"page_size": {expression}}}
'''


def returning(expression: str) -> str:
    return RETURNS.format(expression=expression)


MAX_OUTCOMES = 20_000  # distinct outcomes in one table, as docs/security.md states
MAX_OUTCOME_BYTES = 16 << 20  # their JSON together


def test_more_distinct_outcomes_than_a_table_holds_is_unevaluable(tmp_path):
    assert MAX_OUTCOMES < 30**3  # an axis has at most 62 values
    head = returning("view.a * 10000 + view.b * 100 + view.c")
    done = diff(tmp_path, [returning("0"), head], matrix=grid(30, 30, 30))
    cannot_tell(done, "distinct outcomes", f"more than the {MAX_OUTCOMES:,}")


def test_outcomes_past_the_byte_budget_are_unevaluable(tmp_path):
    rows, columns = 50, 40  # 2,000 distinct outcomes of 10,000 characters: 20 MB
    assert rows * columns * 10_000 > MAX_OUTCOME_BYTES
    head = returning('("%05d" % (view.a * 100 + view.b)) * 2000')
    done = diff(tmp_path, [returning("0"), head], matrix=grid(rows, columns))
    cannot_tell(done, f"more than {MAX_OUTCOME_BYTES:,} bytes")


def test_one_value_past_the_size_bound_is_an_error_outcome_not_a_crash(tmp_path):
    # a thousand references to one list of a thousand 10,000-character strings: 10 GB of
    # JSON, though each list and str is within its own bound
    head = returning('[["A" * 10000] * 1000] * 1000')
    done = diff(tmp_path, [BASE, head])
    assert done.code == 1, done.err[-2000:]
    heads = [item["head"] for item in json.loads(done.out)["changed"]]
    assert len(heads) == 9
    assert all("more than 100,000 items and characters" in h["error"] for h in heads), heads[0]


# --- reports stream ------------------------------------------------------------------


def traced_json_output(tmp_path: Path, expression: str) -> tuple[int, Path]:
    """Peak bytes Python allocated while `harness diff --output json=FILE` ran in-process
    (the evaluation runs in a worker, so this is the parent's work), and the file."""
    import contextlib
    import io
    import tracemalloc

    from harness.cli.main import main

    tmp_path.mkdir()
    (tmp_path / "grid.yaml").write_text(grid(60, 50))
    shas = commit_versions(tmp_path / "repo", [returning("0"), returning(expression)])
    report = tmp_path / "report.json"
    argv = ["diff", *shas, "--matrix", str(tmp_path / "grid.yaml"), "--repo",
            str(tmp_path / "repo"), "--no-cache", "--output", f"json={report}"]  # fmt: skip
    tracemalloc.start()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(argv) == 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, report


def test_a_json_report_of_large_outcomes_on_every_cell_is_written_in_pieces(tmp_path):
    small, _ = traced_json_output(tmp_path / "small", '"A"')
    large, report = traced_json_output(tmp_path / "large", '"A" * 10000')
    size = report.stat().st_size
    assert size > 60 * 50 * 10_000  # every cell's head outcome is in the file
    assert large - small < size / 4, (large, small, size)  # joined, it would be twice size
    doc = json.loads(report.read_text(encoding="utf-8"))
    assert len(doc["changed"]) == 60 * 50
    assert all(item["head"] == {"page_size": "A" * 10_000} for item in doc["changed"])


def test_a_junit_report_of_a_rule_per_cell_keeps_a_thousand_cases_and_counts_the_rest(
    tmp_path,
):
    import xml.etree.ElementTree as ET

    rows, columns = 50, 30  # a distinct head outcome per cell: a rule per cell
    head = returning("view.a * 100 + view.b + 1")
    junit = tmp_path / "report.xml"
    done = diff(tmp_path, [returning("0"), head], "--output", f"junit={junit}",
                matrix=grid(rows, columns))  # fmt: skip
    assert done.code == 1, done.err[-2000:]
    assert len(json.loads(done.out)["summary"]) == rows * columns  # JSON lists every rule
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == 1_001 == int(suite.get("failures")) == int(suite.get("tests"))
    assert [c.get("name").split(":")[0] for c in cases[:1_000]] == [
        f"rule {n}" for n in range(1, 1_001)
    ]
    more = cases[-1].find("failure")
    assert more.get("type") == "OutcomeChanged"
    rest = rows * columns - 1_000
    assert more.get("message") == f"{rest:,} more rules change {rest:,} more cells"


def test_a_trace_past_its_budget_is_an_unevaluable_outcome_of_explain(tmp_path):
    # 100,000 turns of a loop, each a condition evaluated: megabytes of events
    looping = BASE.replace(
        '    if view.backend == "fa4":',
        "    n = 0\n    for i in range(100_000):\n        if i >= 0:\n            n += 1\n"
        '    if view.backend == "fa4":',
    )
    (tmp_path / "bounds.yaml").write_text(MATRIX)
    (sha,) = commit_versions(tmp_path / "repo", [looping])
    done = run_cli(
        "explain", sha, "--matrix", str(tmp_path / "bounds.yaml"), "--repo", str(tmp_path / "repo"),
        "--format", "json", "--where", "backend=fa4", "--where", "page_size=null",
    )  # fmt: skip
    assert done.code == 0, done.err[-2000:]  # explain shows an unevaluable outcome
    outcome = json.loads(done.out)["outcome"]["unevaluable"]
    assert "events encodes to" in outcome and f"more than the {2 << 20:,}" in outcome
