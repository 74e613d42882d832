"""Random input never crashes the harness: the matrix loader and the extractor answer
with a user error or a revision state, never anything that would be exit 3."""

from __future__ import annotations

import contextlib
import string
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.closure.extract import extract_closure
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache
from harness.engine.worlds.sglang import FACTS
from harness.errors import Absent, HarnessError, Unevaluable
from harness.matrix.load import load_matrix, parse_matrix

SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=12)
)
KEYS = st.sampled_from(
    ["name", "target", "axes", "fields", "bindings", "world", "path", "function", "passes",
     "output", "roots", "values", "default", "page_size", "backend", "description", "x"]
)  # fmt: skip
DOCS = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(KEYS, inner, max_size=6),
    max_leaves=30,
)  # fmt: skip


def load_quietly(text: str) -> None:
    with contextlib.suppress(HarnessError):
        parse_matrix(text, "fuzz.yaml")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_as_a_matrix_file_are_a_user_error_at_worst(data: bytes):
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "m.yaml"
        path.write_bytes(data)
        with contextlib.suppress(HarnessError):
            load_matrix(str(path))


@settings(max_examples=300, deadline=None)
@given(DOCS)
def test_random_yaml_documents_are_a_user_error_at_worst(doc):
    load_quietly(yaml.safe_dump(doc))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(KEYS, DOCS, max_size=6), st.dictionaries(KEYS, DOCS, max_size=4))
def test_near_matrix_documents_are_a_user_error_at_worst(target, axes):
    doc = {"name": "fuzz", "target": {"path": "m.py", "output": "page_size", **target},
           "axes": {"page_size": [None, 1], **axes}}  # fmt: skip
    load_quietly(yaml.safe_dump(doc))


def texts_of(words: list[str]):
    """Lists of these words and short random strings, to join into text."""
    return st.lists(
        st.sampled_from(words) | st.text(alphabet=string.printable, max_size=5), max_size=60
    )


PYTHONISH = texts_of(
    [
        "def ",
        "target",
        "(view)",
        ":",
        "\n",
        "    ",
        "return ",
        "{",
        "}",
        "'page_size'",
        ": ",
        "view.a",
        " if ",
        " else ",
        "import x",
        "from y import z",
        "class C",
        "@d",
        '"""',
        "#",
        "lambda: 0",
        "(",
        ")",
        "[",
        "]",
        ",",
        "=",
        "1",
        "None",
        "\t",
        "\0",
        "\\\\",
        "async ",
        "await ",
        "yield",
        "global g",
        "*",
        "**",
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PYTHONISH)
def test_random_python_ish_text_is_extracted_or_refused_never_crashes(pieces):
    text = "".join(pieces)
    files = RevisionFiles.of({"m.py": text}, "m.py")
    with contextlib.suppress(Absent, Unevaluable):
        extract_closure(
            SourceCache(), files, "target", frozenset({"d", "z"}), "m.yaml", facts=FACTS
        )


def test_deeply_nested_source_is_unevaluable_not_a_crash():
    text = "def target(view):\n    return " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    files = RevisionFiles.of({"m.py": text}, "m.py")
    try:
        extract_closure(SourceCache(), files, "target", frozenset(), "m.yaml", facts=FACTS)
    except Unevaluable as exc:
        assert "m.py" in str(exc)


SERVER_ARGS_ISH = texts_of(
    [
        "class ServerArgs",
        ":",
        "\n",
        "    ",
        "x",
        ": int",
        " = ",
        "1",
        " * ",
        " / ",
        " - ",
        "0",
        "10 ** 400",
        "field(default=",
        "field(default_factory=list)",
        ")",
        "(",
        "[",
        "]",
        '"s"',
        "None",
        "_INPUT_NAMESPACES = [",
        "from .a import ServerArgs",
        "def run_resolution_pipeline(args)",
        "run_post_process_pass(args, _p)",
        "run_hook(",
        "if x",
        "self.",
        "def __post_init__(self)",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SERVER_ARGS_ISH, SERVER_ARGS_ISH)
def test_random_server_args_and_pipeline_text_never_crash_the_readers(one, two):
    """The defaults reader and the run-order walk read whatever a PR writes: they find
    something or nothing, never raise."""
    from harness.closure.defaults import class_defaults
    from harness.closure.order import pass_order
    from harness.closure.resolve import ViewClass

    target = "python/sglang/srt/arg_groups/overrides.py"
    files = RevisionFiles.of(
        {
            "python/sglang/srt/server_args.py": "".join(one),
            "python/sglang/srt/arg_groups/pipeline.py": "".join(two),
            target: "def _p(view):\n    return {}\n",
        },
        target,
    )
    view = ViewClass(
        "sglang.srt.server_args", "ServerArgs", frozenset(), namespaces="_INPUT_NAMESPACES"
    )
    class_defaults(SourceCache(), files, view)
    entries = (("sglang.srt.arg_groups.pipeline", "run_resolution_pipeline"),
               ("sglang.srt.server_args", "ServerArgs.__post_init__"))  # fmt: skip
    pass_order(SourceCache(), files, ["_p"], entries)
