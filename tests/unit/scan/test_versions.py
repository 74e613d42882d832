"""Versions: each distinct closure is evaluated once, found again by blob and by digest."""

from __future__ import annotations

import pytest

from harness import gitio
from harness.engine.limits import Limits
from harness.scan.cache import TableCache
from harness.scan.versions import Versions
from harness.testing.gitrepo import FixtureRepo
from tests.unit.tables import small_matrix

PASS = """\
LIMIT = {limit}


def _big(view):
    return view.a0 >= LIMIT
{comment}

def target(view):
    return {{"page_size": 128}} if _big(view) else {{}}
"""


def versions_of(tmp_path, texts: list[str]) -> tuple[Versions, list[gitio.Revision]]:
    repo = FixtureRepo(tmp_path / "repo")
    shas = [repo.commit(f"v{n}", {"m.py": text}) for n, text in enumerate(texts)]
    handle = gitio.open_repo(str(repo.root))
    revisions = [gitio.resolve(handle, sha) for sha in shas]
    return Versions(handle, small_matrix([3])), revisions


def test_a_comment_costs_no_evaluation_and_a_helper_change_costs_one(tmp_path):
    texts = [
        PASS.format(limit=1, comment=""),
        PASS.format(limit=1, comment="# only a comment\n"),  # new blob, same closure
        PASS.format(limit=2, comment="# only a comment\n"),  # the constant changes
        PASS.format(limit=1, comment=""),  # back to the first text: same blob
    ]
    versions, revisions = versions_of(tmp_path, texts)
    states = [versions.at(r) for r in revisions]
    assert versions.tables.evaluations == 2
    assert states[0].key == states[1].key == states[3].key != states[2].key
    page = [states[n].table.outcome_at(i) for n in (0, 2) for i in range(0, 9, 3)]
    # a0 = 0, 1, 2 (page_size 1): LIMIT 1 -> kept, 128, 128; LIMIT 2 -> kept, kept, 128
    assert [o.kind for o in page] == ["kept", "value", "value", "kept", "kept", "value"]


def test_each_run_owns_its_parse_cache(tmp_path):
    versions, revisions = versions_of(tmp_path, [PASS.format(limit=1, comment="")])
    other = Versions(versions.repo, versions.matrix)
    versions.at(revisions[0])
    assert versions.front.sources.pieces and not other.front.sources.pieces


def test_the_cache_key_includes_how_the_table_was_made(tmp_path):
    versions, revisions = versions_of(tmp_path, [PASS.format(limit=1, comment="")])
    cache = TableCache(tmp_path / "cache")
    runs = [
        Versions(versions.repo, versions.matrix, cache, exhaustive=exhaustive)
        for exhaustive in (False, True, False, True)
    ]
    states = [run.at(revisions[0]) for run in runs]
    assert [run.tables.evaluations for run in runs] == [1, 1, 0, 0]
    assert states[0].key != states[1].key and states[0].table.codes == states[1].table.codes


def test_a_matrix_sharing_a_run_reuses_its_reading_and_gets_the_same_states(tmp_path):
    texts = [PASS.format(limit=1, comment=""), PASS.format(limit=2, comment="")]
    versions, revisions = versions_of(tmp_path, texts)
    for revision in revisions:
        versions.at(revision)
    other = small_matrix([3, 2])
    shared = versions.sharing(other)
    assert shared.front.sources is versions.front.sources and shared.matrix is other
    fresh = Versions(versions.repo, other)
    for revision in revisions:
        mine, theirs = shared.at(revision), fresh.at(revision)
        assert mine.key == theirs.key
        assert list(mine.table.codes) == list(theirs.table.codes)
        assert mine.table.outcomes == theirs.table.outcomes


def test_a_diff_of_several_matrices_computes_a_revisions_memo_once(tmp_path):
    texts = [PASS.format(limit=1, comment=""), PASS.format(limit=2, comment="")]
    versions, revisions = versions_of(tmp_path, texts)
    computed: list[str | None] = []

    def compute(files):
        computed.append(files.read("m.py"))
        return computed[-1]

    shared = versions.sharing(small_matrix([3, 2]))
    found = [shared.front.texts_memo("text", versions.files_at(r), compute) for r in revisions * 3]
    assert found == texts * 3
    assert computed == texts  # base and head kept: each made once
    computed.clear()
    found = [
        versions.front.texts_memo("scan", versions.files_at(r), compute) for r in revisions * 2
    ]
    assert found == texts * 2 and computed == texts * 2  # a scan's run keeps the last one


TARGET = """\
from helper import LIMIT


def target(view):
    return {"page_size": 128} if view.a0 >= LIMIT else {}
"""


