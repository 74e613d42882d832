"""The configuration as SGLang assembles it from 0.5.20 on: namespace records
(`class Memory(msgspec.Struct)`), whose class bodies make `Derived(...)` metadata as
they load, collected into `ServerArgs`; and the record helpers of `arg_utils.py` the
resolution asks about it (`record_fields`, `is_record`, `field_names`,
`resolvable_fields`, `with_fallback`), its `_raw_input` snapshot of every field,
`resolution_result` with a declared `Arg(fallback=...)`, `declare_resolution` of a
name that is no field, `record_foreign_defaults`, `copy.deepcopy` of the code's own
dataclass, a handler holding what the policy forbids behind an `if`, and a helper
outside the resolution code reading `envs`.

The expected outcome of every cell comes from running the fixture's own files in
plain Python, with a `msgspec` module of our own (a `Struct` base collecting its
annotated fields, `field`, `structs.fields`, `defstruct`) and `envs` answered from
the cell: never from harness.
"""

from __future__ import annotations

import types

import pytest

from harness.engine.outcome import ERROR
from tests.test_entry import (
    BASE,
    DATACLASS_HEAD,
    DECLARE,
    HOOKS,
    PKG,
    RUN_PASS,
    VALIDATE,
    cells,
    harness_outcomes,
    imported,
    outcome_of,
)
from tests.test_entry_class import commit_files, diff_note

MSGSPEC = '''\
"""A small stand-in for msgspec, for running the fixture in plain Python."""

NODEFAULT = object()


class _Field:
    def __init__(self, default=NODEFAULT, default_factory=NODEFAULT):
        self.default, self.default_factory = default, default_factory


def field(default=NODEFAULT, default_factory=NODEFAULT):
    return _Field(default, default_factory)


class FieldInfo:
    def __init__(self, name, default, default_factory):
        self.name, self.default, self.default_factory = name, default, default_factory


class Struct:
    __struct_fields__ = ()

    def __init_subclass__(cls, frozen=False, **options):
        infos = []
        for base in reversed(cls.__mro__[1:]):
            infos += list(getattr(base, "__field_infos__", ()))
        for name in cls.__dict__.get("__annotations__", {}):
            value = cls.__dict__.get(name, NODEFAULT)
            if isinstance(value, _Field):
                infos.append(FieldInfo(name, value.default, value.default_factory))
            else:
                infos.append(FieldInfo(name, value, NODEFAULT))
        cls.__field_infos__ = tuple(infos)
        cls.__struct_fields__ = tuple(info.name for info in infos)

    def __init__(self, **given):
        for info in type(self).__field_infos__:
            if info.name in given:
                value = given.pop(info.name)
            elif info.default_factory is not NODEFAULT:
                value = info.default_factory()
            else:
                value = info.default
            object.__setattr__(self, info.name, value)
        if given:
            raise TypeError(f"unexpected {sorted(given)}")


class structs:
    @staticmethod
    def fields(cls):
        return cls.__field_infos__


def defstruct(name, fields, namespace=None, dict=False):
    annotations, body = {}, {}
    for entry in fields:
        annotations[entry[0]] = entry[1]
        if len(entry) == 3:
            body[entry[0]] = entry[2]
    return type(name, (Struct,), {**(namespace or {}), **body, "__annotations__": annotations})
'''

