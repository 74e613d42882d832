"""An entry's declarations as SGLang keeps them: in a stash on the configuration, never
in its fields until the resolution applies them.

SGLang's `run_post_process_pass` hands a pass a snapshot of the declarations made so
far over the configuration (`resolved_view`); `resolving_view` is a live view, each
read seeing the declarations made by then; a plain read of the configuration sees the
field as it was (or as a handler assigned it). From 0.5.19 the resolution's result is
each field's last declaration, else the field; 0.5.18's `__post_init__` applies the
stash to the fields at its end (`materialize_declarations`), after which a pass writes
through.

Each fixture is one SGLang-shaped commit; the expected outcome of every cell comes from
importing its files in plain Python and running the entry, the result read as the
fixture's own `resolution_result` reads it (or from the fields, for 0.5.18's shape),
never from harness.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.engine.outcome import ERROR
from tests.test_entry import (
    ARG_UTILS,
    BASE,
    HOOKS,
    MACHINERY,
    OVERRIDES,
    PKG,
    SERVER_ARGS,
    SNAPSHOT_VIEW,
    VALIDATE,
    cells,
    entry_matrix,
    harness_outcomes,
    imported,
    plain_outcomes,
)
from tests.test_entry_class import commit_files, diff_note

TRACED_ARGS = SERVER_ARGS + "    trace: Optional[str] = None\n"
PASSES = """

def _backend_default(view: Any) -> dict:
    if view.attention_backend is not None:
        return {}
    return {"attention_backend": "fa4" if get_platform().is_sm100 else "fa3"}


def _page_default(view: Any) -> dict:
    return {"page_size": 16} if view.page_size is None else {}
"""
PIPELINE = '''\
"""Resolution reading its declarations through each of SGLang's views, and raw."""

from sglang.srt.arg_groups.model_override_base import record_of, resolved_view, resolving_view
from sglang.srt.arg_groups.overrides import (
    _backend_default,
    _page_default,
    declare_resolution,
    run_post_process_pass,
)


