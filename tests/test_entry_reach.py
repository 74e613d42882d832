"""Entry targets reach only what their cells run: a name nothing binds, a builtin outside
the allow-list, a definition holding what the policy forbids, a name of a file that
cannot load, and what the resolution code imports from outside it are refused where a
cell reaches them (exit 4, naming the name, the line and why), and stop nothing on
cells that never do. Handlers run through `run_hook` keep the entry explored.

Each test builds a one-commit SGLang-shaped repository in tmp_path; expected values
come from the fixture's text (its lines, what it assigns), never from harness.
"""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from harness.engine.outputs import Inputs, declared
from harness.matrix.load import load_matrix
from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.helpers import evaluate_at
from tests.test_entry import HOOKS, PKG

HEADER = (
    f"name: reach\ntarget: {{path: {PKG}/pipeline.py, entry: run_resolution_pipeline, "
    "output: page_size}\nworld: sglang\naxes:\n"
)


def entry_diff(
    tmp_path: Path, files: dict[str, str], axes: str
) -> tuple[int, dict, Path, str, Path]:
    """`harness diff` (JSON) of a one-commit repository holding `files` against itself,
    with the entry's matrix over `axes` (YAML lines): (exit, report, repo, sha, matrix)."""
    root = tmp_path / "repo"
    sha = FixtureRepo(root).commit("entry", files)
    matrix = tmp_path / "m.yaml"
    matrix.write_text(HEADER + axes)
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    return done.code, json.loads(done.out), root, sha, matrix


def backends(backend: str, more: str = "") -> str:
    """The axes of most tests here: `backend` and fa4, page_size unset or 1."""
    return f"  attention_backend: [{backend}, fa4]\n  page_size: [null, 1]\n{more}"


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


NPU_FILES = {f"{PKG}/npu_hook.py": NPU_HOOK, f"{PKG}/pipeline.py": NPU_PIPELINE,
             f"{PKG}/resolution_hooks.py": HOOKS}  # fmt: skip
NPU_AXES = "  page_size: [null, 1, 64]\n  speculative_algorithm: [null, EAGLE]\n"


def test_a_name_nothing_binds_is_refused_only_where_a_cell_reaches_it(tmp_path):
    """An entry point holds code for every platform: a name nothing binds on a branch no
    cell takes does not stop the diff; where a cell takes it, the revision is
    unevaluable, naming the name, the line reached and how to bind it."""
    code, report, *_ = entry_diff(tmp_path, NPU_FILES, "  attention_backend: [null, fa3]\n"
                                  + NPU_AXES)  # fmt: skip
    assert (code, report["notes"], report["changed"]) == (0, {}, []), report["notes"]
    code, report, _, _, matrix = entry_diff(
        tmp_path / "reached", NPU_FILES, "  attention_backend: [null, fa3, ascend]\n" + NPU_AXES
    )
    note = report["notes"]["base"]
    line = NPU_HOOK.splitlines().index("        load_npu_kernels()") + 1
    assert code == 4, note
    assert f"name load_npu_kernels is read at {PKG}/npu_hook.py:{line}" in note, note
    assert "bindings:" in note and str(matrix) in note, note


def test_a_function_target_still_refuses_an_unbound_name_before_it_runs(tmp_path):
    """Strictness as before for a function: the same handler as a target is unevaluable
    for its unbound name although no cell reaches it."""
    _, _, root, sha, matrix = entry_diff(
        tmp_path, NPU_FILES, "  attention_backend: [null, fa3]\n" + NPU_AXES
    )
    as_function = tmp_path / "function.yaml"
    as_function.write_text(matrix.read_text().replace(
        f"path: {PKG}/pipeline.py, entry: run_resolution_pipeline",
        f"path: {PKG}/npu_hook.py, function: handle_npu",
    ))  # fmt: skip
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(as_function),
                   "--format", "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"]["base"]
    assert done.code == 4 and "name NPU_PAGE_SIZE (used at" in note, note  # sorted first


def test_a_handler_run_through_run_hook_assigns_to_the_configuration(tmp_path):
    """`run_hook(handle_npu, server_args)` calls the handler with the configuration, so
    what it assigns there is the configuration's: explored, to what every cell gives,
    and to the handler's own meaning (16 when unset, else the input)."""
    _, _, root, sha, matrix_path = entry_diff(
        tmp_path, NPU_FILES, "  attention_backend: [null, fa3]\n" + NPU_AXES
    )
    matrix = load_matrix(str(matrix_path))
    explored = evaluate_at(root, sha, matrix)
    every = evaluate_at(root, sha, matrix, exhaustive=True)
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
    files = {f"{PKG}/pipeline.py": OUTSIDE, f"{PKG}/model_overrides/table.py": "DEFAULT_PAGE = 32\n",
             "python/sglang/srt/utils/gpu.py": GPU}  # fmt: skip
    axes = "  attention_backend: [null, {}]\n  page_size: [null, 64]\n{}"
    code, report, *_ = entry_diff(tmp_path / "a", files, axes.format("fa3", ""))
    assert (code, report["notes"]) == (0, {}), report["notes"]
    code, report, *_ = entry_diff(tmp_path / "b", files, axes.format("fa4", ""))
    note = report["notes"]["base"]
    assert code == 4 and "name device_memory_gb is read at" in note, note
    assert "python/sglang/srt/utils/gpu.py, outside the resolution code" in note, note
    bound = "bindings:\n  device_memory_gb: {call: 40}\n"
    code, report, root, sha, matrix = entry_diff(tmp_path / "c", files, axes.format("fa4", bound))
    assert (code, report["notes"]) == (0, {}), report["notes"]
    table = evaluate_at(root, sha, load_matrix(str(matrix))).table
    pages = [table.outcome_at(i) for i in range(4)]  # (null, null) (null, 64) (fa4, ..)x2
    assert [o.value for o in pages] == [32, None, 1, 1], pages


