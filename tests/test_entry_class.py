"""An entry reads the configuration's class: `ServerArgs.x` (the default its class
declares, as a dataclass's class attribute) and `type(server_args)`. The world answers
both with one object holding the defaults read from the code; nothing of the class's
own code runs (SGLang's defines `__setattr__` and builds its fields with calls).

The fixture is one SGLang-shaped commit; the expected outcome of every cell comes
from importing its files in plain Python and running the entry on the dataclass,
never from harness.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.test_entry import PKG, harness_outcomes, plain_outcomes

SERVER_ARGS = '''\
"""Server arguments, one dataclass with a guarded `__setattr__`."""

from __future__ import annotations

import dataclasses
from typing import List, Optional


@dataclasses.dataclass
class ServerArgs:
    attention_backend: Optional[str] = None
    page_size: Optional[int] = None
    fallback_backend: str = "fa3"
    default_page: int = 16
    tags: List[str] = dataclasses.field(default_factory=list)

    def __setattr__(self, name, value):
        if name.startswith("__"):
            raise AttributeError(name)
        object.__setattr__(self, name, value)
'''
PIPELINE = '''\
"""Resolution reading the configuration's class."""


def run_resolution_pipeline(server_args):
    from sglang.srt.server_args import ServerArgs

    cls = type(server_args)
    if cls is not ServerArgs:
        raise TypeError("not a ServerArgs")
    if server_args.page_size == ServerArgs.page_size:  # left at the class default
        server_args.page_size = cls.default_page
    if server_args.attention_backend is None:
        server_args.attention_backend = ServerArgs.fallback_backend
{more}'''
FILES = {"python/sglang/srt/server_args.py": SERVER_ARGS, f"{PKG}/__init__.py": ""}
AXES = {"attention_backend": [None, "fa4"], "page_size": [None, 1, 64]}
OUTPUTS = ("attention_backend", "page_size")
MATRIX = (
    f"name: class\ntarget: {{path: {PKG}/pipeline.py, entry: run_resolution_pipeline, "
    "output: [attention_backend, page_size]}\nworld: sglang\naxes:\n"
    "  attention_backend: [null, fa4]\n  page_size: [null, 1, 64]\n"
)


def commit(tmp_path: Path, more: str = "") -> tuple[Path, str, Path]:
    files = {**FILES, f"{PKG}/pipeline.py": PIPELINE.format(more=more)}
    sha = FixtureRepo(tmp_path / "repo").commit("class", files)
    for path, text in files.items():
        (tmp_path / "tree" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / path).write_text(text)
    (tmp_path / "m.yaml").write_text(MATRIX)
    return tmp_path / "repo", sha, tmp_path / "m.yaml"


def test_the_class_defaults_and_type_are_the_configurations_class(tmp_path):
    root, sha, matrix = commit(tmp_path)
    found = harness_outcomes(root, sha, matrix, outputs=OUTPUTS)
    assert found == plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)


@pytest.mark.parametrize(
    "more, what",
    [
        ("    server_args.page_size = len(ServerArgs.tags)\n", "ServerArgs.tags"),
        ("    server_args.page_size = ServerArgs.from_cli_args\n", "ServerArgs.from_cli_args"),
    ],
)
def test_what_the_class_declares_no_literal_default_for_is_refused(tmp_path, more, what):
    """`tags` has a default_factory (no class attribute: Python raises AttributeError);
    a method's code is not run: either read is refused (exit 4), naming it."""
    root, sha, matrix = commit(tmp_path, more)
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"].get("base", "")
    assert done.code == 4 and f"{what} is read at" in note, note