def run_resolution_pipeline(server_args):
    before = resolved_view(server_args)
    live = resolving_view(server_args)
    run_post_process_pass(server_args, _backend_default)
    if live.attention_backend == "fa4":
        declare_resolution(server_args, "fa4_pages", page_size=128)
    if server_args.page_size == 64:
        server_args.page_size = 2
    run_post_process_pass(server_args, _page_default)
    seen = (server_args.attention_backend, before.attention_backend, live.attention_backend,
            record_of(live).page_size, live.page_size, resolved_view(server_args).page_size)
    server_args.trace = "|".join(str(value) for value in seen)
{more}'''
AXES = {"attention_backend": [None, "fa3"], "page_size": [None, 1, 64],
        "platform": ["sm90", "sm100"]}  # fmt: skip
OUTPUTS = ("attention_backend", "page_size", "trace")


def stash_commit(tmp_path: Path, more: str = "", pipeline: str = PIPELINE) -> tuple:
    """The fixture committed with `pipeline` (`more` at the end of its entry): (repository,
    commit, matrix file); its tree written at tmp_path / "tree"."""
    files = {
        "python/sglang/srt/server_args.py": TRACED_ARGS,
        f"{PKG}/__init__.py": "",
        f"{PKG}/arg_utils.py": ARG_UTILS,
        f"{PKG}/model_override_base.py": BASE,
        f"{PKG}/resolution_hooks.py": HOOKS,
        f"{PKG}/overrides.py": OVERRIDES + MACHINERY + PASSES,
        f"{PKG}/pipeline.py": pipeline.format(more=more),
    }
    root, sha, matrix = commit_files(tmp_path, files)
    matrix.write_text(entry_matrix("stash", AXES, OUTPUTS))
    return root, sha, matrix


def test_each_view_reads_the_declarations_as_sglangs_does(tmp_path):
    """A snapshot taken before a declaration does not see it, a live view does, a plain
    read of the configuration never does; a raw assignment shows through the views
    until a declaration of the field, and the last declaration is the result."""
    root, sha, matrix = stash_commit(tmp_path)
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected
    traces = {outcome[2] for outcome in expected}
    assert "None|None|fa4|None|128|128" in traces  # raw, snapshot before, live, record, ...
    assert ("fa3", 2, "fa3|fa3|fa3|2|2|2") in expected  # a raw write, no declaration of it
    assert ("fa4", 128, "None|None|fa4|2|128|128") in expected  # the declaration wins


@pytest.mark.parametrize(
    "more",
    [
        '    declare_resolution(server_args, "late", trace="declared")\n',
        '    server_args._resolved_overrides.append(("appended", {"page_size": 4}))\n',
        "    server_args._resolved_overrides = []\n",
        '    run_post_process_pass(server_args, lambda view: {"trace": view.trace})\n',
        "    server_args._declarations_materialized = True\n"
        '    run_post_process_pass(server_args, lambda view: {"page_size": 7})\n'
        "    server_args.trace = str(server_args.page_size)\n",
    ],
    ids=["declared", "appended", "cleared", "unmarked", "flagged"],
)
def test_what_the_entry_does_to_the_stash_is_the_result(tmp_path, more):
    """The stash is the configuration's own attribute: what the entry appends to it or
    replaces it with is what the result reads; a pass's declaration of a field not
    marked resolvable is SGLang's ValueError; from 0.5.19 a pass never writes the
    fields, whatever `_declarations_materialized` says (0.5.18's flag)."""
    root, sha, matrix = stash_commit(tmp_path, more)
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected
    if "view.trace" in more:
        assert all(outcome[0] == ERROR and "not model-overridable" in outcome[1]
                   for outcome in expected)  # fmt: skip


@pytest.mark.parametrize(
    "first, want",
    [
        ("    server_args.trace = str(len(getattr(server_args, '_raw_input', ())))\n", None),
        ("    server_args._resolved_overrides.append(1)\n",
         "AttributeError: 'ServerArgs' object has no attribute '_resolved_overrides'"),
    ],
    ids=["default", "unset"],
)  # fmt: skip
def test_a_stash_read_before_the_entry_makes_one_is_pythons_attribute_error(tmp_path, first, want):
    """A configuration SGLang has just made has no stash (nor `_raw_input`): reading it is
    Python's AttributeError (caught by `getattr`'s default), not an input the matrix
    lacks."""
    pipeline = PIPELINE.replace("    before = ", first + "    before = ")
    root, sha, matrix = stash_commit(tmp_path, pipeline=pipeline)
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected
    if want is not None:
        assert expected == [(ERROR, want)] * len(expected)


# --- 0.5.18's shape: `__post_init__` applies the stash to the fields at its end ---------

MATERIALIZING = (
    '''\
# Written for harness's tests, shaped like SGLang's overrides.py up to 0.5.18.
"""Passes run at their handler's slot; the stash applied to the fields at the end."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Optional

from sglang.srt.arg_groups.arg_utils import resolvable_fields
from sglang.srt.runtime_context import get_platform


'''
    + SNAPSHOT_VIEW
    + """

def run_post_process_pass(server_args: Any, fn: Callable[..., dict]) -> None:
    declared = fn(resolved_view(server_args))
    if not isinstance(declared, dict):
        raise TypeError(f"post-process pass {fn.__qualname__} must return a dict")
    if declared:
        entry = (fn.__qualname__, dict(declared))
        stash = getattr(server_args, "_resolved_overrides", None)
        if stash is None:
            stash = server_args._resolved_overrides = []
        stash.append(entry)
        validate_declarations(server_args, [entry])
        if getattr(server_args, "_declarations_materialized", False):
            for field, value in declared.items():
                object.__setattr__(server_args, field, value)


def materialize_declarations(server_args: Any) -> None:
    for _source, declared in getattr(server_args, "_resolved_overrides", None) or ():
        for field, value in declared.items():
            setattr(server_args, field, value)
    server_args._declarations_materialized = True


