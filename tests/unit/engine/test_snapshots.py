"""Which statements of an entry's file are compiled as a snapshot of the configuration
and reads of it (`harness.engine.snapshots`), and what a snapshot counts as read.

The rule under test: a statement is rewritten only in the exact shapes the module
names, where every use of the snapshot asks nothing but a key's value, whether it
holds a key, or that it is a non-empty mapping; anything else stays as written."""

from __future__ import annotations

import ast
import textwrap

import pytest

from harness.engine.branches import Sites
from harness.engine.policy import forbidden_attribute
from harness.engine.snapshots import READ, SNAPSHOT, Snapshot, snapshot_builtins, snapshot_rewritten
from harness.engine.world import Probe
from harness.matrix.model import Axis, Matrix, Target

ATTR = "_raw_input"
TAKE = """\
def run(server_args):
    server_args._raw_input = {
        field.name: getattr(server_args, field.name)
        for field in record_fields(type(server_args))
    }
"""


def rewritten(source: str, free=(), sites: bool = False) -> str:
    body = tuple(ast.parse(textwrap.dedent(source)).body)
    if sites:  # the branch reports exploration compiles in first
        body = Sites().rewrite("f.py", body)
    return ast.unparse(ast.Module(list(snapshot_rewritten(body, ATTR, free)), []))


def test_the_snapshot_statement_is_compiled_as_one():
    out = rewritten(TAKE)
    assert (
        f"server_args._raw_input = {SNAPSHOT}(record_fields(type(server_args)), server_args)" in out
    )


@pytest.mark.parametrize(
    "source",
    [
        TAKE.replace("type(server_args))\n", "type(server_args)) if field.name\n"),
        TAKE.replace("getattr(server_args, field.name)", "getattr(other, field.name)"),
        TAKE.replace("getattr(server_args, field.name)", "getattr(server_args, field.key)"),
        TAKE.replace("field.name: getattr", "field.key: getattr"),
        TAKE.replace("getattr(server_args, field.name)", "getattr(server_args, field.name, 1)"),
        TAKE.replace("def run(server_args):", "def run(args):\n    server_args = args"),
        TAKE + "    del server_args\n",
        TAKE.replace("server_args._raw_input =", "server_args._other ="),
        TAKE.replace("for field in record", "for server_args in record"),
    ],
    ids=[
        "if",
        "other-object",
        "other-key",
        "other-name",
        "default",
        "not-a-parameter",
        "deleted",
        "other-attribute",
        "shadowed",
    ],
)
def test_any_other_comprehension_runs_as_written(source):
    assert SNAPSHOT not in rewritten(source)


@pytest.mark.parametrize(
    "more",
    [
        "getattr = print\n",
        "from helpers import *\n",
        "def f(getattr):\n    pass\n",
        "import getattr\n",
        "class getattr:\n    pass\n",
        "def g():\n    global getattr\n",
    ],
)
def test_nothing_is_rewritten_where_getattr_may_not_be_pythons(more):
    source = (
        TAKE
        + "\n"
        + more
        + "\ndef h(s):\n    return (getattr(s, '_raw_input', None) or {}).get('x')\n"
    )
    out = rewritten(source)
    assert SNAPSHOT not in out and READ not in out


def test_nothing_is_rewritten_where_the_world_binds_getattr():
    assert SNAPSHOT not in rewritten(TAKE, free=("getattr",))


READS = {
    "get": "return (getattr(s, '_raw_input', None) or {}).get('x')",
    "get-default": "return (getattr(s, '_raw_input', None) or {}).get('x', 3)",
    "attribute": "return (s._raw_input or {}).get('x')",
    "local": "raw = getattr(s, '_raw_input', None)\n"
    "    if raw is not None and 'x' in raw:\n        return raw['x']\n"
    "    if raw is None or 'y' not in raw:\n        return raw.get('z')",
}


@pytest.mark.parametrize("body", READS.values(), ids=READS.keys())
@pytest.mark.parametrize("sites", [False, True], ids=["plain", "with-branch-reports"])
def test_a_read_that_only_looks_keys_up_is_handed_the_snapshot(body, sites):
    out = rewritten(f"def h(s):\n    {body}\n", sites=sites)
    assert READ in out and ATTR not in out.replace(f"{READ}(s", "")


