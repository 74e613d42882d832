"""How a reason reads: which side each line and value is."""

from __future__ import annotations

from harness.engine.events import OPERAND, Event
from harness.report.because import because_text
from harness.scan.because import Difference


def event(line: int, value) -> Event:
    return Event(OPERAND, line, "view.page_size is None", "view.page_size is None", value)


def test_a_moved_operand_names_the_base_line_then_the_head_line():
    text = because_text(Difference(event(9, True), event(12, False)))
    assert text == "`view.page_size is None` (lines 9->12) was True at base, False at head"


def test_an_operand_on_the_same_line_names_it_once():
    text = because_text(Difference(event(9, False), event(9, True)))
    assert text == "`view.page_size is None` (line 9) was False at base, True at head"


def test_a_new_and_a_gone_operand_name_their_own_side():
    new = because_text(Difference(None, event(4, True)))
    gone = because_text(Difference(event(7, 1), None))
    assert new == "`view.page_size is None` (line 4) is new at head: True here"
    assert gone == "`view.page_size is None` (line 7) is gone at head (it was 1 here)"
