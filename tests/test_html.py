"""The html report, read as HTML (no browser): one self-contained page whose grid counts
are the report's, whose text from the repository is text, and which loads nothing.

The browser half (the page opened from disk in Chromium, filtered, screenshotted) is
tests/test_html_browser.py. Expected counts come from tests/oracle.py (the predicate
in CONTEXT.md), never from the renderer.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from html.parser import HTMLParser
from itertools import combinations
from pathlib import Path

import pytest

from harness.matrix.model import format_value
from harness.report import html
from tests import oracle
from tests.conftest import run_cli
from tests.helpers import commit_versions, module
from tests.test_live_markup import LINE, VALUE, flattened, repos  # noqa: F401 (a fixture)
from tests.test_releases import archives, index  # noqa: F401 (fixtures)


class Page(HTMLParser):
    """The parts of a page the tests read: every start tag, the squares of each grid
    (by its axes), the changed-cell rows, the text, and the JSON data."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: Counter[str] = Counter()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.attributes: list[tuple[str, str, str | None]] = []
        self.grids: dict[str, dict[tuple[str, str], dict[str, str]]] = {}
        self.rows: list[list[str]] = []
        self.text: list[str] = []
        self.scripts: list[tuple[dict, str]] = []
        self._grid: str | None = None
        self._square: dict[str, str] | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._script: dict | None = None
        self._in_cells = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        self.tags[tag] += 1
        self.elements.append((tag, found))
        self.attributes.extend((tag, name, value) for name, value in attrs)
        if "data-grid" in found:
            self._grid = found["data-axes"]
            self.grids[self._grid] = {}
        if tag == "td" and "square" in (found.get("class") or "") and self._grid:
            self._square = {**found, "text": ""}
            self.grids[self._grid][(found["data-row"], found["data-col"])] = self._square
        if tag == "table" and (found.get("id") or "").endswith("-cells"):
            self._in_cells = True
        if tag == "tr" and self._in_cells:
            self._row = []
        if tag == "td" and self._row is not None:
            self._cell = []
        if tag == "script":
            self._script = found
            self.scripts.append((found, ""))

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        if tag == "tr" and self._row is not None:
            if self._row:
                self.rows.append(self._row)
            self._row = None
        if tag == "table":
            self._in_cells = False
        if tag == "td":
            self._square = None
        if tag == "script":
            self._script = None

    def handle_data(self, data):
        self.text.append(data)
        if self._square is not None:
            self._square["text"] += data
        if self._cell is not None:
            self._cell.append(data)
        if self._script is not None:
            attrs, body = self.scripts[-1]
            self.scripts[-1] = (attrs, body + data)

    def data(self) -> dict:
        (body,) = [b for a, b in self.scripts if a.get("type") == "application/json"]
        return json.loads(body)


@pytest.fixture(scope="module")
def fixture_diff(history, tmp_path_factory) -> tuple[dict, str]:
    """The #30835 diff as JSON (standard output) and html (--output), one evaluation."""
    out = tmp_path_factory.mktemp("html") / "report.html"
    result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--format", "json",
                     "--output", f"html={out}")  # fmt: skip
    assert result.code == 1, result.err
    return json.loads(result.out), out.read_text()


@functools.cache
def expected_changed() -> tuple[tuple, ...]:
    """The cells #30835 changes, from the predicate (tests/oracle.py)."""
    return tuple(oracle.changed_between(base_clause=False, head_clause=True))


def expected_squares(rows: str, cols: str) -> Counter:
    """Changed cells per (row value, column value)."""
    changed = expected_changed()
    at = {name: n for n, name in enumerate(oracle.NAMES)}
    return Counter(
        (format_value(key[at[rows]][1]), format_value(key[at[cols]][1])) for key in changed
    )


def square_numbers(text: str) -> tuple[int, int]:
    """`● 1,736 / 29,160 ...` -> (1736, 29160): what a square says in words."""
    found = re.search(r"([\d,]+) / ([\d,]+)", text)
    assert found, text
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


