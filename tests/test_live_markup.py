"""Reports carry no live markup: text from the analysed repository (a commit subject, a
pass's condition, a value it returns, an error it raises) is shown as text in markdown
(rendered here by markdown-it, a CommonMark parser), parses in JUnit XML, and starts no
workflow command line; `matrix --infer` writes hostile literals as quoted data."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt

from harness.matrix.load import load_matrix
from harness.report import junit
from harness.report.escape import code_span, markdown_text
from harness.report.parts import Parts, render
from tests.apiserver import Comments
from tests.conftest import run_cli
from tests.helpers import FixtureRepo, commit_versions, module
from tests.test_comment import PR, SLUG, comment

CORPUS = [
    "[link](http://evil.invalid/a)",
    "![img](http://evil.invalid/i.png)",
    "<http://evil.invalid/auto>",
    "http://evil.invalid/bare",
    "www.evil.invalid",
    "mailto:x@evil.invalid",
    "user@evil.invalid",
    "<img src=x onerror=alert(1)>",
    "<details><summary>open</summary>",
    "</details></table>",
    "@everyone @octo/team",
    "#1 GH-2 octo/repo#3",
    "# heading",
    "- item",
    "1. item",
    "> quote",
    "| a | b |",
    "*em* _em_ **strong** __strong__ ~~gone~~",
    "`code` ``` fence `` x`",
    "&amp; &#64; &lt;",
    "\\[escaped\\](x)",
    "[ref]: http://evil.invalid/ref",
    "$x$ $$y$$",
    "##[warning]the commands' older form",
]
BREAKS = [
    "line one\n# second line heading\n- list\n\n<img src=y>",
    "\u2028::error::ls\x85::error::nel\u2029::error::ps",
    "\n::error::lf\r::error::cr\r\n  ::warning::indented",
]
CONTROLS = "\x00\x07\x1b[31m\x7f\ud800"
LINE = " ".join(CORPUS)  # one line: a commit subject, a condition's literal
VALUE = "\n".join(CORPUS + BREAKS) + CONTROLS  # a value and an error message
LIVE = {"link_open", "image", "html_inline", "html_block", "heading_open", "s_open",
        "em_open", "strong_open", "bullet_list_open", "ordered_list_open",
        "blockquote_open", "fence", "hr"}  # fmt: skip
# What GitHub links in text outside code (mentions, references, extended autolinks).
GITHUB_LINKED = re.compile(r"@\w|#\d|(?i:gh-\d)|://|(?i:www\.)|(?i:mailto:)|(?i:xmpp:)")
MATRIX = """\
name: hostile
target:
  path: python/sglang/srt/arg_groups/overrides.py
  function: _fa4_page_constraint
  output: [page_size]
world: sglang
axes:
  attention_backend: [null, fa4, triton]
  page_size: [null, 16]
"""
BASE = """
def _fa4_page_constraint(view):
    if view.attention_backend == "fa4":
        return {"page_size": 128}
    return {}
"""
HEAD = """
def _fa4_page_constraint(view):
    if view.attention_backend == {line!r}:
        return {{"page_size": 128}}
    if view.attention_backend == "fa4":
        return {{"page_size": {value!r}}}
    if view.attention_backend == "triton":
        raise ValueError({value!r})
    return {{}}