ARG_UTILS = '''\
# Written for harness's tests, shaped like SGLang's arg_utils.py (0.5.20 on).
"""Field metadata, and what a record's fields are."""

from __future__ import annotations

import functools
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import msgspec

A = Annotated


class Arg(msgspec.Struct, frozen=True):
    """How a field is given and resolved."""

    help: str = ""
    resolvable: bool = False
    fallback: Any = None


class Derived(msgspec.Struct, frozen=True):
    """A value computed at publication, not an input."""

    doc: str = ""
    default: Any = None


def _arg_of(hint):
    if get_origin(hint) is not Annotated:
        return None
    for item in get_args(hint)[1:]:
        if isinstance(item, str):
            return Arg(help=item)
        if isinstance(item, Arg):
            return item
    return None


def record_fields(cls):
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        return msgspec.structs.fields(cls)
    return ()


def is_record(cls) -> bool:
    target = cls if isinstance(cls, type) else type(cls)
    return issubclass(target, msgspec.Struct)


@functools.cache
def field_names(cls) -> frozenset:
    return frozenset(field.name for field in record_fields(cls))


@functools.cache
def resolvable_fields(cls) -> frozenset:
    hints = get_type_hints(cls, include_extras=True)
    found = set()
    for field in record_fields(cls):
        arg = _arg_of(hints[field.name])
        if arg is not None and arg.resolvable:
            found.add(field.name)
    return frozenset(found)


@functools.cache
def fallbacks_of(cls) -> dict:
    hints = get_type_hints(cls, include_extras=True)
    found = {}
    for field in record_fields(cls):
        arg = _arg_of(hints[field.name])
        if arg is not None and arg.fallback is not None:
            assert not isinstance(arg.fallback, (list, dict, set)), (
                f"{cls.__name__}.{field.name}: a mutable fallback would be shared by "
                "every reader -- use a scalar"
            )
            assert field.default is None, (
                f"{cls.__name__}.{field.name}: declares a fallback but defaults to "
                f"{field.default!r}, so the fallback is unreachable"
            )
            found[field.name] = arg.fallback
    return found


def with_fallback(cls, name: str, value: Any) -> Any:
    if value is not None:
        return value
    return fallbacks_of(cls).get(name, value)
'''

