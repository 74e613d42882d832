"""Hostile passes that reach for the harness's own objects through `type()`.

The escape of issue 24: `type(view)` was a harness class whose inherited method
read any attribute of what its constructor wrapped, so a pass could make one
around `()` and walk `__class__`, `__base__`, `__subclasses__()` to `os`. Each
case here is a head revision run through `harness diff` as a reviewer runs it:
it takes the type of something the world hands it (the view, a pipeline's
overlay, `get_platform()`, `Backend`, `logger`, a module importing itself, a
refusal it caught) and tries the harness method the escape used. Each must end
refused (unevaluable, naming the line) or with the error SGLang's own object
gives, never exit 0, never a harness crash, never the escape's marker file.
"""

from __future__ import annotations

import json
import logging
import textwrap
from pathlib import Path

import pytest

from tests.helpers import HEAVY_TOP, diff_versions

PATH = "python/sglang/srt/arg_groups/overrides.py"
PLAIN = """\
name: reach
target:
  path: python/sglang/srt/arg_groups/overrides.py
  {target}
  output: page_size
world: {world}
axes:
  platform: [sm90, sm100]
  page_size: [null, 1]
"""
BASE = """\
def first(view):
    return {}


def target(view):
    return {}
"""
TYPE_REFUSED = "the type of an object of the world (through type)"
# The sglang world's names, imported as SGLang's file imports them.
SGLANG_TOP = HEAVY_TOP + "import logging\n\nlogger = logging.getLogger(__name__)\n\n\n"

# After `O = <a type>`: the escape, as it worked through the old overlay class.
ESCAPE = """
    def peek(obj, name):
        return O.otherwise(O(obj, {{}}), name)

    base = peek(peek((), "__class__"), "__base__")
    for c in peek(base, "__subclasses__")():
        if peek(c, "__name__") == "_wrap_close":
            g = peek(peek(c, "__init__"), "__globals__")
            g["system"]("touch {marker}")
            return {{"page_size": 999}}
    return {{"page_size": 5}}
"""


def head(prefix: str, reach: str, marker: Path) -> str:
    """BASE's `first`, and a `target` that takes `O = reach` and escapes through it."""
    body = f"    O = {reach}\n" + ESCAPE.format(marker=marker)
    return f"{prefix}def first(view):\n    return {{}}\n\n\ndef target(view):\n{body}"


def diff(
    tmp_path: Path, text: str, world="plain", pipeline=False, fields="", extra=None
) -> tuple[int, dict]:
    target = "passes: [first, target]" if pipeline else "function: target"
    matrix = PLAIN.format(target=target, world=world) + fields
    done, report = diff_versions(tmp_path, matrix, [BASE, text], extra)
    assert done.code in (1, 4), (done.code, done.err[-2000:])  # never 0, never a crash (3)
    return done.code, report


def line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def assert_refused(code: int, report: dict, text: str, says: str, at: str) -> None:
    assert code == 4 and report["changed"] == [], report
    note = report["notes"]["head"]
    assert note.startswith("unevaluable") and says in note, note
    assert f"{PATH}:{line_of(text, at)}" in note, note


REACHES = {  # name: (world, pipeline, what `O` is)
    "view": ("plain", False, "type(view)"),
    "overlay": ("plain", True, "type(view)"),
    "platform": ("sglang", False, "type(get_platform())"),
    "backend-class": ("sglang", False, "type(Backend)"),
    "logger": ("sglang", False, "type(logger)"),
    "envs": ("sglang", False, "type(envs.SGLANG_X)"),
    "cuda-graph-config": ("sglang", False, "type(view.cuda_graph_config.prefill)"),
}


@pytest.mark.parametrize("name", sorted(REACHES))
def test_the_type_of_what_the_world_hands_out_is_refused(name: str, tmp_path: Path):
    world, pipeline, reach = REACHES[name]
    marker = tmp_path / "escaped"
    text = head(SGLANG_TOP if world == "sglang" else "", reach, marker)
    code, report = diff(tmp_path, text, world, pipeline)
    assert_refused(code, report, text, TYPE_REFUSED, "O = ")
    assert not marker.exists()


