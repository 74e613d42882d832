"""SGLang's helpers of the machine that older resolutions call by name, answered by the
sglang world: `get_bool_env_var(name, default)` and `get_int_env_var(name, default)`
read the variable as `os.getenv` does, and `get_device_name()` is the field
`platform.gpu_name` (0.5.10's `__post_init__` calls all three).

The fixture writes the helpers in `sglang/srt/utils/common.py`, shaped as SGLang's and in
our own words; the expected outcome of each cell comes from importing the files in plain
Python in a process holding the cell's variables (and a torch naming the GPU), never
from harness.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.test_entry import (
    FIELDS,
    PKG,
    POST_INIT,
    POST_INIT_MATRIX,
    POST_INIT_VERSIONS,
    cells,
    harness_outcomes,
    imported,
    outcome_of,
    post_init_outcomes,
)
from tests.test_entry_class import FILES, commit_files, diff_note
from tests.test_entry_machine import backend_and_page

COMMON = '''\
"""Helpers shared across the server."""

import logging
import os

logger = logging.getLogger(__name__)

_reported = set()


def get_bool_env_var(name: str, default: str = "false") -> bool:
    value = os.getenv(name, default)
    value = value.lower()

    if value not in ("true", "1") and value not in ("false", "0"):
        if name not in _reported:
            logger.warning(f"{name}={value} is neither true nor false: read as false")
        _reported.add(name)

    return value in ("true", "1")


def get_int_env_var(name: str, default: int = 0) -> int:
    value = os.getenv(name)
    if value is None or not value.strip():
        return default
    try:
        return int(value)
    except ValueError:
        return default


def get_device_name(device_id: int = 0) -> str:
    import torch

    return torch.cuda.get_device_name(device_id)
'''
UTILS = '"""Utilities."""\n\nfrom sglang.srt.utils.common import *  # noqa: F403\n'
PIPELINE = '''\
"""Resolution reading the machine through SGLang's helpers."""

from sglang.srt.utils import get_bool_env_var, get_device_name, get_int_env_var


