"""`harness diff --matrix inferred`: the matrix built from the code of both revisions.

Expected cells come from the predicate in CONTEXT.md and from reading the fixture's
conditions, never from the harness's own output.
"""

from __future__ import annotations

import itertools
import json
import math
import xml.etree.ElementTree as ET

from harness.testing.gitrepo import FixtureRepo
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
    assert done.code == 4 and "Not evaluated: the pass _fa4_page_constraint reads" in done.out
    assert "--max-cells 10" in done.out and done.out.rstrip().endswith(
        "0 parts: 0 changed, 0 cannot tell, 0 no change"
    )


# --- too many cells for one matrix: one matrix per changed pass ---------------------

FA4_PASS = BASE  # the FA4 pass alone, registered
TWO = (
    FA4_PASS
    + """

@register_post_process
def _topk_sampling(view):
    if view.speculative_eagle_topk == 2:
        return {"sampling_backend": "pytorch"}
    return {}
"""
)
TWO_HEAD = TWO.replace('== "fa4"', 'in ("fa4", "fa3")').replace("== 2:", "in (2, 4):")
REGISTRY = (
    "from sglang.srt.arg_groups.registry import register_post_process\n"
    "from sglang.srt.platforms import get_platform\n"
)


def expected_changes(part: dict) -> int:
    """Cells of the part's own axes on which the two versions above differ: the FA4 pass
    now also forces fa3 on SM100 (from a page_size other than 128), the top-k pass now also
    answers 4."""
    axes = part["axes"]
    names, domains = list(axes), list(axes.values())
    count = 0
    for values in itertools.product(*domains):
        cell = dict(zip(names, values, strict=True))
        if part["target"]["function"] == "_fa4_page_constraint":
            count += (cell.get("attention_backend") == "fa3" and cell.get("platform") == "sm100"
                      and cell.get("page_size") != 128)  # fmt: skip
        else:
            count += cell.get("speculative_eagle_topk") == 4
    return count


def test_too_many_cells_for_one_matrix_diffs_each_changed_pass_alone(tmp_path):
    shas = commit_versions(tmp_path / "repo", [module(TWO, REGISTRY), module(TWO_HEAD, REGISTRY)])
    repo = str(tmp_path / "repo")
    code, whole, _ = inferred(repo, *shas)
    assert code == 1 and "parts" not in whole
    limit = whole["cells"] - 1  # one cell too many for one matrix
    code, report, _ = inferred(repo, *shas, "--max-cells", str(limit))
    assert code == 1 and report["status"] == 1 and report["cells"] == whole["cells"]
    parts = {p["target"]["function"]: p for p in report["parts"]}
    assert set(parts) == {"_fa4_page_constraint", "_topk_sampling"}
    for name, part in parts.items():
        assert part["matrix"] == f"inferred:{name}" and part["cells"] <= limit
        assert len(part["changed"]) == expected_changes(part) > 0
        assert part["notes"] == {}
    text = run_cli("diff", *shas, "--matrix", "inferred", "--repo", repo, "--max-cells", str(limit))
    assert text.code == 1
    assert text.out.startswith("--matrix inferred: one matrix of every changed pass would have")
    assert text.out.rstrip().endswith("2 parts: 2 changed, 0 cannot tell, 0 no change")


# An unchanged pass that reads what the FA4 pass declares, and compares an input of its own.
READER = """

@register_post_process
def _chunk_for_page(view):
    if view.page_size == 128 and view.chunked_prefill_size == 8192:
        return {"chunked_prefill_size": 4096}
    return {}
"""


def test_parts_whose_own_inputs_exceed_the_limit_split_without_the_one_matrix(tmp_path):
    """Far over --max-cells, the parts' own inputs (those no changed pass declares) already
    make too many cells: the count said is their product, at most the one matrix's, and the
    parts are the ones the one matrix's count would have split into."""
    versions = [module(text + READER, REGISTRY) for text in (TWO, TWO_HEAD)]
    shas = commit_versions(tmp_path / "repo", versions)
    repo = str(tmp_path / "repo")
    _, whole, _ = inferred(repo, *shas)
    _, exact, _ = inferred(repo, *shas, "--max-cells", str(whole["cells"] - 1))
    code, report, _ = inferred(repo, *shas, "--max-cells", "40")
    declared = {p["target"]["output"] for p in report["parts"]}
    classes: dict[str, int] = {}
    for part in report["parts"]:
        for axis, values in part["axes"].items():
            if axis not in declared:
                classes[axis] = max(classes.get(axis, 0), len(values))
    # the reader's own input is in the one matrix only: the count said is below its count
    assert 40 < report["cells"] == math.prod(classes.values()) < whole["cells"]
    assert code == 1 and report["parts"] == exact["parts"]