MEMORY = '''\
"""Config fields of the ``memory`` namespace."""

from __future__ import annotations

from typing import List, Optional

import msgspec

from sglang.srt.arg_groups.arg_utils import A, Arg, Derived


class Memory(msgspec.Struct):
    """Namespace ``memory``."""

    _NS_PATH = "memory"

    page_size: A[
        Optional[int],
        Arg(help="Tokens per KV-cache page.", resolvable=True),
    ] = None
    mem_fraction: A[
        Optional[float],
        Arg(help="Share of memory for the KV cache.", resolvable=True, fallback=0.8),
    ] = None
    chunk: A[int, "Chunked prefill size; -1 disables it."] = -1
    window: A[int, "Sliding window, in tokens."] = 4 * 1024
    allowed_domains: A[List[str], "Media domains."] = msgspec.field(default_factory=list)
    reserved = Derived(
        doc=(
            "Memory kept back at publication; nobody types it and nothing "
            "computes it from the configuration."
        ),
        default=None,
    )
'''
MODEL = '''\
"""Config fields of the ``model`` namespace."""

from __future__ import annotations

from typing import Optional

import msgspec

from sglang.srt.arg_groups.arg_utils import A, Arg


class Model(msgspec.Struct):
    """Namespace ``model``."""

    _NS_PATH = "model"

    model_path: A[str, "Where the weights are."] = "org/model"
    attention_backend: A[
        Optional[str],
        Arg(help="Attention kernels.", resolvable=True),
    ] = None
    watermark_config: A[Optional[str], "Watermark settings."] = None
'''
SERVER_ARGS = '''\
# Written for harness's tests, shaped like SGLang's server_args.py (0.5.20 on).
"""Server arguments, assembled from the namespace records."""

from __future__ import annotations

from typing import get_type_hints

import msgspec

from sglang.srt.arg_groups.fields.memory import Memory
from sglang.srt.arg_groups.fields.model import Model


class ServerArgs:
    """Raw server configuration."""

    def __post_init__(self):
        """Resolution runs later."""


_INPUT_NAMESPACES = [Model, Memory]



def _default(info):
    if info.default_factory is msgspec.NODEFAULT:
        return info.default
    return msgspec.field(default_factory=info.default_factory)


_FIELDS = [
    (info.name, get_type_hints(namespace, include_extras=True)[info.name], _default(info))
    for namespace in _INPUT_NAMESPACES
    for info in msgspec.structs.fields(namespace)
]
ServerArgs = msgspec.defstruct(
    "ServerArgs",
    _FIELDS,
    namespace={k: v for k, v in vars(ServerArgs).items() if not k.startswith("__")},
    dict=True,
)
'''
OVERRIDES = '''\
# Written for harness's tests, shaped like SGLang's overrides.py (0.5.20 on).
"""The functions that run passes and record what they declare."""

from __future__ import annotations

from typing import Any, Callable

from sglang.srt.arg_groups.arg_utils import (
    field_names,
    is_record,
    resolvable_fields,
    with_fallback,
)
from sglang.srt.arg_groups.model_override_base import (  # noqa: F401
    ResolvedView,
    _declaration_overlay,
    resolving_view,
)


{declare}


{validate}

class _ForeignDefaults:
    __slots__ = ("_cfg", "_written")

    def __init__(self, server_args: Any):
        object.__setattr__(self, "_cfg", resolving_view(server_args))
        object.__setattr__(self, "_written", {})

    def __getattr__(self, name: str) -> Any:
        written = object.__getattribute__(self, "_written")
        if name in written:
            return written[name]
        return getattr(object.__getattribute__(self, "_cfg"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__getattribute__(self, "_written")[name] = value


def record_foreign_defaults(server_args: Any, source: str, resolve: Callable) -> Any:
    if not is_record(server_args):
        return resolve(server_args)
    recorder = _ForeignDefaults(server_args)
    result = resolve(recorder)
    written = {
        name: value
        for name, value in object.__getattribute__(recorder, "_written").items()
        if name in field_names(type(server_args))
    }
    if written:
        declare_resolution(server_args, source, **written)
    return result


def resolution_result(server_args: Any, field: str, default: Any = None) -> Any:
    for _source, declared in reversed(getattr(server_args, "_resolved_overrides", None) or ()):
        if field in declared:
            return declared[field]
    raw = getattr(server_args, "_raw_input", None)
    if raw is not None and field in raw:
        return with_fallback(type(server_args), field, raw[field])
    return with_fallback(type(server_args), field, getattr(server_args, field, default))


'''
GRAPH = '''\
"""The CUDA-graph settings the handlers copy before changing them."""

import dataclasses
from typing import Optional


@dataclasses.dataclass
class PhaseConfig:
    backend: str = "breakable"
    max_bs: Optional[int] = None


@dataclasses.dataclass
class GraphConfig:
    decode: PhaseConfig = dataclasses.field(default_factory=PhaseConfig)
    prefill: PhaseConfig = dataclasses.field(default_factory=PhaseConfig)
'''
COMMON = '''\
"""Helpers outside the resolution code."""

from sglang.srt.environ import envs


def spec_rows_enabled() -> bool:
    return envs.SGLANG_SPEC_ROWS.get()
'''
ENVIRON = '''\
"""Environment variables SGLang reads, with their defaults."""


class EnvBool:
    def __init__(self, default):
        self.default = default


class Envs:
    SGLANG_SPEC_ROWS = EnvBool(False)


envs = Envs()
'''
PIPELINE = '''\
# Written for harness's tests, shaped like SGLang's pipeline.py (0.5.20 on).
"""Ordered configuration resolution."""

from __future__ import annotations

import copy
from typing import Any

from sglang.srt.arg_groups.arg_utils import record_fields
from sglang.srt.arg_groups.fields.memory import Memory  # noqa: F401  (it loads, as it does there)
from sglang.srt.arg_groups.graph import GraphConfig
from sglang.srt.arg_groups.overrides import (
    declare_resolution,
    record_foreign_defaults,
    resolution_result,
    resolving_view,
    run_post_process_pass,
)
from sglang.srt.arg_groups.resolution_hooks import run_hook
from sglang.srt.utils.common import spec_rows_enabled


def _page_size_default(view: Any) -> dict:
    return {{"page_size": 16}} if view.page_size is None else {{}}


def handle_watermark(server_args: Any) -> None:
    cfg = resolving_view(server_args)
    if cfg.watermark_config is None:
        return
    names = [name for name in type(cfg).__struct_fields__]
    declare_resolution(server_args, "watermark", page_size=len(names))


def handle_memory(server_args: Any) -> None:
    cfg = resolving_view(server_args)
    raw = (getattr(server_args, "_raw_input", None) or {{}}).get("mem_fraction")
    share = resolution_result(server_args, "mem_fraction")
    graphs = GraphConfig()
    copied = copy.deepcopy(graphs)
    copied.decode.max_bs = 8 if share > 0.6 else 4
    if cfg.attention_backend == "wide" and raw is None:
        declare_resolution(server_args, "memory", window=cfg.window * 2)
    if copied.decode.max_bs == 8 and graphs.decode.max_bs is None:
        declare_resolution(server_args, "memory", chunk=cfg.window + cfg.chunk)


def _plugin_defaults(cfg: Any) -> str:
    if cfg.attention_backend is None:
        cfg.attention_backend = "plugin"
    cfg.scratch = 1
    return "ran"


def handle_platform(server_args: Any) -> None:
    record_foreign_defaults(server_args, "platform:plugin", _plugin_defaults)


def handle_unknown(server_args: Any) -> None:
    cfg = resolving_view(server_args)
    if cfg.attention_backend == "bad":
        declare_resolution(server_args, "unknown", not_a_field=1)


def run_resolution_pipeline(server_args: Any) -> None:
    server_args._raw_input = {{
        field.name: getattr(server_args, field.name)
        for field in record_fields(type(server_args))
    }}
    server_args._resolved_overrides = list(getattr(server_args, "_resolved_overrides", ()))
    run_hook(handle_watermark, server_args)
    run_hook(handle_platform, server_args)
    run_hook(handle_memory, server_args)
    run_hook(handle_unknown, server_args)
    if spec_rows_enabled() and len(server_args._raw_input["allowed_domains"]) == 0:
        declare_resolution(server_args, "rows", chunk=-2)
    run_post_process_pass(server_args, _page_size_default)
{more}'''
# test_entry's declaration machinery, with 0.5.20's checks of a record's fields
CHECKED = (
    "    if is_record(server_args):\n"
    "        unknown = sorted(set(fields) - field_names(type(server_args)))\n"
    "        if unknown:\n"
    '            raise AttributeError(f"{source}: {unknown} are not ServerArgs fields")\n'
)
OVERRIDES_TEXT = OVERRIDES.replace(
    "{declare}", DECLARE[: DECLARE.index("\n\n\ndef resolution_result")].replace(
        "    stash = getattr", CHECKED + "    stash = getattr", 1)
).replace(
    "{validate}", VALIDATE.replace("not dataclasses.is_dataclass(type(server_args))",
                                   "not is_record(server_args)")
) + RUN_PASS  # fmt: skip
AXES = {
    "attention_backend": [None, "wide", "bad"],
    "mem_fraction": [None, 0.5],
    "page_size": [None, 1],
    "SGLANG_SPEC_ROWS": [False, True],
}
OUTPUTS = ("attention_backend", "page_size", "chunk", "window", "mem_fraction")


