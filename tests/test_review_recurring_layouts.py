"""A history whose files come back to earlier contents: what was learnt of a file's
layout (its index, what its statements may change) is kept per blob for the run
(`SourceCache.recent`, `Layout.memo`), and must still be the answer of that content.

A helper file's top-level statement `LIMITS["fa4"] = N` changes what the FA4 pass
returns; the helper cycles through texts seen before (A B C B A C C A B C B), so
layouts of earlier blobs are found again. Each listed change must be the value the
helper's own statements give, computed here from the sequence, not from harness.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.test_stand_ins import MATRIX, PACKAGE, PASSES_PATH, RUNTIME, RUNTIME_TEXT

HELPERS = f"{PACKAGE}/arg_groups/helpers.py"
PASSES = '''\
"""Post-process passes."""

from sglang.srt.arg_groups.helpers import LIMITS
from sglang.srt.runtime_context import get_platform


def _fa4_page_constraint(view):
    if view.attention_backend == "fa4" and get_platform().is_sm100:
        return {"page_size": LIMITS["fa4"]}
    return {}
# revision %d
'''
SEQUENCE = [0, 2, 3, 2, 0, 3, 3, 0, 2, 3, 2]  # 0: no mutation, the table's 128 stands


def helpers(value: int) -> str:
    mutation = f'LIMITS["fa4"] = {value}\n' if value else ""
    return 'LIMITS = {"fa4": 128}\n' + mutation


def test_history_over_recurring_helper_texts_lists_each_value_change(tmp_path: Path):
    repo = FixtureRepo(tmp_path / "repo")
    shas = []
    for n, value in enumerate(SEQUENCE):
        files = {PASSES_PATH: PASSES % n, HELPERS: helpers(value), RUNTIME: RUNTIME_TEXT,
                 f"{PACKAGE}/arg_groups/__init__.py": ""}  # fmt: skip
        shas.append(repo.commit(f"revision {n} (#{100 + n})", files))
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    done = run_cli("history", "--repo", str(repo.root), "--matrix", str(tmp_path / "matrix.yaml"),
                   "--format", "json", "--no-cache")  # fmt: skip
    assert done.code == 1, done.out + done.err
    effective = [value or 128 for value in SEQUENCE]
    expected = [
        (n, f"{effective[n - 1]} -> {effective[n]}")
        for n in range(1, len(SEQUENCE))
        if effective[n] != effective[n - 1]
    ]
    listed = [
        (shas.index(c["sha"]), c["summary"][0]["transition"])
        for c in json.loads(done.out)["commits"]
    ]
    assert listed == expected
