"""The whole resolution: defaults read from ServerArgs, passes in the order the code runs
them, imports inside functions followed into the resolution code.

A small SGLang-shaped repository is built in tmp_path, five commits, each changing
one thing the outcomes depend on: a ServerArgs default, a pass that declares a field
other than page_size, the order a handler runs two passes in, and a constant a pass
imports inside its body. The expected outcomes come from `expected` below, written
from the code's meaning, not from harness.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests.conftest import one_line_error, run_cli

PKG = "python/sglang/srt/arg_groups"
SERVER_ARGS = "python/sglang/srt/server_args.py"

SERVER_ARGS_SOURCE = '''\
# Written for harness's tests, shaped like SGLang's server_args.py.
"""Server arguments: one dataclass, its defaults declared field by field."""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Optional

DETERMINISTIC_SAMPLING = ["{sampling}"]


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    attention_backend: Optional[str] = None
    page_size: Optional[int] = None
    chunked_prefill_size: Optional[int] = None
    sampling_backend: Optional[str] = None
    enable_deterministic_inference: bool = False
    max_prefill_tokens: int = {tokens}
    served_model_names: list = dataclasses.field(default_factory=list)
    NOTE: ClassVar[str] = "not a field"

    def __post_init__(self):
        pass
'''

OVERRIDES_SOURCE = '''\
# Written for harness's tests, shaped like SGLang's overrides.py.
"""Post-process passes."""

from __future__ import annotations

from typing import Any, Dict


def register_post_process(fn):
    return fn


def run_post_process_pass(server_args, fn):
    fn(server_args)


@register_post_process
def _mla_page_size(view) -> Dict[str, Any]:
    if view.attention_backend == "flashmla" and view.page_size is None:
        return {{"page_size": 64}}
    return {{}}


@register_post_process
def _tiny_pages(view) -> Dict[str, Any]:
    """Run by the handler for fa3 only; it does not check that itself."""
    return {{"page_size": 2}} if view.page_size is None else {{}}


@register_post_process
def _page_size_default(view) -> Dict[str, Any]:
    return {{"page_size": 1}} if view.page_size is None else {{}}


@register_post_process
def _sampling_backend_default(view) -> Dict[str, Any]:
    if view.sampling_backend is not None:
        return {{}}
    if view.enable_deterministic_inference:
        from sglang.srt.server_args import DETERMINISTIC_SAMPLING

        return {{"sampling_backend": DETERMINISTIC_SAMPLING[0]}}
    return {{"sampling_backend": "{sampling}"}}


@register_post_process
def _chunked_prefill_default(view) -> Dict[str, Any]:
    if view.chunked_prefill_size is None:
        return {{"chunked_prefill_size": view.max_prefill_tokens // 2}}
    return {{}}
'''

HOOKS_SOURCE = '''\
"""Handlers the pipeline runs."""

from sglang.srt.arg_groups.overrides import (
    _tiny_pages,
    {first},
    {second},
    run_post_process_pass,
)


def handle_page_size(server_args):
    if server_args.attention_backend == "fa3":
        run_post_process_pass(server_args, _tiny_pages)
    run_post_process_pass(server_args, {first})
    run_post_process_pass(server_args, {second})
'''

PIPELINE_SOURCE = '''\
"""Resolution, in order."""

from sglang.srt.arg_groups.overrides import (
    _chunked_prefill_default,
    _sampling_backend_default,
    run_post_process_pass,
)


def run_hook(hook, server_args):
    hook(server_args)


def run_resolution_pipeline(server_args):
    run_post_process_pass(server_args, _chunked_prefill_default)
    from sglang.srt.arg_groups.hooks import handle_page_size

    run_hook(handle_page_size, server_args)
    run_post_process_pass(server_args, _sampling_backend_default)
'''

# Each commit's knobs, oldest first; each changes one thing.
VERSIONS = {
    "initial": dict(tokens="4 * 1024", sampling="flashinfer", det="pytorch", mla_first=False),
    "default": dict(tokens="8192", sampling="flashinfer", det="pytorch", mla_first=False),
    "sampling": dict(tokens="8192", sampling="triton", det="pytorch", mla_first=False),
    "order": dict(tokens="8192", sampling="triton", det="pytorch", mla_first=True),
    "constant": dict(tokens="8192", sampling="triton", det="ascend", mla_first=True),
}

AXES = {
    "attention_backend": [None, "flashmla", "fa3"],
    "page_size": [None, 16],
    "enable_deterministic_inference": [False, True],
    "chunked_prefill_size": [None, 512],
}

MATRIX = """\
name: resolution-test
target:
  path: python/sglang/srt/arg_groups/overrides.py
  passes: run-order
  output: [page_size, sampling_backend, chunked_prefill_size]
  guards:
    _tiny_pages: {axis_in: {attention_backend: [fa3]}}