def files(more: str = "") -> dict[str, str]:
    return {
        "python/sglang/srt/server_args.py": SERVER_ARGS,
        "python/sglang/srt/environ.py": ENVIRON,
        "python/sglang/srt/utils/common.py": COMMON,
        f"{PKG}/__init__.py": "",
        f"{PKG}/arg_utils.py": ARG_UTILS,
        f"{PKG}/fields/__init__.py": "",
        f"{PKG}/fields/memory.py": MEMORY,
        f"{PKG}/fields/model.py": MODEL,
        f"{PKG}/graph.py": GRAPH,
        f"{PKG}/model_override_base.py": BASE,
        f"{PKG}/overrides.py": OVERRIDES_TEXT,
        f"{PKG}/resolution_hooks.py": HOOKS,
        f"{PKG}/pipeline.py": PIPELINE.format(more=more),
    }


def matrix_text() -> str:
    lines = "".join(f"  {axis}: [{', '.join('null' if v is None else str(v).lower() if isinstance(v, bool) else str(v) for v in values)}]\n"
                    for axis, values in AXES.items())  # fmt: skip
    return (f"name: records\ntarget:\n  path: {PKG}/pipeline.py\n  entry: run_resolution_pipeline\n"
            f"  output: [{', '.join(OUTPUTS)}]\nworld: sglang\naxes:\n{lines}")  # fmt: skip


def stubs(cell: dict) -> dict[str, types.ModuleType]:
    """`msgspec` (ours) and SGLang's `environ` answering the cell's variable."""
    msgspec = types.ModuleType("msgspec")
    exec(compile(MSGSPEC, "msgspec.py", "exec"), msgspec.__dict__)
    environ = types.ModuleType("sglang.srt.environ")
    value = cell["SGLANG_SPEC_ROWS"]
    environ.envs = types.SimpleNamespace(SGLANG_SPEC_ROWS=types.SimpleNamespace(get=lambda: value))
    return {"msgspec": msgspec, "msgspec.structs": msgspec.structs, "sglang.srt.environ": environ}


def plain(root) -> list:
    """Per cell, what the files at `root` resolve in plain Python."""
    found = []
    for cell in cells(AXES):
        inputs = {k: v for k, v in cell.items() if k != "SGLANG_SPEC_ROWS"}
        with imported(root, "sm90", stubs(cell)) as (configuration, run):
            from sglang.srt.arg_groups.overrides import resolution_result

            server_args = configuration(**inputs)
            read = lambda s: tuple(resolution_result(s, f) for f in OUTPUTS)  # noqa: E731
            found.append(outcome_of(run, server_args, read))
    return found


