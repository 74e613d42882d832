"""A function that assigns to its view, with `world: plain`, declares what it assigns:
the harness compares the field's final value, as plain Python running the function
on an object holding the cell's values leaves it (a later read gives the value
assigned; a returned dict wins over an assignment). Deleting an attribute of the
view, writing to any other object the world gives, and writing to SGLang's view
(read-only there: its passes return declarations) make the revision unevaluable:
the diff exits 4 with one reason naming the line and the fix, whether or not the
code catches what the write raised.

Each case's two revisions differ only in the value assigned; expected cells come
from running the two texts in plain Python here, and the expected line is found in
the text the test wrote, not asked of harness.
"""

from __future__ import annotations

import itertools
import json
import textwrap
import types
from pathlib import Path

import pytest

from harness.engine.world import ASSIGNED, DELETED, READ, Obj, Probe, Unbound, bind
from harness.engine.worlds import world_named
from harness.matrix.load import load_matrix
from harness.testing.sglang_fixture import Overrides, overrides_source, package_files
from tests.conftest import run_cli
from tests.helpers import PATH, commit_versions, module

PLAIN = f"""\
name: timeouts
target:
  path: {PATH}
  function: apply_timeout
  output: timeout
world: plain
axes:
  method: [GET, PUT, POST]
  timeout: [null, 5]
"""
HEADER = '"""Timeout settings (a fixture)."""\n\n'
FIX = 'return {"timeout": ...} instead (see docs/your-project.md)'


def line_of(text: str, piece: str) -> int:
    """The line of `text` holding `piece` (exactly one does)."""
    (line,) = [n for n, s in enumerate(text.splitlines(), 1) if piece in s]
    return line


def versions(body: str) -> list[str]:
    """The base (which assigns 60) and the head (30) of a function written with {value}."""
    return [HEADER + textwrap.dedent(body).format(value=v) for v in (60, 30)]


def diff(root: Path, shas: list[str], *matrix: str) -> tuple[int, dict]:
    done = run_cli("diff", *shas, "--repo", str(root), "--no-cache", "--format", "json",
                   *matrix)  # fmt: skip
    assert done.err == "" or done.code == 4, done.err
    return done.code, json.loads(done.out)


def assert_cannot_tell(code: int, report: dict, reason: str) -> None:
    """Exit 4, nothing compared, and each side's note holding the one reason."""
    assert code == 4 and report["changed"] == [], report
    for side in ("base", "head"):
        note = report["notes"][side]
        assert note.startswith("unevaluable") and reason in note, note


ASSIGNS = """
def apply_timeout(config):
    if config.timeout is None:
        config.timeout = {value} if config.method in ("PUT", "POST") else 10
    return {{}}
"""
CATCHES = """
def apply_timeout(config):
    try:
        config.timeout = {value}
    except AttributeError:
        pass
    return {{}}
"""
CATCHES_ALL = """
def apply_timeout(config):
    try:
        config.timeout = {value}
    except BaseException:
        pass
    return {{}}
"""
DELETES = """
def apply_timeout(config):
    if config.timeout == {value}:
        return {{}}
    del config.timeout
    return {{}}
"""


WRITE_THEN_READ = """
def apply_timeout(config):
    config.timeout = config.timeout or 10
    if config.method == "GET" and config.timeout == 10:
        config.timeout = {value}
"""
ASSIGNS_AND_RETURNS = """
def apply_timeout(config):
    config.timeout = {value}
    if config.method == "POST":
        return {{"timeout": 1}}
    return {{}}
"""
AUGMENTS = """
def apply_timeout(config):
    if config.timeout is not None:
        config.timeout += {value}
"""
HANDLERS = """
def _timeouts(config):
    if config.timeout is None:
        config.timeout = {value} if config.method in ("PUT", "POST") else 10


def _retries(config):
    config.retries = 3 if config.timeout > 20 else 1


def apply_timeout(config):
    _timeouts(config)
    _retries(config)
"""
RETURNS_VIEW = """
def apply_timeout(config):
    config.timeout = {value}
    return config
"""
DECLARING = {"handlers": HANDLERS, "assigns": ASSIGNS, "returns-the-view": RETURNS_VIEW, "catches-attribute-error": CATCHES,
             "catches-base-exception": CATCHES_ALL, "write-then-read": WRITE_THEN_READ,
             "assigns-and-returns": ASSIGNS_AND_RETURNS}  # fmt: skip