{prefix}def run_resolution_pipeline(server_args):
    if get_bool_env_var("SGLANG_USE_TRITON"):
        server_args.attention_backend = "triton"
    if server_args.page_size is None:
        server_args.page_size = get_int_env_var("SGLANG_PAGES", 16)
    name = get_device_name()
    if name and "H20" in name and "H200" not in name:
        server_args.attention_backend = "flashinfer"
{more}'''
AXES = {
    "SGLANG_USE_TRITON": [None, "1", "TRUE", "yes", "0"],
    "SGLANG_PAGES": [None, "", " 8 ", "x", "32"],
    "page_size": [None, 1],
}
OUTPUTS = ("attention_backend", "page_size")
MATRIX = (
    f"name: helpers\ntarget:\n  path: {PKG}/pipeline.py\n  entry: run_resolution_pipeline\n"
    "  output: [attention_backend, page_size]\nworld: sglang\naxes:\n"
    "  SGLANG_USE_TRITON: [null, '1', 'TRUE', 'yes', '0']\n"
    "  SGLANG_PAGES: [null, '', ' 8 ', x, '32']\n  page_size: [null, 1]\n"
    "fields:\n  platform.gpu_name: {gpu}\n"
)


def commit(
    tmp_path: Path, more: str = "", gpu: str = "NVIDIA H20", prefix: str = ""
) -> tuple[Path, str, Path]:
    files = {**FILES, "python/sglang/srt/utils/__init__.py": UTILS,
             "python/sglang/srt/utils/common.py": COMMON,
             f"{PKG}/pipeline.py": PIPELINE.format(more=more, prefix=prefix)}  # fmt: skip
    root, sha, matrix = commit_files(tmp_path, files)
    matrix.write_text(MATRIX.format(gpu=gpu))
    return root, sha, matrix


def torch_naming(gpu: str) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(get_device_name=lambda device_id=0: gpu)
    return torch


def plain(root: Path, monkeypatch, gpu: str) -> list:
    """Per cell, what the files at `root` resolve in plain Python, in a process whose
    environment holds the cell's variables, on a GPU torch names `gpu`."""
    found = []
    saved = sys.modules.get("torch")
    for cell in cells(AXES):
        with monkeypatch.context() as patch:
            for name in ("SGLANG_USE_TRITON", "SGLANG_PAGES"):
                if cell[name] is None:
                    patch.delenv(name, raising=False)
                else:
                    patch.setenv(name, cell[name])
            stubs = {"torch": torch_naming(gpu)}
            with imported(root, "sm90", stubs) as (configuration, run):
                server_args = configuration(page_size=cell["page_size"])
                found.append(outcome_of(run, server_args, backend_and_page))
    sys.modules.pop("torch", None)
    if saved is not None:
        sys.modules["torch"] = saved
    return found


CASES = {
    "plain": "",
    "default-true": '    server_args.page_size += get_bool_env_var("SGLANG_USE_TRITON", "True")\n',
    "default-keyword": (
        '    server_args.page_size += get_int_env_var(name="SGLANG_PAGES", default=5)\n'
    ),
    "default-none": '    server_args.page_size += get_bool_env_var("SGLANG_USE_TRITON", None)\n',
    "default-number": '    server_args.page_size += get_bool_env_var("SGLANG_USE_TRITON", 1)\n',
    "name-not-str": "    server_args.page_size += get_bool_env_var(3)\n",
    "int-none": '    server_args.page_size = get_int_env_var("SGLANG_PAGES", None)\n',
    "too-many": "    server_args.page_size = len(get_device_name(0, 1))\n",
    "bool-too-many": '    server_args.page_size += get_bool_env_var("SGLANG_USE_TRITON", "0", 3)\n',
    "int-unknown-keyword": '    server_args.page_size += get_int_env_var(key="SGLANG_PAGES")\n',
}


@pytest.mark.parametrize("gpu", ["NVIDIA H20", "NVIDIA H200"])
@pytest.mark.parametrize("more", list(CASES.values()), ids=list(CASES))
def test_the_helpers_read_the_cells_machine_as_sglangs_do(tmp_path, monkeypatch, more, gpu):
    root, sha, matrix = commit(tmp_path, more, gpu)
    expected = plain(tmp_path / "tree", monkeypatch, gpu)
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected
    if not more:  # from the helpers' rules: " 8 " is 8, "x" and "" the default 16
        pages = {16, 8, 32, 1}
        backends = ("flashinfer",) if gpu == "NVIDIA H20" else (None, "triton")
        assert set(expected) == {(b, p) for b in backends for p in pages}


def test_what_the_helpers_cannot_answer_is_refused(tmp_path):
    """A variable the matrix does not name (strict, as `os.getenv`), a default whose own
    `lower` is the repository's code, and a GPU name no field gives: exit 4, naming it."""
    mine = "class Text(str):\n    def lower(self):\n        return 'true'\n\n\n"
    cases = [
        ('    get_bool_env_var("SGLANG_OTHER")\n', "", "os.environ['SGLANG_OTHER']"),
        ('    get_int_env_var("SGLANG_OTHER", 3)\n', "", "os.environ['SGLANG_OTHER']"),
        ('    get_bool_env_var("SGLANG_USE_TRITON", Text("x"))\n', mine,
         "get_bool_env_var('SGLANG_USE_TRITON', a Text)"),
    ]  # fmt: skip
    for n, (more, prefix, what) in enumerate(cases):
        code, note = diff_note(*commit(tmp_path / str(n), more, prefix=prefix))
        assert code == 4 and what in note, (what, code, note)
    root, sha, matrix = commit(tmp_path / "gpu")
    matrix.write_text(matrix.read_text().replace("fields:\n  platform.gpu_name: NVIDIA H20\n", ""))
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and "platform.gpu_name" in note and "get_device_name()" in note, note


# A cached property on the configuration's class (SGLang 0.5.13's ServerArgs), which an
# entry's module makes as it loads.
CACHED = POST_INIT.replace(
    "import logging\n", "import logging\nfrom functools import cached_property\n"
).replace(
    "    def __post_init__(self):\n",
    "    tags: list = dataclasses.field(default_factory=lambda: [is_sm100_supported()])\n\n"
    "    @cached_property\n    def max_tokens(self):\n        return 4 * (self.page_size or 1)\n\n"
    "    def __post_init__(self):\n",
)


def test_a_cached_property_taking_two_names_fails_as_the_class_is_made(tmp_path):
    """Python's rule: one cached_property, two names in the class, fails where the class
    is made: the module does not import, so no cell can be evaluated (exit 4), with
    Python's own message."""
    text = CACHED.format(FIELDS=FIELDS, **POST_INIT_VERSIONS["unset"]).replace(
        "    def __post_init__(self):\n",
        "    other_tokens = max_tokens\n\n    def __post_init__(self):\n",
    )
    root, sha, matrix = post_init_commit(tmp_path, text)
    with pytest.raises((RuntimeError, TypeError)) as raised:  # (3.12 on: a TypeError)
        post_init_outcomes(text)
    found = harness_outcomes(root, sha, matrix)
    assert {kind for kind, _ in found} == {"unevaluable"}, found[:2]  # no module: no cell
    assert str(raised.value) in found[0][1], (raised.value, found[0])


def test_a_cached_property_of_the_class_its_module_makes_is_not_read_but_made(tmp_path):
    """The class is made as its module loads (the decorator runs, the dataclass decorator
    looks at the attribute), so every cell resolves as plain Python; a call that reads
    the property is refused, naming it (the configuration is the world's object)."""
    text = CACHED.format(FIELDS=FIELDS, **POST_INIT_VERSIONS["unset"])
    root, sha, matrix = post_init_commit(tmp_path / "a", text)
    assert harness_outcomes(root, sha, matrix) == post_init_outcomes(text)
    reads = text.replace("        self._handle_page_size()\n",
                         "        self._handle_page_size()\n        self.page_size += self.max_tokens\n")  # fmt: skip
    code, note = diff_note(*post_init_commit(tmp_path / "b", reads))
    assert code == 4 and "max_tokens" in note, note


def post_init_commit(tmp_path: Path, text: str) -> tuple[Path, str, Path]:
    sha = FixtureRepo(tmp_path / "repo").commit(
        "post-init", {"python/sglang/srt/server_args.py": text}
    )
    (tmp_path / "m.yaml").write_text(POST_INIT_MATRIX)
    return tmp_path / "repo", sha, tmp_path / "m.yaml"
