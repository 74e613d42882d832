"""Extraction from strings: what a closure takes from its module, and what it refuses."""

from __future__ import annotations

import ast
import textwrap

import pytest

from harness.closure.extract import extract_closure, extract_pipeline
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache
from harness.engine.worlds.sglang import FACTS
from harness.errors import Absent, Unevaluable

WORLD = frozenset({"get_platform", "Backend", "register_post_process", "logger"})


def closure_of(source: str, function: str = "target", bound=WORLD, cache=None):
    text = textwrap.dedent(source)
    files = RevisionFiles.of({"m.py": text}, "m.py")
    return extract_closure(cache or SourceCache(), files, function, bound, "m.yaml", facts=FACTS)


def names_defined(closure) -> list[str]:
    """Top-level names the closure's statements from the target's file define, in order."""
    return names_defined_in(closure.nodes)


def test_helpers_constants_and_classes_come_along_transitively_and_nothing_else():
    closure = closure_of("""
        import torch
        torch.cuda.init()
        BASE = 64
        SIZE = BASE * 2
        class Sizes:
            BIG = SIZE
        def _helper(view):
            return Sizes.BIG
        def unrelated(view):
            return torch.zeros(1)
        def target(view):
            return {"page_size": _helper(view)}
    """)
    assert names_defined(closure) == ["BASE", "SIZE", "Sizes", "_helper", "target"]
    assert closure.needs == ()


def test_world_names_are_needs_and_an_import_alias_maps_to_the_imported_name():
    closure = closure_of("""
        from sglang.srt.platforms import get_platform as platform_of
        from sglang.srt.model_executor.cuda_graph_config import Backend
        def target(view):
            if platform_of().is_sm100 and view.mode == Backend.FULL:
                return {"page_size": 1}
            return {}
    """)
    assert [tuple(n) for n in closure.needs] == [
        ("m.py", "Backend", "Backend"),
        ("m.py", "platform_of", "get_platform"),
    ]
    assert names_defined(closure) == ["target"]


def test_an_imported_name_the_world_does_not_bind_names_the_import_and_the_fix():
    source = """
        from sglang.srt.utils import is_flashinfer_available
        def target(view):
            return {"page_size": 1} if is_flashinfer_available() else {}
    """
    with pytest.raises(Unevaluable) as caught:
        closure_of(source)
    message = str(caught.value)
    assert "is_flashinfer_available (used at m.py:4)" in message
    assert "imported at m.py:2 from sglang.srt.utils, which this repository" in message
    assert "`bindings:` in m.yaml" in message


def test_a_name_defined_only_under_a_condition_is_refused():
    source = """
        try:
            FAST = True
        except ImportError:
            FAST = False
        def target(view):
            return {"page_size": 1} if FAST else {}
    """
    with pytest.raises(Unevaluable, match=r"FAST .*defined conditionally"):
        closure_of(source)


def test_a_name_defined_nowhere_is_refused_with_its_line():
    with pytest.raises(Unevaluable, match=r"name nowhere \(used at m.py:3\) is defined nowhere"):
        closure_of("""
            def target(view):
                return nowhere(view)
        """)


def test_a_missing_function_is_absent_and_an_async_one_is_unevaluable():
    with pytest.raises(Absent, match=r"no top-level function target in m\.py"):
        closure_of("def other(view):\n    return {}\n")
    with pytest.raises(Unevaluable, match="async"):
        closure_of("async def target(view):\n    return {}\n")


def test_builtins_are_listed_for_the_policy_not_judged_here():
    closure = closure_of("""
        def target(view):
            return {"page_size": max(len(view.x), 1), "y": open}
    """)
    assert closure.builtins == ("len", "max", "open")
    assert closure.use_line("open") == "m.py:3"


def test_annotations_are_dropped_and_the_target_decorator_kept_as_python_runs_it():
    closure = closure_of("""
        from typing import Dict
        @register_post_process
        def target(view) -> Dict[str, int]:
            size: int = 16
            return {"page_size": size}
    """)
    (node,) = closure.nodes
    assert node.returns is None and "Dict" not in ast.unparse(node)
    assert [ast.unparse(d) for d in node.decorator_list] == ["register_post_process"]
    assert [need.name for need in closure.needs] == ["register_post_process"]


def test_a_decorator_defined_in_the_module_comes_along_and_an_unknown_one_is_refused():
    closure = closure_of("""
        def wrap(fn):
            return lambda view: {"page_size": 64}
        @wrap
        def target(view):
            return {"page_size": 1}
    """)
    assert names_defined(closure) == ["wrap", "target"]
    with pytest.raises(Unevaluable, match="lru_cache"):
        closure_of("@lru_cache\ndef target(view):\n    return {}\n")


