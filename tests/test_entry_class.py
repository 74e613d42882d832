"""An entry reads the configuration's class: `ServerArgs.x` (the default its class
declares, as a dataclass's class attribute) and `type(server_args)`. The world answers
both with one object holding the defaults read from the code; nothing of the class's
own code runs (SGLang's defines `__setattr__` and builds its fields with calls).

The fixture is one SGLang-shaped commit; the expected outcome of every cell comes
from importing its files in plain Python and running the entry on the dataclass,
never from harness.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.test_entry import ARG_UTILS, BASE, MACHINERY, PKG, harness_outcomes, plain_outcomes

SERVER_ARGS = '''\
"""Server arguments, one dataclass with a guarded `__setattr__`."""

from __future__ import annotations

import dataclasses
from typing import List, Optional


@dataclasses.dataclass
class ServerArgs:
    attention_backend: Optional[str] = None
    page_size: Optional[int] = None
    fallback_backend: str = "fa3"
    default_page: int = 16
    tags: List[str] = dataclasses.field(default_factory=list)

    def __setattr__(self, name, value):
        if name.startswith("__"):
            raise AttributeError(name)
        object.__setattr__(self, name, value)
'''
PIPELINE = '''\
"""Resolution reading the configuration's class."""


def run_resolution_pipeline(server_args):
    from sglang.srt.server_args import ServerArgs

    cls = type(server_args)
    if cls is not ServerArgs:
        raise TypeError("not a ServerArgs")
    if server_args.page_size == ServerArgs.page_size:  # left at the class default
        server_args.page_size = cls.default_page
    if server_args.attention_backend is None:
        server_args.attention_backend = ServerArgs.fallback_backend
{more}'''
FILES = {"python/sglang/srt/server_args.py": SERVER_ARGS, f"{PKG}/__init__.py": ""}
AXES = {"attention_backend": [None, "fa4"], "page_size": [None, 1, 64]}
OUTPUTS = ("attention_backend", "page_size")
MATRIX = (
    f"name: class\ntarget: {{path: {PKG}/pipeline.py, entry: run_resolution_pipeline, "
    "output: [attention_backend, page_size]}\nworld: sglang\naxes:\n"
    "  attention_backend: [null, fa4]\n  page_size: [null, 1, 64]\n"
)


def commit(tmp_path: Path, more: str = "") -> tuple[Path, str, Path]:
    return commit_files(tmp_path, {**FILES, f"{PKG}/pipeline.py": PIPELINE.format(more=more)})


def diff_note(root: Path, sha: str, matrix: Path) -> tuple[int, str]:
    """`harness diff` of `sha` against itself: (exit, the base's note, if any)."""
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    return done.code, json.loads(done.out)["notes"].get("base", "")


def commit_files(tmp_path: Path, files: dict[str, str]) -> tuple[Path, str, Path]:
    """`files` committed in a new repository, written as a tree for plain Python too, and
    the matrix over AXES: (repository, commit, matrix file)."""
    sha = FixtureRepo(tmp_path / "repo").commit("class", files)
    for path, text in files.items():
        (tmp_path / "tree" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / path).write_text(text)
    (tmp_path / "m.yaml").write_text(MATRIX)
    return tmp_path / "repo", sha, tmp_path / "m.yaml"


def test_the_class_defaults_and_type_are_the_configurations_class(tmp_path):
    root, sha, matrix = commit(tmp_path)
    found = harness_outcomes(root, sha, matrix, outputs=OUTPUTS)
    assert found == plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)


@pytest.mark.parametrize(
    "more, what",
    [
        ("    server_args.page_size = len(ServerArgs.tags)\n", "ServerArgs.tags"),
        ("    server_args.page_size = ServerArgs.from_cli_args\n", "ServerArgs.from_cli_args"),
        ("    server_args.page_size = ServerArgs()\n", "a new ServerArgs"),
        ("    server_args.page_size = isinstance(ServerArgs, tuple)\n", "ServerArgs.__class__"),
        ("    server_args.page_size = issubclass(ServerArgs, object)\n", "ServerArgs.__bases__"),
        ("    class Mine(ServerArgs):\n        pass\n", "ServerArgs.__mro_entries__"),
    ],
)
def test_what_the_class_declares_no_literal_default_for_is_refused(tmp_path, more, what):
    """`tags` has a default_factory (no class attribute: Python raises AttributeError);
    a method's code is not run; the class is the world's (making one, testing it as a
    class, subclassing it): each is refused (exit 4), naming it."""
    root, sha, matrix = commit(tmp_path, more)
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"].get("base", "")
    assert done.code == 4 and f"{what} is read at" in note, note


@pytest.mark.parametrize(
    "server_args_text, says",
    [
        (SERVER_ARGS + "\n\nServerArgs.default_page = 32\n", "is not a plain dataclass"),
        (SERVER_ARGS.replace("    default_page: int = 16\n",
                             "    default_page: int = 16\n    default_page = 32\n"),
         "binds it more than once"),
        (SERVER_ARGS.replace("@dataclasses.dataclass\n", "@dataclasses.dataclass(slots=True)\n"),
         "is not a plain dataclass"),
    ],
    ids=["assigned-after", "bound-twice", "slots"],
)  # fmt: skip
def test_a_class_attribute_the_declaration_does_not_give_is_refused(
    tmp_path, server_args_text, says
):
    """Python's `ServerArgs.default_page` is 32 (assigned after the class, or bound again
    in its body) or a slot descriptor: not the declared 16, so it is refused (exit 4)."""
    files = {**FILES, "python/sglang/srt/server_args.py": server_args_text,
             f"{PKG}/pipeline.py": PIPELINE.format(more="")}  # fmt: skip
    sha = FixtureRepo(tmp_path / "repo").commit("class", files)
    (tmp_path / "m.yaml").write_text(MATRIX)
    done = run_cli("diff", sha, sha, "--repo", str(tmp_path / "repo"), "--matrix",
                   str(tmp_path / "m.yaml"), "--format", "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"].get("base", "")
    assert done.code == 4 and says in note, note


def test_a_local_import_of_another_modules_class_of_that_name_is_refused(tmp_path):
    """`from sglang.srt.arg_groups.helpers import ServerArgs` inside the entry reads that
    module's class (its default_page is 99 in Python), not the configuration's: refused
    (exit 4), naming the definition, as a module-level import of it is."""
    pipeline = PIPELINE.format(more="").replace(
        "from sglang.srt.server_args import ServerArgs",
        "from sglang.srt.arg_groups.helpers import ServerArgs",
    )
    files = {**FILES, f"{PKG}/pipeline.py": pipeline,
             f"{PKG}/helpers.py": "class ServerArgs:\n    default_page = 99\n"}  # fmt: skip
    sha = FixtureRepo(tmp_path / "repo").commit("class", files)
    (tmp_path / "m.yaml").write_text(MATRIX)
    done = run_cli("diff", sha, sha, "--repo", str(tmp_path / "repo"), "--matrix",
                   str(tmp_path / "m.yaml"), "--format", "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"].get("base", "")
    assert done.code == 4 and f"{PKG}/helpers.py:1 defines ServerArgs" in note, note


NAMES_METHOD = """
    def _pick(self, other):
        def inner():
            return 1

        return inner.__qualname__ + "|" + (lambda: 0).__qualname__ + "|" + other.__name__
"""


def test_what_a_method_of_the_class_defines_is_named_as_in_the_class(tmp_path):
    """A method of ServerArgs is compiled as a function of its own; what it defines is
    named as Python names it in the class (`ServerArgs._pick.<locals>.inner`), and an
    error calling it wrongly says so too."""
    server_args = SERVER_ARGS + NAMES_METHOD
    more = ("    server_args.attention_backend = server_args._pick(len)\n"
            "    try:\n        server_args._pick()\n"
            "    except TypeError as exc:\n        server_args.attention_backend += str(exc)\n")  # fmt: skip
    files = {**FILES, "python/sglang/srt/server_args.py": server_args,
             f"{PKG}/pipeline.py": PIPELINE.format(more=more)}  # fmt: skip
    sha = FixtureRepo(tmp_path / "repo").commit("class", files)
    for path, text in files.items():
        (tmp_path / "tree" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / path).write_text(text)
    (tmp_path / "m.yaml").write_text(MATRIX)
    found = harness_outcomes(tmp_path / "repo", sha, tmp_path / "m.yaml", outputs=OUTPUTS)
    assert found == plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)
    assert "ServerArgs._pick.<locals>.inner" in found[0][0], found[0]


METHOD_ARGS = (
    SERVER_ARGS.replace(
        """    def __setattr__(self, name, value):""",
        """    def _default_page(self, backend):
        return self.default_page * (4 if backend == "fa4" else 1)

    def __setattr__(self, name, value):""",
    )
    .replace("from typing import List", "from typing import Annotated, List")
    .replace(
        "\n\n@dataclasses", "\nfrom sglang.srt.arg_groups.arg_utils import Arg\n\n\n@dataclasses"
    )
    .replace(
        "page_size: Optional[int]", "page_size: Annotated[Optional[int], Arg(resolvable=True)]"
    )
)
PASSES = (
    '''\
