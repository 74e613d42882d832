"""Hostile targets that ask who runs them: `__name__`, a class's module, `super` with arguments.

A pass that branches on `__name__` (or on what a class's `repr` says its module
is) must take the branch it takes when SGLang imports it: the expected outcome
is computed by importing the fixture as SGLang's package layout does, in a
plain Python process. `super(X, obj)` reaches the methods of whatever class
`obj` is an instance of (the harness's own), so every form of it is refused and
the revision is unevaluable, naming the line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.closure.modules import module_name
from tests.conftest import run_cli
from tests.helpers import commit_versions
from tests.test_hostile import MATRIX as HOSTILE_MATRIX

PATH = "python/sglang/srt/arg_groups/overrides.py"
MATRIX = HOSTILE_MATRIX.replace("name: hostile", "name: names")  # the same cells
BASE = """\
def target(view):
    return {}
"""

# Each gives one page size when it believes SGLang imported it, another otherwise.
ASKS = {
    "name-equals": """
        def target(view):
            if __name__ == "sglang.srt.arg_groups.overrides":
                return {"page_size": 256}
            return {"page_size": 1}
    """,
    "name-startswith": """
        IMPORTED = __name__.startswith("sglang.")

        def target(view):
            return {"page_size": 32 if IMPORTED else 2}
    """,
    "class-repr": """
        class Marker:
            pass

        def target(view):
            if repr(Marker) == "<class 'sglang.srt.arg_groups.overrides.Marker'>":
                return {"page_size": 16}
            return {"page_size": 3}
    """,
}


def diff(tmp_path: Path, head: str, extra: dict[str, str] | None = None):
    (tmp_path / "names.yaml").write_text(MATRIX)
    root = tmp_path / "repo"
    shas = commit_versions(root, [BASE, textwrap.dedent(head)], extra)
    done = run_cli(
        "diff", shas[0], shas[1], "--matrix", str(tmp_path / "names.yaml"), "--repo", str(root),
        "--format", "json", "--no-cache",
    )  # fmt: skip
    return done, json.loads(done.out)


def as_sglang_imports_it(tmp_path: Path, source: str, extra: dict[str, str] | None = None) -> dict:
    """What `target` returns when the file (and `extra`, by path) is imported as SGLang's
    package layout makes it (`python/` on the path, a package at every level), run in a
    plain Python process."""
    tree = tmp_path / "plain"
    package = tree / "python/sglang/srt/arg_groups"
    package.mkdir(parents=True)
    for level in (package, package.parent, package.parent.parent):
        (level / "__init__.py").write_text("")
    for path, text in {**(extra or {}), PATH: textwrap.dedent(source)}.items():
        (tree / path).write_text(text)
    script = (
        "import json, sys; sys.path.insert(0, 'python')\n"
        "from sglang.srt.arg_groups.overrides import target\n"
        "print(json.dumps(target(None)))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=tree, capture_output=True, text=True, check=True
    )
    return json.loads(run.stdout)


@pytest.mark.parametrize("name", sorted(ASKS))
def test_a_pass_that_asks_who_imports_it_takes_sglangs_branch(name: str, tmp_path: Path):
    expected = as_sglang_imports_it(tmp_path, ASKS[name])
    done, report = diff(tmp_path, ASKS[name])
    assert done.code == 1, done.err  # every cell changes from {} to the branch's page size
    assert "head" not in report["notes"], report["notes"]
    heads = [item["head"] for item in report["changed"]]
    assert len(heads) == 9 and all(head == expected for head in heads), (expected, heads)


def test_a_pass_importing_from_the_repository_inside_a_function_still_finds_it(tmp_path: Path):
    """The importing file is found by its namespace, not by `__name__`, which the code may
    rebind: the repository's definition answers, as in SGLang."""
    helper = {"python/sglang/srt/arg_groups/sizes.py": "def size():\n    return 48\n"}
    head = """
        __name__ = "elsewhere"

        def target(view):
            from sglang.srt.arg_groups.sizes import size

            return {"page_size": size() + (1 if __name__ == "elsewhere" else 2)}
    """
    expected = as_sglang_imports_it(tmp_path, head, helper)
    done, report = diff(tmp_path, head, helper)
    assert done.code == 1, done.err
    assert "head" not in report["notes"], report["notes"]
    assert [item["head"] for item in report["changed"]] == [expected] * 9


def line_of(source: str, text: str) -> int:
    """The 1-based line of the first line of `source` holding `text`."""
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


SUPERS = {
    "two-arguments": ("return {'page_size': super(Base, view).size()}", "super() with arguments"),
    "one-argument": ("return {'page_size': len(str(super(Base)))}", "super() with arguments"),
    "keyword": ("return {'page_size': super(*[Base], **{}).size()}", "super() with arguments"),
    "alias": ("s = super\n    return {'page_size': s(Base, view).size()}", "super other than"),
    "passed": ("return {'page_size': list(map(super, [Base]))}", "super other than"),
}