def test_the_type_of_a_backend_constant_is_sglangs_str_and_leads_nowhere(tmp_path: Path):
    """`Backend.FULL` is a plain string, in SGLang as here: its type is `str`, which has
    no method of the harness; the escape ends in str's own AttributeError."""
    marker = tmp_path / "escaped"
    text = head(SGLANG_TOP, "type(Backend.FULL)", marker)
    code, report = diff(tmp_path, text, "sglang")
    assert code == 1 and "head" not in report["notes"], report
    expected = "AttributeError: type object 'str' has no attribute 'otherwise'"
    assert {item["head"]["error"] for item in report["changed"]} == {expected}, report
    assert not marker.exists()


HELPER = "python/sglang/srt/arg_groups/helper.py"
LOOP = {HELPER: "import sglang.srt.arg_groups.overrides as back\n"}  # imports it back


@pytest.mark.parametrize(
    ("prefix", "reach", "extra"),
    [
        ("import sglang.srt.arg_groups.overrides as me\n\n\n", "type(me.me)", None),
        ("from sglang.srt.arg_groups.helper import back\n\n\n", "type(back)", LOOP),
    ],
    ids=["itself", "through-a-helper"],
)
def test_a_module_importing_itself_cannot_take_its_own_type(prefix, reach, extra, tmp_path):
    marker = tmp_path / "escaped"
    text = head(prefix, reach, marker)
    code, report = diff(tmp_path, text, extra=extra)
    assert code == 4 and report["changed"] == [], report
    assert report["notes"]["head"].startswith("unevaluable"), report
    assert not marker.exists()


def test_a_class_cannot_inherit_from_the_overlays_class(tmp_path: Path):
    """Subclassing the view's class (to call an inherited method through `super()`, with
    no arguments) needs its type first: refused there."""
    text = textwrap.dedent(
        """\
        def first(view):
            return {}


        def target(view):
            class Peek(type(view)):
                def read(self, name):
                    return super().otherwise(name)

            return {"page_size": len(str(Peek))}
        """
    )
    code, report = diff(tmp_path, text, pipeline=True)
    assert_refused(code, report, text, TYPE_REFUSED, "class Peek")


def test_the_type_of_a_caught_refusal_is_refused(tmp_path: Path):
    """A read the world refuses raises an exception of the harness's; catching it and
    taking its type is refused too (and the first refusal already makes it unevaluable)."""
    text = textwrap.dedent(
        """\
        def target(view):
            try:
                view.undeclared
            except BaseException as exc:
                kind = type(exc)
            return {"page_size": len(str(kind("a", "b")))}
        """
    )
    code, report = diff(tmp_path, text)
    assert_refused(code, report, text, "view.undeclared", "view.undeclared")


MAKES = {  # what the code makes of the world's class; what the refusal names
    "instance": ("Backend()", "a new Backend is made"),
    "subclass": ("Mine", "a subclass of Backend is made"),
}


@pytest.mark.parametrize("name", ["instance", "subclass"])
def test_making_an_object_or_a_subclass_of_a_world_class_is_refused(name: str, tmp_path: Path):
    """SGLang's `Backend` is a plain class; the world's copy is one too (its constants,
    `isinstance`, its repr), but making an instance or a subclass of it is refused."""
    makes, says = MAKES[name]
    body = f"    made = {makes}\n"
    if name == "subclass":
        body = f"    class Mine(Backend):\n        pass\n\n{body}"
    text = SGLANG_TOP + f"def target(view):\n{body}    return {{'page_size': 1}}\n"
    code, report = diff(tmp_path, text, "sglang")
    assert_refused(code, report, text, says, "made = " if name == "instance" else "class Mine")


def test_writing_a_world_class_constant_is_refused(tmp_path: Path):
    text = SGLANG_TOP + "def target(view):\n    Backend.FULL = 'breakable'\n    return {}\n"
    code, report = diff(tmp_path, text, "sglang")
    assert_refused(code, report, text, "Backend.FULL is assigned", "Backend.FULL =")


