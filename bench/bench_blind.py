"""Benchmark: what looking costs. Coverage while exploring, and the blind-spot search.

Run: python bench/bench_blind.py [--repeat N] [REPO]

Side by side in one run, best of --repeat, on the fixture history (an 81 KB
overrides.py) and, given REPO (a repository of SGLang's released trees, as
`sglang-release-history DEST` builds it), on v0.5.23's 40 passes:
  - one evaluation of a revision with every function rewritten to record its
    branches (what every diff does) against the same evaluation with the code
    as written (what harness did before it recorded coverage), in-process;
  - `harness diff '#30835^' '#30835'` on a matrix holding the prefill CUDA-graph
    mode fixed (no cell changes: one blind spot, searched for the input that
    reaches it) against the same diff on the shipped FA4 matrix (1,736 cells
    change, no blind spot), in-process, cache off;
  - the same diff with `--matrix inferred` against the FA4 diff, on the fixture
    and, given REPO, on #30835's clause committed on top of v0.5.23 (in a
    temporary clone; nothing of REPO is changed), and v0.5.18 against v0.5.23
    (once each: the inferred matrix is split into one per changed pass); then the same
    two commands as fresh processes, taking turns, best and mean of at least 5 each
    (the figures that count: what a user runs); then one more run timed stage by stage
    (surveys, run order, the inferred matrix, the diff).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

import harness.cli.diff as diff_command
import harness.engine.explore as explore
import harness.scan.inferred as inferred_module
from harness import gitio
from harness.cli.main import main
from harness.engine.worker import reap_all
from harness.matrix.load import load_matrix, shipped_dir
from harness.scan.versions import Versions
from harness.testing.sglang_fixture import build_history

PADDING = 200


def best(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def evaluation(repo: str, rev: str, matrix_name: str, recorded: bool):
    handle = gitio.open_repo(repo)
    matrix = load_matrix(matrix_name)
    versions = Versions(handle, matrix)
    code = versions.code_at(gitio.resolve(handle, rev))
    plain = explore.target_loader

    def load(closure, bound, label, branches=None):
        return plain(closure, bound, label, branches if recorded else None)

    def run() -> None:  # in-process, as the worker runs it: the loader swapped here counts
        explore.target_loader = load
        try:
            cube = matrix.full_masks()
            explore._evaluate(code.closure, matrix, versions.bound, rev, explore.EXPLORE, cube)
        finally:
            explore.target_loader = plain

    return run


def quiet_diff(*argv: str):
    def run() -> None:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(list(argv))

    return run


def fixed_matrix(directory: Path) -> Path:
    doc = yaml.safe_load((shipped_dir() / "sglang-fa4-page-size.yaml").read_text())
    del doc["axes"]["prefill_cuda_graph"]
    doc["fields"]["prefill_cuda_graph"] = "breakable"
    path = directory / "fixed.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def coverage_line(label: str, repeat: int, repo: str, rev: str, matrix: str) -> str:
    recorded = best(repeat, evaluation(repo, rev, matrix, True))
    plain = best(repeat, evaluation(repo, rev, matrix, False))
    return (
        f"{label}: evaluation recording branches {recorded:.3f} s, as written {plain:.3f} s, "
        f"ratio {recorded / plain:.2f}"
    )


def main_bench() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("repo", nargs="?")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sglang"
        build_history(root, padding=PADDING)
        repo = str(root)
        print(
            coverage_line("fixture FA4 pass", args.repeat, repo, "#30835", "sglang-fa4-page-size")
        )
        matrix = fixed_matrix(Path(tmp))
        common = ("diff", "#30835^", "#30835", "--repo", repo, "--no-cache")
        blind = best(args.repeat, quiet_diff(*common, "--matrix", str(matrix)))
        seen = best(args.repeat, quiet_diff(*common))
        print(
            f"diff with a blind spot (87,480 cells, searched) {blind:.3f} s; "
            f"the FA4 diff (349,920 cells, 1,736 change) {seen:.3f} s; ratio {blind / seen:.2f}"
        )
        print(inferred_line("fixture #30835", args.repeat, repo))
    if args.repo:
        print(coverage_line("v0.5.23, 40 passes", args.repeat, args.repo, "v0.5.23",
                            "sglang-resolution"))  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            shape = pr_shape(args.repo, Path(tmp) / "shape")
            missing = "#30835 on v0.5.23: v0.5.23's FA4 pass is not written as expected"
            print(inferred_line("#30835 on v0.5.23", args.repeat, shape) if shape else missing)
        print(inferred_line("v0.5.18 -> v0.5.23", 1, args.repo, ("v0.5.18", "v0.5.23")))
    sys.stdout.flush()


def inferred_line(label: str, repeat: int, repo: str, revs=("#30835^", "#30835")) -> str:
    common = ("diff", *revs, "--repo", repo, "--no-cache")
    inferred = best_of(repeat, quiet_diff(*common, "--matrix", "inferred"))
    fa4 = best_of(repeat, quiet_diff(*common))
    fresh = fresh_processes(max(repeat, FRESH), common)
    return (
        f"{label}: --matrix inferred {inferred[0]:.3f} s, the FA4 diff {fa4[0]:.3f} s, "
        f"ratio {inferred[0] / fa4[0]:.2f}; CPU (this process and its workers) "
        f"{inferred[1]:.3f} s and {fa4[1]:.3f} s, ratio {inferred[1] / fa4[1]:.2f}"
        f"\n  as fresh processes, taking turns, best of {max(repeat, FRESH)} (mean): {fresh}"
        f"\n  where it goes: {stages(repo, revs)}"
    )


FRESH = 5  # runs of each command as its own process, at least


def fresh_processes(repeat: int, common: tuple[str, ...]) -> str:
    """`harness diff ... -q` with `--matrix inferred` and with the FA4 matrix, each a
    process of its own as a user runs it, the two taking turns `repeat` times: best and
    mean wall-clock time of each, and their ratios. In-process figures drift over one long
    bench process (memory it keeps, a zygote it has); these do not."""
    argv = [sys.executable, "-m", "harness", *common, "-q"]
    commands = {"inferred": [*argv, "--matrix", "inferred"], "FA4": argv}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - start)
    best_, mean = ({k: f(v) for k, v in times.items()} for f in (min, statistics.mean))
    return (
        f"--matrix inferred {best_['inferred']:.2f} s ({mean['inferred']:.2f}), the FA4 diff "
        f"{best_['FA4']:.2f} s ({mean['FA4']:.2f}), ratio {best_['inferred'] / best_['FA4']:.2f}"
        f" ({mean['inferred'] / mean['FA4']:.2f})"
    )


def best_of(repeat: int, fn) -> tuple[float, float]:
    """(best wall-clock time, best CPU time of this process and the workers it waited for)
    of `repeat` runs: on a shared machine the CPU time is what others' load changes least."""
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), _cpu()
        fn()
        walls.append(time.perf_counter() - start)
        reap_all()  # the zygote's children count once it is gone (it starts again next run)
        cpus.append(_cpu() - cpu)
    return min(walls), min(cpus)