def records_commit(tmp_path, more: str = "") -> tuple:
    root, sha, matrix = commit_files(tmp_path, files(more))
    matrix.write_text(matrix_text())
    return root, sha, matrix


def test_every_cell_is_what_the_records_code_itself_resolves(tmp_path):
    root, sha, matrix = records_commit(tmp_path)
    expected = plain(tmp_path / "tree")
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected


def test_the_fixture_takes_each_path_it_means_to(tmp_path):
    """The cells above differ where the code says (else the equality proves little)."""
    records_commit(tmp_path)
    found = dict(zip([tuple(c.values()) for c in cells(AXES)], plain(tmp_path / "tree"),
                     strict=True))  # fmt: skip
    # the fallback (0.8) where the input is None: a copy's max_bs 8, chunk = window + chunk
    assert found[(None, None, None, False)] == ("plugin", 16, 4 * 1024 - 1, 4096, 0.8)
    assert found[(None, 0.5, None, False)] == ("plugin", 16, -1, 4096, 0.5)
    assert found[("wide", None, 1, False)] == ("wide", 1, 8191, 8192, 0.8)  # raw None, live
    assert found[("wide", 0.5, 1, True)][1:3] == (1, -2)  # the variable, an empty list
    assert found[("bad", None, None, False)][0] == ERROR  # a name that is no field
    assert "['not_a_field'] are not ServerArgs fields" in found[("bad", None, None, False)][1]


COPIES = """\
    shared = [1, [2]]
    loop = []
    loop.append(loop)
    data = {"a": shared, "b": shared, "t": (1, (2,)), "g": GraphConfig(), "loop": loop}
    made = copy.deepcopy(data)
    flat = copy.copy(data)
    made["g"].decode.max_bs = 3
    made["a"][1].append(5)
    checks = [
        made["a"] is made["b"], made["a"] is not shared, made["t"] is data["t"],
        made["g"] is not data["g"], data["g"].decode.max_bs is None,
        made["loop"][0] is made["loop"], flat["a"] is shared, shared == [1, [2]],
        made["b"][1] == [2, 5],
    ]
    declare_resolution(server_args, "copies", chunk=sum(2**i for i, c in enumerate(checks) if c))
"""


def test_a_deep_copy_is_pythons(tmp_path):
    """`copy.deepcopy` and `copy.copy` of lists, dicts, tuples, a cycle, and the code's own
    dataclass give what Python's give: shared parts stay shared, a tuple of unchanged
    items is itself, the original is untouched."""
    root, sha, matrix = records_commit(tmp_path, COPIES)
    expected = plain(tmp_path / "tree")
    assert {row[2] for row in expected if row[0] != ERROR} == {2**9 - 1}  # every check
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected


@pytest.mark.parametrize(
    "more, what",
    [
        ("    copy.deepcopy(server_args)\n", "copy.deepcopy() of a ServerArgs"),
        ("    copy.deepcopy(resolving_view(server_args))\n", "copy.deepcopy() of a"),
        ("    class Own:\n        def __deepcopy__(self, memo):\n            return 1\n"
         "    copy.deepcopy(Own())\n", "special method __deepcopy__"),
        ("    class Seq(list):\n        pass\n    copy.deepcopy(Seq([1]))\n",
         "copy.deepcopy() of a Seq"),
        ("    copy.deepcopy([1], {})\n", "copy.deepcopy() with a memo"),
    ],
    ids=["configuration", "view", "own-hook", "builtin-base", "memo"],
)  # fmt: skip
def test_what_python_copies_its_own_way_is_refused(tmp_path, more, what):
    root, sha, matrix = records_commit(tmp_path, more)
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and what in note, note


@pytest.mark.parametrize(
    "changed",
    ["\nDerived.__init__ = print\n", "\nDerived = dict\n", "\nsetattr(Derived, 'doc', 1)\n"],
    ids=["patched", "rebound", "handed-to-a-call"],
)
def test_a_record_class_its_file_changes_is_no_record(tmp_path, changed):
    """A namespace module calling `Derived(...)` as it loads is inert only while `Derived`
    is a record class nothing changes: patched, rebound or handed to a call in its file,
    the module is one whose loading may do more, and the entry cannot resolve."""
    texts = files()
    texts[f"{PKG}/arg_utils.py"] += changed
    root, sha, matrix = commit_files(tmp_path, texts)
    matrix.write_text(matrix_text())
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and "imported for its effects" in note, note


