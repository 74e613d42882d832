"""The SGLang world: the probes of the machine SGLang's resolution code reads,
answered from the cell.

Plain code (helpers, constants, choice lists) runs as SGLang wrote it, from
the repository; what this world answers is what only the machine, the
installed packages or the checkpoint could: the platform and device
(`get_platform().is_sm100`, `is_gfx95_supported()`,
`torch.cuda.get_device_capability()`), environment variables (`envs.X`),
and the model's configuration (`model_config_of(view).hf_config.X`).

Every spelling SGLang used for the same check answers alike, so a pure
refactor shows as no change: `is_sm100_supported()` and
`get_platform().is_sm100`; `view.use_mla_backend()` and
`use_mla_backend(view)`. Inputs it reads by name (an axis of that name, else
a field, else the default shown): `platform`, `use_mla`,
`prefill_cuda_graph`, `decode_cuda_graph`, `architecture`
(LlamaForCausalLM), one per `envs.NAME` read, and, for facts the platform
does not imply, a field named `platform.X`, `model_config.X` or
`hf_config.X` (see PROBE_DEFAULTS for the documented defaults).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from harness.closure.facts import WorldFacts
from harness.engine.world import (
    Call,
    Constants,
    Context,
    ListOf,
    Map,
    Obj,
    Param,
    Resolver,
    Shared,
    Spec,
    Test,
    World,
    no_parameters,
    world_function,
)
from harness.engine.worlds import caching, checkpoint, copying, dataclass, enums, environ, json_text
from harness.engine.worlds.common import logger, registering
from harness.engine.worlds.plumbing import (
    MACHINERY,
    MATERIALIZED,
    RAW,
    UNSET,
    from_class,
    project,
)
from harness.engine.worlds.records import HELPERS as RECORD_HELPERS
from harness.errors import HarnessError
from harness.matrix.model import Matrix, format_value


class Backend:
    """SGLang's CUDA-graph backend names (plain string constants)."""

    FULL = "full"
    BREAKABLE = "breakable"
    TC_PIECEWISE = "tc_piecewise"
    DISABLED = "disabled"


CUDA_GRAPH_MODULE = "sglang.srt.model_executor.cuda_graph_config"  # where Backend lives


def gpu_major(platform: Any) -> int | None:
    """9 for sm90, 10 for sm100 and sm103, 12 for sm120; None for non-CUDA platforms."""
    if isinstance(platform, str) and platform.startswith("sm") and platform[2:].isdigit():
        return int(platform[2:]) // 10
    return None


NON_CUDA = ("hip", "musa", "npu", "xpu", "cpu", "mps")

FLAGS: dict[str, Callable[[Any], bool]] = {
    "is_cuda": lambda p: gpu_major(p) is not None,
    "is_cuda_alike": lambda p: gpu_major(p) is not None or p == "hip",
    "is_sm90": lambda p: gpu_major(p) == 9,
    "is_hopper": lambda p: gpu_major(p) == 9,
    # SGLang's CUDA wheels need CUDA >= 12.3 on Hopper, and ship flashinfer.
    "is_hopper_with_cuda_12_3": lambda p: gpu_major(p) == 9,
    "has_flashinfer": lambda p: gpu_major(p) is not None,
    "is_sm100": lambda p: gpu_major(p) == 10,
    "is_sm110": lambda p: gpu_major(p) == 11,
    # datacenter Blackwell and SM110, not SM120 (0.5.23: what flash_attn.cute's MLA takes)
    "is_sm100_or_sm110": lambda p: gpu_major(p) in (10, 11),
    "is_sm120": lambda p: gpu_major(p) == 12,
    "is_blackwell": lambda p: gpu_major(p) in (10, 11, 12),
    **{f"is_{name}": (lambda p, name=name: p == name) for name in NON_CUDA},
}

