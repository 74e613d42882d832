"""Benchmark: `harness history` and `harness bisect` over 1,000 commits.

Run: python bench/bench_history.py [--commits N] [--repeat N] [--edits SHAPE]
     python bench/bench_history.py --memory [--padding N]


Generates (with git fast-import) a history of N commits, each touching an
SGLang-sized overrides.py (about 80 KB): every commit makes one edit of the
shape --edits names (default: one unrelated pass; or a module-level constant
near the top, the module docstring, an import near the top, a comment in the
FA4 pass, a decorator on an unrelated pass), and the FA4 pass itself changes
five times (PR #30835's clause at 15% of the way, then four spelling
refactors that keep behavior). Then, side by side in one run, all as fresh
processes with a cold cache:
  - `harness history` over the whole range, against one `harness diff` of
    its endpoints (target: history <= 2x the diff, whatever the edits);
  - `harness bisect GOOD BAD` against the same diff (target: <= 1.5x);
  - `git bisect run` with a script that evaluates each step through
    `harness diff GOOD` on the checked-out tree (for comparison); it must
    name the same commit as `harness bisect`.
With --memory, instead: the peak resident memory of `harness history` over
2,000, 5,000 and 20,000 such commits, side by side (target: about equal; history's
memory does not grow with the number of commits: past the 4,096 commits a run
remembers, not at all). The peak is the largest of the harness process and the
processes it waited for (its workers, and git: its patches for the whole history
once took 125 MB). --padding sets the number of unrelated passes (default 200, an
80 KB file; fewer make the 20,000-commit history quicker to build and scan).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from harness.testing.gitrepo import IDENTITY
from harness.testing.sglang_fixture import (
    OVERRIDES,
    PADDING_PASS,
    Overrides,
    overrides_source,
)

PADDING = 200
EDITS = {"pass": "an unrelated pass", "constant": "a module-level constant near the top",
         "docstring": "the module docstring", "import": "an import near the top",
         "target": "a comment in the FA4 pass itself",
         "decorator": "a decorator on an unrelated pass"}  # fmt: skip
HARNESS = [sys.executable, "-m", "harness"]
NOTED = "def _noted(n):\n    return lambda fn: fn\n"


def versions(
    commits: int, padding: int = PADDING, edits: str = "pass"
) -> Iterator[tuple[str, str]]:
    """(subject, overrides.py text) per commit, oldest first; edits accumulate as in life.
    `edits`: what the other commits change, one unrelated pass each ("pass") or a
    module-level constant near the top of the file ("constant")."""
    marks = {int(commits * share): change for share, change in (
        (0.15, {"full_clause": True}), (0.3, {"spelling": "platform"}),
        (0.5, {"spelling": "helpers"}), (0.7, {"spelling": "platform"}),
        (0.9, {"spelling": "helpers"}),
    )}  # fmt: skip
    passes = [PADDING_PASS.format(n=k) for k in range(padding)]
    knobs = {}
    for n in range(commits):
        knobs.update(marks.get(n, {}))
        k = n * 37 % padding  # one unrelated pass edited per commit
        if edits == "pass":
            passes[k] = PADDING_PASS.format(n=k).replace(f"- {k} % 7}}", f"- {k} % {7 + n}}}")
        if edits == "decorator":  # a second decorator, its argument this commit's number
            passes[k] = PADDING_PASS.format(n=k).replace("process\n", f"process\n@_noted({n})\n", 1)
        text = overrides_source(Overrides(**knobs)) + "".join(passes)
        text = _edited(text, edits, n)
        subject = "Touch the FA4 pass" if n in marks else f"Tune pass {k}"
        yield f"{subject} (#{31000 + n})", text


def _edited(text: str, edits: str, n: int) -> str:
    """The commit's text with its edit of shape `edits` (see EDITS), numbered `n`."""
    if edits == "constant":  # below the imports, above every pass: all of them move
        return text.replace("\nlogger = ", f"\n_TUNED_LIMIT = {n}\n\nlogger = ", 1)
    if edits == "docstring":
        return text.replace("declares fields.\n", f"declares fields ({n}).\n", 1)
    if edits == "import":  # an alias only this commit's text spells, every pass moves
        return text.replace("\nimport logging\n", f"\nimport logging\nimport json as _j{n}\n", 1)
    if edits == "target":  # behaviour kept: a comment inside the pass
        return text.replace("    # ", f"    # ({n}) ", 1)
    if edits == "decorator":  # what the passes' second decorators call, defined once
        return text.replace("\nlogger = ", f"\n{NOTED}\n\nlogger = ", 1)
    return text


