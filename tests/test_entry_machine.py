"""An entry's handlers import torch inside a function and read the CUDA toolkit torch was
built with (`torch.version.cuda`, SGLang 0.5.18's linear-attention checks): the world's
torch, as a module-level import gets it, answering from the field
`platform.cuda_version` on a CUDA GPU and None elsewhere.

The fixture is one SGLang-shaped commit; the expected outcome of every cell comes from
importing its files in plain Python with a torch of that build, never from harness.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from tests.test_entry import PKG, cells, harness_outcomes, imported, outcome_of, plain_outcomes
from tests.test_entry_class import FILES, commit_files, diff_note

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
    """Without the field, or with a number for it, a CUDA cell's read is refused (exit 4),
    naming the field; a matrix of ROCm cells needs none."""
    code, note = diff_note(*commit(tmp_path / "a", "sm90, hip", ""))
    assert code == 4 and "platform.cuda_version" in note, note
    unquoted = "fields:\n  platform.cuda_version: 12.9\n"  # YAML's number, never torch's
    code, note = diff_note(*commit(tmp_path / "c", "sm90", unquoted))
    assert code == 4 and "torch.version.cuda of 12.9" in note, note
    assert diff_note(*commit(tmp_path / "b", "hip", "")) == (0, "")


ENV_PIPELINE = '''\
"""Resolution reading the process's environment."""

import os


class Name(str):
    def upper(self):
        return "SGLANG_OTHER"


def run_resolution_pipeline(server_args):
    if "SGLANG_LEGACY" in os.environ:
        raise ValueError("SGLANG_LEGACY is no longer supported")
    if server_args.page_size is None:
        server_args.page_size = int(os.environ.get("SGLANG_PAGES", "16"))
    server_args.attention_backend = os.getenv("SGLANG_BACKEND") or "fa3"
{more}'''
ENV_AXES = {"SGLANG_LEGACY": [None, "1"], "SGLANG_PAGES": [None, "32"], "page_size": [None, 1]}
ENV_MATRIX = (
    f"name: environ\ntarget:\n  path: {PKG}/pipeline.py\n  entry: run_resolution_pipeline\n"
    "  output: [attention_backend, page_size]\nworld: sglang\naxes:\n"
    "  SGLANG_LEGACY: [null, '1']\n  SGLANG_PAGES: [null, '32']\n  page_size: [null, 1]\n"
    "fields:\n  SGLANG_BACKEND: {backend}\n"
)


def env_commit(tmp_path: Path, more: str = "", backend: str = "null") -> tuple[Path, str, Path]:
    files = {**FILES, f"{PKG}/pipeline.py": ENV_PIPELINE.format(more=more)}
    root, sha, matrix = commit_files(tmp_path, files)
    matrix.write_text(ENV_MATRIX.format(backend=backend))
    return root, sha, matrix


def backend_and_page(server_args) -> tuple:
    return (server_args.attention_backend, server_args.page_size)


def plain_with_environment(root: Path, monkeypatch, backend: str | None) -> list:
    """Per cell, what the files at `root` resolve in plain Python, run in a process whose
    environment holds the cell's variables."""
    found = []
    for cell in cells(ENV_AXES):
        with monkeypatch.context() as patch:
            for name, value in [*cell.items(), ("SGLANG_BACKEND", backend)]:
                if name.startswith("SGLANG_") and value is None:
                    patch.delenv(name, raising=False)
                elif name.startswith("SGLANG_"):
                    patch.setenv(name, value)
            with imported(root, "sm90") as (configuration, run):
                server_args = configuration(page_size=cell["page_size"])
                found.append(outcome_of(run, server_args, backend_and_page))
    return found


AS_PYTHON = [
    "",
    '    server_args.page_size += len(os.getenv(key="SGLANG_BACKEND", default="xy"))\n',
    '    server_args.page_size += len(os.environ.get(key="SGLANG_PAGES", default=""))\n',
    "    server_args.page_size += 1 in os.environ  # Python's TypeError\n",
    '    server_args.page_size += len(os.environ.setdefault("SGLANG_PAGES", "4444"))\n',
    '    os.environ["SGLANG_BACKEND"] = "written"\n',
    '    os.environ["SGLANG_BACKEND"] = 3  # Python\'s TypeError\n',
]


@pytest.mark.parametrize(
    "more",
    AS_PYTHON,
    ids=[
        "plain",
        "getenv-key",
        "get-key",
        "not-str",
        "setdefault",
        "written",
        "written-not-str",
    ],
)
def test_the_environment_is_the_cells_variables(tmp_path, monkeypatch, more):
    root, sha, matrix = env_commit(tmp_path, more, backend="flashinfer")
    expected = plain_with_environment(tmp_path / "tree", monkeypatch, "flashinfer")
    found = harness_outcomes(root, sha, matrix, outputs=("attention_backend", "page_size"))
    assert found == expected
    assert expected.count(("error", "ValueError: SGLANG_LEGACY is no longer supported")) == 4
    if not more:
        assert ("flashinfer", 32) in expected and ("flashinfer", 16) in expected


def test_a_variable_the_matrix_does_not_name_and_a_write_are_refused(tmp_path):
    """Which variables the process has is the matrix's to say (strict, naming the
    variable); a deletion, and a read of what the call wrote, the world does not follow;
    iterating the whole environment has no answer. Each: exit 4, naming it."""
    cases = [
        ('    server_args.page_size = os.environ["SGLANG_OTHER"]\n', "SGLANG_OTHER"),
        ('    del os.environ["NCCL_ALGO"]\n', "os.environ['NCCL_ALGO'] is deleted"),
        # Python encodes a str subclass with its own `encode`, which the world does not run
        (
            '    server_args.page_size = os.environ.get(Name("SGLANG_PAGES"), "")\n',
            "os.environ[a Name]",
        ),
        (
            '    os.environ["SGLANG_PAGES"] = "1"\n    server_args.page_size = os.environ["SGLANG_PAGES"]\n',
            "after the resolution set SGLANG_PAGES",
        ),
        ("    server_args.page_size = len(list(os.environ))\n", "every variable of os.environ"),
        ("    server_args.page_size = os.path.getsize('a')\n", "os.path.getsize"),
        ('    server_args.page_size = os.getenv("platform")\n', "environment variable 'platform'"),
        ("    server_args.page_size = os.environ == {}\n", "every variable of os.environ"),
    ]
    for n, (more, what) in enumerate(cases):
        code, note = diff_note(*env_commit(tmp_path / str(n), more))
        assert code == 4 and what in note, (what, code, note)


ENVIRON = '''\
"""Settings read from the process's environment, each with its type and default."""

