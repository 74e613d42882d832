"""An entry runs the resolution code's own enumerations (SGLang's speculative handler
dispatches through `SpeculativeAlgorithm.from_string(name).handle_server_args(...)`, an
`Enum` whose method imports the handlers it calls, and reads a `(str, Enum)` mode).
Python's enum machinery makes them, so members, `auto()`, `cls[name]`, iteration, a
`str` mixin's comparisons and `repr` are Python's; what the machinery would hand the
code besides (the functional API, its `_sunder_` names, the world's own `Enum`) is
refused, naming it.

The fixture is one SGLang-shaped commit; the expected outcome of every cell comes
from importing its files in plain Python and running the entry, never from harness.
"""

from __future__ import annotations

import itertools
import os
import types
from pathlib import Path

import pytest

from harness.engine.outcome import ERROR, VALUE
from harness.matrix.load import load_matrix
from harness.testing.entry_facts import LLAMA_ONE_GPU
from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.helpers import evaluate_at
from tests.test_entry import (
    PKG,
    VERSIONS,
    WORLD_AXES,
    entry_matrix,
    files,
    harness_outcomes,
    plain_outcomes,
)

SPEC = "python/sglang/srt/speculative"
REGISTRY = '''\
# Written for harness's tests, shaped like SGLang's spec_registry.py.
"""Speculative algorithms registered by plugins (none here), by name."""

from __future__ import annotations

ALIASES = frozenset({"NEXTN"})

_BY_NAME: dict = {}


def registered(name):
    return _BY_NAME.get(name)
'''
INFO = '''\
# Written for harness's tests, shaped like SGLang's spec_info.py.
"""The built-in speculative algorithms."""

from __future__ import annotations

from enum import Enum, auto

from sglang.srt.speculative.spec_registry import ALIASES, registered


class SpeculativeAlgorithm(Enum):
    """One member per built-in algorithm."""

    EAGLE = auto()
    EAGLE3 = auto()
    NGRAM = auto()
    NONE = auto()
    DRAFT = 2  # an alias of EAGLE3, as Python makes it

    @classmethod
    def from_string(cls, name):
{more}        if name is None:
            return cls.NONE
        upper = name.upper()
        try:
            return cls[upper]
        except KeyError:
            pass
        if upper in ALIASES:
            return cls.EAGLE
        found = registered(upper)
        if found is not None:
            return found
        raise ValueError(f"Unknown speculative algorithm name: {{name}}")

    def is_eagle(self):
        return self in (SpeculativeAlgorithm.EAGLE, SpeculativeAlgorithm.EAGLE3)

    def handle_server_args(self, server_args):
        from sglang.srt.arg_groups.speculative_hook import _handle_eagle, _handle_ngram
        from sglang.srt.speculative.ragged_verify import read_mode

        if read_mode() == "compact" and self is not SpeculativeAlgorithm(2):
            _handle_ngram(server_args)
        elif self.is_eagle():
            _handle_eagle(server_args, self)
        elif self == SpeculativeAlgorithm.NGRAM:
            _handle_ngram(server_args)

    def create_worker(self):
        from sglang.srt.speculative.eagle_worker import EagleWorker

        return EagleWorker
'''
MODE = '''\
# Written for harness's tests, shaped like SGLang's ragged_verify.py.
"""How verification lays out ragged drafts."""

from __future__ import annotations

from enum import Enum

from sglang.srt.environ import envs


class RaggedVerifyMode(str, Enum):
    STATIC = "static"
    COMPACT = "compact"


def read_mode() -> RaggedVerifyMode:
    value = envs.SGLANG_RAGGED_VERIFY_MODE.get()
    for mode in RaggedVerifyMode:
        if value == mode.value:
            return mode
    raise ValueError(
        f"invalid SGLANG_RAGGED_VERIFY_MODE={value!r}; expected one of "
        f"{', '.join(repr(m.value) for m in RaggedVerifyMode)}"
    )
'''
# A worker module, outside the resolution code, that changes resolution data as it loads:
# only `create_worker` imports it, which the resolution never calls.
WORKER = '''\
"""The EAGLE draft worker."""

from sglang.srt.arg_groups import overrides

overrides.POST_PROCESS_PASSES.clear()


class EagleWorker:
    pass
'''
HOOK = '''\
# Written for harness's tests, shaped like SGLang's speculative_hook.py.
"""The speculative-decoding handler."""

from sglang.srt.arg_groups.overrides import declare_resolution, resolving_view


def handle_speculative_decoding(server_args) -> None:
    cfg = resolving_view(server_args)
    if cfg.speculative_algorithm is None:
        return
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    algo = SpeculativeAlgorithm.from_string(cfg.speculative_algorithm)
    algo.handle_server_args(server_args)


def _handle_eagle(server_args, algo) -> None:
    cfg = resolving_view(server_args)
    if cfg.speculative_eagle_topk is not None:
        assert cfg.speculative_num_steps is not None, "set the number of steps"
    if cfg.speculative_eagle_topk is None:
        topk = 4 if algo.name == "EAGLE" else algo.value
        declare_resolution(server_args, "speculative", speculative_eagle_topk=topk)
    if cfg.speculative_eagle_topk > 1 and cfg.page_size not in (None, 1):
        raise ValueError(f"{algo!r} with top-k {cfg.speculative_eagle_topk} needs page size 1")


def _handle_ngram(server_args) -> None:
    declare_resolution(server_args, "ngram", speculative_eagle_topk=1, page_size=1)
'''
AXES = {
    "platform": ["sm90"],
    "page_size": [None, 64],
    "speculative_algorithm": [None, "EAGLE", "eagle3", "draft", "NGRAM", "NEXTN", "MEDUSA"],
    "speculative_eagle_topk": [None, 4],
    "speculative_num_steps": [None, 3],
    "SGLANG_RAGGED_VERIFY_MODE": ["static", "compact", "bogus"],
}
OUTPUTS = ("page_size", "speculative_eagle_topk")


