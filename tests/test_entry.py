"""An entry target (`target: {entry: run_resolution_pipeline}`): the resolution as the
project's own entry point runs it, its handlers with their `if`s, early returns,
asserts and raised validations, the passes they call in their order, and the fields
they assign or declare on the configuration they are handed.

A small SGLang-shaped repository is built in tmp_path: `pipeline.py` runs a
speculative handler and two passes through `run_hook` and `run_post_process_pass`,
declares through `declare_resolution` and assigns one field itself. Each commit
changes one thing a handler does. The expected outcome of every cell comes from
running that commit's own files in plain Python (the package imported from a
directory, `get_platform()` answered per cell as SGLang's runtime would), never
from harness.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
import types
from pathlib import Path

import pytest

from harness.engine.outcome import ERROR
from harness.engine.outputs import Inputs, declared
from harness.matrix.load import load_matrix
from harness.testing.gitrepo import FixtureRepo
from tests.conftest import one_line_error, run_cli
from tests.helpers import evaluate_at

PKG = "python/sglang/srt/arg_groups"
SERVER_ARGS = '''\
# Written for harness's tests, shaped like SGLang's server_args.py.
"""Server arguments: one dataclass, its defaults declared field by field."""

from __future__ import annotations

import dataclasses
from typing import Optional


@dataclasses.dataclass
class ServerArgs:
    model_path: str = "meta-llama/Llama-3.1-8B-Instruct"
    attention_backend: Optional[str] = None
    page_size: Optional[int] = None
    speculative_algorithm: Optional[str] = None
    speculative_eagle_topk: Optional[int] = None
    speculative_num_steps: Optional[int] = None
'''

OVERRIDES = '''\
# Written for harness's tests, shaped like SGLang's overrides.py.
"""Post-process passes, and the functions that run them and record what they declare."""

from __future__ import annotations

from typing import Any, Callable

from sglang.srt.arg_groups.model_override_base import resolving_view  # noqa: F401
from sglang.srt.runtime_context import get_platform

POST_PROCESS_PASSES: list = []


def register_post_process(fn: Callable[..., dict]) -> Callable[..., dict]:
    POST_PROCESS_PASSES.append(fn)
    return fn


def run_post_process_pass(server_args: Any, fn: Callable[..., dict]) -> None:
    declared = fn(server_args)
    if not isinstance(declared, dict):
        raise TypeError(
            f"post-process pass {{fn.__qualname__}} must return a dict, "
            f"got {{type(declared).__name__}}"
        )
    declare_resolution(server_args, fn.__qualname__, **declared)


def declare_resolution(server_args: Any, source: str, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(server_args, name, value)


@register_post_process
def _attention_backend_default(view: Any) -> dict:
    if view.attention_backend is not None:
        return {{}}
    return {{"attention_backend": "fa4" if get_platform().is_sm100 else "fa3"}}


@register_post_process
def _page_size_default(view: Any) -> dict:
    return {{"page_size": {page_default}}} if view.page_size is None else {{}}
'''

HOOKS = '''\
"""Plugin overrides for named resolution steps (none registered here)."""

_HOOKS: dict = {}


def run_hook(builtin, server_args) -> None:
    step = builtin
    for fn in _HOOKS.get(builtin.__name__, ()):
        step = fn
    step(server_args)
'''

SPECULATIVE = '''\
"""The speculative-decoding handler."""

from sglang.srt.arg_groups.overrides import declare_resolution, resolving_view


def handle_speculative_decoding(server_args) -> None:
    cfg = resolving_view(server_args)
    if cfg.speculative_algorithm is None:
        return
{check}    if cfg.speculative_eagle_topk is None:
        declare_resolution(server_args, "speculative", speculative_eagle_topk={topk_default})
    if cfg.speculative_eagle_topk > 1 and cfg.page_size not in (None, 1):
        raise ValueError(
            f"speculative_eagle_topk {{cfg.speculative_eagle_topk}} needs page size 1"
        )
'''
STEPS_CHECK = (
    "    if cfg.speculative_eagle_topk is not None:\n"
    '        assert cfg.speculative_num_steps is not None, "set the number of steps"\n'
)

BASE = '''\
"""The helpers every handler reads the configuration through."""


def resolving_view(server_args):
    return server_args
'''

PIPELINE = '''\
# Written for harness's tests, shaped like SGLang's pipeline.py.
"""Ordered configuration resolution."""

from __future__ import annotations

from typing import Any

from sglang.srt.arg_groups.overrides import (
    _attention_backend_default,
    _page_size_default,
    run_post_process_pass,
)
from sglang.srt.arg_groups.resolution_hooks import run_hook


def run_resolution_pipeline(server_args: Any) -> None:
    """Resolve the server arguments in dependency order."""
    from sglang.srt.arg_groups.speculative_hook import handle_speculative_decoding

    run_post_process_pass(server_args, _attention_backend_default)
    run_hook(handle_speculative_decoding, server_args)
    if server_args.attention_backend == "fa4" and {fa4_condition}:
        server_args.page_size = 128
    run_post_process_pass(server_args, _page_size_default)
'''

# Each commit's knobs, oldest first; each changes one thing the resolution does.
VERSIONS = {
    "initial": dict(check="", topk_default=1, page_default=1,
                    fa4_condition="server_args.speculative_eagle_topk in (None, 1)"),
    "assert": dict(check=STEPS_CHECK, topk_default=1, page_default=1,
                   fa4_condition="server_args.speculative_eagle_topk in (None, 1)"),
    "declared": dict(check=STEPS_CHECK, topk_default=4, page_default=1,
                     fa4_condition="server_args.speculative_eagle_topk in (None, 1)"),
    "assigned": dict(check=STEPS_CHECK, topk_default=4, page_default=1,
                     fa4_condition="server_args.page_size is None"),
    "pass": dict(check=STEPS_CHECK, topk_default=4, page_default=16,
                 fa4_condition="server_args.page_size is None"),
}  # fmt: skip

AXES = {
    "attention_backend": [None, "fa3", "fa4"],
    "platform": ["sm90", "sm100"],
    "page_size": [None, 1, 64],
    "speculative_algorithm": [None, "EAGLE"],
    "speculative_eagle_topk": [None, 1, 4],
    "speculative_num_steps": [None, 3],
}
OUTPUTS = ("attention_backend", "page_size", "speculative_eagle_topk")
MATRIX = f"""\
name: entry-test
target:
  path: {PKG}/pipeline.py
  entry: run_resolution_pipeline
  output: [{", ".join(OUTPUTS)}]