@pytest.mark.parametrize("name", sorted(SUPERS))
def test_super_with_arguments_is_refused_naming_the_line(name: str, tmp_path: Path):
    body, says = SUPERS[name]
    head = (
        f"class Base:\n    def size(self):\n        return 1\n\n\ndef target(view):\n    {body}\n"
    )
    line = line_of(head, "super")
    done, report = diff(tmp_path, head)
    assert done.code == 4 and report["changed"] == [], done.err
    note = report["notes"]["head"]
    assert note.startswith("unevaluable") and says in note, note
    assert f"(at {PATH}:{line})" in note, note


def test_the_type_of_a_super_object_is_refused_at_run_time(tmp_path: Path):
    head = (
        "class Holder:\n    def leak(self):\n        return type(super())\n\n\n"
        "def target(view):\n    S = Holder().leak()\n"
        "    return {'page_size': S(Holder, view).leak()}\n"
    )
    done, report = diff(tmp_path, head)
    assert done.code == 4 and report["changed"] == [], done.err
    note = report["notes"]["head"]
    assert "the type of a super object" in note, note
    assert f"{PATH}:{line_of(head, 'type(super())')}" in note, note


def test_super_without_arguments_in_a_method_still_evaluates(tmp_path: Path):
    head = """
        class Base:
            def size(self):
                return 8

        class Paged(Base):
            def size(self):
                return super().size() * 4

        def target(view):
            return {"page_size": Paged().size()}
    """
    expected = as_sglang_imports_it(tmp_path, head)
    done, report = diff(tmp_path, head)
    assert done.code == 1, done.err
    assert [item["head"] for item in report["changed"]] == [expected] * 9


@pytest.mark.parametrize(
    ("path", "roots", "tops", "expected"),
    [
        (PATH, (), (), "sglang.srt.arg_groups.overrides"),  # a leading python/: the convention
        ("python/sglang/srt/arg_groups/__init__.py", (), (), "sglang.srt.arg_groups"),
        ("lib/python/sglang/srt/utils.py", ("lib/python",), (), "sglang.srt.utils"),
        ("lib/python/sglang/srt/utils.py", (), ("sglang",), "sglang.srt.utils"),
        ("code/pkg/mod.py", (), (), "code.pkg.mod"),  # no root known: the repository's
    ],
)
def test_a_files_module_name_is_the_one_python_imports_it_under(path, roots, tops, expected):
    assert module_name(path, roots, tops) == expected


OWN_NAMES = """
    def helper():
        return 1

    class Sizes:
        def pick(self):
            return 2

    def target(view):
        names = [helper.__name__, helper.__qualname__, Sizes.__name__,
                 Sizes.pick.__qualname__, Sizes().pick.__name__, len.__name__, int.__name__]
        return {"page_size": len("/".join(names))}
"""


def test_the_names_of_what_the_repository_defines_are_the_projects(tmp_path: Path):
    """`fn.__name__` and `fn.__qualname__` of the file's own functions, classes and
    methods, and of Python's builtins, are what Python gives them when SGLang imports
    the file (the page size is the length of the names joined)."""
    expected = as_sglang_imports_it(tmp_path, OWN_NAMES)
    done, report = diff(tmp_path, OWN_NAMES)
    assert done.code == 1, done.err
    assert [item["head"] for item in report["changed"]] == [expected] * 9


STAND_IN_NAME = """\
def target(view):
    if getattr.__qualname__ == "getattr":
        return {"page_size": 1}
    return {"page_size": 64}
"""


def test_the_name_of_what_the_world_stands_in_for_is_refused_naming_the_line(tmp_path: Path):
    """A stand-in's name is harness's, not SGLang's (`getattr` is the sandbox's guarded
    one): code branching on it could tell it runs under harness. Reading it is refused
    (exit 4), with the line."""
    done, report = diff(tmp_path, STAND_IN_NAME)
    note = report["notes"].get("head", "")
    line = line_of(STAND_IN_NAME, "__qualname__")
    assert done.code == 4 and "__qualname__ of an object harness supplies" in note, note
    assert f"{PATH}:{line}" in note, note


@pytest.mark.parametrize(
    "head, says",
    [
        ("def target(view):\n    match view.backend:\n        case len.__name__:\n"
         "            return {'page_size': 1}\n    return {}\n", "in a case pattern"),
        ("def target(view):\n    class Mine(print):\n        pass\n\n    return {}\n",
         "print.__mro_entries__ (a subclass) is made"),
    ],
    ids=["case-pattern", "subclass-of-a-stand-in"],
)  # fmt: skip
def test_what_cannot_be_answered_as_python_would_is_refused(tmp_path: Path, head: str, says):
    done, report = diff(tmp_path, head)
    note = report["notes"].get("head", "")
    assert done.code == 4 and says in note, note
