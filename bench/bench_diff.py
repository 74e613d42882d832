"""Benchmark: `harness diff` over the full default matrix vs a bare CPython loop.

Run: python bench/bench_diff.py [--repeat N]

Builds the fixture history with an SGLang-sized overrides.py (about 80 KB),
then, side by side in one run, times:
  - `harness diff '#30835^' '#30835'` as a fresh process (wall clock,
    interpreter start and imports included), and its peak memory (the harness
    process, and the largest of its evaluation workers), with the
    cache off, then again with a warm on-disk cache;
  - the same diff in-process (main()), exploring and --exhaustive;
  - a bare loop: the same extracted function, compiled with plain stubs,
    called on a types.SimpleNamespace view for every cell at both revisions,
    results compared in a list;
  - the same diff on the pipeline matrix (four passes), in-process.
and prints the ratios. Best of --repeat runs for each. It also prints the
counts the docs quote: calls exploration makes for the FA4 pass, the rules
of #30835, and the lines of its baseline file.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import itertools
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

from harness import gitio
from harness.cli.main import main
from harness.closure.extract import extract_closure
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache
from harness.engine.explore import evaluate_closure
from harness.engine.worlds.sglang import FACTS
from harness.matrix.load import load_matrix
from harness.report import baseline
from harness.scan.diff import diff
from harness.scan.versions import Versions
from harness.testing.sglang_fixture import OVERRIDES, build_history

PADDING = 200  # unrelated passes appended: brings overrides.py to about 80 KB


def best_of(repeat: int, fn) -> tuple[float, list]:
    """The best time of `repeat` calls, and what each call returned."""
    times, results = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        results.append(fn())
        times.append(time.perf_counter() - start)
    return min(times), results


def harness_in_process(repo: Path, *extra: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["diff", "#30835^", "#30835", "--repo", str(repo), "--format", "json",
                     "--no-cache", *extra])  # fmt: skip
    assert code == 1, (code, extra)


PEAK = """
import contextlib, io, json, resource, sys
from harness.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
from harness.engine.worker import reap_all
reap_all()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"code": code, "peak_kb": peak, "worker_kb": worker}), file=sys.stderr)
"""


def harness_process(repo: Path, *extra: str) -> dict:
    argv = ["diff", "#30835^", "#30835", "--repo", str(repo), "--format", "json", *extra]
    done = subprocess.run([sys.executable, "-c", PEAK, *argv], capture_output=True, text=True)
    return json.loads(done.stderr.strip().splitlines()[-1])


def plain_stubs(state: SimpleNamespace) -> dict:
    """The names the fixture's FA4 pass imports, as plain Python (no strictness, no tracking)."""
    platforms = {
        p: SimpleNamespace(
            is_sm100=p == "sm100",
            is_sm90=p == "sm90",
            is_sm120=p == "sm120",
            is_xpu=False,
            is_hip=False,
        )
        for p in ("sm90", "sm100", "sm120")
    }
    return {
        "get_platform": lambda: platforms[state.platform],
        "use_mla_backend": lambda view: view.use_mla,
        "is_sm100_supported": lambda: state.platform == "sm100",
        "Backend": SimpleNamespace(FULL="full", BREAKABLE="breakable"),
        "logger": SimpleNamespace(info=lambda *a, **k: None),
        "register_post_process": lambda fn: fn,  # the file's registry: nothing reads it here
        "torch": SimpleNamespace(cuda=SimpleNamespace(device_count=lambda: 1)),
    }


def bare_function(source: str, state: SimpleNamespace):
    stubs = plain_stubs(state)
    files = RevisionFiles.of({OVERRIDES: source}, OVERRIDES)
    closure = extract_closure(SourceCache(), files, "_fa4_page_constraint", stubs, facts=FACTS)
    namespace = dict(stubs)
    module = ast.Module(body=list(closure.nodes), type_ignores=[])
    exec(compile(module, "bare", "exec"), namespace)
    return namespace["_fa4_page_constraint"]


def bare_loop(sources: list[str]) -> int:
    """Run both revisions on every cell with SimpleNamespace views; count changed cells."""
    matrix = load_matrix()
    names = [axis.name for axis in matrix.axes]
    state = SimpleNamespace(platform="sm90")
    results = []
    for source in sources:
        fn = bare_function(source, state)
        out = []
        for values in itertools.product(*(axis.values for axis in matrix.axes)):
            cell = dict(zip(names, values, strict=True))
            state.platform = cell["platform"]
            graphs = SimpleNamespace(prefill=SimpleNamespace(backend=cell["prefill_cuda_graph"]))
            view = SimpleNamespace(**cell, cuda_graph_config=graphs)
            out.append(fn(view).get("page_size", cell["page_size"]))
        results.append(out)
    return sum(a != b for a, b in zip(*results, strict=True))


