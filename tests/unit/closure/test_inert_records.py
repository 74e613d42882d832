"""Record classes (`harness.closure.inert`): a class of the repository whose making and
calling run none of its code, whose call with plain arguments is inert as a file loads
(SGLang's namespace modules: `gpu_id = Derived(doc="...", default=None)` in a
`msgspec.Struct` body). Each case says, from Python's rules, whether running the code
can run code of the repository; the reading must never say inert where it can."""

from __future__ import annotations

import ast
import textwrap

import pytest

from harness.closure.inert import inert, record_class

DEFERRED = frozenset({"msgspec", "dataclasses", "list"})  # code outside the repository


def statement(source: str) -> ast.stmt:
    return ast.parse(textwrap.dedent(source)).body[0]


RECORDS = {
    "struct": ("class D(msgspec.Struct, frozen=True):\n    doc: str = ''\n    n: int = -1\n",
               True),
    "dataclass": ("@dataclasses.dataclass\nclass D:\n    doc: str = ''\n", True),
    "a-method": ("class D(msgspec.Struct):\n    def __post_init__(self):\n        pass\n",
                 False),
    "a-nested-class": ("class D(msgspec.Struct):\n    class M:\n        pass\n", False),
    "a-lambda": ("class D(msgspec.Struct):\n    f = lambda self: 1\n", False),
    "repository-base": ("class D(Base):\n    doc: str = ''\n", False),
    "plain-object": ("class D:\n    doc: str = ''\n", False),
    "object-base": ("class D(object):\n    doc: str = ''\n", False),
    "repository-decorator": ("@register\nclass D(msgspec.Struct):\n    doc: str = ''\n", False),
    "body-call": ("class D(msgspec.Struct):\n    x = setup()\n", False),
}  # fmt: skip


@pytest.mark.parametrize("source, expected", RECORDS.values(), ids=list(RECORDS))
def test_a_record_class_runs_no_code_of_the_repository(source, expected):
    assert record_class(statement(source), DEFERRED, True) is expected


CALLS = {
    "constants": ("x = D(doc='a' 'b', default=None)", True),
    "nested": ("x = D(doc=D(), items=[1, (2, 3)])", True),
    "outside-chain": ("x = D(default=msgspec.NODEFAULT)", True),
    "a-name": ("x = D(default=f)", False),  # code outside may call what it is handed
    "a-name-in-a-list": ("x = D(items=[f])", False),
    "kwargs": ("x = D(**options)", False),
    "starred": ("x = D(*parts)", False),
    "an-attribute": ("x = D.make(1)", False),  # a class attribute may hold anything
    "not-a-record": ("x = E(1)", False),
    "a-call-result": ("x = D(doc=g())", False),
    "arithmetic": ("x = -1 + 4 * 1024", True),
    "arithmetic-on-a-name": ("x = -n", False),
    "factory": ("x = msgspec.field(default_factory=list)", True),
}  # fmt: skip


@pytest.mark.parametrize("source, expected", CALLS.values(), ids=list(CALLS))
def test_calling_a_record_is_inert_only_with_plain_arguments(source, expected):
    node = statement(source)
    assert inert(node, DEFERRED, True, records=frozenset({"D"})) is expected


def test_in_a_class_body_as_namespace_modules_make_them():
    body = statement("""\
        class Device(msgspec.Struct):
            _NS_PATH = "device"
            device: A[Optional[str], "Which device."] = None
            gpu_id = D(doc=("Which device this process runs on; " "nobody types it."),
                       default=None)
            urls: A[List[str], "Where."] = msgspec.field(default_factory=list)
        """)
    assert inert(body, DEFERRED, True, records=frozenset({"D"}))
    assert not inert(body, DEFERRED, True)  # without knowing D is a record: a call
    assert not inert(body, DEFERRED - {"list"}, True, records=frozenset({"D"}))  # list rebound


def test_an_import_in_a_class_body_is_not_inert():
    """A class body's import binds in the class's scope what its statements then read
    (`from m import bump as list` makes `default_factory=list` the repository's)."""
    body = statement("""\
        class Rec(msgspec.Struct):
            from sglang.srt.arg_groups.bump import bump as list
            hosts: A[List[str], "h"] = msgspec.field(default_factory=list)
        """)
    assert not inert(body, DEFERRED, True)
    assert not record_class(body, DEFERRED, True)