MTP_CONFIG = '''\
"""A model's configuration class, outside the resolution code."""

import torch


class MTPConfig:
    dtype = torch.bfloat16
'''
MTP_PIPELINE = '''\
"""Resolution code importing a model's class before it tests whether it is that model's."""


def run_resolution_pipeline(server_args):
    from sglang.srt.configs.mtp import MTPConfig{alias}

    if server_args.speculative_algorithm != "MTP":
        server_args.page_size = 16
        return
    {use}
'''
REFUSED_USES = {  # each a use the stand-in refuses before Python looks at what it is
    "isinstance": "server_args.page_size = 1 if isinstance(server_args, MTPConfig) else 2",
    "isinstance-tuple": "server_args.page_size = 1 if isinstance(0, (str, MTPConfig)) else 2",
    "issubclass": "server_args.page_size = 1 if issubclass(int, MTPConfig) else 2",
    "attribute": "server_args.page_size = MTPConfig.dtype",
    "attribute-write": "MTPConfig.dtype = 1",
    "attribute-delete": "del MTPConfig.dtype",
    "call": "server_args.page_size = MTPConfig()",
}
IMPORT_REFUSED_USES = {  # each a use where Python's own checks would answer for it
    "equal": "server_args.page_size = 1 if MTPConfig == 0 else 2",
    "identity": "server_args.page_size = 1 if MTPConfig is None else 2",
    "callable": "server_args.page_size = 1 if callable(MTPConfig) else 2",
    "hash": "server_args.page_size = {MTPConfig: 1}[MTPConfig]",
    "truth": "server_args.page_size = 1 if MTPConfig else 2",
    "format": 'server_args.page_size = len(f"{MTPConfig}")',
    "join": 'server_args.page_size = len("".join([MTPConfig]))',
    "percent": 'server_args.page_size = len("abc" % MTPConfig)',
    "arithmetic": "server_args.page_size = 1 + MTPConfig",
    "subclass": "class Sub(MTPConfig):\n        pass",
    "alias": "E = MTPConfig\n    server_args.page_size = E.dtype",
    "handed": "server_args.page_size = len([MTPConfig])",
    "raise": "raise MTPConfig",
    "except": "try:\n        pass\n    except MTPConfig:\n        pass",
    "class-pattern": "match 1:\n        case MTPConfig():\n            pass",
    "first-argument": "server_args.page_size = 1 if isinstance(MTPConfig, object) else 2",
    "rebound": "MTPConfig = None",
    "keyword": "server_args.page_size = isinstance(1, cls=MTPConfig)",
}


def mtp_files(use: str, alias: str = "") -> dict[str, str]:
    pipeline = MTP_PIPELINE.format(use=use, alias=alias)
    return {f"{PKG}/pipeline.py": pipeline, "python/sglang/srt/configs/mtp.py": MTP_CONFIG}


IMPORT_LINE = "from sglang.srt.configs.mtp import MTPConfig"


@pytest.mark.parametrize("use", sorted(REFUSED_USES))
def test_a_class_imported_from_outside_is_refused_where_used_not_where_imported(tmp_path, use):
    """As SGLang's handler imports a model's config class and then tests the
    architecture: the import succeeds, as SGLang's does, and a use of what it bound is
    refused, naming the line of the use, the import and the file (exit 4). Cells that
    never use it resolve as the code says (16), with no note at all."""
    files = mtp_files(REFUSED_USES[use])
    code, report, *_ = entry_diff(tmp_path / "a", files, "  speculative_algorithm: [null, EAGLE]\n")
    assert (code, report["notes"]) == (0, {}), report["notes"]
    code, report, *_ = entry_diff(tmp_path / "b", files, "  speculative_algorithm: [null, MTP]\n")
    note, text = report["notes"].get("base", ""), files[f"{PKG}/pipeline.py"]
    line = line_of(text, REFUSED_USES[use].splitlines()[0])
    assert code == 4, (code, note)
    assert f"name MTPConfig is read at {PKG}/pipeline.py:{line}: " in note, note
    assert (f"MTPConfig is imported at {PKG}/pipeline.py:{line_of(text, IMPORT_LINE)} from "
            "python/sglang/srt/configs/mtp.py, outside the resolution code") in note, note  # fmt: skip


@pytest.mark.parametrize("use", sorted(IMPORT_REFUSED_USES))
def test_any_other_use_of_a_class_imported_from_outside_is_refused_where_imported(tmp_path, use):
    """Where the function uses the name in any other way (compares it, hashes it,
    raises or catches it, hands it on, matches a class pattern against it, binds it
    again), Python's own checks of what it is would answer (`"".join`, `except`, `is`),
    so the import itself is refused, on every cell, as before: exit 4 naming the
    import's line."""
    files = mtp_files(IMPORT_REFUSED_USES[use])
    code, report, *_ = entry_diff(tmp_path, files, "  speculative_algorithm: [null]\n")
    note, text = report["notes"].get("base", ""), files[f"{PKG}/pipeline.py"]
    at = f"MTPConfig is read at {PKG}/pipeline.py:{line_of(text, IMPORT_LINE)}: "
    assert code == 4 and at in note, (code, note)


def test_a_class_imported_from_outside_under_another_name_is_refused_by_that_name(tmp_path):
    """`from m import MTPConfig as Draft`: the refusal names what the code reads."""
    files = mtp_files("server_args.page_size = Draft.dtype", alias=" as Draft")
    code, report, *_ = entry_diff(tmp_path, files, "  speculative_algorithm: [null, MTP]\n")
    note, text = report["notes"].get("base", ""), files[f"{PKG}/pipeline.py"]
    line = line_of(text, "server_args.page_size = Draft.dtype")
    imported = line_of(text, IMPORT_LINE + " as Draft")
    assert code == 4 and f"name Draft is read at {PKG}/pipeline.py:{line}: " in note, note
    assert f"Draft is imported at {PKG}/pipeline.py:{imported} from " in note, note


def test_a_file_that_may_rebind_isinstance_keeps_the_import_refused(tmp_path):
    """`isinstance(x, name)` is refused by the stand-in only if it is Python's."""
    files = mtp_files(REFUSED_USES["isinstance"])
    text = files[f"{PKG}/pipeline.py"]
    files[f"{PKG}/pipeline.py"] = text + "\n\ndef isinstance(obj, cls):\n    return True\n"
    code, report, *_ = entry_diff(tmp_path, files, "  speculative_algorithm: [null]\n")
    note = report["notes"].get("base", "")
    assert code == 4 and f"pipeline.py:{line_of(text, IMPORT_LINE)}: " in note, note


def test_a_class_imported_from_outside_is_answered_by_its_binding(tmp_path):
    """Bound under `bindings:`, the name is the world's, as before."""
    files = mtp_files("server_args.page_size = MTPConfig.dtype")
    axes = "  speculative_algorithm: [null, MTP]\nbindings:\n  MTPConfig: {object: {dtype: 3}}\n"
    code, report, root, sha, matrix = entry_diff(tmp_path, files, axes)
    assert (code, report["notes"]) == (0, {}), report["notes"]
    table = evaluate_at(root, sha, load_matrix(str(matrix))).table
    assert [table.outcome_at(i).value for i in range(2)] == [16, 3]


def test_a_name_the_outside_file_does_not_define_is_refused_where_imported(tmp_path):
    """SGLang's import of a name its file lacks is Python's ImportError: no stand-in."""
    files = mtp_files("server_args.page_size = MTPConfig.dtype")
    files["python/sglang/srt/configs/mtp.py"] = (
        '"""Another class only."""\n\n\nclass Other:\n    pass\n'
    )
    code, report, *_ = entry_diff(tmp_path, files, "  speculative_algorithm: [null]\n")
    note = report["notes"].get("base", "")
    assert code == 4 and "MTPConfig is read at" in note, note


