"""What the view's class declares (both of ServerArgs's shapes), and the order the code
runs passes in (both entry points), on files held in memory."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import typing
from pathlib import Path

from harness.closure.defaults import class_defaults
from harness.closure.modules import RevisionFiles
from harness.closure.order import _calls, _local_imports, pass_order
from harness.closure.pieces import SourceCache
from harness.closure.resolve import ViewClass

TARGET = "python/sglang/srt/arg_groups/overrides.py"
VIEW = ViewClass(
    "sglang.srt.server_args", "ServerArgs", frozenset(), namespaces="_INPUT_NAMESPACES"
)

NAMESPACES = '''\
"""Server arguments assembled from namespaces."""
from sglang.srt.arg_groups.fields.memory import Memory
from .arg_groups.fields.sched import Schedule as Sched

_INPUT_NAMESPACES = [Memory, Sched]


class ServerArgs:
    """Fields come from the namespaces."""

    def resolve(self):
        pass
'''

MEMORY = """\
import msgspec


class Memory(msgspec.Struct):
    _NS_PATH = "memory"
    page_size: A[Optional[int], "help"] = None
    mem_fraction: float = 0.5 + 0.25
    hosts: A[List[str], "h"] = msgspec.field(default_factory=list)
    _explicit: A[bool, Arg(no_cli=True)] = False
"""

SCHEDULE = """\
class Schedule:
    chunked_prefill_size: int = 2 * 4096
    policy: str = "fcfs"
    seed: int = random_seed()
"""


def defaults_of(files: dict[str, str]) -> dict:
    found = class_defaults(SourceCache(), RevisionFiles.of(files, TARGET), VIEW).fields
    return {name: (d.value, d.refusal is None) for name, d in found.items()}


def test_namespace_classes_are_read_through_their_imports():
    files = {
        "python/sglang/srt/server_args.py": NAMESPACES,
        "python/sglang/srt/arg_groups/fields/memory.py": MEMORY,
        "python/sglang/srt/arg_groups/fields/sched.py": SCHEDULE,
        TARGET: "",
    }
    assert defaults_of(files) == {
        "page_size": (None, True),
        "mem_fraction": (0.75, True),
        "hosts": ([], True),  # a new empty list each time, as the factory makes
        "_explicit": (False, True),
        "chunked_prefill_size": (8192, True),
        "policy": ("fcfs", True),
        "seed": (None, False),
    }


def test_a_dataclass_declares_its_own_fields():
    source = (
        "import dataclasses\nfrom typing import ClassVar\n\n\n@dataclasses.dataclass\n"
        "class ServerArgs:\n    model_path: str\n    tp_size: int = 1\n"
        "    tags: list = dataclasses.field(default_factory=list)\n"
        "    port: int = dataclasses.field(default=30000)\n"
        '    KIND: ClassVar[str] = "args"\n    big: int = 10 ** 400\n'
    )
    files = {"python/sglang/srt/server_args.py": source, TARGET: ""}
    assert defaults_of(files) == {
        "model_path": (None, False),
        "tp_size": (1, True),
        "tags": ([], True),
        "port": (30000, True),
        "big": (None, False),
    }


def test_only_an_empty_container_factory_of_pythons_own_is_read():
    """`default_factory=list` (or dict, set, tuple, frozenset) makes an empty container,
    unless the file binds the name itself; any other factory, or one given more, is
    not read."""
    body = (
        "    a: list = dataclasses.field(default_factory=dict)\n"
        "    b: list = dataclasses.field(default_factory=make)\n"
        "    c: list = dataclasses.field(default_factory=list, repr=False)\n"
        "    d: list = dataclasses.field(default_factory=lambda: [1])\n"
    )
    source = "import dataclasses\n\n\n@dataclasses.dataclass\nclass ServerArgs:\n" + body
    files = {"python/sglang/srt/server_args.py": source, TARGET: ""}
    assert defaults_of(files) == {"a": ({}, True), "b": (None, False), "c": (None, False),
                                  "d": (None, False)}  # fmt: skip
    files["python/sglang/srt/server_args.py"] = source + "\n\ndict = make\n"
    assert defaults_of(files)["a"] == (None, False)


def test_fallbacks_are_read_from_the_marker():
    """`Arg(..., fallback=V)`: a literal (arithmetic on numbers too) is read, None or none
    given is no fallback, anything else is refused with why."""
    memory = (
        "class Memory(msgspec.Struct):\n"
        '    a: A[Optional[float], Arg(help="x", fallback=0.8)] = None\n'
        "    b: A[Optional[int], Arg(fallback=4 * 1024)] = None\n"
        "    c: A[Optional[str], Arg(fallback=None)] = None\n"
        '    d: A[Optional[str], "help text"] = None\n'
        "    e: A[Optional[float], Arg(fallback=share())] = None\n"
        "    f: A[Optional[float], Arg(**options)] = None\n"
    )
    files = {"python/sglang/srt/server_args.py": NAMESPACES,
             "python/sglang/srt/arg_groups/fields/memory.py": memory,
             "python/sglang/srt/arg_groups/fields/sched.py": SCHEDULE, TARGET: ""}  # fmt: skip
    view = VIEW._replace(declarable=("Arg", "resolvable", frozenset({"NS"})), fallback="fallback")
    found = class_defaults(SourceCache(), RevisionFiles.of(files, TARGET), view).fallbacks
    assert {n: (d.value, d.refusal is None) for n, d in found.items()} == {
        "a": (0.8, True),
        "b": (4096, True),
        "e": (None, False),
        "f": (None, False),
    }
    assert "computed" in found["e"].refusal and "**options" in found["f"].refusal


def test_no_class_or_no_file_means_no_defaults():
    assert defaults_of({TARGET: ""}) == {}
    assert defaults_of({"python/sglang/srt/server_args.py": "x = (", TARGET: ""}) == {}


def order_of(files: dict[str, str], entries: tuple, passes=("_a", "_b", "_c", "_d")):
    return pass_order(SourceCache(), RevisionFiles.of(files, TARGET), list(passes), entries)


PASSES = "def _a(v): ...\ndef _b(v): ...\ndef _c(v): ...\ndef _d(v): ...\n"

OLD_SHAPE = """\
from sglang.srt.arg_groups.overrides import _a, _b, _c, run_post_process_pass