def repeat_argument(doc: str, default: int) -> int:
    """--repeat N, parsed for a benchmark whose docstring is `doc`."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=default)
    return parser.parse_args().repeat


@contextlib.contextmanager
def sized_history() -> Iterator[Path]:
    """The fixture history with an SGLang-sized overrides.py, in a scratch directory."""
    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch) / "sglang"
        build_history(repo, padding=PADDING)
        yield repo


def main_bench() -> None:
    repeat = repeat_argument(__doc__, 3)
    with sized_history() as repo:
        handle = gitio.open_repo(str(repo))
        revs = [gitio.resolve(handle, r) for r in ("#30835^", "#30835")]
        sources = [gitio.read_file(handle, r, OVERRIDES) for r in revs]
        report(repo, sources, repeat)


def report(repo: Path, sources: list[str], repeat: int) -> None:
    size_kb = len(sources[1].encode()) / 1024
    bare, counts = best_of(repeat, lambda: bare_loop(sources))
    process, runs = best_of(repeat, lambda: harness_process(repo, "--no-cache"))
    with tempfile.TemporaryDirectory() as cache:
        harness_process(repo, "--cache-dir", cache)  # fills the cache
        warm, _ = best_of(repeat, lambda: harness_process(repo, "--cache-dir", cache))
    inproc, _ = best_of(repeat, lambda: harness_in_process(repo))
    exhaustive, _ = best_of(1, lambda: harness_in_process(repo, "--exhaustive"))
    changed, peak_mb = counts[0], max(run["peak_kb"] for run in runs) / 1024
    worker_mb = max(run["worker_kb"] for run in runs) / 1024
    cells = load_matrix().size
    print(f"overrides.py: {size_kb:.0f} KB; matrix: {cells:,} cells x 2 revisions; "
          f"{changed:,} cells change; best of {repeat}")  # fmt: skip
    print(f"bare CPython loop (SimpleNamespace views):   {bare:7.3f} s")
    print(f"harness diff, fresh process:                  {process:7.3f} s   "
          f"ratio {process / bare:.2f}  (target <= 2.0)")  # fmt: skip
    print(f"harness diff, fresh process, warm cache:      {warm:7.3f} s   "
          f"ratio {warm / bare:.2f}; warm / cold {warm / process:.2f} "
          "(target <= 0.5)")  # fmt: skip
    print(
        f"harness diff, in-process:                     {inproc:7.3f} s   ratio {inproc / bare:.2f}"
    )
    print(f"harness diff --exhaustive, in-process:        {exhaustive:7.3f} s   "
          f"ratio {exhaustive / bare:.2f}")  # fmt: skip
    print(f"harness diff peak memory (fresh process):     {peak_mb:7.1f} MB  (target < 400); "
          f"largest worker {worker_mb:.1f} MB")  # fmt: skip
    pipeline_bench(repo, repeat, inproc)
    print_counts(repo)


def print_counts(repo: Path) -> None:
    """Figures the docs quote that are counts, not times."""
    matrix = load_matrix()
    handle = gitio.open_repo(str(repo))
    versions = Versions(handle, matrix)
    revision = gitio.resolve(handle, "#30835")
    code = versions.code_at(revision)
    calls = evaluate_closure(code.closure, matrix, versions.bound, "#30835").calls
    print(f"exploration: {calls:,} calls of _fa4_page_constraint for {matrix.size:,} cells")
    found = diff(Versions(handle, matrix), gitio.resolve(handle, "#30835^"), revision)
    print(f"#30835: {found.comparison.changed:,} cells change, {len(found.comparison.rules)} rules")
    text = baseline.render(matrix, revision, versions.at(revision).table)
    print(f"baseline of #30835 (harness snapshot): {len(text.splitlines())} lines")


def pipeline_bench(repo: Path, repeat: int, single: float) -> None:
    """The 4-pass pipeline matrix against the single-function one, in-process, no cache."""
    matrix = load_matrix("sglang-page-size-pipeline")
    took, _ = best_of(repeat, lambda: harness_in_process(repo, "--matrix", matrix.name))
    print(f"harness diff, pipeline matrix ({len(matrix.target.passes)} passes, "
          f"{matrix.size:,} cells), in-process: {took:.3f} s   "
          f"ratio to the single-function diff {took / single:.2f}  (target <= 4)")  # fmt: skip


if __name__ == "__main__":
    main_bench()
