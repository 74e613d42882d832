"""An entry's handlers import torch inside a function and read the CUDA toolkit torch was
built with (`torch.version.cuda`, SGLang 0.5.18's linear-attention checks): the world's
torch, as a module-level import gets it, answering from the field
`platform.cuda_version` on a CUDA GPU and None elsewhere.

The fixture is one SGLang-shaped commit; the expected outcome of every cell comes from
importing its files in plain Python with a torch of that build, never from harness.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

from tests.conftest import run_cli
from tests.test_entry import PKG, harness_outcomes, plain_outcomes
from tests.test_entry_class import FILES, commit_files

PIPELINE = '''\
"""Resolution checking the CUDA toolkit."""


def run_resolution_pipeline(server_args):
    import torch

    cuda = torch.version.cuda
    major = int(cuda.split(".")[0]) if cuda is not None else 0
    server_args.page_size = 64 if major >= 13 else (server_args.page_size or 1)
'''
AXES = {"platform": ["sm90", "sm100", "hip"], "page_size": [None, 1]}
OUTPUTS = ("page_size",)
MATRIX = (
    f"name: machine\ntarget:\n  path: {PKG}/pipeline.py\n  entry: run_resolution_pipeline\n"
    "  output: [page_size]\nworld: sglang\naxes:\n  platform: [{platforms}]\n"
    "  page_size: [null, 1]\n{fields}"
)


def commit(tmp_path: Path, platforms: str, fields: str) -> tuple[Path, str, Path]:
    root, sha, matrix = commit_files(tmp_path, {**FILES, f"{PKG}/pipeline.py": PIPELINE})
    matrix.write_text(MATRIX.format(platforms=platforms, fields=fields))
    return root, sha, matrix


def torch_built_with(version: str | None) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.version = types.SimpleNamespace(cuda=version)
    return torch


def test_torch_version_cuda_is_the_fields_on_a_cuda_gpu_and_none_elsewhere(tmp_path):
    root, sha, matrix = commit(tmp_path, "sm90, sm100, hip",
                               "fields:\n  platform.cuda_version: '13.0'\n")  # fmt: skip
    saved = sys.modules.get("torch")
    try:
        expected = plain_outcomes(
            tmp_path / "tree", AXES, OUTPUTS,
            stubs=lambda cell: {"torch": torch_built_with(
                None if cell["platform"] == "hip" else "13.0")},
        )  # fmt: skip
    finally:
        sys.modules.pop("torch", None)
        if saved is not None:
            sys.modules["torch"] = saved
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected
    assert expected == [(64,), (64,), (64,), (64,), (1,), (1,)]  # CUDA 13; ROCm: none


def test_which_toolkit_a_cuda_gpu_has_is_strict(tmp_path):
    """Without the field, a CUDA cell's read is refused (exit 4), naming the field; a
    matrix of ROCm cells needs none."""
    root, sha, matrix = commit(tmp_path / "a", "sm90, hip", "")
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"].get("base", "")
    assert done.code == 4 and "platform.cuda_version" in note, note
    root, sha, matrix = commit(tmp_path / "b", "hip", "")
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    assert done.code == 0, done.out
