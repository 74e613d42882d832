"""SGLang's own definitions of world names: compared by statements, and skipped without
parsing only when the files on the way are the same at both revisions."""

from __future__ import annotations

import pytest

from harness.closure.homes import home_definition, unchanged
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache

TARGET = "pkg/passes.py"
UTILS = "pkg/utils/__init__.py"
COMMON = "pkg/utils/common.py"
OTHER = "pkg/utils/other.py"

COMMON_TEXT = '''\
"""Probes."""

import os

from .other import vendor_name


def _vendor():
    return os.environ.get("V", vendor_name())


def is_hip():
    """Whether the machine is AMD's."""
    return _vendor() == "amd"


def unrelated():
    return 1
'''


def files(**changed: str) -> RevisionFiles:
    texts = {TARGET: "", UTILS: "from .common import *\n", COMMON: COMMON_TEXT,
             OTHER: "def vendor_name():\n    return 'nvidia'\n"}  # fmt: skip
    texts.update(
        {{"utils": UTILS, "common": COMMON, "other": OTHER}[k]: v for k, v in changed.items()}
    )
    return RevisionFiles.of(texts, TARGET)


def definitions(base: RevisionFiles, head: RevisionFiles, path: str = UTILS):
    return [home_definition(SourceCache(), side, "is_hip", path) for side in (base, head)]


def digests(definition) -> list[str]:
    """The statements as compared (their lines may move)."""
    return [piece.digest for piece in definition.pieces]


def test_the_same_files_are_unchanged_without_parsing_and_compare_equal():
    base, head = files(), files()
    assert unchanged(base, head, "is_hip", UTILS)
    first, second = definitions(base, head)
    assert first.path == COMMON and digests(first) == digests(second)


@pytest.mark.parametrize(
    "edit, differs",
    [
        (COMMON_TEXT.replace('== "amd"', '!= "amd"'), True),  # the definition itself
        (COMMON_TEXT.replace('"V"', '"VENDOR"'), True),  # a helper it reads
        (
            COMMON_TEXT.replace("import os\n", "import os\nimport sys\n"),
            False,
        ),  # an import it does not read
        (COMMON_TEXT.replace("return 1", "return 2"), False),  # a function it does not read
        (COMMON_TEXT.replace('"""Whether the machine is AMD\'s."""', '"""AMD?"""'), False),
    ],
    ids=["definition", "helper", "unread-import", "unread-function", "docstring"],
)
def test_an_edit_of_the_home_file_is_compared_by_the_statements_it_reaches(edit, differs):
    base, head = files(), files(common=edit)
    assert not unchanged(base, head, "is_hip", UTILS)  # the file differs: parse and compare
    first, second = definitions(base, head)
    assert (digests(first) != digests(second)) is differs


def test_an_import_it_reads_is_compared_as_written_not_followed():
    """`vendor_name` comes from other.py: the import statement is part of the definition,
    other.py's text is not (the documented limit)."""
    base, head = files(), files(other="def vendor_name():\n    return 'amd'\n")
    first, second = definitions(base, head)
    assert digests(first) == digests(second)


@pytest.mark.parametrize(
    "utils",
    [
        "from .common import is_hip\n",
        "from .common import (\n    is_hip,\n    unrelated,\n)\n",
        "from .other import *\nfrom .common import *\n",  # two ways in: compare them
        "import pkg.utils.common.is_hip\n",
    ],
    ids=["named", "parenthesized", "two-stars", "import"],
)
def test_the_way_to_the_definition_is_followed_or_compared(utils):
    """However `__init__.py` forwards the name, a change in common.py is never skipped."""
    base = files(utils=utils)
    head = files(utils=utils, common=COMMON_TEXT.replace('== "amd"', '!= "amd"'))
    assert not unchanged(base, head, "is_hip", UTILS)


def test_a_revision_without_the_file_has_nothing_to_compare():
    base = RevisionFiles.of({TARGET: ""}, TARGET)
    assert unchanged(base, files(), "is_hip", UTILS)
    assert definitions(base, files())[0] is None


def test_a_file_that_never_names_it_has_nothing_to_compare():
    """The home file exists at the base but does not define the name yet (SGLang 0.5.18's
    runtime_context.py and get_platform): known without parsing it."""
    base = files(common=COMMON_TEXT.replace("is_hip", "is_rocm"))
    assert unchanged(base, files(), "is_hip", COMMON)
    assert definitions(base, files(), COMMON)[0] is None
