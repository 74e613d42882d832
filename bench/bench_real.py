"""Figures on SGLang's real released files: what the docs quote about real code.

Run: python bench/bench_real.py REPO

REPO is a git repository with SGLang's released trees, one tagged commit per
release (v0.5.16, v0.5.18 ... v0.5.23), as the workplace tool
`sglang-release-history DEST` builds from the wheels on the package index
(never commit those files). For each release it prints, side by side: whether
each shipped matrix evaluates (no unevaluable cell), the seconds a
`harness diff` of the release against itself takes per matrix, how many
pieces the piecewise parser cuts `overrides.py` into (1: a whole-file parse),
how many registered passes `harness passes` finds unblocked and
evaluable under the pipeline matrix, and of the passes whose closure extraction
builds, how many the security policy accepts and how many are impure. Then
the diff of the first and last release on each matrix, the whole-resolution
diff against the FA4 diff, and SGLang's resolution entry itself
(`entry: run_resolution_pipeline`, on the Llama cells it runs to its end, ENTRY
below) against the FA4 diff, with its cost per cell and what that would make
the 653,184 cells of the shipped whole-resolution matrix cost.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import gitio
from harness.cli.main import main
from harness.closure.pieces import SourceCache
from harness.engine.policy import check_closure
from harness.engine.purity import impurity
from harness.errors import Unevaluable
from harness.matrix.load import load_matrix, shipped_names
from harness.scan.versions import Versions
from harness.testing.entry_facts import LLAMA_ONE_GPU

OVERRIDES = "python/sglang/srt/arg_groups/overrides.py"
SHIPPED_CELLS = 653_184  # sglang-resolution's
# SGLang's entry on 384 Llama-3.1-8B cells (0.5.19 on), with what its handlers read of the
# machine, the model and the hub that the world does not answer (docs/matrix-files.md)
ENTRY = (
    """\
name: entry-llama
target:
  path: python/sglang/srt/arg_groups/pipeline.py
  entry: run_resolution_pipeline
  output: [attention_backend, prefill_attention_backend, page_size, kv_cache_dtype,
           sampling_backend, moe_runner_backend, ep_size, quantization,
           disable_overlap_schedule, chunked_prefill_size]
world: sglang
axes:
  attention_backend: [null, fa3, flashinfer, triton]
  platform: [sm90, sm100]
  page_size: [null, 1, 64]
  tp_size: [1, 8]
  kv_cache_dtype: [auto, fp8_e4m3]
  enable_deterministic_inference: [false, true]
  quantization: [null, fp8]
