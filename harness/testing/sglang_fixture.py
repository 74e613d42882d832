"""An SGLang-shaped package of override passes, written for the harness, and a history.

Our own text in the real shapes: `overrides.py` starts with a license comment
and a multi-line module docstring, imports heavy modules at the top and runs
module-level code (it cannot be imported here, on purpose), defines its own
`register_post_process`, and holds several passes besides the FA4 one, in
the spellings SGLang used over time. Its passes draw on other modules of the
package, in every import form: a helper in `model_override_base.py`, through a
relative import and through a re-export in the package's `__init__.py`, and
constants in a third module, `choices.py`, read through a module alias.
`build_history` makes a small repository whose history contains PR #30835,
its revert, noise, a change to a helper file alone, and then the resolution
code: `server_args.py` with its defaults and `pipeline.py` with the order the
passes run in, a change to a default (#31020), and a change to the order
(#31030).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from harness.testing.gitrepo import FixtureRepo

PACKAGE = "python/sglang/srt/arg_groups"
OVERRIDES = f"{PACKAGE}/overrides.py"
BASE = f"{PACKAGE}/model_override_base.py"

PACKAGE_INIT = '''\
"""Argument groups: declarations, override passes and the views they read."""

from .model_override_base import get_default_attn_backend  # noqa: F401
'''

CHOICES = '''\
"""Values the argument groups accept, and what the passes derive from them."""

MLA_PAGE_SIZES = {"flashmla": 64, "cutlass_mla": 128, "trtllm_mla": 64}
DEFAULT_MHA_BACKEND = "triton"
DETERMINISTIC_BACKENDS = ["flashinfer", "fa3", "triton"]
'''

BASE_SOURCE = '''\
"""Read views and helpers shared by the override passes.

Model-family modules import this module without depending on overrides.py.
"""

import torch
from sglang.srt.arg_groups.view import model_config_of
from sglang.srt.platforms import get_platform

from .choices import DEFAULT_MHA_BACKEND


def model_memory_gb() -> float:
    """Total memory of the first GPU (a probe of the machine: never part of a closure)."""
    return torch.cuda.mem_get_info()[1] / 2**30


def attention_backends_of(cfg) -> tuple:
{backends_body}


def get_default_attn_backend(cfg, use_mla: bool) -> str:
    """The attention backend a configuration gets when it names none."""
    if "WhisperForConditionalGeneration" in model_config_of(cfg).hf_config.architectures:
        return "flashinfer"
    platform = get_platform()
    if use_mla:
        if platform.is_sm100:
            return "trtllm_mla"
        return "fa3" if platform.is_sm90 else "triton"
    if platform.is_sm100 and (cfg.speculative_eagle_topk or 0) <= 1:
        return "trtllm_mha"
    return "aiter" if platform.is_hip else DEFAULT_MHA_BACKEND
'''

DECODE_ONLY = '''\
    """The backends that serve decoding (the base one when none is split out)."""
    return (cfg.decode_attention_backend or cfg.attention_backend,)'''

BOTH_PHASES = '''\
    """(prefill, decode) backends: each split field falls back to the base backend."""
    prefill = cfg.prefill_attention_backend or cfg.attention_backend
    decode = cfg.decode_attention_backend or cfg.attention_backend
    return prefill, decode'''


def package_files(both_phases: bool = False) -> dict[str, str]:
    """The package's other modules; `both_phases`: the helper change of #30950."""
    body = BOTH_PHASES if both_phases else DECODE_ONLY
    return {
        f"{PACKAGE}/__init__.py": PACKAGE_INIT,
        f"{PACKAGE}/choices.py": CHOICES,
        BASE: BASE_SOURCE.format(backends_body=body),
    }


HELPER_IMPORTS = """\
from sglang.srt.utils import (
    is_hip,
    is_musa,
    is_sm90_supported,
    is_sm100_supported,
    is_xpu,
    xpu_has_xmx_support,
)
"""