"""


def parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def tokens(markdown: str) -> list:
    """Every token, inline children included."""
    out = []
    for token in parser().parse(markdown):
        out.append(token)
        out.extend(token.children or [])
    return out


def live(markdown: str) -> Counter:
    return Counter(
        t.type for t in tokens(markdown) if t.type in LIVE or t.type.endswith("link_open")
    )


def shown(markdown: str) -> list[str]:
    """The text each inline shows (text and code), word joiners removed."""
    lines = []
    for token in parser().parse(markdown):
        if token.type == "inline":
            parts = [c.content for c in token.children if c.type in ("text", "code_inline")]
            lines.append("".join(parts).replace("\u2060", ""))
    return lines


def linked(markdown: str) -> list[str]:
    """Text outside code GitHub would link."""
    texts = [t.content for t in tokens(markdown) if t.type == "text"]
    return [
        m[0] for text in texts for m in [GITHUB_LINKED.search(text.replace("\u2060", "-"))] if m
    ]


def flattened(text: str) -> str:
    """What one line of a report can show of `text`: each line break a space, each control
    or lone surrogate U+FFFD (the spec, written here apart from the code)."""
    text = re.sub("\r\n|[\n\r\x85\u2028\u2029]", lambda m: " " * len(m[0]), text)
    return "".join("\ufffd" if ord(c) < 32 or 0x7F <= ord(c) < 0xA0 or 0xD800 <= ord(c) < 0xE000
                   else c for c in text)  # fmt: skip


def test_the_corpus_is_live_markup_unescaped():
    """The check can fail: rendered raw, the corpus makes links, images, HTML, headings."""
    found = live("\n\n".join(CORPUS + BREAKS))
    assert {"link_open", "image", "html_block", "heading_open", "bullet_list_open"} <= set(found)
    assert linked(" ".join(CORPUS))


@pytest.mark.parametrize("text", [*CORPUS, *BREAKS, CONTROLS, "_x_", "a_b", "inferred:_x"])
@pytest.mark.parametrize("place", ["{}", "- base: {}", "| 1 | {} |", "x\n{}", "**x**: {}"])
def test_escaped_text_is_inert_and_reads_as_itself(text, place):
    table = place.startswith("|")
    head = "| # | v |\n|---|---|\n" if table else ""
    markdown = head + place.format(markdown_text(text))
    plain = live(head + place.format("plain"))  # the place's own markup
    assert live(markdown) == plain and linked(markdown) == []
    assert any(flattened(text).strip() in line for line in shown(markdown))
    spanned = head + place.format(code_span(text, table=table))
    assert live(spanned) == plain
    assert any(flattened(text).strip() in line for line in shown(spanned))


@pytest.fixture(scope="module")
def repos(tmp_path_factory) -> dict[str, tuple[Path, list[str], Path]]:
    """The same history twice: hostile text in the subject, condition, value and error, and
    plain text in their place (the same report, shape for shape)."""
    out = {}
    for kind, line, value in (("hostile", LINE, VALUE), ("plain", "plain line", "plain")):
        root = tmp_path_factory.mktemp(kind)
        (root / "m.yaml").write_text(MATRIX)
        shas = commit_versions(
            root / "repo", [module(BASE), module(HEAD.format(line=line, value=value))]
        )
        out[kind] = (root / "repo", shas, root / "m.yaml")
    FixtureRepo(out["hostile"][0]).commit(LINE, {"README": "x"})
    FixtureRepo(out["plain"][0]).commit("plain subject", {"README": "x"})
    return out


def diff(repos, kind: str, fmt: str):
    repo, shas, matrix = repos[kind]
    result = run_cli("diff", shas[0], "HEAD", "--repo", str(repo), "--matrix", str(matrix),
                     "--format", fmt)  # fmt: skip
    assert result.code == 1, result.err
    return result


def test_a_markdown_report_shows_hostile_text_as_text(repos):
    hostile, plain = diff(repos, "hostile", "markdown").out, diff(repos, "plain", "markdown").out
    assert live(hostile) == live(plain) and live(plain)["heading_open"] == 1
    assert linked(hostile) == []
    lines = shown(hostile)
    assert any(LINE in line for line in lines)  # the subject, and the condition's literal
    assert any(flattened(VALUE) in line for line in lines)  # the value, the error message


def test_the_pr_comment_shows_hostile_text_as_text(repos, github_api, tmp_path):
    comments = Comments(github_api, SLUG, PR)
    bodies = {}
    for kind in ("hostile", "plain"):
        report = tmp_path / f"{kind}.json"
        report.write_text(diff(repos, kind, "json").out)
        comments.items.clear()
        assert comment(report).code == 0
        (bodies[kind],) = [c["body"] for c in comments.items]
    assert live(bodies["hostile"]) == live(bodies["plain"]) and linked(bodies["hostile"]) == []
    assert any(flattened(VALUE) in line for line in shown(bodies["hostile"]))


def text_of(root: ET.Element) -> str:
    return "\n".join([*(v for e in root.iter() for v in e.attrib.values()),
                      *(e.text or "" for e in root.iter())])  # fmt: skip


def test_junit_parses_whatever_the_code_returned(repos):
    out = diff(repos, "hostile", "junit").out
    root = ET.fromstring(out.encode())
    seen = text_of(root)
    assert all(item in seen for item in CORPUS) and LINE in seen
    assert "\\x00" in seen and "\\x1b" in seen and "\\ud800" in seen  # shown, not dropped
    assert "::error::lf" in seen  # a line that started with `::` reads back as written
    assert old_commands(out) == [] and "##[warning]" in seen


def command_lines(text: str) -> list[str]:
    """Lines a runner could read as a workflow command: any line break, leading blanks."""
    return [line.lstrip() for line in text.splitlines() if line.lstrip().startswith("::")]


@pytest.mark.parametrize("fmt", ["markdown", "junit", "json", "json-sample"])
def test_no_hostile_text_starts_a_workflow_command(repos, fmt):
    result = diff(repos, "hostile", fmt)
    assert command_lines(result.out) == [] and command_lines(result.err) == []


def old_commands(text: str) -> list[str]:
    """Where a runner could read the commands' older form (`##[name]`, anywhere)."""
    return re.findall(r"##\[\w*", text)


