"""First-call detection: a pass that keeps state sees, on every cell, a first call.

SGLang resolves one configuration per process, so a pass runs once per server
start: its module's state (a call counter, a memo dict, an iterator, a flag) is
always as the module left it at import. A hostile head that counts its calls
and takes its "real" branch only on the first one showed "no change" when the
harness ran every cell through one loaded copy of the module. Now a closure
that may keep state (`harness.engine.purity`) runs each cell in a fresh copy
of its modules.

Every head below computes, in a fresh process, `page_size` 64 for the `fa4`
backend where the base computes 128 (or, for the "later calls" heads, 128 as
the base does). The expected changed cells come from that predicate alone.
"""

from __future__ import annotations

import json
import textwrap
from itertools import product
from pathlib import Path

import pytest

from harness import gitio
from harness.engine.explore import evaluate_closure
from harness.matrix.load import load_matrix
from harness.scan.versions import Versions
from tests.conftest import run_cli
from tests.helpers import EVERY_PASS_MATRIX, commit_versions, diff_versions, module, plain_matrix

AXES = {"backend": ["fa3", "fa4", "flashinfer"], "page_size": [None, 1, 64]}
MATRIX = plain_matrix("first-call")

BASE = '''\
"""Post-process passes (a contributor's version)."""


def target(view):
    if view.backend == "fa4":
        return {"page_size": 128}
    return {}
'''

# Each head's first call in a process gives fa4 page_size 64; later calls give 128.
FIRST_CALL_NEW = {
    "counter": """
        _CALLS = [0]


        def target(view):
            _CALLS[0] += 1
            if view.backend == "fa4":
                return {"page_size": 64 if _CALLS[0] == 1 else 128}
            return {}
        """,
    "global-counter": """
        _CALLS = 0


        def target(view):
            global _CALLS
            _CALLS = _CALLS + 1
            if view.backend == "fa4":
                return {"page_size": 64 if _CALLS == 1 else 128}
            return {}
        """,
    "memo-seeded-by-the-first-cell": """
        _MEMO = {}


        def target(view):
            _MEMO.setdefault("first", view.backend)
            if view.backend == "fa4":
                return {"page_size": 64 if _MEMO["first"] == view.backend else 128}
            return {}
        """,
    "iterator": """
        _SIZES = iter([64])


        def target(view):
            if view.backend == "fa4":
                return {"page_size": next(_SIZES, 128)}
            return {}
        """,
    "generator": """
        def _sizes():
            yield 64
            while True:
                yield 128


        _SIZES = _sizes()


        def target(view):
            if view.backend == "fa4":
                return {"page_size": next(_SIZES)}
            return {}
        """,
    "in-place-on-an-alias": """
        _SEEN = []


        def target(view):
            seen = _SEEN
            seen += [1]
            if view.backend == "fa4":
                return {"page_size": 64 if len(_SEEN) == 1 else 128}
            return {}
        """,
    "bound-method": """
        _SEEN = []
        _NOTE = _SEEN.append


        def target(view):
            _NOTE(view.backend)
            if view.backend == "fa4":
                return {"page_size": 64 if len(_SEEN) == 1 else 128}
            return {}
        """,
    "write-through-an-item-of-a-new-list": """
        _TABLE = {"fa4": 128}


        def target(view):
            box = [_TABLE]
            size = 192 - _TABLE["fa4"]
            box[0]["fa4"] = 64
            if view.backend == "fa4":
                return {"page_size": size}
            return {}
        """,
    "generator-of-a-lambda": """
        _SIZES = (lambda: (yield from [64, 128, 128, 128, 128, 128, 128, 128, 128]))()


        def target(view):
            if view.backend == "fa4":
                return {"page_size": next(_SIZES)}
            return {}
        """,
    "iterator-by-an-alias": """
        _make = iter
        _SIZES = _make([64])


        def target(view):
            if view.backend == "fa4":
                return {"page_size": next(_SIZES, 128)}
            return {}
        """,
    "iterator-from-a-helper": """
        def _sizes():
            return iter([64])


        _SIZES = _sizes()


        def target(view):
            if view.backend == "fa4":
                return {"page_size": next(_SIZES, 128)}
            return {}
        """,
    "flag-in-a-helper-module": """
        from .state import FLAGS


        def target(view):
            first = not FLAGS
            FLAGS.append(True)
            if view.backend == "fa4":
                return {"page_size": 64 if first else 128}
            return {}
        """,
}
HELPER_MODULE = {"python/sglang/srt/arg_groups/state.py": "FLAGS = []\n"}

