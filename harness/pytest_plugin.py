"""pytest entry point: a revision's outcomes against a committed baseline, as test items.

Inert unless `--override-matrix` is given: this module imports nothing but
pytest, so every other pytest run pays nothing for it; the machinery lives in
`harness.pytest_items`, imported only when asked. The matrix is split on its
leading axes into enough slices (at least 32) that `pytest -n auto` spreads
them over workers; each item evaluates its slice (every cell, unless
`--override-explore`) and compares it with the baseline, failing with the
rule summary of its mismatches. `--override-update` rewrites the baseline
first (once, in the controlling process), so every item then passes.
"""

from __future__ import annotations

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
    group.addoption("--override-explore", action="store_true",
                    help="run once per decision path instead of on every cell (faster; for "
                    "pure functions)")  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: a slice of an override matrix (harness)")
    if not config.getoption("override_matrix"):
        return
    if not config.getoption("override_baseline"):
        raise pytest.UsageError("--override-matrix needs --override-baseline FILE")
    # Deferred: only a run that asks for the matrix pays for git, yaml and the evaluator.
    from harness import baseline
    from harness.errors import HarnessError
    from harness.pytest_items import Target

    try:
        target = Target.from_config(config)
        if config.getoption("override_update") and not hasattr(config, "workerinput"):
            target.update_baseline()
        baseline.read(target.baseline_path, target.matrix)  # a bad file: one usage error
        config.stash[TARGET] = target
    except HarnessError as exc:
        raise pytest.UsageError(f"harness: {exc}") from None


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    target = config.stash.get(TARGET, None)
    if target is None:
        return
    from harness.pytest_items import MatrixCollector

    name = f"override-matrix:{target.matrix.name}"
    items.extend(MatrixCollector.from_parent(session, name=name).collect())
