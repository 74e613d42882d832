"""An entry's snapshot of every field it is handed (SGLang's `_raw_input`, 0.5.19 on)
counts a field's inputs only where a reader looks the field up.

The fixture is test_entry_records' 0.5.20-shaped package with a pipeline of our own:
it copies every field into `_raw_input` first, as SGLang's does, then one handler
looks `window` up in the copy (through `getattr(...) or {}` and `.get`, or through
`resolution_result`) only when the backend is `wide`. Axes: attention_backend (None,
wide) x window (4096, 8192) x page_size (None, 1) x model_path (two paths): 16 cells,
and three decision paths (backend None; wide with each window), since nothing reads
page_size or model_path. So exploration runs the entry three times, where a
snapshot counted as read whole would make it run all 16 cells. Every cell's outcome
is what the fixture's own files resolve in plain Python.
"""

from __future__ import annotations

import pytest

from harness.matrix.load import load_matrix
from tests.helpers import evaluate_at
from tests.test_entry import PKG, cells, harness_outcomes, imported
from tests.test_entry_class import commit_files
from tests.test_entry_records import files, stubs

PIPELINE = '''\
# Written for harness's tests, shaped like SGLang's pipeline.py (0.5.20 on).
"""Ordered configuration resolution: a snapshot of the fields first."""

from __future__ import annotations

from typing import Any

from sglang.srt.arg_groups.arg_utils import record_fields
from sglang.srt.arg_groups.overrides import (
    declare_resolution,
    resolution_result,
    resolving_view,
)
from sglang.srt.arg_groups.resolution_hooks import run_hook


def handle_memory(server_args: Any) -> None:
    cfg = resolving_view(server_args)
    if cfg.attention_backend == "wide":
        given = {lookup}
        if given == 8192:
            declare_resolution(server_args, "memory", chunk=given // 2)


def run_resolution_pipeline(server_args: Any) -> None:
    server_args._raw_input = {{
        field.name: getattr(server_args, field.name)
        for field in record_fields(type(server_args))
    }}
    server_args._resolved_overrides = list(getattr(server_args, "_resolved_overrides", ()))
    run_hook(handle_memory, server_args)
{more}'''
GET = '(getattr(server_args, "_raw_input", None) or {}).get("window")'
RESULT = 'resolution_result(server_args, "window")'
AXES = {
    "attention_backend": [None, "wide"],
    "window": [4096, 8192],
    "page_size": [None, 1],
    "model_path": ["org/a", "org/b"],
}
OUTPUTS = ("chunk", "window")
PATHS = 3  # backend None; wide with window 4096; wide with window 8192


def snapshot_commit(tmp_path, lookup: str = GET, more: str = "") -> tuple:
    texts = files()
    texts[f"{PKG}/pipeline.py"] = PIPELINE.format(lookup=lookup, more=more)
    root, sha, matrix = commit_files(tmp_path, texts)
    matrix.write_text(
        f"name: snap\ntarget:\n  path: {PKG}/pipeline.py\n  entry: run_resolution_pipeline\n"
        f"  output: [{', '.join(OUTPUTS)}]\nworld: sglang\naxes:\n"
        "  attention_backend: [null, wide]\n  window: [4096, 8192]\n"
        "  page_size: [null, 1]\n  model_path: [org/a, org/b]\n"
    )
    return root, sha, matrix


def plain(root) -> list:
    """Per cell, what the files at `root` resolve in plain Python."""
    found = []
    for cell in cells(AXES):
        with imported(root, "sm90", stubs({"SGLANG_SPEC_ROWS": False})) as (configuration, run):
            from sglang.srt.arg_groups.overrides import resolution_result

            server_args = configuration(**cell)
            run(server_args)
            found.append(tuple(resolution_result(server_args, f) for f in OUTPUTS))
    return found


def calls(root, sha, matrix) -> int:
    return evaluate_at(root, sha, load_matrix(str(matrix))).calls


@pytest.mark.parametrize("lookup", [GET, RESULT], ids=["get", "resolution_result"])
def test_a_field_of_the_snapshot_counts_where_it_is_looked_up(tmp_path, lookup):
    root, sha, matrix = snapshot_commit(tmp_path, lookup)
    expected = plain(tmp_path / "tree")
    assert expected.count((4096, 8192)) == 4  # wide with window 8192: the chunk declared
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected
    assert harness_outcomes(root, sha, matrix, exhaustive=True, outputs=OUTPUTS) == expected
    assert calls(root, sha, matrix) == PATHS


ESCAPES = [
    # the whole snapshot, by a shape that asks more than one key's value
    "    if len(server_args._raw_input) > 100:\n"
    '        declare_resolution(server_args, "never", chunk=0)\n',
    "    raw = server_args._raw_input\n"
    "    if sorted(raw)[0] == 'nothing':\n"
    '        declare_resolution(server_args, "never", chunk=0)\n',
    # a name read by a shape of its own, then looked up: the read hands a dict
    '    kept = getattr(server_args, "_raw_input", None)\n'
    "    if kept is not None and kept.get('window') == 1:\n"
    '        declare_resolution(server_args, "never", chunk=0)\n'
    "    keep = lambda: kept\n",
]


# a read through an object of the code's own, whose property reads the attribute of the
# configuration: that inner read is no shape of the module's, and gets the dict
ESCAPES.append(
    "    size = (getattr(Holder(server_args), '_raw_input', None) or {}).get('n')\n"
    "    if size == 100:\n"
    '        declare_resolution(server_args, "never", chunk=0)\n'
    "\n\nclass Holder:\n"
    "    def __init__(self, server_args):\n"
    "        self.server_args = server_args\n\n"
    "    @property\n"
    "    def _raw_input(self):\n"
    "        return {'n': len(self.server_args._raw_input)}\n"
)


@pytest.mark.parametrize("more", ESCAPES, ids=["len", "sorted", "captured", "property"])
def test_a_snapshot_read_any_other_way_counts_every_field(tmp_path, more):
    """Read by any other shape, the snapshot is the plain dict, all of it read: every
    cell (each differs in some field the dict holds) is a call of its own."""
    root, sha, matrix = snapshot_commit(tmp_path, GET, more)
    expected = plain(tmp_path / "tree")
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected
    assert calls(root, sha, matrix) == len(cells(AXES))


def test_no_snapshot_where_getattr_may_not_be_pythons(tmp_path):
    """Where the file may bind `getattr` (here in a function the entry calls, so the
    closure holds it), the comprehension runs as written: every field read."""
    more = "    helper()\n\n\ndef helper(getattr=None):\n    return getattr\n"
    root, sha, matrix = snapshot_commit(tmp_path, GET, more)
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == plain(tmp_path / "tree")
    assert calls(root, sha, matrix) == len(cells(AXES))