def commit(tmp_path: Path, more: str = "") -> tuple[Path, str, Path]:
    tree = {**files(VERSIONS["assert"]), f"{PKG}/speculative_hook.py": HOOK,
            f"{SPEC}/__init__.py": "", f"{SPEC}/spec_registry.py": REGISTRY,
            f"{SPEC}/spec_info.py": INFO.format(more=more), f"{SPEC}/ragged_verify.py": MODE,
            f"{SPEC}/eagle_worker.py": WORKER}  # fmt: skip
    sha = FixtureRepo(tmp_path / "repo").commit("enums", tree)
    for path, text in tree.items():
        (tmp_path / "tree" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / path).write_text(text)
    (tmp_path / "m.yaml").write_text(entry_matrix("enums", AXES, OUTPUTS))
    return tmp_path / "repo", sha, tmp_path / "m.yaml"


def environ(cell: dict) -> dict[str, types.ModuleType]:
    """SGLang's `envs` in plain Python, answering the cell's variable."""
    module = types.ModuleType("sglang.srt.environ")
    read = types.SimpleNamespace(get=lambda: cell["SGLANG_RAGGED_VERIFY_MODE"])
    module.envs = types.SimpleNamespace(SGLANG_RAGGED_VERIFY_MODE=read)
    return {"sglang.srt.environ": module}


@pytest.mark.parametrize("exhaustive", [False, True], ids=["explored", "every-cell"])
def test_the_resolution_code_s_enumerations_are_pythons(tmp_path, exhaustive):
    root, sha, matrix = commit(tmp_path)
    found = harness_outcomes(root, sha, matrix, exhaustive=exhaustive, outputs=OUTPUTS)
    world = (*WORLD_AXES, "SGLANG_RAGGED_VERIFY_MODE")
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS, stubs=environ, world=world)
    assert found == expected
    errors = {outcome[1].split(":")[0] for outcome in expected if outcome[0] == "error"}
    assert errors == {"AssertionError", "ValueError"}  # the assert, unknown names, bad modes


