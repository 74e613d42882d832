"""Hostile targets: code a PR could carry, run through `harness diff` as a reviewer runs it.

Each case is a head revision whose target tries to get out (a file, a process,
an environment variable, the harness's own state or exit status) or to run
forever. The checks are the side effects themselves, not only the report:
no marker file appears, no process ran, the secret never reaches the output,
the run ends within twice the time limit, and the head revision ends as
`unevaluable` (with the reason) or with `error` outcomes, never as "no change".
The payloads are live: `test_the_payloads_work_outside_the_harness` runs two of
them as plain Python and sees them act.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.engine import worker
from tests.conftest import run_cli
from tests.helpers import commit_versions, plain_matrix

SECRET = "s3cr3t-token-value"
LIMIT = 1.0  # --time-limit for every case, in seconds
UNEVALUABLE, ERROR = "unevaluable", "error"

MATRIX = plain_matrix("hostile")

HEADER = '''\
"""Post-process passes (a contributor's version)."""

MARKER = {marker!r}
'''

BASE = (
    HEADER
    + """
def target(view):
    if view.backend == "fa4":
        return {{"page_size": 128}}
    return {{}}
"""
)

# What an escape does once it reaches os: write a file, run a process, leak the secret.
ESCAPE = """
        g = c.__init__.__globals__
        g["system"]("touch " + MARKER + "-process")
        open(MARKER, "w").write(g["environ"]["HARNESS_TEST_SECRET"])
        return {"page_size": g["environ"]["HARNESS_TEST_SECRET"]}
"""


@dataclass(frozen=True)
class Case:
    name: str
    body: str  # the module after the header
    expect: str  # UNEVALUABLE or ERROR
    says: str  # a piece of the reason (unevaluable) or of the error message


def walk(prefix: str, escape: str = ESCAPE) -> str:
    """A loop over every class, escaping through the one whose module has `system`."""
    return (
        f"{prefix}\n    for c in BASES.__subclasses__():\n"
        f"        if c.__name__ != '_wrap_close':\n            continue{escape}"
    )


CORPUS = [
    Case(
        "subclasses",
        walk("BASES = ().__class__.__base__\ndef target(view):"),
        UNEVALUABLE,
        "attribute .__class__",
    ),
    Case(
        "view-globals",
        """
def target(view):
    g = type(view).__init__.__globals__
    g["system"]("touch " + MARKER + "-process")
    return {}
""",
        UNEVALUABLE,
        "attribute .__init__",
    ),
    Case(
        "default-argument",
        """
def target(view, bases=().__class__.__base__):
    return {"page_size": len(bases.__subclasses__())}
""",
        UNEVALUABLE,
        "attribute .__class__",
    ),
    Case(
        "class-body",
        """
class Holder:
    BASES = ().__class__.__base__
def target(view):
    return {"page_size": len(Holder.BASES.__subclasses__())}
""",
        UNEVALUABLE,
        "attribute .__class__",
    ),
    Case(
        "module-constant",
        """
SUBCLASSES = object.__subclasses__()
def target(view):
    return {"page_size": len(SUBCLASSES)}
""",
        UNEVALUABLE,
        "attribute .__subclasses__",
    ),
    Case(
        "loop-forever",
        """
def target(view):
    n = 0
    while True:
        n += 1
""",
        UNEVALUABLE,
        "ran past 1 s (last line reached: python/sglang/srt/arg_groups/overrides.py:",
    ),
    Case(
        "power-in-c",
        """
def target(view):
    return {"page_size": 10 ** 10 ** 9}
""",
        UNEVALUABLE,
        "ran past 1 s",
    ),
    Case(
        "memory",
        """
def target(view):
    return {"page_size": len("x" * (1 << 40))}
""",
        UNEVALUABLE,
        "ran out of memory",
    ),
    Case(
        "system-exit",
        """
def target(view):
    raise SystemExit(0)
""",
        ERROR,
        "SystemExit: 0",
    ),
    Case(
        "generator-exit",
        """
def target(view):
    raise GeneratorExit()
""",
        ERROR,
        "GeneratorExit",
    ),
    Case(
        "keyboard-interrupt",
        """
def target(view):
    raise KeyboardInterrupt()
""",
        ERROR,
        "KeyboardInterrupt",
    ),
    Case(
        "except-base-exception",
        """
def target(view):
    try:
        size = view.undeclared_field
    except BaseException:
        size = 1
    return {"page_size": size}
""",
        UNEVALUABLE,
        "view.undeclared_field is read at",
    ),
    Case(
        "bare-except",
        """
def target(view):
    try:
        size = view.undeclared_field
    except:
        size = 1
    return {"page_size": size}
""",
        UNEVALUABLE,
        "view.undeclared_field is read at",
    ),
    Case(
        "caught-and-traceback-dropped",
        """
def target(view):
    try:
        view.undeclared_field
    except BaseException as exc:
        exc.with_traceback(None)
    return {}
""",
        UNEVALUABLE,
        "view.undeclared_field",
    ),
    Case(
        "returns-a-set",
        """
def target(view):
    return {"page_size": {1, 2}}
""",
        ERROR,
        "page_size is a set",
    ),
    Case(
        "hash-raises",
        """
class Evil:
    def __hash__(self):
        raise RuntimeError("no hash")
    def __eq__(self, other):
        raise RuntimeError("no eq")
def target(view):
    return {"page_size": Evil()}
""",
        ERROR,
        "page_size is a Evil",
    ),
    Case(
        "dict-subclass",
        """
class Declared(dict):
    pass
def target(view):
    return Declared(page_size=1)
""",
        ERROR,
        "returned Declared",
    ),
    Case(
        "huge-int",
        """
def target(view):
    return {"page_size": 1 << 200}
""",
        ERROR,
        "an int of 201 bits",
    ),
    Case(
        "generator-frame",
        """
def target(view):
    gen = (x for x in [1])
    return {"page_size": len(gen.gi_frame.f_globals)}
""",
        UNEVALUABLE,
        "attribute .gi_frame",
    ),
    Case(
        "traceback-frame",
        """
def target(view):
    try:
        1 / 0
    except ZeroDivisionError as exc:
        frame = exc.__traceback__.tb_frame
    return {"page_size": len(frame.f_back.f_globals)}
""",
        UNEVALUABLE,
        "attribute .__traceback__",
    ),
    Case(
        "format-field",
        """
def target(view):
    return {"page_size": "{0.__class__.__base__}".format(view)}
""",
        UNEVALUABLE,
        "attribute .format",
    ),
    Case(
        "format-computed",
        """
def target(view):
    spec = "{0._" + "_class__}"
    return {"page_size": spec.format(view)}
""",
        UNEVALUABLE,
        "attribute .format",
    ),
    Case(
        "format-map",
        """
def target(view):
    return {"page_size": "{x}".format_map({"x": 1})}
""",
        UNEVALUABLE,
        "attribute .format_map",
    ),
    Case(
        "f-string",
        """
def target(view):
    return {"page_size": f"{view.__class__}"}
""",
        UNEVALUABLE,
        "attribute .__class__",
    ),
    Case(
        "vars",
        """
def target(view):
    return {"page_size": len(vars(view))}
""",
        UNEVALUABLE,
        "builtin vars",
    ),
    Case(
        "code-replacement",
        """
def other(view):
    return {"page_size": 1}
def target(view):
    other.__code__ = target.__code__
    return {}
""",
        UNEVALUABLE,
        "attribute .__code__",
    ),
    Case(
        "lambda-default",
        """
def target(view):
    probe = lambda v, k=().__class__: k
    return {"page_size": probe(view)}
""",
        UNEVALUABLE,
        "attribute .__class__",
    ),
    Case(
        "init-subclass",
        """
class Base:
    def __init_subclass__(cls):
        pass
def target(view):
    class Child(Base):
        pass
    return {}
""",
        UNEVALUABLE,
        "special method __init_subclass__",
    ),
    Case(
        "helper-getattr",
        """
class Anything:
    def __getattr__(self, name):
        return 1
def target(view):
    return {"page_size": Anything().page_size}
""",
        UNEVALUABLE,
        "special method __getattr__",
    ),
    Case(
        "type-three-arguments",
        """
def target(view):
    made = type("Made", (), {"size": 1})
    return {"page_size": made.size}
""",
        UNEVALUABLE,
        "type() with other than one argument",
    ),
    Case(
        "breakpoint",
        """
def target(view):
    breakpoint()
    return {}
""",
        UNEVALUABLE,
        "builtin breakpoint",
    ),
    Case(
        "help",
        """
def target(view):
    help(view)
    return {}
""",
        UNEVALUABLE,
        "builtin help",
    ),
    Case(
        "open-a-file",
        """
def target(view):
    open(MARKER, "w").write("x")
    return {}
""",
        UNEVALUABLE,
        "builtin open",
    ),
    Case(
        "eval",
        """
def target(view):
    return {"page_size": eval("1")}
""",
        UNEVALUABLE,
        "builtin eval",
    ),
    Case(
        "computed-getattr",
        """
def target(view):
    cls = getattr(view, "_" + "_class__")
    return {"page_size": str(cls)}
""",
        UNEVALUABLE,
        "attribute __class__ (through getattr)",
    ),
    Case(
        "literal-getattr",
        """
def target(view):
    return {"page_size": str(getattr((), "__class__"))}
""",
        UNEVALUABLE,
        "getattr(..., '__class__')",
    ),
    Case(
        "builtins-name",
        """
def target(view):
    return {"page_size": len(__builtins__)}
""",
        UNEVALUABLE,
        "name __builtins__",
    ),
    Case(
        "dunder-import",
        """
def target(view):
    __import__("os").system("touch " + MARKER + "-process")
    return {}
""",
        UNEVALUABLE,
        "name __import__",
    ),
    Case(
        "import-os",
        """
def target(view):
    import os
    os.system("touch " + MARKER + "-process")
    return {"page_size": os.environ["HARNESS_TEST_SECRET"]}
""",
        UNEVALUABLE,
        "os.system is read at",
    ),
    Case(
        "metaclass",
        """
class Meta(type):
    pass
class Made(metaclass=Meta):
    size = 1
def target(view):
    return {"page_size": Made.size}
""",
        UNEVALUABLE,
        "a metaclass on class Made",
    ),
    Case(
        "match-class-pattern",
        """
def target(view):
    match view:
        case object(__class__=cls):
            return {"page_size": str(cls)}
    return {}
""",
        UNEVALUABLE,
        "attribute __class__ in a class pattern",
    ),
    Case(
        "mro",
        """
def target(view):
    return {"page_size": len(type(()).mro())}
""",
        UNEVALUABLE,
        "attribute .mro",
    ),
    Case(
        "view-internals",
        """
def target(view):
    return {"page_size": len(view._attrs)}
""",
        UNEVALUABLE,
        "view._attrs is read at",
    ),
    Case(
        "message-that-loops",
        """
class Stuck(Exception):
    def __str__(self):
        while True:
            pass
def target(view):
    raise Stuck()
""",
        UNEVALUABLE,
        "ran past 1 s",
    ),
    Case(
        "dataclass-match-args",  # a field's name in __match_args__, read in C by `case`
        """
from dataclasses import dataclass

@dataclass(init=False)
class Text(str):
    'A text.'  # Python 3.11.2's dataclass reads no signature of a str subclass without one

    format: int

def helper():
    pass

def target(view):
    match Text("{0.__globals__[dataclass].__globals__[sys].modules[os]"
               ".environ[HARNESS_TEST_SECRET]}"):
        case Text(fmt):
            return {"page_size": fmt(helper)}
    return {}
""",
        UNEVALUABLE,
        "the field format in class Text",
    ),
    Case(
        "enum-functional",  # a class made from a mapping, special methods included
        """
from enum import Enum

def target(view):
    Hook = Enum("Hook", {"__match_args__": ("format",)})
    return {"page_size": len(Hook)}
""",
        UNEVALUABLE,
        "Enum() with more than a value",
    ),
    Case(
        "enum-machinery",  # _convert_ reads (and writes) the dicts of loaded modules
        """
from enum import Enum

class Mode(Enum):
    A = 1

def target(view):
    convert = getattr(Mode, "_conv" + "ert_")
    return {"page_size": len(convert("Os", "os", lambda name: True))}
""",
        UNEVALUABLE,
        "attribute _convert_ (through getattr)",
    ),
    Case(
        "auto-kept",  # enum's machinery writes into the auto() a class body is given
        """
from enum import Enum, auto

SLOTS = [auto() for _ in range(50)]

def target(view):
    unused = [s for s in SLOTS if not isinstance(s.value, int)]
    class Tick(Enum):
        ONE = unused[0]
    return {"page_size": 50 - len(unused)}
""",
        UNEVALUABLE,
        "auto other than called as a member's value",
    ),
]


def source_of(case: Case, marker: Path) -> str:
    return HEADER.format(marker=str(marker)) + textwrap.dedent(case.body)


@pytest.fixture
def world(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("HARNESS_TEST_SECRET", SECRET)
    (tmp_path / "hostile.yaml").write_text(MATRIX)
    return tmp_path


def run_diff(root: Path, shas: list[str], matrix: Path, *extra: str):
    return run_cli(
        "diff", shas[0], shas[1], "--matrix", str(matrix), "--repo", str(root),
        "--format", "json", "--no-cache", "--time-limit", str(LIMIT), *extra,
    )  # fmt: skip


@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_a_hostile_target_acts_on_nothing_and_is_reported(case: Case, world: Path):
    marker = world / "marker"
    root = world / "repo"
    shas = commit_versions(root, [BASE.format(marker=str(marker)), source_of(case, marker)])
    started = time.monotonic()
    done = run_diff(root, shas, world / "hostile.yaml")
    elapsed = time.monotonic() - started

    assert not marker.exists(), "a file was written"
    assert not Path(f"{marker}-process").exists(), "a process ran"
    assert SECRET not in done.out + done.err, "the environment leaked"
    # twice the limit; longer only while a loaded machine keeps the child from a CPU
    # (worker.STARVED_AT_MOST); 2.0: harness start, git
    assert elapsed < worker.STARVED_AT_MOST * LIMIT + 2.0, f"took {elapsed:.1f} s"
    report = json.loads(done.out)
    if case.expect == UNEVALUABLE:  # cannot tell; never 0 ("no change"), never 3 (a crash)
        assert done.code == 4 and report["changed"] == [], done.err
        note = report["notes"].get("head", "")
        assert note.startswith("unevaluable") and case.says in note, note
    else:
        assert done.code == 1, done.err  # a change
        heads = [item["head"] for item in report["changed"]]
        assert len(heads) == 9 and "head" not in report["notes"]
        assert all(case.says in head.get("error", "") for head in heads), heads


def test_the_corpus_is_large_and_covers_each_form_the_issue_names():
    assert len(CORPUS) >= 30
    names = {c.name for c in CORPUS}
    for form in ("subclasses", "default-argument", "class-body", "module-constant",
                 "loop-forever", "power-in-c", "system-exit", "bare-except", "returns-a-set",
                 "generator-frame", "traceback-frame", "format-field", "vars",
                 "code-replacement", "lambda-default", "init-subclass", "helper-getattr",
                 "type-three-arguments", "breakpoint", "help"):  # fmt: skip
        assert form in names


def test_the_payloads_work_outside_the_harness(tmp_path: Path):
    """The escapes are real: run as plain Python, they run the process and write the file."""
    marker = tmp_path / "marker"
    env = {**os.environ, "HARNESS_TEST_SECRET": SECRET}
    for name in ("subclasses", "dunder-import"):
        script = source_of(next(c for c in CORPUS if c.name == name), marker) + "target(None)\n"
        subprocess.run([sys.executable, "-c", script], check=True, env=env)
        assert Path(f"{marker}-process").exists(), name
        Path(f"{marker}-process").unlink()
    assert marker.read_text() == SECRET
    leak = next(c for c in CORPUS if c.name == "dataclass-match-args")
    script = source_of(leak, marker) + "print(target(None))\n"
    done = subprocess.run([sys.executable, "-c", script], check=True, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert SECRET in done.stdout  # read as text from os.environ, through str.format


def test_raising_system_exit_on_some_cells_is_an_error_there_and_the_diff_exits_1(world: Path):
    marker = world / "marker"
    exits = BASE.replace(
        '    if view.backend == "fa4":',
        '    if view.backend == "flashinfer":\n        raise SystemExit(0)\n'
        '    if view.backend == "fa4":',
    )
    root = world / "repo"
    shas = commit_versions(root, [BASE.format(marker=str(marker)), exits.format(marker="")])
    done = run_diff(root, shas, world / "hostile.yaml")
    assert done.code == 1
    report = json.loads(done.out)
    cells = [item["cell"] for item in report["changed"]]
    assert cells == [{"backend": "flashinfer", "page_size": p} for p in (None, 1, 64)]
    assert all(item["head"] == {"error": "SystemExit: 0"} for item in report["changed"])