"""
    + VALIDATE
    + PASSES
)
POST_INIT = '''\
# Written for harness's tests, shaped like SGLang's server_args.py up to 0.5.18.
"""Server arguments, resolved by `__post_init__` through the declaration stash."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

from sglang.srt.arg_groups.arg_utils import Arg


@dataclasses.dataclass
class ServerArgs:
    attention_backend: Annotated[Optional[str], Arg(resolvable=True)] = None
    page_size: Annotated[Optional[int], Arg(resolvable=True)] = None
    trace: Annotated[Optional[str], Arg(resolvable=True)] = None

    def __setattr__(self, name, value):
        if not name.startswith("_") and getattr(self, "_declarations_materialized", False):
            raise AttributeError(f"server_args.{{name}} assigned after resolution")
        object.__setattr__(self, name, value)

    def __post_init__(self):
        from sglang.srt.arg_groups.overrides import (
            _backend_default,
            _page_default,
            materialize_declarations,
            resolved_view,
            run_post_process_pass,
        )

        self._resolved_overrides = []
        run_post_process_pass(self, _backend_default)
        seen = [self.attention_backend, resolved_view(self).attention_backend]
        materialize_declarations(self)
        seen.append(self.attention_backend)
        run_post_process_pass(self, _page_default)
        seen.append(self.page_size)
{more}        trace = "|".join(str(value) for value in seen)
        run_post_process_pass(self, lambda view: {{"trace": trace}})