AXES = {"method": ["GET", "PUT", "POST"], "timeout": [None, 5]}


def plain_outcome(text: str, cell: dict) -> object:
    """What running the function in plain Python on an object holding the cell's values
    leaves as its timeout: a returned dict's value, else the attribute's."""
    namespace: dict = {}
    exec(compile(text, "fixture", "exec"), namespace)
    config = types.SimpleNamespace(**cell)
    result = namespace["apply_timeout"](config)
    return (result if type(result) is dict else {}).get("timeout", config.timeout)


def diff_against_plain_python(tmp_path, body: str) -> dict:
    """The diff of the two versions of `body`, its changed cells checked against what
    plain Python gives each cell (exit 1: every case's edit changes some cell)."""
    texts = versions(body)
    expected = {}
    for values in itertools.product(*AXES.values()):
        cell = dict(zip(AXES, values, strict=True))
        sides = [plain_outcome(text, cell) for text in texts]
        if sides[0] != sides[1]:
            expected[values] = tuple(sides)
    assert expected
    shas = commit_versions(tmp_path / "repo", texts)
    (tmp_path / "timeouts.yaml").write_text(PLAIN)
    code, report = diff(tmp_path / "repo", shas, "--matrix", str(tmp_path / "timeouts.yaml"))
    found = {(c["cell"]["method"], c["cell"]["timeout"]): (c["base"]["timeout"], c["head"]["timeout"])
             for c in report["changed"]}  # fmt: skip
    assert code == 1 and found == expected, report
    return report


@pytest.mark.parametrize("name", sorted(DECLARING))
def test_a_write_to_the_view_is_what_the_function_declares(tmp_path, name):
    report = diff_against_plain_python(tmp_path, DECLARING[name])
    assert report["notes"] == {}, report
    # each call's writes are its own: explored by decision paths, not run on every cell
    assert "every_cell" not in report["base"] and "every_cell" not in report["head"], report


SHARED_SETTER = """
class _Defaults:
    timeout = None


_DEFAULTS = _Defaults()


def _set(config, value):
    config.timeout = value


def apply_timeout(config):
    _set(_DEFAULTS, 1)
    if config.timeout is None:
        _set(config, {value})
"""


RECURSES_WITH_ANOTHER = """
class _Box:
    seen = "none"


_BOX = _Box()


def apply_timeout(config, into=None):
    if into is not None:
        config.seen = into
        return {{}}
    config.timeout = _BOX.seen + "{value}"
    apply_timeout(_BOX, config.method)
"""
EXTENDS_SHARED = """
_SHARED = []


def apply_timeout(config):
    config.timeout = _SHARED
    config.timeout += [config.method, {value}]
"""
SHARING = {"a helper also handed another object": SHARED_SETTER, "augments": AUGMENTS,
           "the target called with another object": RECURSES_WITH_ANOTHER,
           "an in-place operator on what the view holds": EXTENDS_SHARED}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SHARING))
def test_a_write_that_may_reach_shared_data_runs_on_every_cell(tmp_path, name):
    """Writes that may reach another object than this call's view (a module-level one,
    a list the view was given): calls may share state, so each cell is run (and still
    declares what plain Python, running each cell afresh, leaves on the view)."""
    report = diff_against_plain_python(tmp_path, SHARING[name])
    assert report["head"]["every_cell"] and report["base"]["every_cell"], report


