"""Expected outcomes, computed from the predicate in CONTEXT.md, not from harness.

The axes are written out here from the issue's specification of the default
matrix, so a matrix file that drifted from it fails too.
"""

from __future__ import annotations

import functools
import itertools

BACKENDS = [None, "fa3", "fa4", "flashinfer", "triton", "flashmla", "trtllm_mla", "trtllm_mha",
            "cutlass_mla"]  # fmt: skip
AXES = {
    "attention_backend": BACKENDS,
    "decode_attention_backend": BACKENDS,
    "prefill_attention_backend": BACKENDS,
    "use_mla": [False, True],
    "speculative_eagle_topk": [None, 1, 2, 8],
    "prefill_cuda_graph": ["full", "breakable", "tc_piecewise", "disabled"],
    "platform": ["sm90", "sm100", "sm120"],
    "page_size": [None, 1, 16, 64, 128],
}
NAMES = list(AXES)


def all_cells():
    """Every cell as a dict, first axis most significant (the documented order)."""
    for values in itertools.product(*AXES.values()):
        yield dict(zip(NAMES, values, strict=True))


def fa4_forces_128(cell: dict, full_clause: bool) -> bool:
    """_fa4_page_constraint's condition; `full_clause` is PR #30835's extra clause."""
    fa4 = "fa4" in (
        cell["attention_backend"],
        cell["decode_attention_backend"],
        cell["prefill_attention_backend"],
    )
    forced = (
        fa4
        and not cell["use_mla"]
        and cell["platform"] == "sm100"
        and (cell["speculative_eagle_topk"] or 0) <= 1
    )
    if full_clause:
        forced = forced and cell["prefill_cuda_graph"] != "full"
    return forced


def page_size(cell: dict, full_clause: bool):
    return 128 if fa4_forces_128(cell, full_clause) else cell["page_size"]


def key(cell: dict) -> tuple:
    return tuple((type(cell[n]).__name__, cell[n]) for n in NAMES)


def changed_between(base_clause: bool, head_clause: bool) -> dict[tuple, tuple]:
    """{cell key: (base page_size, head page_size)} for cells whose page_size differs
    (a copy: the walk over the 349,920 cells is made once per process)."""
    return dict(_changed_between(base_clause, head_clause))


@functools.cache
def _changed_between(base_clause: bool, head_clause: bool) -> dict[tuple, tuple]:
    out = {}
    for cell in all_cells():
        before, after = page_size(cell, base_clause), page_size(cell, head_clause)
        if before != after or type(before) is not type(after):
            out[key(cell)] = (before, after)
    return out


def cube_cells(where: dict) -> set[tuple]:
    """The cells a summary rule selects: listed values on its axes, any value elsewhere."""
    choices = [where.get(n, AXES[n]) for n in NAMES]
    return {key(dict(zip(NAMES, values, strict=True))) for values in itertools.product(*choices)}


def assert_exact_cover(summary: list[dict], expected: dict) -> None:
    """A report's rules are disjoint and their union is exactly the expected changed cells."""
    covered: set[tuple] = set()
    for rule in summary:
        cube = cube_cells(rule["where"])
        assert len(cube) == rule["cells"]
        assert not covered & cube, "rules overlap"
        covered |= cube
    assert covered == set(expected)


# --- the pipeline matrix (matrices/sglang-page-size-pipeline.yaml) -------------------

PIPELINE_BACKENDS = [*BACKENDS, "intel_xpu"]
PIPELINE_AXES = {
    "attention_backend": PIPELINE_BACKENDS,
    "decode_attention_backend": [None, "fa4", "triton"],
    "prefill_attention_backend": [None, "fa4", "triton"],
    "use_mla": [False, True],
    "speculative_eagle_topk": [None, 1, 2],
    "prefill_cuda_graph": ["full", "breakable", "disabled"],
    "platform": ["sm90", "sm100", "sm120", "hip", "musa", "xpu"],
    "page_size": [None, 1, 16, 64, 128],
}
MLA_PAGE_SIZES = {"flashmla": 64, "cutlass_mla": 128, "trtllm_mla": 64}


def pipeline_cells():
    names = list(PIPELINE_AXES)
    for values in itertools.product(*PIPELINE_AXES.values()):
        yield dict(zip(names, values, strict=True))


def default_backend(cell: dict) -> str:
    """The fixture's `get_default_attn_backend` for a cell with no backend (Llama, not
    Whisper): MLA -> trtllm_mla on SM100, fa3 on SM90, else triton; MHA -> trtllm_mha on
    SM100 with topk <= 1, aiter on HIP, else triton."""
    platform = cell["platform"]
    if cell["use_mla"]:
        return {"sm100": "trtllm_mla", "sm90": "fa3"}.get(platform, "triton")
    if platform == "sm100" and (cell["speculative_eagle_topk"] or 0) <= 1:
        return "trtllm_mha"
    return "aiter" if platform == "hip" else "triton"


def pipeline_page_size(
    cell: dict, full_clause: bool, aiter_layout: str = "default", both_phases: bool = False
):
    """The fixture's passes in order, each seeing what the earlier ones declared.

    Default: a cell with no attention backend gets `default_backend`. MLA: HIP/MUSA
    with the blocked AITER layout -> 16, else the (effective) MLA backend's size.
    FA4: 128 as in `fa4_forces_128` (no default backend is fa4). XPU: an intel_xpu
    backend serving decode (`both_phases`: prefill or decode; a split field left
    unset falls back to the base backend) on an XPU, with XMX and the auto KV dtype
    (the matrix defaults), keeps a given size, else 128. Default page: 1 when unset.
    """
    backend = cell["attention_backend"] or default_backend(cell)
    page = cell["page_size"]
    if cell["use_mla"]:
        if cell["platform"] in ("hip", "musa") and aiter_layout == "blocked":
            page = 16
        elif MLA_PAGE_SIZES.get(backend):
            page = MLA_PAGE_SIZES[backend]
    if fa4_forces_128(cell, full_clause):
        page = 128
    decode = cell["decode_attention_backend"] or backend
    prefill = cell["prefill_attention_backend"] or backend
    serving = (prefill, decode) if both_phases else (decode,)
    if cell["platform"] == "xpu" and "intel_xpu" in serving:
        page = 128 if page is None else page
    return 1 if page is None else page


def key_of(cell: dict, axes: dict) -> tuple:
    return tuple((type(cell[n]).__name__, cell[n]) for n in axes)