import os


class EnvField:
    def __init__(self, default):
        self.default = default
        self._set_to_none = False

    def __set_name__(self, owner, name):
        self.name = name

    def get(self):
        value = os.getenv(self.name)
        if self._set_to_none:
            return None
        return self.default if value is None else self.parse(value)

    def is_set(self):
        return self.name in os.environ

    def set(self, value):
        self._set_to_none = value is None
        os.environ[self.name] = str(value)


class EnvBool(EnvField):
    def parse(self, value):
        return value.lower() in ("true", "1", "yes", "y")


class EnvInt(EnvField):
    def parse(self, value):
        return int(value)


class Envs:
    SGLANG_FLAG = EnvBool(False)
    SGLANG_PAGES = EnvInt(16)


envs = Envs()
'''
SETS = '''\
"""Resolution setting a variable of its process for what runs after it."""

from sglang.srt.environ import envs


def run_resolution_pipeline(server_args):
    if server_args.page_size is None:
        envs.SGLANG_FLAG.set(True)
    server_args.page_size = envs.SGLANG_PAGES.get()
    server_args.attention_backend = "set" if envs.SGLANG_FLAG.is_set() else "unset"
{more}'''
SET_AXES = {"SGLANG_FLAG": [None, "true"], "page_size": [None, 1]}
SET_MATRIX = (
    f"name: sets\ntarget:\n  path: {PKG}/pipeline.py\n  entry: run_resolution_pipeline\n"
    "  output: [attention_backend, page_size]\nworld: sglang\naxes:\n"
    "  SGLANG_FLAG: [null, true]\n  page_size: [null, 1]\n"
)


def set_commit(tmp_path: Path, more: str = "") -> tuple[Path, str, Path]:
    files = {**FILES, "python/sglang/srt/environ.py": ENVIRON,
             f"{PKG}/pipeline.py": SETS.format(more=more)}  # fmt: skip
    root, sha, matrix = commit_files(tmp_path, files)
    matrix.write_text(SET_MATRIX)
    return root, sha, matrix


def test_a_variable_the_resolution_sets_is_set_for_the_rest_of_the_call(tmp_path, monkeypatch):
    """`envs.X.set(value)` sets the variable for what runs after it in the process: a
    later `is_set()` is true, and no other cell sees it (each resolves in a process of
    its own there; here each call starts from the cell's variables)."""
    root, sha, matrix = set_commit(tmp_path)
    expected = []
    for cell in cells(SET_AXES):
        with monkeypatch.context() as patch:
            if cell["SGLANG_FLAG"] is None:
                patch.delenv("SGLANG_FLAG", raising=False)
            else:
                patch.setenv("SGLANG_FLAG", cell["SGLANG_FLAG"])
            patch.delenv("SGLANG_PAGES", raising=False)
            with imported(tmp_path / "tree", "sm90") as (configuration, run):
                server_args = configuration(page_size=cell["page_size"])
                run(server_args)
        expected.append((server_args.attention_backend, server_args.page_size))
    found = harness_outcomes(root, sha, matrix, outputs=("attention_backend", "page_size"))
    assert found == expected
    assert ("set", 16) in expected and ("unset", 16) in expected


def test_a_read_of_a_variable_the_resolution_set_is_refused(tmp_path):
    """What a read after the write gives is the written value as the variable's type
    parses it, which the world does not follow: exit 4, naming the read."""
    more = "    server_args.page_size += envs.SGLANG_FLAG.get()\n"
    code, note = diff_note(*set_commit(tmp_path, more))
    assert code == 4 and "envs.SGLANG_FLAG after the resolution set SGLANG_FLAG" in note, note


@pytest.mark.parametrize(
    "value", ['"a\\x00b"', '"\\ud800"', "Loud()"], ids=["null", "surrogate", "str-raises"]
)
def test_a_value_the_environment_cannot_hold_is_pythons_error(tmp_path, monkeypatch, value):
    """`set(value)` stores `str(value)` in the process's environment, as SGLang's does:
    a value it cannot hold (a null byte, a lone surrogate) and a `__str__` that raises
    are the errors Python gives."""
    more = (
        "class Loud:\n    def __str__(self):\n        raise ValueError('no str')\n\n\n"
        f"def run_resolution_pipeline(server_args):\n    envs.SGLANG_FLAG.set({value})\n"
    )
    text = SETS.split("def run_resolution_pipeline")[0] + more
    files = {**FILES, "python/sglang/srt/environ.py": ENVIRON, f"{PKG}/pipeline.py": text}
    root, sha, matrix = commit_files(tmp_path, files)
    matrix.write_text(SET_MATRIX)
    with monkeypatch.context() as patch:
        patch.delenv("SGLANG_FLAG", raising=False)
        tree = imported(tmp_path / "tree", "sm90")
        with tree as (configuration, run), pytest.raises(Exception) as raised:
            run(configuration())
    want = ("error", f"{type(raised.value).__name__}: {raised.value}")
    found = harness_outcomes(root, sha, matrix, outputs=("attention_backend", "page_size"))
    assert found == [want] * len(found)


def test_a_variable_set_as_a_module_loads_is_refused(tmp_path):
    """Set at module level, a variable is set for every resolution after the import,
    which the world does not follow: exit 4, naming the line."""
    text = SETS.replace("def run_resolution_pipeline", 'envs.SGLANG_FLAG.set("1")\n\n\ndef '
                        "run_resolution_pipeline").format(more="")  # fmt: skip
    files = {**FILES, "python/sglang/srt/environ.py": ENVIRON, f"{PKG}/pipeline.py": text}
    root, sha, matrix = commit_files(tmp_path, files)
    matrix.write_text(SET_MATRIX)
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and "envs.SGLANG_FLAG is assigned" in note and "as its module" in note, note


SIDE = '''\
"""A module that sets a variable of the process as it is imported."""

from sglang.srt.environ import envs

SET = envs.SGLANG_FLAG.set("1")


def unused(x):
    return SET
'''
SIDE_PIPELINE = '''\
"""Resolution importing that module, whose name it reads on no cell."""

from sglang.srt.arg_groups.side import unused
from sglang.srt.environ import envs


def run_resolution_pipeline(server_args):
    if server_args.page_size == 12345:
        unused(1)
    server_args.attention_backend = "set" if envs.SGLANG_FLAG.is_set() else "unset"
'''


def test_a_variable_another_module_sets_as_it_loads_is_refused(tmp_path):
    """An imported module's load is what sets the variable (plain Python: `set` on every
    cell), whether or not the entry calls what it defines: refused, never left out."""
    files = {**FILES, "python/sglang/srt/environ.py": ENVIRON, f"{PKG}/side.py": SIDE,
             f"{PKG}/pipeline.py": SIDE_PIPELINE}  # fmt: skip
    root, sha, matrix = commit_files(tmp_path, files)
    matrix.write_text(SET_MATRIX)
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and "envs.SGLANG_FLAG is assigned at" in note and "side.py" in note, note
