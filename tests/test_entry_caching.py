"""An entry runs the resolution code's cached helpers (`@functools.lru_cache`, `@cache`:
Python's own caches, filled by one cell only),
reads the configuration's raw `cuda_graph_config` (the input, which the entry itself
parses), and calls the platform's `apply_server_args_defaults` hook (SGLang 0.5.18's
`__post_init__` does all three).

The fixture is one SGLang-shaped commit; the expected outcome of every cell comes
from importing its files in plain Python and running the entry, never from harness.
"""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.test_entry import PKG, harness_outcomes, plain_outcomes
from tests.test_entry_class import AXES, OUTPUTS, commit_files, diff_note

SERVER_ARGS = '''\
"""Server arguments, one dataclass; the graph settings stay raw until resolution."""

from __future__ import annotations

import dataclasses
from typing import Optional


@dataclasses.dataclass
class ServerArgs:
    attention_backend: Optional[str] = None
    page_size: Optional[int] = None
    cuda_graph_config: Optional[dict] = None
'''
SIZES = '''\
"""Derived sizes, computed once per argument."""

import functools
from functools import cache, lru_cache


@functools.lru_cache(maxsize=None)
def sizes_for(page):
    return tuple(range(page, page * 4, page))


@lru_cache
def label(name):
    return (name or "auto").upper()


@cache
def doubled(n):
    return n * 2


@functools.lru_cache(64)
def count(names):
    return len(names)


@cache
def table(key, kind):
    return {"key": str(key) + kind, "seen": 0}
'''
PIPELINE = '''\
"""Resolution through cached helpers."""

from sglang.srt.arg_groups.sizes import count, doubled, label, sizes_for, table
from sglang.srt.platforms import current_platform


def run_resolution_pipeline(server_args):
    raw = server_args.cuda_graph_config
    graphs = dict(decode="full") if raw is None else raw
    current_platform.apply_server_args_defaults(server_args)
    page = server_args.page_size or 16
    if server_args.attention_backend == "fa4":
        server_args.page_size = doubled(sizes_for(page)[-1]) + doubled(sizes_for(page)[0])
    else:
        server_args.page_size = page
    server_args.attention_backend = label(server_args.attention_backend) + ":" + graphs.get("decode")
    if server_args.page_size == 64:
        count([page])  # a list is no cache key: Python raises TypeError
    table(1, "k")["seen"] += 1  # one object for equal keys: (1, "k") and (1.0, "k") share it
    server_args.page_size += table(1.0, "k")["seen"] + 100 * (table(2, "k") is table(2, "k"))
    server_args.page_size += 1000 * sizes_for.cache_info().hits
{more}'''


def commit(tmp_path: Path, more: str = "", fields: str = "") -> tuple[Path, str, Path]:
    files = {
        "python/sglang/srt/server_args.py": SERVER_ARGS,
        f"{PKG}/__init__.py": "",
        f"{PKG}/sizes.py": SIZES,
        f"{PKG}/pipeline.py": PIPELINE.format(more=more),
    }
    root, sha, matrix = commit_files(tmp_path, files)
    matrix.write_text(matrix.read_text() + fields)
    return root, sha, matrix


def in_tree_platform(cell: dict) -> dict[str, types.ModuleType]:
    """SGLang's platforms module, as an in-tree platform's hook answers: nothing set."""
    platforms = types.ModuleType("sglang.srt.platforms")
    platforms.current_platform = types.SimpleNamespace(apply_server_args_defaults=lambda _: None)
    return {"sglang.srt.platforms": platforms}


@pytest.mark.parametrize("exhaustive", [False, True], ids=["explored", "every-cell"])
def test_cached_helpers_raw_graph_input_and_platform_hook_are_as_in_python(tmp_path, exhaustive):
    root, sha, matrix = commit(tmp_path)
    found = harness_outcomes(root, sha, matrix, exhaustive=exhaustive, outputs=OUTPUTS)
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS, stubs=in_tree_platform)
    assert found == expected
    assert ("error", "TypeError: unhashable type: 'list'") in expected  # page_size 64
    assert ("AUTO:full", 117) in expected  # cuda_graph_config was the input, None
    assert ("FA4:full", 1000 + 2 * 48 + 2 * 16 + 101) in expected  # sizes_for(16) hit once


def test_a_cached_function_makes_every_cell_run_alone_and_the_report_says_why(tmp_path):
    """A cache outlives the call that fills it: the revision runs every cell, each in a
    fresh copy of its modules (as SGLang's one configuration per process), and says so."""
    pipeline = PIPELINE.split("def run_resolution_pipeline")[0] + (
        "def run_resolution_pipeline(server_args):\n"
        "    server_args.page_size = doubled(server_args.page_size or 16)\n"
    )
    files = {"python/sglang/srt/server_args.py": SERVER_ARGS, f"{PKG}/__init__.py": "",
             f"{PKG}/sizes.py": SIZES, f"{PKG}/pipeline.py": pipeline}  # fmt: skip
    root, sha, matrix = commit_files(tmp_path, files)
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix),
                   "--format", "json", "--no-cache")  # fmt: skip
    assert done.code == 0, done.out
    why = json.loads(done.out)["base"]["every_cell"]
    line = SIZES.splitlines().index("def doubled(n):")  # the decorator's, counted from 1
    assert why.endswith(f"sizes.py:{line}: keeps a cache between calls (@cache)"), why