world: sglang
axes:
  attention_backend: [null, flashmla, fa3]
  page_size: [null, 16]
  enable_deterministic_inference: [false, true]
  chunked_prefill_size: [null, 512]
fields:
  sampling_backend: null
"""


def files(version: dict) -> dict[str, str]:
    passes = ("_mla_page_size", "_page_size_default")
    first, second = passes if version["mla_first"] else passes[::-1]
    return {
        SERVER_ARGS: SERVER_ARGS_SOURCE.format(tokens=version["tokens"], sampling=version["det"]),
        f"{PKG}/__init__.py": "",
        f"{PKG}/overrides.py": OVERRIDES_SOURCE.format(sampling=version["sampling"]),
        f"{PKG}/hooks.py": HOOKS_SOURCE.format(first=first, second=second),
        f"{PKG}/pipeline.py": PIPELINE_SOURCE,
    }


def expected(version: dict, cell: dict) -> tuple:
    """(page_size, sampling_backend, chunked_prefill_size) SGLang resolves for `cell`."""
    page = cell["page_size"]
    mla = cell["attention_backend"] == "flashmla"
    if cell["attention_backend"] == "fa3" and page is None:  # the handler's guarded pass
        page = 2
    if version["mla_first"]:
        page = 64 if mla and page is None else page
        page = 1 if page is None else page
    else:
        page = 1 if page is None else page  # the default runs first: MLA sees a page size
    sampling = version["det"] if cell["enable_deterministic_inference"] else version["sampling"]
    tokens = 4 * 1024 if version["tokens"] == "4 * 1024" else int(version["tokens"])
    chunk = cell["chunked_prefill_size"]
    return page, sampling, tokens // 2 if chunk is None else chunk


def cells() -> list[dict]:
    return [dict(zip(AXES, values, strict=True)) for values in itertools.product(*AXES.values())]


def changed(base: str, head: str) -> int:
    return sum(expected(VERSIONS[base], c) != expected(VERSIONS[head], c) for c in cells())


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[str, dict[str, str], str]:
    root = tmp_path_factory.mktemp("resolution")
    fixture = FixtureRepo(root / "repo")
    shas = {
        key: fixture.commit(f"{key} (#{n})", files(v))
        for n, (key, v) in enumerate(VERSIONS.items())
    }
    matrix = root / "resolution.yaml"
    matrix.write_text(MATRIX)
    return str(root / "repo"), shas, str(matrix)


def diff_json(repo, base: str, head: str) -> tuple[int, dict]:
    path, shas, matrix = repo
    result = run_cli("diff", shas[base], shas[head], "--repo", path, "--matrix", matrix,
                     "--format", "json", "--no-cache")  # fmt: skip
    assert result.err == "", result.err
    return result.code, json.loads(result.out)


def test_each_version_evaluates_to_what_the_code_means(repo):
    for key, version in VERSIONS.items():
        _, report = diff_json(repo, "initial", key)
        assert report["notes"] == {}
        assert len(report["changed"]) == changed("initial", key)
        for item in report["changed"]:
            want = expected(version, item["cell"])
            head = item["head"]
            assert (
                head["page_size"],
                head["sampling_backend"],
                head["chunked_prefill_size"],
            ) == want


@pytest.mark.parametrize(
    "base, head",
    [("initial", "default"), ("default", "sampling"), ("sampling", "order"), ("order", "constant")],
)
def test_every_kind_of_change_shows_up_in_diff(repo, base, head):
    code, report = diff_json(repo, base, head)
    assert changed(base, head) > 0
    assert (code, len(report["changed"])) == (1, changed(base, head))


def test_a_changed_default_is_named_in_the_report(repo):
    path, shas, matrix = repo
    _, report = diff_json(repo, "initial", "default")
    assert report["changed_defaults"] == [
        {"field": "max_prefill_tokens", "base": "4096", "head": "8192"}
    ]
    assert report["head"]["defaults"]["max_prefill_tokens"] == "8192"
    text = run_cli("diff", shas["initial"], shas["default"], "--repo", path, "--matrix", matrix)
    assert "default changed: max_prefill_tokens: 4096 -> 8192" in text.out


def test_history_lists_each_commit_that_changes_outcomes(repo):
    path, shas, matrix = repo
    result = run_cli("history", "--repo", path, "--matrix", matrix, "--format", "json")
    report = json.loads(result.out)
    keys = list(VERSIONS)
    want = [(shas[head], changed(base, head)) for base, head in itertools.pairwise(keys)]
    assert [(c["sha"], c["cells_changed"]) for c in report["commits"]] == want


@pytest.mark.parametrize("culprit", ["default", "sampling", "order", "constant"])
def test_bisect_finds_each_change(repo, culprit):
    path, shas, matrix = repo
    keys = list(VERSIONS)
    before = keys[keys.index(culprit) - 1]
    result = run_cli("bisect", shas[before], shas[culprit], "--repo", path, "--matrix", matrix,
                     "--format", "json")  # fmt: skip
    assert result.code == 1, result.err  # found
    assert json.loads(result.out)["culprit"]["sha"] == shas[culprit]


def test_the_order_comes_from_the_code_not_the_file(repo):
    """In file order `_mla_page_size` runs first; the pipeline runs it after the default."""
    path, shas, matrix = repo
    flashmla = {"attention_backend": "flashmla", "page_size": None,
                "enable_deterministic_inference": False, "chunked_prefill_size": None}  # fmt: skip
    assert expected(VERSIONS["initial"], flashmla)[0] == 1
    result = run_cli("explain", shas["initial"], "--repo", path, "--matrix", matrix,
                     *[f"--where={k}={'null' if v is None else str(v).lower()}" for k, v in flashmla.items()])  # fmt: skip
    assert result.code == 0, result.err
    assert result.out.index("_page_size_default") < result.out.index("_mla_page_size")


def test_a_field_without_a_literal_default_is_refused_by_name(tmp_path):
    fixture = FixtureRepo(tmp_path / "repo")
    source = files(VERSIONS["initial"])
    source[f"{PKG}/overrides.py"] += (
        "\n\n@register_post_process\ndef _model(view):\n"
        '    return {"page_size": 2} if view.model_path else {}\n'
    )
    fixture.commit("model path", source)
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX)
    result = run_cli("diff", "HEAD", "HEAD", "--repo", str(tmp_path / "repo"),
                     "--matrix", str(matrix), "--format", "json")  # fmt: skip
    note = json.loads(result.out)["notes"]["base"]
    assert "view.model_path" in note and "declared without a default" in note
    assert f"{SERVER_ARGS}:14" in note and "under `fields:`" in note


def test_a_matrix_field_wins_over_the_default(repo, tmp_path):
    path, shas, _ = repo
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX + "  max_prefill_tokens: 100\n")
    result = run_cli("diff", shas["initial"], shas["default"], "--repo", path,
                     "--matrix", str(matrix), "--format", "json")  # fmt: skip
    assert result.code == 0 and json.loads(result.out)["changed"] == []


def test_run_order_is_a_matrix_keyword(tmp_path: Path):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX.replace("passes: run-order", "passes: run_order"))
    line = one_line_error(run_cli("diff", "HEAD", "HEAD", "--matrix", str(matrix)))
    assert "target.passes" in line and "run-order" in line


def test_without_its_guard_a_guarded_pass_runs_everywhere_and_the_report_says_so(repo, tmp_path):
    path, shas, _ = repo
    matrix = tmp_path / "m.yaml"
    unguarded = MATRIX.replace(
        "  guards:\n    _tiny_pages: {axis_in: {attention_backend: [fa3]}}\n", ""
    )
    matrix.write_text(unguarded)
    result = run_cli("diff", shas["initial"], shas["initial"], "--repo", path,
                     "--matrix", str(matrix), "--format", "json")  # fmt: skip
    report = json.loads(result.out)
    (where,) = report["base"]["unguarded_passes"].values()
    assert list(report["base"]["unguarded_passes"]) == ["_tiny_pages"]
    assert where.startswith(f"{PKG}/hooks.py:12: if server_args.attention_backend == 'fa3'")
    # and the pass then runs on every cell: pages of 2 where the default would give 1
    base = run_cli(
        "diff", shas["initial"], shas["initial"], "--repo", path, "--matrix", str(matrix)
    )
    assert "run on every cell, though SGLang runs them only under a condition" in base.out


def test_reports_group_the_rules_by_field(repo):
    path, shas, matrix = repo
    _, report = diff_json(repo, "initial", "sampling")
    fields = report["fields"]
    cells_list = cells()
    for name, position in (("sampling_backend", 1), ("chunked_prefill_size", 2)):
        before = [expected(VERSIONS["initial"], c)[position] for c in cells_list]
        after = [expected(VERSIONS["sampling"], c)[position] for c in cells_list]
        assert fields[name]["cells"] == sum(b != a for b, a in zip(before, after, strict=True))
        assert sum(rule["cells"] for rule in fields[name]["summary"]) == fields[name]["cells"]
    assert "page_size" not in fields  # no page changes between these two
    assert len(cells_list) == 24
    text = run_cli("diff", shas["initial"], shas["sampling"], "--repo", path, "--matrix", matrix)
    assert "cells change at least one of 3 fields; by field:" in text.out
    assert "sampling_backend: 12 cells, 1 rule" in text.out
    assert "1. 12 cells: flashinfer -> triton" in text.out


@pytest.mark.parametrize(
    "guards, complaint",
    [
        ("  guards:\n    1abc: false\n", "target.guards: '1abc' is not a pass name"),
        ("  guards:\n    _tiny_pages: {all: []}\n", "all: expected a list of bindings"),
        ("  guards: [a]\n", "target.guards: expected a mapping"),
    ],
)
def test_bad_guards_are_one_line(repo, tmp_path, guards, complaint):
    path, _, _ = repo
    matrix = tmp_path / "m.yaml"
    text = MATRIX.replace(
        "  guards:\n    _tiny_pages: {axis_in: {attention_backend: [fa3]}}\n", guards
    )
    matrix.write_text(text)
    line = one_line_error(run_cli("diff", "HEAD", "HEAD", "--repo", path, "--matrix", str(matrix)))
    assert complaint in line and str(matrix) in line


def test_coverage_says_which_passes_run_on_which_cells(repo):
    _, report = diff_json(repo, "initial", "default")
    fa3 = sum(c["attention_backend"] == "fa3" for c in cells())  # where the guard holds
    for side in ("base", "head"):
        coverage = {c["pass"]: (c["cells"], c["why"]) for c in report[side]["coverage"]}
        assert coverage.pop("_tiny_pages") == (fa3, "target.guards")
        assert set(coverage.values()) == {(len(cells()), "")}


def test_passes_lists_the_run_order_the_guards_and_their_cells(repo):
    path, shas, matrix = repo
    result = run_cli("passes", shas["initial"], "--repo", path, "--matrix", matrix,
                     "--format", "json")  # fmt: skip
    found = {p["name"]: p for p in json.loads(result.out)["passes"]}
    # pipeline.py: the chunked default, then the handler (the guarded pass, then the page
    # default before the MLA one at this commit), then the sampling default
    order = ["_chunked_prefill_default", "_tiny_pages", "_page_size_default",
             "_mla_page_size", "_sampling_backend_default"]  # fmt: skip
    assert sorted(found, key=lambda n: found[n]["order"]) == order
    tiny = found["_tiny_pages"]
    assert tiny["runs_under"] == f"{PKG}/hooks.py:12: if server_args.attention_backend == 'fa3'"
    assert tiny["cells"] == sum(c["attention_backend"] == "fa3" for c in cells())
    assert all(
        p["cells"] is None and p["runs_under"] is None
        for n, p in found.items()
        if n != "_tiny_pages"
    )


def test_a_guard_naming_no_pass_is_pointed_out(repo, tmp_path):
    path, shas, _ = repo
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX.replace("    _tiny_pages:", "    _tiny_pages: false\n    _tiny_page:"))
    result = run_cli(
        "diff", shas["initial"], shas["default"], "--repo", path, "--matrix", str(matrix)
    )
    assert "target.guards names no pass of either revision (misspelt?): _tiny_page" in result.out
    data = json.loads(run_cli("diff", shas["initial"], shas["default"], "--repo", path,
                              "--matrix", str(matrix), "--format", "json").out)  # fmt: skip
    assert data["base"]["unused_guards"] == ["_tiny_page"]


def test_markdown_groups_the_rules_by_field_and_a_bad_fields_part_is_one_line(repo, tmp_path):
    from harness.errors import HarnessError
    from harness.github.comment import load_report

    path, shas, matrix = repo
    result = run_cli("diff", shas["initial"], shas["sampling"], "--repo", path,
                     "--matrix", matrix, "--format", "markdown")  # fmt: skip
    assert "cells change at least one of 3 fields:**" in result.out
    assert "`sampling_backend`: 12 cells" in result.out
    assert "| 1 | 12 | flashinfer -> triton |" in result.out
    doc = json.loads(run_cli("diff", shas["initial"], shas["sampling"], "--repo", path,
                             "--matrix", matrix, "--format", "json").out)  # fmt: skip
    nth = list(doc["fields"]).index("sampling_backend")
    doc["fields"]["sampling_backend"]["summary"] = [{"where": 3}]  # hostile: the wrong shape
    report = tmp_path / "report.json"
    report.write_text(json.dumps(doc))
    with pytest.raises(HarnessError) as raised:
        load_report(str(report))
    said = str(raised.value)
    assert said.startswith(f"--report {report}: not a harness diff report")
    assert f"(fields[{nth}].summary[0].where is not an object)" in said


def test_environment_variables_default_to_what_environ_declares(tmp_path):
    environ = "class Envs:\n    SGLANG_TINY = EnvBool({value})\n    OTHER = EnvStr(compute())\n"
    overrides = (
        "from sglang.srt.environ import envs\n\n\n"
        "def register_post_process(fn):\n    return fn\n\n\n"
        "@register_post_process\ndef _tiny(view):\n"
        '    return {"page_size": 2} if envs.SGLANG_TINY.get() else {}\n'
    )
    fixture = FixtureRepo(tmp_path / "repo")
    shas = [
        fixture.commit(f"tiny {v}", {
            "python/sglang/srt/environ.py": environ.format(value=v),
            f"{PKG}/overrides.py": overrides,
        })
        for v in ("False", "True")
    ]  # fmt: skip
    matrix = tmp_path / "m.yaml"
    matrix.write_text(
        "name: env\ntarget:\n  path: python/sglang/srt/arg_groups/overrides.py\n"
        "  function: _tiny\n  output: page_size\nworld: sglang\n"
        "axes:\n  page_size: [null, 16]\n"
    )
    report = json.loads(run_cli("diff", *shas, "--repo", str(tmp_path / "repo"), "--matrix",
                                str(matrix), "--format", "json").out)  # fmt: skip
    assert report["notes"] == {}
    assert [(i["base"], i["head"]) for i in report["changed"]] == [
        ({"page_size": None}, {"page_size": 2}),  # the default flipped: the pass now fires
        ({"page_size": 16}, {"page_size": 2}),
    ]
    matrix.write_text(matrix.read_text() + "fields:\n  SGLANG_TINY: false\n")  # declared: wins
    report = json.loads(run_cli("diff", *shas, "--repo", str(tmp_path / "repo"), "--matrix",
                                str(matrix), "--format", "json").out)  # fmt: skip
    assert report["changed"] == []


# --- the same kinds of change on the fixture history (harness.testing.sglang_fixture) ----

FIXTURE_MATRIX = """\
name: fixture-resolution
target:
  path: python/sglang/srt/arg_groups/overrides.py
  passes: run-order
  output: [page_size, chunked_prefill_size]
