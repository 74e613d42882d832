"""Text from the analysed repository made inert in each report format.

Code, commit subjects, paths, values, error messages and matrix names come from a
pull request: hostile. Each function here takes such text and returns it so that
the format shows it as text and nothing else: markdown (`markdown_text`,
`code_span`) starts no link, image, HTML, mention, issue reference, heading, list,
table cell or new block; XML (`xml_text`) holds only characters XML 1.0 allows;
workflow commands (`workflow_data`, `workflow_property`) start no new line. Written
by hand: what GitHub links (mentions, references, bare URLs) is GitHub's own rule,
not CommonMark's, and no library escapes for it; the tests render the output with a
CommonMark parser and check the GitHub patterns separately.
"""

from __future__ import annotations

import functools
import re
import unicodedata

WORD_JOINER = "\u2060"  # invisible, no break: splits a pattern GitHub would link
# What some reader treats as the end of a line: str.splitlines' set (NEL, U+2028, U+2029...).
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_FLAT = re.compile(f"[{LINE_BREAKS}]")
_UNSAFE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f\ud800-\udfff]")  # controls, surrogates
_PUNCT = set("\\`*[]|~#&$")  # markdown syntax anywhere in a line (`>` only at a start)
_LINE_START = re.compile(r"\A(\s*)(?:([-+=>:])|(\d+)([.)]))")  # a block marker (or `::`)
_LINKED = re.compile(
    r"(?<=@)"  # @mention, team, email
    r"|(?<=#)(?=\d)|(?i:(?<=\bgh-))(?=\d)"  # #123, GH-123, owner/repo#123
    r"|(?<=:)(?=//)|(?i:(?<=\bwww))(?=\.)"  # http://, ftp://, www.
    r"|(?i:(?<=\bmailto)|(?<=\bxmpp))(?=:)"
)


def flat(text: str) -> str:
    """`text` on one line: each line break a space, each control or lone surrogate U+FFFD."""
    return _UNSAFE.sub("\ufffd", _FLAT.sub(" ", str(text)))


def markdown_text(text: str) -> str:
    """`text` as markdown that renders as this text (plus invisible word joiners): one
    line, a word joiner where GitHub would link a mention, reference or URL, `<` as
    `&lt;` (no tag, no autolink), and every other markup character backslash-escaped
    (`_` where it could close emphasis, or at an end).
    Safe in a table cell."""
    line = _LINKED.sub(WORD_JOINER, flat(text))
    closing = _closing_underscores(line)
    escaped = "".join(
        "&lt;" if ch == "<" else "\\" + ch if ch in _PUNCT or n in closing else ch
        for n, ch in enumerate(line)
    )
    return _LINE_START.sub(_escape_marker, escaped, count=1)


def _closing_underscores(line: str) -> set[int]:
    """Where a run of `_` could close emphasis (CommonMark's flanking rules), or touches an
    end of `line` (what is around it is not known here). Emphasis needs a closer, so with
    these escaped no `_` is emphasis, and `page_size` or `inferred:_x` stay as they are."""
    found: set[int] = set()
    for run in re.finditer("_+", line):
        start, end = run.span()
        before, after = line[start - 1 : start], line[end : end + 1]
        if not before or not after or _can_close(before, after):
            found.update(range(start, end))
    return found


def _can_close(before: str, after: str) -> bool:
    left = not after.isspace() and (not _punct(after) or before.isspace() or _punct(before))
    right = not before.isspace() and (not _punct(before) or after.isspace() or _punct(after))
    return right and (not left or _punct(after))


