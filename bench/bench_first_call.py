"""Benchmark: what running an impure closure's cells in fresh copies of its modules costs.

Run: python bench/bench_first_call.py [--repeat N]

Builds the fixture history with an SGLang-sized overrides.py (about 80 KB),
then commits on top of `#30835` an impure variant: `_fa4_page_constraint`
counts its calls in a module-level list (as a hostile pass that tells its
first call apart would). On the default matrix and on the pipeline matrix,
side by side in one run, best of --repeat, alternating, it times the worker's
evaluation of every cell of that closure:
  - fresh: each cell in a fresh copy of the modules (the files' bodies run
    again, compiled once), as harness runs an impure closure now;
  - shared: every cell through one loaded copy, as it ran before (wrong for
    state kept between calls, and the floor of the cost).
Prints both, the ratio, and the cost of one fresh load per cell.
"""

from __future__ import annotations

import time

from bench_diff import repeat_argument, sized_history

from harness import gitio
from harness.engine.explore import start_evaluation
from harness.engine.purity import impurity
from harness.matrix.load import load_matrix
from harness.scan.versions import Versions
from harness.testing.gitrepo import FixtureRepo
from harness.testing.sglang_fixture import OVERRIDES

SIGNATURE = "@register_post_process\ndef _fa4_page_constraint(view) -> Dict[str, Any]:\n"
COUNTER = "_CALLS = [0]\n\n\n"
COUNTING = '    """FA4 on Blackwell'


def impure_head(repo) -> str:
    """The sha of a commit on `#30835` whose FA4 pass counts its calls."""
    handle = gitio.open_repo(str(repo))
    source = gitio.read_file(handle, gitio.resolve(handle, "#30835"), OVERRIDES)
    assert source.count(SIGNATURE) == 1 and COUNTING in source
    source = source.replace(SIGNATURE, COUNTER + SIGNATURE)
    source = source.replace(COUNTING, "    _CALLS[0] += 1\n" + COUNTING, 1)
    return FixtureRepo(repo).commit("count the calls", {OVERRIDES: source})


def timed(versions: Versions, closure, fresh: bool) -> tuple[float, int]:
    matrix, bound = versions.matrix, versions.bound
    start = time.perf_counter()
    done = start_evaluation(closure, matrix, bound, "impure", True, fresh=fresh).result()
    return time.perf_counter() - start, done.loads


def main() -> None:
    repeat = repeat_argument(__doc__, 3)
    with sized_history() as repo:
        sha = impure_head(repo)
        for name in ("sglang-fa4-page-size", "sglang-page-size-pipeline"):
            versions = Versions(gitio.open_repo(str(repo)), load_matrix(name))
            closure = versions.front.extract(versions.files(sha))
            assert impurity(closure) is not None, "the fixture must be impure"
            fresh, shared, loads = [], [], 0
            for _ in range(repeat):
                took, loads = timed(versions, closure, True)
                fresh.append(took)
                shared.append(timed(versions, closure, False)[0])
            best, floor = min(fresh), min(shared)
            cells = versions.matrix.size
            per_load = (best - floor) / max(loads - 1, 1) * 1e6
            print(f"{name} ({cells:,} cells): fresh modules per cell {best:.2f} s, one shared "
                  f"copy {floor:.2f} s   ratio {best / floor:.1f}   "
                  f"({per_load:.0f} us a load)")  # fmt: skip


if __name__ == "__main__":
    main()