world: sglang
axes:
""" + "".join(
    f"  {name}: [{', '.join('null' if v is None else str(v) for v in values)}]\n"
    for name, values in AXES.items()
)


def files(version: dict) -> dict[str, str]:
    return {
        "python/sglang/srt/server_args.py": SERVER_ARGS,
        f"{PKG}/__init__.py": "",
        f"{PKG}/model_override_base.py": BASE,
        f"{PKG}/overrides.py": OVERRIDES.format(page_default=version["page_default"]),
        f"{PKG}/resolution_hooks.py": HOOKS,
        f"{PKG}/speculative_hook.py": SPECULATIVE.format(
            check=version["check"], topk_default=version["topk_default"]
        ),
        f"{PKG}/pipeline.py": PIPELINE.format(fa4_condition=version["fa4_condition"]),
    }


def cells() -> list[dict]:
    return [dict(zip(AXES, values, strict=True)) for values in itertools.product(*AXES.values())]


@contextlib.contextmanager
def imported(root: Path, platform: str):
    """The package written at `root` imported by plain Python, with SGLang's runtime
    answering `get_platform()` for `platform`; sys.modules and sys.path restored after."""
    saved = {k: v for k, v in sys.modules.items() if k == "sglang" or k.startswith("sglang.")}
    sys.path.insert(0, str(root / "python"))
    runtime = types.ModuleType("sglang.srt.runtime_context")
    runtime.get_platform = lambda: types.SimpleNamespace(is_sm100=platform == "sm100")
    try:
        for name in [k for k in sys.modules if k == "sglang" or k.startswith("sglang.")]:
            del sys.modules[name]
        sys.modules["sglang.srt.runtime_context"] = runtime
        from sglang.srt.arg_groups.pipeline import run_resolution_pipeline
        from sglang.srt.server_args import ServerArgs

        yield ServerArgs, run_resolution_pipeline
    finally:
        sys.path.remove(str(root / "python"))
        for name in [k for k in sys.modules if k == "sglang" or k.startswith("sglang.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def plain_outcomes(root: Path) -> list:
    """Per cell (matrix order), what the files at `root` resolve, run in plain Python:
    the output fields' values, or ("error", "Type: message")."""
    found = []
    for cell in cells():
        inputs = {k: v for k, v in cell.items() if k != "platform"}
        with imported(root, cell["platform"]) as (server_args_class, run):
            server_args = server_args_class(**inputs)
            try:
                run(server_args)
            except Exception as exc:  # every error is an outcome, as the harness has it
                found.append((ERROR, f"{type(exc).__name__}: {exc}".rstrip(": ")))
                continue
        found.append(tuple(getattr(server_args, f) for f in OUTPUTS))
    return found


