"""A matrix file's YAML: libyaml's parser and PyYAML's own give the same documents, and
any text is a document or one user error, never an exception of Python's own."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.matrix import strict_yaml
from harness.matrix.strict_yaml import _PythonLoader, _StrictLoader

with_libyaml = pytest.mark.skipif(
    _StrictLoader is _PythonLoader, reason="this PyYAML was built without libyaml"
)

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
DOCS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=20,
)  # fmt: skip
# pieces of YAML's syntax, to make texts both well-formed and not
TOKENS = st.sampled_from(
    ["a", "b", ": ", ":", "- ", "-", "\n", "  ", "\t", "[", "]", "{", "}", ", ", "&x ", "*x",
     "'", '"', "#", "!!str ", "!!int ", "!!float ", "!!bool ", "!!timestamp ", "!!set ",
     "!!map ", "!!seq ", "!!binary ", "!!null ", "!!omap ", "!!pairs ", "2001-02-30", "+", ".",
     "? ", "|\n", ">\n", "~", "yes", "0x1F", "0b", "1e3", "1:2", "...",
     "---", "%YAML 1.1\n", "\\", "é", "\r\n", "@", "`"]
)  # fmt: skip


def outcome(loader: type, text: str) -> tuple:
    """('value', document) or ('error',): where an error is, the two parsers may say one
    line apart (at the end of the text: `[` alone), and word it otherwise."""
    try:
        return ("value", yaml.load(text, Loader=loader))
    except yaml.YAMLError:
        return ("error",)


def same(text: str) -> None:
    """The same outcome either way; but PyYAML's scanner refuses a tab that libyaml reads
    as the space YAML takes it for (`a\t`), and ends a plain value at a `?` inside `[]` or
    `{}` (`[a?b]`), where libyaml keeps it in the value as YAML does: with a tab, or a `?`
    and a bracket, in the text, only what PyYAML's reads must read the same."""
    python, libyaml = outcome(_PythonLoader, text), outcome(_StrictLoader, text)
    if python[0] == libyaml[0] == "value" and _nan(python[1]):
        return
    if python == ("error",) and ("\t" in text or ("?" in text and _flow(text))):
        return
    assert python == libyaml


def _flow(text: str) -> bool:
    return "[" in text or "{" in text


def _nan(value) -> bool:
    return repr(value).count("nan") > 0  # a NaN is never equal to itself


@with_libyaml
@settings(max_examples=300, deadline=None)
@given(
    DOCS, st.sampled_from([yaml.safe_dump, lambda d: yaml.safe_dump(d, default_flow_style=True)])
)
def test_a_document_written_as_yaml_reads_back_the_same_either_way(doc, dump):
    same(dump(doc))


@with_libyaml
@settings(max_examples=500, deadline=None)
@given(st.lists(TOKENS, max_size=25).map("".join))
def test_a_text_of_yaml_tokens_is_the_same_document_or_an_error_either_way(text):
    same(text)


@with_libyaml
@pytest.mark.parametrize("text", ["{a? }", "[a?b]", "{a?: 1}", "[x?]"])
def test_a_question_mark_inside_a_flow_collection_is_part_of_the_value(text):
    """YAML's plain values may hold a `?` (only a leading one is an indicator): libyaml
    reads these; PyYAML's own scanner refuses them (`same` allows that one difference)."""
    value = yaml.load(text, Loader=_StrictLoader)
    assert "?" in repr(value)
    with pytest.raises(yaml.YAMLError):
        yaml.load(text, Loader=_PythonLoader)


@settings(max_examples=500, deadline=None)
@given(st.lists(TOKENS, max_size=25).map("".join))
def test_a_text_of_yaml_tokens_is_a_document_or_one_user_error(text):
    try:
        strict_yaml.load(text, "m.yaml")
    except HarnessError as exc:
        assert str(exc).startswith("m.yaml") and "\n" not in str(exc)


@pytest.mark.parametrize(
    ("text", "line"),
    [("a: 1\nb: !!int\n", 2), ("!!int x", 1), ("!!float .", 1), ("!!bool x", 1),
     ("a:\n  b: !!timestamp 2001-02-30\n", 2), ("!!timestamp x", 1), ("!!set [1]", 1),
     ("!!map [1]", 1)],
)  # fmt: skip
def test_a_value_its_tag_cannot_make_is_an_error_at_its_line(text, line):
    """PyYAML's constructors raise IndexError, ValueError, KeyError, AttributeError or
    TypeError for these: each was a traceback (exit 3) before."""
    with pytest.raises(HarnessError, match=rf"^m\.yaml:{line}: not valid YAML \("):
        strict_yaml.load(text, "m.yaml")


@with_libyaml
def test_the_shipped_matrices_read_the_same_either_way():
    from harness.matrix.load import shipped_dir

    for path in sorted(shipped_dir().glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        assert yaml.load(text, Loader=_StrictLoader) == yaml.safe_load(text) == yaml.load(
            text, Loader=_PythonLoader)  # fmt: skip


def test_the_bounds_hold_with_either_parser():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(6)
    )
    for loader in (_PythonLoader, _StrictLoader):
        with pytest.raises(strict_yaml._Refused):
            yaml.load(bomb, Loader=loader)
