"""Tables by closure (`scan/tables.py`), on files held in memory: a closure's table is
evaluated once per key, then found in memory, then on disk by another run."""

from __future__ import annotations

from harness.closure.facts import PLAIN
from harness.closure.front import Extractor
from harness.closure.modules import RevisionFiles
from harness.engine.limits import DEFAULT_LIMITS
from harness.scan.cache import TableCache
from harness.scan.tables import Pending, State, Tables
from harness.scan.versions import bind_matrix
from tests.unit.tables import PAGE_SIZES, small_matrix

PURE = "def target(view):\n    if view.a0 == 1:\n        return {'page_size': 128}\n    return {}\n"
IMPURE = "SEEN = []\n\n\ndef target(view):\n    SEEN.append(1)\n    return {}\n"


def parts(cache: TableCache, exhaustive: bool = False):
    matrix = small_matrix([2])
    bound = bind_matrix(matrix)
    front = Extractor(matrix, bound.names, None, PLAIN)
    return matrix, front, Tables(matrix, bound, None, cache, exhaustive, DEFAULT_LIMITS)


def settle(tables: Tables, plan) -> State:
    return tables.evaluated(plan) if isinstance(plan, Pending) else plan


def test_a_table_is_evaluated_once_then_found_in_memory_then_on_disk(tmp_path):
    cache = TableCache(tmp_path)
    matrix, front, tables = parts(cache)
    closure = front.extract(RevisionFiles.of({"m.py": PURE}, "m.py"))
    files = RevisionFiles.of({"m.py": PURE}, "m.py")
    state = settle(tables, tables.plan(closure, files, "first"))
    again = tables.plan(closure, files, "again")
    assert isinstance(again, State) and again.table is state.table and tables.evaluations == 1
    for index in range(matrix.size):  # a0 is the slower axis: its value is index // 3
        outcome = state.table.outcome_at(index)
        assert (outcome.value if index // len(PAGE_SIZES) == 1 else outcome.kind) == (
            128 if index // len(PAGE_SIZES) == 1 else "kept"
        )
    _, _, other = parts(TableCache(tmp_path))  # another run, the same directory
    found = other.plan(closure, files, "other run")
    assert isinstance(found, State) and other.evaluations == 0 and found.key == state.key


def test_code_that_may_keep_state_is_run_on_every_cell_under_another_key(tmp_path):
    _, front, tables = parts(TableCache(None))
    files = {text: RevisionFiles.of({"m.py": text}, "m.py") for text in (PURE, IMPURE)}
    pure, impure = (
        settle(tables, tables.plan(front.extract(f), f, label)) for label, f in files.items()
    )
    assert pure.impure is None and "SEEN" in impure.impure
    assert tables.impurity(front.extract(files[PURE])) is None  # judged once per digest
    _, front_every, every = parts(TableCache(None), exhaustive=True)
    exhaustive = settle(every, every.plan(front_every.extract(files[PURE]), files[PURE], "x"))
    assert exhaustive.key != pure.key and exhaustive.table.codes == pure.table.codes