def test_a_state_found_by_the_target_blob_is_not_reused_when_a_file_it_read_changed(tmp_path):
    """The target's text never changes; the helper's constant does, then comes back. The
    state remembered for the target's blob holds only while the helper's blob is the one
    it read: a0 >= 1 takes 128 at a0 = 1 and 2; a0 >= 2 only at a0 = 2."""
    repo = FixtureRepo(tmp_path / "repo")
    shas = [repo.commit(f"v{n}", {"m.py": TARGET, "helper.py": f"LIMIT = {limit}\n"})
            for n, limit in enumerate((1, 2, 1))]  # fmt: skip
    handle = gitio.open_repo(str(repo.root))
    versions = Versions(handle, small_matrix([3]))
    states = [versions.at(gitio.resolve(handle, sha)) for sha in shas]
    kinds = [[states[n].table.outcome_at(i).kind for i in range(0, 9, 3)] for n in range(3)]
    assert kinds == [["kept", "value", "value"], ["kept", "kept", "value"],
                     ["kept", "value", "value"]]  # fmt: skip
    assert versions.tables.evaluations == 2  # the third is the first's state, found again


SPIN = """\
def target(view):
    n = 0
    while n >= 0:
        n += 1
    return {}
"""


def test_a_matrix_sharing_a_run_works_under_its_cache_its_limits_and_its_own_exhaustiveness(
    tmp_path,
):
    versions, revisions = versions_of(tmp_path, [PASS.format(limit=1, comment=""), SPIN])
    cache = TableCache(tmp_path / "cache")
    first = Versions(versions.repo, versions.matrix, cache, limits=Limits(seconds=0.5))
    first.at(revisions[0])
    shared = first.sharing(small_matrix([3]))  # the same matrix: its table is on disk
    assert shared.at(revisions[0]).table.codes == first.at(revisions[0]).table.codes
    assert shared.tables.evaluations == 0
    every = first.sharing(small_matrix([3]), exhaustive=True)  # another way to make it
    every.at(revisions[0])
    assert every.tables.evaluations == 1
    spun = shared.at(revisions[1])  # 0.5 s of CPU, not the default minute
    assert spun.table.outcomes[0].kind == "unevaluable" and "0.5 s" in spun.reason
    with pytest.raises(ValueError, match="a sglang matrix cannot share a plain run"):
        first.sharing(small_matrix([3], world="sglang"))


def test_unevaluable_states_are_told_apart_by_their_reason(tmp_path):
    """Two revisions that cannot be evaluated for different reasons are different states
    (a history shows the reason changing); the same reason twice is one state."""
    texts = [
        "def target(view):\n    return {'page_size': open(view.a0)}\n",
        "def target(view):\n    return {'page_size': view.__dict__}\n",
        "def target(view):\n    return {'page_size': open(view.a0)}\n\n# a comment\n",
    ]
    versions, revisions = versions_of(tmp_path, texts)
    states = [versions.at(r) for r in revisions]
    assert [s.table.outcomes[0].kind for s in states] == ["unevaluable"] * 3
    assert states[0].key != states[1].key and states[0].key == states[2].key
    assert "builtin open" in states[0].reason and "__dict__" in states[1].reason


OVERRIDES = '''\
"""Passes of a fixture project, SGLang-shaped: registered in one order, run in another."""


@register_post_process
def _first(view):
    return {"page_size": 16} if view.a0 >= 1 else {}


@register_post_process
def _second(view):
    return {"page_size": 64} if view.page_size == 16 else {}
'''
ENTRY = """\
from sglang.srt.arg_groups.overrides import _first, _second, run_post_process_pass


def run_resolution_pipeline(server_args):
    run_post_process_pass(server_args, _second)
    run_post_process_pass(server_args, _first)
"""


def test_a_pipeline_runs_its_passes_in_the_order_the_matrix_names_or_the_code_runs(tmp_path):
    """`passes: all` is the file's order, `run-order` the entry point's, a list its own;
    each pass sees the earlier ones' declarations. Worked out by hand over a0 in 0..2 and
    page_size in 1, 16, 128: first-then-second makes 64 wherever a0 >= 1 (and where the
    input is 16); second-then-first leaves 16 there (64 only where a0 = 0, input 16)."""
    root = "python/sglang/srt/arg_groups"
    repo = FixtureRepo(tmp_path / "repo")
    sha = repo.commit("passes", {f"{root}/overrides.py": OVERRIDES, f"{root}/pipeline.py": ENTRY})
    handle = gitio.open_repo(str(repo.root))
    revision = gitio.resolve(handle, sha)
    cells = [(a0, page) for a0 in range(3) for page in (1, 16, 128)]
    first_then_second = [64 if a0 >= 1 or page == 16 else None for a0, page in cells]
    second_then_first = [16 if a0 >= 1 else (64 if page == 16 else None) for a0, page in cells]
    for passes, want in (("all", first_then_second), ("run-order", second_then_first),
                         (["_second", "_first"], second_then_first)):  # fmt: skip
        target = {"path": f"{root}/overrides.py", "passes": passes, "output": "page_size"}
        matrix = small_matrix([3], world="sglang", target=target)
        table = Versions(handle, matrix).at(revision).table
        got = [table.outcome_at(i) for i in range(matrix.size)]
        assert [o.value if o.kind == "value" else None for o in got] == want, passes
        assert all(o.kind in ("value", "kept") for o in got)