SPEC_UTILS = '''\
"""Helpers beside the machine's probes, outside the resolution code."""

import builtins

import torch

TORCH_RELEASE = torch.__version__.split(".")
LIMIT = 4
DOUBLED = frozenset({4})
builtins.SPEC_LIMIT = LIMIT  # a name of its own among the builtins, as SGLang's utils add


def topk_one(cfg):
    return cfg.speculative_eagle_topk is None or cfg.speculative_eagle_topk == 1


def within_limit(cfg):
    return cfg.speculative_eagle_topk <= LIMIT


def torch_major(cfg):
    return int(TORCH_RELEASE[0])
'''
SPEC_PIPELINE = '''\
"""Resolution code reading a helper from outside it."""

from sglang.srt.utils.spec import topk_one, torch_major, within_limit


def run_resolution_pipeline(server_args):
    from sglang.srt.utils.spec import DOUBLED

    server_args.page_size = 16 if topk_one(server_args) else 1
    if server_args.speculative_eagle_topk in DOUBLED:
        server_args.page_size *= 2
    if server_args.speculative_eagle_topk == 8:
        server_args.page_size = within_limit(server_args) or torch_major(server_args)
'''


def test_a_function_outside_the_resolution_code_reading_only_its_arguments_is_run(tmp_path):
    """`topk_one(cfg)` reads nothing of its file (whose module-level code touches torch):
    it runs, as a pass's helper would; so is `DOUBLED = frozenset({4})`, imported inside
    the function, and `within_limit`, which reads the file's `LIMIT = 4`, a constant no
    statement changes. `torch_major` reads `TORCH_RELEASE`, made from torch as the file
    loads, which is not run: it stays refused where reached."""
    files = {f"{PKG}/pipeline.py": SPEC_PIPELINE, "python/sglang/srt/utils/spec.py": SPEC_UTILS}
    axes = "  speculative_eagle_topk: [null, 1, 4{}]\n"
    code, report, *_ = entry_diff(tmp_path / "a", files, axes.format(", 8"))
    note = report["notes"]["base"]
    assert code == 4 and "name torch_major is read at" in note, note
    assert "utils/spec.py, outside the resolution code" in note, note
    code, report, root, sha, matrix = entry_diff(tmp_path / "b", files, axes.format(""))
    assert (code, report["notes"]) == (0, {}), report["notes"]
    table = evaluate_at(root, sha, load_matrix(str(matrix))).table
    pages = [table.outcome_at(i).value for i in range(3)]
    assert pages == [16, 16, 2]  # topk unset or 1: the helper says one; 4: not, doubled


MODEL_HELPERS = '''\
"""A model's helpers, outside the resolution code, calling each other."""

import torch

DTYPE = torch.bfloat16
BACKENDS = ("fa3", "flashmla")


def _attr(config, name):
    if isinstance(config, dict):
        return config.get(name)
    return getattr(config, name, None)


def _topk(config):
    return _attr(config, "speculative_eagle_topk")


def is_sparse(config):
    return _topk(config) in (None, 1) and _attr(config, "attention_backend") in {sparse_set}


def is_loud(config):
    return _loud(config)


def _loud(config):
    return is_loud(config)


def _dtype_of(config):
    return DTYPE
'''
HELPERS_PIPELINE = '''\
"""Resolution code calling a model's helper from outside it."""

from sglang.srt.configs.model_helpers import {helper}


def run_resolution_pipeline(server_args):
    server_args.page_size = 64 if {helper}(server_args) else 16
'''


@pytest.mark.parametrize("sparse_set", ['("fa3", "flashmla")', "BACKENDS"])
def test_an_outside_helper_calling_its_file_s_own_helpers_is_run(tmp_path, sparse_set):
    """`is_sparse` reads its argument through `_topk` and `_attr`, helpers of its own
    file that read only builtins and their arguments (as SGLang's `is_deepseek_dsa`
    calls `_hf_arch` and `_hf_attr`), and perhaps a constant of the file no statement
    changes: it runs, and each cell is what the code says (64 where top-k is unset or
    1 and the backend is in the tuple, else 16)."""
    helpers = MODEL_HELPERS.replace("{sparse_set}", sparse_set)
    files = {f"{PKG}/pipeline.py": HELPERS_PIPELINE.format(helper="is_sparse"),
             "python/sglang/srt/configs/model_helpers.py": helpers}  # fmt: skip
    axes = "  speculative_eagle_topk: [null, 1, 4]\n  attention_backend: [fa3, triton]\n"
    code, report, root, sha, matrix = entry_diff(tmp_path, files, axes)
    assert (code, report["notes"]) == (0, {}), report["notes"]
    table = evaluate_at(root, sha, load_matrix(str(matrix))).table
    cells = [(t, b) for t in (None, 1, 4) for b in ("fa3", "triton")]
    expected = [64 if t in (None, 1) and b == "fa3" else 16 for t, b in cells]
    assert [table.outcome_at(i).value for i in range(len(cells))] == expected


@pytest.mark.parametrize(
    ("helper", "sparse_set"),
    [("is_loud", "()"), ("is_sparse", "DTYPE"), ("_dtype_of", "()")],
    ids=["helpers-calling-each-other", "a-helper-reading-it", "a-constant-read-from-torch"],
)
def test_an_outside_helper_reading_more_of_its_file_stays_refused(tmp_path, helper, sparse_set):
    """A chain of helpers that calls itself back, or one that reads a name of the file
    that is no such helper (a constant made from torch, read by the helper or by one it
    calls): refused where reached, naming the helper the resolution code reads."""
    helpers = MODEL_HELPERS.replace("{sparse_set}", sparse_set)
    files = {f"{PKG}/pipeline.py": HELPERS_PIPELINE.format(helper=helper),
             "python/sglang/srt/configs/model_helpers.py": helpers}  # fmt: skip
    axes = "  speculative_eagle_topk: [null]\n  attention_backend: [fa3]\n"
    code, report, *_ = entry_diff(tmp_path, files, axes)
    note = report["notes"].get("base", "")
    assert code == 4 and f"name {helper} is read at" in note, note
    assert "model_helpers.py, outside the resolution code" in note, note


OWN_BASE = (
    "def _g():\n    return 1\n\n\ndef f(cfg):\n    return _g()\n\n\ndef _o():\n    return 0\n\n\n"
)
# Module-level code of the helper's file that changes `_g` as Python imports it (each found
# by an adversarial review to give 1 where Python gives 2, with no note).
OWN_CHANGES = {
    "class-body-global": "class C:\n    global _g\n    _g = lambda: 2\n",
    "class-body-global-def": "class C:\n    global _g\n\n    def _g():\n        return 2\n",
    "lambda-default-setter": (
        "def _set():\n    global _g\n    _g = lambda: 2\n\n\n_h = lambda x=_set(): x\n"
    ),
    "computed-getattr": 'getattr(_o, "__glob" + "als__")["_g"] = lambda: 2\n',
    "frame-globals": 'import sys\n\nsys._getframe().f_globals["_g"] = lambda: 2\n',
    "module-of-another-function": "import inspect\n\ninspect.getmodule(_o)._g = lambda: 2\n",
    "module-by-name": "import importlib\n\nimportlib.import_module(__name__)._g = lambda: 2\n",
    "self-import-namespace-package": "from sglang.srt.utils import h as _me\n\n_me._g = lambda: 2\n",
}
OWN_PIPELINE = (
    "from sglang.srt.utils.h import f\n\n\ndef run_resolution_pipeline(server_args):\n"
    "    server_args.page_size = f(server_args)\n"
)


