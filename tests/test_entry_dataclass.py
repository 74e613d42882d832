"""An entry builds and fills the resolution code's own dataclasses (SGLang 0.5.18's
`CudaGraphConfig` of two `PhaseConfig`s): Python's decorator makes them, so their
`__init__`, defaults, `default_factory`, `__eq__` and `frozen` are Python's.

The fixture is one SGLang-shaped commit; the expected outcome of every cell comes
from importing its files in plain Python and running the entry, never from harness.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.test_entry import PKG, harness_outcomes, plain_outcomes
from tests.test_entry_class import AXES, FILES, OUTPUTS, commit_files

GRAPHS = '''\
"""Capture settings per phase, and their defaults."""
{future}
import dataclasses
from dataclasses import dataclass, field
from typing import List, Optional


class Kind:
    FULL = "full"
    PIECES = "pieces"
    OFF = "off"


@dataclass
class PhaseSettings:
    """One phase."""

    kind: str = Kind.OFF
    max_bs: Optional[int] = None
    sizes: List[int] = field(default_factory=list)


@dataclass
class GraphSettings:
    """Both phases."""

    decode: PhaseSettings = field(default_factory=lambda: PhaseSettings(kind=Kind.FULL))
    prefill: PhaseSettings = field(default_factory=PhaseSettings)

    def phase(self, name: str) -> PhaseSettings:
        return getattr(self, name)


@dataclasses.dataclass(frozen=True)
class Limits:
    page: int
    steps: int = 2


def default_settings() -> GraphSettings:
    return GraphSettings()
'''
PIPELINE = '''\
"""Resolution filling the capture settings."""

from sglang.srt.arg_groups.graphs import GraphSettings, Kind, Limits, default_settings


def run_resolution_pipeline(server_args):
    settings = default_settings()
    if server_args.attention_backend == "fa4":
        settings.phase("prefill").kind = Kind.FULL
        settings.prefill.sizes.append(8)
    if settings == GraphSettings():
        server_args.attention_backend = "untouched"
    limits = Limits(page=server_args.page_size or 16)
    if server_args.page_size == 64:
        limits.page = 1  # frozen: Python raises FrozenInstanceError
    sizes = settings.prefill.sizes + settings.decode.sizes
    server_args.page_size = limits.page * (len(sizes) + limits.steps)
    server_args.attention_backend += ":" + settings.decode.kind + ":" + settings.prefill.kind
{more}'''
FUTURE = "\nfrom __future__ import annotations\n"


def commit(tmp_path: Path, graphs: str, more: str = "") -> tuple[Path, str, Path]:
    files = {**FILES, f"{PKG}/graphs.py": graphs, f"{PKG}/pipeline.py": PIPELINE.format(more=more)}
    return commit_files(tmp_path, files)


@pytest.mark.parametrize("future", ["", FUTURE], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("exhaustive", [False, True], ids=["explored", "every-cell"])
def test_dataclasses_of_the_resolution_code_are_pythons(tmp_path, future, exhaustive):
    root, sha, matrix = commit(tmp_path, GRAPHS.format(future=future))
    found = harness_outcomes(root, sha, matrix, exhaustive=exhaustive, outputs=OUTPUTS)
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)
    assert found == expected
    assert sum(outcome[0] == "error" for outcome in expected) == 2  # page_size 64: frozen


@pytest.mark.parametrize(
    "special, more",
    [("ClassVar[int]", ""), ("InitVar[int]", ""), ("KW_ONLY", ""),
     ("int", "    dataclass(run_resolution_pipeline)\n")],
    ids=["ClassVar", "InitVar", "KW_ONLY", "a-function"],
)  # fmt: skip
def test_what_python_makes_otherwise_is_refused_naming_it(tmp_path, special, more):
    """`ClassVar`, `InitVar` and `KW_ONLY` make something other than a field in Python,
    and the harness never evaluates annotations; Python's decorator on a function
    fails its own way: each is refused (exit 4), naming it."""
    graphs = GRAPHS.format(future="").replace("    steps: int = 2\n", f"    steps: {special} = 2\n")
    root, sha, matrix = commit(tmp_path, graphs, more)
    if more:
        text = (tmp_path / "tree" / PKG / "pipeline.py").read_text()
        text = text.replace('"""\n\n', '"""\n\nfrom dataclasses import dataclass\n', 1)
        sha = FixtureRepo(root).commit("decorate a function", {f"{PKG}/pipeline.py": text})
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"].get("base", "")
    what = f"field steps annotated {special.split('[')[0]}" if not more else "of a function"
    assert done.code == 4 and what in note, (done.code, note)