REPRS = {  # how the code asks; the object whose repr SGLang gives with an address
    "repr": ("repr(view)", "repr(view)"),
    "str": ("str(view)", "repr(view)"),
    "f-string": ('f"{view}"', "repr(view)"),
    "platform": ("repr(get_platform())", "repr(get_platform())"),
}


@pytest.mark.parametrize("name", sorted(REPRS))
def test_the_repr_of_the_view_is_refused_naming_the_line(name: str, tmp_path: Path):
    """SGLang's repr of its view names a memory address: no world can give it, and the
    harness's own would tell the harness apart, so asking is refused."""
    asks, says = REPRS[name]
    text = SGLANG_TOP + f'def target(view):\n    if "harness" in {asks}:\n        return {{}}\n'
    text += '    return {"page_size": 2}\n'
    code, report = diff(tmp_path, text, "sglang")
    assert_refused(code, report, text, f"{says} is read", "harness")


ASKS_LEVEL = (
    SGLANG_TOP
    + """\
def target(view):
    if logger.isEnabledFor({level}):
        return {{"page_size": 64}}
    return {{"page_size": 2}}
"""
)


def test_logger_is_enabled_for_without_a_level_is_refused(tmp_path: Path):
    text = ASKS_LEVEL.format(level=10)
    code, report = diff(tmp_path, text, "sglang")
    assert_refused(code, report, text, "logger.isEnabledFor()", "isEnabledFor")
    assert "logging.level" in report["notes"]["head"], report


@pytest.mark.parametrize("level", [logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR])
def test_logger_is_enabled_for_answers_as_python_logging_at_the_fields_level(
    level: int, tmp_path: Path
):
    configured = logging.Logger("sglang.srt.arg_groups.overrides", level=logging.WARNING)
    expected = 64 if configured.isEnabledFor(level) else 2
    text = ASKS_LEVEL.format(level=level)
    code, report = diff(tmp_path, text, "sglang", fields="fields:\n  logging.level: WARNING\n")
    assert code == 1 and "head" not in report["notes"], report
    assert {item["head"]["page_size"] for item in report["changed"]} == {expected}


def test_an_attribute_of_the_logger_the_world_does_not_model_is_refused(tmp_path: Path):
    """SGLang's logger has a `name`; a stub that raised AttributeError there would let a
    pass catch it and tell the harness apart."""
    text = SGLANG_TOP + textwrap.dedent(
        """\
        def target(view):
            try:
                logger.name
            except AttributeError:
                return {}
            return {"page_size": 2}
        """
    )
    code, report = diff(tmp_path, text, "sglang")
    assert_refused(code, report, text, "logger.name", "logger.name")


def test_logging_an_object_whose_str_is_code_is_refused(tmp_path: Path):
    """SGLang's logging formats a warning's arguments (calling the object's `__str__`)
    when its level lets the record through: a pass could keep state there that a
    dropped call never sets, so logging anything but plain data is refused."""
    text = SGLANG_TOP + textwrap.dedent(
        """\
        SEEN = []


        class Flag:
            def __str__(self):
                SEEN.append(1)
                return "flag"


        def target(view):
            logger.warning("%s", Flag())
            return {"page_size": 64 if SEEN else 2}
        """
    )
    code, report = diff(tmp_path, text, "sglang")
    assert_refused(code, report, text, "logger.warning() with an argument of type Flag", "warning")


def test_logging_plain_values_still_evaluates(tmp_path: Path):
    text = SGLANG_TOP + textwrap.dedent(
        """\
        def target(view):
            logger.info("platform %s sizes %s", view.page_size, [1, "a", None])
            logger.warning(f"{view.page_size}", exc_info=True)
            return {"page_size": 2}
        """
    )
    code, report = diff(tmp_path, text, "sglang")
    assert code == 1 and "head" not in report["notes"], report
    assert {item["head"]["page_size"] for item in report["changed"]} == {2}


class ResolvedView:
    """Named as the class of the view SGLang hands a pass (model_override_base.py)."""


