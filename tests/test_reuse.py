"""A closure reused across an edit is the closure a fresh extraction finds.

Between two revisions the harness reuses the base's closure when the edit binds
no name the closure looked up (or asked about: whether a package's __init__.py
binds a name, or it is the submodule). A module-level statement the closure left out
because it changed nothing (`fill()` while `def fill` only passes) is not a
name the closure looked up; yet an edit of `fill` alone makes the unchanged
call change what the pass reads. Each shape below changes only a definition
such a statement draws on; what SGLang computes at each revision comes from
importing the checked-out files in plain Python, and the diff must report
exactly those changes, whichever revision is read first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.helpers import plain_matrix
from tests.test_unrun import CONSTS, PACKAGE, PASSES, diff, repository, sglang_page_size

PASS = '''\
"""Post-process passes (a contributor's version)."""

{top}

def target(view):
    if view.backend == "fa4":
        return {{"page_size": TABLE["fa4"]}}
    return {{}}
'''
FILL = 'TABLE = {"fa4": 128}\n\n\ndef fill():\n    pass\n\n\nfill()\n'
TABLE = 'TABLE = {"fa4": 128}\n\n\n'
# A function (or a class's method) the module calls at import through what holds it; the
# head makes it write the table.
TOP = (
    TABLE + "class K:\n    @staticmethod\n    def fill(*_):\n        pass\n\n\nfill = K.fill\n\n\n"
)
WRITES = '        TABLE["fa4"] = 64'
THROUGH = {
    "an alias called": "f = fill\nf()\n",
    "a lambda called": "f = lambda: fill()\nf()\n",
    "a loop over functions": "for fn in [fill]:\n    fn()\n",
    "a dict of functions": 'FNS = {"f": fill}\nFNS["f"]()\n',
    "map": "list(map(fill, [1]))\n",
    "a static method": "K.fill()\n",
}
# Code Python runs implicitly on an object of a class the module defines; the head makes the
# method write the table.
IMPLICIT = {
    "a property read": "class K:\n    @property\n    def prop(self):\n        x = 1\n        return 1\n\n\n"
    "OBJ = K()\nOBJ.prop\n",
    "an operator": "class K:\n    def __add__(self, other):\n        x = 1\n        return 1\n\n\n"
    "Y = K() + 1\n",
    "a test of truth": "class K:\n    def __bool__(self):\n        x = 1\n        return True\n\n\n"
    "OBJ = K()\nif OBJ:\n    pass\n",
    "an inherited __init__": "class B:\n    def __init__(self):\n        x = 1\n\n\n"
    "class K(B):\n    pass\n\n\nK()\n",
}
HELPERS = "from sglang.srt.arg_groups.consts import TABLE\n\nLIMIT = 0\n\n\ndef fill():\n    pass\n"
# The pass reads `sub` off its package: the submodule sub.py, unless __init__.py binds `sub`.
SUBMODULE = {
    PASSES: PASS.format(top="from sglang.srt.arg_groups import sub\n\nTABLE = sub.TABLE\n"),
    f"{PACKAGE}/sub.py": 'TABLE = {"fa4": 128}\n',
    f"{PACKAGE}/__init__.py": "X = 1\n",
}
# name: (base files, head files): the head edits only a definition unchanged code calls, or
# what a name the pass imports is
SHAPES = {
    "a function of the pass's file called at import": (
        {PASSES: PASS.format(top=FILL)},
        {PASSES: PASS.format(top=FILL.replace("    pass", '    TABLE["fa4"] = 64'))},
    ),
    "a decorator of another function": (
        {
            PASSES: PASS.format(
                top='TABLE = {"fa4": 128}\n\n\ndef noted(fn):\n    return fn\n\n\n'
                "@noted\ndef other():\n    pass\n"
            )
        },
        {
            PASSES: PASS.format(
                top='TABLE = {"fa4": 128}\n\n\ndef noted(fn):\n'
                '    TABLE["fa4"] = 64\n    return fn\n\n\n'
                "@noted\ndef other():\n    pass\n"
            )
        },
    ),
    "what a function returns, written to": (
        {
            PASSES: PASS.format(
                top='TABLE = {"fa4": 128}\n\n\ndef table():\n    return {}\n\n\n'
                'table()["fa4"] = 64\n'
            )
        },
        {
            PASSES: PASS.format(
                top='TABLE = {"fa4": 128}\n\n\ndef table():\n    return TABLE\n\n\n'
                'table()["fa4"] = 64\n'
            )
        },
    ),
    "a function of an imported module, called in the pass's file": (
        {
            PASSES: PASS.format(
                top="from sglang.srt.arg_groups.consts import TABLE, fill\n\nfill()\n"
            ),
            CONSTS: FILL.replace("\n\n\nfill()\n", "\n"),
        },
        {CONSTS: FILL.replace("\n\n\nfill()\n", "\n").replace("    pass", '    TABLE["fa4"] = 64')},
    ),
    **{
        name: (
            {PASSES: PASS.format(top=TOP + call)},
            {PASSES: PASS.format(top=TOP.replace("        pass", WRITES) + call)},
        )
        for name, call in THROUGH.items()
    },
    **{
        name: (
            {PASSES: PASS.format(top=TABLE + code)},
            {PASSES: PASS.format(top=TABLE + code.replace("        x = 1", WRITES))},
        )
        for name, code in IMPLICIT.items()
    },
    "a function of another file writing a name that file imports": (
        {
            PASSES: PASS.format(
                top="from sglang.srt.arg_groups.consts import TABLE\n"
                "from sglang.srt.arg_groups.helpers import LIMIT, fill\n\nfill()\n"
                "TABLE['limit'] = LIMIT\n"
            ),
            CONSTS: 'TABLE = {"fa4": 128}\n',
            f"{PACKAGE}/helpers.py": HELPERS,
        },
        {f"{PACKAGE}/helpers.py": HELPERS.replace("    pass", '    TABLE["fa4"] = 64')},
    ),
    "a class of the package's __init__ that shadows the submodule imported": (
        SUBMODULE,
        {f"{PACKAGE}/__init__.py": 'X = 1\n\n\nclass sub:\n    TABLE = {"fa4": 64}\n'},
    ),
    "a name the package's __init__ imports that shadows the submodule": (
        {**SUBMODULE, f"{PACKAGE}/other.py": 'class sub:\n    TABLE = {"fa4": 64}\n'},
        {f"{PACKAGE}/__init__.py": "X = 1\nfrom .other import sub\n"},
    ),
}


@pytest.mark.parametrize("order", ["base first", "head first"])
def test_a_package_that_imports_its_submodule_gives_the_submodule(order: str, tmp_path: Path):
    """`from . import sub` in a package's __init__.py binds the submodule: a pass that reads
    `from package import sub` reads the same module before and after it is added."""
    head = {f"{PACKAGE}/__init__.py": "X = 1\nfrom . import sub\n"}
    repo, first, second = repository(tmp_path, head, SUBMODULE)
    assert sglang_page_size(repo, first, tmp_path) == sglang_page_size(repo, second, tmp_path)
    if order == "head first":
        first, second = second, first
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 0 and report["cannot_tell"] == [], (done.err, report["cannot_tell"])


# Module-level code the head adds that writes the table through what holds it, or what
# holds a function that does.
UP = 'def _up(*_):\n    TABLE["fa4"] = 64\n\n\n'
WRITES_THROUGH = {
    "a bound method": "_up = TABLE.update\n_up(fa4=64)\n",
    "a default argument": 'def _up(t=TABLE):\n    t["fa4"] = 64\n\n\n_up()\n',
    "a lambda's default argument": "_f = lambda t=TABLE: t.update(fa4=64)\n_f()\n",
    "a comprehension over functions": UP + "_HOOKS = [_up]\n_r = [f() for f in _HOOKS]\n",
    "a dict comprehension over functions": UP + '_HOOKS = {"a": _up}\n'
                                                 "_r = {k: f() for k, f in _HOOKS.items()}\n",
    "a class attribute holding a function": UP + "class K:\n    hook = _up\n\n\nK.hook()\n",
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(WRITES_THROUGH))
@pytest.mark.parametrize("order", ["base first", "head first"])
def test_code_that_writes_through_what_holds_the_table_changes_the_cells(
    name: str, order: str, tmp_path: Path
):
    base = {PASSES: PASS.format(top=TABLE)}
    head = {PASSES: PASS.format(top=TABLE + WRITES_THROUGH[name])}
    changes_the_cells(base, head, order, tmp_path)


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("order", ["base first", "head first"])
def test_an_edit_of_what_unchanged_module_code_calls_changes_the_cells(
    name: str, order: str, tmp_path: Path
):
    base, head = SHAPES[name]
    changes_the_cells(base, head, order, tmp_path)


def changes_the_cells(base: dict, head: dict, order: str, tmp_path: Path) -> None:
    """The diff of the two revisions (in `order`) names exactly the cells whose page size
    plain Python's import of the files changes."""
    repo, first, second = repository(tmp_path, head, base)
    sizes = {sha: sglang_page_size(repo, sha, tmp_path) for sha in (first, second)}
    assert sizes[first] != sizes[second]  # SGLang's page size changed
    if order == "head first":
        first, second = second, first
    done, report = diff(tmp_path, first, second, repo)
    changed = {
        (c["cell"]["backend"], c["cell"]["page_size"], c["base"]["page_size"], c["head"]["page_size"])
        for c in report["changed"]
    }  # fmt: skip
    expected = {("fa4", page, sizes[first], sizes[second]) for page in (None, 1, 64)}
    assert done.code == 1 and changed == expected, (done.err, report["changed"])


def test_a_decorator_added_harmless_is_watched_when_it_later_writes(tmp_path: Path):
    """One run reads three commits: the second adds a use of a harmless decorator (its
    closure is the first's), the third makes the decorator write what the pass reads.
    History must name the third commit, and only it, as plain Python's results do."""
    noted = 'TABLE = {"fa4": 128}\n\n\ndef noted(fn):\n    return fn\n'
    used = noted + "\n\n@noted\ndef other():\n    pass\n"
    writes = used.replace("    return fn", '    TABLE["fa4"] = 64\n    return fn')
    repo = FixtureRepo(tmp_path / "repo")
    shas = [repo.commit(f"step {n}", {PASSES: PASS.format(top=top)})
            for n, top in enumerate((noted, used, writes))]  # fmt: skip
    sizes = [sglang_page_size(repo, sha, tmp_path) for sha in shas]
    expected = [shas[n] for n in range(1, len(shas)) if sizes[n] != sizes[n - 1]]
    assert expected == [shas[2]]
    (tmp_path / "m.yaml").write_text(plain_matrix("reuse"))
    done = run_cli("history", "--repo", str(repo.root), "--matrix", str(tmp_path / "m.yaml"),
                   "--format", "json", "--no-cache")  # fmt: skip
    found = [c["sha"] for c in json.loads(done.out)["commits"]]
    assert done.code == 1 and found == expected, done.err
