"""Standard streams that carry no workflow command (`harness.cli.streams.Inert`),
however the text is cut into writes: checked against the runner's rule, written here
apart from the code (a line, split on any line break and stripped of leading white
space, that starts with `::`; `##[` anywhere), and against the text itself (with the
word joiners taken out, what was written reads back unchanged)."""

from __future__ import annotations

import io
import re

from hypothesis import given
from hypothesis import strategies as st

from harness.cli.streams import STDERR_ESCAPED, STDOUT_ESCAPED, Inert, write_commands

JOINER = "\u2060"
# Every character some reader ends a line on, and white space .NET trims.
BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
SPACE = " \t\xa0\u2000\u200a\u3000\u205f"
PIECES = st.lists(st.sampled_from([":", "::", "#", "##", "[", "x", "error", "\n", *BREAKS,
                                   *SPACE, "##[", "::error::", JOINER]),
                  max_size=40)  # fmt: skip


def commands(text: str) -> list[str]:
    lines = re.split(f"[{BREAKS}]", text)
    starts = [line for line in lines if line.lstrip(SPACE + BREAKS).startswith("::")]
    return starts + re.findall(r"##\[", text)


def written(pieces: list[str], cuts: list[int]) -> str:
    """`pieces` joined, written as the writes `cuts` makes of them, through an Inert."""
    sink = io.StringIO()
    stream = Inert(sink, "")
    text = "".join(pieces)
    at = 0
    for cut in sorted(cuts):
        stream.write(text[at:cut])
        at = max(at, cut)
    stream.write(text[at:])
    return sink.getvalue()


@given(PIECES, st.lists(st.integers(0, 120), max_size=8))
def test_no_command_whatever_the_writes(pieces, cuts):
    out = written(pieces, cuts)
    assert commands(out) == []
    assert out.replace(JOINER, "") == "".join(pieces).replace(JOINER, "")


def test_the_check_can_fail():
    assert commands("ok\n  ::error::x") and commands("a\u2028::x") and commands("a ##[x]")
    assert commands(":: at the very start")


def test_a_command_cut_across_writes_is_still_broken():
    for cuts in ([3], [4], [5], [3, 4]):
        out = written(["ok\n", "::error::x"], cuts)
        assert commands(out) == [] and out.replace(JOINER, "") == "ok\n::error::x"
    assert written(["a#", "#[x]"], []) == written(["a#", "#[x]"], [2]) == "a##\u2060[x]"


def test_stdout_shows_controls_stderr_keeps_the_progress_lines_return():
    out, err = io.StringIO(), io.StringIO()
    Inert(out, STDOUT_ESCAPED).write("a\rb\x1b[31m\x07c\td\ne\u2028")
    Inert(err, STDERR_ESCAPED).write("\rbar\r\x1b]0;x\x07")
    assert out.getvalue() == "a\\x0db\\x1b[31m\\x07c\td\ne\\u2028"
    assert err.getvalue() == "\rbar\r\\x1b]0;x\\x07"


def test_harness_own_commands_pass_as_they_are():
    sink = io.StringIO()
    stream = Inert(sink, STDOUT_ESCAPED)
    write_commands(stream, "::warning file=a.py::x\n")
    stream.write("::not one\n")
    assert sink.getvalue() == f"::warning file=a.py::x\n:{JOINER}:not one\n"
