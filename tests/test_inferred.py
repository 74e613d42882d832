"""`harness diff --matrix inferred`: the matrix built from the code of both revisions.

Expected cells come from the predicate in CONTEXT.md and from reading the fixture's
conditions, never from the harness's own output.
"""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.helpers import commit_versions, module


def inferred(repo: str, *args: str) -> tuple[int, dict | None, str]:
    result = run_cli("diff", *args, "--matrix", "inferred", "--repo", repo, "--format", "json")
    report = json.loads(result.out) if result.out.startswith("{") else None
    return result.code, report, result.out + result.err


def forced_by_fa4(cell: dict) -> bool:
    """CONTEXT.md's predicate for the 128 auto-force, with #30835's clause false."""
    backends = [cell.get(f) for f in ("attention_backend", "decode_attention_backend",
                                      "prefill_attention_backend")]  # fmt: skip
    return "fa4" in backends and cell["use_mla"] is False and cell["platform"] == "sm100"


def test_30835_changes_only_full_prefill_graph_fa4_cells(history):
    code, report, _ = inferred(history.repo(), "#30835^", "#30835")
    assert code == 1 and report["matrix"] == "inferred"
    assert "_fa4_page_constraint" in report["target"]["function"]
    assert {"full", "breakable"} <= set(report["axes"]["prefill_cuda_graph"])
    assert report["changed"]
    for item in report["changed"]:
        cell = item["cell"]
        assert forced_by_fa4(cell) and cell["prefill_cuda_graph"] == "full"
        assert item["base"]["page_size"] == 128 != item["head"]["page_size"]


def test_a_refactor_is_green_and_a_commit_touching_no_pass_changes_nothing(history):
    code, report, _ = inferred(history.repo(), "#30410^", "#30410")
    assert code == 0 and report["changed"] == [] and report["blind_spots"] == []
    code, report, _ = inferred(history.repo(), "#30850^", "#30850")
    assert code == 0 and report["changed"] == [] and report["status"] == 0
    assert "No registered pass's code, run order or declared defaults" in report["message"]


def test_a_changed_default_is_a_change_of_the_passes_that_read_it(history):
    """#31020 changes ServerArgs's chunked_prefill_size default: the pass reading it is
    chosen (here it reads a GPU count the world does not model, so: cannot tell), never
    "nothing changed"."""
    code, report, _ = inferred(history.repo(), "#31020^", "#31020")
    assert code == 4 and report["target"]["function"].startswith("_chunked_prefill_default")


BASE = """
@register_post_process
def _fa4_page_constraint(view):
    if view.attention_backend == "fa4" and get_platform().is_sm100:
        return {"page_size": 128}
    return {}
"""

TOPK = BASE.replace(
    "    if view.attention_backend",
    '    if view.speculative_eagle_topk == 3:\n        return {"page_size": 2}\n    if view.attention_backend',
)
TOP = "from sglang.srt.platforms import get_platform\n\n\ndef register_post_process(fn):\n    return fn\n"


def test_a_value_no_shipped_axis_lists_becomes_a_class_and_its_change_is_seen(tmp_path):
    shas = commit_versions(tmp_path / "repo", [module(BASE, TOP), module(TOPK, TOP)])
    code, report, _ = inferred(str(tmp_path / "repo"), *shas)
    assert code == 1
    assert 3 in report["axes"]["speculative_eagle_topk"]
    cells = [item["cell"] for item in report["changed"]]
    assert cells and all(cell["speculative_eagle_topk"] == 3 for cell in cells)
    assert all(item["head"]["page_size"] == 2 for item in report["changed"])


def test_where_is_refused_and_too_many_classes_cannot_tell(tmp_path):
    shas = commit_versions(tmp_path / "repo", [module(BASE, TOP), module(TOPK, TOP)])
    done = run_cli("diff", *shas, "--matrix", "inferred", "--repo", str(tmp_path / "repo"),
                   "--where", "platform=sm100")  # fmt: skip
    assert done.code == 2 and "--where does not apply to --matrix inferred" in done.err
    done = run_cli("diff", *shas, "--matrix", "inferred", "--repo", str(tmp_path / "repo"),
                   "--max-cells", "10")  # fmt: skip
    assert done.code == 4 and done.err.startswith("harness: cannot tell: --matrix inferred:")
    assert len(done.err.splitlines()) == 1