@pytest.mark.parametrize("fmt", ["text", "html", "markdown", "junit", "json"])
def test_the_harness_process_prints_no_workflow_command(repos, fmt, tmp_path):
    """The real process, whose standard streams carry no command whatever a renderer
    missed (the text report prints values and errors as the code gave them), nor does a
    text report it writes to a file."""
    repo, shas, matrix = repos["hostile"]
    argv = ["diff", shas[0], "HEAD", "--repo", str(repo), "--matrix", str(matrix)]
    written = tmp_path / "report.txt"
    result = subprocess.run([sys.executable, "-m", "harness", *argv, "--format", fmt,
                             "--output", f"text={written}"],
                            capture_output=True, timeout=300)  # fmt: skip
    out, err = (result.stdout.decode(errors="surrogateescape"),
                result.stderr.decode(errors="surrogateescape"))  # fmt: skip
    assert result.returncode == 1, err
    in_file = written.read_text(errors="surrogateescape")
    assert command_lines(in_file) == old_commands(in_file) == [] and "\\x1b[31m" in in_file
    assert command_lines(out) == command_lines(err) == []
    assert old_commands(out) == old_commands(err) == []
    if fmt == "text":  # the value is there, shown: word joiners aside, every line of it
        shown_out = out.replace("\u2060", "")
        assert all(line in shown_out for line in CORPUS)
        assert "\\x1b[31m" in out and "\x1b" not in out and "\x07" not in out


def test_github_annotations_are_one_line_each(repos):
    out = diff(repos, "hostile", "github").out
    plain = diff(repos, "plain", "github").out
    assert out.splitlines() == out.split("\n")[:-1]  # no line break but the harness's own
    assert len(out.splitlines()) == len(plain.splitlines())
    assert all(re.match(r"::(warning|notice) file=[^:]*::", line) for line in out.splitlines())
    assert "%0A::error::ls" in out and "\ud800" not in out and "\x1b" not in out
    assert old_commands(out) == [] and "##\u2060[warning]" in out


def test_parts_escape_the_reasons_no_part_evaluates():
    parts = Parts(reports=[], whole=10, max_cells=1, unseen=(VALUE,))
    github = render(parts, "github", lambda r: "", 10)
    assert github.splitlines() == github.split("\n")[:-1] and github.startswith("::warning::")
    xml = render(parts, "junit", junit.render, 10)
    (failure,) = ET.fromstring(xml.encode()).iter("failure")
    assert all(item in failure.get("message") for item in CORPUS)
    assert command_lines(xml) == [] and old_commands(xml) == old_commands(github) == []


HOSTILE_LITERALS = [
    "x: y\n!!python/object/apply:os.system ['id'] # c",
    "!!python/object:os.system",
    "&anchor *alias {a: b} [c, d]",
    "- item\nbindings:\n  probe: {call: 1}",
    "on",
    "#",
]
INFER_PASS = "\n".join(
    ["from sglang.srt.arg_groups.registry import register_post_process\n\n",
     "@register_post_process", "def _hostile_page(view):"]
    + [f"    if view.attention_backend == {lit!r}:\n        return {{'page_size': {n}}}"
       for n, lit in enumerate(HOSTILE_LITERALS, 1)]
    + ["    return {}"]
)  # fmt: skip
SAFE_TAGS = {
    f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map")
}


def test_infer_writes_hostile_literals_as_quoted_data(tmp_path):
    (sha,) = commit_versions(tmp_path / "repo", [module(INFER_PASS)])
    path = tmp_path / "m.yaml"
    done = run_cli("matrix", "--repo", str(tmp_path / "repo"), "--infer", sha, "-o", str(path))
    assert done.code == 0, done.err
    text = path.read_text()
    nodes, tags = [yaml.compose(text)], set()
    while nodes:
        node = nodes.pop()
        tags.add(node.tag)
        if isinstance(node.value, list):
            nodes.extend(
                n for item in node.value for n in (item if isinstance(item, tuple) else (item,))
            )
    assert tags <= SAFE_TAGS  # no python tag, anchor or alias became YAML
    doc = yaml.safe_load(text)
    assert "bindings" not in doc
    values = {a.name: a.values for a in load_matrix(str(path)).axes}["attention_backend"]
    assert set(HOSTILE_LITERALS) <= set(values)
    assert all(line.startswith(("#", " ", "name:", "target:", "world:", "axes:", "fields:"))
               for line in text.splitlines() if line)  # fmt: skip