# The other way: the first call keeps the base's 128, later calls give 64.
LATER_CALLS_NEW = {
    "counter": """
        _CALLS = [0]


        def target(view):
            _CALLS[0] += 1
            if view.backend == "fa4":
                return {"page_size": 128 if _CALLS[0] == 1 else 64}
            return {}
        """,
    "iterator": """
        _SIZES = iter([128])


        def target(view):
            if view.backend == "fa4":
                return {"page_size": next(_SIZES, 64)}
            return {}
        """,
}


def cells() -> list[dict]:
    return [dict(zip(AXES, values, strict=True)) for values in product(*AXES.values())]


def fresh_process_changes(first_call_size: int) -> dict[tuple, int]:
    """The changed cells SGLang shows, from the predicate: each process makes one (first)
    call, which gives fa4 `first_call_size` where the base gives 128."""
    return {
        (cell["backend"], cell["page_size"]): first_call_size
        for cell in cells()
        if cell["backend"] == "fa4" and first_call_size != 128
    }


def changed_cells(report: dict) -> dict[tuple, object]:
    return {
        tuple(item["cell"][axis] for axis in AXES): item["head"]["page_size"]
        for item in report["changed"]
    }


def head(body: str) -> str:
    return '"""Post-process passes (a contributor\'s version)."""\n' + textwrap.dedent(body)


@pytest.mark.parametrize("name", sorted(FIRST_CALL_NEW))
def test_state_kept_between_calls_shows_the_change_on_every_cell(name: str, tmp_path: Path):
    expected = fresh_process_changes(64)
    assert len(expected) == 3  # every fa4 cell, not only the first the harness ran
    done, report = diff_versions(tmp_path, MATRIX, [BASE, head(FIRST_CALL_NEW[name])],
                                 HELPER_MODULE)  # fmt: skip
    assert done.code == 1, (done.err, report["notes"])
    assert changed_cells(report) == expected
    assert report["head"]["every_cell"], "the report says why every cell ran"


@pytest.mark.parametrize("name", sorted(LATER_CALLS_NEW))
def test_a_change_only_later_calls_make_is_no_change(name: str, tmp_path: Path):
    """Run in one loaded module, every cell after the first showed 64: a change SGLang,
    whose one call per process is always the first, never makes."""
    assert fresh_process_changes(128) == {}
    done, report = diff_versions(tmp_path, MATRIX, [BASE, head(LATER_CALLS_NEW[name])])
    assert changed_cells(report) == {}, report["changed"]
    assert done.code in (0, 4), (done.err, report["notes"])
    assert not report["notes"], report["notes"]  # evaluated: 4 only for a one-way condition


@pytest.mark.parametrize("name", ['"append"', '"app" + "end"'])
def test_a_mutating_method_by_getattr_is_refused(name: str, tmp_path: Path):
    """`getattr(X, "append")`, or by a name no static check can read: the read is refused
    when the name is a mutating method's (the call would change state a later call sees,
    SGLang's one call per process never)."""
    body = f"""
        _CALLS = []


        def target(view):
            getattr(_CALLS, {name})(1)
            if view.backend == "fa4":
                return {{"page_size": 64 if len(_CALLS) == 1 else 128}}
            return {{}}
        """
    text = head(body)
    done, report = diff_versions(tmp_path, MATRIX, [BASE, text])
    assert done.code == 4 and report["changed"] == [], (done.err, report)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "getattr(" in t)
    note = report["notes"]["head"]
    assert "the method append (through getattr)" in note and f"overrides.py:{line}" in note


def test_module_level_code_sees_the_cell_it_is_loaded_for(tmp_path: Path):
    """In a fresh copy, module-level code runs once per cell, as at SGLang's import: a
    value it computes from a world answer (here a probe of the matrix's platform) is
    that cell's, and the state the module keeps starts over."""
    matrix = MATRIX + "bindings:\n  platform_is_fa4:\n    call: {axis_in: {backend: [fa4]}}\n"
    body = """
        _FA4 = platform_is_fa4()
        _CALLS = [0]


        def target(view):
            _CALLS[0] += 1
            if _FA4 and _CALLS[0] == 1:
                return {"page_size": 64}
            if view.backend == "fa4":
                return {"page_size": 128}
            return {}
        """
    done, report = diff_versions(tmp_path, matrix, [BASE, head(body)])
    assert done.code == 1, (done.err, report["notes"])
    assert changed_cells(report) == fresh_process_changes(64)


READS_AT_IMPORT_MATRIX = MATRIX + "bindings:\n  backend_here:\n    call: {axis: backend}\n"
READS_AT_IMPORT = """
    _BACKEND = backend_here()


    def target(view):
        if view.backend == "fa4":
            return {"page_size": {"fa4": 64}.get(_BACKEND, 128)}
        return {}
    """


