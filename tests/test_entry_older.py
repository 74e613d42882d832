"""What SGLang's `__post_init__` of 0.5.2 to 0.5.6 reads, answered by the sglang world:
the model's override arguments read with `json.loads` or `orjson.loads`, and the model
configuration `get_model_config()` makes and keeps in `self.model_config` (or
`ModelConfig.from_server_args(self)` makes).

Each fixture is a `server_args.py` shaped as those releases', in our own words; the
expected outcome of every cell comes from running it in plain Python (constructing
`ServerArgs`), with SGLang's model configuration answered per cell as the world's
documented facts say. orjson is not installed here: the texts the plain run reads with
Python's parser in its place are ones orjson reads alike (checked against orjson itself
when they were written); where orjson differs, harness refuses, which is tested apart.
"""

from __future__ import annotations

import itertools
import json
import sys
import types
from pathlib import Path

import pytest

from harness.engine.outcome import ERROR
from harness.testing.gitrepo import FixtureRepo
from tests.test_entry import harness_outcomes
from tests.test_entry_class import diff_note

ARGS = "python/sglang/srt/server_args.py"
JSON_ARGS = '''\
"""Server arguments, resolved in place by `__post_init__`."""

import dataclasses
import json
from typing import Optional

import orjson


@dataclasses.dataclass
class ServerArgs:
    page_size: Optional[int] = None
    attention_backend: Optional[str] = None
    json_model_override_args: str = "{{}}"

    def __post_init__(self):
        overrides = {reader}.loads(self.json_model_override_args)
        if isinstance(overrides, dict) and "page_size" in overrides:
            self.page_size = overrides["page_size"]
        elif self.page_size is None:
            self.page_size = 1
        self.attention_backend = type(overrides).__name__
'''
TEXTS = ['{}', '{"page_size": 16}', '{"page_size": 2.5e1}', "[1, 2]", '"x"',
         '{"page_size": -9223372036854775808}', ' {"a": {"b": [null, true, "\\u00e9"]}} ']  # fmt: skip
MODEL_ARGS = '''\
"""Server arguments, resolved in place by `__post_init__`."""

import dataclasses
from typing import Optional


@dataclasses.dataclass
class ServerArgs:
    page_size: Optional[int] = None
    attention_backend: Optional[str] = None

    def __post_init__(self):
        from sglang.srt.configs.model_config import ModelConfig

        self.page_size = 2 if hasattr(self, "model_config") else 3
        made = self.get_model_config()
        self.attention_backend = "kept" if made is self.model_config else "made again"
        if made.hf_config.architectures[0] == "Qwen3ForCausalLM":
            self.page_size += 10
        if ModelConfig.from_server_args(self).hf_config.architectures[0].startswith("Llama"):
            self.page_size += 100

    def get_model_config(self):
        from sglang.srt.configs.model_config import ModelConfig

        if hasattr(self, "model_config"):
            return self.model_config
        self.model_config = ModelConfig.from_server_args(self)
        return self.model_config
'''


def matrix_text(axes: dict[str, list], outputs: str = "page_size, attention_backend") -> str:
    lines = "".join(f"  {name}: {json.dumps(values)}\n" for name, values in axes.items())
    return (f"name: older\ntarget:\n  path: {ARGS}\n  entry: ServerArgs.__post_init__\n"
            f"  output: [{outputs}]\nworld: sglang\naxes:\n{lines}")  # fmt: skip


def commit(tmp_path: Path, text: str, axes: dict[str, list]) -> tuple[Path, str, Path]:
    sha = FixtureRepo(tmp_path / "repo").commit("older", {ARGS: text})
    (tmp_path / "m.yaml").write_text(matrix_text(axes))
    return tmp_path / "repo", sha, tmp_path / "m.yaml"