def test_every_pair_of_axes_has_a_grid_whose_squares_count_the_changed_cells(fixture_diff):
    doc, page = fixture_diff[0], Page(fixture_diff[1])
    pairs = {frozenset(p) for p in combinations(oracle.NAMES, 2)}
    assert {frozenset(k.split(",")) for k in page.grids} == pairs  # 28: all, <= MAX_PAIRS
    for key, squares in page.grids.items():
        rows, cols = key.split(",")
        expected = expected_squares(rows, cols)
        size = doc["cells"] // (len(oracle.AXES[rows]) * len(oracle.AXES[cols]))
        assert len(squares) == len(oracle.AXES[rows]) * len(oracle.AXES[cols])
        for (r, c), square in squares.items():
            said = (expected[(r, c)], size)
            assert (int(square["data-changed"]), int(square["data-cells"])) == said, (key, r, c)
            assert square_numbers(square["text"]) == said  # in words too, not only colour
        assert sum(int(s["data-changed"]) for s in squares.values()) == len(doc["changed"])


def test_the_first_grid_is_the_best_split_and_the_others_wait_hidden(fixture_diff):
    text = fixture_diff[1]
    shown = re.findall(r'<div data-grid="(\d+)" data-axes="([^"]+)"(?! hidden)>', text)
    assert [n for n, _ in shown] == ["0"]
    assert set(shown[0][1].split(",")) == {"prefill_cuda_graph", "platform"}


def test_the_changed_cells_listed_are_the_reports(fixture_diff):
    doc, page = fixture_diff[0], Page(fixture_diff[1])
    axes = list(doc["axes"])
    listed = {tuple(row[: len(axes)]): tuple(row[len(axes) :]) for row in page.rows}
    expected = {
        tuple(format_value(item["cell"][a]) for a in axes): (
            str(item["base"]["page_size"]),
            format_value(item["head"]["page_size"]),
        )
        for item in doc["changed"]
    }
    assert len(page.rows) == len(doc["changed"]) == 1736 < html.ROWS_SHOWN
    assert listed == expected
    assert page.data()["reports"][0]["changed"] == 1736


def test_the_page_states_its_verdict_rules_and_code(fixture_diff):
    doc, text = fixture_diff
    page = Page(text)
    words = " ".join("".join(page.text).split())
    assert "Changed: 1,736 of 349,920 cells change their outcome (exit 1)" in words
    assert "No blind spot" in words
    for rule in doc["summary"]:
        assert f"{rule['cells']:,}" in words
    # The reason's operand, marked in the head's code on its line; the base's code there.
    assert text.count("<mark>view.cuda_graph_config.prefill.backend != Backend.FULL</mark>") == 3
    assert re.search(r'<span class="ln">\s*81  </span>\s*and <mark>', text)


def test_the_page_loads_nothing_and_runs_only_its_own_script(fixture_diff):
    page = Page(fixture_diff[1])
    links = [(t, n, v) for t, n, v in page.attributes if n in ("src", "href", "action")]
    assert links == []
    assert page.tags["link"] == page.tags["img"] == page.tags["iframe"] == 0
    (csp,) = [v for t, n, v in page.attributes if t == "meta" and n == "content" and "src" in v]
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1]
    code = [b for a, b in page.scripts if "type" not in a]
    assert len(code) == 1 and "fetch" not in code[0] and "XMLHttpRequest" not in code[0]
    assert not [n for _, n, _ in page.attributes if n.startswith("on")]  # no inline handlers


def test_embedded_json_cannot_close_its_script(tmp_path):
    hostile = "</script><script>alert(1)</script><!--"
    text = html.page("diff.html.j2", reports=[], note=None, status=0, limits=html.limits(),
                     data={"x": hostile}, counts=None, unseen=[])  # fmt: skip
    assert "</script><script>" not in text
    assert Page(text).data() == {"x": hostile}


def hostile_page(repos, kind: str, tmp_path: Path) -> str:  # noqa: F811
    repo, shas, matrix = repos[kind]
    out = tmp_path / f"{kind}.html"
    result = run_cli("diff", shas[0], "HEAD", "--repo", str(repo), "--matrix", str(matrix),
                     "--format", "json", "--output", f"html={out}")  # fmt: skip
    assert result.code == 1, result.err
    return out.read_text()


def test_hostile_text_from_the_repository_is_text(repos, tmp_path):  # noqa: F811
    """The subject, the condition's literal, the value and the error carry HTML, script
    and markdown: the page has the same elements and attributes as a plain one."""
    hostile, plain = (Page(hostile_page(repos, k, tmp_path)) for k in ("hostile", "plain"))
    assert hostile.tags == plain.tags
    assert [(t, n) for t, n, _ in hostile.attributes] == [(t, n) for t, n, _ in plain.attributes]
    words = "".join(hostile.text)
    assert LINE in words  # the subject and the literal, as themselves
    value = flattened(VALUE)  # one line, controls and lone surrogates as U+FFFD
    assert any(row[-1] == value[:77] + "..." for row in hostile.rows)  # the value, as text
    assert value[:200] in words  # the error message, in a rule's transition


