"""An entry target (`target: {entry: run_resolution_pipeline}`): the resolution as the
project's own entry point runs it, its handlers with their `if`s, early returns,
asserts and raised validations, the passes they call in their order, and the fields
they assign or declare on the configuration they are handed.

A small SGLang-shaped repository is built in tmp_path: `pipeline.py` runs a
speculative handler and two passes through `run_hook` and `run_post_process_pass`,
declares through `declare_resolution` and assigns one field itself. Declarations go to
a stash, as SGLang's do: a pass reads them over the configuration, a handler through a
live view, a plain read of the configuration sees the field as it was, and the result
is each field's last declaration, else the field. Each commit changes one thing a
handler does. The expected outcome of every cell comes from
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.engine.outcome import ERROR
from harness.engine.outputs import Inputs, declared
from harness.matrix.load import load_matrix
from harness.testing.gitrepo import FixtureRepo
from tests.conftest import one_line_error, run_cli
from tests.helpers import evaluate_at

PKG = "python/sglang/srt/arg_groups"
FIELDS = """\
    model_path: str = "meta-llama/Llama-3.1-8B-Instruct"
    attention_backend: Optional[str] = None
    page_size: Optional[int] = None
    speculative_algorithm: Optional[str] = None
    speculative_eagle_topk: Optional[int] = None
"""  # ServerArgs's fields before the registry (POST_INIT, below)
DATACLASS_HEAD = '''\
# Written for harness's tests, shaped like SGLang's server_args.py.
"""Server arguments: one dataclass, its defaults and metadata declared field by field."""

from __future__ import annotations

import dataclasses
from typing import Annotated, List, Optional

from sglang.srt.arg_groups.arg_utils import Arg


@dataclasses.dataclass
class ServerArgs:
'''
SERVER_ARGS = (
    DATACLASS_HEAD
    + """\
    model_path: str = "meta-llama/Llama-3.1-8B-Instruct"
    attention_backend: Annotated[Optional[str], Arg(resolvable=True)] = None
    page_size: Annotated[Optional[int], Arg(resolvable=True)] = None
    speculative_algorithm: Optional[str] = None
    speculative_eagle_topk: Annotated[Optional[int], Arg(resolvable=True)] = None
    speculative_num_steps: Optional[int] = None
"""
)
ARG_UTILS = '''\
"""Field metadata, carried in `Annotated` annotations."""

import dataclasses
from typing import Annotated, get_args, get_origin, get_type_hints


@dataclasses.dataclass(frozen=True)
class Arg:
    resolvable: bool = False


def resolvable_fields(cls) -> frozenset:
    """The fields whose annotation carries `Arg(resolvable=True)`."""
    hints = get_type_hints(cls, include_extras=True)
    marked = set()
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        if get_origin(hint) is Annotated and any(
            isinstance(item, Arg) and item.resolvable for item in get_args(hint)[1:]
        ):
            marked.add(field.name)
    return frozenset(marked)
'''
# SGLang's declaration machinery (its overrides.py and model_override_base.py), in our
# words: a pass reads a snapshot of the declarations over the configuration, handlers a
# live view; declarations go to a stash on the configuration and never to its fields;
# the resolution's result is each field's last declaration, else the field.
RUN_PASS = """\
def run_post_process_pass(server_args: Any, fn: Callable[..., dict]) -> None:
    declared = fn(ResolvedView(server_args, overlay=_declaration_overlay(server_args)))
    if not isinstance(declared, dict):
        raise TypeError(
            f"post-process pass {fn.__qualname__} must return a dict, "
            f"got {type(declared).__name__}"
        )
    if declared:
        declare_resolution(server_args, fn.__qualname__, **declared)
        validate_declarations(server_args, [(fn.__qualname__, dict(declared))])
"""
VALIDATE = """\
def validate_declarations(server_args: Any, declarations: list) -> None:
    if not dataclasses.is_dataclass(type(server_args)):
        return
    allowed = resolvable_fields(type(server_args))
    for source, fields in declarations:
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(
                f"{source}: {sorted(unknown)} not model-overridable; declarations are "
                "limited to the fields the publish gate accepts."
            )