def write_tree(root: Path, version: dict) -> Path:
    for path, text in files(version).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Path, dict[str, str], Path, dict[str, list]]:
    root = tmp_path_factory.mktemp("entry")
    fixture = FixtureRepo(root / "repo")
    shas = {key: fixture.commit(f"{key} (#{n})", files(v))
            for n, (key, v) in enumerate(VERSIONS.items(), 1)}  # fmt: skip
    matrix = root / "entry.yaml"
    matrix.write_text(MATRIX)
    expected = {key: plain_outcomes(write_tree(root / "trees" / key, v))
                for key, v in VERSIONS.items()}  # fmt: skip
    return root / "repo", shas, matrix, expected


def harness_outcomes(root: Path, sha: str, matrix_path: Path, exhaustive: bool) -> list:
    matrix = load_matrix(str(matrix_path))
    table = evaluate_at(root, sha, matrix, exhaustive=exhaustive).table
    inputs = Inputs(matrix)
    found = []
    for index in range(matrix.size):
        outcome = table.outcome_at(index)
        fields = declared(outcome, OUTPUTS)
        if fields is None:
            found.append((outcome.kind, outcome.value))
        else:
            found.append(tuple(fields[f] if f in fields else inputs.one(f, index) for f in OUTPUTS))
    return found


def changed(expected: dict, base: str, head: str) -> int:
    return sum(a != b for a, b in zip(expected[base], expected[head], strict=True))


@pytest.mark.parametrize("key", list(VERSIONS))
def test_every_cell_is_what_the_code_itself_resolves(repo, key):
    root, shas, matrix, expected = repo
    assert harness_outcomes(root, shas[key], matrix, exhaustive=False) == expected[key]


def test_exploring_and_running_every_cell_agree(repo):
    root, shas, matrix, expected = repo
    assert harness_outcomes(root, shas["assert"], matrix, exhaustive=True) == expected["assert"]


def test_the_versions_differ_where_their_code_says(repo):
    """Each commit's change shows on some cells (else the test above proves little): an
    assert, a declared default, an assignment's condition, a pass's value."""
    _, _, _, expected = repo
    keys = list(VERSIONS)
    assert all(changed(expected, a, b) > 0 for a, b in itertools.pairwise(keys))
    assert (ERROR, "AssertionError: set the number of steps") in expected["assert"]
    assert not any(o[0] == ERROR and "Assertion" in o[1] for o in expected["initial"])


@pytest.mark.parametrize("base, head", list(itertools.pairwise(VERSIONS)))
def test_diff_reports_exactly_the_cells_that_change(repo, base, head):
    root, shas, matrix, expected = repo
    done = run_cli("diff", shas[base], shas[head], "--repo", str(root), "--matrix",
                   str(matrix), "--format", "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    assert (done.code, len(report["changed"])) == (1, changed(expected, base, head)), done.err


def test_history_lists_each_commit_that_changes_outcomes(repo):
    root, shas, matrix, expected = repo
    done = run_cli("history", "--repo", str(root), "--matrix", str(matrix), "--format", "json")
    keys = list(VERSIONS)
    want = [(shas[b], changed(expected, a, b)) for a, b in itertools.pairwise(keys)]
    assert [(c["sha"], c["cells_changed"]) for c in json.loads(done.out)["commits"]] == want


PASS_WRITES = '''\
"""A pass that assigns to the view it is handed."""

from sglang.srt.arg_groups.overrides import run_post_process_pass


def _pages(view):
    view.page_size = 8
    return {}


def run_resolution_pipeline(server_args):
    run_post_process_pass(server_args, _pages)
'''
OTHER_OBJECT = '''\
"""Declarations on an object kept at module level, which would outlive the call."""

from sglang.srt.arg_groups.overrides import declare_resolution


class Seen:
    count = 0


SEEN = Seen()


def run_resolution_pipeline(server_args):
    declare_resolution(SEEN, "count", count=SEEN.count + 1)
    server_args.page_size = SEEN.count
'''


@pytest.mark.parametrize(
    "text, line, what",
    [
        (PASS_WRITES, "    view.page_size = 8", "view.page_size"),
        (OTHER_OBJECT, '    declare_resolution(SEEN, "count", count=SEEN.count + 1)',
         "declare_resolution() on an object of type Seen"),
    ],
)  # fmt: skip
def test_a_write_sglang_refuses_or_the_harness_cannot_see_is_refused_by_line(
    tmp_path, text, line, what
):
    """SGLang hands a pass a read-only view, which refuses the assignment; a declaration
    on another object than the configuration is state the next cell would see. Either
    makes the revision unevaluable, with the line: never a page size SGLang never sets."""
    sha = FixtureRepo(tmp_path / "repo").commit("writes", {f"{PKG}/pipeline.py": text})
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX)
    done = run_cli("diff", sha, sha, "--repo", str(tmp_path / "repo"), "--matrix", str(matrix),
                   "--format", "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"]["base"]
    number = text.splitlines().index(line) + 1
    assert done.code == 4 and what in note and f"pipeline.py:{number}" in note, note


