"""The one format table: each command's --format choices are its kind's formats, a
renderer's module is imported only when its format is asked for, and every entry
renders a real report of its kind."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.cli.main import build_parser
from harness.matrix.load import load_matrix
from harness.report import formats

COMMANDS = {"diff": "diff", "history": "history", "bisect": "bisect", "explain": "explain",
            "passes": "passes", "matrix": "matrix"}  # fmt: skip


def format_choices(command: str) -> tuple[str, ...]:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.dest == "command" or a.choices]
    sub = commands.choices[command]
    (option,) = [a for a in sub._actions if "--format" in a.option_strings]
    return tuple(option.choices)


@pytest.mark.parametrize("kind", sorted(COMMANDS))
def test_each_command_offers_its_kinds_formats(kind):
    assert format_choices(COMMANDS[kind]) == formats.formats(kind)
    assert formats.formats(kind)[0] == "text"  # the default every command takes


def test_renderers_are_imported_only_when_their_format_is_asked_for():
    code = (
        "import sys, json\n"
        "from harness.report import formats\n"
        "from harness.matrix.load import load_matrix\n"
        "before = {m for m in sys.modules if m.startswith('harness.report.')}\n"
        "text = formats.text('matrix', 'json', load_matrix())\n"
        "after = {m for m in sys.modules if m.startswith('harness.report.')}\n"
        "print(json.dumps([sorted(before), sorted(after - before), json.loads(text)['name']]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, added, name = json.loads(done.stdout)
    others = {"markdown", "text", "junit", "annotations", "html", "history", "html_history",
              "bisect", "explain", "passes"}  # renderers of other kinds and formats  # fmt: skip
    assert before == ["harness.report.formats"] and "harness.report.matrix" in added
    assert not {f"harness.report.{m}" for m in others} & set(added), added
    assert name == "sglang-fa4-page-size"


def test_the_matrix_kind_renders_in_each_of_its_formats():
    matrix = load_matrix()
    shown = formats.text("matrix", "text", matrix)
    assert matrix.name in shown and "349,920" in shown  # 9 * 9 * 9 * 2 * 4 * 4 * 3 * 5 cells
    assert json.loads(formats.text("matrix", "json", matrix))["name"] == matrix.name


def test_an_unknown_pair_is_a_plain_error():
    with pytest.raises(ValueError, match="no yaml renderer for a diff report"):
        formats.render("diff", "yaml")
