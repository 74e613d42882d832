"""Text that could reorder or break what a reader sees (bidi controls, line breaks,
controls) in the grid, the markdown report and the HTML page: shown as U+FFFD or a space,
never as itself."""

from __future__ import annotations

import re

from harness.engine.outcome import ERROR, VALUE, Outcome
from harness.report import html, markdown
from tests.test_grid import matrix_of, report_of

BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
VALUE_TEXT = "sm100\u202e001ms\u2066x\u2069\nnext\x00line"
ERROR_TEXT = "ValueError: \u202eesab\u202c ok\u2028\u200f"


def hostile_report():
    """Two axes, one of them holding a value with an RTL override, changed to an error
    with bidi controls on every other cell."""
    matrix = matrix_of({"gpu": [VALUE_TEXT, "sm90", "sm120"], "page": [1, 16, 64, 128]})
    outcomes = [Outcome(VALUE, 128), Outcome(ERROR, ERROR_TEXT)]
    head = [n % 2 for n in range(matrix.size)]
    return report_of(matrix, outcomes, [0] * matrix.size, head)


def test_the_markdown_grid_shows_no_bidi_control():
    text = markdown.render(hostile_report(), 10, ("gpu", "page"))
    assert "Changed cells by `gpu` (rows) and `page` (columns)." in text
    assert not BIDI.search(text)
    assert "sm100\ufffd001ms\ufffdx\ufffd" in text  # the value, its controls visible
    assert "\x00" not in text


def test_the_html_page_shows_no_bidi_control_and_no_control_in_the_grid():
    page = html.render(hostile_report(), None, ("gpu", "page"))
    assert not BIDI.search(page)
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\u2028\u2029]", page)
    row = "sm100\ufffd001ms\ufffdx\ufffd next\ufffdline"  # one line, each control U+FFFD
    assert f'data-row="{row}"' in page  # the grid's row label, as the value reads
    assert f"<th><code>{row}</code></th>" in page
    assert "ValueError: \ufffdesab\ufffd ok \ufffd" in page  # the transition in a square
