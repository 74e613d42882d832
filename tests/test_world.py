"""Every spelling SGLang used for the same checks answers alike."""

from __future__ import annotations

import json

import pytest

from harness.matrix.load import load_matrix
from harness.testing.gitrepo import FixtureRepo
from tests import oracle
from tests.conftest import run_cli
from tests.helpers import (
    PATH,
    commit_versions,
    evaluate_at,
    module,
    plain_matrix,
    resolved_outcomes,
)

HELPERS = """
@register_post_process
def _fa4_page_constraint(view):
    backends = (view.attention_backend, view.decode_attention_backend, view.prefill_attention_backend)
    if "fa4" in backends and not view.use_mla_backend() and is_sm100_supported() and (view.speculative_eagle_topk or 0) <= 1:
        return {"page_size": 128}
    return {}
"""

PLATFORM = """
FA4 = "fa4"

def _any_backend(view, name):
    for field in ("attention_backend", "decode_attention_backend", "prefill_attention_backend"):
        if getattr(view, field) == name:
            return True
    return False

@register_post_process
def _fa4_page_constraint(view) -> dict[str, int]:
    if not _any_backend(view, FA4):
        return {}
    if use_mla_backend(view):
        return {}
    if not get_platform().is_sm100:
        return {}
    topk = view.speculative_eagle_topk
    return {"page_size": 128} if (topk or 0) <= 1 else {}
"""

BLACKWELL = """
@register_post_process
def _fa4_page_constraint(view):
    platform = get_platform()
    datacenter_blackwell = platform.is_blackwell and not platform.is_sm120
    uses = any(b == "fa4" for b in [view.prefill_attention_backend, view.decode_attention_backend, view.attention_backend])
    ok = uses and datacenter_blackwell and not use_mla_backend(view)
    if ok and not (view.speculative_eagle_topk is not None and view.speculative_eagle_topk > 1):
        logger.info("forcing %s", 128)
        return dict(page_size=128)
    return {}
"""

SM100_OR_SM110 = """
@register_post_process
def _fa4_page_constraint(view):
    from sglang.srt.utils import is_sm100_or_sm110_supported
    datacenter = is_sm100_or_sm110_supported()
    fa4 = "fa4" in {view.attention_backend, view.decode_attention_backend, view.prefill_attention_backend}
    if fa4 and datacenter and not use_mla_backend(view) and (view.speculative_eagle_topk or 0) <= 1:
        return {"page_size": 128}
    return {}
"""

SM100_OR_SM110_FLAG = SM100_OR_SM110.replace(
    "    from sglang.srt.utils import is_sm100_or_sm110_supported\n", ""
).replace("is_sm100_or_sm110_supported()", "get_platform().is_sm100_or_sm110")

ARCHITECTURES = """
_SKIP = frozenset({"DeepseekV3ForCausalLM"})

@register_post_process
def _fa4_page_constraint(view):
    from sglang.srt.utils import is_sm100_supported as on_sm100
    if any(a in _SKIP for a in model_config_of(view).hf_config.architectures):
        return {}
    fa4 = "fa4" in {view.attention_backend, view.decode_attention_backend, view.prefill_attention_backend}
    if fa4 and not view.use_mla_backend() and on_sm100() and (view.speculative_eagle_topk or 0) <= 1:
        return {"page_size": 128}
    return {}
"""

LOCAL = """
import logging
logger = logging.getLogger(__name__)

def register_post_process(fn):
    REGISTRY.append(fn)
    return fn
"""

SPELLINGS = {
    "helpers": HELPERS,
    "platform": PLATFORM,
    "blackwell": BLACKWELL,
    "sm100_or_sm110": SM100_OR_SM110,  # the FA4 matrix has no SM110 GPU: SM100 alone
    "sm100_or_sm110_flag": SM100_OR_SM110_FLAG,
    "arch": ARCHITECTURES,
}


@pytest.fixture(scope="module")
def spellings(tmp_path_factory):
    root = tmp_path_factory.mktemp("spellings")
    texts = [module(LOCAL + body) for body in SPELLINGS.values()]
    return root, dict(zip(SPELLINGS, commit_versions(root, texts), strict=True))


def test_the_helper_spelling_matches_the_predicate(spellings):
    root, shas = spellings
    evaluation = evaluate_at(root, shas["helpers"])
    matrix_cells = list(oracle.all_cells())
    got = resolved_outcomes(evaluation.table, load_matrix())
    assert got == [oracle.page_size(cell, full_clause=False) for cell in matrix_cells]


@pytest.mark.parametrize(
    "spelling", ["platform", "blackwell", "sm100_or_sm110", "sm100_or_sm110_flag"]
)
def test_other_spellings_show_no_change(spellings, spelling):
    root, shas = spellings
    result = run_cli("diff", shas["helpers"], shas[spelling], "--repo", str(root))
    assert result.code == 0, result.out
    assert "No cell changes page_size" in result.out


def test_a_new_clause_on_an_input_the_matrix_holds_fixed_is_a_blind_spot(spellings):
    """The architecture spelling adds a skip for some model classes; the FA4 matrix holds
    the architecture at LlamaForCausalLM, so no cell changes but it cannot tell."""
    root, shas = spellings
    result = run_cli("diff", shas["helpers"], shas["arch"], "--repo", str(root), "--format", "json")
    assert result.code == 4, result.out
    (spot,) = json.loads(result.out)["blind_spots"]
    source = module(LOCAL + ARCHITECTURES).splitlines()
    line = next(n for n, text in enumerate(source, 1) if "in _SKIP for a in" in text)
    assert (spot["side"], spot["line"], spot["seen"]) == ("head", line, "only false")
    assert "architecture is LlamaForCausalLM on every cell" in spot["hint"]
    assert "architecture = DeepseekV3ForCausalLM takes it the other way" in spot["hint"]  # in _SKIP


ISINSTANCE = """\
def target(view):
    if isinstance(view.page_size, Marker):
        return {"page_size": 1}
    return {"page_size": 2}
"""


@pytest.mark.parametrize("binding", ["{object: {}}", "{call: null}"])
def test_a_stand_in_tested_as_a_class_is_refused_naming_the_line(tmp_path, binding):
    """SGLang's name would be a class; a binding (an object, a function) is not one, so
    `isinstance(x, Marker)` is refused (exit 4) rather than a TypeError outcome."""
    sha = FixtureRepo(tmp_path / "repo").commit("isinstance", {PATH: ISINSTANCE})
    matrix = tmp_path / "m.yaml"
    matrix.write_text(plain_matrix("isinstance") + f"bindings:\n  Marker: {binding}\n")
    done = run_cli("diff", sha, sha, "--repo", str(tmp_path / "repo"), "--matrix", str(matrix),
                   "--format", "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"].get("base", "")
    assert done.code == 4 and "isinstance() against Marker" in note and f"{PATH}:2" in note, note