'''
POST_INIT_MATRIX = """\
name: materialized
target: {path: python/sglang/srt/server_args.py, entry: ServerArgs.__post_init__,
         output: [attention_backend, page_size, trace]}
world: sglang
axes:
  attention_backend: [null, fa3]
  page_size: [null, 1, 64]
  platform: [sm90, sm100]
"""
DUMMY = '"""Nothing to run: the configuration resolves as it is made."""\n\n\ndef run_resolution_pipeline(server_args):\n    return None\n'


def post_init_plain(root: Path) -> list:
    """Per cell, what `ServerArgs(**inputs)` resolves from the files at `root` in plain
    Python: its fields after `__post_init__`, or the error it raised."""
    found = []
    for cell in cells(AXES):
        inputs = {k: v for k, v in cell.items() if k != "platform"}
        with imported(root, cell["platform"]) as (configuration, _run):
            try:
                made = configuration(**inputs)
            except Exception as exc:  # every error is an outcome, as the harness has it
                found.append((ERROR, f"{type(exc).__name__}: {exc}"))
                continue
        found.append(tuple(getattr(made, field) for field in OUTPUTS))
    return found


@pytest.mark.parametrize(
    "more",
    ["", '        self._declarations_materialized = False\n'
     '        run_post_process_pass(self, lambda view: {"page_size": 5})\n'],
    ids=["applied", "unmaterialized"],
)  # fmt: skip
def test_a_post_init_entry_applies_its_stash_as_sglangs_does(tmp_path, more):
    """Before `materialize_declarations` a plain read sees the field as it was; after,
    the declared value, and a pass writes through (its own write, which the class's
    guard lets pass); unset the flag, and a pass's declaration stays in the stash."""
    root, sha, matrix = post_init_commit(tmp_path, more)
    expected = post_init_plain(tmp_path / "tree")
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected
    if not more:
        assert ("fa4", 16, "None|fa4|fa4|16") in expected
        assert ("fa3", 64, "fa3|fa3|fa3|64") in expected


def test_a_post_init_entrys_snapshot_is_its_fields_as_an_output(tmp_path):
    """A `__post_init__` entry's outcome is its fields as it leaves them: a snapshot of
    them it keeps (`self._raw_input = {...}`, counted where read) is the dict it is,
    which as an output is no plain value (the documented error), as written code's is."""
    more = ("        class Field:\n"
            "            def __init__(self, name):\n"
            "                self.name = name\n\n"
            "        fields = [Field('attention_backend'), Field('page_size')]\n"
            "        self._raw_input = {\n"
            "            field.name: getattr(self, field.name) for field in fields\n"
            "        }\n")  # fmt: skip
    root, sha, matrix = post_init_commit(tmp_path, more)
    matrix.write_text(POST_INIT_MATRIX.replace("trace]", "trace, _raw_input]"))
    found = harness_outcomes(root, sha, matrix, outputs=(*OUTPUTS, "_raw_input"))
    error = "TypeError: _raw_input is a dict, not a plain value"
    assert all(kind == ERROR and why.startswith(error) for kind, why in found), found


def post_init_commit(tmp_path: Path, more: str) -> tuple[Path, str, Path]:
    files = {
        "python/sglang/srt/server_args.py": POST_INIT.format(more=more),
        f"{PKG}/__init__.py": "",
        f"{PKG}/arg_utils.py": ARG_UTILS,
        f"{PKG}/overrides.py": MATERIALIZING,
    }
    root, sha, matrix = commit_files(tmp_path, files)
    (tmp_path / "tree" / PKG / "pipeline.py").write_text(DUMMY)  # plain Python imports it
    matrix.write_text(POST_INIT_MATRIX)
    return root, sha, matrix


def test_a_field_assigned_after_the_stash_is_applied_is_refused(tmp_path):
    """SGLang's `ServerArgs.__setattr__` refuses a field assigned once the stash is on
    the fields (an AttributeError here in plain Python); the harness does not run the
    class's own code, so it refuses the assignment, naming its line."""
    root, sha, matrix = post_init_commit(tmp_path, "        self.page_size = 3\n")
    expected = post_init_plain(tmp_path / "tree")
    assert set(expected) == {(ERROR, "AttributeError: server_args.page_size assigned after "
                                     "resolution")}  # fmt: skip
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and "view.page_size is assigned at" in note and "__setattr__" in note, note


@pytest.mark.parametrize(
    "more, what",
    [
        ('    server_args._resolved_overrides = [("x", [("page_size", 1)])]\n'
         "    run_post_process_pass(server_args, _page_default)\n",
         "_resolved_overrides of another shape"),
        ("    setattr(before, 'page_size', 1)\n", "view.page_size is assigned"),
        ("    server_args.trace = str(len({server_args}))\n", "hash() of ServerArgs"),
    ],
    ids=["stash-shape", "setattr-of-a-view", "hash"],
)  # fmt: skip
def test_what_the_world_cannot_follow_is_refused_by_line(tmp_path, more, what):
    """A stash that is not SGLang's list of (source, dict) pairs, and `setattr` of a
    read-only view (as `view.x = ...` is), make the revision unevaluable with the
    reason: never a result SGLang would not give."""
    root, sha, matrix = stash_commit(tmp_path, more)
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and what in note and "pipeline.py:" in note, note


def test_setattr_of_the_configuration_is_an_assignment(tmp_path):
    """`setattr(server_args, name, value)` in an entry is what `server_args.name = value`
    is: a write to the configuration the entry is handed."""
    more = "    setattr(server_args, 'trace', 'set')\n"
    root, sha, matrix = stash_commit(tmp_path, more)
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected
    assert {outcome[2] for outcome in expected} == {"set"}


SETTING = """\
    class Phase:
        def __init__(self):
            self.backend = "full"

    phases = {"prefill": Phase(), "decode": Phase()}
    key = "backend" if server_args.page_size is None else "max_bs"
    setattr(phases["prefill"], key, live.attention_backend)
    server_args.trace = f"{phases['prefill'].backend}|{getattr(phases['prefill'], 'max_bs', 0)}"
"""


def test_setattr_of_the_codes_own_object_is_pythons(tmp_path):
    """`setattr` on an object the code made (SGLang's cuda-graph parser sets each phase's
    keys so) does what Python does, explored as every cell is: the closure names
    setattr, so each call loads the code anew."""
    root, sha, matrix = stash_commit(tmp_path, SETTING)
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)
    assert {outcome[2] for outcome in expected} == {"fa3|0", "full|fa3", "fa4|0", "full|fa4"}
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected
    assert harness_outcomes(root, sha, matrix, exhaustive=True, outputs=OUTPUTS) == expected


SHARED = '''\
"""Resolution whose stash is a list kept at module level (or a default argument)."""

