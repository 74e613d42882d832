"""SGLang's own definitions of world names, read as Python binds them: compared by the
statements they draw on, across modules; `Unsure` where they cannot be read so."""

from __future__ import annotations

import pytest

from harness.closure.homes import HomeDefinition, Unsure, home_definition, nothing_else_changed
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache

TARGET = "pkg/passes.py"
UTILS = "pkg/utils/__init__.py"
COMMON = "pkg/utils/common.py"
OTHER = "pkg/utils/other.py"
EXTRA = "pkg/utils/extra.py"
RUNTIME = "pkg/runtime.py"

COMMON_TEXT = '''\
"""Probes."""

import os

from .other import vendor_name

_TABLE = {"amd": True}


def _vendor():
    return os.environ.get("V", vendor_name())


def is_hip():
    """Whether the machine is AMD's."""
    return _TABLE.get(_vendor(), False)


def unrelated():
    return 1
'''
OTHER_TEXT = "def vendor_name():\n    return 'nvidia'\n"
# get_platform answers through a probe table and a module imported in a function (0.5.23)
RUNTIME_TEXT = """\
_PROBES = {"is_amd": "is_hip"}


class _Platform:
    def __getattr__(self, name):
        from pkg.utils import common as _common

        return getattr(_common, _PROBES[name])()


def get_platform():
    return _Platform()
"""


def files(**changed: str) -> RevisionFiles:
    texts = {TARGET: "", UTILS: "from .common import *\n", COMMON: COMMON_TEXT,
             OTHER: OTHER_TEXT, EXTRA: "def is_hip():\n    return True\n",
             RUNTIME: RUNTIME_TEXT}  # fmt: skip
    paths = {"utils": UTILS, "common": COMMON, "other": OTHER, "runtime": RUNTIME}
    texts.update({paths[k]: v for k, v in changed.items()})
    return RevisionFiles.of(texts, TARGET)


def definition(side: RevisionFiles, name: str = "is_hip", path: str = UTILS):
    return home_definition(SourceCache(), side, name, path)


def digests(found) -> list[str]:
    """The statements as compared (their lines may move)."""
    assert isinstance(found, HomeDefinition), found
    return [piece.digest for piece in found.pieces]


def test_the_same_files_give_the_same_definition_followed_through_the_star():
    first, second = definition(files()), definition(files())
    assert first.path == COMMON and digests(first) == digests(second)


FLIP = COMMON_TEXT.replace('{"amd": True}', '{"amd": False}')


@pytest.mark.parametrize(
    "edit, differs",
    [
        ({"common": COMMON_TEXT.replace("_vendor(), False", "_vendor(), True")}, True),
        ({"common": FLIP}, True),  # data the definition reads
        ({"common": COMMON_TEXT + '\n_TABLE["nvidia"] = True\n'}, True),  # changed at import
        ({"common": COMMON_TEXT + "\n_TABLE.update(nvidia=True)\n"}, True),
        ({"other": OTHER_TEXT.replace("nvidia", "amd")}, True),  # a helper in another file
        ({"common": COMMON_TEXT.replace("return 1", "return 2")}, False),  # not read
        ({"common": COMMON_TEXT.replace('"""Whether the machine is AMD\'s."""', "")}, False),
        ({"common": COMMON_TEXT + "\n\n# a comment\n"}, False),
    ],
    ids=[
        "definition",
        "data",
        "item-set",
        "update",
        "other-file",
        "unread",
        "docstring",
        "comment",
    ],
)
def test_a_change_is_seen_where_the_definition_draws_on_it(edit, differs):
    assert (digests(definition(files())) != digests(definition(files(**edit)))) is differs


def test_a_probe_read_through_a_module_imported_in_a_function_is_compared():
    """`getattr(_common, _PROBES[name])`: every probe the table names is read of common."""
    before = definition(files(), "get_platform", RUNTIME)
    after = definition(files(common=FLIP), "get_platform", RUNTIME)
    assert {p.path for p in before.pieces} >= {RUNTIME, COMMON}
    assert digests(before) != digests(after)


@pytest.mark.parametrize(
    "utils, source",
    [
        ("from .common import *\nfrom .extra import *\n", EXTRA),  # the last star wins
        ("def is_hip():\n    return 0\n\n\nfrom .extra import *\n", EXTRA),
        ("from .extra import *\nfrom .common import is_hip\n", COMMON),
        ("from .common import *\nfrom .other import *\n", COMMON),  # other binds no is_hip
        ("from .common import _vendor as is_hip\n", COMMON),  # a renamed re-export
    ],
    ids=["star-after-star", "star-after-def", "import-after-star", "star-without", "renamed"],
)
def test_the_binding_is_the_one_python_gives(utils, source):
    assert definition(files(utils=utils)).path == source


@pytest.mark.parametrize(
    "changed, reason",
    [
        ({"utils": "globals()['is_hip'] = lambda: True\n"}, "binds names at run time"),
        ({"utils": "exec('def is_hip(): return True')\n"}, "binds names at run time"),
        ({"common": "__all__ = ['is_hip']\n" + COMMON_TEXT}, "__all__"),
        ({"utils": "from unknown_package import *\n"}, "may bind is_hip"),
    ],
    ids=["globals", "exec", "all", "outside-star"],
)
def test_what_cannot_be_read_statically_is_unsure(changed, reason):
    found = definition(files(**changed))
    assert isinstance(found, Unsure) and reason in found.reason


def test_a_module_getattr_answers_a_name_nothing_binds():
    utils = "current: object\n\n\ndef __getattr__(name):\n    return _make()\n\n\ndef _make():\n    return 1\n"
    found = definition(files(utils=utils), "current")
    assert [p.text for p in found.pieces] == ["def __getattr__(...)", "def _make(...)"]


def test_re_exports_and_statements_past_the_bounds_are_unsure():
    chain = {f"pkg/r{n}.py": f"from .r{n + 1} import *\n" for n in range(6)}
    chain["pkg/r6.py"] = "def is_hip():\n    return 1\n"
    found = home_definition(SourceCache(), RevisionFiles.of(chain, TARGET), "is_hip", "pkg/r0.py")
    assert isinstance(found, Unsure) and "re-exported" in found.reason
    many = "".join(f"_X = {n}\n" for n in range(3000)) + "def is_hip():\n    return _X\n"
    found = definition(files(common=many), "is_hip", COMMON)
    assert isinstance(found, Unsure) and "statements" in found.reason


def test_a_revision_without_the_file_or_the_name_has_no_definition():
    assert definition(RevisionFiles.of({TARGET: ""}, TARGET)) is None
    assert (
        definition(files(common=COMMON_TEXT.replace("is_hip", "is_rocm")), "is_hip", COMMON) is None
    )


def test_only_files_the_diff_reads_anyway_changed():
    assert nothing_else_changed(["pkg/passes.py", "README.md"], {"pkg/passes.py"})
    assert not nothing_else_changed(["pkg/passes.py", COMMON], {"pkg/passes.py"})