@pytest.mark.parametrize(
    "target, wrong",
    [
        ("{path: a.py, entry: run, function: run, output: x}", "needs one of"),
        ("{path: a.py, entry: 'run me', output: x}", "'run me' is not a function name"),
        ("{path: a.py, entry: a.b.c, output: x}", "'a.b.c' is not a function name"),
    ],
)
def test_a_bad_entry_is_one_line_naming_the_key(tmp_path, target, wrong):
    matrix = tmp_path / "bad.yaml"
    matrix.write_text(f"name: bad\ntarget: {target}\naxes:\n  x: [1, 2]\n")
    line = one_line_error(run_cli("matrix", "--matrix", str(matrix)))
    assert "target" in line and wrong in line and str(matrix) in line, line


# --- before the registry: ServerArgs.__post_init__ and its `_handle_*` methods ---------

POST_INIT = '''\
# Written for harness's tests, shaped like SGLang's server_args.py before the registry.
"""Server arguments, resolved in place by `__post_init__`."""

from __future__ import annotations

import dataclasses
import logging
from typing import Optional

from sglang.srt.utils import is_sm100_supported

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class ServerArgs:
    model_path: str = "meta-llama/Llama-3.1-8B-Instruct"
    attention_backend: Optional[str] = None
    page_size: Optional[int] = None
    speculative_algorithm: Optional[str] = None
    speculative_eagle_topk: Optional[int] = None

    def __post_init__(self):
        self._handle_attention_backend()
        self._handle_speculative_decoding()
        self._handle_page_size()

    def _handle_attention_backend(self):
        if self.attention_backend is None:
            self.attention_backend = "fa4" if is_sm100_supported() else "fa3"

    def _handle_speculative_decoding(self):
        if self.speculative_algorithm is None:
            return
        if self.speculative_eagle_topk is None:
            self.speculative_eagle_topk = {topk_default}
        assert self.speculative_eagle_topk == 1 or self.page_size in (None, 1), (
            "topk above one needs page size 1"
        )

    def _handle_page_size(self):
        if self.attention_backend == "fa4" and {fa4_condition}:
            logger.info("page size 128 for fa4")
            self.page_size = 128
            return
        if self.page_size is None:
            self.page_size = 1
'''
POST_INIT_VERSIONS = {
    "initial": dict(topk_default=1, fa4_condition="(self.speculative_eagle_topk or 0) <= 1"),
    "topk": dict(topk_default=4, fa4_condition="(self.speculative_eagle_topk or 0) <= 1"),
    "unset": dict(topk_default=4, fa4_condition="self.page_size is None"),
}
POST_INIT_AXES = {k: v for k, v in AXES.items() if k != "speculative_num_steps"}
POST_INIT_MATRIX = f"""\
name: post-init-test
target:
  path: python/sglang/srt/server_args.py
  entry: ServerArgs.__post_init__
  output: [{", ".join(OUTPUTS)}]
world: sglang
axes:
""" + "".join(
    f"  {name}: [{', '.join('null' if v is None else str(v) for v in values)}]\n"
    for name, values in POST_INIT_AXES.items()
)


def post_init_outcomes(text: str) -> list:
    """Per cell, what `ServerArgs(**inputs)` resolves when `text` is server_args.py, run
    in plain Python with `is_sm100_supported()` answered for the cell's platform."""
    found = []
    for values in itertools.product(*POST_INIT_AXES.values()):
        cell = dict(zip(POST_INIT_AXES, values, strict=True))
        utils = types.ModuleType("sglang.srt.utils")
        utils.is_sm100_supported = lambda platform=cell["platform"]: platform == "sm100"
        space: dict = {"__name__": "sglang.srt.server_args"}
        saved = sys.modules.get("sglang.srt.utils")
        sys.modules["sglang.srt.utils"] = utils
        try:
            sys.modules[space["__name__"]] = types.ModuleType(space["__name__"])
            sys.modules[space["__name__"]].__dict__.update(space)
            exec(compile(text, "server_args.py", "exec"), sys.modules[space["__name__"]].__dict__)
            server_args_class = sys.modules[space["__name__"]].ServerArgs
            try:
                made = server_args_class(**{k: v for k, v in cell.items() if k != "platform"})
            except Exception as exc:  # every error is an outcome, as the harness has it
                found.append((ERROR, f"{type(exc).__name__}: {exc}"))
                continue
            found.append(tuple(getattr(made, f) for f in OUTPUTS))
        finally:
            del sys.modules[space["__name__"]]
            if saved is None:
                del sys.modules["sglang.srt.utils"]
            else:
                sys.modules["sglang.srt.utils"] = saved
    return found