def test_a_deletion_from_the_view_is_cannot_tell_naming_its_line_and_the_fix(tmp_path):
    texts = versions(DELETES)
    shas = commit_versions(tmp_path / "repo", texts)
    (tmp_path / "timeouts.yaml").write_text(PLAIN)
    code, report = diff(tmp_path / "repo", shas, "--matrix", str(tmp_path / "timeouts.yaml"))
    line = line_of(texts[1], "del config")
    assert_cannot_tell(code, report, f"view.timeout is {DELETED} at {PATH}:{line}: ")
    assert FIX in report["notes"]["head"]


def test_the_text_report_says_it_in_one_line_per_side(tmp_path):
    texts = versions(DELETES)
    shas = commit_versions(tmp_path / "repo", texts)
    (tmp_path / "timeouts.yaml").write_text(PLAIN)
    done = run_cli("diff", *shas, "--repo", str(tmp_path / "repo"), "--no-cache",
                   "--matrix", str(tmp_path / "timeouts.yaml"))  # fmt: skip
    assert done.code == 4
    reason = f"view.timeout is deleted at {PATH}:{line_of(texts[1], 'del config')}: "
    assert len([s for s in done.out.splitlines() if reason in s and FIX in s]) == 2
    assert "No cell changes" not in done.out and "AttributeError" not in done.out


def test_a_write_never_reached_on_any_cell_is_no_reason(tmp_path):
    """Only a write the code makes counts: one behind a condition no cell meets is not."""
    body = """
    def apply_timeout(config):
        if config.method == "PATCH":
            config.timeout = {value}
        return {{"timeout": 1}} if config.timeout is None else {{}}
    """
    text = versions(body)[0]
    shas = commit_versions(tmp_path / "repo", [text, text + "\n"])
    (tmp_path / "timeouts.yaml").write_text(PLAIN)
    code, report = diff(tmp_path / "repo", shas, "--matrix", str(tmp_path / "timeouts.yaml"))
    assert code == 0 and report["notes"] == {}, report


def test_a_write_to_an_imported_name_is_cannot_tell(tmp_path):
    body = """
    def apply_timeout(config):
        import settings
        settings.timeout = {value}
        return {{}}
    """
    texts = versions(body)
    shas = commit_versions(tmp_path / "repo", texts)
    (tmp_path / "timeouts.yaml").write_text(PLAIN)
    code, report = diff(tmp_path / "repo", shas, "--matrix", str(tmp_path / "timeouts.yaml"))
    line = line_of(texts[1], "settings.timeout =")
    assert_cannot_tell(code, report, f"settings.timeout is assigned at {PATH}:{line}: ")
    assert "_WorldModule" not in json.dumps(report)


@pytest.mark.parametrize(
    ("statement", "what"),
    [("view.get_model_config().context_length = {value}", "model_config_of(view).context_length"),
     ("envs.SGLANG_PAGE_SIZE = {value}", "envs.SGLANG_PAGE_SIZE"),
     ("view.cuda_graph_config.prefill = {value}", "view.cuda_graph_config.prefill")],
    ids=["model-config", "envs", "cuda-graph-config"],
)  # fmt: skip
def test_a_write_to_a_nested_world_object_is_cannot_tell(tmp_path, statement, what):
    """In the sglang world, objects the view or a world name gives (the model config, the
    environment, the CUDA-graph config) refuse a write as the view does."""
    texts = [
        module(f"""
        def _fa4_page_constraint(view):
            if view.attention_backend == "fa4":
                {statement.format(value=v)}
            return {{}}
        """)
        for v in (1, 2)
    ]  # fmt: skip
    shas = commit_versions(tmp_path / "repo", texts)
    code, report = diff(tmp_path / "repo", shas)  # the default matrix: sglang-fa4-page-size
    line = line_of(texts[1], statement.split(" = ")[0])
    assert_cannot_tell(code, report, f"{what} is assigned at {PATH}:{line}: ")
    assert "is the world's: return the fields it sets as a dict" in report["notes"]["head"]