# Facts the platform does not imply, answered by a field of that name, else this
# default (a documented assumption; set the field to change it).
PROBE_DEFAULTS: dict[str, Any] = {
    "platform.has_amx": False,  # an Intel CPU with AMX (cpu_has_amx_support())
    "platform.has_xmx": True,  # an Intel GPU with XMX units (xpu_has_xmx_support())
    "platform.is_gfx95": False,  # an AMD MI35x (is_gfx95_supported())
    "platform.is_mnnvl_fabric": False,  # a multi-node NVLink fabric (is_mnnvl_fabric_device())
    "platform.has_fi_a2a": False,  # flashinfer all-to-all usable (is_fi_a2a_supported())
    "platform.has_triton_kernels": True,  # is_triton_kernels_available()
    "platform.uses_mlx": False,  # Apple MLX tensors (use_mlx())
    "platform.is_out_of_tree": False,  # a platform plugin (current_platform.is_out_of_tree())
    "model_config.has_asymmetric_kv": False,
    "model_config.has_attention_sinks": False,
    "model_config.is_hybrid_swa": False,
    "hf_config.quantization_config": None,
    "hf_config.dual_chunk_attention_config": None,
    "model_config.quantization": None,
}
# Facts of a text-only decoder model: no vision or audio tower, no encoder, no embedding
# or reward head, no nested language config (what SGLang's resolution asks a model);
# the default for an architecture of TEXT_DECODERS only (another's is the matrix's to give)
TEXT_MODEL_DEFAULTS: dict[str, Any] = {
    "model_config.is_multimodal": False,
    "model_config.is_multimodal_piecewise_cuda_graph_supported": False,
    "model_config.is_encoder_decoder": False,
    "model_config.is_embedding_gemma": False,
    "model_config.embedding_model_spec": None,
    "model_config.pointer_head": None,
    "model_config.joint_head_config": None,
    "model_config.decision_config": None,
    "hf_config.text_config": None,
    "hf_config.llm_config": None,
    "hf_config.language_config": None,
}
TEXT_DECODERS = frozenset(
    {
        "LlamaForCausalLM",
        "MistralForCausalLM",
        "MixtralForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen2MoeForCausalLM",
        "Qwen3ForCausalLM",
        "Qwen3MoeForCausalLM",
        "DeepseekV2ForCausalLM",
        "DeepseekV3ForCausalLM",
    }
)

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
    "is_mps": "is_mps",
    "is_flashinfer_available": "has_flashinfer",
    "is_hopper_with_cuda_12_3": "is_hopper_with_cuda_12_3",
    "is_sm110_supported": "is_sm110",
    "is_sm100_or_sm110_supported": "is_sm100_or_sm110",
}

# Helpers SGLang defines with no parameter (`def is_hip() -> bool`, 0.5.16-0.5.23): a call
# with an argument is a TypeError there, and here.
TAKES_NOTHING = frozenset(
    [
        "is_cuda",
        "is_cuda_alike",
        "is_hip",
        "is_musa",
        "is_npu",
        "is_xpu",
        "is_cpu",
        "is_mps",
        "is_flashinfer_available",
        "get_platform",
        "get_device_sm",
        "cpu_has_amx_support",
        "xpu_has_xmx_support",
        "is_gfx95_supported",
        "is_mnnvl_fabric_device",
        "is_triton_kernels_available",
        "use_mlx",
    ]
)
# Helpers SGLang makes as `lru_cache(partial(_check_cuda_device_version, majors..., cuda...))`
# (0.5.16-0.5.23): an argument is a TypeError there, or a keyword that replaces what the
# partial fixes (`is_sm100_supported(device_capability_majors=[9])` checks SM90): the world
# answers them called without arguments only, and refuses the rest.
PARTIAL_CHECKS = frozenset(
    [
        "is_sm90_supported",
        "is_sm100_supported",
        "is_sm110_supported",
        "is_sm100_or_sm110_supported",
        "is_sm120_supported",
        "is_blackwell",
        "is_blackwell_supported",
        "is_hopper_with_cuda_12_3",
    ]
)

# Device probes answered by a field (default in PROBE_DEFAULTS).
PROBES = {
    "cpu_has_amx_support": "platform.has_amx",
    "xpu_has_xmx_support": "platform.has_xmx",
    "is_gfx95_supported": "platform.is_gfx95",
    "is_mnnvl_fabric_device": "platform.is_mnnvl_fabric",
    "is_fi_a2a_supported": "platform.has_fi_a2a",
    "is_triton_kernels_available": "platform.has_triton_kernels",
    "use_mlx": "platform.uses_mlx",
}

# Views of the configuration being resolved: here, the view itself.
VIEW_FUNCTIONS = ("resolving_view", "resolved_view", "record_of")


