"""Small repositories holding hand-written override modules, for evaluator tests."""

from __future__ import annotations

import functools
import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness import gitio
from harness.closure.extract import Closure, Pipeline
from harness.engine.explore import evaluate_closure
from harness.engine.outcome import KEPT, VALUE, OutcomeTable, revision_wide
from harness.errors import Absent, Unevaluable
from harness.matrix.load import load_matrix, shipped_dir
from harness.matrix.model import Matrix
from harness.scan.versions import Versions
from harness.testing.gitrepo import FixtureRepo

PATH = "python/sglang/srt/arg_groups/overrides.py"
FA4 = "sglang-fa4-page-size"


def shipped_variant(path: Path, edit: Callable[[dict], None], name: str = FA4) -> Path:
    """A shipped matrix file as `edit` changes it (its document, parsed), written to
    `path`: a matrix a test varies from the shipped one."""
    doc = yaml.safe_load((shipped_dir() / f"{name}.yaml").read_text())
    edit(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def matrix_holding(tmp_path: Path, axis: str, value: Any) -> Path:
    """The shipped FA4 matrix with one axis held at one value (a field)."""

    def hold(doc: dict) -> None:
        del doc["axes"][axis]
        doc["fields"][axis] = value

    return shipped_variant(tmp_path / f"fa4-{axis}.yaml", hold)


def matrix_with_axes(tmp_path: Path, **axes: list) -> Path:
    """The shipped FA4 matrix with fewer values on the `axes` named."""
    return shipped_variant(tmp_path / "fewer.yaml", lambda doc: doc["axes"].update(axes))


HEAVY_TOP = """\
import torch
from sglang.srt.environ import envs
from sglang.srt.model_executor.cuda_graph_config import Backend
from sglang.srt.platforms import get_platform
from sglang.srt.arg_groups.view import model_config_of, use_mla_backend
from sglang.srt.utils import is_sm100_supported, is_hip

torch.cuda.init()
"""


def plain_matrix(name: str, path: str = "python/sglang/srt/arg_groups/overrides.py") -> str:
    """The small plain-world matrix the hostile-input tests share: `target(view)` in
    `path`, three backends by three input page sizes."""
    return f"""\
name: {name}
target:
  path: {path}
  function: target
  output: page_size
world: plain
axes:
  backend: [fa3, fa4, flashinfer]
  page_size: [null, 1, 64]
"""


def fa4_matrix(name: str) -> str:
    """A small sglang-world matrix on `_fa4_page_constraint`: two backends, two
    platforms, two input page sizes (the tests of what the world stands for share it)."""
    return f"""\
name: {name}
target:
  path: python/sglang/srt/arg_groups/overrides.py
  function: _fa4_page_constraint
  output: page_size
world: sglang
axes:
  attention_backend: [fa3, fa4]
  platform: [sm90, sm100]
  page_size: [null, 1]
"""


# Every registered pass, run order by file, over two backends and two input page sizes.
EVERY_PASS_MATRIX = """\
name: every-pass
target: {path: python/sglang/srt/arg_groups/overrides.py, passes: all, output: page_size}
world: sglang
axes:
  attention_backend: [null, flashmla]
  page_size: [null, 16]
"""


def module(body: str, top: str = HEAVY_TOP) -> str:
    return top + "\n\n" + textwrap.dedent(body)


def commit_versions(root: Path, versions: list[str], extra: dict | None = None) -> list[str]:
    """A repository whose commits hold each text as overrides.py, in order (the first
    commit also writes `extra`, e.g. the fixture package's other modules)."""
    repo = FixtureRepo(root)
    shas = []
    for n, text in enumerate(versions):
        files = {**(extra or {}), PATH: text} if n == 0 else {PATH: text}
        shas.append(repo.commit(f"version {n}", files))
    return shas


@dataclass
class Evaluated:
    table: OutcomeTable
    closure: Closure | Pipeline | None  # None: nothing could be extracted
    calls: int


def evaluate_at(
    root: Path, rev: str, matrix: Matrix | None = None, exhaustive: bool = False
) -> Evaluated:
    """The real extraction and evaluation of the target at `rev` (no cache)."""
    matrix = matrix or load_matrix()
    repo = gitio.open_repo(str(root))
    versions = Versions(repo, matrix, exhaustive=exhaustive)
    revision = gitio.resolve(repo, rev)
    try:
        closure = versions.front.extract(versions.files(revision.sha))
    except (Absent, Unevaluable) as exc:
        return Evaluated(revision_wide(exc, matrix.size), None, 0)
    try:
        run = evaluate_closure(closure, matrix, versions.bound, revision.label, exhaustive)
    except Unevaluable as exc:
        return Evaluated(revision_wide(exc, matrix.size), closure, 0)
    return Evaluated(run.table, closure, run.calls)


def resolved_outcomes(table, matrix: Matrix) -> list:
    """Per cell, the resolved page_size (kept -> the input), or the outcome itself."""
    axis = matrix.axis_index("page_size")
    cells = []
    for index in range(matrix.size):
        outcome = table.outcome_at(index)
        if outcome.kind == VALUE:
            cells.append(outcome.value)
        elif outcome.kind == KEPT:
            cells.append(matrix.axes[axis].values[matrix.cell(index)[axis]])
        else:
            cells.append((outcome.kind, outcome.value))
    return cells


REPORT_SCHEMA = Path(__file__).resolve().parents[1] / "docs" / "report.schema.json"
REPORT_KINDS = {  # the schema's $defs a command's --format json writes, by command
    "diff": ("diff", "nothing_inferred", "diff_parts"),
    "demo": ("diff",),
    "history": ("history", "release_history"),
    "bisect": ("bisect",),
    "explain": ("explain", "explain_range"),
    "passes": ("passes",),
    "matrix": ("matrix",),
}


def report_json(text: str, command: str) -> dict[str, Any]:
    """The JSON report `harness COMMAND` wrote, parsed and checked against
    docs/report.schema.json, every object closed: a key the schema does not describe
    fails here, so the schema keeps up with the reports."""
    doc = json.loads(text)
    check_report(doc, command)
    return doc


def check_report(doc: Any, command: str) -> None:
    """Fail (naming the first violation and where) unless `doc` is one of the reports
    `harness COMMAND` writes; for `matrix-cell`, one line of matrix --cells."""
    from jsonschema.exceptions import best_match

    kinds = REPORT_KINDS.get(command, ("matrix_cell",) if command == "matrix-cell" else ())
    assert kinds, f"no JSON report is known for harness {command}"
    if any(_compiled_validator(kind)(doc) for kind in kinds):
        return  # valid: jsonschema below only says where a report is not
    errors = {kind: best_match(_closed_validator(kind).iter_errors(doc)) for kind in kinds}
    if any(error is None for error in errors.values()):
        return
    kind = max(kinds, key=lambda k: _likeness(doc, k))
    error = errors[kind]
    where = "/".join(str(p) for p in error.absolute_path) or "the top"
    raise AssertionError(
        f"harness {command}'s JSON does not match docs/report.schema.json#/$defs/{kind} "
        f"at {where}: {error.message}"
    )


def closed_kinds(doc: Any) -> list[str]:
    """The kinds of report (the schema's anyOf) `doc` is, each closed to the keys it names:
    a report is exactly one."""
    return [kind for kind in report_kinds() if _compiled_validator(kind)(doc)]


def open_kinds(doc: Any) -> list[str]:
    """The kinds of report `doc` is by the published (open) schema, as a reader's
    validator takes it (keys the schema does not name are let in)."""
    return [kind for kind in report_kinds() if _compiled_validator(kind, closed=False)(doc)]


def report_kinds() -> list[str]:
    return [entry["$ref"].removeprefix("#/$defs/") for entry in _report_schema()["anyOf"]]


def _likeness(doc: Any, kind: str) -> int:
    """How many of the kind's required keys the document has (which kind it meant to be)."""
    required = _report_schema()["$defs"][kind].get("required", [])
    return sum(key in doc for key in required) if isinstance(doc, dict) else 0


@functools.cache
def _report_schema() -> dict[str, Any]:
    return json.loads(REPORT_SCHEMA.read_text(encoding="utf-8"))


@functools.cache
def _closed_validator(kind: str):
    from jsonschema import Draft202012Validator

    schema = _report_schema()
    Draft202012Validator.check_schema(schema)
    closed = {"$schema": schema["$schema"], "$ref": f"#/$defs/{kind}",
              "$defs": _closed(schema["$defs"])}  # fmt: skip
    return Draft202012Validator(closed)


@functools.cache
def _compiled_validator(kind: str, closed: bool = True) -> Callable[[Any], bool]:
    """Whether a document is a valid report of `kind`, as `_closed_validator` judges it
    (or, not `closed`, as jsonschema judges it by the published schema), compiled to Python
    by fastjsonschema: a diff of every cell of the FA4 matrix writes a 138 MB report, which
    jsonschema took 155 s to walk, this a few seconds. The schema uses no keyword whose
    meaning changed after draft 7 (tests/test_json_schema.py holds the two validators to
    the same verdicts)."""
    import fastjsonschema

    defs = _report_schema()["$defs"]
    schema = {"$ref": f"#/$defs/{kind}", "$defs": _closed(defs) if closed else defs}
    check = fastjsonschema.compile(schema, use_default=False)

    def valid(doc: Any) -> bool:
        try:
            check(doc)
        except fastjsonschema.JsonSchemaException:
            return False
        return True

    return valid


def _closed(schema: Any) -> Any:
    """The schema with every object that lists its properties refusing any other key."""
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _closed(v) for k, v in schema.items()}
    if isinstance(schema.get("properties"), dict) and "additionalProperties" not in schema:
        out["additionalProperties"] = False
    return out


