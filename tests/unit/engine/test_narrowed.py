"""A function the policy withholds from an entry, narrowed to the statements that hold what
the policy forbids (`harness.engine.deferral.narrowed`): what is compiled must never hold
a forbidden construct, and must run as written up to where one stood.

Each case states, from the source alone, which statements hold a forbidden construct
innermost; the narrowed copy must replace exactly those, and hold none."""

from __future__ import annotations

import ast
import textwrap

import pytest

from harness.engine.branches import Sites
from harness.engine.deferral import REFUSED, narrowed, narrowed_class
from harness.engine.policy import violations

CASES = {
    # source, the lines (1-based, in the function) replaced; None: withheld whole
    "flat": ("""\
        def f(x):
            y = 1
            z = x.__dict__
            return y
        """, [3]),
    "in-if": ("""\
        def f(x):
            if x.a:
                return type(x).__struct_fields__
            return 1
        """, [3]),
    "in-test": ("""\
        def f(x):
            if x.__dict__:
                return 1
            return 2
        """, [2]),
    "in-handler": ("""\
        def f(x):
            try:
                return 1
            except Exception:
                return x.__class__
            finally:
                pass
        """, [5]),
    "nested-def": ("""\
        def f(x):
            def g():
                return x.__dict__
            return g
        """, [3]),
    "lambda": ("""\
        def f(x):
            g = lambda: x.__dict__
            return 1
        """, [2]),
    "two": ("""\
        def f(x):
            for i in x:
                a = i.__dict__
            while x:
                b = x.__class__
            return 0
        """, [3, 5]),
    "default": ("""\
        def f(x=object.__subclasses__):
            return x
        """, None),
    "decorator": ("""\
        @g.__globals__
        def f(x):
            return x
        """, None),
    "annotation": ("""\
        def f(x: y.__dict__):
            return x
        """, None),
}  # fmt: skip


def parse(source: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(source)).body[0]


def replaced(node: ast.FunctionDef) -> list[int]:
    """The lines where a statement was replaced (the instrumented copy's marker of a block
    stands where the block's first statement does, and goes with it)."""
    return sorted({n.lineno for n in ast.walk(node)
                  if isinstance(n, ast.Expr) and isinstance(n.value, ast.Name)
                   and n.value.id.startswith(REFUSED)})  # fmt: skip


@pytest.mark.parametrize("source, lines", CASES.values(), ids=list(CASES))
def test_only_the_statements_holding_a_forbidden_construct_are_replaced(source, lines):
    node = parse(source)
    assert list(violations(node))  # every case holds one
    made = narrowed(node, node)
    if lines is None:
        assert made is None
        return
    assert replaced(made) == lines
    assert {c for _, _, c in violations(made)} == {f"name {REFUSED}f__"}  # its reads alone
    compile(ast.Module(body=[made], type_ignores=[]), "f.py", "exec")  # still Python


@pytest.mark.parametrize("source, lines", CASES.values(), ids=list(CASES))
def test_narrowing_the_instrumented_copy_leaves_no_forbidden_construct(source, lines):
    """The worker compiles a copy rewritten to report its conditions (`Sites.rewrite`):
    narrowed by where the original's statements stood, no construct the policy forbids is
    left at any place one stood in the original."""
    node = parse(source)
    instrumented = Sites().rewrite("f.py", [node])[0]
    made = narrowed(instrumented, node)
    if lines is None:
        assert made is None
        return
    places = {(line, col) for line, col, _ in violations(node)}
    kept = [n for n in ast.walk(made) if (getattr(n, "lineno", None), getattr(n, "col_offset", None))
            in places and not (isinstance(n, ast.Name) and n.id.startswith(REFUSED))
            and not isinstance(n, ast.Expr)]  # fmt: skip
    assert kept == [] and replaced(made) == lines


def test_a_copy_that_lost_a_statement_is_withheld_whole():
    """Where the copy handed in no longer holds a statement the original held at that place
    (its rewriting moved it), nothing is narrowed: the function is withheld whole."""
    node = parse(CASES["flat"][0])
    moved = parse(CASES["flat"][0])
    moved.body[1].lineno += 100
    assert narrowed(moved, node) is None


def test_a_function_with_nothing_forbidden_is_not_narrowed():
    node = parse("def f(x):\n    return x\n")
    assert narrowed(node, node) is None