def plain(text: str, axes: dict[str, list], modules) -> list:
    """Per cell, `ServerArgs(**inputs)` of `text` in plain Python, with `modules(cell)`
    standing in for SGLang's and its dependencies' by name (the axes in WORLD are theirs
    to answer, not the configuration's)."""
    found = []
    for values in itertools.product(*axes.values()):
        cell = dict(zip(axes, values, strict=True))
        module = types.ModuleType("sglang.srt.server_args")
        stubs = {**modules(cell), module.__name__: module}
        saved = {name: sys.modules.get(name) for name in stubs}
        sys.modules.update(stubs)
        try:
            exec(compile(text, "server_args.py", "exec"), module.__dict__)
            try:
                made = module.ServerArgs(**{k: v for k, v in cell.items() if k not in WORLD})
            except Exception as exc:  # every error is an outcome, as the harness has it
                found.append((ERROR, f"{type(exc).__name__}: {exc}"))
                continue
            found.append((made.page_size, made.attention_backend))
        finally:
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module
    return found


WORLD = ("architecture",)


def parsers(cell: dict) -> dict[str, types.ModuleType]:
    orjson = types.ModuleType("orjson")
    orjson.loads = json.loads  # for TEXTS, which orjson reads alike
    return {"orjson": orjson}


@pytest.mark.parametrize("reader", ["json", "orjson"])
def test_json_text_is_read_as_the_parser_reads_it(tmp_path, reader):
    text = JSON_ARGS.format(reader=reader)
    axes = {"json_model_override_args": TEXTS, "page_size": [None, 1]}
    root, sha, matrix = commit(tmp_path, text, axes)
    expected = plain(text, axes, parsers)
    assert (
        harness_outcomes(root, sha, matrix, outputs=("page_size", "attention_backend")) == expected
    )
    assert (16, "dict") in expected and (1, "list") in expected and (25.0, "dict") in expected


def test_python_parsers_errors_are_its_own_and_orjsons_differences_refused(tmp_path):
    """Python's parser fails on bad JSON with its own message (the cell's error, as in
    SGLang); orjson reads some texts otherwise than Python's parser (NaN, 1e400, an
    integer past 64 bits, a lone surrogate) or fails with a message of its own: refused,
    exit 4, naming the read."""
    bad = {"json_model_override_args": ['{"a": 1'], "page_size": [None]}
    text = JSON_ARGS.format(reader="json")
    root, sha, matrix = commit(tmp_path / "json", text, bad)
    expected = plain(text, bad, parsers)
    assert expected[0][0] == ERROR and "JSONDecodeError" in expected[0][1]
    assert (
        harness_outcomes(root, sha, matrix, outputs=("page_size", "attention_backend")) == expected
    )
    unlike = ["NaN", "1e400", "18446744073709551616", '"\\ud800"', '{"a": 1', "[" * 901 + "]" * 901]
    for n, json_text in enumerate(unlike):
        axes = {"json_model_override_args": [json_text], "page_size": [None]}
        code, note = diff_note(*commit(tmp_path / str(n), JSON_ARGS.format(reader="orjson"), axes))
        assert code == 4 and "orjson.loads of" in note, (json_text, note)
    axes = {"json_model_override_args": ["{}"], "page_size": [None]}
    other = JSON_ARGS.format(reader="orjson").replace(".loads(", ".dumps(")
    code, note = diff_note(*commit(tmp_path / "dumps", other, axes))
    assert code == 4 and "orjson.dumps" in note, note


def model_modules(cell: dict) -> dict[str, types.ModuleType]:
    """SGLang's model configuration module, answering the cell's architecture."""
    config = types.ModuleType("sglang.srt.configs.model_config")

    class ModelConfig:
        @classmethod
        def from_server_args(cls, server_args):
            made = cls()
            made.hf_config = types.SimpleNamespace(architectures=[cell["architecture"]])
            return made

    config.ModelConfig = ModelConfig
    return {"sglang.srt.configs.model_config": config}


def test_get_model_config_keeps_one_model_configuration_made_at_its_first_call(tmp_path):
    """`self.model_config` is missing until `get_model_config()` runs, then the object it
    returns; `ModelConfig.from_server_args(self)` answers the same facts."""
    axes = {"architecture": ["LlamaForCausalLM", "Qwen3ForCausalLM"], "page_size": [None, 1]}
    root, sha, matrix = commit(tmp_path, MODEL_ARGS, axes)
    expected = plain(MODEL_ARGS, axes, model_modules)
    assert (
        harness_outcomes(root, sha, matrix, outputs=("page_size", "attention_backend")) == expected
    )
    assert expected == [(103, "kept"), (103, "kept"), (13, "kept"), (13, "kept")]
