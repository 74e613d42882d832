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
from tests.helpers import PATH, commit_versions
from tests.test_resolution import MATRIX as RESOLUTION
from tests.test_resolution import VERSIONS, files

MATRIX = """\
name: bounds
target:
  path: python/sglang/srt/arg_groups/overrides.py
  function: target
  output: page_size
world: plain
axes:
  backend: [fa3, fa4, flashinfer]
  page_size: [null, 1, 64]
"""

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


@pytest.mark.parametrize("depth", [NESTING_CAP - 1, 900, 5_000])
def test_a_deeply_nested_unused_expression_is_one_line_not_a_crash(tmp_path, depth):
    deep = BASE + "\n\nUNUSED = " + "-" * depth + "1\n"
    line = deep.count("\n")  # the statement is the last line
    done = diff(tmp_path, [BASE, deep])
    note = cannot_tell(done, PATH)
    assert f"line {line}:" in note or "nested too deeply" in note


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
