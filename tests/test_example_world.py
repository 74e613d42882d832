"""A world that is not SGLang: TinyServe, a made-up engine (harness.engine.worlds.example).

Its code registers rules with `@config_rule`, not `@register_post_process`; runs
them from `EngineConfig.finalize`, in an order that is not the file's; declares
its fields' defaults on `EngineConfig`; hands its helpers the config as
`config`; and defines `device_name()` in `tinyserve/platform.py`, which the
world answers from the input `device`. The harness reads all of that from the
world's one module: these tests run the real CLI on a TinyServe-shaped
repository and compare it with the fixture's own rules run in plain Python, in
the order the fixture's `finalize` calls them.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli

ROOT = "src/tinyserve"
RULES = f"{ROOT}/rules.py"
PLATFORM = f"{ROOT}/platform.py"

INIT = '"""TinyServe: a made-up serving engine (a harness test fixture)."""\n'

CONFIG = '''\
"""The engine's configuration, and the order its rules settle it in."""

from dataclasses import dataclass
from typing import Optional

from tinyserve.rules import batch_default, kv_block_for_device, quantized_tokens


@dataclass
class EngineConfig:
    batch_size: Optional[int] = None
    quantization: Optional[str] = None
    kv_block: int = 16
    max_tokens: int = 4096

    def finalize(self):
        self._apply(kv_block_for_device)
        self._apply(quantized_tokens)
        self._apply(batch_default)

    def _apply(self, rule):
        for name, value in rule(self).items():
            setattr(self, name, value)
'''
ORDER = ("kv_block_for_device", "quantized_tokens", "batch_default")  # as finalize runs them

PLATFORM_TEXT = '''\
"""What the machine is."""

import os


def device_name():
    """The accelerator this process runs on."""
    return os.environ.get("TINYSERVE_DEVICE", "{default}")
'''

RULES_TEXT = '''\
"""The rules that settle the engine's configuration, a few fields at a time."""

import logging

from tinyserve.platform import device_name

logger = logging.getLogger(__name__)
RULES = []


def config_rule(fn):
    RULES.append(fn)
    return fn


def register_post_process(fn):
    return fn


def _per_device(config):
    if device_name() == "tpu":
        return 128
    return 16 if config.quantization {compare} else 32


@config_rule
def batch_default(config):
    if config.batch_size is None:
        return {{"batch_size": 8 if device_name() == "cpu" else 64}}
    return {{}}


@config_rule
def quantized_tokens(config):
    if config.quantization == "int4" and config.kv_block > 16:
        logger.info("int4 with large blocks: doubling max_tokens")
        return {{"max_tokens": config.max_tokens * 2}}
    return {{}}


@config_rule
def kv_block_for_device(config):
    return {{"kv_block": _per_device(config)}}


@register_post_process
def not_a_rule(config):
    return {{"max_tokens": 1}}
