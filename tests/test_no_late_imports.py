"""The harness imports nothing once the first evaluation has started.

Were an evaluation ever to write a file (it cannot: no filesystem in the
child), a module the harness imported afterwards (a report renderer, in a
writable install) would be the way into the harness's own process. Each
command runs in a fresh interpreter with an audit hook that records every
`import` event after the first job was handed to a worker.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

WATCH = """
import json, sys
from harness.engine import batch, explore, spawn, trace, whatif, worker
from harness.scan import infer

started, late = [], []
original = worker.start


def start(*args, **kwargs):
    started.append(True)
    return original(*args, **kwargs)


for module in (worker, explore, trace, whatif, infer, batch):
    module.start = start
sys.addaudithook(lambda event, args: late.append(args[0]) if event == "import" and started else None)
from harness.cli.main import main

code = main(sys.argv[1:])
print(json.dumps({"code": code, "started": bool(started), "late": sorted(set(late))}),
      file=sys.stderr)
"""

ROOT = Path(__file__).resolve().parents[1]
EXPLAINED = ("attention_backend=fa4", "decode_attention_backend=null",
             "prefill_attention_backend=null", "use_mla=false", "speculative_eagle_topk=null",
             "prefill_cuda_graph=full", "platform=sm100", "page_size=16")  # fmt: skip


def watched(*argv: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", WATCH, *argv], capture_output=True, text=True, cwd=ROOT,
        timeout=600, check=False,
    )  # fmt: skip
    last = done.stderr.strip().splitlines()[-1:] or ["(nothing)"]
    try:
        return json.loads(last[0])
    except ValueError:
        raise AssertionError(f"the watched run ended without its summary:\n{done.stderr}") from None


@pytest.mark.parametrize(
    "argv",
    [
        ("diff", "#30835^", "#30835", "--format", "markdown"),
        ("diff", "#30835^", "#30835", "--format", "junit"),
        ("diff", "#30835^", "#30835", "--format", "html"),
        ("diff", "#30835^", "#30835", "--format", "github", "--matrix", "inferred"),
        (
            "diff",
            "#30835^",
            "#30835",
            "--output",
            "json=OUT/r.json",
            "--output",
            "markdown=OUT/r.md",
        ),
        ("history", "--format", "json"),
        ("explain", "#30835^..#30835", *(f"--where={w}" for w in EXPLAINED)),
    ],
    ids=["markdown", "junit", "html", "inferred-github", "outputs", "history", "explain"],
)
def test_nothing_is_imported_after_the_first_evaluation_starts(history, tmp_path, argv):
    argv = tuple(a.replace("OUT", str(tmp_path)) for a in argv)
    seen = watched(*argv, "--repo", history.repo(), "--no-cache")
    assert seen["started"], seen  # the watch saw an evaluation: the test can fail
    assert seen["code"] in (0, 1), seen
    assert seen["late"] == [], seen