def run(node: ast.FunctionDef, *args):
    """`node` compiled and called, with the refused name a global that raises."""
    space = {}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "f.py", "exec"), space)

    class Refused(Exception):
        pass

    class Raising(dict):
        def __missing__(self, key):
            raise Refused(key)

    function = space["f"]
    globals_ = Raising(space, x=5)
    rebuilt = type(function)(function.__code__, globals_)
    try:
        return ("value", rebuilt(*args))
    except Refused:
        return ("refused", None)
    except Exception as exc:
        return (type(exc).__name__, None)


COMPILED = {
    # what Python decides as it compiles the function, before any statement runs, and
    # what the original does on these arguments up to the refused statement
    "generator": ("""\
        def f(o):
            if o is None:
                return 1
            yield o.__dict__
        """, (None,), "generator"),  # a generator, returned without running
    "local": ("""\
        def f(o):
            y = x
            x = o.__dict__
            return y
        """, (1,), "UnboundLocalError"),  # x is local: read before it is bound
    "nonlocal": ("""\
        def f(o):
            v = 1
            def g():
                nonlocal v
                v = o.__dict__
            return v
        """, (1,), 1),  # compiles: v is the enclosing function's
    "walrus": ("""\
        def f(o):
            if o:
                [(x := o.__dict__) for _ in (1,)]
            return x
        """, (0,), "UnboundLocalError"),  # the walrus binds x in f
    "shadow": ("""\
        def f(o):
            __harness_refused_f__ = 1
            return o.__dict__
        """, (1,), None),  # binding the refused name: withheld whole
}  # fmt: skip


@pytest.mark.parametrize("source, args, expected", COMPILED.values(), ids=list(COMPILED))
def test_the_narrowed_function_is_what_python_compiles_up_to_the_refusal(source, args, expected):
    """A replaced statement's bindings, `global`/`nonlocal` and `yield` still shape the
    function as Python compiles it (a generator stays one, a local stays local, a
    nonlocal compiles), and binding the refused name cannot hide the refusal: what the
    narrowed function does is what Python's does until it is refused."""
    node = parse(source)
    made = narrowed(node, node)
    if expected is None:
        assert made is None
        return
    kind, value = run(made, *args)
    if expected == "generator":
        assert kind == "value" and type(value).__name__ == "generator"
    elif expected in ("UnboundLocalError", "refused"):
        assert kind == expected
    else:
        assert (kind, value) == ("value", expected)
    assert not [v for v in violations(made) if not v[2].startswith(f"name {REFUSED}")]


def test_a_statement_that_awaits_is_not_narrowed():
    node = parse("async def f(o):\n    await o.__dict__\n")
    assert narrowed(node, node) is None


# --- a class kept, its methods narrowed (`narrowed_class`) ---------------------------

CLASS = """\
class C:
    SIZE = 16

    def plain(self):
        return self.SIZE

    def branchy(self, x):
        if x:
            return type(self).__doc__
        return self.SIZE + 1

    def gone(self):
        y = 2
        return y.__class__
"""


class _Refusing(dict):
    """A module namespace that refuses the narrowed statements' special names."""

    def __missing__(self, name: str):
        if name.startswith(REFUSED):
            raise LookupError(f"refused {name}")
        raise KeyError(name)


def _made(tree: ast.Module) -> type:
    builtins = {"type": type, "__build_class__": __build_class__}
    space = _Refusing(__builtins__=builtins, __name__="narrowed")
    exec(compile(tree, "<narrowed>", "exec"), space)
    return space["C"]


def test_a_class_keeps_its_body_and_refuses_only_where_a_method_held_a_forbidden_construct():
    """Narrowed, the class is made as written; a method runs as written up to where a
    forbidden construct stood, which refuses naming the class and the method; one whose
    copy lost a statement (its rewriting moved it) refuses as soon as it is called."""
    original = ast.parse(CLASS).body[0]
    methods = [m for m in original.body if isinstance(m, ast.FunctionDef) and m.name != "plain"]
    moved = ast.parse(CLASS).body[0]
    first = moved.body[3].body[0]  # `gone`'s first statement, somewhere else
    first.lineno, first.end_lineno = first.lineno + 100, first.end_lineno + 100
    made = narrowed_class(moved, methods)
    assert [v for v in violations(made) if not v[2].startswith("name __harness_")] == []
    cls = _made(ast.fix_missing_locations(ast.Module(body=[made], type_ignores=[])))
    obj = cls()
    assert (cls.SIZE, obj.plain(), obj.branchy(False)) == (16, 16, 17)
    with pytest.raises(LookupError, match=r"refused __harness_refused_C\.branchy__"):
        obj.branchy(True)
    with pytest.raises(LookupError, match=r"refused __harness_refused_C\.gone__"):
        obj.gone()