@pytest.fixture(scope="module")
def post_init_repo(tmp_path_factory) -> tuple[Path, dict[str, str], Path, dict[str, list]]:
    root = tmp_path_factory.mktemp("post-init")
    fixture = FixtureRepo(root / "repo")
    texts = {key: POST_INIT.format(**v) for key, v in POST_INIT_VERSIONS.items()}
    shas = {key: fixture.commit(f"{key} (#{n})", {"python/sglang/srt/server_args.py": text})
            for n, (key, text) in enumerate(texts.items(), 1)}  # fmt: skip
    matrix = root / "post-init.yaml"
    matrix.write_text(POST_INIT_MATRIX)
    return root / "repo", shas, matrix, {k: post_init_outcomes(t) for k, t in texts.items()}


@pytest.mark.parametrize("key", list(POST_INIT_VERSIONS))
def test_a_post_init_entry_resolves_every_cell_as_the_class_itself(post_init_repo, key):
    """`entry: ServerArgs.__post_init__`: `self` is the cell's configuration, the
    `_handle_*` methods it calls on `self` run as the class's, and what they assign to
    `self` is the outcome, as constructing the dataclass gives it."""
    root, shas, matrix, expected = post_init_repo
    assert harness_outcomes(root, shas[key], matrix, exhaustive=False) == expected[key]


def test_a_post_init_entry_is_explored_exactly(post_init_repo):
    """Assignments to `self` in the methods are the configuration's, not state: the
    entry is explored (fewer calls than cells), to the same table as every cell."""
    root, shas, matrix_path, expected = post_init_repo
    matrix = load_matrix(str(matrix_path))
    explored = evaluate_at(root, shas["topk"], matrix)
    assert explored.calls < matrix.size
    assert harness_outcomes(root, shas["topk"], matrix_path, exhaustive=True) == expected["topk"]