def _cpu() -> float:
    own, workers = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime


STAGES = (  # (module, function, what it is), timed where the diff calls them
    (inferred_module, "_surveys", "surveys"),
    (inferred_module, "_in_order", "run order"),
    (inferred_module, "_inferred", "matrix (runs on symbols)"),
    (diff_command, "parts_reports", "diff"),
)


def stages(repo: str, revs: tuple[str, str]) -> str:
    """One more `--matrix inferred` run, timed stage by stage (wall clock, in-process): the
    two revisions' surveys, their run orders, the matrix inferred from the runs on symbols,
    and the diff (or diffs) on it. The rest is setting up and writing the report."""
    spent = {what: 0.0 for _, _, what in STAGES}
    originals = [(module, name, getattr(module, name)) for module, name, _ in STAGES]
    for (module, name, original), (_, _, what) in zip(originals, STAGES, strict=True):
        setattr(module, name, _timed(original, spent, what))
    start = time.perf_counter()
    try:
        quiet_diff("diff", *revs, "--repo", repo, "--no-cache", "--matrix", "inferred")()
    finally:
        for module, name, original in originals:
            setattr(module, name, original)
    total = time.perf_counter() - start
    shown = ", ".join(f"{what} {seconds:.2f} s" for what, seconds in spent.items())
    return f"{shown}, the rest {total - sum(spent.values()):.2f} s (of {total:.2f} s)"


def _timed(function, spent: dict[str, float], what: str):
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[what] += time.perf_counter() - start

    return timed


CLAUSE = "        and (view.speculative_eagle_topk or 0) <= 1\n    ):"
OVERRIDES = "python/sglang/srt/arg_groups/overrides.py"


def pr_shape(repo: str, where: Path) -> str | None:
    """A clone of REPO with #30835's clause committed on top of v0.5.23 (None: the FA4 pass
    is not written as this bench expects)."""
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run(["git", "clone", "-q", repo, str(where)], check=True)
    subprocess.run(["git", "checkout", "-q", "v0.5.23"], cwd=where, check=True)
    path = where / OVERRIDES
    text = path.read_text()
    if text.count(CLAUSE) != 1:
        return None
    full = CLAUSE.replace(
        "\n    ):", "\n        and view.cuda_graph_config.prefill.backend != Backend.FULL\n    ):"
    )
    path.write_text(text.replace(CLAUSE, full))
    subprocess.run([*git, "commit", "-qam", "[Tiny] Enable Full Cuda Graph (#30835)"], cwd=where,
                   check=True)  # fmt: skip
    return str(where)


if __name__ == "__main__":
    main_bench()
