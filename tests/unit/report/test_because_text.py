"""How a reason reads: which side each line and value is."""

from __future__ import annotations

from harness.engine.events import OPERAND, Event
from harness.report.because import because_json, because_text, json_value, short, with_because
from harness.report.model import RuleView
from harness.scan.because import Difference, Place, Reasons


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


def test_the_json_of_a_reason_names_each_side_s_line_and_value_or_null():
    moved = Difference(event(9, [1, "a"]), event(12, {"k": (2, 3)}))
    assert because_json(moved) == {
        "source": "view.page_size is None",
        "base": {"line": 9, "value": [1, "a"]},
        "head": {"line": 12, "value": {"k": [2, 3]}},
        "text": "`view.page_size is None` (lines 9->12) was [1, 'a'] at base, {'k': (2, 3)} at head",
    }
    assert because_json(Difference(None, event(4, None)))["base"] is None
    assert because_json(Difference(event(4, 1.5), None))["head"] is None


def test_a_value_is_itself_in_json_when_json_can_hold_it_else_its_repr():
    plain = [None, True, 0, 2.5, "fa4", [1, "x"], {"a": [None, False]}]
    assert [json_value(v) for v in plain] == plain
    assert json_value((1, "x")) == [1, "x"]
    assert json_value({"a": {1, 2}}) == {"a": "{1, 2}"}
    others = [{1, 2}, {1: "a"}, [1, {2}], (1, 2j), b"x", 2j]
    assert [json_value(v) for v in others] == [repr(v) for v in others]


def test_a_shown_value_is_cut_to_forty_characters_with_an_ellipsis():
    assert short("a" * 38) == repr("a" * 38)  # 40 characters with its quotes: whole
    assert short("a" * 39) == "'" + "a" * 36 + "..."  # 41: cut to 40
    assert len(short(list(range(100)))) == 40
    assert short(list(range(100)), width=10) == "[0, 1, ..."


def test_reasons_attach_to_their_rules_in_order_and_none_leave_them_alone():
    views = [RuleView({}, (), cells, f"t{cells}") for cells in (1, 2)]
    assert with_because(views, []) == views
    first = Reasons((Difference(event(1, 0), event(1, 1)),), 3, Place("head", "m.py", 1))
    second = Reasons((), 0, None)
    attached = with_because(views, [first, second])
    assert [(v.cells, v.because, v.because_more, v.because_at) for v in attached] == [
        (1, first.shown, 3, first.at),
        (2, (), 0, None),
    ]