PLATFORM_IMPORTS = """\
from sglang.srt.arg_groups.view import model_config_of, use_mla_backend
from sglang.srt.platforms import get_platform
from sglang.srt.utils import xpu_has_xmx_support
"""

HEADER = '''\
# Copyright 2026 the harness fixture authors. Written for harness's tests;
# shaped like SGLang's file, none of its text.
# ==============================================================================
"""Post-process passes: each reads a view of the arguments and declares fields.

Passes are registered in definition order. The resolution pipeline calls them
from its handlers, and each sees the fields the passes before it declared.
"""

from __future__ import annotations

import logging
from typing import Any, Dict

import sglang.srt.arg_groups.choices as choices
import torch
from sglang.srt.arg_groups import get_default_attn_backend
from sglang.srt.environ import envs
from sglang.srt.model_executor.cuda_graph_config import Backend
{imports}
from .model_override_base import attention_backends_of

logger = logging.getLogger(__name__)

_POST_PROCESS_PASSES = []


def register_post_process(fn):
    """Add `fn` to the passes run, in definition order, when arguments resolve."""
    _POST_PROCESS_PASSES.append(fn)
    return fn


_VISIBLE_GPUS = torch.cuda.device_count()
FA4_PAGE_SIZE = 128
_ATTENTION_FIELDS = ("attention_backend", "decode_attention_backend", "prefill_attention_backend")
'''

CHUNKED_PREFILL = """

@register_post_process
def _chunked_prefill_default(view) -> Dict[str, Any]:
    if view.chunked_prefill_size is not None:
        return {{}}
    return {{"chunked_prefill_size": {chunk} if _VISIBLE_GPUS > 1 else {chunk} // 2}}
"""

DEFAULT_PASS = """

@register_post_process
def _attention_backend_default(view) -> Dict[str, Any]:
    if view.attention_backend is not None:
        return {{}}
    backend = get_default_attn_backend(view, {mla_check})
    logger.info(f"Attention backend not specified. Use {{backend}} backend by default.")
    return {{"attention_backend": backend}}
"""

MLA_PASS = """

@register_post_process
def _mla_backend_page_constraints(view) -> Dict[str, Any]:
    if not {mla_check}:
        return {{}}
    if ({hip_check} or {musa_check}) and envs.SGLANG_AITER_KV_CACHE_LAYOUT.get() == "blocked":
        return {{"page_size": 16}}
    size = choices.MLA_PAGE_SIZES.get(view.attention_backend)
    return {{"page_size": size}} if size else {{}}
"""

USES_BACKEND = """

def _uses_backend(view, name: str) -> bool:
    return any(getattr(view, field) == name for field in _ATTENTION_FIELDS)
"""

FA4_PASS = '''

@register_post_process
def _fa4_page_constraint(view) -> Dict[str, Any]:
    """FA4 on Blackwell datacenter GPUs reads the KV cache in 128-token pages."""
    # {comment}
    if (
        _uses_backend(view, "fa4")
        and not {mla_check}
        and {sm100_check}
        and (view.speculative_eagle_topk or 0) <= 1{full_clause}
    ):
        logger.info("fa4 on sm100: page_size forced to %d", FA4_PAGE_SIZE)
        return {{"page_size": FA4_PAGE_SIZE}}
    return {{}}
'''

FULL_CLAUSE = """
        and view.cuda_graph_config.prefill.backend != Backend.FULL"""

TAIL_PASSES = """

@register_post_process
def _intel_xpu_page_constraint(view) -> Dict[str, Any]:
    if not ({xpu_check} and "intel_xpu" in attention_backends_of(view)):
        return {{}}
    if not xpu_has_xmx_support() or view.kv_cache_dtype != "auto":
        return {{"page_size": 64 if view.page_size is None else max(view.page_size, 64)}}
    return {{"page_size": 128 if view.page_size is None else view.page_size}}


@register_post_process
def _page_size_default(view) -> Dict[str, Any]:
    return {{"page_size": 1}} if view.page_size is None else {{}}
"""