def test_a_pass_in_a_pipeline_that_assigns_to_its_view_is_cannot_tell(tmp_path):
    """A pipeline's pass sees the view with earlier declarations overlaid; a write to it
    is refused as one to the view."""
    text = overrides_source(Overrides())
    forced = '        return {"page_size": FA4_PAGE_SIZE}\n'
    assert forced in text
    texts = [
        text.replace(forced, f"        view.page_size = {size}\n        return {{}}\n")
        for size in (128, 64)
    ]
    shas = commit_versions(tmp_path / "repo", texts, package_files())
    code, report = diff(tmp_path / "repo", shas, "--matrix", "sglang-page-size-pipeline")
    line = line_of(texts[1], "view.page_size = 64")
    reason = f"view.page_size is assigned at {PATH}:{line}: "
    assert_cannot_tell(code, report, reason + 'harness compares what the function returns; '
                       'return {"page_size": ...} instead')  # fmt: skip


def test_passes_names_the_write_as_what_stops_the_pass_not_a_missing_field(tmp_path):
    """`harness passes` declares each field a pass lacks and runs it again; a write is no
    missing field: the pass does not evaluate, and the reason is the write."""
    text = overrides_source(Overrides()).replace(
        '        return {"page_size": FA4_PAGE_SIZE}\n',
        "        view.page_size = FA4_PAGE_SIZE\n        return {}\n",
    )
    (sha,) = commit_versions(tmp_path / "repo", [text], package_files())
    done = run_cli("passes", sha, "--repo", str(tmp_path / "repo"), "--no-cache",
                   "--format", "json")  # fmt: skip
    assert done.code == 1, done.err
    report = json.loads(done.out)
    (fa4,) = [p for p in report["passes"] if p["name"] == "_fa4_page_constraint"]
    line = line_of(text, "view.page_size = FA4_PAGE_SIZE")
    assert f"view.page_size is assigned at {PATH}:{line}" in json.dumps(fa4)
    assert fa4["needs_fields"] == []


def test_the_probe_remembers_a_write_as_a_write(tmp_path):
    """The refusal is kept on the probe, out of the code's reach, saying what was done;
    a read nothing answers still says `read` and names the input that would answer it."""
    (tmp_path / "timeouts.yaml").write_text(PLAIN)
    matrix = load_matrix(str(tmp_path / "timeouts.yaml"))
    bound = bind(world_named("plain", matrix.source), matrix)
    probe: Probe = bound.probe
    for act, done in ((lambda v: setattr(v, "timeout", 1), ASSIGNED),
                      (lambda v: delattr(v, "method"), DELETED),
                      (lambda v: v.retries, READ)):  # fmt: skip
        probe.unbound = None
        with pytest.raises(Unbound) as caught:
            act(bound.view)
        assert probe.unbound is caught.value and probe.unbound.done == done
        assert probe.unbound.field == ("retries" if done == READ else None)
    nested = Obj("platform", {}).compile(bound.ctx)(probe)
    probe.unbound = None
    with pytest.raises(Unbound):
        nested.is_sm100 = True
    assert (probe.unbound.what, probe.unbound.done) == ("platform.is_sm100", ASSIGNED)


def test_inference_stops_at_the_write_and_says_so(tmp_path):
    """`matrix --infer` declares each input a pass reads as a symbol and runs it again; a
    write is no input to declare: the pass is listed as not run, the write as why."""
    text = overrides_source(Overrides()).replace(
        '        return {"page_size": FA4_PAGE_SIZE}\n',
        "        view.page_size = FA4_PAGE_SIZE\n        return {}\n",
    )
    (sha,) = commit_versions(tmp_path / "repo", [text], package_files())
    done = run_cli("matrix", "--infer", sha, "--repo", str(tmp_path / "repo"),
                   "--passes", "_fa4_page_constraint")  # fmt: skip
    assert done.code == 0, done.err
    did_not_run = done.out.split("# Passes that did not run")[1]
    line = line_of(text, "view.page_size = FA4_PAGE_SIZE")
    assert f"_fa4_page_constraint: view.page_size is assigned at {PATH}:{line}: " in did_not_run