OTHER_READS = {
    "items": "return (getattr(s, '_raw_input', None) or {}).items()",
    "other-default": "return (getattr(s, '_raw_input', None) or {'x': 1}).get('x')",
    "and": "return (getattr(s, '_raw_input', None) and {}).get('x')",
    "keyword": "return (getattr(s, '_raw_input', None) or {}).get(key='x')",
    "starred": "return (getattr(s, '_raw_input', None) or {}).get(*k)",
    "bare": "return getattr(s, '_raw_input', None)",
    "no-default": "raw = getattr(s, '_raw_input')\n    return raw['x']",
    "len": "raw = getattr(s, '_raw_input', None)\n    return len(raw)",
    "loop": "raw = getattr(s, '_raw_input', None)\n    return [k for k in raw]",
    "store": "raw = getattr(s, '_raw_input', None)\n    raw['x'] = 1",
    "twice": "raw = getattr(s, '_raw_input', None)\n    raw = {}\n    return raw['x']",
    "returned": "raw = getattr(s, '_raw_input', None)\n    return raw",
    "compared": "raw = getattr(s, '_raw_input', None)\n    return raw == {}",
    "is-other": "raw = getattr(s, '_raw_input', None)\n    return raw is other",
    "lambda": "raw = getattr(s, '_raw_input', None)\n    return lambda: raw",
    "nested": "raw = getattr(s, '_raw_input', None)\n    def g():\n        return raw.items()\n"
    "    return g",
    "nested-binding": "raw = getattr(s, '_raw_input', None)\n    def g(raw):\n        return raw\n"
    "    return raw['x']",
    "global": "global raw\n    raw = getattr(s, '_raw_input', None)\n    return raw['x']",
    "deleted": "raw = getattr(s, '_raw_input', None)\n    del raw",
    "walrus": "return (raw := getattr(s, '_raw_input', None))['x']",
    "module": None,
}


@pytest.mark.parametrize("body", OTHER_READS.values(), ids=OTHER_READS.keys())
def test_any_other_read_is_left_as_written(body):
    source = (
        "raw = getattr(s, '_raw_input', None)\n" if body is None else f"def h(s):\n    {body}\n"
    )
    assert READ not in rewritten(source)


def test_a_parameter_of_the_name_is_another_binding():
    source = "def h(s, raw=None):\n    raw = getattr(s, '_raw_input', None)\n    return raw['x']\n"
    assert READ not in rewritten(source)


# --- what a snapshot counts as read ------------------------------------------------


def probe() -> Probe:
    axes = (Axis("a", (1, 2)), Axis("b", (1, 2)), Axis("c", (1, 2)))
    return Probe(Matrix("m", "m.yaml", Target("f.py", ("f",), ("x",)), "plain", axes))


def test_a_snapshot_counts_a_fields_inputs_where_it_is_looked_up():
    p = probe()
    snap = Snapshot(p, {"x": 1, "y": None, "z": 3}, {"x": 0b001, "y": 0b010, "z": 0b100})
    assert "x" in snap and "w" not in snap and bool(snap) and p.read == 0
    assert snap.get("w", 5) == 5 and p.read == 0
    assert snap["y"] is None and p.read == 0b010
    assert snap.get("x") == 1 and p.read == 0b011
    with pytest.raises(KeyError):
        snap["w"]
    assert snap.escaped() == {"x": 1, "y": None, "z": 3} and p.read == 0b111
    assert not Snapshot(p, {}, {})


class Config:
    """What the probe answers reading: each field reads the axes its value says."""

    def __init__(self, p: Probe, reads: dict[str, int]) -> None:
        self.p, self.reads = p, reads

    def __getattr__(self, name: str):
        self.p.read |= self.reads[name]
        return name.upper()


class Field:
    def __init__(self, name: str) -> None:
        self.name = name


def test_the_snapshot_reads_as_the_comprehension_but_counts_nothing_yet():
    p = probe()
    config = Config(p, {"x": 0b001, "y": 0b110})
    made = snapshot_builtins(p, ATTR, getattr, lambda obj: obj if obj is config else None)
    p.read = 0b1000  # what the call read before: kept
    snap = made[SNAPSHOT]([Field("x"), Field("y")], config)
    assert p.read == 0b1000
    assert snap["y"] == "Y" and p.read == 0b1110
    other = Config(p, {"x": 0b001})
    assert made[SNAPSHOT]([Field("x")], other) == {"x": "X"} and p.read == 0b1111


def test_a_field_whose_read_fails_counts_at_once():
    p = probe()

    class Failing(Config):
        def __getattr__(self, name: str):
            self.p.read |= 0b100
            raise LookupError(name)

    config = Failing(p, {})
    made = snapshot_builtins(p, ATTR, getattr, lambda obj: obj)
    with pytest.raises(LookupError):
        made[SNAPSHOT]([Field("x")], config)
    assert p.read == 0b100


def test_a_snapshots_state_is_out_of_evaluated_codes_reach():
    """Its probe, values and reads are in slots of special names, which the policy
    refuses to evaluated code (statically, and through getattr)."""
    assert Snapshot.__slots__ and all(forbidden_attribute(name) for name in Snapshot.__slots__)
    assert not any(name for name in dir(Snapshot(probe(), {}, {})) if not name.startswith("__")
                   and name not in ("get", "escaped"))  # fmt: skip