def test_pythons_own_messages_name_the_views_class_as_sglangs(tmp_path: Path):
    """`iter(view)` fails in SGLang too; the message names the view's class, so the
    world's view has SGLang's class name there."""
    try:
        iter(ResolvedView())  # type: ignore[call-overload]
    except TypeError as exc:
        message = str(exc)
    text = SGLANG_TOP + textwrap.dedent(
        f"""\
        def target(view):
            try:
                iter(view)
            except TypeError as exc:
                return {{"page_size": 64 if str(exc) == {message!r} else 2}}
            return {{}}
        """
    )
    code, report = diff(tmp_path, text, "sglang")
    assert code == 1 and "head" not in report["notes"], report
    assert {item["head"]["page_size"] for item in report["changed"]} == {64}


def test_a_condition_on_a_world_object_is_traced_without_its_repr(tmp_path: Path):
    """The `because` of a change traces the condition's operands; an operand that is the
    world's object is shown by its class, not by the repr evaluated code is refused."""
    text = SGLANG_TOP + textwrap.dedent(
        """\
        def target(view):
            phase = view.cuda_graph_config.prefill
            if phase and get_platform().is_sm100:
                return {"page_size": 128}
            return {}
        """
    )
    fields = "fields:\n  prefill_cuda_graph: full\n"
    code, report = diff(tmp_path, text, "sglang", fields=fields)
    assert code == 1 and "head" not in report["notes"], report
    assert {item["head"]["page_size"] for item in report["changed"]} == {128}
    because = json.dumps(report["summary"])
    assert '"value": "<view.cuda_graph_config.prefill>"' in because, because


# `type` itself, reached as the type of a class, makes a class from a dict (no class
# statement for the policy to read): a metaclass answering every isinstance, and a class
# whose `__match_args__` names any attribute, read by `match` without a check.
THROUGH_TYPE = """\
def first(view):
    return {{}}


def target(view):
    T = {reach}
    M = T("M", (T,), {{"__instancecheck__": lambda c, i: True}})

    def get(obj, name):
        R = M("R", (object,), {{"__match_args__": (name,)}})
        match obj:
            case R(v):
                return v

    base = get(get((), "__class__"), "__base__")
    for c in get(base, "__subclasses__")():
        if get(c, "__name__") == "_wrap_close":
            get(get(c, "__init__"), "__globals__")["system"]("touch {marker}")
            return {{"page_size": 999}}
    return {{"page_size": 5}}
"""


@pytest.mark.parametrize("reach", ["type(type(()))", "type(int)", "type(str)",
                                   "[type(k) for k in (str, object)][0]"])  # fmt: skip
def test_the_type_of_a_class_is_refused(reach: str, tmp_path: Path):
    marker = tmp_path / "escaped"
    text = THROUGH_TYPE.format(reach=reach, marker=marker)
    code, report = diff(tmp_path, text)
    assert_refused(code, report, text, "the type of a class (through type)", "T = ")
    assert not marker.exists()


# SGLang's functions are not the world's: many are lru_cache wrappers (with their own
# repr, `cache_info`, type), a builtin prints as one. Code that asks any of it could tell
# the two apart and compute a different page size with no condition at all (no blind
# spot to name): every such question of a world function is refused.
TELLS = {  # the question: what the refusal names
    "str(is_sm100_supported)": "repr(is_sm100_supported)",
    "len(str(is_hip))": "repr(is_hip)",
    "'{0!r}'.format(use_mla_backend)": "repr(use_mla_backend)",
    "f'{get_platform!s}'": "repr(get_platform)",
    "hasattr(is_hip, 'cache_info')": "is_hip.cache_info",
    "getattr(is_sm100_supported, 'cache_clear', None)": "is_sm100_supported.cache_clear",
    "type(use_mla_backend)": TYPE_REFUSED,
    "str(getattr)": "repr(getattr)",
    "type(logger.warning)": TYPE_REFUSED,
}


@pytest.mark.parametrize("question", sorted(TELLS))
def test_a_world_function_answers_only_a_call(question: str, tmp_path: Path):
    text = (f"{SGLANG_TOP}def first(view):\n    return {{}}\n\n\ndef target(view):\n"
            f"    told = {question}\n    return {{\"page_size\": 128 - 64 * (told != 0)}}\n")  # fmt: skip
    code, report = diff(tmp_path, text, world="sglang")
    assert_refused(code, report, text, TELLS[question], "told = ")
