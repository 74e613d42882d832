"""The pytest entry point's machinery: the slices, the per-process state, the items.

Imported by `harness.pytest_plugin` only when `--override-matrix` is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pytest

from harness import baseline, git
from harness.compare import compare
from harness.errors import HarnessError
from harness.evaluate import OutcomeTable, evaluate_closure
from harness.matrix import Matrix, format_value, load_matrix
from harness.pytest_plugin import MARKER, TARGET
from harness.report.model import rule_view
from harness.report.text import rule_lines
from harness.versions import Code, Versions, code_at

MIN_ITEMS = 32


class MatrixCollector(pytest.Collector):
    """The slices of the matrix, under one name: `override-matrix:NAME::NAME[axis=v,...]`."""

    def collect(self) -> list[pytest.Item]:
        target = self.config.stash[TARGET]
        items = []
        for name, cube in slices(target.matrix):
            item = SliceItem.from_parent(self, name=name, cube=cube)
            item.add_marker(MARKER)
            items.append(item)
        return items


def slices(matrix: Matrix) -> list[tuple[str, tuple[int, ...]]]:
    """One cube per combination of values of the fewest leading axes giving >= MIN_ITEMS."""
    count, depth = 1, 0
    while depth < len(matrix.axes) and count < MIN_ITEMS:
        count *= matrix.radices[depth]
        depth += 1
    full = matrix.full_masks()
    out = []
    for index in range(count):
        digits, rest = [], index
        for radix in reversed(matrix.radices[:depth]):
            rest, digit = divmod(rest, radix)
            digits.append(digit)
        digits.reverse()
        cube = tuple(1 << d for d in digits) + full[depth:]
        label = ",".join(
            f"{axis.name}={format_value(axis.values[d])}"
            for axis, d in zip(matrix.axes, digits, strict=False)
        )
        out.append((f"{matrix.name}[{label}]", cube))
    return out


@dataclass
class Target:
    """What the items test: a revision of a repository against a baseline, per process."""

    matrix: Matrix
    repo_path: str | None
    rev: str
    baseline_path: str
    explore: bool

    @classmethod
    def from_config(cls, config: pytest.Config) -> Target:
        path = config.getoption("override_baseline")
        return cls(
            load_matrix(config.getoption("override_matrix")),
            config.getoption("override_repo"),
            config.getoption("override_rev"),
            str(Path(path).resolve()),
            config.getoption("override_explore"),
        )

    def update_baseline(self) -> None:
        repo = git.open_repo(self.repo_path)
        baseline.snapshot(
            Versions(repo, self.matrix), git.resolve(repo, self.rev), self.baseline_path
        )

    @cached_property
    def loaded(self) -> Loaded:
        return Loaded.of(self)


@dataclass
class Loaded:
    """The baseline table and the revision's code, made once per process."""

    expected: OutcomeTable
    versions: Versions
    code: Code | None
    failure: OutcomeTable | None  # the whole revision is absent or unevaluable
    label: str  # the revision, as messages name it

    @classmethod
    def of(cls, target: Target) -> Loaded:
        expected = baseline.read(target.baseline_path, target.matrix)
        repo = git.open_repo(target.repo_path)
        revision = git.resolve(repo, target.rev)
        versions = Versions(repo, target.matrix)
        code = code_at(versions, revision)
        failure = versions.at(revision).table if code is None else None  # revision-wide
        return cls(expected, versions, code, failure, revision.label)

    def actual(self, target: Target, cube: tuple[int, ...]) -> OutcomeTable:
        if self.failure is not None:
            return self.failure
        code, bound = self.code, self.versions.bound
        exhaustive = not target.explore
        return evaluate_closure(
            code.closure, target.matrix, bound, code.label, exhaustive, cube
        ).table


class Mismatch(Exception):
    """A slice that differs from the baseline; the message is the report."""


class SliceItem(pytest.Item):
    """One slice of the matrix: its outcomes at the revision equal the baseline's."""

    def __init__(self, *, cube: tuple[int, ...], **kwargs) -> None:
        super().__init__(**kwargs)
        self.cube = cube

    def runtest(self) -> None:
        target = self.config.stash[TARGET]
        try:
            loaded = target.loaded
        except HarnessError as exc:
            raise Mismatch(f"harness: {exc}") from None
        actual = loaded.actual(target, self.cube)
        comparison = compare(target.matrix, loaded.expected, actual, self.cube)
        if comparison.changed:
            raise Mismatch("\n".join(self._summary(target, loaded, comparison)))

    def _summary(self, target: Target, loaded: Loaded, comparison) -> list[str]:
        field = target.matrix.target.output
        views = [rule_view(target.matrix, rule) for rule in comparison.rules]
        head = (
            f"{comparison.changed:,} cells of this slice differ from the baseline "
            f"({target.baseline_path}) at {loaded.label}; {field}, baseline -> now:"
        )
        return [head, *rule_lines(views)]

    def repr_failure(self, excinfo, style=None) -> str:
        if isinstance(excinfo.value, Mismatch):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.config.stash[TARGET].baseline_path, None, self.name
