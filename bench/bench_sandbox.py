"""Benchmark: what the worker process and the static policy cost a `harness diff`.

Run: python bench/bench_sandbox.py [--repeat N]

Builds the fixture history with an SGLang-sized overrides.py (about 80 KB),
then, side by side in one run, best of --repeat, times `harness diff
'#30835^' '#30835'` in-process with the cache off, on the default matrix and
on the pipeline matrix:
  - as harness runs it: the policy checked, purity judged, both revisions
    evaluated side by side in forked, confined workers, then the traced cells
    of the `because` lines in one more;
  - the way it ran before the worker existed: the same code with the worker
    replaced by a direct call and the policy and purity checks skipped
    (patched here, in the benchmark only).
Then the same pair as fresh processes (`python -c`, interpreter start, imports and
the evaluation zygote's start included), best of --repeat: as harness runs, and
with the same patch. Prints the ratios (target <= 1.3).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

from bench_diff import best_of, harness_in_process, repeat_argument, sized_history

from harness.engine import explore, sandbox, trace, whatif
from harness.engine.worker import Done
from harness.scan import tables


def started_in_process(work, encode, decode, limits):
    result = work()
    return Done(lambda: result)


@contextlib.contextmanager
def unconfined():
    """Evaluation as it was: in-process and one at a time, no policy, no purity check."""
    saved = (explore.start, trace.start, whatif.start, sandbox.check_closure,
             explore.impurity, tables.impurity)  # fmt: skip
    explore.start = trace.start = whatif.start = started_in_process
    sandbox.check_closure = lambda closure: None
    explore.impurity = tables.impurity = lambda closure: None
    try:
        yield
    finally:
        (explore.start, trace.start, whatif.start, sandbox.check_closure,
         explore.impurity, tables.impurity) = saved  # fmt: skip


FRESH = """
import contextlib, io, sys
sys.path.insert(0, {bench!r})
from bench_sandbox import unconfined
from harness.cli.main import main
args = ["diff", "#30835^", "#30835", "--repo", sys.argv[2], "--no-cache", "--format", "json",
        "--matrix", sys.argv[3]]
with contextlib.redirect_stdout(io.StringIO()):
    with unconfined() if sys.argv[1] == "bare" else contextlib.nullcontext():
        code = main(args)
sys.exit(0 if code == 1 else 3)
"""


def fresh(mode: str, repo, name: str) -> float:
    script = FRESH.format(bench=str(Path(__file__).parent))
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, mode, str(repo), name], check=False)
    assert done.returncode == 0, (mode, name)
    return time.perf_counter() - started


def fresh_processes(repeat: int, repo) -> None:
    for name in ("sglang-fa4-page-size", "sglang-page-size-pipeline"):
        confined = min(fresh("confined", repo, name) for _ in range(repeat))
        bare = min(fresh("bare", repo, name) for _ in range(repeat))
        confined = min(confined, *(fresh("confined", repo, name) for _ in range(repeat)))
        print(f"{name} (fresh process): worker + policy {confined:.3f} s, without {bare:.3f} s"
              f"   ratio {confined / bare:.2f}  (target <= 1.3)")  # fmt: skip


def main() -> None:
    repeat = repeat_argument(__doc__, 5)
    with sized_history() as repo:
        for name in ("sglang-fa4-page-size", "sglang-page-size-pipeline"):
            run = lambda n=name: harness_in_process(repo, "--matrix", n)  # noqa: E731
            confined, _ = best_of(repeat, run)
            with unconfined():
                bare, _ = best_of(repeat, run)
            confined_again, _ = best_of(repeat, run)
            took = min(confined, confined_again)
            print(f"{name}: worker + policy {took:.3f} s, without {bare:.3f} s   "
                  f"ratio {took / bare:.2f}  (target <= 1.3)")  # fmt: skip
        fresh_processes(repeat, repo)


if __name__ == "__main__":
    main()