@pytest.mark.parametrize("change", sorted(OWN_CHANGES))
def test_a_helper_s_file_that_changes_what_it_calls_keeps_it_refused(tmp_path, change):
    """`f` calls `_g` of its own file, and the file's module-level code, which is never
    run here, changes `_g` as Python imports it: the revision is unevaluable (exit 4:
    `f` refused where read, or the changing statement drawn in and refused), never run
    with the `_g` the file's text defines (Python's import gives 2)."""
    files = {f"{PKG}/pipeline.py": OWN_PIPELINE,
             "python/sglang/srt/utils/h.py": OWN_BASE + OWN_CHANGES[change]}  # fmt: skip
    code, report, *_ = entry_diff(tmp_path, files, "  page_size: [null, 1]\n")
    note = report["notes"].get("base", "")
    assert code == 4 and " is read at " in note, (code, note)


SHADOWING = {
    "star": "from math import *\n\n\ndef pick(cfg):\n    return pow(2, 3, 5)\n",
    "global": ("def pick(cfg):\n    return max(1, 2)\n\n\ndef _setup():\n    global max\n"
               "    max = min\n\n\n_setup()\n"),
    "bound": "def pick(cfg):\n    return max(1, 2)\n\n\nmax = min\n",
    "builtins": "import builtins\n\n\ndef pick(cfg):\n    return max(1, 2)\n\n\nbuiltins.max = min\n",
}  # fmt: skip


@pytest.mark.parametrize("shape", sorted(SHADOWING))
def test_a_function_outside_reading_a_builtin_its_file_may_rebind_stays_refused(tmp_path, shape):
    """`pow` after `from math import *`, `max` a function of the file rebinds: what the
    builtin is there depends on the file's other code, which is not run: refused where
    reached (exit 4), naming the function."""
    pipeline = ("from sglang.srt.utils.pick import pick\n\n\ndef run_resolution_pipeline(sa):\n"
                "    sa.page_size = pick(sa)\n")  # fmt: skip
    files = {f"{PKG}/pipeline.py": pipeline, "python/sglang/srt/utils/pick.py": SHADOWING[shape]}
    code, report, *_ = entry_diff(tmp_path, files, "  page_size: [null, 1]\n")
    note = report["notes"].get("base", "")
    assert code == 4 and "name pick is read at" in note, note


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
    code, report, root, sha, matrix = entry_diff(
        tmp_path, {f"{PKG}/pipeline.py": SCOPES}, backends(backend)
    )
    if refused is None:
        assert (code, report["notes"]) == (0, {}), report["notes"]
        table = evaluate_at(root, sha, load_matrix(str(matrix))).table
        assert [table.outcome_at(i).value for i in range(4)] == [256, 256, None, None]
        return
    line = next(n for n, s in enumerate(SCOPES.splitlines(), 1)
                if ("NPU_PAGE_SIZE\n" if backend == "npu" else "open(path)")
                in s + "\n")  # fmt: skip
    note = report["notes"]["base"]
    assert code == 4 and f"{refused} {PKG}/pipeline.py:{line}" in note, note


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
    pipeline = WITHHELD.replace(
        "\n\ndef run_resolution_pipeline",
        "\n\nfrom sglang.srt.arg_groups.helper import imported_memo\n\n\n"
        "def run_resolution_pipeline",
    )
    files = {f"{PKG}/pipeline.py": pipeline, f"{PKG}/helper.py": HELPER_FILE}
    code, report, root, sha, matrix = entry_diff(tmp_path, files, backends(backend))
    if refused is None:
        assert (code, report["notes"]) == (0, {}), report["notes"]
        table = evaluate_at(root, sha, load_matrix(str(matrix))).table
        assert [table.outcome_at(i).value for i in range(4)] == [16, None, 16, None]
        return
    line = next(n for n, s in enumerate(pipeline.splitlines(), 1) if s.strip().startswith(at))
    note = report["notes"]["base"]
    assert code == 4 and f"{refused} (at {PKG}/pipeline.py:{line})" in note, note


NARROWED = '''\
"""Resolution through a class whose making runs code, and whose methods hold what
evaluated code may not hold: one method no cell calls, one on one backend only."""


def default_page():
    return 16


class Policy:
    DEFAULT = default_page()

    def describe(self):
        return self.__doc__

    def page_for(self, server_args):
        if server_args.attention_backend == "documented":
            return len(type(self).__doc__ or "")
        return self.DEFAULT


def run_resolution_pipeline(server_args):
    if server_args.page_size is None:
        server_args.page_size = Policy().page_for(server_args)
'''


@pytest.mark.parametrize("backend", ["fa3", "documented"])
def test_a_class_whose_methods_hold_refused_code_runs_and_refuses_where_reached(tmp_path, backend):
    """A class the entry makes, whose own making runs code (so it cannot be left out),
    is defined with the statements of its methods that hold what the policy refuses
    narrowed: a method no cell calls never matters (16 where unset); a cell that reaches
    such a statement makes the revision unevaluable, naming the construct, its line and
    the method (SGLang 0.5.10's `ServerArgs.add_cli_args` reads `.__doc__`)."""
    files = {f"{PKG}/pipeline.py": NARROWED}
    code, report, root, sha, matrix = entry_diff(tmp_path, files, backends(backend))
    if backend == "fa3":
        assert (code, report["notes"]) == (0, {}), report["notes"]
        table = evaluate_at(root, sha, load_matrix(str(matrix))).table
        assert [table.outcome_at(i).value for i in range(4)] == [16, None, 16, None]
        return
    line = line_of(NARROWED, "return len(type(self).__doc__")
    note = report["notes"]["base"]
    assert code == 4, note
    assert f"attribute .__doc__ (at {PKG}/pipeline.py:{line})" in note, note
    assert "Policy.page_for" in note, note


# Each method holds a forbidden construct inside a definition of its own, on a path no
# cell takes: what Python reads of that definition as it compiles the method is its name
# and its header, never its body (found by an adversarial review: the body's `yield`,
# parameters, class-body names or `global` used to move into the method).
POLICY_CLASS = "class Policy:\n    def page(self, flag):\n"
CALLS_PAGE = "\n\ndef run_resolution_pipeline(server_args):\n"
RETURNS_SIZE = (
    "        try:\n            return size\n        except Exception:\n            return 9\n"
)
NESTED_DEFINITIONS = {
    "yield-in-nested-def": POLICY_CLASS
    + """\
        if flag:
            def helper(y=self.__dict__):
                yield y
        return 16
"""
    + CALLS_PAGE
    + "    server_args.page_size = 3 if Policy().page(False) == 16 else 7\n",
    "parameter-of-nested-def": "size = 16\n\n\n"
    + POLICY_CLASS
    + """\
        if flag:
            def helper(size=self.__dict__):
                return size
"""
    + RETURNS_SIZE
    + CALLS_PAGE
    + "    server_args.page_size = Policy().page(False)\n",
    "name-in-nested-class": "size = 16\n\n\n"
    + POLICY_CLASS
    + """\
        if flag:
            class Inner(self.__class__):
                size = 1
"""
    + RETURNS_SIZE
    + CALLS_PAGE
    + "    server_args.page_size = Policy().page(False)\n",
    "global-in-nested-def": POLICY_CLASS
    + """\
        n = 16
        if flag:
            def helper(y=self.__dict__):
                global n
                n = 1
        return n
"""
    + CALLS_PAGE
    + "    server_args.page_size = Policy().page(False)\n",
    "yield-in-a-function-s-nested-def": """\
def page(flag):
    if flag:
        def helper(y=flag.__dict__):
            yield y
    return 16
"""
    + CALLS_PAGE
    + "    server_args.page_size = 3 if page(False) == 16 else 7\n",
    "async-generator-expression": """\
class Policy:
    def describe(self, y):
        return (x.__doc__ async for x in y)

    def page(self):
        return 16
"""
    + CALLS_PAGE
    + "    server_args.page_size = Policy().page()\n",
}


