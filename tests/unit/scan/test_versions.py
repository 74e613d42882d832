"""Versions: each distinct closure is evaluated once, found again by blob and by digest."""

from __future__ import annotations

from harness import gitio
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
    assert versions.evaluations == 2
    assert states[0].key == states[1].key == states[3].key != states[2].key
    page = [states[n].table.outcome_at(i) for n in (0, 2) for i in range(0, 9, 3)]
    # a0 = 0, 1, 2 (page_size 1): LIMIT 1 -> kept, 128, 128; LIMIT 2 -> kept, kept, 128
    assert [o.kind for o in page] == ["kept", "value", "value", "kept", "kept", "value"]


def test_each_run_owns_its_parse_cache(tmp_path):
    versions, revisions = versions_of(tmp_path, [PASS.format(limit=1, comment="")])
    other = Versions(versions.repo, versions.matrix)
    versions.at(revisions[0])
    assert versions.sources.pieces and not other.sources.pieces


def test_the_cache_key_includes_how_the_table_was_made(tmp_path):
    from harness.scan.cache import TableCache

    versions, revisions = versions_of(tmp_path, [PASS.format(limit=1, comment="")])
    cache = TableCache(tmp_path / "cache")
    runs = [
        Versions(versions.repo, versions.matrix, cache, exhaustive=exhaustive)
        for exhaustive in (False, True, False, True)
    ]
    states = [run.at(revisions[0]) for run in runs]
    assert [run.evaluations for run in runs] == [1, 1, 0, 0]
    assert states[0].key != states[1].key and states[0].table.codes == states[1].table.codes
