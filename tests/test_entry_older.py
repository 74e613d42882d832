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

{first}        self.page_size = (self.page_size or 0) + (2 if hasattr(self, "model_config") else 3)
        made = self.get_model_config()
        self.attention_backend = "kept" if made is self.model_config else "made again"
        if made == [7]:
            self.attention_backend = "mine"
            return
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

    def use_mla_backend(self):
        from sglang.srt.configs.model_config import AttentionArch

        model_config = self.get_model_config()
        return model_config.attention_arch == AttentionArch.MLA
'''
# what else 0.5.6's methods let the code do before it asks for the model configuration
MODEL_FIRST = {
    "nothing": "",
    "written": "        mine = [7]\n        self.model_config = mine\n",
    "mla": "        self.page_size = 1000 if self.use_mla_backend() else 2000\n",
}


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


WORLD = ("architecture", "use_mla")


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
    """SGLang's model configuration module, answering the cell's architecture (and MHA:
    the matrix's `use_mla` is false)."""
    config = types.ModuleType("sglang.srt.configs.model_config")

    class ModelConfig:
        @classmethod
        def from_server_args(cls, server_args):
            made = cls()
            made.hf_config = types.SimpleNamespace(architectures=[cell["architecture"]])
            made.attention_arch = "MHA"
            return made

    config.ModelConfig = ModelConfig
    config.AttentionArch = types.SimpleNamespace(MLA="MLA", MHA="MHA")
    return {"sglang.srt.configs.model_config": config}


@pytest.mark.parametrize("first", list(MODEL_FIRST))
def test_get_model_config_is_the_classs_own_method(tmp_path, first):
    """An entry runs `ServerArgs.get_model_config()` as written: `self.model_config` is
    missing until it (or `use_mla_backend()`, which calls it) runs, then what it kept;
    what the code assigned there first is what it returns. `ModelConfig.from_server_args`
    answers the model's facts."""
    text = MODEL_ARGS.replace("{first}", MODEL_FIRST[first])
    axes = {"architecture": ["LlamaForCausalLM", "Qwen3ForCausalLM"], "use_mla": [False],
            "page_size": [None, 1]}  # fmt: skip
    root, sha, matrix = commit(tmp_path, text, axes)
    expected = plain(text, axes, model_modules)
    found = harness_outcomes(root, sha, matrix, outputs=("page_size", "attention_backend"))
    assert found == expected
    wanted = {"nothing": [(103, "kept"), (104, "kept"), (13, "kept"), (14, "kept")],
              "written": [(2, "mine"), (3, "mine")] * 2,
              "mla": [(2102, "kept")] * 2 + [(2012, "kept")] * 2}  # fmt: skip
    assert expected == wanted[first]


CALLS = {
    "keyword": "json.loads(s=self.json_model_override_args)",
    "not-strict": "json.loads(self.json_model_override_args, strict=False)",
    "unknown-keyword": "json.loads(self.json_model_override_args, strictly=False)",
    "no-argument": "json.loads()",
    "orjson-keyword": "orjson.loads(obj=self.json_model_override_args)",
    "orjson-bytes": "orjson.loads(self.json_model_override_args.encode())",
    # Python's parser finds the encoding of bytes (each codec it may use is loaded before
    # the walls go up: a codec looked up in the sandbox would read a file)
    "utf-8-sig": 'json.loads(self.json_model_override_args.encode("utf-8-sig"))',
    "utf-16-le": 'json.loads(self.json_model_override_args.encode("utf-16-le"))',
    "utf-32-be": 'json.loads(self.json_model_override_args.encode("utf-32-be"))',
}


def orjson_as_it_calls(cell: dict) -> dict[str, types.ModuleType]:
    """orjson's `loads` as it takes its argument (positional only, its own message for a
    keyword: checked against orjson itself), reading these texts as Python's parser."""
    orjson = types.ModuleType("orjson")

    def loads(*args, **kwargs):
        if kwargs:
            raise TypeError("orjson.loads() takes no keyword arguments")
        (text,) = args
        return json.loads(text)

    orjson.loads = loads
    return {"orjson": orjson}


@pytest.mark.parametrize("call", list(CALLS.values()), ids=list(CALLS))
def test_the_parsers_take_their_arguments_as_python_and_orjson_do(tmp_path, call):
    text = JSON_ARGS.replace("{reader}.loads(self.json_model_override_args)", call)
    text = text.replace("{{}}", "{}")
    texts = ['{"page_size": 16}', '{"a": "x\ty"}']  # (a raw tab: strict=False reads it)
    if call.startswith("orjson"):  # (a text orjson fails on is refused: tested below)
        texts = texts[:1]
    axes = {"json_model_override_args": texts, "page_size": [None]}
    root, sha, matrix = commit(tmp_path, text, axes)
    expected = plain(text, axes, orjson_as_it_calls)
    assert (
        harness_outcomes(root, sha, matrix, outputs=("page_size", "attention_backend")) == expected
    )


@pytest.mark.parametrize(
    "call, what",
    [
        ("json.loads(self.json_model_override_args, object_hook=dict)", "object_hook"),
        ('orjson.loads(b"\\xef\\xbb\\xbf" + self.json_model_override_args.encode())',
         "orjson.loads of"),
        ('orjson.loads(b"\\xff" + self.json_model_override_args.encode())', "orjson.loads of"),
        ('json.loads("[" * 5000 + "]" * 5000)', "nested this deep"),
    ],
    ids=["hook", "bom", "not-utf8", "deep"],
)  # fmt: skip
def test_what_the_parsers_would_answer_otherwise_is_refused(tmp_path, call, what):
    text = JSON_ARGS.replace("{reader}.loads(self.json_model_override_args)", call)
    text = text.replace("{{}}", "{}")
    axes = {"json_model_override_args": ["{}"], "page_size": [None]}
    code, note = diff_note(*commit(tmp_path, text, axes))
    assert code == 4 and what in note, note