JSON_FORMATS = ("json", "json-sample")


def check_json_reports(argv: tuple[str, ...] | list[str], code: int, out: str) -> None:
    """Every JSON report a `harness ARGV` run wrote (stdout with --format json or
    json-sample, files of --output json=/json-sample=), checked against the schema. For
    run_cli, so that every report the tests make is checked."""
    argv = list(argv)
    command = argv[0] if argv else ""
    if code not in (0, 1, 4) or command not in REPORT_KINDS or "--infer" in argv:
        return
    if _option(argv, "--format") in JSON_FORMATS and out.strip():
        if command == "matrix" and "--cells" in argv:
            lines = out.splitlines()
            for line in lines[:: max(len(lines) // 100, 1)] + lines[-1:]:
                check_report(json.loads(line), "matrix-cell")
        else:
            check_report(json.loads(out), command)
    for value in _options(argv, "--output"):
        fmt, _, path = value.partition("=")
        if fmt in JSON_FORMATS and Path(path).is_file():
            check_report(json.loads(Path(path).read_text(encoding="utf-8")), command)


def _options(argv: list[str], name: str) -> list[str]:
    """The values given to option NAME (`NAME V` or `NAME=V`), in order."""
    found = []
    for n, arg in enumerate(argv):
        if arg == name and n + 1 < len(argv):
            found.append(argv[n + 1])
        elif arg.startswith(name + "="):
            found.append(arg[len(name) + 1 :])
    return found


def _option(argv: list[str], name: str) -> str | None:
    given = _options(argv, name)
    return given[-1] if given else None


def diff_versions(tmp_path: Path, matrix: str, versions: list[str], extra: dict | None = None):
    """`harness diff --format json` between two commits of a new repository in
    `tmp_path` (`versions`: the target file's text at each), on `matrix` (its YAML):
    (the run, its report)."""
    from tests.conftest import run_cli  # here: conftest imports this module

    (tmp_path / "matrix.yaml").write_text(matrix)
    root = tmp_path / "repo"
    shas = commit_versions(root, versions, extra)
    done = run_cli(
        "diff", shas[0], shas[1], "--matrix", str(tmp_path / "matrix.yaml"), "--repo",
        str(root), "--format", "json", "--no-cache",
    )  # fmt: skip
    return done, json.loads(done.out)