def plain_pages(text: str) -> list:
    """Per cell of `backends("null")`, the page size the fixture resolves in plain Python."""
    found = []
    for backend in (None, "fa4"):
        for page_size in (None, 1):
            space: dict = {}
            exec(compile(text, "pipeline.py", "exec", dont_inherit=True), space)
            server_args = types.SimpleNamespace(attention_backend=backend, page_size=page_size)
            space["run_resolution_pipeline"](server_args)
            found.append(server_args.page_size)
    return found


def resolves_as_python(tmp_path: Path, text: str) -> None:
    """`harness diff` of the entry file `text` is exit 0, and each cell's page size (its
    input where kept) is what plain Python resolves."""
    code, report, root, sha, matrix = entry_diff(tmp_path, {f"{PKG}/pipeline.py": text},
                                                 backends("null"))  # fmt: skip
    assert (code, report["notes"]) == (0, {}), report["notes"]
    table = evaluate_at(root, sha, load_matrix(str(matrix))).table
    values = [table.outcome_at(i).value for i in range(4)]
    inputs = [None, 1, None, 1]
    expected = plain_pages(text)
    assert [v if v is not None else i for v, i in zip(values, inputs, strict=True)] == expected


@pytest.mark.parametrize("shape", sorted(NESTED_DEFINITIONS))
def test_a_narrowed_method_compiles_as_the_original_where_no_cell_reaches_it(tmp_path, shape):
    """A method narrowed where it defines a function or class holding a forbidden
    construct keeps the original's kind (not a generator) and scope (the definition's
    parameters, body names and `global` stay its own): every cell resolves what plain
    Python resolves."""
    resolves_as_python(tmp_path, NESTED_DEFINITIONS[shape])


# An annotated statement in a function, on a path no cell takes or not: Python evaluates
# no annotation there, but its compiler still reads the statement (found by the same
# review: dropped whole, `size: int` read the global, the walrus and `yield` went too).
ANNOTATED_LOCALS = {
    "bare-annotation": "size = 16\n\n\n"
    + POLICY_CLASS
    + """\
        if flag:
            size: int
"""
    + RETURNS_SIZE
    + CALLS_PAGE
    + "    server_args.page_size = Policy().page(False)\n",
    "walrus-in-annotation": "size = 16\n\n\n"
    + POLICY_CLASS
    + """\
        if flag:
            x: (size := 1) = 2
"""
    + RETURNS_SIZE
    + CALLS_PAGE
    + "    server_args.page_size = Policy().page(False)\n",
    "yield-in-annotation": POLICY_CLASS
    + """\
        if flag:
            x: (yield) = 2
        return 16
"""
    + CALLS_PAGE
    + "    server_args.page_size = 3 if Policy().page(False) == 16 else 7\n",
    "index-of-annotated-target": """\
CALLS = []


def index():
    CALLS.append(1)
    return 0


"""
    + POLICY_CLASS
    + """\
        box = [0]
        box[index()]: int
        return 16 + len(CALLS)
"""
    + CALLS_PAGE
    + "    server_args.page_size = Policy().page(False)\n",
}


@pytest.mark.parametrize("shape", sorted(ANNOTATED_LOCALS))
def test_an_annotated_statement_in_a_function_compiles_as_python_reads_it(tmp_path, shape):
    """Inside a function, `x: T` makes x a local, `a[f()]: T` calls f, and an annotation's
    walrus or `yield` makes a local or a generator, though no annotation is evaluated:
    every cell resolves what plain Python resolves."""
    resolves_as_python(tmp_path, ANNOTATED_LOCALS[shape])


UNMAKEABLE = '''\
"""Resolution whose own file defines a class on a module the world does not bind."""

import argparse


def default_page():
    return 16


class PathAction(argparse.Action):
    """Parses a path."""

    KIND = "path"

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)


def run_resolution_pipeline(server_args):
    if server_args.attention_backend == "parsed":
        server_args.page_size = len(PathAction.__name__)
    elif server_args.page_size is None:
        server_args.page_size = default_page()
'''


@pytest.mark.parametrize("backend", ["fa3", "parsed"])
def test_a_class_made_on_a_quiet_base_nothing_binds_is_refused_where_reached(tmp_path, backend):
    """A class of the entry's own file whose base is `argparse.Action`, with `argparse` a
    module nothing binds here (SGLang 0.5.10's `LoRAPathAction`), and whose making
    binds nothing but its name, is left out: cells that never read it resolve (16 where
    unset), and one that does is refused, naming the module and the class's line."""
    code, report, root, sha, matrix = entry_diff(tmp_path, {f"{PKG}/pipeline.py": UNMAKEABLE},
                                                 backends(backend))  # fmt: skip
    if backend == "fa3":
        assert (code, report["notes"]) == (0, {}), report["notes"]
        table = evaluate_at(root, sha, load_matrix(str(matrix))).table
        assert [table.outcome_at(i).value for i in range(4)] == [16, None, 16, None]
        return
    note = report["notes"]["base"]
    line = line_of(UNMAKEABLE, "class PathAction")
    assert code == 4, note
    assert f"name PathAction is read at {PKG}/pipeline.py:{line_of(UNMAKEABLE, 'len(Path')}" in note
    assert f"its definition (at {PKG}/pipeline.py:{line}) reads argparse" in note, note


