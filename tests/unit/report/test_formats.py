"""The one format table: every diff format it lists is written by `harness diff`, in
that format's shape; a renderer's module is imported only when its format is asked
for; the matrix kind renders in each of its formats."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.matrix.load import load_matrix
from harness.report import formats
from tests.conftest import run_cli

# What each diff format looks like, whoever renders it: told from the text alone.
LOOKS = {
    "text": lambda out: "cells change page_size, covered by" in out,
    "markdown": lambda out: out.startswith("### "),
    "json": lambda out: json.loads(out)["status"] == 1,
    "json-sample": lambda out: json.loads(out)["changed_count"] > 0,
    "junit": lambda out: out.startswith("<?xml") and "<testsuite" in out,
    "github": lambda out: out.startswith("::warning"),
    "html": lambda out: out.startswith("<!DOCTYPE html>"),
}


def test_every_diff_format_in_the_table_is_written_by_the_command(history):
    """Each format the table lists for a diff is one `harness diff --format` takes, and
    what it writes has that format's shape (#30835 changes cells: exit 1)."""
    assert set(formats.formats("diff")) == set(LOOKS)
    for fmt in formats.formats("diff"):
        result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--format", fmt)
        assert result.code == 1 and LOOKS[fmt](result.out), fmt


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