@pytest.mark.parametrize(
    "more, what",
    [
        ('OTHER = Enum("OTHER", {"A": 1})', "Enum() with more than a value"),
        ('OTHER = cls("OTHER", "A B")', "SpeculativeAlgorithm() with more than a value"),
        ("Enum.NAME = 1", "enum.Enum.NAME is assigned"),
        ("META = type(cls)", "the type of a class"),
        ('MADE = cls._create_("X", {})', "attribute ._create_"),
        ('GOT = getattr(cls, "_conv" + "ert_")', "attribute _convert_ (through getattr)"),
        ("class Plugin(Enum):\n    _ignore_ = ['x']", "the name _ignore_ in class Plugin"),
        ("from enum import IntEnum\n\nclass Level(IntEnum):\n    LOW = 1", "IntEnum"),
    ],
    ids=["functional", "functional-subclass", "world-write", "metaclass", "create", "convert",
         "ignore", "int-enum"],
)  # fmt: skip
def test_what_the_enum_machinery_would_hand_the_code_is_refused(tmp_path, more, what):
    """The functional API makes a class from a mapping (special methods included), the
    `_sunder_` machinery reaches modules and `object.__new__`, the metaclass builds any
    class, the world's `Enum` is shared by every cell: each is refused where the code
    does it (exit 4), named. Python's other enumerations are not modelled: unbound."""
    lines = "".join(f"        {line}\n" if line else "\n" for line in more.split("\n"))
    root, sha, matrix = commit(tmp_path, lines)
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    assert done.code == 4 and what in done.out, (done.code, done.out[-600:])


def test_a_method_s_import_outside_the_resolution_code_runs_only_if_called(tmp_path):
    """`create_worker` imports a worker module that changes resolution data as it loads;
    the resolution never calls it, so it is not read (Python would not load it); called,
    its import is refused there, naming what it reads."""
    root, sha, matrix = commit(tmp_path)
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    assert done.code == 0, done.out[-600:]
    root, sha, matrix = commit(tmp_path / "called", "        cls.EAGLE.create_worker()\n")
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    assert done.code == 4 and "eagle_worker.EagleWorker is read" in done.out, done.out[-600:]


RELEASES = os.environ.get("HARNESS_TEST_SGLANG_RELEASES")  # a repository of SGLang's releases
EAGLE_AXES = {"attention_backend": [None, "fa3"], "platform": ["sm90", "sm100"],
              "speculative_algorithm": ["EAGLE"], "speculative_eagle_topk": [None, 1, 4],
              "speculative_num_steps": [None]}  # fmt: skip
EAGLE_MATRIX = LLAMA_ONE_GPU  # (the IQuestQ1MTPConfig the handler imports needs no binding)


@pytest.mark.skipif(not RELEASES, reason="set HARNESS_TEST_SGLANG_RELEASES to a repository "
                    "built by sglang-release-history")  # fmt: skip
@pytest.mark.parametrize("tag", ["v0.5.19", "v0.5.20", "v0.5.21", "v0.5.22", "v0.5.23"])
def test_on_real_releases_eagle_runs_to_the_handler_s_assert(tag, tmp_path):
    """With no step count, SGLang's speculative handler (`_handle_eagle_family`)
    asserts that no top-k is given either, then picks both itself: an explicit top-k
    is its AssertionError, none resolves."""
    path = tmp_path / "eagle.yaml"
    entry = entry_matrix("eagle", EAGLE_AXES, ("attention_backend", "speculative_eagle_topk"))
    path.write_text(entry.replace(PKG + "/", "python/sglang/srt/arg_groups/") + EAGLE_MATRIX)
    matrix = load_matrix(str(path))
    table = evaluate_at(Path(RELEASES), tag, matrix).table
    for index, cell in enumerate(itertools.product(*EAGLE_AXES.values())):
        values = dict(zip(EAGLE_AXES, cell, strict=True))
        outcome = table.outcome_at(index)
        asserted = values["speculative_eagle_topk"] is not None
        expected = (ERROR, "AssertionError") if asserted else VALUE
        found = (outcome.kind, outcome.value) if asserted else outcome.kind
        assert found == expected, (values, outcome)
