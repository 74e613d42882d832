"""No silent substitution: what SGLang runs at import, and the file's own names, count.

Each hostile head below gave "no cell changes" (exit 0) while the page size
SGLang computes changed: a module-level statement changed data a pass reads
(left out of the closure), or the file defined a name the world answers in its
place (a local `get_platform`, a wrapping `register_post_process`). Now the
first kind is part of the closure and the second is reported.

What SGLang computes is found by Python itself: the fixture files are imported
as SGLang's package layout makes them, in a plain process, afresh for every
cell (SGLang resolves one configuration per process), and the pass is called
on a view holding the cell.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from itertools import product
from pathlib import Path

import pytest

from tests.helpers import diff_versions, fa4_matrix, plain_matrix

PACKAGE = "python/sglang/srt/arg_groups"
PATH = f"{PACKAGE}/overrides.py"
AXES = {"backend": ["fa3", "fa4", "flashinfer"], "page_size": [None, 1, 64]}
MATRIX = plain_matrix("substitution")

BASE = '''\
"""Post-process passes (a contributor's version)."""

PAGE_SIZES = {"fa4": 128}


def target(view):
    if view.backend in PAGE_SIZES:
        return {"page_size": PAGE_SIZES[view.backend]}
    return {}
'''

# Module-level statements that change PAGE_SIZES when SGLang imports the file.
CHANGES = {
    "item": 'PAGE_SIZES["fa3"] = 64\n',
    "update": 'PAGE_SIZES.update({"flashinfer": 16})\n',
    "delete": 'del PAGE_SIZES["fa4"]\n',
    "alias-in-place": '_ALIAS = PAGE_SIZES\n_ALIAS |= {"fa3": 32}\n',
    "loop": 'for _name in ("fa3", "flashinfer"):\n    PAGE_SIZES[_name] = 8\n',
    "function-called": 'def _fill():\n    PAGE_SIZES["fa3"] = 4\n\n\n_fill()\n',
    "decorator": (
        'def _also(fn):\n    PAGE_SIZES["flashinfer"] = 2\n    return fn\n\n\n'
        "@_also\ndef _unused(view):\n    return {}\n"
    ),
    "through-returned-alias": ('def _table():\n    return PAGE_SIZES\n\n\n_table()["fa3"] = 96\n'),
}

# PAGE_SIZES kept in another module of the package, changed by the target's file.
SIZES_MODULE = {f"{PACKAGE}/sizes.py": 'PAGE_SIZES = {"fa4": 128}\n\n\ndef put(key, value):\n'
                "    PAGE_SIZES[key] = value\n"}  # fmt: skip
IMPORTING = BASE.replace('PAGE_SIZES = {"fa4": 128}', "from .sizes import PAGE_SIZES")
CROSS_FILE = {
    "imported-item": (IMPORTING, 'PAGE_SIZES["fa3"] = 48\n'),
    "imported-function": (
        IMPORTING.replace("import PAGE_SIZES", "import PAGE_SIZES, put"),
        'put("flashinfer", 24)\n',
    ),
}


def cells() -> list[dict]:
    return [dict(zip(AXES, values, strict=True)) for values in product(*AXES.values())]


def as_sglang_runs_it(tmp_path: Path, source: str, extra: dict[str, str] | None = None) -> list:
    """Per cell (in matrix order), what `target` returns when the files are imported as
    SGLang's package layout makes them, afresh per cell, in a plain Python process."""
    tree = tmp_path / "plain"
    package = tree / PACKAGE
    package.mkdir(parents=True, exist_ok=True)
    for level in (package, package.parent, package.parent.parent):
        (level / "__init__.py").write_text("")
    for path, text in {**(extra or {}), PATH: source}.items():
        (tree / path).write_text(text)
    script = textwrap.dedent(
        """
        import importlib, json, sys, types
        sys.path.insert(0, "python")
        out = []
        for cell in json.loads(sys.argv[1]):
            for name in [m for m in sys.modules if m.startswith("sglang")]:
                del sys.modules[name]
            module = importlib.import_module("sglang.srt.arg_groups.overrides")
            out.append(module.target(types.SimpleNamespace(**cell)))
        print(json.dumps(out))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script, json.dumps(cells())],
        cwd=tree, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(run.stdout)


def diff(tmp_path: Path, base: str, head: str, extra=None, matrix: str = MATRIX):
    return diff_versions(tmp_path, matrix, [base, head], extra)


def changed_cells(report: dict, axes=AXES) -> dict[tuple, object]:
    """The changed cells, by their axis values, with the head's resulting page size."""
    return {
        tuple(item["cell"][axis] for axis in axes): item["head"]["page_size"]
        for item in report["changed"]
    }


def expected_changes(tmp_path: Path, base: str, head: str, extra=None) -> dict[tuple, object]:
    before = as_sglang_runs_it(tmp_path / "base", base, extra)
    after = as_sglang_runs_it(tmp_path / "head", head, extra)
    return {
        tuple(cell.values()): (new.get("page_size", cell["page_size"]))
        for cell, old, new in zip(cells(), before, after, strict=True)
        if new.get("page_size", cell["page_size"]) != old.get("page_size", cell["page_size"])
    }


def line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_module_level_change_of_read_data_is_evaluated_in_order(name: str, tmp_path: Path):
    head = BASE + "\n\n" + CHANGES[name]
    expected = expected_changes(tmp_path, BASE, head)
    assert expected, "the fixture must change what SGLang computes"
    done, report = diff(tmp_path, BASE, head)
    assert done.code == 1, done.err
    assert changed_cells(report) == expected


@pytest.mark.parametrize("name", sorted(CROSS_FILE))
def test_a_change_of_data_imported_from_another_file_is_evaluated(name: str, tmp_path: Path):
    importing, change = CROSS_FILE[name]
    head = importing + "\n\n" + change
    expected = expected_changes(tmp_path, importing, head, SIZES_MODULE)
    assert expected, "the fixture must change what SGLang computes"
    done, report = diff(tmp_path, importing, head, SIZES_MODULE)
    assert done.code == 1, done.err
    assert changed_cells(report) == expected


def test_a_change_the_child_cannot_evaluate_makes_the_revision_unevaluable(tmp_path: Path):
    head = BASE + '\n\nPAGE_SIZES.update(torch.load("sizes.pt"))\n'
    done, report = diff(tmp_path, BASE, head)
    assert done.code == 4 and report["changed"] == [], done.err
    note = report["notes"]["head"]
    assert note.startswith("unevaluable"), note
    assert f"{PATH}:{line_of(head, 'torch.load')}" in note and "PAGE_SIZES" in note, note


@pytest.mark.parametrize(
    "change",
    [
        'globals()["PAGE_SIZES"] = {"fa3": 8}',
        'vars()["PAGE_SIZES"]["fa3"] = 8',
        "exec('PAGE_SIZES[\"fa3\"] = 8')",
    ],
)
def test_a_change_through_the_modules_namespace_is_unevaluable(change: str, tmp_path: Path):
    """`globals()`, `vars()` or `exec` may change any name of the module: the statement
    comes along, and the policy refuses it, naming the line."""
    head = BASE + "\n\n" + change + "\n"
    assert expected_changes(tmp_path, BASE, head), "the fixture must change what SGLang computes"
    done, report = diff(tmp_path, BASE, head)
    assert done.code == 4 and report["changed"] == [], done.err
    note = report["notes"]["head"]
    assert f"{PATH}:{line_of(head, change[:8])}" in note, note


# Module-level ways to change PAGE_SIZES the reading once missed (an adversarial review):
# each gave "no cell changes" while Python's import changes the page size.
HIDDEN = {
    "class-body-global": 'class _Tweak:\n    global PAGE_SIZES\n    PAGE_SIZES = {"fa3": 8}\n',
    "class-body-global-def": (
        "class _Tweak:\n    global target\n\n    def target(view):\n"
        '        return {"page_size": 2}\n'
    ),
    "lambda-default": '_hook = lambda x=PAGE_SIZES.update({"fa3": 8}): x\n',
    "lambda-default-setter": (
        'def _set():\n    global PAGE_SIZES\n    PAGE_SIZES = {"fa3": 8}\n\n\n'
        "_hook = lambda x=_set(): x\n"
    ),
    "computed-getattr": '_o = target\ngetattr(_o, "__glob" + "als__")["PAGE_SIZES"] = {"fa3": 8}\n',
    "computed-getattr-in-a-function": (
        'def _set():\n    getattr(target, "__glob" + "als__")["PAGE_SIZES"] = {"fa3": 8}\n\n\n'
        "_set()\n"
    ),
    "module-by-name-in-a-function": (
        "import importlib\n\n\ndef _set():\n"
        '    importlib.import_module(__name__).PAGE_SIZES = {"fa3": 8}\n\n\n_set()\n'
    ),
    "frame-globals": 'import sys\n\nsys._getframe().f_globals["PAGE_SIZES"] = {"fa3": 8}\n',
    "inspect-getmodule": 'import inspect\n\ninspect.getmodule(target).PAGE_SIZES = {"fa3": 8}\n',
    "importlib-self": (
        'import importlib\n\nimportlib.import_module(__name__).PAGE_SIZES = {"fa3": 8}\n'
    ),
}


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_a_change_the_reading_once_missed_is_never_no_change(name: str, tmp_path: Path):
    """Each is either run in order, giving what Python gives (exit 1, the changed cells
    Python's import finds), or the revision is unevaluable (exit 4): never exit 0."""
    head = BASE + "\n\n" + HIDDEN[name]
    expected = expected_changes(tmp_path, BASE, head)
    assert expected, "the fixture must change what SGLang computes"
    done, report = diff(tmp_path, BASE, head)
    assert done.code in (1, 4), (done.code, done.err, report.get("notes"))
    if done.code == 1:
        assert changed_cells(report) == expected


def test_module_level_code_that_changes_nothing_read_is_left_out(tmp_path: Path):
    """Constants, and changes of data no pass reads (even ones the harness could not run),
    stay out of the closure: the head computes what the base does."""
    head = BASE.replace(
        'PAGE_SIZES = {"fa4": 128}',
        'PAGE_SIZES = {"fa4": 128}\nLIMIT = 4 * 1024\nCACHE = {}\nCACHE["k"] = torch.zeros(LIMIT)',
    )
    assert expected_changes(tmp_path, BASE, head.replace("torch.zeros(LIMIT)", "LIMIT")) == {}
    done, report = diff(tmp_path, BASE, head)
    assert done.code == 0, (done.err, report["notes"])


# --- names the world supplies ---------------------------------------------------------

SGLANG_MATRIX = fa4_matrix("shadows")

PASSES = '''\
"""Post-process passes (a contributor's version)."""

import logging

from sglang.srt.runtime_context import get_platform

logger = logging.getLogger(__name__)
POST_PROCESS_PASSES = []


def register_post_process(fn):
    """Register a pass: SGLang's pipeline runs it."""
    POST_PROCESS_PASSES.append(fn)
    return fn


@register_post_process
def _fa4_page_constraint(view):
    if view.attention_backend == "fa4" and get_platform().is_sm100:
        logger.info("page_size forced to %d", SIZE)
        return {"page_size": SIZE}
    return {}
'''
SIZE = "SIZE = 128\n"
SHADOWS = {
    "local-get-platform": (
        "class _Platform:\n    is_sm100 = False\n\n\ndef get_platform():\n    return _Platform()\n",
        "def get_platform",
    ),
    "wrapping-register": (
        "def register_post_process(fn):\n"
        "    def wrapped(view):\n"
        "        found = fn(view)\n"
        '        return {"page_size": 1} if found else found\n'
        "    POST_PROCESS_PASSES.append(wrapped)\n"
        "    return wrapped\n",
        "def register_post_process(fn):",
    ),
    "renamed-import": (
        "from sglang.srt.platforms import hopper_platform as get_platform\n",
        "hopper_platform as get_platform",
    ),
    "walrus": ("_ = (get_platform := lambda: _Hopper())\n", "get_platform :="),
    "deleted": ("del get_platform\n", "del get_platform"),
}


def with_shadow(shadow: str) -> str:
    """The passes with `shadow` defined after the imports and the registry (as a file
    would, before the passes use it)."""
    head, tail = PASSES.split("\n\n@register_post_process")
    return head + "\n\n" + shadow + "\n\n@register_post_process" + tail + "\n" + SIZE


def fa4_sm100(size) -> dict[tuple, object]:
    """Cells the pass decides (fa4 on sm100), with `size` where the input differs."""
    return {("fa4", "sm100", p): size for p in (None, 1) if p != size}


def sglang_changed(report: dict) -> dict[tuple, object]:
    return changed_cells(report, ("attention_backend", "platform", "page_size"))


@pytest.mark.parametrize("name", sorted(SHADOWS))
def test_the_files_own_definition_of_a_world_name_is_reported(name: str, tmp_path: Path):
    shadow, text = SHADOWS[name]
    head = with_shadow(shadow)
    done, report = diff(tmp_path, PASSES + "\n" + SIZE, head, matrix=SGLANG_MATRIX)
    assert done.code == 4 and report["changed"] == [], done.err
    note = report["notes"]["head"]
    line = head[: head.index(shadow)].count("\n") + line_of(shadow, text)
    assert f"{PATH}:{line} defines" in note, note
    assert "bindings:" in note, note


def test_a_definition_a_star_import_brings_from_the_repository_is_reported(tmp_path: Path):
    local = f"{PACKAGE}/local_platform.py"
    extra = {local: "class _P:\n    is_sm100 = False\n\n\ndef get_platform():\n    return _P()\n"}
    head = with_shadow("from .local_platform import *\n")
    done, report = diff(tmp_path, PASSES + "\n" + SIZE, head, extra, matrix=SGLANG_MATRIX)
    assert done.code == 4 and report["changed"] == [], done.err
    note = report["notes"]["head"]
    assert f"{local}:{line_of(extra[local], 'def get_platform')} defines get_platform" in note


FAKE_PLATFORM = "class _P:\n    is_sm100 = False\n\n\ndef get_platform():\n    return _P()\n"
RUNTIME = "python/sglang/srt/runtime_context.py"


@pytest.mark.parametrize("chain", ["direct", "renamed", "re-exported"])
def test_a_world_name_imported_from_a_file_that_defines_it_is_reported(chain, tmp_path):
    """`from .helpers import get_platform`, where the PR's helpers.py defines its own:
    SGLang runs that definition (is_sm100 False: no page size), the world would answer
    from the cell. Through `as` or a module that re-exports it, the same."""
    helpers = f"{PACKAGE}/helpers.py"
    extra = {helpers: FAKE_PLATFORM}
    imported = "from .helpers import get_platform"
    if chain == "renamed":
        imported = "from .helpers import get_platform as get_platform"
    if chain == "re-exported":
        extra[f"{PACKAGE}/shim.py"] = "from .helpers import get_platform\n"
        imported = "from .shim import get_platform"
    base = PASSES + "\n" + SIZE
    head = base.replace("from sglang.srt.runtime_context import get_platform", imported)
    done, report = diff(tmp_path, base, head, extra, matrix=SGLANG_MATRIX)
    assert done.code == 4 and report["changed"] == [], done.err
    note = report["notes"]["head"]
    assert f"{helpers}:{line_of(FAKE_PLATFORM, 'def get_platform')} defines get_platform" in note


def test_a_world_name_imported_from_where_sglang_defines_it_is_the_worlds(tmp_path):
    """SGLang's own shape: the name imported from its home module (which defines it), or
    through a module that re-exports it from there: the world stands for it, unread."""
    extra = {
        RUNTIME: FAKE_PLATFORM,
        f"{PACKAGE}/shim.py": "from sglang.srt.runtime_context import get_platform\n",
    }
    base = PASSES + "\n" + SIZE
    head = base.replace("SIZE = 128", "SIZE = 64").replace(
        "from sglang.srt.runtime_context import get_platform", "from .shim import get_platform"
    )
    done, report = diff(tmp_path, base, head, extra, matrix=SGLANG_MATRIX)
    assert done.code == 1, done.err
    assert sglang_changed(report) == fa4_sm100(64)


def test_a_name_the_matrix_binds_on_purpose_replaces_the_files_own(tmp_path: Path):
    shadow = SHADOWS["local-get-platform"][0]
    matrix = SGLANG_MATRIX + "bindings:\n  get_platform: {call: {object: {is_sm100: true}}}\n"
    base = with_shadow(shadow).replace("SIZE = 128", "SIZE = 64")
    done, report = diff(tmp_path, base, with_shadow(shadow), matrix=matrix)
    assert done.code == 1, done.err
    # the matrix says every platform is SM100: fa4 cells go from 64 to 128 on both
    expected = {("fa4", p, s): 128 for p in ("sm90", "sm100") for s in (None, 1)}
    assert sglang_changed(report) == expected


def test_sglangs_own_shapes_of_those_names_still_evaluate(tmp_path: Path):
    """A registering decorator that returns its argument, and `logging.getLogger`: the
    world stands for them by design, as on SGLang's releases."""
    base = PASSES + "\n" + SIZE
    done, report = diff(
        tmp_path, base, base.replace("SIZE = 128", "SIZE = 64"), matrix=SGLANG_MATRIX
    )
    assert done.code == 1, done.err
    assert sglang_changed(report) == fa4_sm100(64)


def test_reading_the_registry_the_files_decorator_fills_is_unevaluable(tmp_path: Path):
    head = (
        PASSES.replace(
            'if view.attention_backend == "fa4"',
            'if len(POST_PROCESS_PASSES) > 1 or view.attention_backend == "fa4"',
        )
        + "\n"
        + SIZE
    )
    done, report = diff(tmp_path, PASSES + "\n" + SIZE, head, matrix=SGLANG_MATRIX)
    assert done.code == 4, done.err
    assert "POST_PROCESS_PASSES" in report["notes"]["head"], report["notes"]


# --- state kept between calls -----------------------------------------------------------

# Each counts the calls in state exploration does not see, and only the first call changes
# the flashinfer cells: SGLang's only call in a process, on every cell; in one loaded
# module, the harness's first call ran on an fa3 cell and no flashinfer cell changed. Run
# on every cell in a fresh copy of the module, it reaches them. No condition reads the
# count, so no condition is left untaken (which would already be a blind spot).
STATEFUL = {
    "iterator": "_CALLS = iter(range(1000))\n",
    "generator-expression": "_CALLS = (n for n in range(1000))\n",
    "generator-function": "def _counter():\n    yield from range(1000)\n\n\n_CALLS = _counter()\n",
    "in-place-on-alias": "SEEN = []\n\n\ndef _count():\n    seen = SEEN\n    n = len(seen)\n"
    "    seen += [1]\n    return n\n",
    "bound-method": "SEEN = []\n_note = SEEN.append\n\n\ndef _count():\n    n = len(SEEN)\n"
    "    _note(1)\n    return n\n",
    "bound-method-in-function": "SEEN = []\n\n\ndef _count():\n    push = SEEN.append\n"
    "    n = len(SEEN)\n    push(1)\n    return n\n",
}


def stateful(name: str) -> str:
    top = STATEFUL[name]
    count = "_count()" if "def _count()" in top else "next(_CALLS)"
    return (
        top + "\n\ndef target(view):\n"
        f"    n = {count}\n"
        '    if view.backend == "fa4":\n'
        '        return {"page_size": 128}\n'
        '    if view.backend == "flashinfer":\n'
        '        return {"page_size": ((16,) + (view.page_size,) * 1000)[n]}\n'
        "    return {}\n"
    )


STATE_BASE = '''\
"""Post-process passes (a contributor's version)."""


def target(view):
    if view.backend == "fa4":
        return {"page_size": 128}
    return {}
'''


@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_state_kept_between_calls_makes_every_cell_run(name: str, tmp_path: Path):
    head = stateful(name)
    before = as_sglang_runs_it(tmp_path / "base", STATE_BASE)
    after = as_sglang_runs_it(tmp_path / "head", head)
    expected = {
        tuple(cell.values()): new.get("page_size", cell["page_size"])
        for cell, old, new in zip(cells(), before, after, strict=True)
        if new != old
    }
    assert expected, "the fixture must change what every cell computes"
    done, report = diff(tmp_path, STATE_BASE, head)
    assert done.code == 1, done.err
    assert changed_cells(report) == expected
    assert "every_cell" in report["head"], report["head"]


NEW_VALUES = '''\
"""Post-process passes (a contributor's version)."""

NAMES = ("fa3", "fa4")
SIZES = dict(zip(NAMES, (64, 128)))
ORDER = sorted(x for x in NAMES)


def target(view):
    total = 0
    names = list(NAMES)
    names += ["flashinfer"]
    for name in names:
        total += len(name)
    label = f"{view.backend}"
    label += "!"
    if view.backend in SIZES and total > 0 and label:
        return {"page_size": SIZES[view.backend]}
    return {}
'''


def test_new_values_changed_in_place_and_used_up_iterators_keep_no_state(tmp_path: Path):
    """Accumulators, copies and iterators used up where they are made change nothing
    shared: the closure is still explored (once per decision path)."""
    done, report = diff(tmp_path, STATE_BASE, NEW_VALUES)
    assert done.code == 1, done.err
    assert "every_cell" not in report["head"], report["head"]
    sizes = {"fa3": 64, "fa4": 128}
    expected = {
        (b, p): sizes[b]
        for b, p in product(*AXES.values())
        if b == "fa3" and p != 64  # fa4 gives 128 on both sides
    }
    assert changed_cells(report) == expected