def build(root: Path, commits: int, padding: int = PADDING, edits: str = "pass") -> list[str]:
    """A repository whose main branch holds `commits` commits; returns their shas. The
    commits are streamed into `git fast-import` (20,000 of them are gigabytes of text)."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    marks = root / ".git" / "bench-marks"
    importing = subprocess.Popen(["git", "fast-import", "--quiet", f"--export-marks={marks}"],
                                 cwd=root, stdin=subprocess.PIPE)  # fmt: skip
    for n, (subject, text) in enumerate(versions(commits, padding, edits), 1):
        message, body = subject.encode(), text.encode()
        stamp = 1_760_000_000 + 3600 * n
        importing.stdin.write(
            b"commit refs/heads/main\nmark :%d\n" % n
            + b"committer Bench <bench@harness.invalid> %d +0000\n" % stamp
            + b"data %d\n%s\n" % (len(message), message)
            + b"M 100644 inline %s\ndata %d\n%s\n" % (OVERRIDES.encode(), len(body), body)
        )
    importing.stdin.close()
    assert importing.wait() == 0, "git fast-import failed"
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, check=True)
    shas = dict(line.split() for line in marks.read_text().splitlines())
    return [shas[f":{n}"] for n in range(1, commits + 1)]


def timed(argv: list[str], cwd: Path | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - start, done


def cold(repeat: int, argv: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    """Best wall time of `repeat` runs, each with an empty cache directory."""
    best = None
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            took, done = timed([*argv, "--cache-dir", cache])
        assert done.returncode in (0, 1), done.stderr
        if best is None or took < best[0]:
            best = (took, done)
    return best


def git_bisect_run(repo: Path, good: str, bad: str) -> tuple[float, str]:
    """`git bisect run` evaluating each step by `harness diff GOOD` on the checked-out tree."""
    env = {**os.environ, **IDENTITY}
    with tempfile.TemporaryDirectory() as cache:
        step = shlex.join([*HARNESS, "diff", good, "--repo", ".", "--format", "json",
                           "--cache-dir", cache])  # fmt: skip
        script = f"{step} >/dev/null; test $? -eq 0"
        subprocess.run(["git", "bisect", "start", bad, good], cwd=repo, env=env,
                       capture_output=True, check=True)  # fmt: skip
        took, done = timed(["git", "bisect", "run", "sh", "-c", script], cwd=repo)
        subprocess.run(
            ["git", "bisect", "reset"], cwd=repo, env=env, capture_output=True, check=True
        )
    found = [line.split()[0] for line in done.stdout.splitlines() if "is the first bad" in line]
    assert found, done.stdout + done.stderr
    return took, found[0]


def peak_memory(argv: list[str]) -> tuple[float, int, subprocess.CompletedProcess]:
    """(seconds, peak resident memory in bytes, the run) of `argv`: the largest of the
    process and the workers it waited for (wait4's maxrss is in KB on Linux)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        took = time.perf_counter() - start
        out.seek(0), err.seek(0)
        done = subprocess.CompletedProcess(argv, process.returncode, out.read(), err.read())
    return took, usage.ru_maxrss * 1024, done


def memory(padding: int, sizes: tuple[int, ...] = (2_000, 5_000, 20_000)) -> None:
    """Peak memory of `harness history` over histories of `sizes` commits, side by side."""
    figures = []
    for commits in sizes:
        with tempfile.TemporaryDirectory() as scratch:
            repo = Path(scratch) / "sglang"
            build(repo, commits, padding)
            with tempfile.TemporaryDirectory() as cache:
                argv = [*HARNESS, "history", "--repo", str(repo), "--format", "json"]
                took, peak, done = peak_memory([*argv, "--cache-dir", cache])
            assert done.returncode in (0, 1), done.stderr.decode(errors="replace")
            found = len(json.loads(done.stdout)["commits"])
            figures.append((commits, peak, took, found))
    size_kb = len(overrides_source(Overrides()) + PADDING_PASS * padding) / 1024
    print(f"history memory: one {size_kb:.0f} KB overrides.py changed by every commit; peak "
          "resident set of the harness process (or its largest worker), cold cache")  # fmt: skip
    for commits, peak, took, found in figures:
        print(f"  {commits:>7,} commits: {peak / 2**20:7.1f} MB peak   {took:7.1f} s   "
              f"({found} behavior-changing commit(s))")  # fmt: skip
    large, high, _, _ = figures[-1]
    for small, low, _, _ in figures[:-1]:
        growth = (high - low) / (large - small)
        print(f"  growth from {small:,} to {large:,}: {growth / 1024:.2f} KB per commit   "
              "(target: about 0)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memory", action="store_true",
                        help="peak memory of history at 2,000 and 20,000 commits")  # fmt: skip
    parser.add_argument("--padding", type=int, default=PADDING,
                        help="unrelated passes in overrides.py (default: %(default)s)")  # fmt: skip
    parser.add_argument("--edits", choices=tuple(EDITS), default="pass",
                        help="what the other commits edit (default: %(default)s)")  # fmt: skip
    args = parser.parse_args()
    if args.memory:
        memory(args.padding)
        return
    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch) / "sglang"
        shas = build(repo, args.commits, edits=args.edits)
        size_kb = (repo / OVERRIDES).stat().st_size / 1024
        print(f"history: {len(shas):,} commits touching a {size_kb:.0f} KB overrides.py "
              f"(each edits {EDITS[args.edits]}); "
              f"the FA4 pass changes 5 times; best of {args.repeat}, cold cache")  # fmt: skip
        where = ["--repo", str(repo), "--format", "json"]
        history_s, done = cold(args.repeat, [*HARNESS, "history", *where])
        report = json.loads(done.stdout)
        diff_s, _ = cold(args.repeat, [*HARNESS, "diff", shas[0], shas[-1], *where])
        print(f"harness history (whole range):     {history_s:7.2f} s   "
              f"({len(report['commits'])} behavior-changing commit(s) found)")  # fmt: skip
        print(f"harness diff of its endpoints:     {diff_s:7.2f} s")
        print(f"ratio history / diff:              {history_s / diff_s:7.2f}    (target <= 2)")
        bisect_s, done = cold(args.repeat, [*HARNESS, "bisect", shas[0], shas[-1], *where])
        culprit = json.loads(done.stdout)["culprit"]["sha"]
        git_s, git_culprit = git_bisect_run(repo, shas[0], shas[-1])
        same = "same culprit" if git_culprit == culprit else f"DIFFERENT: git says {git_culprit}"
        print(f"git bisect run + harness diff:     {git_s:7.2f} s")
        print(f"harness bisect:                    {bisect_s:7.2f} s   ({same})")
        print(f"ratio bisect / diff:               {bisect_s / diff_s:7.2f}    (target <= 1.5)")
        print(f"git bisect run / harness bisect:   {git_s / bisect_s:7.2f}x")


if __name__ == "__main__":
    main()