NOT_LEFT_OUT = {
    # the class body runs the file's own code as the class is made
    "body-calls": ('    KIND = "path"\n', "    KIND = default_page()\n"),
    # a method's default is made by the file's own code
    "default-calls": ("option_string=None", "option_string=default_page()"),
    # a decorator outside the repository is handed the class, or a method
    "decorated": ("class PathAction(", "@argparse.register_action\nclass PathAction("),
    "method-decorated": ("    def __call__", "    @argparse.hook\n    def __call__"),
    # `argparse` is another module, which may hook the class
    "aliased": ("import argparse\n", "import plugins as argparse\n"),
    "rebound": ("import argparse\n", "import argparse\nimport plugins as argparse\n"),
    # a base other than the quiet ones (a metaclass keyword is a construct the policy
    # forbids: such a class is withheld, not left out here; docs/security.md, What remains)
    "other-base": ("(argparse.Action)", "(argparse.ArgumentParser)"),
    "nested-class": ('    KIND = "path"\n', "    class Inner(argparse.Action):\n        pass\n"),
    # found by a review: a class-body value that is not a constant may run code (a chain
    # on the real module reaches sys.modules; an object of outside code may have
    # `__set_name__`; a set display hashes), and a dunder name may be a hook or fail
    "chain-on-the-module": ('"path"\n', 'argparse._sys.modules["os"]\n'),
    "name": ('"path"\n', "default_page\n"),
    "set-display": ('"path"\n', '{"path"}\n'),
    "dunder": ('    KIND = "path"\n', '    __slots__ = ("dest",)\n'),
    "annotation-evaluated": ("option_string=None", "option_string: argparse._sys = None"),
    # `argparse` may be bound otherwise than by the one import, or the import may fail
    "global-rebind": (
        "import argparse\n",
        "import argparse\n\n\ndef rebind():\n    global argparse\n    argparse = None\n",
    ),
    "star-import": ("import argparse\n", "import argparse\nfrom os.path import *\n"),
    "submodule": ("import argparse\n", "import argparse.sub\n"),
    # found by a second review: Python refuses each as the file loads, or tells the
    # name's absence from inside a function
    "import-after": ("import argparse\n", "STATE = []\n", "\nimport argparse\n"),
    "base-twice": ("(argparse.Action)", "(argparse.Action, argparse.Action)"),
    "deleted-in-a-function": (
        "def default_page():\n    return 16\n",
        "def default_page():\n    global PathAction\n    try:\n        del PathAction\n"
        "    except NameError:\n        return 17\n    return 16\n",
    ),
}


@pytest.mark.parametrize("shape", sorted(NOT_LEFT_OUT))
def test_a_class_whose_making_may_run_code_is_not_left_out(tmp_path, shape):
    """Each change lets making the class run code (the repository's, or code outside it
    that is handed the class): it is not left out, so its file cannot load and every
    cell is refused, where leaving it out would have answered as if it never ran."""
    old, new, *appended = NOT_LEFT_OUT[shape]
    assert old in UNMAKEABLE
    text = UNMAKEABLE.replace(old, new, 1) + "".join(appended)
    code, report, *_ = entry_diff(tmp_path, {f"{PKG}/pipeline.py": text}, backends("fa3"))
    note = report["notes"].get("base", "")
    assert code == 4 and "is read at" in note, (code, note)
    assert "its definition (at" not in note, note


UNLOADABLE = '''\
"""A file of the resolution code whose module-level code needs what the world lacks."""

import msgspec


class Arg(msgspec.Struct, frozen=True):
    help: str = ""


def help_names(cls):
    return frozenset({Arg().help})
'''
USES_UNLOADABLE = '''\
"""Resolution reading a name from a file that cannot load, on one backend only."""

from sglang.srt.arg_groups.arg_utils import help_names


def run_resolution_pipeline(server_args):
    if server_args.attention_backend == "checked":
        server_args.page_size = len(help_names(server_args))
    elif server_args.page_size is None:
        server_args.page_size = 16
'''


@pytest.mark.parametrize("backend", ["fa3", "checked"])
def test_a_file_that_cannot_load_is_refused_where_its_names_are_reached(tmp_path, backend):
    """A file of the resolution code whose module-level code reads what nothing binds
    (`msgspec`) loads nothing; the entry runs on cells that never read its names, and
    where one does, the revision is unevaluable, saying which file and why."""
    files = {f"{PKG}/pipeline.py": USES_UNLOADABLE, f"{PKG}/arg_utils.py": UNLOADABLE}
    code, report, *_ = entry_diff(tmp_path, files, backends(backend))
    if backend == "fa3":
        assert (code, report["notes"]) == (0, {}), report["notes"]
        return
    read = USES_UNLOADABLE.splitlines().index(
        "        server_args.page_size = len(help_names(server_args))") + 1  # fmt: skip
    note = report["notes"]["base"]
    assert code == 4, note
    assert f"name help_names is read at {PKG}/pipeline.py:{read}: {PKG}/arg_utils.py " \
           "could not be loaded: name msgspec is read at" in note, note  # fmt: skip


# --- what a refusal must not let through (each found by an adversarial review) -------

ENTRY = "\n\ndef run_resolution_pipeline(server_args):\n"
CAUGHT_AT_LOAD = (
    """\
from sglang.srt.runtime_context import get_platform

STATE = {}
try:
    STATE["probe"] = repr(get_platform)
except BaseException:
    STATE["probe"] = None
"""
    + ENTRY
    + """\
    from sglang.srt.arg_groups.helper import helper_page

    server_args.page_size = helper_page()
"""
)
IMPORTS_ENTRY_FILE = """\
from sglang.srt.arg_groups.pipeline import STATE


def helper_page():
    return len(STATE)
"""
CLASS_BODY = (
    """\
def bad(x):
    return x.__class__


class Pick:
    try:
        PAGE = {read}
        PAGE = 1
    except Exception:
        PAGE = 99
"""
    + ENTRY
    + "    server_args.page_size = Pick.PAGE\n"
)
REDEFINED = (
    """\
def page(x):
    return 1


def page(x):
    return len(repr(x.__class__))
"""
    + ENTRY
    + "    server_args.page_size = page(server_args)\n"
)
DECORATED = (
    """\
TABLE = {}


def register(fn):
    TABLE["page"] = 64
    return fn


@register
def bad(x):
    return x.__class__
"""
    + ENTRY
    + '    server_args.page_size = TABLE.get("page", 1)\n'
)
MODULE_ATTRIBUTE = (
    """\
from sglang.srt.arg_groups import helper
"""
    + ENTRY
    + """\
    try:
        helper.bad
        server_args.page_size = 64
    except AttributeError:
        server_args.page_size = 1
"""
)
BAD_HELPER = "def bad(x):\n    return x.__class__\n"
REGISTRY = "REG = []\n\n\ndef register(f):\n    REG.append(f)\n    return f\n"
PLUGIN = """\
import msgspec

from sglang.srt.arg_groups.reg import register

register(len)
Base = msgspec.Struct
"""
USES_REGISTRY = (
    """\
from sglang.srt.arg_groups.plugin import Base  # noqa: F401
from sglang.srt.arg_groups.reg import REG
"""
    + ENTRY
    + "    server_args.page_size = len(REG)\n"
)
RETURNS = (
    ENTRY
    + """\
    if server_args.page_size is None:
        server_args.page_size = 1
    return {"page_size": 99}
"""
)
USES_REGISTRY_AND_PLUGIN = USES_REGISTRY.replace(
    "len(REG)\n", "len(REG) if server_args.page_size else Base\n"
)


def unevaluable(note_part: str):
    return ("unevaluable", note_part)


