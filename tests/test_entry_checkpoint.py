"""The model's checkpoint as an entry reads it: whether the model's path is a local
directory, which files it holds (`os.path.isdir`, `exists`, `isfile`, `glob.glob`), and
for a model on the hub its file list (`HfApi().model_info(path).siblings`), answered by
the fields `model.local` and `model.files`.

The fixture is one SGLang-shaped commit that picks a load format from the checkpoint's
files, as SGLang's `_is_mistral_native_format` does. The expected outcome of every
cell comes from running its files in plain Python: a local model is a real directory
holding the files, made for the cell under tmp_path; a hub model's files come from a
`huggingface_hub` module answering the cell's list. Never from harness.
"""

from __future__ import annotations

import shutil
import types
from pathlib import Path

import pytest

from harness.engine.outcome import ERROR
from tests.test_entry import PKG, cells, harness_outcomes, imported
from tests.test_entry_class import commit_files, diff_note

SERVER_ARGS = '''\
"""Server arguments: where the model is, and how to load it."""

import dataclasses
from typing import Optional


@dataclasses.dataclass
class ServerArgs:
    model_path: str = "org/model"
    load_format: str = "auto"
    page_size: Optional[int] = None
'''
PIPELINE = '''\
"""Resolution choosing the load format from the checkpoint's files."""

import glob
import os


def _native_layout(model_path):
    named = "native" in model_path.lower()

    def decide(has_params, has_consolidated, has_hf_weights):
        if has_params and named:
            return True
        return has_consolidated and not has_hf_weights

    if os.path.isdir(model_path):
        return decide(
            os.path.exists(os.path.join(model_path, "params.json")),
            bool(glob.glob(os.path.join(model_path, "consolidated*.safetensors"))),
            bool(glob.glob(os.path.join(model_path, "model*.safetensors"))),
        )
    try:
        from huggingface_hub import HfApi

        files = {{s.rfilename for s in HfApi().model_info(model_path).siblings}}
    except Exception:
        return False
    return decide(
        "params.json" in files,
        any(f.startswith("consolidated") and f.endswith(".safetensors") for f in files),
        any(f.startswith("model") and f.endswith(".safetensors") and "/" not in f
            for f in files),
    )


def run_resolution_pipeline(server_args):
    path = server_args.model_path
    if server_args.load_format == "auto" and _native_layout(path):
        server_args.load_format = "native"
    if os.path.isdir(path):
        top = glob.glob(os.path.join(path, "*"))
        nested = glob.glob(os.path.join(path, "*", "*.safetensors"))
        files = [os.path.isfile(p) for p in top]
        server_args.page_size = 100 * len(top) + 10 * len(nested) + sum(files)
        if os.path.isdir(os.path.join(path, "sub")) and os.path.exists(
            os.path.join(path, "sub", "model.safetensors")
        ):
            server_args.page_size += 1000
{more}'''
AXES = {"model.local": [False, True], "load_format": ["auto", "safetensors"]}
OUTPUTS = ("load_format", "page_size")
FILE_SETS = {
    "native": ["params.json", "consolidated.safetensors"],
    "both": ["consolidated-00001.safetensors", "model-00001.safetensors", "config.json"],
    "nested": ["config.json", "sub/model.safetensors", "sub/deep/x.safetensors",
               ".hidden.safetensors"],
    "none": [],
}  # fmt: skip


def matrix_text(model_path: str, files: list[str]) -> str:
    listed = ", ".join(f'"{f}"' for f in files)
    return (f"name: checkpoint\ntarget: {{path: {PKG}/pipeline.py, entry: run_resolution_pipeline,"
            " output: [load_format, page_size]}\nworld: sglang\naxes:\n"
            "  model.local: [false, true]\n  load_format: [auto, safetensors]\n"
            f"fields:\n  model_path: {model_path}\n  model.files: [{listed}]\n")  # fmt: skip


def hub_module(files: list[str]) -> types.ModuleType:
    """`huggingface_hub`, whose `HfApi().model_info(path).siblings` are `files`."""
    module = types.ModuleType("huggingface_hub")
    info = types.SimpleNamespace(siblings=[types.SimpleNamespace(rfilename=f) for f in files])
    module.HfApi = lambda: types.SimpleNamespace(model_info=lambda repo_id: info)
    return module


def plain(root: Path, model_path: Path, files: list[str]) -> list:
    """Per cell, what the files at `root` resolve in plain Python, with the model a real
    directory holding `files` where the cell says it is local, and absent otherwise."""
    found = []
    for cell in cells(AXES):
        shutil.rmtree(model_path, ignore_errors=True)
        if cell["model.local"]:
            for name in files:
                (model_path / name).parent.mkdir(parents=True, exist_ok=True)
                (model_path / name).write_text("")
            model_path.mkdir(parents=True, exist_ok=True)
        stubs = {"huggingface_hub": hub_module(files)}
        with imported(root, "sm90", stubs) as (configuration, run):
            server_args = configuration(model_path=str(model_path),
                                        load_format=cell["load_format"])  # fmt: skip
            try:
                run(server_args)
            except Exception as exc:  # every error is an outcome, as the harness has it
                found.append((ERROR, f"{type(exc).__name__}: {exc}"))
                continue
        found.append((server_args.load_format, server_args.page_size))
    return found