def test_pure_code_whose_module_level_reads_the_cell_is_loaded_per_call(tmp_path: Path):
    """No state kept, no condition on the value: `_BACKEND` is what SGLang's import
    computes in each process, so each (explored) call loads the module again, and the
    input its module-level code read counts among the call's."""
    done, report = diff_versions(tmp_path, READS_AT_IMPORT_MATRIX, [BASE, head(READS_AT_IMPORT)])
    assert done.code == 1, (done.err, report["notes"])
    assert changed_cells(report) == fresh_process_changes(64)
    assert "every_cell" not in report["head"]  # pure: explored


def test_explain_traces_a_cell_as_a_fresh_process_resolves_it(tmp_path: Path):
    """The trace of one cell loads the modules for that cell: the import-time value is the
    cell's, and a call counter starts at zero (SGLang's one call: fa4 gets 64)."""
    (tmp_path / "m.yaml").write_text(READS_AT_IMPORT_MATRIX)
    shas = commit_versions(
        tmp_path / "repo", [head(READS_AT_IMPORT), head(FIRST_CALL_NEW["counter"])]
    )
    for sha in shas:
        done = run_cli("explain", sha, "--repo", str(tmp_path / "repo"), "--matrix",
                       str(tmp_path / "m.yaml"), "--format", "json", "--where", "backend=fa4",
                       "--where", "page_size=1")  # fmt: skip
        assert done.code == 0, done.err
        assert json.loads(done.out)["outcome"] == {"page_size": 64}


def test_a_blind_spots_hint_loads_the_module_for_each_value_it_tries(tmp_path: Path):
    """`_GPU` is read at import from a field held at sm90: the condition on it is a blind
    spot, and the one input that takes it the other way is that field at sm100."""
    matrix = MATRIX + "fields:\n  gpu: sm90\nbindings:\n  gpu_here:\n    call: {axis: gpu}\n"
    body = """
        _GPU = gpu_here()


        def target(view):
            if _GPU == "sm100":
                return {"page_size": 64}
            if view.backend == "fa4":
                return {"page_size": 128}
            return {}
        """
    done, report = diff_versions(tmp_path, matrix, [BASE, head(body)])
    assert done.code == 4 and report["changed"] == [], (done.err, report["notes"])
    (spot,) = report["blind_spots"]
    assert spot["condition"] == "_GPU == 'sm100'"
    assert "gpu = sm100 takes it the other way" in spot["hint"], spot["hint"]


# --- what the world hands out keeps no state between cells ------------------------

WORLD_MATRIX = MATRIX + "bindings:\n  probe:\n    call: 1\n  SIZES:\n    value: [64]\n"


def test_an_attribute_set_on_a_world_function_is_refused(tmp_path: Path):
    """A flag set on a function of the world would outlive the cell (the function is the
    world's, made once): SGLang's is fresh in every process. Refused, never carried:
    already the read before it, as any attribute of a world function."""
    body = """
        def target(view):
            first = not getattr(probe, "seen", False)
            probe.seen = True
            if view.backend == "fa4":
                return {"page_size": 64 if first else 128}
            return {}
        """
    done, report = diff_versions(tmp_path, WORLD_MATRIX, [BASE, head(body)])
    assert done.code == 4 and report["changed"] == [], (done.err, report)
    note = report["notes"]["head"]
    assert "probe.seen is read at" in note and "call it instead" in note, note


def test_mutable_data_the_world_binds_is_fresh_for_every_cell(tmp_path: Path):
    """`SIZES` (a matrix binding: a list) popped by the first cell would be empty for the
    next in one loaded copy; each cell gets the list as the matrix gives it."""
    body = """
        def target(view):
            if view.backend == "fa4":
                return {"page_size": SIZES.pop() if SIZES else 128}
            return {}
        """
    done, report = diff_versions(tmp_path, WORLD_MATRIX, [BASE, head(body)])
    assert done.code == 1, (done.err, report["notes"])
    assert changed_cells(report) == fresh_process_changes(64)


# --- pure code keeps the shared path ------------------------------------------------


def evaluated(tmp_path: Path, text: str, exhaustive: bool = False, bindings: str = ""):
    (tmp_path / "m.yaml").write_text(MATRIX + ("bindings:\n" + bindings if bindings else ""))
    matrix = load_matrix(str(tmp_path / "m.yaml"))
    root = tmp_path / "repo"
    sha = commit_versions(root, [text])[0]
    versions = Versions(gitio.open_repo(str(root)), matrix)
    closure = versions.front.extract(versions.files(sha))
    return matrix, evaluate_closure(closure, matrix, versions.bound, "rev", exhaustive)