@pytest.mark.parametrize("base, head", list(itertools.pairwise(POST_INIT_VERSIONS)))
def test_a_post_init_diff_reports_exactly_the_cells_that_change(post_init_repo, base, head):
    root, shas, matrix, expected = post_init_repo
    assert changed(expected, base, head) > 0
    done = run_cli("diff", shas[base], shas[head], "--repo", str(root), "--matrix",
                   str(matrix), "--format", "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    assert (done.code, len(report["changed"])) == (1, changed(expected, base, head)), done.err


@pytest.mark.parametrize(
    "entry, wrong",
    [
        ("Config.__post_init__", "only a method of the class the configuration stands for"),
        ("ServerArgs._missing", "no method _missing of class ServerArgs"),
    ],
)
def test_an_entry_method_that_cannot_run_says_why(post_init_repo, tmp_path, entry, wrong):
    root, shas, matrix, _ = post_init_repo
    other = tmp_path / "other.yaml"
    other.write_text(matrix.read_text().replace("ServerArgs.__post_init__", entry))
    done = run_cli("diff", shas["initial"], shas["topk"], "--repo", str(root), "--matrix",
                   str(other), "--format", "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"]["base"]
    assert done.code == 4 and wrong in note, note


# --- code no cell reaches, and handlers run through run_hook -------------------------

NPU_HOOK = '''\
"""A handler for another platform, with names nothing here binds."""


def handle_npu(server_args):
    if server_args.attention_backend == "ascend":
        load_npu_kernels()
        server_args.page_size = NPU_PAGE_SIZE
    elif server_args.page_size is None:
        server_args.page_size = 16
'''
NPU_PIPELINE = '''\
"""Resolution: one handler, run through run_hook."""

from sglang.srt.arg_groups.resolution_hooks import run_hook


def run_resolution_pipeline(server_args):
    from sglang.srt.arg_groups.npu_hook import handle_npu

    run_hook(handle_npu, server_args)
'''


def npu_repo(tmp_path: Path, backends: str) -> tuple[str, str, Path]:
    root = tmp_path / "repo"
    files = {f"{PKG}/npu_hook.py": NPU_HOOK, f"{PKG}/pipeline.py": NPU_PIPELINE,
             f"{PKG}/resolution_hooks.py": HOOKS}  # fmt: skip
    sha = FixtureRepo(root).commit("npu", files)
    matrix = tmp_path / "npu.yaml"
    matrix.write_text(
        f"name: npu\ntarget: {{path: {PKG}/pipeline.py, entry: run_resolution_pipeline, "
        f"output: page_size}}\nworld: sglang\naxes:\n  attention_backend: [{backends}]\n"
        "  page_size: [null, 1, 64]\n  speculative_algorithm: [null, EAGLE]\n"
    )
    return str(root), sha, matrix


def test_a_name_nothing_binds_is_refused_only_where_a_cell_reaches_it(tmp_path):
    """An entry point holds code for every platform: a name nothing binds on a branch no
    cell takes does not stop the diff; where a cell takes it, the revision is
    unevaluable, naming the name, the line reached and how to bind it."""
    root, sha, matrix = npu_repo(tmp_path, "null, fa3")
    done = run_cli("diff", sha, sha, "--repo", root, "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    assert report["notes"] == {} and report["changed"] == [], report["notes"]
    root, sha, other = npu_repo(tmp_path / "reached", "null, fa3, ascend")
    done = run_cli("diff", sha, sha, "--repo", root, "--matrix", str(other), "--format",
                   "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"]["base"]
    line = NPU_HOOK.splitlines().index("        load_npu_kernels()") + 1
    assert done.code == 4, done.err
    assert f"name load_npu_kernels is read at {PKG}/npu_hook.py:{line}" in note, note
    assert "bindings:" in note and str(other) in note, note


def test_a_function_target_still_refuses_an_unbound_name_before_it_runs(tmp_path):
    """Strictness as before for a function: the same handler as a target is unevaluable
    for its unbound name although no cell reaches it."""
    root, sha, matrix = npu_repo(tmp_path, "null, fa3")
    as_function = tmp_path / "function.yaml"
    as_function.write_text(matrix.read_text().replace(
        f"path: {PKG}/pipeline.py, entry: run_resolution_pipeline",
        f"path: {PKG}/npu_hook.py, function: handle_npu",
    ))  # fmt: skip
    done = run_cli("diff", sha, sha, "--repo", root, "--matrix", str(as_function),
                   "--format", "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"]["base"]
    assert done.code == 4 and "name NPU_PAGE_SIZE (used at" in note, note  # sorted first


def test_a_handler_run_through_run_hook_assigns_to_the_configuration(tmp_path):
    """`run_hook(handle_npu, server_args)` calls the handler with the configuration, so
    what it assigns there is the configuration's: explored, to what every cell gives,
    and to the handler's own meaning (16 when unset, else the input)."""
    root, sha, matrix_path = npu_repo(tmp_path, "null, fa3")
    matrix = load_matrix(str(matrix_path))
    explored = evaluate_at(Path(root), sha, matrix)
    every = evaluate_at(Path(root), sha, matrix, exhaustive=True)
    assert explored.calls < matrix.size
    pages = matrix.axes[matrix.axis_index("page_size")].values
    want = [16 if page is None else page for _ in ("null", "fa3") for page in pages for _ in "ab"]
    inputs = Inputs(matrix)
    for table in (explored.table, every.table):
        got = []
        for index in range(matrix.size):
            fields = declared(table.outcome_at(index), ("page_size",))
            got.append(fields.get("page_size", inputs.one("page_size", index)))
        assert got == want


OUTSIDE = '''\
"""Resolution code importing a helper from outside it, and one from below it."""

from sglang.srt.arg_groups.model_overrides.table import DEFAULT_PAGE
from sglang.srt.utils.gpu import device_memory_gb


def run_resolution_pipeline(server_args):
    if server_args.attention_backend == "fa4" and device_memory_gb() < 80:
        server_args.page_size = 1
    elif server_args.page_size is None:
        server_args.page_size = DEFAULT_PAGE
'''
GPU = '''\
"""A probe of the machine, outside the resolution code."""

import subprocess


def device_memory_gb():
    return int(subprocess.check_output(["nvidia-smi"]).split()[0])
'''


def test_an_entry_runs_the_resolution_code_and_not_what_it_imports_from_outside(tmp_path):
    """An import from the package below the entry's directory (`model_overrides/`) is
    followed; one from outside the resolution code (a probe of the machine in
    `utils/`) is not run: where a cell reaches it, the revision is unevaluable, naming
    the name and the file it comes from, and the matrix binds it to go on."""
    root = tmp_path / "repo"
    sha = FixtureRepo(root).commit("outside", {
        f"{PKG}/pipeline.py": OUTSIDE, f"{PKG}/model_overrides/table.py": "DEFAULT_PAGE = 32\n",
        "python/sglang/srt/utils/gpu.py": GPU,
    })  # fmt: skip
    text = (f"name: outside\ntarget: {{path: {PKG}/pipeline.py, entry: run_resolution_pipeline, "
            "output: page_size}\nworld: sglang\naxes:\n  attention_backend: [null, BACKENDS]\n"
            "  page_size: [null, 64]\n")  # fmt: skip

    def diff(backends: str, bindings: str = "") -> tuple[int, dict]:
        matrix = tmp_path / f"{backends}-{bool(bindings)}.yaml"
        matrix.write_text(text.replace("BACKENDS", backends) + bindings)
        done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix),
                       "--format", "json", "--no-cache")  # fmt: skip
        return done.code, json.loads(done.out)

    code, report = diff("fa3")
    assert (code, report["notes"]) == (0, {}), report["notes"]
    code, report = diff("fa4")
    note = report["notes"]["base"]
    assert code == 4 and "name device_memory_gb is read at" in note, note
    assert "python/sglang/srt/utils/gpu.py, outside the resolution code" in note, note
    code, report = diff("fa4", "bindings:\n  device_memory_gb: {call: 40}\n")
    assert (code, report["notes"]) == (0, {}), report["notes"]
    table = evaluate_at(root, sha, load_matrix(str(tmp_path / "fa4-True.yaml"))).table
    pages = [table.outcome_at(i) for i in range(4)]  # (null, null) (null, 64) (fa4, ..)x2
    assert [o.value for o in pages] == [32, None, 1, 1], pages


