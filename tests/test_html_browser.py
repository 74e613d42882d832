"""The html report of the #30835 fixture diff, opened from disk in headless Chromium.

Driven by Playwright (Python) against the system's Chromium (Debian's `chromium`
package, /usr/bin/chromium; `playwright install` is never run: no browser is
downloaded). Playwright rather than Selenium: one pip package, no chromedriver
to match to the browser's version, and request routing built in, which is how
"no request leaves the file" is checked (every request is seen; only the file
itself is let through).

CI installs Chromium (.ci/run), so a missing browser FAILS here; set
HARNESS_TEST_NO_BROWSER=1 to skip these tests on a machine without one.
Expected values come from the JSON report of the same run and from
tests/oracle.py, never from the page's renderer.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.matrix.model import format_value
from tests import oracle
from tests.conftest import run_cli
from tests.test_html import expected_squares, fixture_diff, hostile_page  # noqa: F401
from tests.test_live_markup import repos  # noqa: F401 (a fixture)

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


def chromium_path() -> Path:
    """The browser, or why these tests cannot run: skipped only when asked to be."""
    if os.environ.get("HARNESS_TEST_NO_BROWSER") == "1":
        pytest.skip("HARNESS_TEST_NO_BROWSER=1: the headless-browser tests are skipped")
    if not CHROMIUM.exists():
        pytest.fail(
            f"no {CHROMIUM}: install Debian's chromium (apt-get install chromium; .ci/run "
            "does), or set HARNESS_TEST_NO_BROWSER=1 to skip the browser tests"
        )
    return CHROMIUM


@pytest.fixture(scope="module")
def browser():
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=str(executable), args=FLAGS)
        yield launched
        launched.close()


class Opened:
    """A page opened from a file, with every request and every console message kept."""

    def __init__(self, browser, path: Path, scheme: str = "light") -> None:
        self.url = path.resolve().as_uri()
        self.requests: list[str] = []
        self.console: list[tuple[str, str]] = []
        self.dialogs: list[str] = []
        self.page = browser.new_page(viewport={"width": 1200, "height": 900},
                                     color_scheme=scheme)  # fmt: skip
        self.page.route("**/*", self._route)
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.console.append(("pageerror", str(e))))
        self.page.on("dialog", self._dialog)
        self.page.goto(self.url)

    def _route(self, route) -> None:
        url = route.request.url
        self.requests.append(url)
        if url == self.url:
            route.continue_()
        else:
            route.abort()

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def errors(self) -> list[tuple[str, str]]:
        return [(kind, text) for kind, text in self.console if kind in ("error", "pageerror")]


@pytest.fixture
def opened(browser, fixture_diff, tmp_path):  # noqa: F811
    path = tmp_path / "report.html"
    path.write_text(fixture_diff[1])
    page = Opened(browser, path)
    yield page
    page.page.close()


SQUARES = """grid => Array.from(grid.querySelectorAll("td.square")).map(td => [
  td.dataset.row, td.dataset.col, td.innerText])"""


def visible_grid(opened: Opened) -> tuple[str, list]:
    grids = opened.page.locator("[data-grid]:visible")
    assert grids.count() == 1
    return grids.get_attribute("data-axes"), grids.evaluate(SQUARES)


def said(text: str) -> tuple[int, int]:
    changed, cells = text.split("\n")[0].split(" ", 1)[1].split(" / ")
    return int(changed.replace(",", "")), int(cells.replace(",", ""))


def test_each_grid_chosen_in_the_page_counts_the_reports_changed_cells(opened, fixture_diff):  # noqa: F811
    doc = fixture_diff[0]
    select = opened.page.locator("select[data-grids]")
    options = select.locator("option").all_text_contents()
    assert len(options) == 28  # every pair of the 8 axes
    for n in range(len(options)):
        select.select_option(str(n))
        axes, squares = visible_grid(opened)
        rows, cols = axes.split(",")
        expected = expected_squares(rows, cols)
        size = doc["cells"] // (len(oracle.AXES[rows]) * len(oracle.AXES[cols]))
        shown = {(r, c): said(text) for r, c, text in squares}
        assert shown == {(r, c): (expected[(r, c)], size) for r, c in shown}
        assert len(shown) == len(oracle.AXES[rows]) * len(oracle.AXES[cols])
    assert opened.errors() == []


def rows_shown(opened: Opened) -> list[list[str]]:
    return opened.page.locator("table[id$='-cells'] tbody tr:visible").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))"
    )


def matching(doc: dict, **wanted: str) -> set[tuple[str, ...]]:
    """The JSON report's changed cells whose axes have the wanted values, as page rows
    (axis values, then base and head)."""
    axes = list(doc["axes"])
    ends = ("base", "page_size"), ("head", "page_size")
    return {
        (
            *(format_value(item["cell"][a]) for a in axes),
            *(format_value(item[side][field]) for side, field in ends),
        )
        for item in doc["changed"]
        if all(format_value(item["cell"][a]) == v for a, v in wanted.items())
    }


def test_filtering_by_axis_values_shows_exactly_the_matching_cells(opened, fixture_diff):  # noqa: F811
    from playwright.sync_api import expect

    doc, page = fixture_diff[0], opened.page
    assert len(rows_shown(opened)) == len(doc["changed"]) == 1736
    page.select_option("select[data-axis='decode_attention_backend']", "=fa4")
    expected = matching(doc, decode_attention_backend="fa4")
    assert {tuple(r) for r in rows_shown(opened)} == expected and len(expected) == 648
    assert page.locator("[data-count]").inner_text() == f"{len(expected):,}"
    page.select_option("select[data-axis='page_size']", "=null")
    expected = matching(doc, decode_attention_backend="fa4", page_size="null")
    assert {tuple(r) for r in rows_shown(opened)} == expected and len(expected) == 162
    page.select_option("select[data-axis='platform']", "=sm90")  # no cell changed there
    assert rows_shown(opened) == []
    assert page.locator("[data-count]").inner_text() == "0"
    page.click("button[type=reset]")
    # the reset applies after the form's own reset; a locator's wait evaluates no string
    # in the page (a polled `wait_for_function` does, which the report's CSP refuses)
    expect(page.locator("[data-count]")).to_have_text("1,736")
    assert len(rows_shown(opened)) == 1736
    assert opened.errors() == []


def test_the_page_requests_nothing_but_itself_and_logs_no_error(opened, tmp_path):
    opened.page.select_option("select[data-grids]", "3")
    opened.page.select_option("select[data-axis='platform']", "=sm100")
    assert opened.requests == [opened.url]
    assert opened.errors() == [] and opened.dialogs == []
    shot = tmp_path / "report.png"
    opened.page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_the_dark_theme_keeps_every_square_readable(browser, fixture_diff, tmp_path):  # noqa: F811
    path = tmp_path / "report.html"
    path.write_text(fixture_diff[1])
    dark, light = Opened(browser, path, "dark"), Opened(browser, path, "light")
    backgrounds = "el => getComputedStyle(el).backgroundColor"
    body = [o.page.locator("body").evaluate(backgrounds) for o in (dark, light)]
    assert body[0] != body[1]  # prefers-color-scheme is honoured
    square = "td.square.some >> nth=0"
    assert dark.page.locator(square).inner_text().startswith("\u25d0 1,736 / 29,160")
    dark.page.screenshot(path=str(tmp_path / "dark.png"))
    assert dark.errors() == light.errors() == []
    dark.page.close()
    light.page.close()


def test_hostile_text_makes_no_element_and_runs_nothing(browser, repos, tmp_path):  # noqa: F811
    """The hostile corpus (HTML, script, markdown) in the subject, the condition, the value
    and the error: the live page has the elements a plain report has, and no dialog."""
    counts = {}
    for kind in ("hostile", "plain"):
        path = tmp_path / f"{kind}.html"
        path.write_text(hostile_page(repos, kind, tmp_path))
        page = Opened(browser, path)
        counts[kind] = page.page.evaluate(
            "() => Array.from(document.querySelectorAll('*')).map(e => e.tagName).sort()"
        )
        assert page.dialogs == [] and page.errors() == [] and page.requests == [page.url]
        assert page.page.locator("img, iframe, a, details, object, embed").count() == 0
        page.page.close()
    assert counts["hostile"] == counts["plain"]


DOCS_IMAGES = Path(__file__).resolve().parents[1] / "docs" / "img"
MAX_IMAGE = 150_000  # bytes a committed screenshot may take
COMMENT_STYLE = """body { font: 14px/1.5 -apple-system, "Segoe UI", sans-serif; margin: 16px; width: 860px; }
table { border-collapse: collapse; } th, td { border: 1px solid #d0d7de; padding: 4px 10px; }
code { background: #eff1f3; padding: 1px 4px; border-radius: 4px; font-size: 85%; }"""


def comment_html(history) -> str:
    """The PR comment of the #30835 diff (the json-sample artifact through `harness
    comment`'s renderer), as GitHub-flavoured markdown rendered by markdown-it."""
    import json

    from markdown_it import MarkdownIt

    from harness.github.comment import body_for
    from harness.report.document import read_document

    result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(),
                     "--format", "json-sample")  # fmt: skip
    body = body_for(
        read_document(json.loads(result.out)), 10, "https://github.com/OWNER/REPO/actions/runs/1"
    )
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(body)
    return f"<!DOCTYPE html><meta charset=utf-8><style>{COMMENT_STYLE}</style>{rendered}"


def test_the_docs_screenshots_are_made_here_and_stay_small(
    browser,
    fixture_diff,  # noqa: F811
    history,
    tmp_path,
):
    """docs/img/report-html.png and docs/img/pr-comment.png, made by this test (set
    HARNESS_WRITE_DOCS_IMAGES=1 to write them into docs/img/)."""
    (tmp_path / "report.html").write_text(fixture_diff[1])
    (tmp_path / "comment.html").write_text(comment_html(history))
    shots = {}
    for name, source, size in (("report-html.png", "report.html", (1000, 820)),
                               ("pr-comment.png", "comment.html", (900, 400))):  # fmt: skip
        page = Opened(browser, tmp_path / source)
        page.page.set_viewport_size({"width": size[0], "height": size[1]})
        full = name == "pr-comment.png"  # the whole comment; the top of the page
        shots[name] = page.page.screenshot(path=str(tmp_path / name), full_page=full)
        assert page.requests == [page.url] and page.errors() == []
        assert len(shots[name]) < MAX_IMAGE, (name, len(shots[name]))
        page.page.close()
    if os.environ.get("HARNESS_WRITE_DOCS_IMAGES") == "1":
        DOCS_IMAGES.mkdir(exist_ok=True)
        for name, data in shots.items():
            (DOCS_IMAGES / name).write_bytes(data)
    for name in shots:  # the committed ones exist and are small too
        assert 0 < (DOCS_IMAGES / name).stat().st_size < MAX_IMAGE, name
