"""An entry that reads a registry its project's files fill as they load: SGLang's
model overrides. `overrides.py` imports the `model_overrides` package for its effects,
each family module there registers a provider with `@_register_for(...)` (or a
predicate, or a constant entry), and the resolution declares what the providers for
the model's architecture return.

A small SGLang-shaped history is built in tmp_path, each commit changing the registry
in one way: a family added by a new import line, a provider's body edited, a constant
written through the base module from another file, two families declaring the same
field for one architecture (the import order decides). The expected outcome of every
cell comes from importing that commit's files in plain Python, with SGLang's runtime
and model configuration answered per cell, never from harness.
"""

from __future__ import annotations

import itertools
import json
import types
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.test_entry import (
    DECLARE,
    HOOKS,
    LIVE_VIEW,
    PKG,
    cells,
    changed,
    check_diff,
    check_history,
    entry_matrix,
    plain_outcomes,
)
from tests.test_entry import harness_outcomes as entry_outcomes

SERVER_ARGS = '''\
"""Server arguments, one dataclass."""

import dataclasses
from typing import Optional


@dataclasses.dataclass
class ServerArgs:
    model_path: str = "some/model"
    attention_backend: Optional[str] = None
    page_size: Optional[int] = None
'''

BASE = (
    '''\
"""Registries the model-family modules fill as they load, and the views they read."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

CONSTANT_OVERRIDES: Dict[str, Dict[str, Any]] = {
    "PinnedForCausalLM": {"page_size": 32},
}
_PROVIDERS: Dict[str, List[Callable[..., dict]]] = {}
_PREDICATE_PROVIDERS: List[Tuple[Callable[[str], bool], Callable[..., dict]]] = []


def register_model_override(architecture: str):
    """Register `fn` for one architecture."""

    def decorator(fn: Callable[..., dict]) -> Callable[..., dict]:
        _PROVIDERS.setdefault(architecture, []).append(fn)
        return fn

    return decorator


def register_model_override_predicate(predicate: Callable[[str], bool]):
    def decorator(fn: Callable[..., dict]) -> Callable[..., dict]:
        _PREDICATE_PROVIDERS.append((predicate, fn))
        return fn

    return decorator


def _register_for(*architectures: str):
    """One provider for a family of architectures."""

    def decorator(fn: Callable[..., dict]) -> Callable[..., dict]:
        for architecture in architectures:
            register_model_override(architecture)(fn)
        return fn

    return decorator


def model_config_of(server_args: Any) -> Any:
    from sglang.srt.configs.model_config import ModelConfig

    return ModelConfig.from_server_args(server_args)


'''
    + LIVE_VIEW
)

OVERRIDES = (
    '''\
"""Declarations, and the dispatch of the model overrides."""

from typing import Any, Dict, List, Tuple

from sglang.srt.arg_groups import model_override_base
from sglang.srt.arg_groups.model_override_base import (  # noqa: F401
    _register_for,
    resolving_view,
)


'''
    + DECLARE
    + '''

def collect_model_override_declarations(
    architecture: str, server_args: Any, hf_config: Any
) -> List[Tuple[str, Dict[str, Any]]]:
    """The constant entry first, then the providers in registration order."""
    found: List[Tuple[str, Dict[str, Any]]] = []
    constant = model_override_base.CONSTANT_OVERRIDES.get(architecture)
    if constant:
        found.append((f"CONSTANT_OVERRIDES[{architecture!r}]", dict(constant)))
    for fn in model_override_base._PROVIDERS.get(architecture, ()):
        declared = fn(server_args, hf_config)
        if declared:
            found.append((fn.__qualname__, dict(declared)))
    for predicate, fn in model_override_base._PREDICATE_PROVIDERS:
        if predicate(architecture):
            declared = fn(server_args, hf_config)
            if declared:
                found.append((fn.__qualname__, dict(declared)))
    return found


# Importing the package is what registers the families.
import sglang.srt.arg_groups.model_overrides  # noqa: E402, F401
'''
)

FAMILY = '''\
"""Config-time overrides for the {name} family."""

from typing import Any

from sglang.srt.arg_groups.model_override_base import {imports}
from sglang.srt.runtime_context import get_platform


{body}'''