def test_the_history_page_pairs_the_revert_with_the_change_it_undoes(history):
    args = ("history", "--repo", history.repo())
    doc = json.loads(run_cli(*args, "--format", "json").out)
    result = run_cli(*args, "--format", "html")
    assert result.code == 1, result.err
    page = Page(result.out)
    rows = [attrs for tag, attrs in page.elements if tag == "g" and "data-changed" in attrs]
    expected = len(oracle.changed_between(base_clause=False, head_clause=True))
    assert [int(r["data-changed"]) for r in rows] == [c["cells_changed"] for c in doc["commits"]]
    by_sha = {c["sha"]: n for n, c in enumerate(doc["commits"])}
    (revert,) = [n for n, c in enumerate(doc["commits"]) if c["reverts"]]
    undone = by_sha[doc["commits"][revert]["reverts"]]
    assert doc["commits"][undone]["pr"] == 30835 and doc["commits"][revert]["pr"] == 30871
    assert int(rows[undone]["data-changed"]) == int(rows[revert]["data-changed"]) == expected
    assert rows[undone]["data-pair"] == rows[revert]["data-pair"] is not None
    arcs = [attrs for tag, attrs in page.elements if tag == "path"]
    assert [a["data-pair"] for a in arcs] == [rows[revert]["data-pair"]]
    assert "No commit changes" not in result.out


def test_the_bisect_page_names_the_first_bad_commit_and_its_steps(history):
    args = ("bisect", "#30835^^", "#30835", "--repo", history.repo())
    doc = json.loads(run_cli(*args, "--format", "json").out)
    result = run_cli(*args, "--format", "html")
    assert result.code == 1, result.err
    words = " ".join("".join(Page(result.out).text).split())
    assert f"First bad: {doc['culprit']['sha'][:10]}" in words
    changed = len(oracle.changed_between(base_clause=False, head_clause=True))
    assert f"{changed:,} cells changed (exit 1)" in words
    for step in doc["steps"]:
        assert f"{step['verdict']} {step['sha'][:10]}" in words


def test_a_split_inferred_diff_is_one_page_of_its_parts(tmp_path):
    from tests.test_inferred import REGISTRY, TWO, TWO_HEAD

    shas = commit_versions(tmp_path / "repo", [module(TWO, REGISTRY), module(TWO_HEAD, REGISTRY)])
    out = tmp_path / "parts.html"
    result = run_cli("diff", *shas, "--matrix", "inferred", "--repo", str(tmp_path / "repo"),
                     "--max-cells", "40", "--format", "json", "--output", f"html={out}")  # fmt: skip
    doc, page = json.loads(result.out), Page(out.read_text())
    assert result.code == 1 and len(doc["parts"]) == 2
    statuses = [attrs["data-status"] for tag, attrs in page.elements if "data-status" in attrs]
    assert statuses == ["1"] + [str(part["status"]) for part in doc["parts"]]
    assert [r["changed"] for r in page.data()["reports"]] == [
        len(p["changed"]) for p in doc["parts"]
    ]
    assert len(page.rows) == sum(len(p["changed"]) for p in doc["parts"])
    words = " ".join("".join(page.text).split())
    assert "2 parts: 2 changed, 0 cannot tell, 0 no change" in words


def test_the_reasons_no_part_evaluates_are_text():
    from harness.report.parts import Parts

    pages = [Page(html.render(Parts(reports=[], whole=10, max_cells=1, unseen=(reason,))))
             for reason in (VALUE, "plain")]  # fmt: skip
    assert pages[0].tags == pages[1].tags
    assert f"Not evaluated: {flattened(VALUE)}" in "".join(pages[0].text)


def test_the_code_beside_the_reasons_is_read_from_releases_too(history, tmp_path):
    """wheel:PATH revisions have no repository: the code comes from the archives."""
    from harness import gitio
    from tests.releases import build_wheel, package_files

    repo = gitio.open_repo(history.repo())
    wheels = []
    for rev, version in (("#30835^", "0.2.0"), ("#30835", "0.3.0")):
        path = tmp_path / f"sglang-{version}-py3-none-any.whl"
        path.write_bytes(build_wheel(package_files(repo, gitio.resolve(repo, rev).sha), version))
        wheels.append(f"wheel:{path}")
    result = run_cli("diff", *wheels, "--format", "html", "--no-cache")
    assert result.code == 1, result.err
    marked = "<mark>view.cuda_graph_config.prefill.backend != Backend.FULL</mark>"
    assert result.out.count(marked) == 3  # each rule's reason, in the head's code
    assert "(not read at" not in result.out