from sglang.srt.arg_groups.overrides import _backend_default, run_post_process_pass

_SHARED = []


def list(*items):
    return _SHARED


def run_resolution_pipeline(server_args, kept=[]):
    {stash}
    run_post_process_pass(server_args, _backend_default)
'''


@pytest.mark.parametrize(
    "stash",
    ["server_args._resolved_overrides = _SHARED", "server_args._resolved_overrides = kept",
     "server_args._resolved_overrides, n = _SHARED, 0",
     "server_args._resolved_overrides = list()"],
    ids=["module", "default", "unpacked", "rebound-list"],
)  # fmt: skip
@pytest.mark.parametrize("exhaustive", [False, True])
def test_a_stash_kept_between_calls_is_never_seen_by_another_cell(tmp_path, stash, exhaustive):
    """The world appends to the list the entry made its stash: one kept at module level
    (or a default argument) outlives the call, so the code runs each cell in a fresh
    load, as a process resolving one configuration would: no cell sees another's."""
    root, sha, matrix = stash_commit(tmp_path, pipeline=SHARED.replace("{stash}", stash))
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)
    assert {o[0] for o in expected} == {"fa3", "fa4"}  # sm90 and sm100 differ
    assert harness_outcomes(root, sha, matrix, exhaustive, OUTPUTS) == expected


def test_a_bookkeeping_field_the_class_declares_is_its_default(tmp_path):
    """`_raw_input` is missing on a configuration just made, unless its class declares
    it: then it is the field's default, as in Python."""
    more = "    server_args.trace = str(getattr(server_args, '_raw_input', 'missing'))\n"
    root, sha, matrix = stash_commit(tmp_path, more)
    assert {o[2] for o in plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)} == {"missing"}
    args = TRACED_ARGS + "    _raw_input: Optional[dict] = None\n"
    (tmp_path / "again").mkdir()
    files = {**_tree(tmp_path), "python/sglang/srt/server_args.py": args}
    root, sha, matrix = commit_files(tmp_path / "again", files)
    matrix.write_text(entry_matrix("stash", AXES, OUTPUTS))
    expected = plain_outcomes(tmp_path / "again" / "tree", AXES, OUTPUTS)
    assert {o[2] for o in expected} == {"None"}
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected


def _tree(tmp_path: Path) -> dict[str, str]:
    """The files of the fixture written under `tmp_path / "tree"`, by repository path."""
    tree = tmp_path / "tree"
    return {str(p.relative_to(tree)): p.read_text() for p in tree.rglob("*.py")}


def test_a_pass_writes_through_the_mapping_it_returned(tmp_path):
    """Once the stash is on the fields, a pass's declaration is written from what the
    pass returned (its own `items()`), as SGLang's `_apply_fields(server_args, declared)`
    does; the stash keeps `dict(declared)`."""
    more = (
        "        class Declared(dict):\n"
        "            def items(self):\n"
        '                return [("page_size", 99)]\n'
        "        run_post_process_pass(self, lambda view: Declared(page_size=3))\n"
    )
    root, sha, matrix = post_init_commit(tmp_path, more)
    expected = post_init_plain(tmp_path / "tree")
    assert {o[1] for o in expected} == {99}
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected


def test_a_pass_result_cannot_write_a_field_as_the_world_writes_it_through(tmp_path):
    """The mapping a pass returns is its own code: what its `items()` assigns runs under
    the class's guard, as in SGLang (an AttributeError there), refused here."""
    more = (
        "        me = self\n"
        "        class Declared(dict):\n"
        "            def items(self):\n"
        '                me.attention_backend = "sneaky"\n'
        '                return [("page_size", 3)]\n'
        "        run_post_process_pass(self, lambda view: Declared(page_size=3))\n"
    )
    root, sha, matrix = post_init_commit(tmp_path, more)
    assert {o[0] for o in post_init_plain(tmp_path / "tree")} == {ERROR}
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and "view.attention_backend is assigned" in note, note