'''
BASE, HEAD = "is None", '!= "fp8"'  # `_per_device`'s one edit

AXES = {"device": ["cpu", "cuda", "tpu"], "batch_size": [None, 4],
        "quantization": [None, "int4", "fp8"]}  # fmt: skip
OUTPUTS = ("batch_size", "kv_block", "max_tokens")
MATRIX = f"""\
name: tinyserve-rules
target:
  path: {RULES}
  passes: run-order
  output: [{", ".join(OUTPUTS)}]
world: example
axes:
  device: [cpu, cuda, tpu]
  batch_size: [null, 4]
  quantization: [null, int4, fp8]
"""


def files(compare: str, default: str = "cpu") -> dict[str, str]:
    return {
        f"{ROOT}/__init__.py": INIT,
        f"{ROOT}/config.py": CONFIG,
        PLATFORM: PLATFORM_TEXT.format(default=default),
        RULES: RULES_TEXT.format(compare=compare),
    }


def repository(tmp_path: Path, *versions: dict[str, str]) -> list[str]:
    repo = FixtureRepo(tmp_path / "repo")
    (tmp_path / "m.yaml").write_text(MATRIX)
    return [repo.commit(f"version {n}", files) for n, files in enumerate(versions)]


def harness(tmp_path: Path, *argv: str):
    return run_cli(*argv, "--repo", str(tmp_path / "repo"), "--matrix", str(tmp_path / "m.yaml"),
                   "--no-cache")  # fmt: skip


def plain_outcome(rules: str, cell: dict) -> tuple:
    """The fixture's rules run in plain Python on the cell, in `finalize`'s order, over an
    object holding EngineConfig's defaults and the cell's values."""
    namespace: dict = {}
    body = rules.replace("from tinyserve.platform import device_name\n", "")
    exec(compile(body, RULES, "exec"), namespace)  # the test's own fixture text
    namespace["device_name"] = lambda: cell["device"]
    config = type("Config", (), {})()
    config.__dict__.update(kv_block=16, max_tokens=4096)
    config.__dict__.update({k: v for k, v in cell.items() if k != "device"})
    for name in ORDER:
        config.__dict__.update(namespace[name](config))
    return tuple(getattr(config, name) for name in OUTPUTS)


def test_a_diff_in_the_example_world_equals_its_rules_run_in_plain_python(tmp_path):
    base, head = RULES_TEXT.format(compare=BASE), RULES_TEXT.format(compare=HEAD)
    expected = {}
    for values in itertools.product(*AXES.values()):
        cell = dict(zip(AXES, values, strict=True))
        sides = plain_outcome(base, cell), plain_outcome(head, cell)
        if sides[0] != sides[1]:
            expected[values] = sides
    assert 0 < len(expected) < 18
    shas = repository(tmp_path, files(BASE), files(HEAD))
    done = harness(tmp_path, "diff", *shas, "--format", "json")
    report = json.loads(done.out)
    found = {
        tuple(c["cell"][axis] for axis in AXES): tuple(
            tuple(c[side][name] for name in OUTPUTS) for side in ("base", "head")
        )
        for c in report["changed"]
    }
    assert done.code == 1 and found == expected, report


def test_the_passes_are_the_worlds_registered_rules_in_finalize_s_order(tmp_path):
    (sha,) = repository(tmp_path, files(BASE))
    done = harness(tmp_path, "passes", sha, "--format", "json")
    assert done.code == 0, done.err
    passes = json.loads(done.out)["passes"]
    listed = [p["name"] for p in sorted(passes, key=lambda p: p["order"])]
    registered = [
        node.name
        for node in ast.parse(RULES_TEXT.format(compare=BASE)).body
        if isinstance(node, ast.FunctionDef)
        and any(getattr(d, "id", None) == "config_rule" for d in node.decorator_list)
    ]
    assert sorted(listed) == sorted(registered) and "not_a_rule" not in listed
    assert tuple(listed) == ORDER


def test_a_changed_home_of_what_the_world_answers_is_a_blind_spot_named_for_tinyserve(tmp_path):
    shas = repository(tmp_path, files(BASE), files(BASE, default="cuda"))
    done = harness(tmp_path, "diff", *shas, "--format", "json")
    report = json.loads(done.out)
    hints = [spot["hint"] for spot in report["blind_spots"]]
    assert done.code == 4 and report["changed"] == [], report
    assert any(h.startswith("TinyServe's definition of device_name") for h in hints), hints
    assert not any("SGLang" in h for h in hints), hints


NEW_CONFIG = "return {}\n\n\n@config_rule\ndef quantized"  # batch_default's end


@pytest.mark.parametrize(
    ("edit", "replacement", "said"),
    [
        ("from tinyserve.platform import device_name\n",
         "\ndef device_name():\n    return 'x'\n", "TinyServe would run the file's own"),
        ('if device_name() == "tpu":', 'if repr(device_name) == "tpu":',
         "TinyServe's answer names its object's memory address"),
        (NEW_CONFIG, NEW_CONFIG.replace("{}", "{'n': type(config)()}", 1),
         "the world stands in for TinyServe's object"),
    ],
    ids=["own-definition", "repr-of-a-function", "new-config-object"],
)  # fmt: skip
def test_messages_name_the_world_s_project(tmp_path, edit, replacement, said):
    rules = RULES_TEXT.format(compare=BASE)
    assert edit in rules
    own = rules.replace(edit, replacement)
    shas = repository(tmp_path, files(BASE), {**files(BASE), RULES: own})
    done = harness(tmp_path, "diff", *shas)
    assert done.code == 4 and said in done.out + done.err, done.out + done.err
    assert "SGLang" not in done.out + done.err


def test_a_new_world_is_one_module_and_one_registry_line():
    """Nothing of the harness outside the example world's module names it but the registry:
    its import and its entry."""
    package = Path(__file__).resolve().parents[1] / "harness"
    naming = re.compile(r"worlds\.example|\bexample\.|import .*\bexample\b|\"example\"|tinyserve",
                        re.IGNORECASE)  # fmt: skip
    found = {
        (str(path.relative_to(package)), line.strip())
        for path in package.rglob("*.py")
        if path.name != "example.py"
        for line in path.read_text().splitlines()
        if naming.search(line)
    }
    assert {path for path, _ in found} == {"engine/worlds/__init__.py"}, found
    assert len(found) == 2, found


def test_an_unknown_world_lists_the_example_among_the_known(tmp_path):
    repository(tmp_path, files(BASE))
    (tmp_path / "m.yaml").write_text(MATRIX.replace("world: example", "world: nosuch"))
    done = harness(tmp_path, "diff", "HEAD", "HEAD")
    assert done.code == 2 and "known: example, plain, sglang" in done.err, done.err
    assert len(done.err.strip().splitlines()) == 1