def test_an_out_of_tree_platforms_defaults_are_refused(tmp_path):
    """A platform plugin's `apply_server_args_defaults` may set anything: the world holds
    no plugin, so with `platform.is_out_of_tree` true the call is refused (exit 4)."""
    code, note = diff_note(*commit(tmp_path, fields="fields:\n  platform.is_out_of_tree: true\n"))
    assert code == 4 and "apply_server_args_defaults() on an out-of-tree platform" in note, note


OWN_FIELD = '''\
"""A helper of the project's that happens to share a name with Python's."""


def field(n):
    return n * 2
'''


@pytest.mark.parametrize("where", ["module", "function"])
def test_a_name_of_pythons_imported_from_elsewhere_is_that_modules(tmp_path, where):
    """`field` from the project's own module is the project's, not Python's
    `dataclasses.field` that every world binds: the expected outcomes are plain Python's."""
    use = "    server_args.page_size = field(server_args.page_size or 1)\n"
    local = "    from sglang.srt.arg_groups.helpers import field\n"
    root, sha, matrix = commit(tmp_path, (local if where == "function" else "") + use)
    if where == "module":
        path = tmp_path / "tree" / PKG / "pipeline.py"
        text = path.read_text().replace(
            "from sglang.srt.platforms", "from sglang.srt.arg_groups.helpers import field\n"
            "from sglang.srt.platforms")  # fmt: skip
        path.write_text(text)
        sha = FixtureRepo(root).commit("import field", {f"{PKG}/pipeline.py": text})
    (tmp_path / "tree" / PKG / "helpers.py").write_text(OWN_FIELD)
    sha = FixtureRepo(root).commit("helpers", {f"{PKG}/helpers.py": OWN_FIELD})
    found = harness_outcomes(root, sha, matrix, outputs=OUTPUTS)
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS, stubs=in_tree_platform)
    assert found == expected
    assert ("AUTO:full", 234) in expected  # (16 + 1 + 100) doubled by the project's field


NESTED = "    def helper():\n        from functools import cache\n\n        return cache\n\n"
RENAMED = "    from functools import cache as memo\n\n"
HEADER = "    def helper(fn=cache):\n        from functools import cache\n\n        return fn\n\n"


@pytest.mark.parametrize("more", ["", NESTED, RENAMED, HEADER],
                         ids=["nowhere", "in-another-function", "as-memo", "in-a-default"])  # fmt: skip
def test_a_name_of_pythons_never_imported_is_unbound(tmp_path, more):
    """`cache(len)` with no `from functools import cache` binding `cache` where it is read
    (nowhere; only in a function it defines; as `memo`; in the function whose default
    reads it, which Python evaluates outside it): Python's NameError, so the revision
    is unevaluable (exit 4), naming it."""
    code, note = diff_note(*commit(tmp_path, more + "    cache(len)\n"))
    assert code == 4 and "name cache" in note, (code, note)


def test_an_entry_matrix_with_an_input_of_the_resolved_graph_settings_is_refused(tmp_path):
    """`prefill_cuda_graph` answers a pass's `view.cuda_graph_config`; an entry parses the
    raw input itself and never reads it, so its cells would differ in nothing: exit 2,
    one line naming it."""
    root, sha, matrix = commit(tmp_path)
    matrix.write_text(matrix.read_text() + "  prefill_cuda_graph: [full, disabled]\n")
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix))
    assert done.code == 2 and len(done.err.strip().splitlines()) == 1, done.err
    assert "prefill_cuda_graph answers view.cuda_graph_config" in done.err, done.err


MADE_OTHERWISE = {
    "called": "def _seen(key):\n    return key\n\n\nseen = functools.lru_cache(maxsize=None)(_seen)\n",
    "aliased": "@memo\ndef seen(key):\n    return key\n",
    "of-a-lambda": "seen = functools.cache(lambda key: key)\n",
}
COUNTING = '''\
"""Resolution counting its cache's hits."""

from sglang.srt.arg_groups.sizes import seen
from sglang.srt.platforms import current_platform


def run_resolution_pipeline(server_args):
    current_platform.apply_server_args_defaults(server_args)
    if server_args.attention_backend == "fa4":
        seen("k")
    seen("k")
    server_args.page_size = seen.cache_info().hits
'''


@pytest.mark.parametrize("shape", sorted(MADE_OTHERWISE))
@pytest.mark.parametrize("exhaustive", [False, True], ids=["explored", "every-cell"])
def test_a_cache_made_otherwise_than_by_decorating_is_one_cells_too(tmp_path, shape, exhaustive):
    """`functools.lru_cache(...)(f)`, `@memo` after `from functools import lru_cache as
    memo`, `functools.cache(lambda ...)`: each cell's hits are its own, as in Python."""
    sizes = "import functools\nfrom functools import lru_cache as memo\n\n\n"
    files = {"python/sglang/srt/server_args.py": SERVER_ARGS, f"{PKG}/__init__.py": "",
             f"{PKG}/sizes.py": sizes + MADE_OTHERWISE[shape], f"{PKG}/pipeline.py": COUNTING}  # fmt: skip
    root, sha, matrix = commit_files(tmp_path, files)
    found = harness_outcomes(root, sha, matrix, exhaustive=exhaustive, outputs=OUTPUTS)
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS, stubs=in_tree_platform)
    assert found == expected
    assert sorted({page for _, page in expected}) == [0, 1]  # fa4: one hit; else none