@pytest.mark.parametrize(
    "files, expected",
    [
        pytest.param({"pipeline.py": CAUGHT_AT_LOAD, "helper.py": IMPORTS_ENTRY_FILE},
                     unevaluable("repr(get_platform) is read at"), id="caught-at-load"),
        pytest.param({"pipeline.py": CLASS_BODY.format(read="bad(1)")},
                     unevaluable("code the policy forbids in bad is read at"),
                     id="class-body-withheld"),
        pytest.param({"pipeline.py": CLASS_BODY.format(read="bad")},  # read, not called
                     ("values", [1, 1, 1, 1]), id="class-body-narrowed"),
        pytest.param({"pipeline.py": CLASS_BODY.format(read="open")},
                     unevaluable("name open is read at"), id="class-body-builtin"),
        pytest.param({"pipeline.py": REDEFINED},
                     unevaluable("attribute .__class__ (at"), id="redefined"),
        pytest.param({"pipeline.py": DECORATED},
                     unevaluable("attribute .__class__ (at"), id="decorated"),
        pytest.param({"pipeline.py": MODULE_ATTRIBUTE.replace("helper.bad\n", "helper.bad(1)\n"),
                      "helper.py": BAD_HELPER, "__init__.py": ""},
                     unevaluable("code the policy forbids in bad is read at"),
                     id="module-attribute"),
        pytest.param({"pipeline.py": MODULE_ATTRIBUTE, "helper.py": BAD_HELPER, "__init__.py": ""},
                     ("values", [64, 64, 64, 64]), id="module-attribute-narrowed"),
        pytest.param({"pipeline.py": USES_REGISTRY, "plugin.py": PLUGIN, "reg.py": REGISTRY},
                     ("values", [1, 1, 1, 1]), id="import-with-effects"),
        pytest.param({"pipeline.py": USES_REGISTRY_AND_PLUGIN, "plugin.py": PLUGIN,
                      "reg.py": REGISTRY},
                     unevaluable("name msgspec is read at"), id="failed-file-with-effects"),
        pytest.param({"pipeline.py": RETURNS}, ("values", [1, None, 1, None]), id="returns"),
    ],
)  # fmt: skip
def test_what_the_code_catches_or_leaves_out_never_changes_an_outcome(tmp_path, files, expected):
    """A refusal caught as a file loads, a class body reading a refused name, a withheld
    definition that shadows an earlier one, one whose decorator would have filled a
    table, a module attribute of a withheld function, a file that stops loading after
    it changed another's table: each makes the revision unevaluable rather than give a
    table SGLang's code would not. A file imported for what its code does registers as
    it would in SGLang (`register(len)` once: page size 1), though its other statements
    (`msgspec`, from outside the resolution code) are not run. A value the entry
    returns is not its outcome."""
    tree = {f"{PKG}/{name}": text for name, text in files.items()}
    code, report, root, sha, matrix = entry_diff(tmp_path, tree, backends("null"))
    kind, want = expected
    if kind == "values":
        assert (code, report["notes"]) == (0, {}), report["notes"]
        table = evaluate_at(root, sha, load_matrix(str(matrix))).table
        assert [table.outcome_at(i).value for i in range(4)] == want
        return
    note = report["notes"].get("base", "")
    assert code == 4 and want in note, (code, note)


CONFIGURATION = '''\
"""ServerArgs resolved in __post_init__."""

import dataclasses
from typing import Optional


@dataclasses.dataclass
class ServerArgs:
    attention_backend: Optional[str] = None
    page_size: Optional[int] = None

    def __post_init__(self):
'''
STATIC = (
    CONFIGURATION
    + """\
        try:
            self.page_size = self.pick(self.page_size)
        except TypeError as error:
            self.page_size = len(str(error))

    @staticmethod
    def pick(page):
        return 5 if page is None else page
"""
)
REBOUND = (
    CONFIGURATION
    + """\
        self.page_size = self.pick(self.page_size)

    def pick(page, other=None):
        return 5 if other is None else 7

    pick = staticmethod(pick)
"""
)


def post_init_repo(tmp_path: Path, text: str) -> tuple[Path, str, Path]:
    """A one-commit repository whose server_args.py is `text`, and a matrix whose entry is
    its `ServerArgs.__post_init__`: (repo, sha, matrix)."""
    root = tmp_path / "repo"
    sha = FixtureRepo(root).commit("post-init", {"python/sglang/srt/server_args.py": text})
    matrix = tmp_path / "m.yaml"
    matrix.write_text(HEADER.replace(f"path: {PKG}/pipeline.py, entry: run_resolution_pipeline",
                                     "path: python/sglang/srt/server_args.py, "
                                     "entry: ServerArgs.__post_init__") + backends("fa3"))  # fmt: skip
    return root, sha, matrix


def test_a_static_method_is_called_without_the_configuration(tmp_path):
    """`self.pick(x)` on a `@staticmethod` passes x alone, as Python does (5 when unset,
    else the input), never the configuration too (a TypeError whose text would name
    the harness's copy of the method)."""
    root, sha, matrix = post_init_repo(tmp_path, STATIC)
    table = evaluate_at(root, sha, load_matrix(str(matrix))).table
    assert [table.outcome_at(i).value for i in range(4)] == [5, 1, 5, 1]


SETS_TABLE = """\
TABLE = {}


def mark(*args, **kwargs):
    TABLE["page"] = 64
    return object
"""
READS_TABLE = ENTRY + '    server_args.page_size = TABLE.get("page", 1)\n'
ANNOTATED_CLASS = (
    "class Bad:\n    hint: mark()\n\n    def get(self):\n        return self.__class__\n"
)
LOAD_TIME = {
    "argument-annotation": "def bad(x: mark()):\n    return x.__class__\n",
    "metaclass": "class Bad(metaclass=mark):\n    def get(self):\n        return self.__dict__\n",
    "subscript-default": "import typing\n\n\ndef bad(x=typing.Optional[mark()]):\n"
                         "    return x.__class__\n",
}  # fmt: skip
SIDE_IMPORT = "from sglang.srt.arg_groups.reg import REG\n\nREG.append(1)\n"
IMPORTS_FOR_EFFECT = {
    "guarded": "try:\n    import sglang.srt.arg_groups.plugin  # noqa: F401\nexcept ImportError:\n"
               "    pass\n",
    "package": "import sglang.srt.arg_groups.sub.leaf  # noqa: F401\n",
}  # fmt: skip


@pytest.mark.parametrize("shape", list(LOAD_TIME))
def test_a_definition_whose_load_time_code_runs_the_repository_is_not_left_out(tmp_path, shape):
    """A forbidden definition is left out only if nothing in it runs as its file loads:
    an annotation Python evaluates, a metaclass, a subscript's index calling the
    repository's code would have set the table; the revision is refused instead."""
    text = SETS_TABLE + "\n\n" + LOAD_TIME[shape] + READS_TABLE
    code, report, *_ = entry_diff(tmp_path, {f"{PKG}/pipeline.py": text}, backends("null"))
    note = report["notes"].get("base", "")
    assert code == 4 and "is not allowed in evaluated code" in note, (code, note)


def test_a_class_whose_making_runs_the_repository_is_kept_with_its_methods_narrowed(tmp_path):
    """A class whose annotation calls the repository's code as the file loads (it sets
    the table) and whose method holds a forbidden construct no cell reaches: the class
    is made as Python makes it, so every cell reads what plain Python reads."""
    resolves_as_python(tmp_path, SETS_TABLE + "\n\n" + ANNOTATED_CLASS + READS_TABLE)


