"""docs/your-project.md, followed as written, so the page cannot drift from the tool.

The page's markers (the convention this test reads):
- `<!-- file: PATH -->` on the line right before a fenced block: the block is the
  whole text of PATH, written (over any earlier version) when the reader gets there;
- a ```console block: each line starting with `$ ` is a command, run in that order
  by bash at the top of the repository, with the installed `harness` (this venv's
  bin) first on PATH. The lines after a command, up to the next one, are what it
  prints (its stdout, then its stderr). A trailing `# exit N` is its exit status
  (none: 0). A line `...` stands for any number of lines. Commit shas (10 hex
  digits) and dates are the reader's own, so they are compared as placeholders.
Other blocks are prose. Git runs with a fixed identity and clock, and HOME and the
cache in tmp_path.

Then what the page claims is checked from first principles: each version of the
function the page shows (as git holds it, or as the working tree held it when the
command ran) is run here as plain Python on every cell of the page's matrix, with a
view that keeps what it assigns; the cells whose resulting value differs are the
ones `diff` must list, the commits whose version differs from their parent's the
ones `history` must list, the first such commit the one `bisect` must find. A
version that deletes an attribute of the view on some cell, caught or not, cannot
be compared: `diff` must exit 4 and name the line.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.testing.gitrepo import IDENTITY

PAGE = Path(__file__).resolve().parents[1] / "docs" / "your-project.md"
BIN = Path(sys.executable).parent  # the venv's bin, where `harness` is installed
CLOCK = "2025-06-02T12:00:00+0000"
EXIT = re.compile(r"\s+# exit (\d+)$")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
MARKER = re.compile(r"<!-- file: (\S+) -->\n\Z")
SHA, DATE = re.compile(r"\b[0-9a-f]{10}\b"), re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


# --- the page ------------------------------------------------------------------------


@dataclass(frozen=True)
class File:
    path: str
    text: str


@dataclass(frozen=True)
class Command:
    line: str  # without the `# exit N` comment
    shown: tuple[str, ...]
    status: int

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.line)


def steps(page: str) -> list[File | Command]:
    """The page's files and commands, in reading order."""
    found: list[File | Command] = []
    for block in FENCE.finditer(page):
        kind, body = block.groups()
        marker = MARKER.search(page[: block.start()])
        if marker:
            found.append(File(marker.group(1), body))
        elif kind == "console":
            found.extend(commands(body))
    return found


def commands(body: str) -> list[Command]:
    pending: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            pending.append((line[2:], []))
        else:
            pending[-1][1].append(line)
    out = []
    for line, shown in pending:
        status = EXIT.search(line)
        command = EXIT.sub("", line) if status else line
        out.append(Command(command, tuple(shown), int(status.group(1)) if status else 0))
    return out


# --- following it ----------------------------------------------------------------------


@dataclass
class Ran:
    """A command as it ran: its result, HEAD and the page's files at that moment, and
    for a harness command the same command's JSON report."""

    command: Command
    done: subprocess.CompletedProcess
    head: str
    files: dict[str, str]
    report: Any = None


@dataclass
class Followed:
    root: Path
    ran: list[Ran] = field(default_factory=list)

    def harness(self, name: str) -> list[Ran]:
        return [r for r in self.ran if r.command.argv[:2] == ["harness", name]]

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=self.root, env=environment(self.root.parent),
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {
        **env,
        **IDENTITY,
        "GIT_AUTHOR_DATE": CLOCK,
        "GIT_COMMITTER_DATE": CLOCK,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    }