def test_a_handler_runs_up_to_what_the_policy_forbids_and_is_refused_there(tmp_path):
    """`handle_watermark` reads `type(cfg).__struct_fields__` after an early return: the
    cells above never reach it and resolve (the first test); a matrix setting
    `watermark_config` reaches it, and the revision is unevaluable, naming the
    construct, its line and the handler."""
    root, sha, matrix = records_commit(tmp_path)
    matrix.write_text(matrix_text() + "fields:\n  watermark_config: keys.json\n")
    code, note = diff_note(root, sha, matrix)
    line = PIPELINE.splitlines().index("    names = [name for name in type(cfg).__struct_fields__]")
    assert code == 4, note
    assert f"code the policy forbids in handle_watermark is read at {PKG}/pipeline.py:{line + 1}" \
        in note and "attribute .__struct_fields__" in note, note  # fmt: skip


@pytest.mark.parametrize(
    "more, what",
    [
        ("    field_names(GraphConfig)\n", "field_names() of another class than ServerArgs"),
        ("    record_fields(type(server_args))[0].default_factory\n", "a field record's .default_factory"),
        ("    record_fields(type(server_args))[0].name = 'x'\n", "a field record's .name"),
    ],
    ids=["another-class", "unread-attribute", "write"],
)  # fmt: skip
def test_what_the_record_helpers_are_not_asked_is_refused(tmp_path, more, what):
    texts = files("    from sglang.srt.arg_groups.arg_utils import field_names\n" + more)
    root, sha, matrix = commit_files(tmp_path, texts)
    matrix.write_text(matrix_text())
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and what in note, note


def test_a_fallback_the_text_cannot_tell_is_refused_where_it_is_needed(tmp_path):
    """`Arg(fallback=...)` given a computed value: the text cannot tell the fallback, so a
    resolution_result that needs it (mem_fraction None) makes the revision unevaluable."""
    texts = files()
    texts[f"{PKG}/fields/memory.py"] = MEMORY.replace("fallback=0.8", "fallback=0.4 * 2")
    assert harness_outcomes(*commit_files(tmp_path / "a", texts)[:2],
                            _matrix(tmp_path / "a"), outputs=OUTPUTS)[0][4] == 0.8  # fmt: skip
    texts[f"{PKG}/fields/memory.py"] = MEMORY.replace("fallback=0.8", "fallback=share()")
    root, sha, matrix = commit_files(tmp_path / "b", texts)
    matrix.write_text(matrix_text())
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and "the fallback of mem_fraction" in note and "computed" in note, note


def _matrix(tmp_path):
    (tmp_path / "m.yaml").write_text(matrix_text())
    return tmp_path / "m.yaml"


def test_the_platform_name_and_the_text_config_are_sglangs(tmp_path):
    """`current_platform.device_name` is the name SGLang's in-tree platform classes give
    (`cuda` on every CUDA GPU, `rocm` on AMD's, else the platform's own),
    `get_platform().device_sm` is `get_device_sm()`'s, and a text
    model's `hf_text_config` and `hf_config.get_text_config()` are its `hf_config`, the
    one object (transformers' own answer for a config with no text sub-config)."""
    more = (
        "    from sglang.srt.platforms import current_platform\n"
        "    from sglang.srt.runtime_context import get_platform\n"
        "    from sglang.srt.arg_groups.model_override_base import model_config_of\n"
        "    config = model_config_of(server_args)\n"
        "    same = config.hf_text_config is config.hf_config is config.hf_config.get_text_config()\n"
        "    declare_resolution(server_args, 'facts', watermark_config=current_platform.device_name,\n"
        "                       model_path=str(same), chunk=get_platform().device_sm)\n"
    )
    root, sha, matrix = commit_files(tmp_path, files(more))
    matrix.write_text(
        matrix_text().replace("  SGLANG_SPEC_ROWS: [false, true]\n", "")
        .replace("output: [", "output: [watermark_config, model_path, ")
        .replace("axes:\n", "axes:\n  platform: [sm90, sm100, hip, npu]\n")
        .replace("attention_backend: [null, wide, bad]", "attention_backend: [null]")
    )  # fmt: skip
    outputs = ("watermark_config", "model_path", "chunk")
    found = harness_outcomes(root, sha, matrix, outputs=outputs)
    # SGLang's platform classes' names, and get_device_sm(): major * 10 + minor, 0 off CUDA
    per_platform = {"sm90": ("cuda", 90), "sm100": ("cuda", 100), "hip": ("rocm", 0),
                    "npu": ("npu", 0)}  # fmt: skip
    expected = [(name, "True", sm) for name, sm in per_platform.values() for _ in range(4)]
    assert found == expected