@pytest.mark.parametrize("exhaustive", [False, True])
def test_a_pure_closure_loads_its_modules_once(exhaustive: bool, tmp_path: Path):
    matrix, run = evaluated(tmp_path, BASE, exhaustive)
    assert run.loads == 1
    explored = len(AXES["backend"])  # the one axis read: one call per value of it
    assert run.calls == (matrix.size if exhaustive else explored)


def test_an_impure_closure_loads_its_modules_for_every_call_and_is_explored(tmp_path: Path):
    """Each call of code that may keep state starts from a fresh copy of its modules, so
    its outcome depends on the inputs it read alone: exploring it is exact. It runs once
    per value of the axis read, each with a load of its own, and its table is the one
    running every cell (each afresh) gives."""
    for side in ("explored", "every"):
        (tmp_path / side).mkdir()
    matrix, run = evaluated(tmp_path / "explored", head(FIRST_CALL_NEW["counter"]))
    assert run.calls == len(AXES["backend"])  # one per value of the axis read
    assert run.loads == run.calls + 1  # one first load, to refuse at once what cannot load
    _, every = evaluated(tmp_path / "every", head(FIRST_CALL_NEW["counter"]), exhaustive=True)
    assert every.calls == matrix.size and every.loads == matrix.size + 1
    assert list(run.table.codes) == list(every.table.codes)
    assert run.table.outcomes == every.table.outcomes


def test_a_pure_closure_reading_the_cell_at_import_is_explored_with_a_load_per_call(
    tmp_path: Path,
):
    """The call reads no input; its module-level code does: exploration splits on it."""
    text = (
        "_BACKEND = backend_here()\n\n\ndef target(view):\n"
        '    return {"page_size": {"fa4": 64}.get(_BACKEND, 128)}\n'
    )
    bindings = "  backend_here:\n    call: {axis: backend}\n"
    matrix, run = evaluated(tmp_path, text, bindings=bindings)
    assert run.calls == len(AXES["backend"])  # one per value of the axis read at import
    assert run.loads == run.calls + 1
    got = [run.table.outcome_at(i).value for i in range(matrix.size)]
    assert got == [64 if cell["backend"] == "fa4" else 128 for cell in cells()]


def test_a_pure_diff_says_nothing_of_every_cell(tmp_path: Path):
    pure = BASE.replace("128", "64")
    done, report = diff_versions(tmp_path, MATRIX, [BASE, pure])
    assert done.code == 1
    assert "every_cell" not in report["head"] and "every_cell" not in report["base"]
    assert changed_cells(report) == fresh_process_changes(64)


# --- state one pass leaves for another in the same resolution -------------------------

PASSES_MATRIX = EVERY_PASS_MATRIX
TWO_PASSES = """
@register_post_process
def _a(view):
    return {}

@register_post_process
def _b(view):
    return {"page_size": 128} if view.attention_backend == "flashmla" else {}
"""
MARKED = """
_MARK = []

@register_post_process
def _a(view):
    _MARK.append("a")
    return {}

@register_post_process
def _b(view):
    if view.attention_backend == "flashmla":
        return {"page_size": {1: 64}.get(len(_MARK), 128)}
    return {}
"""


CACHED = """
import functools

@functools.lru_cache(maxsize=None)
def _seen(key):
    return key

@register_post_process
def _a(view):
    _seen("a")
    return {}

@register_post_process
def _b(view):
    if view.attention_backend == "flashmla":
        return {"page_size": {1: 64}.get(_seen.cache_info().currsize, 128)}
    return {}
"""


@pytest.mark.parametrize("shared, first", [(MARKED, "_MARK = []"), (CACHED, "def _seen(key):")],
                         ids=["a-list", "a-cache"])  # fmt: skip
def test_data_one_pass_changes_for_a_later_one_is_cannot_tell(tmp_path: Path, shared, first):
    """In SGLang `_b` runs after `_a` in the same module and sees one mark (or one
    cached entry): every flashmla cell becomes 64. Each pass loaded alone, `_b` saw
    none (exit 0, no change); the harness cannot follow it, so it says so."""
    (tmp_path / "m.yaml").write_text(PASSES_MATRIX)
    base, marked = module(TWO_PASSES), module(shared)
    shas = commit_versions(tmp_path / "repo", [base, marked])
    done = run_cli("diff", *shas, "--repo", str(tmp_path / "repo"), "--matrix",
                   str(tmp_path / "m.yaml"), "--format", "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    assert done.code == 4 and report["changed"] == [], (done.err, report)
    line = marked.splitlines().index(first) + 1
    note = report["notes"]["head"]
    assert f"overrides.py:{line}: the passes _a and _b share this module-level data" in note