"""
    + LLAMA_ONE_GPU
)


def run(*argv: str) -> tuple[int, str, float]:
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(argv))
    return code, out.getvalue(), time.perf_counter() - start


def pieces(repo: str, tag: str) -> int:
    handle = gitio.open_repo(repo)
    source = gitio.read_file(handle, gitio.resolve(handle, tag), OVERRIDES)
    return len(SourceCache().layout(source, OVERRIDES).pieces)


def release_line(repo: str, tag: str) -> str:
    parts = [f"{tag:8}"]
    for matrix in shipped_names():
        _, out, took = run("diff", tag, tag, "--repo", repo, "--matrix", matrix, "--format",
                           "json", "--no-cache")  # fmt: skip
        ok = "evaluates" if not json.loads(out)["notes"] else "UNEVALUABLE"
        parts.append(f"{matrix} {ok} ({took:.2f} s)")
    _, out, _ = run("passes", tag, "--repo", repo, "--format", "json", "--no-cache",
                    "--matrix", "sglang-resolution")  # fmt: skip
    found = json.loads(out)["passes"]
    clear = sum(not p["blocked_by"] for p in found)
    ready = sum(not p["blocked_by"] and not p["needs_fields"] for p in found)
    parts.append(f"passes: {clear}/{len(found)} unblocked, {ready} evaluate")
    parts.append(f"overrides.py in {pieces(repo, tag)} pieces")
    parts.append(policy(repo, tag))
    return "  ".join(parts)


def policy(repo: str, tag: str) -> str:
    """Of the passes whose closure extraction builds, how many the security policy accepts,
    and how many are impure (run on every cell instead of explored)."""
    matrix = load_matrix("sglang-page-size-pipeline")
    versions = Versions(gitio.open_repo(repo), matrix)
    files = versions.files(gitio.resolve(versions.repo, tag).sha)
    surveyed = versions.front.surveys(files)
    closures = [one.closure for one in surveyed if one.closure]
    refused = 0
    for closure in closures:
        try:
            check_closure(closure)
        except Unevaluable:
            refused += 1
    impure = sum(impurity(closure) is not None for closure in closures)
    return f"policy: {len(closures) - refused}/{len(closures)} accepted, {impure} impure"


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", help="the release history repository")
    args = parser.parse_args()
    tags = sorted(
        gitio.open_repo(args.repo).git.tag().split(),
        key=lambda t: tuple(int(n) for n in t.lstrip("v").split(".")),
    )
    for tag in tags:
        print(release_line(args.repo, tag))
    for matrix in shipped_names():
        _, out, took = run("diff", tags[0], tags[-1], "--repo", args.repo, "--matrix", matrix,
                           "--format", "json-sample", "--no-cache")  # fmt: skip
        report = json.loads(out)
        changed, cells, rules = report["changed_count"], report["cells"], len(report["summary"])
        print(f"{matrix}: {tags[0]} -> {tags[-1]}: {changed:,} of {cells:,} cells change, "
              f"{rules} rules ({took:.2f} s)")  # fmt: skip
    resolution_ratio(args.repo, "v0.5.18", tags[-1])
    entry_ratio(args.repo, tags[-2], tags[-1])


def resolution_ratio(repo: str, base: str, head: str, repeat: int = 3) -> None:
    """The whole-resolution diff against the single-function (FA4) diff of the same two
    releases, cache off, best of `repeat`, alternating: as fresh `harness diff` processes
    (what a user waits for; the target, at most 10x) and in-process (the work alone)."""
    matrices = ("sglang-fa4-page-size", "sglang-resolution")
    fresh: dict[str, list[float]] = {m: [] for m in matrices}
    inside: dict[str, list[float]] = {m: [] for m in matrices}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for n in range(repeat + 1):  # the first round compiles harness's bytecode, as installs do
        for matrix in matrices:
            argv = ("diff", base, head, "--repo", repo, "--matrix", matrix,
                    "--format", "json-sample", "--no-cache")  # fmt: skip
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True, env=env)
            took = time.perf_counter() - start
            if n:
                fresh[matrix].append(took)
                inside[matrix].append(run(*argv)[2])
    for label, times in (("fresh processes", fresh), ("in-process", inside)):
        single, whole = min(times[matrices[0]]), min(times[matrices[1]])
        print(f"resolution diff {base} -> {head}, {label}: {whole:.2f} s; FA4 diff: "
              f"{single:.2f} s; ratio {whole / single:.1f} (target <= 10)")  # fmt: skip


def entry_ratio(repo: str, base: str, head: str, repeat: int = 3) -> None:
    """SGLang's resolution entry (ENTRY, 384 cells) against the FA4 diff of the same two
    releases, and what an entry cell costs: `harness snapshot` of `head` on ENTRY and on
    twice its cells (ep_size 1 and 8), the difference over the cells added. As fresh
    processes, cache off, best of `repeat`, taking turns. Every entry cell is its own
    call (the handlers read nearly every axis), so a diff of the shipped matrix's cells
    would cost the 384-cell diff, plus two sides' cost of each further cell."""
    with tempfile.TemporaryDirectory() as scratch:
        entry, double = Path(scratch, "entry.yaml"), Path(scratch, "entry-double.yaml")
        entry.write_text(ENTRY)
        double.write_text(
            ENTRY.replace("  tp_size: [1, 8]\n", "  tp_size: [1, 8]\n  ep_size: [1, 8]\n")
        )
        runs = {
            "fa4": ("diff", base, head, "--matrix", "sglang-fa4-page-size"),
            "entry": ("diff", base, head, "--matrix", str(entry)),
            "one": ("snapshot", head, "--matrix", str(entry), "-o", str(Path(scratch, "1"))),
            "two": ("snapshot", head, "--matrix", str(double), "-o", str(Path(scratch, "2"))),
        }
        times: dict[str, list[float]] = {name: [] for name in runs}
        for n in range(repeat + 1):  # the first round compiles harness's bytecode
            for name, argv in runs.items():
                start = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "harness", *argv, "--repo", repo,
                                       "--no-cache"], capture_output=True, text=True)  # fmt: skip
                if done.returncode not in (0, 1, 4):  # a run that stopped short times nothing
                    sys.exit(f"harness {' '.join(argv)}: exit {done.returncode}: {done.stderr}")
                if n:
                    times[name].append(time.perf_counter() - start)
    best = {name: min(found) for name, found in times.items()}
    per_cell = (best["two"] - best["one"]) / 384  # one side
    shipped = best["entry"] + 2 * per_cell * (SHIPPED_CELLS - 384)
    print(
        f"entry diff {base} -> {head} on 384 Llama cells: {best['entry']:.2f} s; FA4 diff "
        f"{best['fa4']:.2f} s; ratio {best['entry'] / best['fa4']:.1f}. An entry cell: "
        f"{per_cell * 1000:.1f} ms a side (snapshot of 384 cells {best['one']:.2f} s, of 768 "
        f"{best['two']:.2f} s); the shipped {SHIPPED_CELLS:,} cells at that rate: "
        f"{shipped / 60:.0f} min a diff (target: within 10x the FA4 diff)"
    )


if __name__ == "__main__":
    main_bench()