def get_device_capability(device_id: int = 0) -> None:
    """SGLang's `get_device_capability(device_id=0)` (0.5.16-0.5.23), as a call binds its
    arguments: any other is Python's own TypeError, as there (every device of a cell's
    machine is the platform's, so the answer is the same for each)."""


def get_device_name(device_id: int = 0) -> None:
    """SGLang's `get_device_name(device_id=0)` (utils/common.py, 0.5.10 on), as a call binds
    its arguments (the name torch gives the cell's GPU, the same for each device)."""


def _takes_nothing(name: str) -> Callable[[], None] | None:
    """The parameters of SGLang's helper `name` when it has none (see TAKES_NOTHING)."""
    return no_parameters(name) if name in TAKES_NOTHING else None


def capability(platform: Any) -> tuple[int | None, int | None]:
    """`torch.cuda.get_device_capability()`: (10, 0) for sm100, (10, 3) for sm103."""
    major = gpu_major(platform)
    if major is None:
        return (None, None)
    return (major, int(platform[2:]) % 10)


def field_param(name: str, reader: str) -> Spec:
    """A fact answered by the field `name`, else its documented default."""
    if name in PROBE_DEFAULTS:
        return Param(name, default=PROBE_DEFAULTS[name], required=False, reader=reader)
    if name in TEXT_MODEL_DEFAULTS:
        return TextModelFact(name, reader)
    return Param(name, reader=reader)


@dataclasses.dataclass(frozen=True)
class TextModelFact(Spec):
    """A fact of the model: the input `name`, else, where the cell's architecture is a
    text-only decoder's (TEXT_DECODERS), its default (TEXT_MODEL_DEFAULTS), else refused,
    naming the field: a multimodal or encoder model's facts are the matrix's to give."""

    name: str
    reader: str

    def compile(self, ctx: Context) -> Resolver:
        if self.name in ctx.matrix.fields or ctx.matrix.axis_index(self.name) is not None:
            return Param(self.name, reader=self.reader).compile(ctx)
        arch = Param("architecture", default="LlamaForCausalLM", required=False).compile(ctx)
        name, reader, default = self.name, self.reader, TEXT_MODEL_DEFAULTS[self.name]
        fix = (f"{name} has a default for a text-only decoder model only "
               f"({', '.join(sorted(TEXT_DECODERS))}): add {name} under `fields:` (one "
               f"value) or `axes:` in {ctx.matrix.edit_hint}")  # fmt: skip

        def answer(probe: Any) -> Any:
            if arch(probe) not in TEXT_DECODERS:
                raise probe.refuse(reader, fix, name)
            return default

        return answer


def _platform_flag(flag: str, reader: str) -> Spec:
    return Test(Param("platform", reader=reader), FLAGS[flag])


def _platform_object() -> Spec:
    attrs = {flag: _platform_flag(flag, f"get_platform().{flag}") for flag in FLAGS}
    # SGLang's platform facts read `device_sm` through get_device_sm(), as below
    attrs["device_sm"] = Map(Param("platform", reader="get_platform().device_sm"), _device_sm)
    return Obj(
        "get_platform()",
        attrs,
        fallback=lambda name: field_param(f"platform.{name}", f"get_platform().{name}"),
    )


def _current_platform() -> Spec:
    out_of_tree = field_param("platform.is_out_of_tree", "current_platform.is_out_of_tree()")
    backend = field_param(
        "platform.default_attention_backend", "current_platform.get_default_attention_backend()"
    )
    return Obj(
        "current_platform",
        {
            "is_out_of_tree": Call(out_of_tree),
            "get_default_attention_backend": Call(backend),
            "apply_server_args_defaults": PluginDefaults(),
            "device_name": Map(
                Param("platform", reader="current_platform.device_name"), device_name
            ),
        },
    )


def device_name(platform: Any) -> str:
    """`current_platform.device_name`: the short name SGLang's in-tree platform classes
    give (`cuda` on every CUDA GPU, `rocm` on an AMD GPU, else the platform's own)."""
    if gpu_major(platform) is not None:
        return "cuda"
    return "rocm" if platform == "hip" else str(platform)


PLUGIN_FIX = (
    "an out-of-tree platform's defaults are its plugin's code, which the world does not "
    "hold: set platform.is_out_of_tree to false, or bind current_platform under `bindings:`"
)