def digest(source: str) -> str:
    return closure_of(source).digest


def test_the_digest_follows_behavior_not_formatting():
    plain = "X = 1\ndef target(view):\n    return {'page_size': X}\n"
    spaced = "# a comment\nX = 1\n\n\n\ndef target(view):\n    return {  'page_size':  X }\n"
    helper_changed = "X = 2\ndef target(view):\n    return {'page_size': X}\n"
    unrelated = plain + "\ndef other(view):\n    return {}\n"
    assert digest(plain) == digest(spaced) == digest(unrelated)
    assert digest(plain) != digest(helper_changed)


def test_a_pipeline_skips_absent_passes_and_is_absent_only_when_all_are():
    source = "def a(view):\n    return {}\n\ndef c(view):\n    return {}\n"
    cache = SourceCache()
    files = RevisionFiles.of({"m.py": source}, "m.py")
    pipeline = extract_pipeline(cache, files, ("a", "b", "c"), WORLD, "m.yaml", facts=FACTS)
    assert pipeline.skipped == ("b",)
    assert [name for name, closure in pipeline.passes if closure] == ["a", "c"]
    with pytest.raises(Absent, match="none of the passes x, y"):
        extract_pipeline(cache, files, ("x", "y"), WORLD, "m.yaml", facts=FACTS)


def test_a_reused_closure_moves_with_its_lines():
    cache = SourceCache()
    first = closure_of("X = 1\n\ndef target(view):\n    return {'page_size': X}\n", cache=cache)
    edited = "Y = 0\nX = 1\n\ndef target(view):\n    return {'page_size': X}\n"
    second = closure_of(edited, cache=cache)
    fresh = closure_of(edited)
    assert second.lineno == fresh.lineno == first.lineno + 1
    assert second.digest == fresh.digest == first.digest


# --- imports followed inside the repository ------------------------------------------

TARGET = "python/pkg/sub/overrides.py"
PACKAGE = {
    "python/pkg/__init__.py": '"""The package."""\n',
    "python/pkg/sub/__init__.py": (
        '"""Re-exports."""\n\nfrom .base import pick  # noqa: F401\nfrom . import choices\n'
    ),
    "python/pkg/sub/base.py": (
        '"""Helpers shared by the passes."""\n\nimport torch\n\n'
        "from pkg.sub.choices import SIZES\n\n\n"
        "def pick(view):\n    return SIZES[0] if torch.cuda.is_available() else SIZES[-1]\n\n\n"
        "def pairs(view):\n    return (view.prefill or view.base, view.decode or view.base)\n"
    ),
    "python/pkg/sub/choices.py": "SIZES = [16, 64, 128]\nNAMES = ['fa4', 'triton']\n",
}


def closure_across(target_text: str, function: str = "target", bound=WORLD | {"torch"}):
    files = RevisionFiles.of({**PACKAGE, TARGET: textwrap.dedent(target_text)}, TARGET)
    return extract_closure(SourceCache(), files, function, bound, "m.yaml", facts=FACTS)


def drawn(closure) -> dict[str, list[str]]:
    """Per file, the names of the definitions the closure took from it."""
    return {path: names_defined_in(closure.nodes_of(path)) for path in closure.files
            if closure.nodes_of(path)}  # fmt: skip