SCOPES = '''\
"""Names nothing binds at module level, next to locals of the same name."""


def read_config_file(path):
    with open(path) as f:
        return f.read()


def pages(server_args):
    NPU_PAGE_SIZE = 256  # a local: never the module's missing name
    return NPU_PAGE_SIZE if server_args.attention_backend == "ascend" else None


def run_resolution_pipeline(server_args):
    if server_args.attention_backend == "from-file":
        server_args.page_size = int(read_config_file("/etc/pages"))
    elif server_args.attention_backend == "npu":
        server_args.page_size = NPU_PAGE_SIZE
    else:
        server_args.page_size = pages(server_args)
'''


@pytest.mark.parametrize(
    "backend, refused",
    [
        ("ascend", None),
        ("npu", "name NPU_PAGE_SIZE is read at"),
        ("from-file", "name open is read at"),
    ],
)
def test_only_module_names_are_refused_and_only_where_reached(tmp_path, backend, refused):
    """A function's own local of the same name as a missing module name is its local
    (256 on ascend); the missing module name, and a builtin outside the allow-list
    (`open`), are refused where a cell reaches them, with the line."""
    root = tmp_path / "repo"
    sha = FixtureRepo(root).commit("scopes", {f"{PKG}/pipeline.py": SCOPES})
    matrix = tmp_path / "m.yaml"
    matrix.write_text(
        f"name: scopes\ntarget: {{path: {PKG}/pipeline.py, entry: run_resolution_pipeline, "
        f"output: page_size}}\nworld: sglang\naxes:\n  attention_backend: [{backend}, fa3]\n"
        "  page_size: [null, 1]\n"
    )
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    if refused is None:
        assert (done.code, report["notes"]) == (0, {}), report["notes"]
        table = evaluate_at(root, sha, load_matrix(str(matrix))).table
        assert [table.outcome_at(i).value for i in range(4)] == [256, 256, None, None]
        return
    line = next(n for n, s in enumerate(SCOPES.splitlines(), 1)
                if ("NPU_PAGE_SIZE\n" if backend == "npu" else "open(path)")
                in s + "\n")  # fmt: skip
    note = report["notes"]["base"]
    assert done.code == 4 and f"{refused} {PKG}/pipeline.py:{line}" in note, note


WITHHELD = '''\
"""Definitions holding what evaluated code may not hold, on paths only some cells take."""


class Snapshot:
    def __getattr__(self, name):
        return None


def memo_of(server_args):
    return server_args.__dict__.get("_memo")


def run_resolution_pipeline(server_args):
    if server_args.attention_backend == "memo":
        server_args.page_size = memo_of(server_args)
    elif server_args.attention_backend == "snapshot":
        server_args.page_size = Snapshot().page_size
    elif server_args.attention_backend == "helper":
        server_args.page_size = imported_memo(server_args)
    elif server_args.page_size is None:
        server_args.page_size = 16
'''
HELPER_FILE = '''\
"""Another file of the resolution code, importing a withheld function."""

from sglang.srt.arg_groups.pipeline import memo_of as imported_memo  # noqa: F401
'''