@dataclasses.dataclass(frozen=True)
class PluginDefaults(Spec):
    """`current_platform.apply_server_args_defaults(server_args)`: SGLang's in-tree
    platforms keep its base class's, which does nothing; an out-of-tree platform's plugin
    may set anything, so there the call is refused."""

    def compile(self, ctx: Context) -> Resolver:
        out_of_tree = field_param("platform.is_out_of_tree", "current_platform").compile(ctx)
        probe, label = ctx.probe, "current_platform.apply_server_args_defaults"

        def answer(server_args: Any) -> None:
            if out_of_tree(probe):
                raise probe.refuse(f"{label}() on an out-of-tree platform", PLUGIN_FIX)

        function = world_function(label, answer, probe)
        return lambda probe: function


def _torch() -> Spec:
    platform = Param("platform", reader="torch.cuda.get_device_capability()")
    cuda = Obj("torch.cuda", {"get_device_capability": Call(Map(platform, capability))})
    version = Obj("torch.version", {"cuda": CudaVersion()})
    return Obj("torch", {"cuda": cuda, "version": version})


@dataclasses.dataclass(frozen=True)
class CudaVersion(Spec):
    """`torch.version.cuda`: the CUDA toolkit torch was built with, the field
    `platform.cuda_version` (`"12.9"`) on a CUDA GPU (strict: which toolkit is
    installed is nothing the platform tells); None elsewhere, as torch's own."""

    def compile(self, ctx: Context) -> Resolver:
        platform = Param("platform", reader="torch.version.cuda").compile(ctx)
        version = Param("platform.cuda_version", reader="torch.version.cuda").compile(ctx)
        fix = f'quote platform.cuda_version ("12.9") in {ctx.matrix.edit_hint}: a string'

        def answer(probe: Any) -> str | None:
            if gpu_major(platform(probe)) is None:
                return None
            found = version(probe)
            if type(found) is not str:
                field = "platform.cuda_version"
                raise probe.refuse(f"torch.version.cuda of {found!r}", fix, field)
            return found

        return answer


def _cuda_graph_config() -> Spec:
    def phase(name: str) -> Spec:
        label = f"view.cuda_graph_config.{name}"
        return Obj(label, {"backend": Param(f"{name}_cuda_graph", reader=f"{label}.backend")})

    return Obj("view.cuda_graph_config", {"prefill": phase("prefill"), "decode": phase("decode")})


def _model_config() -> Spec:
    arch = Param("architecture", default="LlamaForCausalLM", required=False)
    hf_config = Obj(
        "model_config_of(view).hf_config",
        {"architectures": ListOf(arch), "get_text_config": Call(Shared("hf_config"))},
        fallback=lambda name: field_param(f"hf_config.{name}", f"model_config.hf_config.{name}"),
    )
    heads = field_param("model_config.num_kv_heads", "model_config.get_num_kv_heads()")
    attrs = {
        "hf_config": Shared("hf_config", hf_config),
        # a text model's text config is its config (transformers' get_text_config())
        "hf_text_config": Shared("hf_config", hf_config),
        "attention_arch": Map(Param("use_mla", reader="model_config.attention_arch"), _arch),
        "get_num_kv_heads": Call(heads),
    }
    fallback = lambda name: field_param(f"model_config.{name}", f"model_config.{name}")  # noqa: E731
    return Obj("model_config_of(view)", attrs, fallback=fallback)


def _arch(use_mla: Any) -> str:
    return AttentionArch.MLA if use_mla else AttentionArch.MHA


class AttentionArch:
    """SGLang's attention architectures, as `model_config.attention_arch` names them."""

    MLA = "MLA"
    MHA = "MHA"


def _env_var(name: str) -> Spec:
    label = f"envs.{name}"
    value = environ.Unwritten(name, Param(name, reader=label), label)
    is_set = Test(Param(name, reader=f"{label}.is_set()"), lambda v: v is not None)
    return Obj(
        label,
        {
            "get": Call(value, label=f"{label}.get()"),
            "value": value,
            "is_set": Call(environ.Unwritten(name, is_set, f"{label}.is_set()", when_set=True)),
            "set": environ.Setter(name),
        },
    )