def names_defined_in(nodes) -> list[str]:
    """Top-level names the statements define, in order."""
    out = []
    for node in nodes:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            out.append(node.name)
        elif isinstance(node, ast.Assign):
            out.extend(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


def test_from_import_of_a_repository_module_brings_its_definition_and_what_it_needs():
    closure = closure_across("""
        from pkg.sub.base import pick
        def target(view):
            return {"page_size": pick(view)}
    """)
    assert drawn(closure) == {
        TARGET: ["target"],
        "python/pkg/sub/base.py": ["pick"],
        "python/pkg/sub/choices.py": ["SIZES"],
    }
    assert ("python/pkg/sub/base.py", "torch", "torch") in closure.needs  # the world's torch


def test_a_module_alias_brings_the_attributes_read_off_it():
    closure = closure_across("""
        import pkg.sub.choices as choices
        def target(view):
            return {"page_size": 64} if view.backend in choices.NAMES else {}
    """)
    assert drawn(closure)["python/pkg/sub/choices.py"] == ["NAMES"]


def test_relative_imports_and_re_exports_through_init():
    closure = closure_across("""
        from . import choices
        from .base import pairs
        from pkg.sub import pick
        def target(view):
            if "fa4" in pairs(view) and view.x in choices.SIZES:
                return {"page_size": pick(view)}
            return {}
    """)
    got = drawn(closure)
    assert got["python/pkg/sub/base.py"] == ["pick", "pairs"]
    assert got["python/pkg/sub/choices.py"] == ["SIZES"]
    assert "python/pkg/sub/__init__.py" in closure.files  # read to follow the re-export


def test_a_module_used_other_than_by_attribute_is_refused():
    with pytest.raises(Unevaluable, match=r"module choices .* other than as choices\.NAME"):
        closure_across("""
            import pkg.sub.choices as choices
            def target(view):
                return {"page_size": len(vars_of(choices))}
        """, bound=WORLD | {"vars_of"})  # fmt: skip


def test_an_import_from_a_module_the_repository_lacks_names_the_import():
    with pytest.raises(Unevaluable) as caught:
        closure_across("""
            from pkg.missing import helper
            def target(view):
                return helper(view)
        """)
    assert f"imported at {TARGET}:2 from pkg.missing, which this repository" in str(caught.value)


def test_a_name_the_module_does_not_define_names_the_import_line():
    with pytest.raises(Unevaluable) as caught:
        closure_across("""
            from pkg.sub.base import nothing_here
            def target(view):
                return nothing_here(view)
        """)
    assert f"nothing_here (used at {TARGET}:2) is defined nowhere in python/pkg/sub/base.py" in str(
        caught.value
    )


def test_a_change_to_a_helper_file_changes_the_digest_and_one_elsewhere_does_not():
    source = (
        "from pkg.sub.base import pick\ndef target(view):\n    return {'page_size': pick(view)}\n"
    )

    def digest_with(**changes: str) -> str:
        files = RevisionFiles.of({**PACKAGE, **changes, TARGET: source}, TARGET)
        return extract_closure(
            SourceCache(), files, "target", WORLD | {"torch"}, "m.yaml", facts=FACTS
        ).digest

    choices = "python/pkg/sub/choices.py"
    assert digest_with() == digest_with(**{choices: PACKAGE[choices] + "OTHER = 1\n"})
    assert digest_with() != digest_with(**{choices: "SIZES = [32, 64]\nNAMES = []\n"})


def test_a_world_name_imported_from_its_home_is_the_worlds_and_its_home_is_not_read():
    home = "python/sglang/srt/runtime_context.py"
    files = {**PACKAGE, home: "def get_platform(:\n"}  # not even parsable: never read
    source = (
        "from sglang.srt.runtime_context import get_platform\n"
        "def target(view):\n    return get_platform()\n"
    )
    closure = extract_closure(
        SourceCache(),
        RevisionFiles.of({**files, TARGET: source}, TARGET),
        "target",
        WORLD,
        "m",
        facts=FACTS,
    )
    assert [tuple(n) for n in closure.needs] == [(TARGET, "get_platform", "get_platform")]
    assert closure.files == (TARGET,)


def test_a_world_name_imported_from_another_definition_is_reported_unless_bound():
    files = {**PACKAGE, "python/pkg/sub/base.py": "def get_platform():\n    import torch\n"}
    source = "from pkg.sub.base import get_platform\ndef target(view):\n    return get_platform()\n"
    revision = RevisionFiles.of({**files, TARGET: source}, TARGET)
    with pytest.raises(
        Unevaluable, match=r"pkg/sub/base.py:1 defines get_platform, which the world"
    ):
        extract_closure(SourceCache(), revision, "target", WORLD, "m", facts=FACTS)
    bound = extract_closure(
        SourceCache(), revision, "target", WORLD, "m", chosen={"get_platform"}, facts=FACTS
    )
    assert [tuple(n) for n in bound.needs] == [(TARGET, "get_platform", "get_platform")]
    assert bound.files == (TARGET,)


def test_an_import_under_a_condition_is_a_conditional_definition():
    source = """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from pkg.sub.base import pick
        def target(view):
            return {"page_size": pick(view)}
    """
    with pytest.raises(Unevaluable, match=r"pick \(used at .*\) is defined conditionally at"):
        closure_across(source)


def test_helpers_chained_deeper_than_python_recurses_are_unevaluable_not_a_crash():
    chain = "".join(f"def h{n}(view):\n    return h{n + 1}(view)\n\n" for n in range(3000))
    source = chain + "def h3000(view):\n    return {}\n\ndef target(view):\n    return h0(view)\n"
    with pytest.raises(Unevaluable, match="nested too deeply"):
        closure_of(source)
