"""Purity on snippets: writes that outlive a call, and local work that does not."""

from __future__ import annotations

import textwrap

import pytest

from harness.closure.extract import extract_closure
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache
from harness.engine.purity import impurity
from harness.engine.worlds.sglang import FACTS


def reason(source: str) -> str | None:
    files = RevisionFiles.of({"m.py": textwrap.dedent(source)}, "m.py")
    return impurity(
        extract_closure(SourceCache(), files, "target", frozenset(), "m.yaml", facts=FACTS)
    )


@pytest.mark.parametrize(
    "body, what",
    [
        ("SEEN.append(view.a)\n    return {}", "calls SEEN.append()"),
        ("SEEN[0] = view.a\n    return {}", "writes to SEEN[0]"),
        ("global COUNT\n    COUNT = 1\n    return {}", "global COUNT"),
        ("alias = SEEN\n    alias.append(1)\n    return {}", "calls alias.append()"),
        ("for item in [SEEN]:\n        item.append(1)\n    return {}", "calls item.append()"),
        ("helper(SEEN)\n    return {}", "calls seen.add()"),
        ("setattr(SEEN, 'x', 1)\n    return {}", "calls setattr() on SEEN"),
        ("s = setattr\n    s(SEEN, 'x', 1)\n    return {}", "takes setattr as a value"),
        ("return {'f': helper2(setattr)}", "takes setattr as a value"),
        ("box = [SEEN]\n    setattr(box[0], 'x', 1)\n    return {}", "calls setattr() on box[0]"),
    ],
)
def test_writes_to_state_that_outlives_the_call_are_found(body: str, what: str):
    source = "SEEN = []\nCOUNT = 0\ndef helper(seen):\n    seen.add(1)\n"
    source += "def helper2(f):\n    return 1\n"
    source += f"def target(view):\n    {body}\n"
    assert what in (reason(source) or "")


def test_work_on_fresh_locals_is_pure():
    source = """
        LIMITS = {"fa4": 128}
        def target(view):
            out = {}
            sizes = [s for s in (1, 2)]
            sizes.append(LIMITS.get(view.attention_backend, 1))
            out["page_size"] = max(sizes)
            out.update({"note": "x"})
            return out
    """
    assert reason(source) is None


@pytest.mark.parametrize(
    "body, pure",
    [
        ('view._stash = list(getattr(view, "_stash", ()))', True),  # SGLang's pipeline
        ("view._stash = list(view._stash)", True),
        ('view._stash = list(getattr(view, "_other", ()))', False),  # another attribute's
        ('view._stash = list(getattr(view, "_stash", SEEN))', False),  # a shared default
        ("view._stash = list(SEEN)", False),
        ('view._stash = tuple(getattr(view, "_stash", ()))', False),
    ],
)
def test_a_new_list_of_the_views_own_private_attribute_keeps_no_state(body: str, pure: bool):
    """`view._x = list(getattr(view, "_x", ()))` copies what the call's own view holds
    there, which only such assignments or the world put there: no state outlives the
    call. A copy of anything else may hold what another call sees."""
    source = f"SEEN = []\ndef target(view):\n    {body}\n    return {{}}\n"
    assert (reason(source) is None) is pure, reason(source)


@pytest.mark.parametrize("rebinds", ["list = tuple\n", "getattr = lambda *a: SEEN\n"])
def test_the_copy_is_fresh_only_with_pythons_list_and_getattr(rebinds: str):
    body = 'view._stash = list(getattr(view, "_stash", ()))'
    source = f"SEEN = []\n{rebinds}def target(view):\n    {body}\n    return {{}}\n"
    assert reason(source) is not None
    local = f"SEEN = []\ndef target(view, list=list):\n    {body}\n    return {{}}\n"
    assert reason(local) is not None


def test_setattr_kept_at_module_level_is_state():
    source = "_set = setattr\ndef target(view):\n    _set(view, 'x', 1)\n    return {}\n"
    assert "keeps setattr as a value" in (reason(source) or "")