DATACLASS_ARGS = (
    DATACLASS_HEAD
    + """\
    model_path: str = "org/model"
    attention_backend: Annotated[Optional[str], Arg(resolvable=True)] = None
    page_size: Annotated[Optional[int], Arg(resolvable=True)] = None
    chunk: int = -1
    hosts: List[str] = dataclasses.field(default_factory=list)
"""
)
DATACLASS_PIPELINE = '''\
"""Ordered configuration resolution (0.5.19: the configuration is a dataclass)."""

import dataclasses

from sglang.srt.arg_groups.overrides import declare_resolution, resolving_view


def run_resolution_pipeline(server_args):
    server_args._raw_input = {
        field.name: getattr(server_args, field.name)
        for field in dataclasses.fields(server_args)
    }
    names = [f.name for f in dataclasses.fields(type(server_args))]
    cfg = resolving_view(server_args)
    if dataclasses.is_dataclass(type(server_args)) and dataclasses.is_dataclass(server_args):
        declare_resolution(server_args, "shape", chunk=len(names) * 10 + len(cfg.hosts))
    if cfg.page_size is None and not dataclasses.is_dataclass(cfg.attention_backend):
        declare_resolution(server_args, "page", page_size=names.index("page_size"))
'''


def test_a_dataclass_configuration_answers_the_dataclasses_module(tmp_path):
    """0.5.19's entry asks `dataclasses.fields(server_args)` and `is_dataclass`: of the
    configuration, its fields as the class declares them, in order; of anything else
    of the code's, Python's answer."""
    texts = files()
    texts["python/sglang/srt/server_args.py"] = DATACLASS_ARGS
    texts[f"{PKG}/pipeline.py"] = DATACLASS_PIPELINE
    root, sha, matrix = commit_files(tmp_path, texts)
    axes = {"attention_backend": [None, "wide"], "page_size": [None, 1]}
    matrix.write_text(
        f"name: dc\ntarget:\n  path: {PKG}/pipeline.py\n  entry: run_resolution_pipeline\n"
        "  output: [page_size, chunk]\nworld: sglang\naxes:\n"
        "  attention_backend: [null, wide]\n  page_size: [null, 1]\n"
    )
    found = harness_outcomes(root, sha, matrix, outputs=("page_size", "chunk"))
    expected = []
    for cell in cells(axes):
        with imported(tmp_path / "tree", "sm90", stubs({"SGLANG_SPEC_ROWS": False})) as (
            configuration, run):  # fmt: skip
            from sglang.srt.arg_groups.overrides import resolution_result

            server_args = configuration(**cell)
            run(server_args)
            expected.append(
                tuple(resolution_result(server_args, f) for f in ("page_size", "chunk"))
            )
    assert expected[0] == (2, 50)  # five fields, no host; page_size is the third
    assert found == expected


def test_the_fields_of_a_class_with_bases_are_refused(tmp_path):
    """A base class's fields are not read, so the field list of a configuration whose
    class has one would be short: refused where asked, not answered."""
    texts = files()
    texts["python/sglang/srt/server_args.py"] = DATACLASS_ARGS.replace(
        "class ServerArgs:", "class ServerArgs(Base):"
    )
    texts[f"{PKG}/pipeline.py"] = DATACLASS_PIPELINE
    root, sha, matrix = commit_files(tmp_path, texts)
    matrix.write_text(
        f"name: dc\ntarget:\n  path: {PKG}/pipeline.py\n  entry: run_resolution_pipeline\n"
        "  output: [page_size]\nworld: sglang\naxes:\n  page_size: [null, 1]\n"
    )
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and "has base classes, whose fields are not read" in note, note