def effect_files(shape: str) -> dict[str, str]:
    return {f"{PKG}/__init__.py": "", f"{PKG}/reg.py": "REG = []\n",
            f"{PKG}/plugin.py": SIDE_IMPORT, f"{PKG}/sub/__init__.py": SIDE_IMPORT,
            f"{PKG}/sub/leaf.py": "LEAF = 1\n",
            f"{PKG}/pipeline.py": "from sglang.srt.arg_groups.reg import REG\n"
            + IMPORTS_FOR_EFFECT[shape] + ENTRY + "    server_args.page_size = len(REG)\n"}  # fmt: skip


def test_a_package_imported_for_its_effects_runs_them(tmp_path):
    """`import a.sub.leaf` runs the package `a/sub/__init__.py` first: what it appends to
    the table the entry reads is there (one item: page size 1 on every cell)."""
    code, report, root, sha, matrix = entry_diff(tmp_path, effect_files("package"),
                                                 backends("null"))  # fmt: skip
    assert (code, report["notes"]) == (0, {}), report["notes"]
    table = evaluate_at(root, sha, load_matrix(str(matrix))).table
    assert [table.outcome_at(i).value for i in range(4)] == [1, 1, 1, 1]


def test_an_import_for_its_effects_inside_try_is_refused_naming_it(tmp_path):
    """Whether an import in a `try` runs is not read: a file imported there whose code
    does more than bind names makes the entry unevaluable, naming the import and the
    statement."""
    code, report, *_ = entry_diff(tmp_path, effect_files("guarded"), backends("null"))
    note = report["notes"].get("base", "")
    assert code == 4 and f"pipeline.py:2 imports {PKG}/plugin.py in a block" in note, note
    assert f"module-level code at {PKG}/plugin.py:3 may change" in note, note


def test_a_method_its_class_binds_again_is_refused_where_called(tmp_path):
    """`pick = staticmethod(pick)` in the class body: how SGLang's class binds the method
    is not read, so calling it on the configuration is refused (exit 4), never run as a
    plain method (7, where Python gives 5)."""
    root, sha, matrix = post_init_repo(tmp_path, REBOUND)
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix), "--format",
                   "json", "--no-cache")  # fmt: skip
    note = json.loads(done.out)["notes"]["base"]
    assert done.code == 4 and "self.pick is read at" in note and "rebound" in note, note


# --- what importing the resolution code runs, and when -----------------------------

REGBASE = """\
REG = []


def register(tag):
    def deco(fn):
        REG.append(tag)
        return fn

    return deco
"""
FAMILY = """\
from sglang.srt.arg_groups.regbase import register


@register("{tag}")
def _provider(server_args):
    return {{}}
"""
READS_REG = "from sglang.srt.arg_groups.regbase import REG\n"
SETS_BACKEND = '    server_args.attention_backend = ",".join(REG) or "none"\n'
INTERLEAVED = (
    FAMILY.format(tag="x") + "\n\nfrom sglang.srt.arg_groups import y  # noqa: E402, F401\n"
)
LAZY = """\
def helper():
    from sglang.srt.arg_groups import x  # noqa: F401

    return "!"
"""
NESTED = """\
from sglang.srt.arg_groups.regbase import register

try:

    @register("x")
    def _provider(server_args):
        return {}

except ImportError:
    pass
"""


def line_of(text: str, fragment: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


@pytest.mark.parametrize(
    "files, says",
    [
        ({"x.py": INTERLEAVED, "y.py": FAMILY.format(tag="y"),
          "pipeline.py": READS_REG + "import sglang.srt.arg_groups.x  # noqa: F401\n" + ENTRY
          + SETS_BACKEND},
         f"{PKG}/x.py:{line_of(INTERLEAVED, 'def _provider')} changes what the resolution "
         f"reads before {PKG}/x.py:{line_of(INTERLEAVED, 'import y')} imports"),
        ({"x.py": FAMILY.format(tag="x"), "lazy.py": LAZY,
          "pipeline.py": READS_REG + "from sglang.srt.arg_groups.lazy import helper\n" + ENTRY
          + "    helper()\n" + SETS_BACKEND},
         f"{PKG}/lazy.py:2 imports {PKG}/x.py in a function"),
    ],
    ids=["registers-before-importing", "imported-in-a-function"],
)  # fmt: skip
def test_a_registration_python_would_run_at_another_moment_is_refused(tmp_path, files, says):
    """Python runs x's registration before y's (it registers, then imports y), or when
    a function first imports it; harness loads each file whole, before the call: the
    entry is refused (exit 4), naming where, rather than joined in another order."""
    tree = {f"{PKG}/regbase.py": REGBASE, **{f"{PKG}/{n}": t for n, t in files.items()}}
    code, report, *_ = entry_diff(tmp_path, tree, backends("null"))
    note = report["notes"].get("base", "")
    assert code == 4 and says in note, note


def test_a_registering_definition_inside_try_registers_as_the_file_loads(tmp_path):
    """`@register` on a def inside `try:` runs as the file loads: the table holds it
    (attention backend "x" on every cell, as plain Python gives)."""
    tree = {f"{PKG}/regbase.py": REGBASE, f"{PKG}/x.py": NESTED,
            f"{PKG}/pipeline.py": READS_REG + "import sglang.srt.arg_groups.x  # noqa: F401\n"
            + ENTRY + SETS_BACKEND.replace("attention_backend", "page_size")}  # fmt: skip
    code, report, root, sha, matrix = entry_diff(tmp_path, tree, backends("null"))
    assert (code, report["notes"]) == (0, {}), report["notes"]
    table = evaluate_at(root, sha, load_matrix(str(matrix))).table
    assert [table.outcome_at(i).value for i in range(4)] == ["x"] * 4


POSTPONED_REFUSED = {
    "walrus": "def helper(size: (unit := 1)) -> int:\n",
    "yield": "def helper(size: (yield)) -> int:\n",
    "await-return": "async def helper(size) -> (await size):\n",
}


@pytest.mark.parametrize("shape", sorted(POSTPONED_REFUSED))
def test_an_annotation_pythons_compiler_refuses_is_refused_in_a_postponed_file(tmp_path, shape):
    """Under `from __future__ import annotations` no annotation runs, but Python's
    compiler refuses a walrus, a `yield` or an `await` in one (SyntaxError: SGLang's
    import fails). Stripped, the file compiled and every cell answered (found by a
    review): now the revision cannot be evaluated, naming the line."""
    text = (
        '"""Resolution."""\n\nfrom __future__ import annotations\n\n\n'
        + POSTPONED_REFUSED[shape]
        + "    return 16\n\n\ndef run_resolution_pipeline(server_args):\n"
        "    if server_args.page_size is None:\n        server_args.page_size = 16\n"
    )
    with pytest.raises(SyntaxError):
        compile(text, "pipeline.py", "exec")
    code, report, *_ = entry_diff(tmp_path, {f"{PKG}/pipeline.py": text}, backends("null"))
    note = report["notes"].get("base", "")
    assert code == 4 and f"syntax error in {PKG}/pipeline.py line 6" in note, (code, note)
