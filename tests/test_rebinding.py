"""A name the pass reads, bound again at module level in any way Python binds a name.

The pass returns `TABLE["fa4"]`; the head adds, below `TABLE = {...}`, one
statement that binds (or unbinds) TABLE by a means the harness does not
evaluate as a definition: a loop's target, `with ... as`, `except ... as`,
`:=` (also inside a comprehension or a default), a `match` capture, an
assignment in a `case`, `del`, `import *`. What SGLang computes comes from
importing the checked-out files in plain Python: each changes the page size or
fails. The diff must never say "no change": it says it cannot tell (exit 4).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_unrun import CONSTS, PASSES, diff, repository, sglang_page_size

PASS = '''\
"""Post-process passes (a contributor's version)."""

import contextlib

TABLE = {{"fa4": 128}}
{extra}

def target(view):
    if view.backend == "fa4":
        return {{"page_size": TABLE["fa4"]}}
    return {{}}
'''
REBINDING = {
    "a loop's target": 'for TABLE in [{"fa4": 64}]:\n    pass\n',
    "with ... as": 'with contextlib.nullcontext({"fa4": 64}) as TABLE:\n    pass\n',
    "except ... as": "try:\n    raise KeyError\nexcept KeyError as TABLE:\n    pass\n",
    ":=": '(TABLE := {"fa4": 64})\n',
    ":= in a comprehension": '[(TABLE := {"fa4": v}) for v in [64]]\n',
    ":= in a default": 'def _g(x=(TABLE := {"fa4": 64})):\n    return x\n',
    "a match capture": 'match {"fa4": 64}:\n    case TABLE:\n        pass\n',
    "a match's rest": 'match {"fa4": 64}:\n    case {**TABLE}:\n        pass\n',
    "an assignment in a case": 'match 1:\n    case 1:\n        TABLE = {"fa4": 64}\n',
    "del": "del TABLE\n",
    "import *": "from sglang.srt.arg_groups.consts import *\n",
}


def plain_python(repo, sha: str, tmp_path: Path) -> object:
    """The fa4 page size SGLang's import of the pass gives at `sha`, or "error"."""
    return sglang_page_size(repo, sha, tmp_path, fails=True)


@pytest.mark.parametrize("name", sorted(REBINDING))
def test_a_name_bound_again_at_module_level_is_never_no_change(name: str, tmp_path: Path):
    base = {PASSES: PASS.format(extra=""), CONSTS: 'TABLE = {"fa4": 64}\n'}
    head = {PASSES: PASS.format(extra=REBINDING[name])}
    repo, first, second = repository(tmp_path, head, base)
    assert plain_python(repo, first, tmp_path) == 128
    assert plain_python(repo, second, tmp_path) in (64, "error")  # SGLang changed
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 4 and report["cannot_tell"], (done.out, done.err)
    assert "TABLE" in done.out, done.out  # the message names the name read


# Module-level code the parser takes and Python's compiler refuses: importing the file fails.
REFUSED = {
    "return at module level": "return None\n",
    "a parameter named twice": "def _g(a, a):\n    return a\n",
    "nonlocal at module level": "nonlocal TABLE\n",
    "a late __future__ import": "from __future__ import annotations\n",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_code_the_compiler_refuses_makes_the_revision_unevaluable(name: str, tmp_path: Path):
    base = {PASSES: PASS.format(extra="")}
    head = {PASSES: PASS.format(extra=REFUSED[name])}
    repo, first, second = repository(tmp_path, head, base)
    assert plain_python(repo, first, tmp_path) == 128
    assert plain_python(repo, second, tmp_path) == "error"  # SGLang cannot import it
    done, report = diff(tmp_path, first, second, repo)
    assert done.code == 4 and report["cannot_tell"] == ["head could not be evaluated"], done.out
    (trouble,) = [line for line in done.out.splitlines() if "syntax error" in line]
    assert f"{PASSES} line " in trouble, trouble


# Module-level code that binds names around TABLE and leaves what the pass reads as it was.
HARMLESS = {
    "del of a temporary read above it": "_tmp = dict(TABLE)\nTABLE = dict(_tmp)\ndel _tmp\n",
    "import * of a module without the name": "from sglang.srt.arg_groups.consts import *\n",
    "a loop's target of another name": "for _name in ('a', 'b'):\n    pass\n",
}


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_bindings_that_leave_the_name_alone_change_nothing(name: str, tmp_path: Path):
    base = {PASSES: PASS.format(extra=""), CONSTS: "OTHER = 1\n"}
    head = {PASSES: PASS.format(extra=HARMLESS[name])}
    repo, first, second = repository(tmp_path, head, base)
    assert plain_python(repo, first, tmp_path) == plain_python(repo, second, tmp_path)
    for one, other in ((first, second), (second, first)):
        done, report = diff(tmp_path, one, other, repo)
        assert done.code == 0 and report["cannot_tell"] == [], (done.out, done.err)
