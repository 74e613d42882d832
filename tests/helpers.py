"""Small repositories holding hand-written override modules, for evaluator tests."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

from harness import gitio
from harness.closure.extract import Closure, Pipeline
from harness.engine.explore import evaluate_closure
from harness.engine.outcome import KEPT, VALUE, OutcomeTable, revision_wide
from harness.errors import Absent, Unevaluable
from harness.matrix.load import load_matrix
from harness.matrix.model import Matrix
from harness.scan.versions import Versions
from harness.testing.gitrepo import FixtureRepo

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


def commit_versions(root: Path, versions: list[str], extra: dict | None = None) -> list[str]:
    """A repository whose commits hold each text as overrides.py, in order (the first
    commit also writes `extra`, e.g. the fixture package's other modules)."""
    repo = FixtureRepo(root)
    shas = []
    for n, text in enumerate(versions):
        files = {**(extra or {}), PATH: text} if n == 0 else {PATH: text}
        shas.append(repo.commit(f"version {n}", files))
    return shas


@dataclass
class Evaluated:
    table: OutcomeTable
    closure: Closure | Pipeline | None  # None: nothing could be extracted
    calls: int


def evaluate_at(
    root: Path, rev: str, matrix: Matrix | None = None, exhaustive: bool = False
) -> Evaluated:
    """The real extraction and evaluation of the target at `rev` (no cache)."""
    matrix = matrix or load_matrix()
    repo = gitio.open_repo(str(root))
    versions = Versions(repo, matrix, exhaustive=exhaustive)
    revision = gitio.resolve(repo, rev)
    try:
        closure = versions.extract(versions.files(revision.sha))
    except (Absent, Unevaluable) as exc:
        return Evaluated(revision_wide(exc, matrix.size), None, 0)
    try:
        run = evaluate_closure(closure, matrix, versions.bound, revision.label, exhaustive)
    except Unevaluable as exc:
        return Evaluated(revision_wide(exc, matrix.size), closure, 0)
    return Evaluated(run.table, closure, run.calls)


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
