"""The static policy on snippets: what it refuses, and SGLang's own shapes it accepts."""

from __future__ import annotations

import ast
import re
import textwrap

import pytest

from harness.engine.policy import check_closure, forbidden_attribute, violations
from harness.errors import Unevaluable
from tests.unit.closure.test_extract import closure_of


def found(source: str) -> list[str]:
    tree = ast.parse(textwrap.dedent(source))
    return [construct for _, _, construct in sorted(violations(tree))]


@pytest.mark.parametrize(
    "source, construct",
    [
        ("x.__class__", "attribute .__class__"),
        ("helper.__globals__", "attribute .__globals__"),  # read directly, no __init__ first
        ("helper.__code__", "attribute .__code__"),
        ("helper.__closure__", "attribute .__closure__"),
        ("helper.__defaults__", "attribute .__defaults__"),
        ("view.__dict__", "attribute .__dict__"),
        ("x.gi_frame", "attribute .gi_frame"),
        ("x.f_back", "attribute .f_back"),
        ("x.tb_next", "attribute .tb_next"),
        ("x.co_consts", "attribute .co_consts"),
        ("type(x).mro()", "attribute .mro"),
        ("getattr(x, '__dict__')", "getattr(..., '__dict__')"),
        ("hasattr(x, 'f_globals')", "hasattr(..., 'f_globals')"),
        ("'{0.__class__}'.format(x)", "attribute .format"),
        ("'{0[k]}'.format(x)", "attribute .format"),
        ("'{:{0.x}}'.format(x)", "attribute .format"),
        ("template.format(x)", "attribute .format"),
        ("__builtins__", "name __builtins__"),
        ("def f(__x__): pass", "parameter __x__"),
        ("type('T', (), {})", "type() with other than one argument"),
        ("class A(metaclass=M): pass", "a metaclass on class A"),
        (
            "class A:\n    def __getattribute__(self, n): pass",
            "special method __getattribute__ in class A",
        ),
        ("match x:\n    case C(__dict__=d): pass", "attribute __dict__ in a class pattern"),
        ("from os import __doc__", "import of __doc__"),
    ],
)
def test_each_way_out_is_refused_by_name(source: str, construct: str):
    assert found(source)[:1] == [construct]


def test_sglang_shapes_pass():
    source = """
        _SPARSE_ARCHS = ("DeepseekV32ForCausalLM",)
        class Backend:
            __slots__ = ()
            FULL = "full"
            def __init__(self):
                self._seen = {}
            def __eq__(self, other):
                return self is other
        @register_post_process
        def _fa4_page_constraint(view) -> dict:
            value = getattr(view, "page_size", None)
            for field in ("a", "b"):
                value = getattr(view, field)
            if __name__ == "x":
                pass
            logger.info("page size {} for {}".format(value, view.attention_backend))
            return {"page_size": 128, "note": f"{view.attention_backend!r:>10}"}
    """
    assert found(source) == []


def test_the_runtime_guard_refuses_what_the_static_check_does():
    refused = ("__class__", "__globals__", "__code__", "gi_frame", "f_globals", "format", "mro")
    assert all(map(forbidden_attribute, refused))
    assert all(map(forbidden_attribute, ("_x_", "_convert_", "_new_member_", "_a1_")))
    plain = ("_fa4_page_constraint", "page_size", "fmt", "_", "_x", "x_", "_x__", "__x_")
    assert not any(map(forbidden_attribute, plain))


@pytest.mark.parametrize(
    "source, construct",
    [
        ("Mode._convert_('X', 'os', bool)", "attribute ._convert_"),  # writes modules' dicts
        ("Mode._create_('X', {})", "attribute ._create_"),  # the functional API
        ("Mode.A._value_ = 2", "attribute ._value_"),
        ("getattr(Mode, '_new_member_')", "getattr(..., '_new_member_')"),
        ("class Mode(Enum):\n    _ignore_ = ['x']", "the name _ignore_ in class Mode"),
        ("class Mode(Enum):\n    def _missing_(cls, v): pass", "the name _missing_ in class Mode"),
        ("class Mode(Enum):\n    if x:\n        _order_ = 'A'", "the name _order_ in class Mode"),
        ("class Mode(Enum, _simple=True):\n    A = 1", "the class keyword _simple on class Mode"),
        ("class Text(str):\n    format: int", "the field format in class Text"),
        ("class D:\n    _new_member_: int", "the field _new_member_ in class D"),
        ("class D:\n    gi_frame: int = 0", "the field gi_frame in class D"),
        ("class D:\n    __slots__ = ('_missing_',)", "the slot _missing_ in class D"),
        (
            "class D:\n    __slots__ = NAMES",
            "__slots__ other than a literal name or tuple of names in class D",
        ),
        ("class Mode(Enum, **options):\n    A = 1", "the class keyword ** on class Mode"),
    ],
)
def test_the_enum_machinery_s_sunder_names_are_refused(source: str, construct: str):
    """Python reserves `_sunder_` names for enum's machinery, which reaches past the
    class statement the policy reads: none is read, written or defined in a class, and
    no private class keyword reaches its metaclass. A class's fields and slots are read
    in C (a dataclass's `__match_args__` by a positional `case K(x)`): none is a name
    no attribute read may take."""
    assert found(source)[:1] == [construct]