"""A pass the entry runs: it calls the configuration's method on the view it is handed."""

import dataclasses
from typing import Any, Callable

from sglang.srt.arg_groups.arg_utils import resolvable_fields
from sglang.srt.arg_groups.model_override_base import (  # noqa: F401
    ResolvedView,
    _declaration_overlay,
    resolving_view,
)


'''
    + MACHINERY
    + """

def _page_default(view):
    if view.page_size is not None:
        return {}
    return {"page_size": view._default_page(view.attention_backend)}
"""
)
HANDED = '''\
"""Resolution running one pass."""

from sglang.srt.arg_groups.overrides import _page_default, run_post_process_pass


def run_resolution_pipeline(server_args):
    run_post_process_pass(server_args, _page_default)
'''


def test_a_pass_the_entry_runs_calls_the_configurations_methods_on_its_view(tmp_path):
    """`view._default_page(...)` in a pass handed the configuration (its first parameter
    is named like a view) is `ServerArgs._default_page`, as in the target itself."""
    files = {**FILES, "python/sglang/srt/server_args.py": METHOD_ARGS,
             f"{PKG}/arg_utils.py": ARG_UTILS, f"{PKG}/model_override_base.py": BASE,
             f"{PKG}/overrides.py": PASSES, f"{PKG}/pipeline.py": HANDED}  # fmt: skip
    root, sha, matrix = commit_files(tmp_path, files)
    found = harness_outcomes(root, sha, matrix, outputs=OUTPUTS)
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)
    assert found == expected
    assert (None, 16) in expected and ("fa4", 64) in expected


@pytest.mark.parametrize(
    "more",
    [
        "    server_args.page_size = len(server_args)\n",
        "    server_args.page_size = server_args(1)\n",
        "    server_args.page_size = server_args + 1\n",
    ],
    ids=["len", "call", "add"],
)
def test_pythons_own_messages_name_the_configurations_class(tmp_path, more):
    """What Python says of the configuration an entry is handed names its class, as of
    SGLang's `ServerArgs` instance (`object of type 'ServerArgs' has no len()`)."""
    root, sha, matrix = commit(tmp_path, more)
    found = harness_outcomes(root, sha, matrix, outputs=OUTPUTS)
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)
    assert found == expected
    assert all("'ServerArgs'" in str(outcome[1]) for outcome in expected), expected