"""
DECLARE = """\
def declare_resolution(server_args: Any, source: str, **fields: Any) -> None:
    stash = getattr(server_args, "_resolved_overrides", None)
    if stash is None:
        stash = []
        server_args._resolved_overrides = stash
    stash.append((source, dict(fields)))


def resolution_result(server_args: Any, field: str) -> Any:
    for _source, fields in reversed(getattr(server_args, "_resolved_overrides", None) or ()):
        if field in fields:
            return fields[field]
    return getattr(server_args, field)
"""
MACHINERY = RUN_PASS + "\n\n" + VALIDATE + "\n\n" + DECLARE

OVERRIDES = '''\
# Written for harness's tests, shaped like SGLang's overrides.py.
"""Post-process passes, and the functions that run them and record what they declare."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from sglang.srt.arg_groups.arg_utils import resolvable_fields
from sglang.srt.arg_groups.model_override_base import (  # noqa: F401
    ResolvedView,
    _declaration_overlay,
    resolving_view,
)
from sglang.srt.runtime_context import get_platform

POST_PROCESS_PASSES: list = []


def register_post_process(fn: Callable[..., dict]) -> Callable[..., dict]:
    POST_PROCESS_PASSES.append(fn)
    return fn


'''
PASSES = """\

@register_post_process
def _attention_backend_default(view: Any) -> dict:
    if view.attention_backend is not None:
        return {{}}
    return {{"attention_backend": "fa4" if get_platform().is_sm100 else "fa3"}}


@register_post_process
def _page_size_default(view: Any) -> dict:
    return {{"page_size": {page_default}}} if view.page_size is None else {{}}
"""

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

SNAPSHOT_VIEW = '''\
class ResolvedView:
    """The declarations made so far, over the configuration; read-only."""

    __slots__ = ("_server_args", "_overlay")

    def __init__(self, server_args: Any, overlay: Optional[Dict[str, Any]] = None):
        object.__setattr__(self, "_server_args", server_args)
        object.__setattr__(self, "_overlay", overlay or {})

    def __getattr__(self, name: str) -> Any:
        overlay = object.__getattribute__(self, "_overlay")
        if name in overlay:
            return overlay[name]
        return getattr(object.__getattribute__(self, "_server_args"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ResolvedView is read-only")


def _declaration_overlay(server_args: Any) -> Dict[str, Any]:
    overlay: Dict[str, Any] = {}
    for _source, fields in getattr(server_args, "_resolved_overrides", None) or ():
        overlay.update(fields)
    return overlay


def resolved_view(server_args: Any) -> ResolvedView:
    return ResolvedView(server_args, overlay=_declaration_overlay(server_args))
'''
BASE_HEAD = '''\
# Written for harness's tests, shaped like SGLang's model_override_base.py.
"""The views every handler and pass reads the configuration through."""

from __future__ import annotations

from typing import Any, Dict, Optional


'''
RECORD_OF = """\
def record_of(view: Any) -> Any:
    return object.__getattribute__(view, "_server_args")
"""
LIVE_VIEW = '''\
class ResolvingConfig:
    """Each read sees the declarations made by then."""

    __slots__ = ("_server_args",)

    def __init__(self, server_args: Any):
        object.__setattr__(self, "_server_args", server_args)

    def __getattr__(self, name: str) -> Any:
        server_args = object.__getattribute__(self, "_server_args")
        for _source, fields in reversed(getattr(server_args, "_resolved_overrides", None) or ()):
            if name in fields:
                return fields[name]
        return getattr(server_args, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ResolvingConfig is read-only")


def resolving_view(server_args: Any) -> ResolvingConfig:
    return ResolvingConfig(server_args)
'''
BASE = BASE_HEAD + SNAPSHOT_VIEW + "\n\n" + RECORD_OF + "\n\n" + LIVE_VIEW

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


def entry_matrix(name: str, axes: dict[str, list], outputs: tuple[str, ...]) -> str:
    """The text of a matrix running `pipeline.py`'s entry over `axes`."""
    lines = "".join(f"  {axis}: [{', '.join('null' if v is None else str(v) for v in values)}]\n"
                    for axis, values in axes.items())  # fmt: skip
    return (f"name: {name}\ntarget:\n  path: {PKG}/pipeline.py\n  entry: run_resolution_pipeline\n"
            f"  output: [{', '.join(outputs)}]\nworld: sglang\naxes:\n{lines}")  # fmt: skip


MATRIX = entry_matrix("entry-test", AXES, OUTPUTS)


def files(version: dict) -> dict[str, str]:
    return {
        "python/sglang/srt/server_args.py": SERVER_ARGS,
        f"{PKG}/__init__.py": "",
        f"{PKG}/arg_utils.py": ARG_UTILS,
        f"{PKG}/model_override_base.py": BASE,
        f"{PKG}/overrides.py": OVERRIDES
        + MACHINERY
        + PASSES.format(page_default=version["page_default"]),
        f"{PKG}/resolution_hooks.py": HOOKS,
        f"{PKG}/speculative_hook.py": SPECULATIVE.format(
            check=version["check"], topk_default=version["topk_default"]
        ),
        f"{PKG}/pipeline.py": PIPELINE.format(fa4_condition=version["fa4_condition"]),
    }


def cells(axes: dict[str, list] = AXES) -> list[dict]:
    return [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())]


@contextlib.contextmanager
def imported(root: Path, platform: str, stubs: dict[str, types.ModuleType] | None = None):
    """The package written at `root` imported by plain Python, with SGLang's runtime
    answering `get_platform()` for `platform` (and the modules `stubs` holds, by name, in
    place of SGLang's); sys.modules and sys.path restored after."""
    saved = {k: v for k, v in sys.modules.items() if k == "sglang" or k.startswith("sglang.")}
    sys.path.insert(0, str(root / "python"))
    runtime = types.ModuleType("sglang.srt.runtime_context")
    runtime.get_platform = lambda: types.SimpleNamespace(is_sm100=platform == "sm100")
    try:
        for name in [k for k in sys.modules if k == "sglang" or k.startswith("sglang.")]:
            del sys.modules[name]
        sys.modules["sglang.srt.runtime_context"] = runtime
        sys.modules.update(stubs or {})
        from sglang.srt.arg_groups.pipeline import run_resolution_pipeline
        from sglang.srt.server_args import ServerArgs

        yield ServerArgs, run_resolution_pipeline
    finally:
        sys.path.remove(str(root / "python"))
        for name in [k for k in sys.modules if k == "sglang" or k.startswith("sglang.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def outcome_of(run: Callable[[Any], Any], server_args: Any, read: Callable[[Any], Any]) -> Any:
    """What `run(server_args)` resolves in plain Python, as harness tabulates a cell:
    `read(server_args)`, or (ERROR, "Type: message") for whatever it raises."""
    try:
        run(server_args)
    except Exception as exc:  # every error is an outcome, as the harness has it
        return (ERROR, f"{type(exc).__name__}: {exc}".rstrip(": "))
    return read(server_args)


WORLD_AXES = ("platform", "architecture")  # what the world answers, not ServerArgs fields


def plain_outcomes(
    root: Path, axes: dict[str, list] = AXES, outputs: tuple[str, ...] = OUTPUTS,
    stubs: Callable[[dict], dict[str, types.ModuleType]] = lambda cell: {},
    world: tuple[str, ...] = WORLD_AXES,
) -> list:  # fmt: skip
    """Per cell (matrix order), what the files at `root` resolve, run in plain Python
    (`stubs(cell)`: modules of SGLang answering the cell; the axes in `world` are theirs
    to answer, not ServerArgs fields): the output fields' values, or ("error", "Type:
    message")."""
    found = []
    for cell in cells(axes):
        inputs = {k: v for k, v in cell.items() if k not in world}
        with imported(root, cell.get("platform", "sm90"), stubs(cell)) as (configuration, run):
            server_args = configuration(**inputs)
            try:
                run(server_args)
            except Exception as exc:  # every error is an outcome, as the harness has it
                found.append((ERROR, f"{type(exc).__name__}: {exc}".rstrip(": ")))
                continue
            result = resolution_result()
        found.append(tuple(result(server_args, f) for f in outputs))
    return found


def resolution_result() -> Callable[[Any, str], Any]:
    """How the package imported reads a field's resolved value: its overrides module's
    `resolution_result(server_args, field)` (the last declaration in the stash, else the
    field), where it has one; else the field."""
    overrides = sys.modules.get("sglang.srt.arg_groups.overrides")
    return getattr(overrides, "resolution_result", getattr)


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


def harness_outcomes(
    root: Path, sha: str, matrix_path: Path, exhaustive: bool = False, outputs=OUTPUTS
) -> list:
    """Per cell (matrix order), the `outputs` harness resolves at `sha` (each field's
    input where nothing set it), or (kind, value) for an error."""
    matrix = load_matrix(str(matrix_path))
    table = evaluate_at(root, sha, matrix, exhaustive=exhaustive).table
    inputs = Inputs(matrix)
    found = []
    for index in range(matrix.size):
        outcome = table.outcome_at(index)
        fields = declared(outcome, outputs)
        if fields is None:
            found.append((outcome.kind, outcome.value))
        else:
            found.append(tuple(fields[f] if f in fields else inputs.one(f, index) for f in outputs))
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


def check_diff(history: tuple, base: str, head: str) -> None:
    """`harness diff` of two commits of a fixture `history` (root, shas, matrix, expected)
    reports exactly the cells whose plain-Python outcomes differ."""
    root, shas, matrix, expected = history
    done = run_cli("diff", shas[base], shas[head], "--repo", str(root), "--matrix",
                   str(matrix), "--format", "json", "--no-cache")  # fmt: skip
    report = json.loads(done.out)
    assert (done.code, len(report["changed"])) == (1, changed(expected, base, head)), done.err


def check_history(history: tuple) -> None:
    """`harness history` lists each commit of the fixture with the number of cells its
    plain-Python outcomes change from the commit before."""
    root, shas, matrix, expected = history
    done = run_cli("history", "--repo", str(root), "--matrix", str(matrix), "--format", "json")
    want = [(shas[b], changed(expected, a, b)) for a, b in itertools.pairwise(expected)]
    assert [(c["sha"], c["cells_changed"]) for c in json.loads(done.out)["commits"]] == want


@pytest.mark.parametrize("base, head", list(itertools.pairwise(VERSIONS)))
def test_diff_reports_exactly_the_cells_that_change(repo, base, head):
    check_diff(repo, base, head)


def test_history_lists_each_commit_that_changes_outcomes(repo):
    check_history(repo)


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
{FIELDS}
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
    texts = {key: POST_INIT.format(FIELDS=FIELDS, **v) for key, v in POST_INIT_VERSIONS.items()}
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


def test_explain_shows_the_error_a_handler_raised_for_the_cell(repo):
    """`harness explain` on an entry: the outcome is the assert the speculative handler
    raised, and the trace says the entry reached nothing of its own before it."""
    root, shas, matrix, expected = repo
    cell = {"attention_backend": "fa4", "platform": "sm100", "page_size": None,
            "speculative_algorithm": "EAGLE", "speculative_eagle_topk": 4,
            "speculative_num_steps": None}  # fmt: skip
    wanted = expected["assert"][cells().index(cell)]
    assert wanted == (ERROR, "AssertionError: set the number of steps")  # the code's own
    where = [arg for k, v in cell.items()
             for arg in ("--where", f"{k}={'null' if v is None else v}")]  # fmt: skip
    done = run_cli("explain", shas["assert"], "--repo", str(root), "--matrix", str(matrix),
                   *where)  # fmt: skip
    assert done.code == 0, done.err
    assert "outcome: AssertionError: set the number of steps" in done.out, done.out
    assert "(nothing traced: the target reached no condition" in done.out, done.out