def checkpoint_commit(tmp_path: Path, files: list[str], more: str = "") -> tuple:
    texts = {"python/sglang/srt/server_args.py": SERVER_ARGS, f"{PKG}/__init__.py": "",
             f"{PKG}/pipeline.py": PIPELINE.format(more=more)}  # fmt: skip
    root, sha, matrix = commit_files(tmp_path, texts)
    model_path = tmp_path / "models" / "Native-7B"
    matrix.write_text(matrix_text(str(model_path), files))
    return root, sha, matrix, model_path


@pytest.mark.parametrize("files", list(FILE_SETS.values()), ids=list(FILE_SETS))
def test_the_checkpoint_files_are_read_as_on_the_machine_and_the_hub(tmp_path, files):
    root, sha, matrix, model_path = checkpoint_commit(tmp_path, files)
    expected = plain(tmp_path / "tree", model_path, files)
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected
    if files == FILE_SETS["native"]:  # a local and a hub checkpoint alike
        assert [o[0] for o in expected] == ["native", "safetensors"] * 2


def test_the_file_sets_tell_the_formats_apart(tmp_path):
    """The cases above differ where the code says (else they prove little): a local
    nested checkpoint counts its directories, a hub one reads no directory."""
    found = {}
    for key, files in FILE_SETS.items():
        _, _, _, model_path = checkpoint_commit(tmp_path / key, files)
        found[key] = plain(tmp_path / key / "tree", model_path, files)
    # top: config.json and sub (no hidden file); nested: sub/model...; one file on top
    assert found["nested"][2] == ("auto", 100 * 2 + 10 * 1 + 1 + 1000)
    assert found["both"][0] == ("auto", None) and found["native"][0] == ("native", None)
    assert len({tuple(v) for v in found.values()}) == len(found)


@pytest.mark.parametrize(
    "more, what",
    [
        ("    os.path.isdir('/etc')\n", "os.path.isdir('/etc')"),
        ("    os.path.exists(path + '/../x')\n", "os.path.exists("),
        ("    glob.glob(os.path.join(path, '**'))\n", "glob.glob("),
        ("    os.listdir(path)\n", "os.listdir"),
        ("    from huggingface_hub import HfApi\n    HfApi().model_info('org/other')\n",
         "HfApi().model_info('org/other'"),
    ],
    ids=["other-path", "dot-dot", "recursive", "listdir", "other-repo"],
)  # fmt: skip
def test_what_the_fields_do_not_say_is_refused_by_line(tmp_path, more, what):
    """Any other path, a recursive pattern, the rest of `os` and another repository are
    nothing the matrix says: the revision is unevaluable, naming the read and its line."""
    root, sha, matrix, _ = checkpoint_commit(tmp_path, FILE_SETS["native"], more)
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and what in note and "pipeline.py:" in note, note


def test_model_files_must_be_a_list_of_relative_paths(tmp_path):
    root, sha, matrix, _ = checkpoint_commit(tmp_path, ["/abs/path.json"])
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and "model.files" in note and "relative file paths" in note, note


def test_glob_lists_in_the_order_model_files_gives(tmp_path):
    """A directory lists its entries in an order of its own (the file system's), which
    `model.files` states: glob gives them in that order, a directory where its first
    file is (the expectation is that documented order, not a run of Python here, whose
    order is this disk's)."""
    files = ["z.json", "m.json", "c/x.json", "a.json"]
    more = ('    names = [p.rsplit("/", 1)[-1] for p in glob.glob(os.path.join(path, "*"))]\n'
            '    server_args.load_format = ",".join(names)\n')  # fmt: skip
    root, sha, matrix, _ = checkpoint_commit(tmp_path, files, more)
    found = harness_outcomes(root, sha, matrix, outputs=OUTPUTS)
    assert {o[0] for o in found[2:]} == {"z.json,m.json,c,a.json"}  # the local cells


@pytest.mark.parametrize(
    "more",
    ["    server_args.page_size = os.path.isdir(s=path) + os.path.isfile(path=path)\n",
     "    server_args.page_size = len(glob.glob(pathname=os.path.join(path, '*')))\n",
     "    server_args.page_size = os.path.isdir(path=path)\n",
     "    server_args.page_size = len(glob.glob(pattern=path))\n",
     "    server_args.page_size = os.path.exists()\n"],
    ids=["isdir-s", "glob-pathname", "isdir-path", "glob-pattern", "exists-none"],
)  # fmt: skip
def test_the_functions_take_pythons_parameters(tmp_path, more):
    """`os.path.isdir(s)`, `isfile(path)`, `exists(path)`, `glob.glob(pathname)`: called
    by keyword or wrongly, what Python gives (a value, or its TypeError's words)."""
    files = FILE_SETS["native"]
    root, sha, matrix, model_path = checkpoint_commit(tmp_path, files, more)
    expected = plain(tmp_path / "tree", model_path, files)
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected


@pytest.mark.parametrize(
    "files, name, what",
    [(["a.json", "a.json"], "Native-7B", "model.files"),
     (["a", "a/b.json"], "Native-7B", "model.files"),
     (["a.json"], "Native[7]B", "glob.glob(")],
    ids=["twice", "file-and-directory", "pattern-in-path"],
)  # fmt: skip
def test_a_checkpoint_no_machine_has_or_a_pattern_in_the_path_is_refused(
    tmp_path, files, name, what
):
    """A file listed twice, or where another's directory is, is no checkpoint; a model
    path holding `[`, `*` or `?` is a pattern to glob too, which the world does not
    follow. Each: exit 4, saying which."""
    root, sha, matrix, _ = checkpoint_commit(tmp_path, files)
    matrix.write_text(matrix_text(str(tmp_path / "models" / name), files))
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and what in note, note