def test_split_reports_render_as_one_document_in_every_format(tmp_path):
    shas = commit_versions(tmp_path / "repo", [module(TWO, REGISTRY), module(TWO_HEAD, REGISTRY)])
    repo = str(tmp_path / "repo")
    args = ("diff", *shas, "--matrix", "inferred", "--repo", repo, "--max-cells", "40")
    junit = run_cli(*args, "--format", "junit")
    suites = ET.fromstring(junit.out)
    assert junit.code == 1 and len(suites.findall("testsuite")) == 2
    assert int(suites.get("failures")) == sum(int(s.get("failures")) for s in suites)
    sample = json.loads(run_cli(*args, "--format", "json-sample").out)
    assert [len(p["changed"]) <= 10 for p in sample["parts"]] == [True, True]
    markdown = run_cli(*args, "--format", "markdown")
    assert markdown.code == 1 and markdown.out.count("inferred:_") >= 2


SWAPPED = """
@register_post_process
def _page_size_default(view):
    if view.page_size is None:
        return {"page_size": 1}
    return {}


@register_post_process
def _fa4_page_constraint(view):
    if view.attention_backend == "fa4" and view.page_size == 1:
        return {"page_size": 128}
    return {}
"""
SWAPPED_HEAD = SWAPPED.split("\n\n\n")[1] + "\n\n\n" + SWAPPED.split("\n\n\n")[0] + "\n"


def test_two_passes_that_swap_places_on_a_field_both_touch_cannot_tell(tmp_path):
    """Run in the head's order at both revisions, the swap would compare equal: it is named
    as not evaluated instead."""
    shas = commit_versions(tmp_path / "repo",
                           [module(SWAPPED, REGISTRY), module(SWAPPED_HEAD, REGISTRY)])  # fmt: skip
    code, report, _ = inferred(str(tmp_path / "repo"), *shas)
    assert code == 4 and report["changed"] == []
    (reason,) = [r for r in report["cannot_tell"] if "ran before" in r]
    assert "_page_size_default" in reason and "_fa4_page_constraint" in reason
    assert "page_size" in reason


BLOCKED = (
    FA4_PASS
    + """

@register_post_process
def _other(view):
    mystery_helper()
    if view.speculative_eagle_topk == 2:
        return {"page_size": 2}
    return {}
"""
)


def test_a_changed_pass_that_cannot_be_read_at_either_side_cannot_tell(tmp_path):
    """A name nothing binds blocks the pass at both revisions; the clause after it changes:
    never "nothing changed"."""
    head = BLOCKED.replace("== 2:", "== 3:")
    shas = commit_versions(tmp_path / "repo", [module(BLOCKED, REGISTRY), module(head, REGISTRY)])
    code, report, text = inferred(str(tmp_path / "repo"), *shas)
    assert code == 4, text
    assert "mystery_helper" in json.dumps(report["notes"])


def test_no_target_or_no_parse_at_either_side_cannot_tell(tmp_path):
    missing = FixtureRepo(tmp_path / "missing")
    shas = [missing.commit(f"c{n}", {"README.md": f"v{n}\n"}) for n in range(2)]
    done = run_cli("diff", *shas, "--matrix", "inferred", "--repo", str(tmp_path / "missing"))
    assert done.code == 4 and "no registered pass to compare" in done.err
    assert "does not exist" in done.err and len(done.err.splitlines()) == 1
    broken = module(TWO, REGISTRY) + "\ndef (:\n"
    shas = commit_versions(tmp_path / "broken", [broken, broken + "\n# again\n"])
    done = run_cli("diff", *shas, "--matrix", "inferred", "--repo", str(tmp_path / "broken"))
    assert done.code == 4 and "no registered pass to compare" in done.err


GGUF = """
@register_post_process
def _gguf_quantization(view):
    from sglang.srt.utils.hf_transformers_utils import check_gguf_file

    if view.load_format == "gguf":
        return {"quantization": "gguf"}
    if check_gguf_file(view.model_path):
        return {"quantization": "gguf"}
    return {}
"""
HF_UTILS = '"""Hub helpers."""\n\n\ndef check_gguf_file(path):\n    return path.endswith(".gguf")\n'


def test_a_pass_importing_a_bound_helper_in_its_body_is_inferred(tmp_path):
    """The shipped matrix binds `check_gguf_file` (a probe of the checkpoint): a pass that
    imports it inside its body, from the file that defines it, is read like any other,
    and the literals it compares `load_format` with become the axis (a change from
    "gguf" to "auto" changes exactly the cells of those two values)."""
    extra = {"python/sglang/srt/utils/hf_transformers_utils.py": HF_UTILS}
    versions = [module(GGUF, TOP), module(GGUF.replace('== "gguf"', '== "auto"'), TOP)]
    shas = commit_versions(tmp_path / "repo", versions, extra)
    code, report, out = inferred(str(tmp_path / "repo"), *shas)
    assert code == 1, out
    assert {"gguf", "auto"} <= set(report["axes"]["load_format"])
    assert {item["cell"]["load_format"] for item in report["changed"]} == {"gguf", "auto"}
