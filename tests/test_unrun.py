"""Module-level code SGLang runs and the harness does not: a change there is named.

A pass reads `TABLE` from its package's `consts.py`. A pull request that leaves
the pass alone but changes what `TABLE` holds by the time SGLang calls it, from
code no closure draws (a package's `__init__.py`, a module the pass's file now
imports, a write to a module's attribute), changes SGLang's page size and
nothing the harness evaluates. What SGLang computes is worked out here by
importing the checked-out files in a plain Python process; the diff must then
say "cannot tell" (exit 4) naming the statement, never "no change". Changes
that cannot reach what the pass reads stay silent (exit 0).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.scan import unrun
from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.helpers import plain_matrix

PACKAGE = "python/sglang/srt/arg_groups"
PASSES = f"{PACKAGE}/overrides.py"
CONSTS = f"{PACKAGE}/consts.py"
PASS = '''\
"""Post-process passes (a contributor's version)."""

from sglang.srt.arg_groups.consts import TABLE
{extra}

def target(view):
    if view.backend == "fa4":
        return {{"page_size": TABLE["fa4"]}}
    return {{}}
'''
BASE = {PASSES: PASS.format(extra=""), CONSTS: 'TABLE = {"fa4": 128}\n'}

TUNING = 'from .consts import TABLE\n\nTABLE.update({"fa4": 64})\n'
# name: (files the head adds or changes, the statement the diff must name: path, text)
REACHING = {
    "a package's __init__": (
        {f"{PACKAGE}/__init__.py": 'from sglang.srt.arg_groups.consts import TABLE\n\n'
                                   'TABLE["fa4"] = 64\n'},
        (f"{PACKAGE}/__init__.py", 'TABLE["fa4"] = 64'),
    ),
    "a module newly imported": (
        {PASSES: PASS.format(extra="import sglang.srt.arg_groups.tuning\n"),
         f"{PACKAGE}/tuning.py": 'from .consts import TABLE\n\nTABLE.update({"fa4": 64})\n'},
        (f"{PACKAGE}/tuning.py", 'TABLE.update({"fa4": 64})'),
    ),
    "a module imported as a package's name": (
        {f"{PACKAGE}/__init__.py": "from . import tuning\n",
         f"{PACKAGE}/tuning.py": 'from .consts import TABLE\n\nTABLE.update({"fa4": 64})\n'},
        (f"{PACKAGE}/tuning.py", 'TABLE.update({"fa4": 64})'),
    ),
    "an alias through a loop": (
        {f"{PACKAGE}/__init__.py": 'from .consts import TABLE\n\nfor _t in (TABLE,):\n'
                                   '    _t["fa4"] = 64\n'},
        (f"{PACKAGE}/__init__.py", "for _t in (TABLE,):"),
    ),
    "an annotation of a def": (
        {f"{PACKAGE}/__init__.py": 'from .consts import TABLE\n\n\n'
                                   'def _h(x: TABLE.update({"fa4": 64})):\n    return x\n'},
        (f"{PACKAGE}/__init__.py", "def _h(x: TABLE.update({'fa4': 64})):"),
    ),
    "a function of the closure's file": (
        {f"{PACKAGE}/__init__.py": "from .consts import set_fa4\n\nset_fa4(64)\n",
         CONSTS: 'TABLE = {"fa4": 128}\n\n\ndef set_fa4(value):\n    TABLE["fa4"] = value\n'},
        (f"{PACKAGE}/__init__.py", "set_fa4(64)"),
    ),
    "a module imported in a class's body": (
        {f"{PACKAGE}/__init__.py": "class _Loader:\n    import sglang.srt.arg_groups.tuning\n",
         f"{PACKAGE}/tuning.py": TUNING},
        (f"{PACKAGE}/tuning.py", 'TABLE.update({"fa4": 64})'),
    ),
    "a module imported by a function called at import": (
        {f"{PACKAGE}/__init__.py": "def _load():\n    from . import tuning\n\n\n_load()\n",
         f"{PACKAGE}/tuning.py": TUNING},
        (f"{PACKAGE}/tuning.py", 'TABLE.update({"fa4": 64})'),
    ),
    "a module the pass imports when it runs": (
        {PASSES: PASS.format(extra="").replace(
            "    if view.backend", "    import sglang.srt.arg_groups.tuning  # noqa: F401\n"
                                   "    if view.backend"),
         f"{PACKAGE}/tuning.py": TUNING},
        (f"{PACKAGE}/tuning.py", 'TABLE.update({"fa4": 64})'),
    ),
    "a module importlib imports": (
        {f"{PACKAGE}/__init__.py": 'import importlib\n\nimportlib.import_module(".tuning", '
                                   '"sglang.srt.arg_groups")\n',
         f"{PACKAGE}/tuning.py": TUNING},
        (f"{PACKAGE}/tuning.py", 'TABLE.update({"fa4": 64})'),
    ),
    "a module importlib imports by a name made at run time": (
        {f"{PACKAGE}/__init__.py": 'import importlib\n\n_NAME = "sglang.srt.arg_groups." + "tuning"'
                                   "\nimportlib.import_module(_NAME)\n",
         f"{PACKAGE}/tuning.py": TUNING},
        (f"{PACKAGE}/__init__.py", "importlib.import_module(_NAME)"),
    ),
    "a package above a module newly imported": (
        {PASSES: PASS.format(extra="import sglang.srt.arg_groups.sub.empty\n"),
         f"{PACKAGE}/sub/__init__.py": 'from ..consts import TABLE\n\nTABLE.update({"fa4": 64})\n',
         f"{PACKAGE}/sub/empty.py": "X = 1\n"},
        (f"{PACKAGE}/sub/__init__.py", 'TABLE.update({"fa4": 64})'),
    ),
    "a module importlib imports under another name": (
        {f"{PACKAGE}/__init__.py": "from importlib import import_module as _im\n\n"
                                   '_im("sglang.srt.arg_groups.tuning")\n',
         f"{PACKAGE}/tuning.py": TUNING},
        (f"{PACKAGE}/__init__.py", '_im("sglang.srt.arg_groups.tuning")'),
    ),
    "a module runpy runs": (
        {f"{PACKAGE}/__init__.py": 'import runpy\n\nrunpy.run_module("sglang.srt.arg_groups.tuning", '
                                   'run_name="sglang.srt.arg_groups.tuning")\n',
         f"{PACKAGE}/tuning.py": 'from sglang.srt.arg_groups.consts import TABLE\n\n'
                                 'TABLE.update({"fa4": 64})\n'},
        (f"{PACKAGE}/__init__.py", 'runpy.run_module("sglang.srt.arg_groups.tuning", '
                                   'run_name="sglang.srt.arg_groups.tuning")'),
    ),
    "a module imported two calls down": (
        {f"{PACKAGE}/__init__.py": "def _inner():\n    from . import tuning\n\n\n"
                                   "def _load():\n    _inner()\n\n\n_load()\n",
         f"{PACKAGE}/tuning.py": TUNING},
        (f"{PACKAGE}/tuning.py", 'TABLE.update({"fa4": 64})'),
    ),
    "a module a class imports when made": (
        {f"{PACKAGE}/__init__.py": "class _Loader:\n    def __init__(self):\n"
                                   "        from . import tuning\n\n\n_Loader()\n",
         f"{PACKAGE}/tuning.py": TUNING},
        (f"{PACKAGE}/tuning.py", 'TABLE.update({"fa4": 64})'),
    ),
    "a module a decorator imports": (
        {f"{PACKAGE}/__init__.py": "def _reg(fn):\n    from . import tuning\n    return fn\n\n\n"
                                   "@_reg\ndef _f():\n    pass\n",
         f"{PACKAGE}/tuning.py": TUNING},
        (f"{PACKAGE}/tuning.py", 'TABLE.update({"fa4": 64})'),
    ),
    "a module a lambda imports": (
        {f"{PACKAGE}/__init__.py": "import importlib\n\n(lambda: importlib.import_module("
                                   '"sglang.srt.arg_groups.tuning"))()\n',
         f"{PACKAGE}/tuning.py": TUNING},
        (f"{PACKAGE}/tuning.py", 'TABLE.update({"fa4": 64})'),
    ),
    "a module's attribute": (
        {"python/sglang/srt/__init__.py": "import sglang.srt.arg_groups.consts as _c\n\n"
                                         '_c.TABLE = {"fa4": 64}\n'},
        ("python/sglang/srt/__init__.py", "_c.TABLE = {'fa4': 64}"),
    ),
}  # fmt: skip
# A module both revisions import, changed (name: base files, head files, the statement).
BOTH = {
    f"{PACKAGE}/tuning.py": "from .consts import TABLE\n",
    PASSES: PASS.format(extra="import sglang.srt.arg_groups.tuning\n"),
}
# Changes that cannot reach TABLE: SGLang's page size stays 128, and so does the report.
SILENT = {
    "data of its own the pass never reads": {
        PASSES: PASS.format(extra='\n_SEEN = {}\n_SEEN["x"] = 1\n'),
    },
    "a new import of a module of definitions": {
        PASSES: PASS.format(extra="import sglang.srt.arg_groups.helpers\n"),
        f"{PACKAGE}/helpers.py": '"""Helpers."""\n\nLIMIT = 4\n\n\ndef twice(x):\n    return 2 * x\n',
    },
    "a new import, inside the pass, of a module of definitions": {
        PASSES: PASS.format(extra="").replace(
            "    if view.backend", "    import sglang.srt.arg_groups.helpers  # noqa: F401\n"
                                   "    if view.backend"),
        f"{PACKAGE}/helpers.py": '"""Helpers."""\n\nLIMIT = 4\n',
    },
    "a package's __init__ that only imports": {
        f"{PACKAGE}/__init__.py": "from sglang.srt.arg_groups.consts import TABLE\n",
    },
}  # fmt: skip


# Two imports down or more, in modules both revisions import (name: the base's files
# besides BASE, the head's changes, the statement the diff must name: path, text).
IMPORTS_A = PASS.format(extra="import sglang.srt.arg_groups.a\n")
CALLS_SETUP = "from .helpers import setup\n\nsetup()\n"
DEEPER = {
    "a module two imports down": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": "from . import b\n",
         f"{PACKAGE}/b.py": "from .consts import TABLE\n"},
        {f"{PACKAGE}/b.py": TUNING},
        (f"{PACKAGE}/b.py", 'TABLE.update({"fa4": 64})'),
    ),
    "a function another module calls at import": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": CALLS_SETUP,
         f"{PACKAGE}/helpers.py": "def setup():\n    pass\n"},
        {f"{PACKAGE}/helpers.py": 'def setup():\n    from .consts import TABLE\n\n'
                                  '    TABLE["fa4"] = 64\n'},
        (f"{PACKAGE}/helpers.py", "def setup():"),
    ),
    "a function another module calls, through what its file imports": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": CALLS_SETUP,
         f"{PACKAGE}/helpers.py": "def setup():\n    pass\n"},
        {f"{PACKAGE}/helpers.py": 'from . import consts\n\n\ndef setup():\n'
                                  '    consts.TABLE["fa4"] = 64\n'},
        (f"{PACKAGE}/helpers.py", "def setup():"),
    ),
    "a module a function of another module imports": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": CALLS_SETUP,
         f"{PACKAGE}/helpers.py": "def setup():\n    pass\n"},
        {f"{PACKAGE}/helpers.py": "def setup():\n    from . import tuning  # noqa: F401\n",
         f"{PACKAGE}/tuning.py": TUNING},
        (f"{PACKAGE}/tuning.py", 'TABLE.update({"fa4": 64})'),
    ),
    "a name written through a third module that imports it": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": "from . import b\n",
         f"{PACKAGE}/c.py": "from .consts import TABLE as T\n", f"{PACKAGE}/b.py": "X = 1\n"},
        {f"{PACKAGE}/b.py": 'from .c import T\n\nT["fa4"] = 64\n'},
        (f"{PACKAGE}/b.py", 'T["fa4"] = 64'),
    ),
    "a changed value unchanged code writes into the table": (
        {f"{PACKAGE}/__init__.py": "from .consts import TABLE\nfrom .defaults import FA4\n\n"
                                   'TABLE["fa4"] = FA4\n', f"{PACKAGE}/defaults.py": "FA4 = 128\n"},
        {f"{PACKAGE}/defaults.py": "FA4 = 64\n"},
        (f"{PACKAGE}/defaults.py", "FA4 = 64"),
    ),
    "a changed function unchanged code hands the table to": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": "from .consts import TABLE\nfrom .helpers import "
                                               "setup\n\nsetup(TABLE)\n",
         f"{PACKAGE}/helpers.py": "def setup(t):\n    pass\n"},
        {f"{PACKAGE}/helpers.py": 'def setup(t):\n    t["fa4"] = 64\n'},
        (f"{PACKAGE}/helpers.py", "def setup(t):"),
    ),
    "a changed method of a class made at import": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": "from .helpers import Setup\n\nSetup().run()\n",
         f"{PACKAGE}/helpers.py": "from .consts import TABLE\n\n\nclass Setup:\n"
                                  "    def run(self):\n        pass\n"},
        {f"{PACKAGE}/helpers.py": "from .consts import TABLE\n\n\nclass Setup:\n"
                                  '    def run(self):\n        TABLE["fa4"] = 64\n'},
        (f"{PACKAGE}/helpers.py", "class Setup:"),
    ),
    "a changed function that calls an unchanged writer": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": CALLS_SETUP,
         f"{PACKAGE}/writer.py": 'from . import consts\n\n\ndef poke():\n    consts.TABLE["fa4"] = 64\n',
         f"{PACKAGE}/helpers.py": "from .writer import poke\n\n\ndef setup():\n    pass\n"},
        {f"{PACKAGE}/helpers.py": "from .writer import poke\n\n\ndef setup():\n    poke()\n"},
        (f"{PACKAGE}/helpers.py", "def setup():"),
    ),
    "a module's namespace written through vars": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": "from . import b\n", f"{PACKAGE}/b.py": "X = 1\n"},
        {f"{PACKAGE}/b.py": 'from . import consts\n\nvars(consts)["TABLE"]["fa4"] = 64\n'},
        (f"{PACKAGE}/b.py", 'vars(consts)["TABLE"]["fa4"] = 64'),
    ),
}  # fmt: skip
# The same shapes, changed where they cannot reach TABLE: SGLang's page size stays 128.
DEEPER_SILENT = {
    "a function that changes what it is handed, not the table": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": "from . import helpers\n",
         f"{PACKAGE}/helpers.py": "from .consts import TABLE\n"},
        {f"{PACKAGE}/helpers.py": "from .consts import TABLE\n\n\ndef fill(d):\n    d.update(TABLE)\n"},
    ),
    "a registry of another module the passes do not read": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": "from . import b\n", f"{PACKAGE}/registry.py": "REG = {}\n",
         f"{PACKAGE}/b.py": "from . import registry\nfrom .consts import TABLE\n"},
        {f"{PACKAGE}/b.py": 'from . import registry\nfrom .consts import TABLE\n\n'
                            'registry.REG["fa4"] = TABLE["fa4"]\n'},
    ),
    "a module two imports down": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": "from . import b\n",
         f"{PACKAGE}/b.py": "from .consts import TABLE\n\nLIMIT = 1\n"},
        {f"{PACKAGE}/b.py": "from .consts import TABLE\n\nLIMIT = 2\n"},
    ),
    "a function another module calls at import": (
        {PASSES: IMPORTS_A, f"{PACKAGE}/a.py": CALLS_SETUP,
         f"{PACKAGE}/helpers.py": "def setup():\n    pass\n"},
        {f"{PACKAGE}/helpers.py": "from .consts import TABLE\n\n\ndef setup():\n"
                                  '    return TABLE["fa4"] * 2\n'},
    ),
}  # fmt: skip


def repository(tmp_path: Path, head: dict[str, str], base: dict | None = None):
    repo = FixtureRepo(tmp_path / "repo")
    first = repo.commit("base", base or BASE)
    second = repo.commit("head", head)
    return repo, first, second


def sglang_page_size(repo: FixtureRepo, sha: str, tmp_path: Path, fails: bool = False) -> object:
    """What SGLang's import of the pass gives an fa4 configuration at `sha`: the files
    checked out and imported by plain Python (our own trusted fixture text); with `fails`,
    "error" when the import or the call raises."""
    out = tmp_path / f"checkout-{sha[:8]}"
    subprocess.run(["git", "-C", str(repo.root), "worktree", "add", "-q", str(out), sha],
                   check=True)  # fmt: skip
    code = textwrap.dedent("""\
        import types
        from sglang.srt.arg_groups.overrides import target
        print(target(types.SimpleNamespace(backend="fa4")).get("page_size"))
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=out / "python", text=True,
                          capture_output=True, check=not fails)  # fmt: skip
    return json.loads(done.stdout) if done.returncode == 0 else "error"


def diff(tmp_path: Path, first: str, second: str, repo: FixtureRepo):
    (tmp_path / "m.yaml").write_text(plain_matrix("unrun"))
    done = run_cli("diff", first, second, "--repo", str(repo.root), "--matrix",
                   str(tmp_path / "m.yaml"), "--format", "json", "--no-cache")  # fmt: skip
    return done, json.loads(done.out)


@pytest.mark.parametrize("name", sorted(REACHING))
def test_code_that_changes_what_the_pass_reads_is_named(name: str, tmp_path: Path):
    head, (path, text) = REACHING[name]
    repo, first, second = repository(tmp_path, head)
    assert sglang_page_size(repo, first, tmp_path) == 128
    assert sglang_page_size(repo, second, tmp_path) == 64  # SGLang's page size changed
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 4 and report["changed"] == [], (done.err, report)
    spots = [(s["path"], s["condition"].replace("'", '"'), s["seen"])
             for s in report["blind_spots"]]  # fmt: skip
    assert (path, text.replace("'", '"'), "never run") in spots, spots
    (spot,) = [s for s in report["blind_spots"] if s["path"] == path]
    source = (tmp_path / f"checkout-{second[:8]}" / path).read_text()
    assert source.splitlines()[spot["line"] - 1].replace('"', "'") == text.replace('"', "'")


@pytest.mark.parametrize("name", sorted(SILENT))
def test_code_that_cannot_reach_it_stays_silent(name: str, tmp_path: Path):
    repo, first, second = repository(tmp_path, SILENT[name])
    assert sglang_page_size(repo, first, tmp_path) == 128
    assert sglang_page_size(repo, second, tmp_path) == 128
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 0 and report["blind_spots"] == [], (done.err, report)


@pytest.mark.parametrize("name", sorted(DEEPER))
def test_a_change_further_down_that_reaches_it_is_named(name: str, tmp_path: Path):
    """SGLang's import of its package runs these, the base's and the head's alike; the
    change is not in a module the passes' file imports itself."""
    before, head, (path, text) = DEEPER[name]
    repo, first, second = repository(tmp_path, head, {**BASE, **before})
    assert sglang_page_size(repo, first, tmp_path) == 128
    assert sglang_page_size(repo, second, tmp_path) == 64
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 4 and report["changed"] == [], (done.err, report)
    spots = [(s["path"], s["condition"].replace("'", '"')) for s in report["blind_spots"]]
    assert (path, text.replace("'", '"')) in spots, spots


@pytest.mark.parametrize("name", sorted(DEEPER_SILENT))
def test_a_change_further_down_that_cannot_reach_it_stays_silent(name: str, tmp_path: Path):
    before, head = DEEPER_SILENT[name]
    repo, first, second = repository(tmp_path, head, {**BASE, **before})
    assert sglang_page_size(repo, first, tmp_path) == 128
    assert sglang_page_size(repo, second, tmp_path) == 128
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 0 and report["blind_spots"] == [], (done.err, report)


def test_a_change_further_down_in_the_working_tree_is_named(tmp_path: Path):
    """At the terminal, against the working tree: the changed files are git's (staged or
    not, untracked too), and asking leaves the repository as it was."""
    before, head, (path, text) = DEEPER["a module two imports down"]
    repo = FixtureRepo(tmp_path / "repo")
    first = repo.commit("base", {**BASE, **before})
    for name, content in head.items():
        (repo.root / name).write_text(content)
    status = repo.git("status", "--porcelain")
    index = (repo.root / ".git" / "index").read_bytes()
    (tmp_path / "m.yaml").write_text(plain_matrix("unrun"))
    done = run_cli("diff", first, "--repo", str(repo.root), "--matrix", str(tmp_path / "m.yaml"),
                   "--format", "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    assert done.code == 4 and report["changed"] == [], (done.err, report)
    spots = {(s["path"], s["condition"].replace("'", '"')) for s in report["blind_spots"]}
    assert (path, text) in spots, spots
    assert (repo.root / ".git" / "index").read_bytes() == index  # before git status writes it
    assert repo.git("status", "--porcelain") == status


def test_more_changed_modules_further_down_than_it_reads_is_said(tmp_path: Path):
    """Past the bound, the modules not judged are said (cannot tell), not passed over."""
    count = unrun.MAX_DEEPER + 1
    names = [f"{PACKAGE}/m{n:02}.py" for n in range(count)]
    base = {**BASE, **{name: "from .consts import TABLE\n\nX = 1\n" for name in names}}
    head = {name: "from .consts import TABLE\n\nX = 2\n" for name in names}
    repo, first, second = repository(tmp_path, head, base)
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 4, (done.err, report)
    (spot,) = report["blind_spots"]
    assert spot["path"] == "python", spot
    said = f"{count} other changed modules under python/ name the passes' modules"
    assert said in spot["condition"] and f"more than {unrun.MAX_DEEPER}" in spot["condition"]


def test_a_long_chain_of_calls_is_read_without_running_out_of_stack(tmp_path: Path):
    """400 functions, each calling the next, the last writing TABLE: Python runs it at
    import; reading it follows so far, then takes it to change anything (exit 4)."""
    count = 400
    chain = "".join(f"def f{n}():\n    f{n + 1}()\n\n\n" for n in range(count))
    init = (f'from . import consts\n\n\n{chain}def f{count}():\n    consts.TABLE["fa4"] = 64'
            "\n\n\nf0()\n")  # fmt: skip
    repo, first, second = repository(tmp_path, {f"{PACKAGE}/__init__.py": init})
    assert sglang_page_size(repo, second, tmp_path) == 64
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 4 and report["changed"] == [], (done.err, report)
    assert ("f0()", f"{PACKAGE}/__init__.py") in {(s["condition"], s["path"])
                                                 for s in report["blind_spots"]}  # fmt: skip


def test_a_reformatted_statement_is_no_change(tmp_path: Path):
    """The same statement, spaced and commented otherwise: nothing new runs."""
    init = f"{PACKAGE}/__init__.py"
    base = {**BASE, init: 'from .consts import TABLE\n\nTABLE["fa4"] = 128\n'}
    head = {init: 'from .consts import TABLE\n\nTABLE[ "fa4" ] = (128)  # the same\n'}
    repo, first, second = repository(tmp_path, head, base)
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 0 and report["blind_spots"] == [], (done.err, report)


@pytest.mark.parametrize(
    "statement",
    ['getattr(TABLE, "update")({"fa4": 64})', 'list(map(dict.update, [TABLE], [{"fa4": 64}]))',
     '_note: TABLE.update({"fa4": 64})'],
)  # fmt: skip
def test_a_change_in_the_passes_file_is_run_whatever_spells_it(statement: str, tmp_path: Path):
    """Written in the pass's own file, the statement is drawn into the closure and run as
    SGLang runs it: a change (exit 1), or refused (getattr of a mutating method: exit 4)."""
    head = {PASSES: PASS.format(extra="\n" + statement + "\n")}
    repo, first, second = repository(tmp_path, head)
    assert sglang_page_size(repo, second, tmp_path) == 64
    done, report = diff(tmp_path, first, second, repo)
    assert done.code in (1, 4), (done.err, report)
    if done.code == 1:
        assert {c["head"]["page_size"] for c in report["changed"]} == {64}
    else:
        assert "the method update (through getattr)" in report["notes"]["head"]


HANDED_ON = {
    "a function handed to another": "def _apply(f):\n    return f()\n\n\n"
                                    "def _fill():\n    TABLE[\"fa4\"] = 64\n\n\n"
                                    "_DONE = _apply(_fill)",
    "an object unpacked": "class _Extra:\n    def keys(self):\n        TABLE[\"fa4\"] = 64\n"
                          "        return []\n\n\n_EXTRA = _Extra()\n_MERGED = {**_EXTRA}",
    "a class body calling its own name": "def _fill():\n    TABLE[\"fa4\"] = 64\n\n\n"
                                         "class _Hooks:\n    hook = _fill\n    done = hook()",
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(HANDED_ON))
def test_code_that_runs_what_it_is_handed_is_run(name: str, tmp_path: Path):
    """A statement of the pass's file that runs a function of the file it hands on, an
    object's `keys` through `**`, or what a class body's own name holds, changes TABLE
    as SGLang imports the file: drawn into the closure, the change shows (exit 1, 64)."""
    head = {PASSES: PASS.format(extra="\n\n" + HANDED_ON[name] + "\n")}
    repo, first, second = repository(tmp_path, head)
    assert sglang_page_size(repo, second, tmp_path) == 64
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 1, (done.err, report["notes"])
    assert {c["head"]["page_size"] for c in report["changed"]} == {64}


def test_a_changed_module_both_revisions_import_is_read(tmp_path: Path):
    base = {**BASE, **BOTH}
    head = {f"{PACKAGE}/tuning.py": 'from .consts import TABLE\n\nTABLE.update({"fa4": 64})\n'}
    repo, first, second = repository(tmp_path, head, base)
    assert sglang_page_size(repo, second, tmp_path) == 64
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 4, (done.err, report)
    where = [(s["path"], s["line"]) for s in report["blind_spots"]]
    assert where == [(f"{PACKAGE}/tuning.py", 3)], report["blind_spots"]


def test_a_file_it_cannot_read_is_said(tmp_path: Path):
    """An `__init__.py` nested past the parser's bounds: Python imports it, the harness
    cannot read it, and says so rather than take it for empty."""
    deep = "+".join(["0"] * 400)
    head = {f"{PACKAGE}/__init__.py": f'from .consts import TABLE\n\nTABLE["fa4"] = {deep} + 64\n'}
    repo, first, second = repository(tmp_path, head)
    assert sglang_page_size(repo, second, tmp_path) == 64
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 4, (done.err, report)
    (spot,) = report["blind_spots"]
    assert spot["path"] == f"{PACKAGE}/__init__.py" and "cannot be read" in spot["condition"]


def test_a_module_imported_further_down_already_is_not_new(tmp_path: Path):
    """The head imports a module that imports one the base imported already, two imports
    away: that one's code ran at both revisions."""
    writes = 'import os\n\nos.environ.setdefault("FIXTURE_FLAG", "1")\n'
    base = {
        **BASE,
        PASSES: PASS.format(extra="import sglang.srt.arg_groups.a\n"),
        f"{PACKAGE}/a.py": "import sglang.srt.arg_groups.b\n",
        f"{PACKAGE}/b.py": writes,
    }
    head = {PASSES: PASS.format(extra="import sglang.srt.arg_groups.a\nimport sglang.srt.arg_groups.c\n"),
            f"{PACKAGE}/c.py": "import sglang.srt.arg_groups.b\n"}  # fmt: skip
    repo, first, second = repository(tmp_path, head, base)
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 0 and report["blind_spots"] == [], (done.err, report)


def test_a_new_import_of_a_module_the_same_at_both_is_not_new_code(tmp_path: Path):
    """SGLang's server imports its package widely: a module the same at both revisions
    runs there either way, so importing it from the passes' file runs no new code (its
    own module-level code reads `globals()`, which would name any name)."""
    reflect = f"{PACKAGE}/reflect.py"
    base = {**BASE, reflect: "_NAMES = sorted(globals())\n"}
    head = {PASSES: PASS.format(extra="import sglang.srt.arg_groups.reflect\n")}
    repo, first, second = repository(tmp_path, head, base)
    assert sglang_page_size(repo, first, tmp_path) == sglang_page_size(repo, second, tmp_path)
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 0 and report["blind_spots"] == [], (done.err, report)


def test_a_package_added_where_the_pass_imports_a_module_is_what_it_reads(tmp_path: Path):
    """A package `consts/` added beside `consts.py`: Python imports the package (a package
    wins), so SGLang's page size follows it; the head's closure is read from it, not the
    base's taken again because the files it read are unchanged."""
    head = {f"{PACKAGE}/consts/__init__.py": 'TABLE = {"fa4": 64}\n'}
    repo, first, second = repository(tmp_path, head)
    assert sglang_page_size(repo, second, tmp_path) == 64
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 1, (done.err, report)
    assert {c["head"]["page_size"] for c in report["changed"]} == {64}
