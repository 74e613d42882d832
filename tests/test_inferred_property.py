"""`--matrix inferred` on random pass pairs: it finds a difference whenever the two passes
differ on some input (completeness), and none when they do not (soundness).

The passes are test_explore's random ones (nested if/elif over ==, != and `in` tests of
view attributes against literals, helpers, local names, raises), registered in an
SGLang-shaped file; the head is the base with one literal changed, or unchanged but
respelled. The oracle runs both in plain Python over every value each attribute can be
told apart by: null, every literal either version compares it with, and one other.
"""

from __future__ import annotations

import itertools
import json
import re
import textwrap
from types import SimpleNamespace

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.conftest import run_cli
from tests.helpers import commit_versions
from tests.unit.engine.test_explore import pass_source
from tests.unit.tables import PAGE_SIZES

TOP = "from sglang.srt.arg_groups.registry import register_post_process\n\n\n"
OTHER = 99


def registered(text: str) -> str:
    return TOP + text.replace("def target(view):", "@register_post_process\ndef target(view):")


def outcomes(source: str, sizes: list[int]) -> list:
    space: dict = {}
    exec(compile(source, "oracle", "exec"), space)
    top = max(sizes) + 1  # the literals either version compares an attribute with
    domains = [[None, *range(top), OTHER] for _ in sizes] + [[None, *PAGE_SIZES, OTHER]]
    out = []
    for values in itertools.product(*domains):
        view = SimpleNamespace(**{f"a{n}": v for n, v in enumerate(values[:-1])},
                               page_size=values[-1])  # fmt: skip
        try:
            out.append(space["target"](view).get("page_size", view.page_size))
        except Exception as exc:  # an error outcome: its type and message
            out.append(f"{type(exc).__name__}: {exc}")
    return out


@st.composite
def pass_pair(draw):
    sizes, base = draw(pass_source())
    literals = [m.start() for m in re.finditer(r"(?<=view\.a\d == )\d|(?<=view\.a\d != )\d", base)]
    if literals and draw(st.booleans()):
        at = draw(st.sampled_from(literals))
        digit = int(base[at])
        new = draw(st.sampled_from([d for d in range(max(sizes) + 1) if d != digit]))
        head = base[:at] + str(new) + base[at + 1 :]
    else:
        head = base.replace("return {}", "return dict()")  # the same behaviour, respelled
    return sizes, base, head


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(pass_pair())
def test_inferred_finds_a_difference_exactly_when_the_passes_differ(tmp_path_factory, case):
    sizes, base, head = case
    assume(base != head)
    root = tmp_path_factory.mktemp("pair")
    shas = commit_versions(root, [registered(base), registered(head)])
    done = run_cli("diff", *shas, "--matrix", "inferred", "--repo", str(root), "--format", "json")
    differ = outcomes(base, sizes) != outcomes(head, sizes)
    assert done.code in (0, 1, 4), done.err
    report = json.loads(done.out)
    assert report["notes"] == {}, report["notes"]
    assert bool(report["changed"]) == differ, textwrap.indent(base + "---\n" + head, "  ")
