"""pytest entry point: a revision's outcomes against a committed baseline, as test items.

Inert unless `--override-matrix` is given: this module imports nothing but
pytest (and its options' value types, `harness.option_values`), so every other pytest run
pays nothing for it: the rest of harness is
imported inside the functions that need it, which run only when asked. The
revision's table is made once per process, as `harness diff` makes it (one
evaluation, once per decision path where the code is pure; none when the
on-disk cache holds it; `--override-exhaustive` runs every cell), and the
matrix is split on its leading axes into slices (at least 32), one item each,
comparing its slice with the baseline and failing with the rule summary of
its mismatches. `--override-rev A...B` (or `A..B`) takes the range's base, as
`harness diff` reads it, in place of a baseline file. `-n auto` runs no workers
when no test paths are given (the one evaluation cannot be shared).
`--override-update` rewrites the baseline first (once, in the controlling
process), so every item then passes.

With `--override-matrix` and no test paths on the command line, the run is the
check alone: the project's own tests and conftests are left alone (see
`pytest_load_initial_conftests`), so it passes in a tree whose tests cannot be
imported here (SGLang's need torch). Test paths on the command line are
collected as usual, beside the check.
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
    """The check's own options, then those it shares with `harness diff` (the same names
    after `--override-`, read by the same value types; see docs/ci.md)."""
    group = parser.getgroup("override-matrix", "harness: override outcomes against a baseline")
    group.addoption("--override-matrix", metavar="NAME|PATH",
                    help="compare this matrix's outcomes with --override-baseline")  # fmt: skip
    group.addoption("--override-baseline", metavar="FILE",
                    help="the baseline file (harness snapshot REV -o FILE)")  # fmt: skip
    group.addoption("--override-rev", default="HEAD", metavar="REV",
                    help="the revision to test (default HEAD); or a range A...B (A..B), "
                    "B against its base, in place of --override-baseline")  # fmt: skip
    group.addoption("--override-update", action="store_true",
                    help="rewrite the baseline from --override-rev first")  # fmt: skip
    group.addoption("--override-exhaustive", action="store_true",
                    help="run every cell, even where the code is pure and one run per "
                    "decision path would do")  # fmt: skip
    add_shared_options(group)


def add_shared_options(group) -> None:
    """What a diff takes that the check takes too, declared once (`harness.option_values`),
    with its help as `harness diff --help` says it, the options it names respelled."""
    from harness.option_values import OPTIONS  # argparse and two constants

    for name, spec in OPTIONS.items():
        group.addoption(f"--override-{name}", **{**spec, "help": spelled(spec["help"])})


def checks_only(config: pytest.Config) -> bool:
    """Whether the run is the matrix check alone: `--override-matrix` and no test paths on
    the command line (the project's `testpaths` do not count: they name its own tests)."""
    known = config.known_args_namespace
    return bool(getattr(known, "override_matrix", None)) and not known.file_or_dir


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """The check alone imports no conftest of the project, as `--noconftest` would.

    This is the one hook that runs before pytest imports the first conftests (those of
    the rootdir and its `test*` directories, even with nothing to collect there): a
    project's conftests import what its tests need (torch, for SGLang), which a CPU-only
    check does not have, and the check's items use none of them. Called for plugins
    loaded from entry points, as this one is; `pytest_configure` then empties what the
    session collects (see there)."""
    if checks_only(early_config):
        early_config.known_args_namespace.noconftest = True


def pytest_configure(config: pytest.Config) -> None:
    """Check the options and read the baseline (a usage error names the fix). For the check
    alone, the session is given no paths to collect, so the project's test files are
    never imported (rather than imported and dropped in `pytest_collection_modifyitems`,
    which would report each import error, or walked and refused in
    `pytest_ignore_collect`): the only items are the matrix's, added below."""
    config.addinivalue_line("markers", f"{MARKER}: a slice of an override matrix (harness)")
    if not config.getoption("override_matrix"):
        return
    check_options(config)
    if checks_only(config):
        config.args = []
    # Deferred: only a run that asks for the matrix pays for git, yaml and the evaluator.
    from harness.errors import HarnessError
    from harness.report import baseline

    try:
        target = Target.from_config(config)
        if config.getoption("override_update") and not hasattr(config, "workerinput"):
            target.update_baseline()
        if target.baseline_path is not None:
            target.expected = baseline.read(target.baseline_path, target.matrix)  # bad: 1 line
        config.stash[TARGET] = target
    except HarnessError as exc:
        raise pytest.UsageError(spelled(f"harness: {exc}")) from None


def check_options(config: pytest.Config) -> None:
    """A baseline file, or a range whose base stands in for one; never both."""
    from harness.releases.ranges import split_range

    rev, path = config.getoption("override_rev"), config.getoption("override_baseline")
    if split_range(rev) is None:
        if not path:
            raise pytest.UsageError(
                "--override-matrix needs --override-baseline FILE (or a range "
                "--override-rev A...B, whose base is the baseline)"
            )
        return
    if path or config.getoption("override_update"):
        given = "--override-baseline" if path else "--override-update"
        raise pytest.UsageError(
            f"--override-rev {rev} is a range, whose base is the baseline: drop {given}, "
            "or give one revision"
        )


def open_session(config: pytest.Config) -> Any:
    """The run's `harness.session.Session`, from the options as `harness diff` maps its own
    (their defaults are diff's: one declaration, `harness.option_values`)."""
    from harness.session import session_of

    def value(name: str) -> Any:
        return config.getoption(f"override_{name.replace('-', '_')}")

    matrix, rev = config.getoption("override_matrix"), config.getoption("override_rev")
    return session_of(matrix, [rev], value)


def spelled(message: str) -> str:
    """A harness message as this entry's user reads it: the options it shares with the
    command line named as given here (`--cache-dir` is `--override-cache-dir`). An
    option's name stands in a message after a space or `(` and before a space, `)` or
    punctuation; a value the user typed that holds `--repo` after `=`, `/` or a quote
    (a path, an axis value) is left as typed, and so is pip's own `--cert`."""
    import re

    from harness.option_values import OPTIONS

    names = "|".join(map(re.escape, OPTIONS))
    own = rf"(?<!pip's )(?:(?<=[\s(])|^)--({names})(?=[\s),.;:]|$)"  # pip's --cert is pip's
    return re.sub(own, r"--override-\1", message)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: pytest-xdist may be absent
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` for the check alone (no test paths on the command line): no workers. The
    check is one evaluation of the matrix, which workers cannot share, only start up
    for; with test paths, pytest-xdist decides as usual."""
    return 0 if checks_only(config) else None


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
Slice = tuple[str, tuple[int, ...], tuple[int, int]]  # (item name, its cube, its block of cells)


class MatrixCollector(pytest.Collector):
    """The slices of the matrix, under one name: `override-matrix:NAME::NAME[axis=v,...]`."""

    def collect(self) -> list[pytest.Item]:
        target = self.config.stash[TARGET]
        items: list[pytest.Item] = []
        for name, cube, block in slices(target.matrix, target.session.where):
            items.append(SliceItem.from_parent(self, name=name, cube=cube, block=block))
        items.append(BlindSpotItem.from_parent(self, name=f"{target.matrix.name}[blind spots]"))
        for item in items:
            item.add_marker(MARKER)
        return items


def slices(matrix, where: tuple[int, ...] | None = None) -> list[Slice]:
    """One cube per combination of values of the fewest leading axes giving >= MIN_ITEMS,
    with the block of cell indices it is (leading axes vary slowest); only those with a
    cell in the `where` cube (`--override-where`), if given."""
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
        if where is not None and not all(c & w for c, w in zip(cube, where, strict=True)):
            continue
        label = ",".join(
            f"{axis.name}={format_value(axis.values[d])}"
            for axis, d in zip(matrix.axes, digits, strict=False)
        )
        block = (index * step, (index + 1) * step)
        out.append((f"{matrix.name}[{label}]", cube, block))
    return out


@dataclass
class Target:
    """What the items test: a revision of a repository against a baseline, per process."""

    session: Any  # harness.session.Session: the matrix, its cells, the repository, ...
    rev: str
    baseline_path: str | None  # None: --override-rev is a range, whose base is the baseline
    exhaustive: bool
    expected: Any = None  # the baseline's OutcomeTable, read once

    @classmethod
    def from_config(cls, config: pytest.Config) -> Target:
        path = config.getoption("override_baseline")
        return cls(
            open_session(config),
            config.getoption("override_rev"),
            str(Path(path).resolve()) if path else None,
            config.getoption("override_exhaustive"),
        )

    @property
    def matrix(self) -> Any:
        return self.session.matrix

    @cached_property
    def ends(self) -> tuple[Any, Any, Any]:
        """(the repository, or None for a release; a range's base, or None with a baseline
        file; the revision tested: --override-rev, or the range's head), as `harness diff`
        reads a range (`harness.releases.ranges`)."""
        from harness.releases.ranges import resolve_range

        repo, resolve = self.session.repo, self.session.resolve
        ranged = resolve_range(repo, resolve, self.rev)
        return (repo, *ranged) if ranged else (repo, None, resolve(self.rev))

    @property
    def resolved(self):
        """(the repository, or None for a release; the revision tested)."""
        repo, _, revision = self.ends
        return repo, revision

    @property
    def against(self) -> str:
        """What the revision is compared with, as messages name it."""
        if self.baseline_path is not None:
            return f"the baseline ({self.baseline_path})"
        return self.ends[1].label

    @cached_property
    def versions(self):
        return self.session.versions(self.exhaustive)

    @cached_property
    def base(self):
        """The baseline's commit (or the range's base), when blind spots can be looked for
        from it (a commit of the repository other than the revision), else why not (a
        str), else None (it is the revision: nothing changed, nothing to look for)."""
        from harness import gitio
        from harness.errors import HarnessError
        from harness.report import baseline

        repo, ranged, revision = self.ends
        if ranged is not None:
            return None if ranged.sha == revision.sha else ranged
        sha = baseline.sha_of(self.baseline_path)
        if repo is None or sha is None or revision.kind != gitio.COMMIT:
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
        """The baseline's OutcomeTable (with the coverage it records), read once; for a
        range, its base's, evaluated beside the revision: both must be evaluable, as
        `harness diff` would compare them (else CannotTell, and every item fails)."""
        from harness.report import baseline

        if self.baseline_path is not None:
            return self.expected or baseline.read(self.baseline_path, self.matrix)
        return self.compared_ends()[0].table

    def compared_ends(self) -> list:
        """A range's states (its base's, then the revision's; one when they are the same
        commit), when they can be compared as `harness diff` compares them: both evaluable,
        or a base without the target. Else CannotTell, saying why."""
        from harness.errors import CannotTell
        from harness.scan.diff import comparable

        base, head = self.states[0], self.states[-1]
        if not comparable(base, head):
            reasons = {state.reason for state in (base, head) if not state.evaluable}
            raise CannotTell(f"{self.rev}: {'; '.join(sorted(reasons))}")
        return self.states

    def recorded_base(self) -> Any:
        """The baseline commit's state without evaluating it, when the baseline records
        the coverage of that very code (as many sites as its code has)."""
        from harness.engine.branches import sites_of
        from harness.engine.sandbox import load_order
        from harness.scan.tables import State

        if self.baseline_path is None:  # a range: nothing recorded, its base is evaluated
            return None
        table = self.baseline
        code = self.versions.code_at(self.base) if table.branches else None
        if code is None or len(sites_of(code.closure, load_order)) != len(table.branches):
            return None
        return State(f"baseline:{self.baseline_path}", table, code=code)

    def update_baseline(self) -> None:
        from harness.report import baseline

        _, revision = self.resolved
        table = self.session.versions().at(revision).table
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
        states = self.compared_ends() if self.baseline_path is None else self.states
        if self.base is None:
            return [], None
        return blind_spots(self.versions, self.base, self.resolved[1], states)


@dataclass
class Loaded:
    """The baseline table and the revision's, made once per process: one evaluation of the
    whole matrix (or none, when the on-disk cache holds it), which every item slices."""

    matrix: Any
    expected: Any  # the baseline's OutcomeTable
    actual: Any  # the revision's OutcomeTable (revision-wide when it cannot run)
    label: str  # the revision, as messages name it
    where: tuple[int, ...] | None  # the cells compared (--override-where)

    @cached_property
    def comparison(self) -> Any:
        """Every changed cell of the matrix, found once: each item takes its block."""
        from harness.scan.compare import changed_only

        return changed_only(self.matrix, self.expected, self.actual, self.where)

    @classmethod
    def of(cls, target: Target) -> Loaded:
        _, revision = target.resolved
        table = target.states[-1].table
        return cls(target.matrix, target.baseline, table, revision.label, target.session.where)


class Unseen(str):
    """Why blind spots could not be looked for where they should be: the item fails."""


class Mismatch(Exception):
    """A slice that differs from the baseline; the message is the report."""


def failure(text: str) -> Mismatch:
    """An item that fails because harness could not compare: its message, as `harness:`."""
    return Mismatch(spelled(f"harness: {text}"))


class MatrixItem(pytest.Item):
    """An item of the matrix: its failure is the harness's report, its place the baseline."""

    def repr_failure(self, excinfo, style=None) -> str:
        if isinstance(excinfo.value, Mismatch):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.config.stash[TARGET].baseline_path or self.path, None, self.name


class SliceItem(MatrixItem):
    """One slice of the matrix: its outcomes at the revision equal the baseline's."""

    def __init__(self, *, cube: tuple[int, ...], block: tuple[int, int], **kwargs) -> None:
        super().__init__(**kwargs)
        self.cube, self.block = cube, block

    def runtest(self) -> None:
        from harness.errors import CannotTell, HarnessError
        from harness.scan.compare import part

        target = self.config.stash[TARGET]
        try:
            loaded = target.loaded
        except CannotTell as exc:
            raise failure(f"cannot tell: {exc}") from None
        except HarnessError as exc:
            raise failure(str(exc)) from None
        comparison = part(target.matrix, loaded.comparison, *self.block)
        if comparison.changed:
            raise Mismatch("\n".join(self._summary(target, loaded, comparison)))

    def _summary(self, target: Target, loaded: Loaded, comparison) -> list[str]:
        from harness.report.model import output_label, rule_view
        from harness.report.text import rule_lines

        field = output_label(target.matrix.target)
        views = [rule_view(target.matrix, rule) for rule in comparison.rules]
        head = (
            f"{comparison.changed:,} cells of this slice differ from {target.against} "
            f"at {loaded.label}; {field}, baseline -> now:"
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
            raise failure(f"cannot tell: {exc}") from None
        if isinstance(found, Unseen):
            raise failure(found)
        if isinstance(found, str):
            pytest.skip(f"blind spots not looked for: {found}")
        spots, unseen = found
        if unseen:
            raise failure(f"cannot tell: {unseen}")
        if spots:
            items = [spot_json(spot) for spot in spots]
            raise Mismatch("\n".join([blind_title(len(spots), False), *numbered(items)]))