def _names() -> dict[str, Spec]:
    names: dict[str, Spec] = {
        "Backend": Constants(Backend, CUDA_GRAPH_MODULE),
        "AttentionArch": Constants(AttentionArch, "sglang.srt.configs.model_config"),
        "logger": logger(),
        "register_post_process": registering("register_post_process"),
        "get_platform": Call(
            _platform_object(), label="get_platform()", parameters=no_parameters("get_platform")
        ),
        "current_platform": _current_platform(),
        "torch": _torch(),
        "use_mla_backend": Call(Param("use_mla", reader="use_mla_backend(view)")),
        "model_config_of": Call(_model_config(), label="model_config_of()"),
        # before model_config_of (0.5.4): `ModelConfig.from_server_args(self)`, the same facts
        "ModelConfig": Obj(
            "ModelConfig",
            {"from_server_args": Call(_model_config(), label="ModelConfig.from_server_args()")},
        ),
        "envs": Obj("envs", fallback=_env_var),
        "get_device_capability": Call(
            Map(Param("platform"), capability), parameters=get_device_capability
        ),
        "get_device_name": Call(
            field_param("platform.gpu_name", "get_device_name()"),
            label="get_device_name()",
            parameters=get_device_name,
        ),
        "get_device_sm": Call(
            Map(Param("platform"), _device_sm), parameters=no_parameters("get_device_sm")
        ),
    }
    names.update(MACHINERY)  # the views too (VIEW_FUNCTIONS)
    names.update(dataclass.names())
    names.update(enums.names())
    names.update(caching.names())
    names.update(copying.names())
    names.update(json_text.names())
    names.update(json_text.orjson_names())
    names.update(environ.names(path=checkpoint.path()))
    names.update(environ.helpers())
    names.update(checkpoint.names())
    names.update(checkpoint.hub())
    for helper, flag in HELPERS.items():
        names[helper] = Call(_platform_flag(flag, f"{helper}()"), label=f"{helper}()",
                             parameters=_takes_nothing(helper),
                             refuses_arguments=helper in PARTIAL_CHECKS)  # fmt: skip
    for probe, field_name in PROBES.items():
        names[probe] = Call(field_param(field_name, f"{probe}()"), label=f"{probe}()",
                            parameters=_takes_nothing(probe))  # fmt: skip
    return names


def device_of(platform: Any) -> str:
    """`view.device` when the matrix does not set it: the platform's torch device, as
    SGLang picks it by default (ROCm GPUs are `cuda` devices to torch)."""
    if gpu_major(platform) is not None or platform == "hip":
        return "cuda"
    return str(platform)


def _device_sm(platform: Any) -> int:
    major, minor = capability(platform)
    return 0 if major is None else major * 10 + minor


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


# SGLang's own definitions the world answers in their place, by the base name of the
# file that holds them in the released trees (0.5.16, 0.5.18-0.5.23), or its path from
# a source root ...
BASE = "model_override_base.py"
HOMES = (
    ("resolved_view", ("overrides.py", BASE)),  # overrides.py up to 0.5.18
    ("resolving_view", (BASE,)),
    ("record_of", (BASE,)),
    ("use_mla_backend", (BASE,)),
    ("model_config_of", (BASE,)),
    ("run_post_process_pass", ("overrides.py",)),  # the machinery an entry runs through
    ("declare_resolution", ("overrides.py",)),
    ("record_foreign_defaults", ("sglang/srt/arg_groups/overrides.py",)),
    ("validate_declarations", ("overrides.py",)),
    ("run_hook", ("resolution_hooks.py",)),
    # a record's fields (0.5.19 on), where SGLang defines them (not any `arg_utils.py`)
    *((name, ("sglang/srt/arg_groups/arg_utils.py",)) for name in RECORD_HELPERS),
)
# ... and the files the code imports them from (`from sglang.srt.utils import is_hip`):
# an import of the name from one of them reads the definition the world stands for; from
# another file of the repository that defines the name itself, it is a substitution
# (SGLang would run that file's definition). A name not listed has the platform
# helpers' homes (UTILS).
UTILS = ("sglang/srt/utils/common.py", "sglang/srt/utils/__init__.py", "sglang/srt/utils.py")
IMPORTED_HOMES = (
    ("get_platform", ("sglang/srt/runtime_context.py",)),
    ("current_platform", ("sglang/srt/platforms/__init__.py", "sglang/srt/platforms.py")),
    ("envs", ("sglang/srt/environ.py",)),
    ("Backend", ("sglang/srt/model_executor/cuda_graph_config.py",)),
    ("AttentionArch", ("sglang/srt/configs/model_config.py",)),
    ("ModelConfig", ("sglang/srt/configs/model_config.py",)),
    ("use_mlx", ("sglang/srt/hardware_backend/mlx/runtime.py",
                 "sglang/srt/utils/tensor_bridge.py")),
)  # fmt: skip

