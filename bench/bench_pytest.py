"""Benchmark: the pytest entry point over the full default matrix, -n 0 against -n 2.

Run: python bench/bench_pytest.py [--repeat N]

Builds the fixture history with an 80 KB overrides.py, writes a baseline at
#30835^ (harness snapshot), and times, side by side in one run, best of
--repeat, `pytest --override-matrix sglang-fa4-page-size --override-baseline
... --override-rev #30835^` as a fresh process with -n 0 and with -n 2
(pytest-xdist), once per decision path (the default for pure code), then the
same with --override-exhaustive (every cell run). Prints the ratios.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.testing.sglang_fixture import build_history

PADDING = 200


def timed_pytest(workdir: Path, repo: Path, baseline: Path, workers: str, *extra: str) -> float:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers,
            "--override-matrix", "sglang-fa4-page-size", "--override-baseline", str(baseline),
            "--override-repo", str(repo), "--override-rev", "#30835^", *extra]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=workdir, capture_output=True, text=True)
    took = time.perf_counter() - start
    assert done.returncode == 0 and "81 passed" in done.stdout, done.stdout + done.stderr
    return took


def best(repeat: int, fn) -> float:
    return min(fn() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        repo, workdir, baseline = root / "sglang", root / "run", root / "baseline.json"
        build_history(repo, padding=PADDING)
        workdir.mkdir()
        subprocess.run([sys.executable, "-m", "harness", "snapshot", "#30835^", "-o",
                        str(baseline), "--repo", str(repo)], check=True)  # fmt: skip
        print(f"pytest entry point, {os.cpu_count()} CPUs, 81 items over 349,920 cells; "
              f"fresh processes, best of {args.repeat}")  # fmt: skip
        for label, extra in (
            ("explored (default)", ()),
            ("--override-exhaustive", ("--override-exhaustive",)),
        ):
            serial = best(
                args.repeat, lambda e=extra: timed_pytest(workdir, repo, baseline, "0", *e)
            )
            parallel = best(
                args.repeat, lambda e=extra: timed_pytest(workdir, repo, baseline, "2", *e)
            )
            print(f"{label:22s} -n 0: {serial:6.2f} s   -n 2: {parallel:6.2f} s   "
                  f"speed-up {serial / parallel:.2f}x  (target >= 1.6x)")  # fmt: skip


if __name__ == "__main__":
    main()
