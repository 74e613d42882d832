"""The SGLang world: what `overrides.py` imports, answered from the cell.

Every spelling SGLang used for the same check answers alike, so a pure
refactor shows as no change: `is_sm100_supported()` and
`get_platform().is_sm100`; `view.use_mla_backend()` and
`use_mla_backend(view)`. Inputs it reads by name (an axis of that name, else
a field, else the default shown): `platform`, `use_mla`,
`prefill_cuda_graph`, `decode_cuda_graph`, `architecture`
(LlamaForCausalLM), and one per `envs.NAME` read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.engine.world import Call, ListOf, Native, Obj, Param, Spec, Test, World
from harness.errors import HarnessError
from harness.matrix.model import Matrix, format_value


class Backend:
    """SGLang's CUDA-graph backend names (plain string constants)."""

    FULL = "full"
    BREAKABLE = "breakable"
    TC_PIECEWISE = "tc_piecewise"
    DISABLED = "disabled"


class NullLogger:
    """Accepts the logging calls passes make, and drops them."""

    def _drop(self, *args: Any, **kwargs: Any) -> None:
        return None

    debug = info = warning = warn = error = exception = critical = log = _drop

    def isEnabledFor(self, level: int) -> bool:
        return False


def register_post_process(fn: Any = None, **options: Any) -> Any:
    """Identity: the harness calls the target itself, so registration is moot."""
    if callable(fn):
        return fn
    return lambda f: f


def gpu_major(platform: Any) -> int | None:
    """9 for sm90, 10 for sm100 and sm103, 12 for sm120; None for non-CUDA platforms."""
    if isinstance(platform, str) and platform.startswith("sm") and platform[2:].isdigit():
        return int(platform[2:]) // 10
    return None


NON_CUDA = ("hip", "musa", "npu", "xpu", "cpu")

FLAGS: dict[str, Callable[[Any], bool]] = {
    "is_cuda": lambda p: gpu_major(p) is not None,
    "is_cuda_alike": lambda p: gpu_major(p) is not None or p == "hip",
    "is_sm90": lambda p: gpu_major(p) == 9,
    "is_hopper": lambda p: gpu_major(p) == 9,
    "is_sm100": lambda p: gpu_major(p) == 10,
    "is_sm120": lambda p: gpu_major(p) == 12,
    "is_blackwell": lambda p: gpu_major(p) in (10, 12),
    **{f"is_{name}": (lambda p, name=name: p == name) for name in NON_CUDA},
}

# Older helper functions and the platform attribute each one means.
HELPERS = {
    "is_sm90_supported": "is_sm90",
    "is_sm100_supported": "is_sm100",
    "is_sm120_supported": "is_sm120",
    "is_blackwell": "is_blackwell",
    "is_blackwell_supported": "is_blackwell",
    "is_cuda": "is_cuda",
    "is_cuda_alike": "is_cuda_alike",
    "is_hip": "is_hip",
    "is_musa": "is_musa",
    "is_npu": "is_npu",
    "is_xpu": "is_xpu",
    "is_cpu": "is_cpu",
}


def _platform_flag(flag: str, reader: str) -> Spec:
    return Test(Param("platform", reader=reader), FLAGS[flag])


def _platform_object() -> Spec:
    attrs = {flag: _platform_flag(flag, f"get_platform().{flag}") for flag in FLAGS}
    return Obj("get_platform()", attrs)


def _cuda_graph_config() -> Spec:
    def phase(name: str) -> Spec:
        label = f"view.cuda_graph_config.{name}"
        return Obj(label, {"backend": Param(f"{name}_cuda_graph", reader=f"{label}.backend")})

    return Obj("view.cuda_graph_config", {"prefill": phase("prefill"), "decode": phase("decode")})


def _model_config() -> Spec:
    arch = Param("architecture", default="LlamaForCausalLM", required=False)
    hf_config = Obj("model_config_of(view).hf_config", {"architectures": ListOf(arch)})
    return Obj("model_config_of(view)", {"hf_config": hf_config})


def _env_var(name: str) -> Spec:
    value = Param(name, reader=f"envs.{name}")
    return Obj(f"envs.{name}", {"get": Call(value, label=f"envs.{name}.get()"), "value": value})


def _names() -> dict[str, Spec]:
    names: dict[str, Spec] = {
        "Backend": Native(Backend),
        "logger": Native(NullLogger()),
        "register_post_process": Native(register_post_process),
        "get_platform": Call(_platform_object(), label="get_platform()"),
        "use_mla_backend": Call(Param("use_mla", reader="use_mla_backend(view)")),
        "model_config_of": Call(_model_config(), label="model_config_of()"),
        "envs": Obj("envs", fallback=_env_var),
    }
    for helper, flag in HELPERS.items():
        names[helper] = Call(_platform_flag(flag, f"{helper}()"), label=f"{helper}()")
    return names


def check_platforms(matrix: Matrix) -> None:
    """Refuse platform values no flag would recognize: they would read as all-False."""
    i = matrix.axis_index("platform")
    values = matrix.axes[i].values if i is not None else ()
    for value in values:
        if gpu_major(value) is None and value not in NON_CUDA:
            raise HarnessError(
                f"{matrix.source}: axes.platform: the sglang world does not know platform "
                f"{format_value(value)!r} (use smNN such as sm90 or sm100, or one of "
                f"{', '.join(NON_CUDA)})"
            )


WORLD = World(
    name="sglang",
    names=_names(),
    view_attrs={
        "use_mla_backend": Call(Param("use_mla", reader="view.use_mla_backend()")),
        "cuda_graph_config": _cuda_graph_config(),
    },
    consumed=frozenset(
        {"platform", "use_mla", "prefill_cuda_graph", "decode_cuda_graph", "architecture"}
    ),
    validate=check_platforms,
)
