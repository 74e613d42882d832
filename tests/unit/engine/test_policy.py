"""The static policy on snippets: what it refuses, and SGLang's own shapes it accepts."""

from __future__ import annotations

import ast
import textwrap

import pytest

from harness.engine.policy import forbidden_attribute, violations


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
    assert not any(map(forbidden_attribute, ("_fa4_page_constraint", "page_size", "_x_", "fmt")))
