"""An entry's `validate_declarations` (SGLang's check of the model overrides'
declarations): only the fields `ServerArgs` marks `Arg(resolvable=True)` in their
annotations may be declared, else SGLang's ValueError. SGLang finds the marks by
evaluating the annotations; the world reads them from the text.

The fixture is one SGLang-shaped commit; the expected outcome of every cell comes
from importing its files in plain Python and running the entry (whose own
`validate_declarations` evaluates the annotations), never from harness.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_entry import PKG, VALIDATE, harness_outcomes, plain_outcomes
from tests.test_entry_class import AXES, OUTPUTS, commit_files, diff_note

ARG_UTILS = '''\
"""Field metadata carried in `Annotated` annotations."""

from __future__ import annotations

import dataclasses
import functools
from typing import Annotated, Optional, get_args, get_origin, get_type_hints

A = Annotated


@dataclasses.dataclass(frozen=True)
class Arg:
    help: str = ""
    resolvable: bool = False


@dataclasses.dataclass(frozen=True)
class NS:
    path: str


EXTRA: Optional[Arg] = None


@functools.lru_cache(maxsize=None)
def resolvable_fields(cls) -> frozenset:
    hints = get_type_hints(cls, include_extras=True)
    names = set()
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        if get_origin(hint) is not Annotated:
            continue
        for item in get_args(hint)[1:]:
            if isinstance(item, str):
                break
            if isinstance(item, Arg):
                if item.resolvable:
                    names.add(field.name)
                break
    return frozenset(names)
'''
SERVER_ARGS = '''\
"""Server arguments, their metadata in the annotations."""

from __future__ import annotations

import dataclasses
from typing import Optional

from sglang.srt.arg_groups.arg_utils import NS, A, Arg

MARKED = Arg(help="Set by resolution.", resolvable=True)


@dataclasses.dataclass
class ServerArgs:
    attention_backend: A[
        Optional[str], Arg(help="The attention kernels.", resolvable=True)
    ] = None
    page_size: A[Optional[int], "Tokens per page."] = None
    speculative_eagle_topk: A[Optional[int], NS("spec"), Arg(resolvable=True)] = None
    chunked_prefill_size: A[Optional[int], Arg(help="Chunk.")] = None
    kv_cache_dtype: A[str, MARKED] = "auto"
'''
OVERRIDES = (
    '''\
"""The model overrides' declarations, checked before they are kept."""

import dataclasses
from typing import Any

from sglang.srt.arg_groups.arg_utils import resolvable_fields


'''
    + VALIDATE
)
PIPELINE = '''\
"""Resolution collecting the family's declarations, then checking them."""

from sglang.srt.arg_groups.overrides import validate_declarations


def run_resolution_pipeline(server_args):
    declarations = [("family", {{"attention_backend": "fa3"}})]
    if server_args.attention_backend == "fa4":
        declarations.append(("spec", {{"speculative_eagle_topk": 2}}))
    if server_args.page_size == 64:
        declarations.append(("paging", {{"page_size": 1, "chunked_prefill_size": 8}}))
{more}    validate_declarations(server_args, declarations)
    for _source, fields in declarations:
        server_args.attention_backend = fields.get("attention_backend", "")
        server_args.page_size = fields.get("page_size", server_args.page_size)
'''


def commit(tmp_path: Path, more: str = "") -> tuple[Path, str, Path]:
    return commit_files(tmp_path, {
        "python/sglang/srt/server_args.py": SERVER_ARGS,
        f"{PKG}/__init__.py": "",
        f"{PKG}/arg_utils.py": ARG_UTILS,
        f"{PKG}/overrides.py": OVERRIDES,
        f"{PKG}/pipeline.py": PIPELINE.format(more=more),
    })  # fmt: skip


OF_THE_CLASS = (
    "    from sglang.srt.server_args import ServerArgs\n\n"
    '    validate_declarations(ServerArgs, [("class", {"page_size": 1})])  # no instance\n'
)


@pytest.mark.parametrize("more", ["", OF_THE_CLASS], ids=["instance", "and-class"])
@pytest.mark.parametrize("exhaustive", [False, True], ids=["explored", "every-cell"])
def test_declarations_are_checked_against_the_marks_as_python_reads_them(
    tmp_path, exhaustive, more
):
    root, sha, matrix = commit(tmp_path, more)
    found = harness_outcomes(root, sha, matrix, exhaustive=exhaustive, outputs=OUTPUTS)
    expected = plain_outcomes(tmp_path / "tree", AXES, OUTPUTS)
    assert found == expected
    refused = "ValueError: paging: ['chunked_prefill_size', 'page_size'] not model-overridable"
    assert [str(e[1]).startswith(refused) for e in expected].count(True) == 2  # page 64


@pytest.mark.parametrize(
    "more, what",
    [
        ('    declarations.append(("dtype", {"kv_cache_dtype": "fp8"}))\n',
         "whether ServerArgs (python/sglang/srt/server_args.py) lets kv_cache_dtype be declared"),
        ("    validate_declarations(object(), declarations)\n",
         "validate_declarations() of a object"),
        ('    declarations.append(("typo", {"page_sise": 1}))\n',
         "declares no field page_sise in the body read"),
        ('    validate_declarations(server_args, [(1, {"page_size": 1})])\n',
         "validate_declarations() of other values"),
    ],
    ids=["mark-unread", "another-object", "no-such-field", "another-source"],
)  # fmt: skip
def test_what_the_text_cannot_tell_is_refused(tmp_path, more, what):
    """A field marked by a name (`A[str, MARKED]`): Python evaluates it to an Arg, the
    text cannot tell which; another object than the configuration; a source that is
    not a string: each refused (exit 4), naming it."""
    code, note = diff_note(*commit(tmp_path, more))
    assert code == 4 and what in note, (code, note)
