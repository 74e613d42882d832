"""Benchmark: the pytest entry point against a cold `harness diff` of the same revisions.

Run: python bench/bench_pytest.py [--repeat N]

Builds the fixture history with an 80 KB overrides.py, writes a baseline at
#30835^ (harness snapshot), and times, side by side in one run, best of
--repeat, fresh processes with a cold cache each (an empty XDG_CACHE_HOME):
  - `harness diff '#30835^' '#30835' --no-cache`;
  - `pytest --override-matrix sglang-fa4-page-size --override-baseline ...
    --override-rev '#30835'` (81 items, all failing: #30835 changed them) with
    -n 0 and with -n auto;
each pytest run twice over: with only the plugins the check needs
(PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 -p xdist.plugin -p harness.pytest_plugin),
and with every plugin installed here (this venv also has Hypothesis's, whose
import alone takes most of a second). Bytecode is compiled by a first round,
as an install does. Prints the ratios to the cold diff (target: -n auto at
most 2x, and never slower than -n 0).
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
MINIMAL = ("-p", "xdist.plugin", "-p", "harness.pytest_plugin")


def environment(cache: Path, minimal: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["XDG_CACHE_HOME"] = str(cache)
    if minimal:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    return took


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
        diff = [sys.executable, "-m", "harness", "diff", "#30835^", "#30835", "--repo",
                str(repo), "--no-cache", "--format", "json-sample"]  # fmt: skip

        def pytest(workers: str, minimal: bool) -> list[str]:
            return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    *(MINIMAL if minimal else ()), "-n", workers,
                    "--override-matrix", "sglang-fa4-page-size", "--override-baseline",
                    str(baseline), "--override-repo", str(repo),
                    "--override-rev", "#30835"]  # fmt: skip

        runs = {"cold diff": (diff, True)}
        for minimal in (True, False):
            plugins = "only its plugins" if minimal else "all plugins"
            for workers in ("0", "auto"):
                runs[f"pytest -n {workers:4s} ({plugins})"] = (pytest(workers, minimal), minimal)
        times: dict[str, list[float]] = {label: [] for label in runs}
        for n in range(args.repeat + 1):  # round 0 compiles the bytecode
            for label, (argv, minimal) in runs.items():
                with tempfile.TemporaryDirectory() as cache:
                    took = timed(argv, workdir, environment(Path(cache), minimal))
                if n:
                    times[label].append(took)
        best = {label: min(t) for label, t in times.items()}
        cold = best["cold diff"]
        print(f"pytest entry point, {os.cpu_count()} CPUs, 81 items over 349,920 cells; "
              f"fresh processes, cold cache, best of {args.repeat}")  # fmt: skip
        for label, took in best.items():
            print(f"  {label:36s} {took:5.2f} s   {took / cold:4.2f}x the cold diff")
        for plugins in ("only its plugins", "all plugins"):
            serial = best[f"pytest -n 0    ({plugins})"]
            auto = best[f"pytest -n auto ({plugins})"]
            print(
                f"  {plugins}: -n auto / cold diff {auto / cold:.2f} (target <= 2); "
                f"-n auto / -n 0 {auto / serial:.2f} (target <= 1)"
            )


if __name__ == "__main__":
    main()
