"""Benchmark: `harness history` and `harness bisect` over 1,000 commits.

Run: python bench/bench_history.py [--commits N] [--repeat N]

Generates (with git fast-import) a history of N commits, each touching an
SGLang-sized overrides.py (about 80 KB): every commit edits one unrelated
pass, and the FA4 pass itself changes five times (PR #30835's clause at 15%
of the way, then four spelling refactors that keep behavior). Then, side by
side in one run, all as fresh processes with a cold cache:
  - `harness history` over the whole range, against one `harness diff` of
    its endpoints (target: history <= 2x the diff);
  - `git bisect run` with a script that evaluates each step through
    `harness diff GOOD` on the checked-out tree, against `harness bisect
    GOOD BAD` (target: harness bisect >= 8x faster); both must name the same
    commit.
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
from pathlib import Path

from harness.testing.gitrepo import IDENTITY
from harness.testing.sglang_fixture import (
    OVERRIDES,
    PADDING_PASS,
    Overrides,
    overrides_source,
)

PADDING = 200
HARNESS = [sys.executable, "-m", "harness"]


def versions(commits: int) -> list[tuple[str, str]]:
    """(subject, overrides.py text) per commit, oldest first; edits accumulate as in life."""
    marks = {int(commits * share): change for share, change in (
        (0.15, {"full_clause": True}), (0.3, {"spelling": "platform"}),
        (0.5, {"spelling": "helpers"}), (0.7, {"spelling": "platform"}),
        (0.9, {"spelling": "helpers"}),
    )}  # fmt: skip
    passes = [PADDING_PASS.format(n=k) for k in range(PADDING)]
    knobs, out = {}, []
    for n in range(commits):
        knobs.update(marks.get(n, {}))
        k = n * 37 % PADDING  # one unrelated pass edited per commit
        passes[k] = PADDING_PASS.format(n=k).replace(f"- {k} % 7}}", f"- {k} % {7 + n}}}")
        text = overrides_source(Overrides(**knobs)) + "".join(passes)
        subject = "Touch the FA4 pass" if n in marks else f"Tune pass {k}"
        out.append((f"{subject} (#{31000 + n})", text))
    return out


def build(root: Path, commits: int) -> list[str]:
    """A repository whose main branch holds `commits` commits; returns their shas."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    stream = bytearray()
    for n, (subject, text) in enumerate(versions(commits), 1):
        message, body = subject.encode(), text.encode()
        stamp = 1_760_000_000 + 3600 * n
        stream += b"commit refs/heads/main\nmark :%d\n" % n
        stream += b"committer Bench <bench@harness.invalid> %d +0000\n" % stamp
        stream += b"data %d\n%s\n" % (len(message), message)
        stream += b"M 100644 inline %s\ndata %d\n%s\n" % (OVERRIDES.encode(), len(body), body)
    marks = root / ".git" / "bench-marks"
    subprocess.run(["git", "fast-import", "--quiet", f"--export-marks={marks}"], cwd=root,
                   input=bytes(stream), check=True)  # fmt: skip
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch) / "sglang"
        shas = build(repo, args.commits)
        size_kb = (repo / OVERRIDES).stat().st_size / 1024
        print(f"history: {len(shas):,} commits touching a {size_kb:.0f} KB overrides.py; "
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
        print(f"speed-up:                          {git_s / bisect_s:7.2f}x   (target >= 8)")


if __name__ == "__main__":
    main()
