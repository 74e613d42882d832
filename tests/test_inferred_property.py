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


def second(text: str) -> str:
    """The pass as a second one in the same file: its own name, its own attributes b0..."""
    return (text.replace("def target(view):", "def target_two(view):")
            .replace("view.a", "view.b").replace('"a%d"', '"b%d"')
            .replace("def _is(", "def _is_two(").replace("_is(view", "_is_two(view"))  # fmt: skip


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])  # fmt: skip
@given(pass_pair(), pass_pair())
def test_split_into_one_matrix_per_pass_each_part_finds_exactly_its_pass_s_change(
    tmp_path_factory, one, two
):
    """Two passes in one file, one matrix too many cells for both: each changed pass is
    diffed alone, and its part changes exactly when that pass differs on its own inputs."""
    (sizes1, base1, head1), (sizes2, base2, head2) = one, two
    changed = {n for n, b, h in (("target", base1, head1), ("target_two", base2, head2)) if b != h}
    assume(changed)
    root = tmp_path_factory.mktemp("pairs")
    texts = [registered(a) + "\n\n" + second(registered(b))[len(TOP):]
             for a, b in ((base1, base2), (head1, head2))]  # fmt: skip
    shas = commit_versions(root, texts)
    args = ("diff", *shas, "--matrix", "inferred", "--repo", str(root), "--format", "json")
    whole = json.loads(run_cli(*args).out)
    done = run_cli(*args, "--max-cells", str(whole["cells"] - 1))
    report = json.loads(done.out)
    parts = {p["target"]["function"]: p for p in report["parts"]}
    too_large = {n for n in changed for r in report["unseen"] if r.startswith(f"the pass {n} ")}
    assert set(parts) | too_large == changed and not set(parts) & too_large
    differ = {"target": outcomes(base1, sizes1) != outcomes(head1, sizes1),
              "target_two": outcomes(base2, sizes2) != outcomes(head2, sizes2)}  # fmt: skip
    for name, part in parts.items():
        assert part["notes"] == {}, part["notes"]
        assert bool(part["changed"]) == differ[name], textwrap.indent(
            f"{base1}---\n{head1}===\n{base2}---\n{head2}", "  "
        )
    assert done.code == report["status"]
    assert (done.code == 1) == any(differ[n] for n in parts)
    assert done.code != 0 or not too_large  # a part not diffed is never "no change"