world: sglang
axes:
  attention_backend: [intel_xpu, fa4]
  platform: [sm100, xpu]
  page_size: [null, 16]
fields:
  use_mla: false
bindings:
  torch: {object: {cuda: {object: {device_count: {call: 2}}}}}
"""


def fixture_cells() -> list[dict]:
    axes = {"attention_backend": ["intel_xpu", "fa4"], "platform": ["sm100", "xpu"],
            "page_size": [None, 16]}  # fmt: skip
    return [dict(zip(axes, v, strict=True)) for v in itertools.product(*axes.values())]


def fixture_expected(cell: dict, key: str) -> tuple:
    """(page_size, chunked_prefill_size) at the fixture commit `key`, from its code: the
    FA4 pass gives 128 on SM100; the XPU pass (XMX, kv auto) keeps a page it is given,
    else 128 (before #31030 the page default runs after it, from #31030 before it, so it
    is given 1); the chunked prefill default fills 12288 for 2 GPUs when nothing is
    set, and from #31020 ServerArgs sets 4096."""
    page = cell["page_size"]
    if cell["attention_backend"] == "fa4" and cell["platform"] == "sm100":
        page = 128
    elif cell["attention_backend"] == "intel_xpu" and cell["platform"] == "xpu":
        page = page if page is not None else (1 if key == "order" else 128)
    page = 1 if page is None else page
    return page, 4096 if key in ("default", "order") else 12288


