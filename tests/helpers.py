"""Small repositories holding hand-written override modules, for evaluator tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

from harness import git
from harness.evaluate import KEPT, VALUE, evaluate
from harness.matrix import Matrix, load_matrix
from harness.testing.gitrepo import FixtureRepo
from harness.versions import bind_matrix

PATH = "python/sglang/srt/arg_groups/overrides.py"

HEAVY_TOP = """\
import torch
from sglang.srt.environ import envs
from sglang.srt.model_executor.cuda_graph_config import Backend
from sglang.srt.platforms import get_platform
from sglang.srt.arg_groups.view import model_config_of, use_mla_backend
from sglang.srt.utils import is_sm100_supported, is_hip

torch.cuda.init()
"""


def module(body: str, top: str = HEAVY_TOP) -> str:
    return top + "\n\n" + textwrap.dedent(body)


def commit_versions(root: Path, versions: list[str]) -> list[str]:
    """A repository whose commits hold each text as overrides.py, in order."""
    repo = FixtureRepo(root)
    return [repo.commit(f"version {n}", {PATH: text}) for n, text in enumerate(versions)]


def evaluate_at(root: Path, rev: str, matrix: Matrix | None = None, exhaustive: bool = False):
    matrix = matrix or load_matrix()
    repo = git.open_repo(str(root))
    revision = git.resolve(repo, rev)
    source = git.read_file(repo, revision, matrix.target.path)
    return evaluate(source, matrix, bind_matrix(matrix), revision.label, exhaustive)


def resolved_outcomes(table, matrix: Matrix) -> list:
    """Per cell, the resolved page_size (kept -> the input), or the outcome itself."""
    axis = matrix.axis_index("page_size")
    cells = []
    for index in range(matrix.size):
        outcome = table.outcome_at(index)
        if outcome.kind == VALUE:
            cells.append(outcome.value)
        elif outcome.kind == KEPT:
            cells.append(matrix.axes[axis].values[matrix.cell(index)[axis]])
        else:
            cells.append((outcome.kind, outcome.value))
    return cells