def run(root: Path, line: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", line], cwd=root, env=environment(root.parent),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def followed(tmp_path_factory) -> Followed:
    """The page, done once: files written, commands run, in order."""
    root = tmp_path_factory.mktemp("reader") / "shipit"
    root.mkdir()
    state, files = Followed(root), {}
    for step in steps(PAGE.read_text(encoding="utf-8")):
        if isinstance(step, File):
            (root / step.path).write_text(step.text, encoding="utf-8")
            files[step.path] = step.text
            continue
        done = run(root, step.line)
        head = run(root, "git rev-parse -q --verify HEAD").stdout.strip()
        ran = Ran(step, done, head, dict(files))
        if step.argv[0] == "harness" and step.status != 2:
            ran.report = json.loads(run(root, step.line + " --format json").stdout)
        state.ran.append(ran)
    return state


# --- the tool against the page -----------------------------------------------------------


def placeholders(text: str) -> str:
    return DATE.sub("<date>", SHA.sub("<sha>", text))


def matches(shown: tuple[str, ...], printed: str) -> bool:
    """Whether the printed text is the shown one (`...` for any lines)."""
    pattern = "".join(
        r"(?:[^\n]*\n)*" if line == "..." else re.escape(placeholders(line.rstrip())) + r"\n"
        for line in shown
    )
    lines = [line.rstrip() for line in placeholders(printed).splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return re.fullmatch(pattern, "".join(f"{line}\n" for line in lines)) is not None


def test_the_page_uses_the_harness_on_its_own_repository():
    found = steps(PAGE.read_text(encoding="utf-8"))
    names = {c.argv[1] for c in found if isinstance(c, Command) and c.argv[0] == "harness"}
    assert {"diff", "history", "bisect"} <= names
    statuses = {c.status for c in found if isinstance(c, Command) and c.argv[0] == "harness"}
    assert {0, 1, 2, 4} <= statuses
    assert any(
        f.path.endswith(".yaml") and "world: plain" in f.text for f in found if isinstance(f, File)
    )


def test_every_command_prints_and_exits_as_the_page_shows(followed):
    wrong = []
    for ran in followed.ran:
        printed = ran.done.stdout + ran.done.stderr
        if ran.done.returncode != ran.command.status or not matches(ran.command.shown, printed):
            wrong.append(f"$ {ran.command.line}  (exit {ran.done.returncode})\n{printed}")
    assert not wrong, "the page shows otherwise:\n" + "\n".join(wrong)


def test_the_installed_harness_ran(followed):
    (first, *_) = followed.harness("diff")
    which = run(followed.root, "command -v harness").stdout.strip()
    assert Path(which) == BIN / "harness" and first.report is not None


def test_the_exit_status_table_lists_what_each_command_documents():
    """The page's table has a row for every status `harness CMD --help` names, and no
    other (3 and 130 are every command's, in the sentence below the table)."""
    page = PAGE.read_text(encoding="utf-8")
    table = page[page.index("| status |") :].split("\n\n")[0].splitlines()
    header = [c.strip(" `") for c in table[0].strip("|").split("|")]
    for column, name in enumerate(header[1:], start=1):
        command = name.split()[1]
        rows = [r.strip("|").split("|") for r in table[2:]]
        listed = {int(r[0]) for r in rows if r[column].strip()}
        assert listed == help_statuses(command), command


def help_statuses(command: str) -> set[int]:
    text = subprocess.run(
        [str(BIN / "harness"), command, "--help"], capture_output=True, text=True, check=True
    ).stdout
    start = re.search(r"Exit status[^:]*:", text)
    paragraph = " ".join(text[start.end() :].split("\n\n")[0].split())
    return {int(m.group(1)) for m in re.finditer(r"(?:^|[;,])\s*(\d+)\s", paragraph)}


# --- the page against first principles -------------------------------------------------


CODE = "page"  # the file name the page's versions are compiled under here


class View:
    """A configuration holding one cell's values, as the page describes it: an assignment
    sets the value (read back after), a deletion raises and is noted in `writes` as
    (line, name, done)."""

    def __init__(self, values: dict[str, Any], writes: list) -> None:
        object.__setattr__(self, "values", dict(values))
        object.__setattr__(self, "writes", writes)

    def __getattr__(self, name: str) -> Any:
        return self.values[name]

    def __setattr__(self, name: str, value: Any) -> None:
        self.values[name] = value

    def __delattr__(self, name: str) -> None:
        frame = sys._getframe(1)
        while frame.f_code.co_filename != CODE:  # the page's code, past this class
            frame = frame.f_back
        self.writes.append((frame.f_lineno, name, "deleted"))
        raise AttributeError(f"read-only: {name}")


def outcome(source: str, function: str, output: str, cell: dict[str, Any]) -> tuple:
    """('value', the field's resulting value: returned, else as the call left the view),
    ('error', exception type name), or ('write', line, name, done) for the first
    deletion from the view, caught or not."""
    namespace: dict[str, Any] = {}
    exec(compile(source, CODE, "exec"), namespace)
    writes: list = []
    view = View(cell, writes)
    try:
        result = namespace[function](view)
    except Exception as exc:
        result = exc
    if writes:
        return ("write", *writes[0])
    if isinstance(result, Exception):
        return ("error", type(result).__name__)
    if result is None:
        result = {}
    if type(result) is not dict:
        return ("error", "TypeError")
    return ("value", result.get(output, view.values[output]))


def cells(matrix: dict) -> list[dict[str, Any]]:
    axes = matrix["axes"]
    fields = matrix.get("fields") or {}
    return [
        {**fields, **dict(zip(axes, values, strict=True))}
        for values in itertools.product(*axes.values())
    ]


def changes(matrix: dict, base: str | None, head: str | None, where: dict | None = None) -> dict:
    """Per changed cell (a tuple of its axis values): (base outcome, head outcome)."""
    target = matrix["target"]
    found = {}
    for cell in cells(matrix):
        if where and any(cell[a] not in vs for a, vs in where.items()):
            continue
        sides = [
            outcome(s, target["function"], target["output"], cell) if s else ("absent",)
            for s in (base, head)
        ]
        if sides[0] != sides[1]:
            found[tuple(cell[a] for a in matrix["axes"])] = tuple(sides)
    return found


def reported(matrix: dict, changed: list[dict]) -> dict:
    """The JSON report's changed cells in the form `changes` gives."""
    output = matrix["target"]["output"]

    def side(value: dict) -> tuple:
        if output in value:
            return ("value", value[output])
        return ("error", value["error"].split(":")[0])

    return {
        tuple(entry["cell"][a] for a in matrix["axes"]): (side(entry["base"]), side(entry["head"]))
        for entry in changed
    }


def options(argv: list[str]) -> tuple[list[str], dict[str, str], dict[str, list]]:
    """A harness command's revisions, --matrix (and others), and --where as a mapping."""
    revs, opts, where = [], {}, {}
    args = iter(argv[2:])
    for arg in args:
        if arg == "--where":
            axis, values = next(args).split("=", 1)
            where[axis] = [yaml.safe_load(v) for v in values.split(",")]
        elif arg.startswith("--"):
            opts[arg] = next(args)
        else:
            revs.append(arg)
    return revs, opts, where


def source_at(followed: Followed, ran: Ran, rev: str | None, path: str) -> str | None:
    """The file at a revision as the command saw it (HEAD as it was then; None: the
    working tree), or None when the revision does not hold it."""
    if rev is None:
        return ran.files.get(path)
    commit = re.sub(r"^HEAD", ran.head, rev)
    try:
        return followed.git("show", f"{commit}:{path}")
    except subprocess.CalledProcessError:
        return None


def matrix_of(ran: Ran, opts: dict) -> dict:
    return yaml.safe_load(ran.files[opts["--matrix"]])


def sides_of(followed: Followed, ran: Ran) -> tuple[dict, str | None, str | None]:
    """A diff's matrix, and its target file at the base and at the head."""
    revs, opts, _ = options(ran.command.argv)
    matrix = matrix_of(ran, opts)
    path = matrix["target"]["path"]
    base = source_at(followed, ran, revs[0] if revs else "HEAD", path)
    head = source_at(followed, ran, revs[1] if len(revs) > 1 else None, path)
    return matrix, base, head


def writes_of(matrix: dict, source: str | None) -> set[str]:
    """Each write on the view the version makes on some cell, as a reason names it."""
    target = matrix["target"]
    found = set()
    for cell in cells(matrix) if source else ():
        kind, *write = outcome(source, target["function"], target["output"], cell)
        if kind == "write":
            line, name, done = write
            found.add(f"view.{name} is {done} at {target['path']}:{line}: ")
    return found


def test_each_diff_lists_the_cells_the_two_versions_give_differently(followed):
    for ran in followed.harness("diff"):
        _, _, where = options(ran.command.argv)
        matrix, base, head = sides_of(followed, ran)
        if any(v not in matrix["axes"][a] for a, vs in where.items() for v in vs):
            assert ran.done.returncode == 2, ran.command.line  # a value the matrix lacks
            continue
        written = {side: writes_of(matrix, s) for side, s in (("base", base), ("head", head))}
        if any(written.values()):  # a side that cannot be compared: nothing is
            assert ran.done.returncode == 4 and ran.report["changed"] == [], ran.command.line
            for side, reasons in written.items():
                note = ran.report["notes"].get(side, "") if reasons else ""
                assert not reasons or any(r in note for r in reasons), (ran.command.line, note)
            continue
        expected = changes(matrix, base, head, where)
        assert reported(matrix, ran.report["changed"]) == expected, ran.command.line
        assert (ran.done.returncode == 1) == bool(expected), ran.command.line
        shown_counts(ran, matrix, len(expected))
        if not expected:
            behind = changes(held_fields_varied(matrix, head), base, head)
            assert ran.done.returncode == (4 if behind else 0), ran.command.line


def shown_counts(ran: Ran, matrix: dict, changed: int) -> None:
    """The page's own summary line agrees with the count computed here."""
    size = len(cells(matrix))
    output = matrix["target"]["output"]
    shown = "\n".join(ran.command.shown)
    if changed:
        assert f"{changed} of {size} cells change {output}" in shown, ran.command.line
    elif ran.command.shown:
        assert f"No cell changes {output} ({size} cells compared)" in shown, ran.command.line


def held_fields_varied(matrix: dict, head: str) -> dict:
    """The matrix with each field made an axis of its value and every literal the head's
    code compares `config.FIELD` with: where a change behind a held input would show."""
    fields = dict(matrix.get("fields") or {})
    literals: dict[str, set] = {name: set() for name in fields}
    for node in ast.walk(ast.parse(head)):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            names = [p.attr for p in parts if isinstance(p, ast.Attribute) and p.attr in fields]
            values = [p.value for p in parts if isinstance(p, ast.Constant)]
            for name in names:
                literals[name].update(values)
    axes = {
        **matrix["axes"],
        **{n: [fields[n], *sorted(literals[n] - {fields[n]})] for n in fields},
    }
    return {**matrix, "axes": axes, "fields": {}}


def changing_commits(followed: Followed, ran: Ran, matrix: dict, where: dict, start: str) -> list:
    """The commits after `start` up to HEAD (then) whose version of the file gives some
    selected cell another outcome than their parent's version, oldest first (a commit
    that adds the file has no version to compare with)."""
    path = matrix["target"]["path"]
    span = f"{start}..{ran.head}" if start else ran.head
    found = []
    for sha in followed.git("rev-list", "--reverse", span, "--", path).split():
        parent = source_at(followed, ran, f"{sha}^", path)
        if parent and changes(matrix, parent, source_at(followed, ran, sha, path), where):
            found.append(sha)
    return found


def test_history_lists_the_commits_whose_version_changes_a_cell(followed):
    (ran,) = followed.harness("history")
    revs, opts, where = options(ran.command.argv)
    matrix = matrix_of(ran, opts)
    expected = changing_commits(followed, ran, matrix, where, revs[0] if revs else "")
    assert [c["sha"] for c in ran.report["commits"]] == expected
    assert ran.done.returncode == (1 if expected else 0)


def test_bisect_finds_the_first_commit_that_changes_a_selected_cell(followed):
    (ran,) = followed.harness("bisect")
    (good, _), opts, where = options(ran.command.argv)
    matrix = matrix_of(ran, opts)
    first, *_ = changing_commits(followed, ran, matrix, where, good)
    assert ran.report["culprit"]["sha"] == first
    assert ran.done.returncode == 1  # as diff's: outcomes changed
    subject = followed.git("log", "-1", "--format=%s", first).strip()
    assert any(subject in line for line in ran.command.shown if "First bad commit" in line)


def test_the_page_shows_a_diff_of_a_function_that_assigns(followed):
    """Some diff on the page compares a version that assigns to the view (checked above
    against plain Python, where the assignment stays on the object)."""
    assigning = []
    for ran in followed.harness("diff"):
        _, base, head = sides_of(followed, ran)
        if any(_assigns_to_view(s) for s in (base, head) if s):
            assigning.append(ran)
    assert assigning and all(ran.done.returncode == 1 for ran in assigning)


def _assigns_to_view(source: str) -> bool:
    return any(isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
               for node in ast.walk(ast.parse(source)))  # fmt: skip