@pytest.fixture
def fixture_matrix(tmp_path) -> str:
    path = tmp_path / "fixture-resolution.yaml"
    path.write_text(FIXTURE_MATRIX)
    return str(path)


def fixture_changed(base: str, head: str) -> int:
    return sum(fixture_expected(c, base) != fixture_expected(c, head) for c in fixture_cells())


@pytest.mark.parametrize("base, head", [("serverargs", "default"), ("default", "order")])
def test_the_fixture_default_and_order_changes_show_in_diff(history, fixture_matrix, base, head):
    result = run_cli("diff", history.shas[base], history.shas[head], "--repo", history.repo(),
                     "--matrix", fixture_matrix, "--format", "json")  # fmt: skip
    report = json.loads(result.out)
    assert report["notes"] == {}
    got = {json.dumps(i["cell"], sort_keys=True): i["head"] for i in report["changed"]}
    want = {
        json.dumps(c, sort_keys=True): dict(zip(("page_size", "chunked_prefill_size"),
                                                fixture_expected(c, head), strict=True))
        for c in fixture_cells() if fixture_expected(c, base) != fixture_expected(c, head)
    }  # fmt: skip
    assert got == want and len(want) == fixture_changed(base, head) > 0


def test_the_fixture_history_and_bisect_find_them(history, fixture_matrix):
    result = run_cli("history", f"{history.shas['serverargs']}..HEAD", "--repo", history.repo(),
                     "--matrix", fixture_matrix, "--format", "json")  # fmt: skip
    commits = [(c["sha"], c["cells_changed"]) for c in json.loads(result.out)["commits"]]
    assert commits == [
        (history.shas["default"], fixture_changed("serverargs", "default")),
        (history.shas["order"], fixture_changed("default", "order")),
    ]
    for good, culprit in (("serverargs", "default"), ("default", "order")):
        result = run_cli("bisect", history.shas[good], "HEAD", "--repo", history.repo(),
                         "--matrix", fixture_matrix, "--format", "json")  # fmt: skip
        assert json.loads(result.out)["culprit"]["sha"] == history.shas[culprit]