def test_a_blind_spot_is_cannot_tell_and_named_with_what_reaches_it(history, tmp_path):
    """The prefill graph held at breakable: #30835 changes no cell, and the page says it
    cannot tell, naming the changed condition and the input that would take it."""
    matrix = tmp_path / "blind.yaml"
    shipped = (Path(__file__).parents[1] / "matrices" / "sglang-fa4-page-size.yaml").read_text()
    held = "  prefill_cuda_graph: [breakable]\n"
    matrix.write_text(re.sub(r"  prefill_cuda_graph: \[.*\]\n", held, shipped))
    out = tmp_path / "blind.html"
    result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--matrix",
                     str(matrix), "--format", "json", "--output", f"html={out}")  # fmt: skip
    doc, page = json.loads(result.out), Page(out.read_text())
    assert result.code == 4 and doc["changed"] == [] and len(doc["blind_spots"]) == 1
    words = " ".join("".join(page.text).split())
    assert "Cannot tell (exit 4)" in words and "Blind spots (1)" in words
    (spot,) = doc["blind_spots"]
    assert spot["condition"] == "view.cuda_graph_config.prefill.backend != Backend.FULL"
    assert f"{spot['path']}:{spot['line']}" in words and spot["hint"] in words
    assert "prefill_cuda_graph = full" in spot["hint"]
    assert page.rows == []


def test_an_operand_is_marked_where_it_stands_and_found_at_the_other_side():
    head = "def f(view):\n    if (view.a\n            and view.b != 2):\n        return 1\n"
    base = "def f(view):\n    if (view.a):\n        return 1\n"
    (focus,) = [r for r in html.excerpt(head, 3, "view.b != 2") if r["focus"]]
    assert (focus["n"], focus["before"], focus["mark"], focus["after"]) == (
        3, "            and ", "view.b != 2", "):")  # fmt: skip
    assert html.counterpart(head, base, 3) == 2  # the base's lines these two replace
    assert html.counterpart(head, base, 4) == 3 and html.counterpart(head, base, 1) == 1
    assert html.counterpart(base, head + "x = 1\n", 3) == 4  # an equal line: its twin
    (unmarked,) = [r for r in html.excerpt(base, 3, None) if r["focus"]]
    assert unmarked["mark"] == "" and unmarked["before"] == "        return 1"
    (whole,) = [r for r in html.excerpt(head, 2, "not on this line") if r["focus"]]
    assert (whole["before"], whole["mark"]) == ("    ", "if (view.a")


def test_the_grid_named_by_grid_comes_first_as_rows_then_columns(history):
    result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--format", "html",
                     "--grid", "page_size,platform")  # fmt: skip
    assert result.code == 1, result.err
    shown = re.findall(r'<div data-grid="(\d+)" data-axes="([^"]+)"(?! hidden)>', result.out)
    assert shown == [("0", "page_size,platform")]
    assert "page_size \u00d7 platform (--grid)</option>" in result.out
    squares = Page(result.out).grids["page_size,platform"]
    expected = expected_squares("page_size", "platform")
    assert {k: int(s["data-changed"]) for k, s in squares.items()} == {
        k: expected[k] for k in squares
    }


def test_the_history_of_releases_pairs_the_release_that_reverts(index):  # noqa: F811
    """0.3.0 ships #30835, 0.5.0 its revert (0.4.0, yanked, is skipped)."""
    result = run_cli("history", "pypi:sglang", "--index-url", index.url, "--no-cache",
                     "--format", "html")  # fmt: skip
    assert result.code == 1, result.err
    page = Page(result.out)
    rows = [attrs for tag, attrs in page.elements if tag == "g" and "data-changed" in attrs]
    expected = len(oracle.changed_between(base_clause=False, head_clause=True))
    assert [int(r["data-changed"]) for r in rows] == [expected, expected]
    assert rows[0]["data-pair"] == rows[1]["data-pair"] is not None
    words = " ".join("".join(page.text).split())
    assert "2 releases change page_size (exit 1)" in words
    assert "reverts 0.3.0" in words and "yanked: a bad build" in words