def test_a_star_import_in_a_namespace_module_may_rebind_pythons_types(tmp_path):
    """`from m import *` may bind `list`: `msgspec.field(default_factory=list)` is then no
    longer known to run no code of the repository, so loading the module may do more."""
    texts = files()
    texts[f"{PKG}/shadow.py"] = '"""Names."""\n\n\ndef list():\n    return ["example.com"]\n'
    texts[f"{PKG}/fields/memory.py"] = MEMORY.replace(
        "import msgspec\n", "import msgspec\n\nfrom sglang.srt.arg_groups.shadow import *  # noqa\n"
    )
    root, sha, matrix = commit_files(tmp_path, texts)
    matrix.write_text(matrix_text())
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and "fields/memory.py is imported for its effects" in note, note


@pytest.mark.parametrize(
    "memory, more",
    [
        (MEMORY, '    declare_resolution(server_args, "none", mem_fraction=None)\n'),
        (MEMORY.replace('A[int, "Chunked prefill size; -1 disables it."]',
                        'A[int, Arg(help="Chunked prefill size.", fallback=8)]'), ""),
        (MEMORY.replace("fallback=0.8", "fallback=[0.8]"), ""),
    ],
    ids=["declared-none", "dead-fallback", "mutable-fallback"],
)  # fmt: skip
def test_fallbacks_are_sglangs_own(tmp_path, memory, more):
    """A field declared None stays None (SGLang's resolution_result returns declarations
    as they are); a fallback on a field whose default is not None, or a list, is
    SGLang's AssertionError wherever a fallback is looked up."""
    texts = files(more)
    texts[f"{PKG}/fields/memory.py"] = memory
    root, sha, matrix = commit_files(tmp_path, texts)
    matrix.write_text(matrix_text())
    expected = plain(tmp_path / "tree")
    if more:
        assert {row[4] for row in expected if row[0] != ERROR} == {None}
    else:
        errors = [row for row in expected if row[0] == ERROR and "AssertionError" in row[1]]
        assert errors and len(errors) < len(expected)  # where a None is looked up
    assert harness_outcomes(root, sha, matrix, outputs=OUTPUTS) == expected


@pytest.mark.parametrize(
    "more, what",
    [
        ("    next(f.default for f in record_fields(type(server_args)) if f.name == "
         "'allowed_domains')\n", "it has no default of its own"),
        ("    from sglang.srt.utils.arg_utils import with_fallback as mine\n"
         "    mine(type(server_args), 'chunk', None)\n",
         "utils/arg_utils.py:4 defines with_fallback, which the world supplies"),
    ],
    ids=["factory-default", "another-arg-utils"],
)  # fmt: skip
def test_what_the_world_cannot_answer_as_sglang_is_refused(tmp_path, more, what):
    """A field made by a factory has no `.default` of its own in SGLang's record (msgspec
    gives NODEFAULT); a `with_fallback` defined in another file than SGLang's
    `arg_groups/arg_utils.py` is that file's, not the world's."""
    texts = files(more)
    texts["python/sglang/srt/utils/arg_utils.py"] = (
        '"""Another module named arg_utils."""\n\n\ndef with_fallback(cls, name, value):\n'
        "    return 42\n"
    )
    root, sha, matrix = commit_files(tmp_path, texts)
    matrix.write_text(matrix_text())
    code, note = diff_note(root, sha, matrix)
    assert code == 4 and what in note, note


def test_a_name_the_matrix_binds_may_come_from_any_file(tmp_path):
    """A helper the matrix binds under `bindings:` is replaced on purpose, wherever the
    code imports it from (`from sglang.srt.utils.arg_utils import gguf_file` inside a
    handler): no substitution is reported, the binding answers."""
    more = ("    from sglang.srt.utils.arg_utils import gguf_file\n"
            "    declare_resolution(server_args, 'bound', window=gguf_file())\n")  # fmt: skip
    texts = files(more)
    texts["python/sglang/srt/utils/arg_utils.py"] = (
        '"""Checkpoint helpers."""\n\n\ndef gguf_file():\n    return 42\n'
    )
    root, sha, matrix = commit_files(tmp_path, texts)
    matrix.write_text(matrix_text() + "bindings:\n  gguf_file: {call: 7}\n")
    found = harness_outcomes(root, sha, matrix, outputs=OUTPUTS)
    assert found and {row[3] for row in found if row[0] != ERROR} == {7}  # the window
