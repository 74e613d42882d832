"""pytest entry point: a revision's outcomes against a committed baseline, as test items.

Inert unless `--override-matrix` is given: this module imports nothing but
pytest, so every other pytest run pays nothing for it: the rest of harness is
imported inside the functions that need it, which run only when asked. The
revision's table is made once per process, as `harness diff` makes it (one
evaluation, once per decision path where the code is pure; none when the
on-disk cache holds it; `--override-exhaustive` runs every cell), and the
matrix is split on its leading axes into slices (at least 32), one item each,
comparing its slice with the baseline and failing with the rule summary of
its mismatches. `-n auto` runs no workers when no test paths are given (the
one evaluation cannot be shared). `--override-update` rewrites the baseline
first (once, in the controlling process), so every item then passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

MARKER = "override_matrix"
TARGET = pytest.StashKey[object]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("override-matrix", "harness: override outcomes against a baseline")
    group.addoption("--override-matrix", metavar="NAME|PATH",
                    help="compare this matrix's outcomes with --override-baseline")  # fmt: skip
    group.addoption("--override-baseline", metavar="FILE",
                    help="the baseline file (harness snapshot REV -o FILE)")  # fmt: skip
    group.addoption("--override-rev", default="HEAD", metavar="REV",
                    help="the revision to test (default HEAD)")  # fmt: skip
    group.addoption("--override-repo", metavar="PATH",
                    help="the repository (default: the current directory's)")  # fmt: skip
    group.addoption("--override-update", action="store_true",
                    help="rewrite the baseline from --override-rev first")  # fmt: skip
    group.addoption("--override-exhaustive", action="store_true",
                    help="run every cell, even where the code is pure and one run per "
                    "decision path would do")  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: a slice of an override matrix (harness)")
    if not config.getoption("override_matrix"):
        return
    if not config.getoption("override_baseline"):
        raise pytest.UsageError("--override-matrix needs --override-baseline FILE")
    # Deferred: only a run that asks for the matrix pays for git, yaml and the evaluator.
    from harness.errors import HarnessError
    from harness.report import baseline

    try:
        target = Target.from_config(config)
        if config.getoption("override_update") and not hasattr(config, "workerinput"):
            target.update_baseline()
        target.expected = baseline.read(target.baseline_path, target.matrix)  # bad: one line
        config.stash[TARGET] = target
    except HarnessError as exc:
        raise pytest.UsageError(f"harness: {exc}") from None


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: pytest-xdist may be absent
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` with the matrix and no test paths (on the command line or as `testpaths`):
    no workers. The check is one evaluation of the matrix, which workers cannot share,
    only start up for; with test paths, pytest-xdist decides as usual."""
    alone = config.args_source == pytest.Config.ArgsSource.INVOCATION_DIR
    if config.getoption("override_matrix") and alone:
        return 0
    return None


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    target = config.stash.get(TARGET, None)
    if target is None:
        return
    name = f"override-matrix:{target.matrix.name}"
    items.extend(MatrixCollector.from_parent(session, name=name).collect())


# --- the items (harness itself is imported only inside them) ---------------

MIN_ITEMS = 32


class MatrixCollector(pytest.Collector):
    """The slices of the matrix, under one name: `override-matrix:NAME::NAME[axis=v,...]`."""

    def collect(self) -> list[pytest.Item]:
        target = self.config.stash[TARGET]
        items: list[pytest.Item] = []
        for name, cube, block in slices(target.matrix):
            items.append(SliceItem.from_parent(self, name=name, cube=cube, block=block))
        items.append(BlindSpotItem.from_parent(self, name=f"{target.matrix.name}[blind spots]"))
        for item in items:
            item.add_marker(MARKER)
        return items