FACTS = WorldFacts(
    display="SGLang",
    view_class=("sglang.srt.server_args", "ServerArgs"),
    view_type="ResolvedView",  # what SGLang hands a pass (model_override_base.py)
    view_functions=frozenset(VIEW_FUNCTIONS),
    step_runners=frozenset({"run_hook"}),  # run_hook(handle_x, server_args): handle_x(server_args)
    resolution_code=(
        "sglang/srt/arg_groups/",
        "sglang/srt/server_args.py",
        # stdlib-only config code: 0.5.18's __post_init__ builds its CudaGraphConfig
        "sglang/srt/model_executor/cuda_graph_config.py",
        # the speculative handler's dispatch: SpeculativeAlgorithm.from_string(...) and
        # its handle_server_args, the plugin registry it looks names up in, and the
        # ragged-verify mode read at that dispatch
        "sglang/srt/speculative/spec_info.py",
        "sglang/srt/speculative/spec_registry.py",
        "sglang/srt/speculative/ragged_verify.py",
    ),
    view_namespaces="_INPUT_NAMESPACES",  # ServerArgs's fields from 0.5.20 on
    input_defaults=("sglang.srt.environ", "Envs"),  # envs.X: `X = EnvBool(False)` there
    run_entries=(
        ("sglang.srt.arg_groups.pipeline", "run_resolution_pipeline"),  # 0.5.19 on
        ("sglang.srt.server_args", "ServerArgs.__post_init__"),  # before
    ),
    homes=HOMES,
    imported_homes=IMPORTED_HOMES,
    default_homes=UTILS,
    declarable=("Arg", "resolvable", frozenset({"NS"})),  # `A[int, Arg(..., resolvable=True)]`
    fallback="fallback",  # `A[Optional[float], Arg(..., fallback=0.8)]` (0.5.20 on)
)

WORLD = World(
    name="sglang",
    names=_names(),
    view_attrs={
        "use_mla_backend": Call(Param("use_mla", reader="view.use_mla_backend()")),
        "cuda_graph_config": _cuda_graph_config(),
        "device": Map(Param("platform", reader="view.device"), device_of),
        "get_model_config": Call(_model_config(), label="view.get_model_config()"),
    },
    consumed=frozenset(
        {"platform", "use_mla", "prefill_cuda_graph", "decode_cuda_graph", "architecture"}
    ),
    # ServerArgs's cuda_graph_config is None until an entry parses it
    resolved={"cuda_graph_config": ("prefill_cuda_graph", "decode_cuda_graph")},
    # ServerArgs's own, up to 0.5.18: an entry runs them (get_model_config keeps the model
    # configuration ModelConfig.from_server_args makes in self.model_config)
    methods=frozenset({"get_model_config", "use_mla_backend"}),
    from_class=from_class,
    # the declaration stash, before the entry makes it, and the model configuration
    # ServerArgs.get_model_config() keeps (up to 0.5.18), before it runs
    unset=UNSET | {"model_config"},
    project=project,  # the entry's outcome: its declarations over its fields
    frozen_by=MATERIALIZED,  # ServerArgs.__setattr__ refuses fields after this (0.5.18)
    snapshot=RAW,  # the fields as handed, which the entry copies first (0.5.19 on)
    validate=check_platforms,
    facts=FACTS,
    suggested={  # `matrix --infer`: the axes these become when the code reads them
        "platform": ("sm90", "sm100", "sm120", "hip"),
        "use_mla": (False, True),
        "prefill_cuda_graph": ("full", "breakable", "disabled"),
        "decode_cuda_graph": ("full", "breakable", "disabled"),
        "architecture": ("LlamaForCausalLM", "DeepseekV3ForCausalLM"),
    },
    classes={  # `--matrix inferred`: one value per answer the platform probes can give
        "platform": ("sm90", "sm100", "sm110", "sm120", *NON_CUDA),
    },
)