@pytest.mark.parametrize(
    "source, construct",
    [
        ("super(A, self).f()", "super() with arguments"),  # positional only
        ("super(**kw).f()", "super() with arguments"),  # keywords only
        ("s = super", "super other than called as super()"),
        ("f(super)", "super other than called as super()"),
        ("def __getattr__(name): pass", "name __getattr__"),  # a module-level hook
        ("try:\n    pass\nexcept E as __e__:\n    pass", "name __e__"),
        ("match x:\n    case __y__: pass", "name __y__"),
        ("match x:\n    case [*__rest__]: pass", "name __rest__"),
        ("match x:\n    case {**__rest__}: pass", "name __rest__"),
        ("def f():\n    global __builtins__", "name __builtins__"),
        ("'{'.format(x)", "attribute .format"),  # a malformed literal is no plain one
    ],
)
def test_the_less_common_ways_out_are_refused_by_name(source: str, construct: str):
    assert found(source)[:1] == [construct]


def test_names_that_only_look_like_ways_out_pass():
    """A dunder is `__x__` with something between: `__x` (name-mangled), `x__`, `____`
    and plain calls with a string argument are ordinary code."""
    source = """
        ____ = 1
        a__ = 2
        def f(x__, __y):
            return max(x__, "__init__"), print("a", "format")
        class K:
            __private = 3
        match a__:
            case _: pass
        match a__:
            case [*_]: pass
        match a__:
            case {"k": 1}: pass
        match a__:
            case K(x=0): pass
        try:
            pass
        except ValueError:
            pass
        label = "{:>10}|{0:{1:>3}}|{:{}}".format(1, 2, 3, 4)
    """
    assert found(source) == []
    assert not any(map(forbidden_attribute, ("__x", "x__", "__private")))


def test_constructs_are_placed_at_their_line_and_read_left_to_right():
    """Each construct carries its line and column (an attribute at its name), so the first
    one a report names is the first in reading order, whatever its wording."""
    source = "y.__dict__ + x.__class__\nz = 1; q.f_back\nx.__class__ if getattr(y, '__dict__') else __builtins__"
    placed = sorted(violations(ast.parse(source)))
    assert [(line, column, construct) for line, column, construct in placed] == [
        (1, 2, "attribute .__dict__"),
        (1, 15, "attribute .__class__"),
        (2, 9, "attribute .f_back"),
        (3, 2, "attribute .__class__"),
        (3, 15, "getattr(..., '__dict__')"),
        (3, 43, "name __builtins__"),
    ]


def test_a_closure_is_refused_at_its_first_construct_in_file_order_then_at_its_builtins():
    closure = closure_of("""
        def _helper(view):
            return view.__dict__, open
        def target(view):
            return {"page_size": _helper(view)[0].__class__}
    """)
    with pytest.raises(Unevaluable) as refused:
        check_closure(closure)
    assert str(refused.value) == (
        "attribute .__dict__ (at m.py:3) is not allowed in evaluated code "
        "(see Security model in the README)"
    )
    opens = closure_of("""
        def target(view):
            size = len(view.sizes)
            return {"page_size": open(size)}
    """)
    with pytest.raises(Unevaluable) as refused:
        check_closure(opens)
    assert str(refused.value) == "builtin open (used at m.py:4) is not available to evaluated code"


def test_a_closure_within_the_policy_passes_every_time():
    closure = closure_of("""
        SIZES = sorted({1, 64})
        def target(view):
            return {"page_size": max(SIZES) if len(view.name) > 1 else min(SIZES)}
    """)
    assert check_closure(closure) == {}  # nothing withheld: not an entry point's closure
    assert check_closure(closure) == {}


def test_a_format_literal_nested_past_what_python_runs_is_read_to_a_bounded_depth():
    """Python refuses a format spec nested more than twice ("Max string recursion
    exceeded") before reading any field, so the check reads two levels; a literal nested
    3,000 deep (hostile code's) must not exhaust the harness's own stack."""
    nested = "{0:{0:{0.real}}}"
    with pytest.raises(ValueError, match="Max string recursion exceeded"):
        nested.format(1)
    deep = "(" + repr("{0:" * 3000 + "}" * 3000) + ").format(1)"
    assert found(deep) == []
    assert found("'{0:{0.real}}'.format(1)") == ["attribute .format"]  # read at level two


ENUM_WORLD = frozenset({"Enum", "auto", "enum"})


@pytest.mark.parametrize(
    "source, construct",
    [
        ("T = auto()\nclass M(Enum):\n    A = T", "auto other than called as a member's value"),
        ("class M(Enum):\n    A = [auto()]", "auto other than called as a member's value"),
        ("make = auto\nclass M(Enum):\n    A = make()", "auto other than called as a member's value"),
        ("class M(Enum):\n    A = enum.auto\n", "enum.auto other than called as a member's value"),
        ("class M(Enum):\n    A = auto(value=1)", "auto other than called as a member's value"),
    ],
)  # fmt: skip
def test_auto_is_only_called_as_a_member_s_value(source: str, construct: str):
    """What `auto()` makes is written into by the class body that takes it: kept anywhere
    else it is state, and a class statement the closure leaves out (Python runs it as
    the file loads) could have taken it first."""
    head = "from enum import Enum, auto\nimport enum\n"
    closure = closure_of(head + source + "\ndef target(view):\n    return {'page_size': M.A}\n",
                         bound=ENUM_WORLD)  # fmt: skip
    with pytest.raises(Unevaluable, match=re.escape(construct)):
        check_closure(closure)


def test_auto_called_as_a_member_s_value_passes_and_a_project_s_own_auto_is_its_own():
    fine = """
        from enum import Enum, auto
        import enum
        class M(Enum):
            A = auto()
            B = (enum.auto(), 2)
            C = auto(3)
        def target(view):
            class Local(Enum):
                X = auto()
            return {"page_size": M.A.value + Local.X.value}
    """
    check_closure(closure_of(fine, bound=ENUM_WORLD))
    own = """
        def auto():
            return 1
        def target(view):
            return {"page_size": auto()}
    """
    check_closure(closure_of(own, bound=ENUM_WORLD))
