"""Registering decorators: writes only a file's loading makes keep a closure explored;
any way a call could reach the same writes makes it impure (harness.engine.load_time).

Each case is one file: a registry, what registers into it at module level, and a
target that reads it. Whether a call of the target can run the writing function is
read off the file's text by hand (in each case's comment), never from harness.
"""

from __future__ import annotations

import textwrap

import pytest

from harness.closure.extract import extract_closure
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache
from harness.engine.purity import impurity
from harness.engine.worlds.sglang import FACTS

REGISTRY = """\
REG = {}


def register(name):
    def decorator(fn):
        REG.setdefault(name, []).append(fn)
        return fn

    return decorator


def register_for(*names):
    def decorator(fn):
        for name in names:
            register(name)(fn)
        return fn

    return decorator
"""
TARGET = """

def target(view):
    return {"page_size": len(REG.get(view.arch, ()))}
"""


def reason(source: str) -> str | None:
    files = RevisionFiles.of({"m.py": textwrap.dedent(source)}, "m.py")
    closure = extract_closure(SourceCache(), files, "target", frozenset(), "m.yaml", facts=FACTS)
    return impurity(closure)


@pytest.mark.parametrize(
    "registering",
    [
        # decorators only: each writing function runs while the file loads
        '@register_for("a", "b")\ndef one(view):\n    return {}\n',
        '@register("a")\ndef one(view):\n    return {}\n',
        '@register_for("a")\n@register("b")\nclass One:\n    pass\n',
    ],
)
def test_writes_only_loading_makes_keep_the_closure_pure(registering: str):
    assert reason(REGISTRY + "\n\n" + registering + TARGET) is None


@pytest.mark.parametrize(
    "registering, writer",
    [
        # the target calls the registering function itself
        ('@register("a")\ndef one(view):\n    return {}\n',
         'def target(view):\n    register("b")(one)\n    return {"page_size": len(REG)}\n'),
        # what the factory makes is kept, then called by the target
        ('KEEP = register("a")\n', 'def target(view):\n    KEEP(len)\n    return {}\n'),
        # a plain decorator that hands back itself: the decorated name is the writer
        ('def reg(fn):\n    REG["x"] = fn\n    return reg\n\n\n@reg\ndef one(view):\n'
         '    return {}\n', 'def target(view):\n    one(1)\n    return {}\n'),
    ],
)  # fmt: skip
def test_a_writer_a_call_can_reach_makes_the_closure_impure(registering: str, writer: str):
    assert reason(REGISTRY + "\n\n" + registering + "\n\n" + writer) is not None


HOOKS = """\
REG = {}
HOOKS = []


def register(name):
    def decorator(fn):
        REG[name] = fn
        return fn

    HOOKS.append(decorator)
    return decorator


@register("a")
def one(view):
    return {}


def target(view):
    for hook in HOOKS:
        hook(len)
    return {"page_size": len(REG)}
"""
LAMBDA = """\
REG = {}


def register(name):
    REG[name] = lambda: REG.clear()
    return lambda fn: fn


@register("a")
def one(view):
    return {}


def target(view):
    REG["a"]()
    return {}
"""


@pytest.mark.parametrize("source", [HOOKS, LAMBDA], ids=["kept-decorator", "lambda"])
def test_what_the_registering_function_makes_and_keeps_can_run_in_a_call(source: str):
    """A decorator the factory keeps in a list, a lambda it stores: a call runs them."""
    assert reason(source) is not None


def registrar(keeps: str, reads: str) -> str:
    """A registry whose decorator runs the lines `keeps` for `one`, and a target whose
    body is `reads`."""
    return (
        "REG = {}\n\n\ndef register(name):\n    def decorator(fn):\n"
        + keeps
        + "        return fn\n\n    return decorator\n\n\n"
        + '@register("a")\ndef one(view):\n    return {}\n\n\ndef target(view):\n'
        + reads
    )


ITERATOR = registrar(
    "        REG[name] = iter([fn, fn])\n",
    '    return {"page_size": len(str(next(REG["a"])))}\n',
)


def test_an_iterator_a_registering_function_keeps_is_state_the_calls_share():
    """The iterator is made as the file loads, and each call takes one item of it."""
    assert "keeps an iterator" in (reason(ITERATOR) or "")


DECORATED_REGISTRAR = """\
REG = {}


def register(name):
    def decorator(fn):
        REG[name] = fn
        return fn

    return decorator


@register("hook")
def bump(fn):
    REG["count"] = REG.get("count", 0) + 1
    return fn


@bump
def one(view):
    return {}


def target(view):
    REG["hook"](None)
    return {"page_size": REG["count"]}
"""
CLASS_IN_REGISTRAR = """\
REG = {}


def register(name):
    class Hook:
        def run(self):
            REG["n"] = REG.get("n", 0) + 1

    REG[name] = Hook()
    return lambda fn: fn


@register("a")
def one(view):
    return {}


def target(view):
    REG["a"].run()
    return {"page_size": REG["n"]}
"""
BOUND_METHOD = registrar(
    '        seen = []\n        REG[name] = seen\n        REG[name + ".push"] = seen.append\n',
    '    REG["a.push"](1)\n    return {"page_size": len(REG["a"])}\n',
)


@pytest.mark.parametrize(
    "source",
    [DECORATED_REGISTRAR, CLASS_IN_REGISTRAR, BOUND_METHOD],
    ids=["registrar-itself-registered", "class-in-registrar", "fresh-bound-method-kept"],
)
def test_a_registrar_whose_work_a_call_can_reach_is_judged(source: str):
    """Each call of the target changes what the next one reads (a count, a list): the
    registrar it reaches through the registry is not one only loading can call."""
    assert reason(source) is not None