PADDING_PASS = '''

@register_post_process
def _tuning_pass_{n}(view) -> Dict[str, Any]:
    """Generated filler: the real file holds many passes unrelated to page_size."""
    if view.max_running_requests is not None and view.max_running_requests > {n}:
        logger.debug("pass %d saw %s", {n}, view.max_running_requests)
        return {{"max_running_requests": view.max_running_requests - {n} % 7}}
    return {{}}
'''


@dataclass(frozen=True)
class Overrides:
    """The knobs that distinguish one version of the fixture file from another."""

    spelling: str = "helpers"  # "helpers": is_sm100_supported(); "platform": get_platform()
    full_clause: bool = False  # PR #30835's extra condition
    comment: str = "Pages of 128 tokens match the FA4 kernel tile."
    chunk: int = 8192
    padding: int = 0  # unrelated passes appended, to reach SGLang's file size
    broken: bool = False  # a syntax error far from the FA4 pass


def overrides_source(o: Overrides) -> str:
    helpers = o.spelling == "helpers"
    mla_check = "view.use_mla_backend()" if helpers else "use_mla_backend(view)"
    parts = [
        HEADER.format(imports=HELPER_IMPORTS if helpers else PLATFORM_IMPORTS),
        CHUNKED_PREFILL.format(chunk=o.chunk),
        DEFAULT_PASS.format(mla_check=mla_check),
        MLA_PASS.format(
            mla_check=mla_check,
            hip_check="is_hip()" if helpers else "get_platform().is_hip",
            musa_check="is_musa()" if helpers else "get_platform().is_musa",
        ),
        USES_BACKEND,
        FA4_PASS.format(
            comment=o.comment,
            mla_check=mla_check,
            sm100_check="is_sm100_supported()" if helpers else "get_platform().is_sm100",
            full_clause=FULL_CLAUSE if o.full_clause else "",
        ),
        TAIL_PASSES.format(xpu_check="is_xpu()" if helpers else "get_platform().is_xpu"),
    ]
    parts.extend(PADDING_PASS.format(n=n) for n in range(o.padding))
    if o.broken:
        parts.append("\n\ndef _half_written_pass(view) -> Dict[str, Any]:\n    return {\n")
    return "".join(parts)


SUBJECT_30835 = "[Tiny] Enable Full Cuda Graph with Page size = 1 (#30835)"


@dataclass(frozen=True)
class Step:
    key: str
    subject: str
    overrides: Overrides | None = None  # None: the commit leaves overrides.py alone
    other: dict[str, str] | None = None  # other files the commit writes


def history_steps(padding: int = 0) -> list[Step]:
    """The fixture history, oldest first; `key` names each commit for tests."""
    initial = Overrides(padding=padding)
    noise = replace(initial, chunk=16384)
    refactor = replace(noise, spelling="platform")
    comment = replace(refactor, comment="FA4 kernels tile the KV cache 128 tokens at a time.")
    pr30835 = replace(comment, full_clause=True)
    return [
        Step(
            "initial",
            "Add server-argument post-process passes (#30001)",
            initial,
            {"README.md": README, **package_files()},
        ),
        Step("noise", "Raise the chunked prefill default (#30123)", noise),
        Step(
            "refactor",
            "Read platform and MLA via get_platform()/use_mla_backend() (#30410)",
            refactor,
        ),
        Step("comment", "Explain the FA4 page size (#30502)", comment),
        Step("pr30835", SUBJECT_30835, pr30835),
        Step("docs", "Document page-size overrides (#30850)", None, {"docs/page_size.md": DOCS}),
        Step("revert", f'Revert "{SUBJECT_30835}" (#30871)', comment),
        Step(
            "broken",
            "Start reworking the chunked prefill pass (#30902)",
            replace(comment, broken=True),
        ),
        Step(
            "fixed",
            "Finish reworking the chunked prefill pass (#30903)",
            replace(comment, chunk=12288),
        ),
        Step(
            "helper",
            "Check split prefill backends for Intel XPU pages too (#30950)",
            None,
            {BASE: package_files(both_phases=True)[BASE]},
        ),
        Step(
            "serverargs",
            "Declare server arguments and the resolution order (#31010)",
            None,
            resolution_files(),
        ),
        Step(
            "default",
            "Default the chunked prefill size to 4096 (#31020)",
            None,
            {SERVER_ARGS: resolution_files(chunk_default="4096")[SERVER_ARGS]},
        ),
        Step(
            "order",
            "Run the default page size before the attention handler (#31030)",
            None,
            {PIPELINE: resolution_files(page_first=True)[PIPELINE]},
        ),
    ]