def slices(matrix) -> list[tuple[str, tuple[int, ...], tuple[int, int]]]:
    """One cube per combination of values of the fewest leading axes giving >= MIN_ITEMS,
    with the block of cell indices it is (leading axes vary slowest)."""
    from harness.matrix.model import format_value

    count, depth = 1, 0
    while depth < len(matrix.axes) and count < MIN_ITEMS:
        count *= matrix.radices[depth]
        depth += 1
    full, step = matrix.full_masks(), matrix.size // count  # cells per slice
    out = []
    for index in range(count):
        digits = matrix.cell(index * step)[:depth]  # the slice's leading values
        cube = tuple(1 << d for d in digits) + full[depth:]
        label = ",".join(
            f"{axis.name}={format_value(axis.values[d])}"
            for axis, d in zip(matrix.axes, digits, strict=False)
        )
        block = (index * step, (index + 1) * step)
        out.append((f"{matrix.name}[{label}]", cube, block))
    return out


def _documents():
    """Where parsed matrix documents are kept: beside the tables the run reads and writes."""
    from harness.scan.cache import default_directory, documents_in

    return documents_in(default_directory())


@dataclass
class Target:
    """What the items test: a revision of a repository against a baseline, per process."""

    matrix: Any  # harness.matrix.model.Matrix
    repo_path: str | None
    rev: str
    baseline_path: str
    exhaustive: bool
    expected: Any = None  # the baseline's OutcomeTable, read once

    @classmethod
    def from_config(cls, config: pytest.Config) -> Target:
        from harness.matrix.load import load_matrix

        path = config.getoption("override_baseline")
        return cls(
            load_matrix(config.getoption("override_matrix"), documents=_documents()),
            config.getoption("override_repo"),
            config.getoption("override_rev"),
            str(Path(path).resolve()),
            config.getoption("override_exhaustive"),
        )

    @cached_property
    def resolved(self):
        """(the repository, or None for a release; the revision --override-rev names)."""
        from harness import gitio
        from harness.releases.resolver import revision_resolver
        from harness.releases.revisions import is_release

        repo = None if is_release(self.rev) else gitio.open_repo(self.repo_path)
        return repo, revision_resolver(repo)(self.rev)

    @cached_property
    def versions(self):
        from harness.scan.cache import TableCache, default_directory
        from harness.scan.versions import Versions

        repo, _ = self.resolved
        return Versions(repo, self.matrix, TableCache(default_directory()), self.exhaustive)

    @cached_property
    def base(self):
        """The baseline's commit, when blind spots can be looked for from it (a commit of
        the repository other than the revision), else why not (a str), else None (it
        is the revision: nothing changed, nothing to look for)."""
        from harness import gitio
        from harness.errors import HarnessError
        from harness.report import baseline

        sha = baseline.sha_of(self.baseline_path)
        repo, revision = self.resolved
        if repo is None or sha is None or revision.sha is None:
            return "the baseline and the revision must both be commits of the repository"
        if sha == revision.sha:
            return None
        try:
            return gitio.resolve(repo, sha)
        except HarnessError as exc:
            return Unseen(f"cannot tell: the baseline's commit {sha[:10]} cannot be read ({exc})")

    @cached_property
    def states(self) -> list:
        """The revision's state, after the baseline commit's when blind spots need it: as the
        baseline records it (its table and coverage, the code read from git), else
        evaluated side by side with the revision."""
        _, revision = self.resolved
        if self.base is None or isinstance(self.base, str):
            return [self.versions.at(revision)]
        running = self.versions.start(revision)  # evaluates while the base is read
        recorded = self.recorded_base()
        if recorded is not None:
            return [recorded, self.versions.settle(running)]
        return [self.versions.at(self.base), self.versions.settle(running)]

    @cached_property
    def baseline(self) -> Any:
        """The baseline's OutcomeTable (with the coverage it records), read once."""
        from harness.report import baseline

        return self.expected or baseline.read(self.baseline_path, self.matrix)

    def recorded_base(self) -> Any:
        """The baseline commit's state without evaluating it, when the baseline records
        the coverage of that very code (as many sites as its code has)."""
        from harness.engine.branches import sites_of
        from harness.engine.sandbox import load_order
        from harness.scan.versions import State

        table = self.baseline
        code = self.versions.code_at(self.base) if table.branches else None
        if code is None or len(sites_of(code.closure, load_order)) != len(table.branches):
            return None
        return State(f"baseline:{self.baseline_path}", table, code=code)

    def update_baseline(self) -> None:
        from harness.report import baseline
        from harness.scan.versions import Versions

        repo, revision = self.resolved
        table = Versions(repo, self.matrix).at(revision).table
        baseline.snapshot(self.matrix, revision, table, self.baseline_path)

    @cached_property
    def loaded(self) -> Loaded:
        return Loaded.of(self)

    def blind_spots(self) -> tuple[list, str | None] | str:
        """The blind spots between the baseline's commit and the revision (see `harness
        diff`), and why coverage could not be read; or why they cannot be looked for."""
        from harness.scan.diff import blind_spots

        if isinstance(self.base, str):
            return self.base
        if self.base is None:
            return [], None
        return blind_spots(self.versions, self.base, self.resolved[1], self.states)