DEEPSEEK = """\
@_register_for("DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM")
def _deepseek_overrides(server_args: Any, hf_config: Any) -> dict:
    cfg = resolving_view(server_args)
    if cfg.attention_backend is not None or not {platform}:
        return {{}}
    return {{"attention_backend": "flashmla", "page_size": 64}}
"""

QWEN = """\
@register_model_override_predicate(lambda architecture: architecture.startswith("Qwen"))
def _qwen_overrides(server_args: Any, hf_config: Any) -> dict:
    if resolving_view(server_args).page_size is None:
        return {"page_size": 16}
    return {}
"""

GEMMA = """\
@_register_for("GemmaForCausalLM")
def _gemma_overrides(server_args: Any, hf_config: Any) -> dict:
    if get_platform().is_sm100:
        return {"attention_backend": "triton"}
    return {}
"""

MISTRAL = '''\
"""Mistral's constant override, written into the base's table from here."""

from sglang.srt.arg_groups import model_override_base

model_override_base.CONSTANT_OVERRIDES["MistralForCausalLM"] = {"page_size": 128}
'''

SHARED = """\
@_register_for("SharedForCausalLM")
def _{name}_overrides(server_args: Any, hf_config: Any) -> dict:
    return {{"page_size": {page}}}
"""

PIPELINE = '''\
"""Ordered configuration resolution."""

from typing import Any

from sglang.srt.arg_groups.model_override_base import model_config_of
from sglang.srt.arg_groups.overrides import (
    collect_model_override_declarations,
    declare_resolution,
    resolving_view,
)
from sglang.srt.arg_groups.resolution_hooks import run_hook


def handle_model_overrides(server_args: Any) -> None:
    hf_config = model_config_of(server_args).hf_config
    architecture = hf_config.architectures[0]
    declared = collect_model_override_declarations(architecture, server_args, hf_config)
    for source, fields in declared:
        declare_resolution(server_args, source, **fields)


def run_resolution_pipeline(server_args: Any) -> None:
    run_hook(handle_model_overrides, server_args)
    if resolving_view(server_args).page_size is None:
        declare_resolution(server_args, "page_size_default", page_size=1)
'''


def family(name: str, imports: str, body: str) -> str:
    return FAMILY.format(name=name, imports=imports, body=body)


def registry(modules: list[str], deepseek_platform: str = "get_platform().is_sm100") -> dict:
    """The files of a commit whose `model_overrides/__init__.py` imports `modules`, in
    that order."""
    init = '"""One module per model family; importing them registers their overrides."""\n\n'
    init += "".join(f"from sglang.srt.arg_groups.model_overrides import {m}  # noqa: F401\n"
                    for m in modules)  # fmt: skip
    texts = {
        "deepseek": family("DeepSeek", "_register_for, resolving_view",
                           DEEPSEEK.format(platform=deepseek_platform)),
        "qwen": family("Qwen", "register_model_override_predicate, resolving_view", QWEN),
        "gemma": family("Gemma", "_register_for", GEMMA),
        "mistral": MISTRAL,
        "zeta": family("Zeta", "_register_for", SHARED.format(name="zeta", page=8)),
        "alpha": family("Alpha", "_register_for", SHARED.format(name="alpha", page=4)),
    }  # fmt: skip
    files = {
        "python/sglang/srt/server_args.py": SERVER_ARGS,
        f"{PKG}/__init__.py": "",
        f"{PKG}/model_override_base.py": BASE,
        f"{PKG}/overrides.py": OVERRIDES,
        f"{PKG}/resolution_hooks.py": HOOKS,
        f"{PKG}/pipeline.py": PIPELINE,
        f"{PKG}/model_overrides/__init__.py": init,
    }
    files.update({f"{PKG}/model_overrides/{m}.py": texts[m] for m in modules})
    return files