SERVER_ARGS = "python/sglang/srt/server_args.py"
PIPELINE = f"{PACKAGE}/pipeline.py"
ATTENTION_HOOK = f"{PACKAGE}/attention_hook.py"

SERVER_ARGS_SOURCE = '''\
# Copyright 2026 the harness fixture authors. Written for harness's tests.
"""Server arguments: one dataclass, its defaults declared field by field."""

from __future__ import annotations

import dataclasses
from typing import Optional


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    attention_backend: Optional[str] = None
    decode_attention_backend: Optional[str] = None
    prefill_attention_backend: Optional[str] = None
    page_size: Optional[int] = None
    kv_cache_dtype: str = "auto"
    chunked_prefill_size: Optional[int] = {chunk_default}
    max_running_requests: Optional[int] = None
    speculative_eagle_topk: Optional[int] = None

    def __post_init__(self):
        from sglang.srt.arg_groups.pipeline import run_resolution_pipeline

        run_resolution_pipeline(self)
'''

PIPELINE_SOURCE = '''\
"""Resolution, in dependency order: each step runs its passes through `_run`."""

from sglang.srt.arg_groups.attention_hook import handle_attention_backend
from sglang.srt.arg_groups.overrides import _chunked_prefill_default, _page_size_default


def _run(server_args, fn):
    for name, value in fn(server_args).items():
        setattr(server_args, name, value)


def run_resolution_pipeline(server_args):
    _run(server_args, _chunked_prefill_default)
{page_early}    handle_attention_backend(server_args, _run)
{page_late}'''

PAGE_DEFAULT_CALL = "    _run(server_args, _page_size_default)\n"

ATTENTION_HOOK_SOURCE = '''\
"""The attention-backend handler: its passes, in order."""

from sglang.srt.arg_groups.overrides import (
    _attention_backend_default,
    _fa4_page_constraint,
    _intel_xpu_page_constraint,
    _mla_backend_page_constraints,
)


def handle_attention_backend(server_args, run):
    run(server_args, _attention_backend_default)
    run(server_args, _mla_backend_page_constraints)
    run(server_args, _fa4_page_constraint)
    run(server_args, _intel_xpu_page_constraint)
'''


def resolution_files(chunk_default: str = "None", page_first: bool = False) -> dict[str, str]:
    """`server_args.py`, `pipeline.py` and the attention handler; `chunk_default`: the
    declared chunked prefill default; `page_first`: the page default runs before the
    attention handler (#31030's move)."""
    pipeline = PIPELINE_SOURCE.format(
        page_early=PAGE_DEFAULT_CALL if page_first else "",
        page_late="" if page_first else PAGE_DEFAULT_CALL,
    )
    return {
        SERVER_ARGS: SERVER_ARGS_SOURCE.format(chunk_default=chunk_default),
        PIPELINE: pipeline,
        ATTENTION_HOOK: ATTENTION_HOOK_SOURCE,
    }


README = "# sglang (fixture)\n"
DOCS = "# Page size\n\nThe FA4 pass forces 128-token pages on SM100 GPUs.\n"


def build_history(root: Path, padding: int = 0) -> dict[str, str]:
    """Create the fixture repository at `root`; returns {step key: sha}."""
    repo = FixtureRepo(root)
    shas = {}
    for step in history_steps(padding):
        files = dict(step.other or {})
        if step.overrides is not None:
            files[OVERRIDES] = overrides_source(step.overrides)
        shas[step.key] = repo.commit(step.subject, files)
    return shas