class ServerArgs:
    def __post_init__(self):
        self._handle_late()
        if self.x:
            self._handle_early()

    def _handle_early(self):
        run_post_process_pass(self, _c)
        self._handle_late()

    def _handle_late(self):
        run_post_process_pass(self, _b)
"""


def test_methods_on_self_are_followed_from_post_init():
    files = {"python/sglang/srt/server_args.py": OLD_SHAPE, TARGET: PASSES}
    entries = (
        ("sglang.srt.arg_groups.pipeline", "run"),
        ("sglang.srt.server_args", "ServerArgs.__post_init__"),
    )
    order = order_of(files, entries)
    assert order.entry == "python/sglang/srt/server_args.py:ServerArgs.__post_init__"
    assert (order.reached, order.unreached) == (("_b", "_c"), ("_a", "_d"))


def test_handed_functions_local_imports_and_other_packages():
    pipeline = (
        "def run(args):\n    from .hooks import late, early as first\n"
        "    run_hook(first, args)\n    late(args)\n    outside(args)\n"
        "from sglang.srt.other import outside\n"
    )
    hooks = (
        "from .overrides import _a, _c, _d\n\n"
        "def early(args):\n    apply(args, _d)\n\n"
        "def late(args):\n    apply(args, _a)\n    apply(args, _d)\n"
    )
    files = {
        "python/sglang/srt/arg_groups/pipeline.py": pipeline,
        "python/sglang/srt/arg_groups/hooks.py": hooks,
        "python/sglang/srt/other.py": "from sglang.srt.arg_groups.overrides import _c\n"
        "def outside(args):\n    apply(args, _c)\n",
        TARGET: PASSES,
    }
    order = order_of(files, (("sglang.srt.arg_groups.pipeline", "run"),))
    assert (order.reached, order.unreached) == (("_d", "_a"), ("_b", "_c"))


def test_hostile_defaults_are_refused_not_computed():
    source = (
        "class ServerArgs:\n"
        "    power: int = 10 ** 10 ** 10\n"
        '    text: str = "a" * 10 ** 9\n'
        "    huge: int = 99999999999 * 99999999999 * 99999999999\n"
        "    zero: float = 1 / 0\n"
        "    call: int = len([1, 2])\n"
    )
    files = {"python/sglang/srt/server_args.py": source, TARGET: ""}
    found = defaults_of(files)
    assert found == {name: (None, False) for name in ("power", "text", "huge", "zero", "call")}


def test_a_call_chain_deeper_than_the_walk_follows_leaves_the_pass_unreached():
    chain = "".join(f"def f{n}(args):\n    f{n + 1}(args)\n\n\n" for n in range(200))
    chain += "def f200(args):\n    apply(args, _a)\n"
    files = {
        "python/sglang/srt/arg_groups/pipeline.py": "from .overrides import _a\n\n\n" + chain,
        TARGET: PASSES,
    }
    order = order_of(files, (("sglang.srt.arg_groups.pipeline", "f0"),), ("_a", "_b"))
    assert order.reached == () and order.unreached == ("_a", "_b")


def test_every_if_on_the_way_to_a_pass_is_recorded_an_else_negated():
    pipeline = (
        "from .overrides import _a, _b\n\n\n"
        "def run(args):\n"
        "    if args.x:\n"
        "        handle(args)\n"
        "    else:\n"
        "        apply(args, _b)\n\n\n"
        "def handle(args):\n"
        "    if args.y:\n"
        "        apply(args, _a)\n"
    )
    files = {"python/sglang/srt/arg_groups/pipeline.py": pipeline, TARGET: PASSES}
    order = order_of(files, (("sglang.srt.arg_groups.pipeline", "run"),), ("_a", "_b"))
    where = "python/sglang/srt/arg_groups/pipeline.py"
    assert dict(order.guarded) == {
        "_a": f"{where}:5: if args.x; {where}:12: if args.y",
        "_b": f"{where}:5: if not (args.x)",
    }


def test_a_function_import_met_later_breadth_first_wins():
    # ast.walk meets `from b` (one level down) before `from a` (two levels down, in the if)
    function = ast.parse(
        "def f():\n    if x:\n        from a import n\n    from b import n\n"
        "    try:\n        pass\n    except E:\n        from c import m as k\n"
    ).body[0]
    assert _local_imports(function) == {"n": ("a", 0, "n"), "k": ("c", 0, "m")}


class _EveryCall(ast.NodeVisitor):
    """The reference: each call in source order with the `if`s around it, by NodeVisitor."""

    def __init__(self) -> None:
        self.around: list[tuple[int, ast.If, bool]] = []
        self.calls: list[tuple[ast.Call, tuple]] = []

    def visit_Call(self, node: ast.Call) -> None:
        self.calls.append((node, tuple(self.around)))
        self.generic_visit(node)

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        for branch, negated in ((node.body, False), (node.orelse, True)):
            self.around.append((node.lineno, node, negated))
            for child in branch:
                self.visit(child)
            self.around.pop()


def _walked_imports(function: ast.FunctionDef) -> dict:
    out = {}
    for node in ast.walk(function):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                out[alias.asname or alias.name] = (node.module or "", node.level, alias.name)
    return out


def test_calls_and_imports_match_a_full_walk_on_the_standard_library():
    """The walk reads only what it needs of a function; on every function of a few large
    standard-library modules it finds what a visit of every node finds."""
    functions = [
        node
        for module in (argparse, dataclasses, inspect, typing, ast)
        for node in ast.walk(ast.parse(Path(module.__file__).read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    assert len(functions) > 500
    for function in functions:
        reference = _EveryCall()
        for statement in function.body:
            reference.visit(statement)
        found: list = []
        for statement in function.body:
            _calls(statement, (), found)
        assert [(id(c), t) for c, t in found] == [(id(c), t) for c, t in reference.calls]
        assert _local_imports(function) == _walked_imports(function)


REEXPORTS = {
    "one line": "from sglang.srt.arg_groups.hooks import late as handle\n",
    "in brackets": "from sglang.srt.arg_groups.hooks import (\n    early,\n    late as handle,\n)\n",
    "continued": "from sglang.srt.arg_groups.hooks import early, \\\n    late as handle\n",
}


def test_a_function_re_exported_by_a_module_the_walk_does_not_enter_is_followed():
    pipeline = "from sglang.srt.other import handle\n\ndef run(args):\n    handle(args)\n"
    hooks = "from .overrides import _c\n\ndef early(args):\n    pass\n\ndef late(args):\n"
    hooks += "    apply(args, _c)\n"
    for how, other in REEXPORTS.items():
        files = {
            "python/sglang/srt/arg_groups/pipeline.py": pipeline,
            "python/sglang/srt/arg_groups/hooks.py": hooks,
            "python/sglang/srt/other.py": '"""Elsewhere."""\n' + other + "X = 1\n",
            TARGET: PASSES,
        }
        order = order_of(files, (("sglang.srt.arg_groups.pipeline", "run"),))
        assert order.reached == ("_c",), how


def test_a_module_the_walk_does_not_enter_is_not_parsed_for_what_it_defines():
    outside = (
        "def helper(args):\n    apply(args, _a)\n\n\n# import helper? no: it is defined here\n"
    )
    pipeline = (
        "from sglang.srt.other import helper, unbound\nfrom .overrides import _b\n\n"
        "def run(args):\n    helper(args)\n    unbound(args)\n    apply(args, _b)\n"
    )
    files = {
        "python/sglang/srt/arg_groups/pipeline.py": pipeline,
        "python/sglang/srt/other.py": outside.replace("# import helper? no", "# no"),
        TARGET: PASSES,
    }
    cache = SourceCache()
    entries = (("sglang.srt.arg_groups.pipeline", "run"),)
    order = pass_order(cache, RevisionFiles.of(files, TARGET), ["_a", "_b"], entries)
    assert order.reached == ("_b",)
    assert not any("def helper" in text for text in cache.pieces)
    files["python/sglang/srt/other.py"] = outside  # an import keyword naming it: read
    cache = SourceCache()
    order = pass_order(cache, RevisionFiles.of(files, TARGET), ["_a", "_b"], entries)
    assert order.reached == ("_b",)
    assert any("def helper" in text for text in cache.pieces)


def test_a_factory_the_class_body_or_a_star_import_may_rebind_is_not_read():
    base = ("import dataclasses\n{top}\n\n@dataclasses.dataclass\nclass ServerArgs:\n{body}"
            "    hosts: list = dataclasses.field(default_factory=list)\n")  # fmt: skip
    for top, body in [("", "    from m import bump as list\n"), ("from m import *", "")]:
        files = {"python/sglang/srt/server_args.py": base.format(top=top, body=body), TARGET: ""}
        assert defaults_of(files)["hosts"] == (None, False), (top, body)
    files = {"python/sglang/srt/server_args.py": base.format(top="", body=""), TARGET: ""}
    assert defaults_of(files)["hosts"] == ([], True)