@dataclass
class Loaded:
    """The baseline table and the revision's, made once per process: one evaluation of the
    whole matrix (or none, when the on-disk cache holds it), which every item slices."""

    matrix: Any
    expected: Any  # the baseline's OutcomeTable
    actual: Any  # the revision's OutcomeTable (revision-wide when it cannot run)
    label: str  # the revision, as messages name it

    @cached_property
    def comparison(self) -> Any:
        """Every changed cell of the matrix, found once: each item takes its block."""
        from harness.scan.compare import changed_only

        return changed_only(self.matrix, self.expected, self.actual)

    @classmethod
    def of(cls, target: Target) -> Loaded:
        _, revision = target.resolved
        return cls(target.matrix, target.baseline, target.states[-1].table, revision.label)


class Unseen(str):
    """Why blind spots could not be looked for where they should be: the item fails."""


class Mismatch(Exception):
    """A slice that differs from the baseline; the message is the report."""


class MatrixItem(pytest.Item):
    """An item of the matrix: its failure is the harness's report, its place the baseline."""

    def repr_failure(self, excinfo, style=None) -> str:
        if isinstance(excinfo.value, Mismatch):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.config.stash[TARGET].baseline_path, None, self.name


class SliceItem(MatrixItem):
    """One slice of the matrix: its outcomes at the revision equal the baseline's."""

    def __init__(self, *, cube: tuple[int, ...], block: tuple[int, int], **kwargs) -> None:
        super().__init__(**kwargs)
        self.cube, self.block = cube, block

    def runtest(self) -> None:
        from harness.errors import HarnessError
        from harness.scan.compare import part

        target = self.config.stash[TARGET]
        try:
            loaded = target.loaded
        except HarnessError as exc:
            raise Mismatch(f"harness: {exc}") from None
        comparison = part(target.matrix, loaded.comparison, *self.block)
        if comparison.changed:
            raise Mismatch("\n".join(self._summary(target, loaded, comparison)))

    def _summary(self, target: Target, loaded: Loaded, comparison) -> list[str]:
        from harness.report.model import output_label, rule_view
        from harness.report.text import rule_lines

        field = output_label(target.matrix.target)
        views = [rule_view(target.matrix, rule) for rule in comparison.rules]
        head = (
            f"{comparison.changed:,} cells of this slice differ from the baseline "
            f"({target.baseline_path}) at {loaded.label}; {field}, baseline -> now:"
        )
        return [head, *rule_lines(views)]


class BlindSpotItem(MatrixItem):
    """Changed code between the baseline's commit and the revision that the matrix takes
    every way: a change there would show in the slices. Fails on each blind spot."""

    def runtest(self) -> None:
        from harness.errors import HarnessError
        from harness.report.blind import blind_title, numbered, spot_json

        target = self.config.stash[TARGET]
        try:
            found = target.blind_spots()
        except HarnessError as exc:
            raise Mismatch(f"harness: cannot tell: {exc}") from None
        if isinstance(found, Unseen):
            raise Mismatch(f"harness: {found}")
        if isinstance(found, str):
            pytest.skip(f"blind spots not looked for: {found}")
        spots, unseen = found
        if unseen:
            raise Mismatch(f"harness: cannot tell: {unseen}")
        if spots:
            items = [spot_json(spot) for spot in spots]
            raise Mismatch("\n".join([blind_title(len(spots), False), *numbered(items)]))