def _punct(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


def _escape_marker(m: re.Match[str]) -> str:
    """`- x` -> `\\- x`, `1. x` -> `1\\. x`: text, not a list, quote or heading underline."""
    if m[2]:
        return f"{m[1]}\\{m[2]}"
    return f"{m[1]}{m[3]}\\{m[4]}"


def code_span(text: str, table: bool = False) -> str:
    """`text` as an inline code span: one line, fenced by more backticks than any run in it
    (padded when it starts or ends with one); in a table cell, pipes escaped (GFM reads
    `\\|` as a pipe there, even in code)."""
    body = flat(text)
    if table:
        body = body.replace("|", "\\|")
    runs = [len(r) for r in re.findall(r"`+", body)]
    fence = "`" * (max(runs, default=0) + 1)
    if (
        not body.strip(" ")
        or body[0] == "`"
        or body[-1] == "`"
        or (body[0] == " " and body[-1] == " ")
    ):
        body = f" {body} "
    return f"{fence}{body}{fence}"


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_COMMAND_AT_LINE_START = re.compile(f"((?:^|[{LINE_BREAKS}])[^\\S{LINE_BREAKS}]*):(?=:)")


def xml_text(document: str) -> str:
    """A serialized XML document with each character XML 1.0 forbids (controls, U+FFFE,
    U+FFFF, lone surrogates) written as a visible `\\xNN`/`\\uNNNN`, each `:` that
    would start a line with `::` (a workflow command when printed in CI) as `&#58;`, and
    the `[` of each `##[` (the commands' older form) as `&#91;`."""
    shown = _NOT_XML.sub(lambda m: _visible(m[0]), document)
    return _COMMAND_AT_LINE_START.sub(lambda m: f"{m[1]}&#58;", shown).replace("##[", "##&#91;")


def _visible(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def workflow_data(text: str) -> str:
    """Text safe as a workflow command's message: GitHub's escapes for %, CR and LF, and
    every other line break (NEL, U+2028, U+2029, ...) as an escaped LF, so the message
    stays on its line whatever the runner splits lines on; controls (a terminal's escape
    sequences) and lone surrogates (unwritable) as U+FFFD; a word joiner inside `##[` (the
    commands' older form, which a runner may look for anywhere in a line)."""
    escaped = str(text).replace("%", "%25").replace("\r", "%0D").replace("##[", "##\u2060[")
    return _UNSAFE.sub("\ufffd", _FLAT.sub("%0A", escaped))


def workflow_property(text: str) -> str:
    """Text safe as a workflow command's property value (`file=`, `title=`)."""
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


# What GitHub's runner trims before it looks for `::` (.NET's white space), with
# Python's own and the zero-width characters: a line that starts with any of them and
# then `::` is taken as a command.
LEADING_SPACE = frozenset(
    LINE_BREAKS + "\t \x1f\xa0\u1680\u180e\u202f\u205f\u3000\ufeff"
    + "".join(map(chr, range(0x2000, 0x200C)))
)  # fmt: skip
_MARKS = re.compile(r"::|##\[")
# After a write that ends so, the next write's first characters may finish a command.
_SPACES = "".join(sorted(LEADING_SPACE))
_OPEN_AT_END = re.compile(f"(?:(?:\\A|[{LINE_BREAKS}])[{_SPACES}]*:?|#{{1,2}})\\Z")


def inert_output(text: str, before: str = "\n", escaped: str = "") -> str:
    """`text`, written after `before` (the end of what was written so far, "\\n" at the
    start), with no workflow command in it: a word joiner (invisible) inside each `::`
    that starts a line and each `##[` (GitHub's older form, read anywhere in a line), and
    each character of `escaped` (controls a terminal would act on) shown as `\\xNN`."""
    if escaped and not text.replace("\n", "").replace("\t", "").isprintable():
        text = _escaping(escaped).sub(lambda m: _visible(m[0]), text)  # in C, at 1 ms/MB
    context = (_OPEN_AT_END.search(before[-64:]) or _NOTHING)[0]
    joined = context + text
    if "::" not in joined and "##[" not in joined:  # most text
        return text
    return _commands_broken(joined)[len(context) :]


def _commands_broken(text: str) -> str:
    """`text` with a word joiner after the first `:` of each `::` that starts a line, and
    after the `##` of each `##[`."""
    pieces, at = [], 0
    for mark in _MARKS.finditer(text):
        start = mark.start()
        if mark[0] == "##[" or _starts_line(text, start):
            cut = start + (2 if mark[0] == "##[" else 1)
            pieces += [text[at:cut], WORD_JOINER]
            at = cut
    return "".join(pieces) + text[at:]


def _starts_line(text: str, at: int) -> bool:
    """Whether only white space stands between a line's start and `text[at]`."""
    while at > 0 and text[at - 1] in LEADING_SPACE:
        if text[at - 1] in LINE_BREAKS:
            return True
        at -= 1
    return at == 0


_NOTHING = re.match("", "")


@functools.lru_cache(maxsize=4)
def _escaping(characters: str) -> re.Pattern[str]:
    return re.compile(f"[{characters}]")


_NOTHING = re.match("", "")