FIRST = ["deepseek", "qwen"]
VERSIONS = {  # oldest first; each changes what the registry holds in one way
    "registry": registry(FIRST),
    "new-family": registry([*FIRST, "gemma"]),
    "provider-edit": registry([*FIRST, "gemma"], deepseek_platform="True"),
    "module-write": registry([*FIRST, "gemma", "mistral"], deepseek_platform="True"),
    "import-order": registry([*FIRST, "gemma", "mistral", "zeta", "alpha"], "True"),
}
AXES = {
    "architecture": ["LlamaForCausalLM", "DeepseekV3ForCausalLM", "Qwen3ForCausalLM",
                     "PinnedForCausalLM", "GemmaForCausalLM", "MistralForCausalLM",
                     "SharedForCausalLM"],
    "attention_backend": [None, "fa3"],
    "page_size": [None, 1],
    "platform": ["sm90", "sm100"],
}  # fmt: skip
OUTPUTS = ("attention_backend", "page_size")
MATRIX = entry_matrix("registry-test", AXES, OUTPUTS)


def model_config(architecture: str) -> types.ModuleType:
    """SGLang's `configs.model_config`, answering the cell's architecture as the
    sglang world documents it (`model_config_of(view).hf_config.architectures`)."""
    module = types.ModuleType("sglang.srt.configs.model_config")
    hf_config = types.SimpleNamespace(architectures=[architecture])
    answer = types.SimpleNamespace(hf_config=hf_config)
    module.ModelConfig = types.SimpleNamespace(from_server_args=lambda server_args: answer)
    return module


def model_configs(cell: dict) -> dict[str, types.ModuleType]:
    return {"sglang.srt.configs.model_config": model_config(cell["architecture"])}


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, dict[str, str], Path, dict[str, list]]:
    root = tmp_path_factory.mktemp("registry")
    fixture = FixtureRepo(root / "repo")
    shas = {key: fixture.commit(f"{key} (#{n})", files)
            for n, (key, files) in enumerate(VERSIONS.items(), 1)}  # fmt: skip
    matrix = root / "registry.yaml"
    matrix.write_text(MATRIX)
    expected = {}
    for key, files in VERSIONS.items():
        tree = root / "trees" / key
        for path, text in files.items():
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_text(text)
        expected[key] = plain_outcomes(tree, AXES, OUTPUTS, model_configs)
    return root / "repo", shas, matrix, expected


def harness_outcomes(root: Path, sha: str, matrix: Path, exhaustive: bool) -> list:
    return entry_outcomes(root, sha, matrix, exhaustive, OUTPUTS)


@pytest.mark.parametrize("key", list(VERSIONS))
def test_every_cell_is_what_the_registry_resolves_in_plain_python(history, key):
    root, shas, matrix, expected = history
    assert harness_outcomes(root, shas[key], matrix, exhaustive=False) == expected[key]


def test_each_commit_changes_the_registry_where_its_code_says(history):
    """Each commit changes some cells (else the comparisons above prove little), and
    the last one's shared architecture gets the later import's page size (4), which a
    load in file-name order would give as 8."""
    _, _, _, expected = history
    assert all(changed(expected, a, b) > 0 for a, b in itertools.pairwise(VERSIONS))
    shared = [o for c, o in zip(cells(AXES), expected["import-order"], strict=True)
              if c["architecture"] == "SharedForCausalLM"]  # fmt: skip
    assert {page for _, page in shared} == {4}


def test_a_registry_filled_at_load_keeps_the_entry_explored(history):
    """Registering writes run as the files load, before any call: the entry is
    explored (no note that every cell was run) and agrees with running every cell."""
    root, shas, matrix, expected = history
    sha = shas["import-order"]
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    assert (done.code, json.loads(done.out)["notes"]) == (0, {}), done.out
    assert harness_outcomes(root, sha, matrix, exhaustive=True) == expected["import-order"]


@pytest.mark.parametrize("base, head", list(itertools.pairwise(VERSIONS)))
def test_diff_reports_exactly_the_cells_the_registry_changes(history, base, head):
    check_diff(history, base, head)


def test_history_sees_each_registry_change_commit_by_commit(history):
    """History reuses what it extracted for the commit before when an edit cannot
    change it: a new import line in the package, a constant written from another file,
    an import reordered are not such edits."""
    check_history(history)