@pytest.mark.parametrize(
    "backend, refused, at",
    [
        ("fa3", None, None),
        ("memo", "attribute .__dict__", "return server_args.__dict__"),
        ("snapshot", "special method __getattr__ in class Snapshot", "class Snapshot:"),
        ("helper", "attribute .__dict__", "return server_args.__dict__"),
    ],
)
def test_a_definition_the_policy_refuses_is_withheld_and_refused_where_reached(
    tmp_path, backend, refused, at
):
    """In an entry, a function or class holding a construct the policy refuses is never
    compiled: on cells that never reach it the resolution runs (16 when unset); a cell
    that calls it, makes the class, or calls it through another file's import, makes
    the revision unevaluable, naming the construct and its line."""
    root = tmp_path / "repo"
    pipeline = WITHHELD.replace(
        "\n\ndef run_resolution_pipeline",
        "\n\nfrom sglang.srt.arg_groups.helper import imported_memo\n\n\n"
        "def run_resolution_pipeline",
    )
    files = {f"{PKG}/pipeline.py": pipeline, f"{PKG}/helper.py": HELPER_FILE}
    sha = FixtureRepo(root).commit("withheld", files)
    matrix = tmp_path / "m.yaml"
    matrix.write_text(
        f"name: withheld\ntarget: {{path: {PKG}/pipeline.py, entry: run_resolution_pipeline, "
        f"output: page_size}}\nworld: sglang\naxes:\n  attention_backend: [{backend}, fa4]\n"
        "  page_size: [null, 1]\n"
    )
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    if refused is None:
        assert (done.code, report["notes"]) == (0, {}), report["notes"]
        table = evaluate_at(root, sha, load_matrix(str(matrix))).table
        assert [table.outcome_at(i).value for i in range(4)] == [16, None, 16, None]
        return
    line = next(n for n, s in enumerate(pipeline.splitlines(), 1) if s.strip().startswith(at))
    note = report["notes"]["base"]
    assert done.code == 4 and f"{refused} (at {PKG}/pipeline.py:{line})" in note, note


UNLOADABLE = '''\
"""A file of the resolution code whose module-level code needs what the world lacks."""

import msgspec


class Arg(msgspec.Struct, frozen=True):
    help: str = ""


def field_names(cls):
    return frozenset({Arg().help})
'''
USES_UNLOADABLE = '''\
"""Resolution reading a name from a file that cannot load, on one backend only."""

from sglang.srt.arg_groups.arg_utils import field_names


def run_resolution_pipeline(server_args):
    if server_args.attention_backend == "checked":
        server_args.page_size = len(field_names(server_args))
    elif server_args.page_size is None:
        server_args.page_size = 16
'''


@pytest.mark.parametrize("backend", ["fa3", "checked"])
def test_a_file_that_cannot_load_is_refused_where_its_names_are_reached(tmp_path, backend):
    """A file of the resolution code whose module-level code reads what nothing binds
    (`msgspec`) loads nothing; the entry runs on cells that never read its names, and
    where one does, the revision is unevaluable, saying which file and why."""
    root = tmp_path / "repo"
    sha = FixtureRepo(root).commit("unloadable", {
        f"{PKG}/pipeline.py": USES_UNLOADABLE, f"{PKG}/arg_utils.py": UNLOADABLE,
    })  # fmt: skip
    matrix = tmp_path / "m.yaml"
    matrix.write_text(
        f"name: unloadable\ntarget: {{path: {PKG}/pipeline.py, entry: run_resolution_pipeline, "
        f"output: page_size}}\nworld: sglang\naxes:\n  attention_backend: [{backend}, fa4]\n"
        "  page_size: [null, 1]\n"
    )
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    if backend == "fa3":
        assert (done.code, report["notes"]) == (0, {}), report["notes"]
        return
    read = USES_UNLOADABLE.splitlines().index(
        "        server_args.page_size = len(field_names(server_args))") + 1  # fmt: skip
    note = report["notes"]["base"]
    assert done.code == 4, note
    assert f"name field_names is read at {PKG}/pipeline.py:{read}: {PKG}/arg_utils.py " \
           "could not be loaded: name msgspec is read at" in note, note  # fmt: skip


def test_explain_shows_the_error_a_handler_raised_for_the_cell(repo):
    """`harness explain` on an entry: the outcome is the assert the speculative handler
    raised, and the trace says the entry reached nothing of its own before it."""
    root, shas, matrix, expected = repo
    cell = {"attention_backend": "fa4", "platform": "sm100", "page_size": "null",
            "speculative_algorithm": "EAGLE", "speculative_eagle_topk": "4",
            "speculative_num_steps": "null"}  # fmt: skip
    where = [arg for k, v in cell.items() for arg in ("--where", f"{k}={v}")]
    done = run_cli("explain", shas["assert"], "--repo", str(root), "--matrix", str(matrix),
                   *where)  # fmt: skip
    assert done.code == 0, done.err
    assert "outcome: AssertionError: set the number of steps" in done.out, done.out
    assert "(nothing traced: the target reached no condition" in done.out, done.out
