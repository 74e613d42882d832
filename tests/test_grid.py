"""The grid of what changed (harness.report.grid) and its markdown table.

Expected counts are computed here from the cells themselves (the JSON report's changed
cell list, the oracle's predicate, or the outcome tables a test made), never from the
rules the grid is built from."""

from __future__ import annotations

import itertools
import json
import math
import re
from array import array
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import gitio
from harness.engine.outcome import CODE_TYPE, ERROR, VALUE, Outcome, OutcomeTable
from harness.errors import HarnessError
from harness.matrix.load import load_matrix, parse_matrix
from harness.matrix.model import Matrix, format_value
from harness.report import jsonfmt, markdown
from harness.report.document import read_document
from harness.report.grid import best_axes, build_grid, grid_of_document
from harness.report.model import DiffReport, rule_view
from harness.scan.compare import compare
from harness.scan.diff import diff
from harness.scan.versions import Versions
from tests import oracle
from tests.conftest import cli_once, run_cli
from tests.test_live_markup import CORPUS, linked, live, parser, shown

FIXTURE_PAIR = ("prefill_cuda_graph", "platform")


# --- reports made for the tests -------------------------------------------------------


@pytest.fixture(scope="module")
def fixture(history) -> DiffReport:
    """The real report of #30835 against its parent on the shipped FA4 matrix."""
    from harness.report.model import build_report

    repo = gitio.open_repo(history.repo())
    versions = Versions(repo, load_matrix())
    base, head = (gitio.resolve(repo, rev) for rev in ("#30835^", "#30835"))
    return build_report(diff(versions, base, head))


def sample_report(history):
    """`harness diff '#30835^' '#30835' --format json-sample` on the fixture history, run
    once a process (each test here damages its own copy of the document)."""
    return cli_once("diff", "#30835^", "#30835", "--repo", history.repo(), "--format",
                    "json-sample")  # fmt: skip


def matrix_of(axes: dict[str, list[Any]]) -> Matrix:
    lines = ["name: random", "target: {path: x.py, function: f, output: out}", "axes:"]
    lines += [f"  {name}: {json.dumps(values)}" for name, values in axes.items()]
    return parse_matrix("\n".join(lines) + "\n", "random.yaml")


def table_of(outcomes: list[Outcome], codes: list[int]) -> OutcomeTable:
    return OutcomeTable(outcomes, array(CODE_TYPE, codes))


def report_of(matrix: Matrix, outcomes: list[Outcome], base: list[int], head: list[int]):
    """A report over real outcome tables, compared by the real comparison."""
    comparison = compare(matrix, table_of(outcomes, base), table_of(outcomes, head))
    rules = [rule_view(matrix, rule) for rule in comparison.rules]
    revisions = [gitio.CommitRevision(name, "0" * 40, name) for name in ("base", "head")]
    return DiffReport(matrix, *revisions, comparison, {}, rules, {})


def full_document(report: DiffReport) -> dict[str, Any]:
    return json.loads("".join(jsonfmt.render_chunks(report)))


# --- counts computed from the cells ---------------------------------------------------


def counted(doc: dict[str, Any], rows: str, cols: str) -> Counter:
    """{(row value, col value): changed cells}, from the changed cell list."""
    return Counter(
        (typed(item["cell"][rows]), typed(item["cell"][cols])) for item in doc["changed"]
    )


def typed(value: Any) -> tuple[str, Any]:
    """A value as a key that tells 1, 1.0, true and "1" apart."""
    return (type(value).__name__, value)


def conditional_entropy(doc: dict[str, Any], a: str, b: str) -> float:
    """H(changed | (a, b)) in bits, from the changed cell list and the axis sizes."""
    size = doc["cells"] / (len(doc["axes"][a]) * len(doc["axes"][b]))
    total = 0.0
    for n in counted(doc, a, b).values():
        p = n / size
        if 0 < p < 1:
            total -= size / doc["cells"] * (p * math.log2(p) + (1 - p) * math.log2(1 - p))
    return total


def best_by_entropy(doc: dict[str, Any]) -> tuple[str, str]:
    names, best, least = list(doc["axes"]), None, math.inf
    for a, b in itertools.combinations(names, 2):
        h = conditional_entropy(doc, a, b)
        if h < least - 1e-12:
            best, least = (a, b), h
    a, b = best
    return (b, a) if len(doc["axes"][b]) > len(doc["axes"][a]) else (a, b)


def grid_counts(grid) -> Counter:
    return Counter(
        {(typed(sq.row), typed(sq.col)): sq.changed for sq in grid.squares.values() if sq.changed}
    )


# --- the fixture ----------------------------------------------------------------------


def test_the_fixture_grid_shows_exactly_the_full_graph_sm100_square(fixture):
    report = fixture
    expected = oracle.changed_between(False, True)
    assert best_axes(report) == FIXTURE_PAIR  # rows: 4 graph modes, columns: 3 GPUs
    grid = build_grid(report)
    assert (grid.rows, grid.cols) == FIXTURE_PAIR
    assert grid.row_values == tuple(oracle.AXES["prefill_cuda_graph"])
    assert grid.col_values == tuple(oracle.AXES["platform"])
    assert grid.total == 349_920 and grid.changed == len(expected)
    per_square = 349_920 // (4 * 3)
    assert all(sq.cells == per_square for sq in grid.squares.values())
    changed = {k: sq for k, sq in grid.squares.items() if sq.changed}
    assert list(changed) == [(0, 1)]  # full x sm100
    (square,) = changed.values()
    assert (square.row, square.col, square.changed) == ("full", "sm100", len(expected))
    assert square.transitions == (("128 -> input page_size", len(expected)),)
    others = dict(square.others)
    assert others["use_mla"] == (False,) and others["speculative_eagle_topk"] == (None, 1)
    assert others["page_size"] == (None, 1, 16, 64)
    assert others["attention_backend"] == tuple(oracle.BACKENDS)  # fa4 on any of the three


def test_a_chosen_pair_counts_what_the_oracle_counts(fixture):
    report = fixture
    grid = build_grid(report, ("attention_backend", "page_size"))
    expected_keys = oracle.changed_between(False, True)
    cells = [c for c in oracle.all_cells() if oracle.key(c) in expected_keys]
    expected = Counter((typed(c["attention_backend"]), typed(c["page_size"])) for c in cells)
    assert grid_counts(grid) == expected
    assert grid.squares[(0, 4)].changed == 0  # page_size 128 stays 128 either way


def test_the_grid_of_the_json_report_is_the_grid_of_the_report(history, fixture):
    report = fixture
    done = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--format",
                   "json-sample", "--no-cache")  # fmt: skip
    assert done.code == 1, done.err
    for pair in [None, ("page_size", "use_mla"), FIXTURE_PAIR]:
        assert grid_of_document(read_document(json.loads(done.out)), pair) == build_grid(
            report, pair
        )


@pytest.mark.parametrize(
    ("axes", "named"),
    [(("platform", "gpu"), "'gpu'"), (("nope", "platform"), "'nope'"),
     (("platform", "platform"), "two different axes")],
)  # fmt: skip
def test_an_unknown_or_repeated_axis_names_the_valid_ones(fixture, axes, named):
    with pytest.raises(HarnessError) as caught:
        build_grid(fixture, axes)
    message = str(caught.value)
    assert named in message and ", ".join(oracle.NAMES) in message


def test_a_matrix_of_one_axis_has_no_grid():
    matrix = matrix_of({"only": [1, 2, 3]})
    report = report_of(matrix, [Outcome(VALUE, 1), Outcome(VALUE, 2)], [0, 0, 0], [0, 1, 0])
    with pytest.raises(HarnessError, match="two axes"):
        best_axes(report)


# --- any outcome tables ---------------------------------------------------------------

VALUES = [None, True, 1, 1.0, "1", "fa4", "x y", 0]


@st.composite
def outcome_tables(draw):
    """A matrix of 2-4 axes of 1-4 values, and two tables over a few outcomes."""
    count = draw(st.integers(2, 4))
    axes = {
        f"a{n}": draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=4, unique_by=repr))
        for n in range(count)
    }
    size = math.prod(len(v) for v in axes.values())
    outcomes = [Outcome(VALUE, 128), Outcome(VALUE, 1), Outcome(ERROR, "ValueError: no")]
    codes = st.lists(st.integers(0, 2), min_size=size, max_size=size)
    return axes, outcomes, draw(codes), draw(codes)


def transition(outcome: Outcome) -> str:
    return outcome.value if outcome.kind == ERROR else format_value(outcome.value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outcome_tables())
def test_any_pair_counts_what_the_changed_cells_say(tables):
    axes, outcomes, base, head = tables
    matrix = matrix_of(axes)
    report = report_of(matrix, outcomes, base, head)
    doc = full_document(report)
    assert len(doc["changed"]) == sum(b != h for b, h in zip(base, head, strict=True))
    assert best_axes(report) == best_by_entropy(doc)
    for rows, cols in itertools.permutations(axes, 2):
        grid = build_grid(report, (rows, cols))
        assert grid == grid_of_document(read_document(doc), (rows, cols))
        assert grid_counts(grid) == counted(doc, rows, cols)
        assert grid.changed == len(doc["changed"]) and grid.total == matrix.size
        for (i, j), square in grid.squares.items():
            inside = [
                n for n, cell in enumerate(itertools.product(*axes.values()))
                if cell[list(axes).index(rows)] is axes[rows][i]
                and cell[list(axes).index(cols)] is axes[cols][j]
            ]  # fmt: skip
            moved = Counter(
                f"{transition(outcomes[base[n]])} -> {transition(outcomes[head[n]])}"
                for n in inside
                if base[n] != head[n]
            )
            assert square.cells == len(inside)
            assert dict(square.transitions) == moved
            assert [n for _, n in square.transitions] == sorted(moved.values(), reverse=True)


# --- the markdown grid ----------------------------------------------------------------

SQUARE = re.compile(r"^(\U0001f7e7|\u2b1c) ([\d,]+)/([\d,]+)")


def inline_text(token) -> str:
    """An inline token as shown: text and code, `<br>` as a line break, no word joiners."""
    parts = []
    for child in token.children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type == "html_inline" and child.content == "<br>":
            parts.append("\n")
    return "".join(parts).replace("\u2060", "")


def first_table(markdown: str) -> list[list[str]]:
    """The first table of the document (the grid), as rows of cell texts."""
    rows, row = [], None
    for token in parser().parse(markdown):
        if token.type == "tr_open":
            row = []
        elif token.type == "inline" and row is not None:
            row.append(inline_text(token))
        elif token.type == "tr_close":
            rows.append(row)
            row = None
        elif token.type == "table_close":
            break
    return rows


def parsed_counts(markdown: str) -> tuple[Counter, int]:
    """{(row text, col text): changed} of the rendered grid, and its squares' cells."""
    header, *body = first_table(markdown)
    counts, sizes = Counter(), set()
    for row in body:
        for col, square in zip(header[1:], row[1:], strict=True):
            mark, changed, cells = SQUARE.match(square).groups()
            changed, cells = int(changed.replace(",", "")), int(cells.replace(",", ""))
            assert (mark == "\u2b1c") == (changed == 0)
            sizes.add(cells)
            if changed:
                counts[(row[0], col)] = changed
    (size,) = sizes
    return counts, size


def text_counts(doc: dict[str, Any], rows: str, cols: str) -> Counter:
    return Counter(
        (format_value(item["cell"][rows]), format_value(item["cell"][cols]))
        for item in doc["changed"]
    )


@st.composite
def shown_tables(draw):
    """As `outcome_tables`, with values that read differently (the markdown shows text)."""
    axes, outcomes, base, head = draw(outcome_tables())
    for values in axes.values():
        if len({format_value(v) for v in values}) < len(values):
            values[:] = [f"v{n}" for n in range(len(values))]
    return axes, outcomes, base, head


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shown_tables(), st.data())
def test_the_markdown_grid_counts_what_the_json_report_says(tables, data):
    axes, outcomes, base, head = tables
    report = report_of(matrix_of(axes), outcomes, base, head)
    doc = full_document(report)
    pair = data.draw(st.sampled_from(list(itertools.permutations(axes, 2))))
    text = markdown.render(report, 0, pair)
    if not doc["changed"]:
        assert "\u2b1c" not in text and "|---|" not in text  # no grid when nothing changed
        return
    counts, size = parsed_counts(text)
    assert counts == text_counts(doc, *pair)
    assert size == doc["cells"] // (len(axes[pair[0]]) * len(axes[pair[1]]))
    header = first_table(text)[0]
    assert header[1:] == [format_value(v) for v in axes[pair[1]]]
    default = first_table(markdown.render(report, 0))[0][0]
    assert default == "{} \u2193 {} \u2192".format(*best_by_entropy(doc))


def hostile_report(values: list[str], message: str) -> DiffReport:
    """Two axes of these values (the last 8 the columns: all shown), every third cell
    changed to an error with `message`."""
    half = len(values) - 8
    matrix = matrix_of({"a": values[:half], "b": values[half:]})
    outcomes = [Outcome(VALUE, 128), Outcome(ERROR, message), Outcome(VALUE, values[0])]
    head = [(n % 3) for n in range(matrix.size)]
    return report_of(matrix, outcomes, [0] * matrix.size, head)


def test_hostile_values_in_the_grid_render_as_text():
    plain = [f"plain{n}" for n in range(len(CORPUS))]
    pair = ("a", "b")
    hostile_md = markdown.render(hostile_report(CORPUS, " ".join(CORPUS)), 0, pair)
    plain_md = markdown.render(hostile_report(plain, "plain message"), 0, pair)
    assert live(hostile_md) == live(plain_md) and linked(hostile_md) == []
    half = len(CORPUS) - 8
    table = first_table(hostile_md)
    assert table[0][1:] == CORPUS[half:]  # every column value shown as itself
    assert [row[0] for row in table[1:]] == CORPUS[:half]
    lines = shown(hostile_md)
    assert any(CORPUS[half] in line for line in lines)


def big_report() -> tuple[DiffReport, Counter]:
    """The shipped 349,920-cell matrix, changed off sm90 and page_size 128 to one of eight
    long error messages by the sum of the three backends (hundreds of rules); and, from
    that construction, the changed cells per (attention, decode) backend pair as text."""
    matrix = load_matrix()
    long = "x" * 300
    outcomes = [Outcome(VALUE, 128)] + [Outcome(ERROR, f"E{n} {long}") for n in range(8)]
    attention, decode = (matrix.axes[n].values for n in range(2))
    head, counts = [], Counter()
    for n in range(matrix.size):
        a, d, p, _, _, _, gpu, page = matrix.cell(n)
        head.append(0 if gpu == 0 or page == 4 else 1 + (a + d + p) % 8)
        if head[-1]:
            counts[(format_value(attention[a]), format_value(decode[d]))] += 1
    return report_of(matrix, outcomes, [0] * matrix.size, head), counts


def test_the_comment_stays_under_githubs_size_on_the_whole_matrix():
    from harness.github.comment import MAX_BODY, body_for

    report, counts = big_report()
    doc = jsonfmt.document(report, 10)
    pair = ("attention_backend", "decode_attention_backend")
    body = body_for(read_document(doc), 10, None, pair)
    assert len(body) <= MAX_BODY
    grid = body[body.index("Changed cells by") : body.index("| # | cells |")]
    assert len(grid) < 30_000  # the grid is whole, before the rules the body cuts
    header, *rows = first_table(body)
    assert len(header) == 1 + 8 and len(rows) == 9  # 8 of 9 columns: one left out
    shown_counts, _ = parsed_counts(body)
    assert shown_counts == Counter({k: n for k, n in counts.items() if k[1] in header[1:]})
    (left,) = set(format_value(v) for v in oracle.BACKENDS) - set(header[1:])
    hidden = sum(n for (_, col), n in counts.items() if col == left)
    assert f"1 more column ({hidden:,} changed cells)" in grid


def test_rows_past_the_caps_are_counted_in_a_note():
    axes = {"r": [f"r{n}" for n in range(60)], "c": [f"c{n}" for n in range(12)], "x": [0, 1]}
    matrix = matrix_of(axes)
    outcomes = [Outcome(VALUE, 1), Outcome(VALUE, 2)]
    head = [1 if (n * 2654435761) % 7 < 3 else 0 for n in range(matrix.size)]
    report = report_of(matrix, outcomes, [0] * matrix.size, head)
    doc = full_document(report)
    text = markdown.render(report, 0, ("r", "c"))
    header, *rows = first_table(text)
    assert (len(header), len(rows)) == (1 + 8, 40)
    counts = text_counts(doc, "r", "c")
    hidden_rows = set(axes["r"]) - {row[0] for row in rows}
    hidden_cols = set(axes["c"]) - set(header[1:])
    by_row = sum(n for (r, _), n in counts.items() if r in hidden_rows)
    by_col = sum(n for (_, c), n in counts.items() if c in hidden_cols)
    assert (
        f"Not shown: 20 more rows ({by_row:,} changed cells) and 4 more columns "
        f"({by_col:,} changed cells)" in text
    )
    shown_counts, _ = parsed_counts(text)
    kept = {k: n for k, n in counts.items() if k[0] not in hidden_rows and k[1] not in hidden_cols}
    assert shown_counts == Counter(kept)
    row_totals = Counter()
    for (r, _), n in counts.items():
        row_totals[r] += n
    assert min(row_totals[r[0]] for r in rows) >= max(row_totals[r] for r in hidden_rows)


def test_diff_takes_grid_and_refuses_an_unknown_axis(history):
    done = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--format",
                   "markdown", "--grid", "use_mla,platform", "--no-cache")  # fmt: skip
    assert done.code == 1, done.err
    counts, size = parsed_counts(done.out)
    assert counts == Counter({("false", "sm100"): len(oracle.changed_between(False, True))})
    assert size == 349_920 // 6
    bad = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--format",
                  "markdown", "--grid", "use_mla,gpu")  # fmt: skip
    assert bad.code == 2 and bad.out == "" and len(bad.err.strip().splitlines()) == 1
    assert "'gpu'" in bad.err and "prefill_cuda_graph" in bad.err


def test_comment_takes_grid_and_refuses_an_unknown_axis(history, tmp_path):
    done = sample_report(history)
    report = tmp_path / "comment.json"
    report.write_text(done.out)
    argv = ["comment", "--repo-slug", "octo/sglang", "--pr", "7", "--report", str(report),
            "--dry-run"]  # fmt: skip
    shown_ = run_cli(*argv, "--grid", "platform,speculative_eagle_topk")
    assert shown_.code == 0, shown_.err
    counts, _ = parsed_counts(shown_.out)
    changed = oracle.changed_between(False, True)
    cells = [c for c in oracle.all_cells() if oracle.key(c) in changed]
    expected = Counter((c["platform"], format_value(c["speculative_eagle_topk"])) for c in cells)
    assert counts == expected
    bad = run_cli(*argv, "--grid", "platform,topk")
    assert bad.code == 2 and len(bad.err.strip().splitlines()) == 1 and "'topk'" in bad.err


def test_a_report_read_back_from_the_cache_draws_the_same_grid(fixture):
    from harness.report.store import decode_report, encode_report

    again = decode_report(encode_report(fixture), fixture.matrix, fixture.base, fixture.head)
    for pair in (None, ("page_size", "attention_backend")):
        assert build_grid(again, pair) == build_grid(fixture, pair)


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda doc: doc["summary"].append(doc["summary"][0]), "do not add up"),
        (lambda doc: doc["summary"][0].update(cells=7), "not the size of its cube"),
        (lambda doc: doc["summary"][0]["where"].update(platform=["sm999"]), "does not have"),
        (lambda doc: doc["summary"][0]["where"].update(gpu=["sm100"]), "does not have"),
        (lambda doc: doc.update(cells=12), "product of the axes"),
    ],
)
def test_a_document_that_does_not_add_up_draws_no_grid(history, damage, said):
    done = sample_report(history)
    doc = json.loads(done.out)
    damage(doc)
    with pytest.raises(ValueError, match=said):
        grid_of_document(read_document(doc))
    lines = markdown.grid_lines(read_document(doc), None)
    assert len(lines) == 2 and lines[1].startswith("(No grid: ") and "|" not in lines[1]


def test_an_inferred_diff_in_parts_draws_each_part_over_the_axes_asked(history):
    argv = ["diff", "#30835^", "#30835", "--repo", history.repo(), "--matrix", "inferred",
            "--max-cells", "5000", "--format", "markdown", "--sample", "0"]  # fmt: skip
    done = run_cli(*argv, "--grid", "use_mla,platform")
    assert done.code == 1, done.err
    assert "parts:" in done.out  # split: one part per changed pass
    assert "Changed cells by `use_mla` (rows) and `platform` (columns)." in done.out
    counts, _ = parsed_counts(done.out)
    assert set(counts) == {("false", "sm100")}
    bad = run_cli(*argv, "--grid", "use_mla,gpu")
    assert bad.code == 2 and len(bad.err.strip().splitlines()) == 1 and "'gpu'" in bad.err


# --- a lying document: no hang, no injection -----------------------------------------


def lying(doc: dict[str, Any], axes: dict[str, list[Any]], rules: list[dict], changed: int):
    """`doc` with these axes and rules, its cells their product and its changed count."""
    doc.update(axes=axes, summary=rules, changed=[], changed_count=changed)
    doc["cells"] = math.prod(len(v) for v in axes.values())
    return doc


LIES = {  # each took minutes to draw (or to give up on) before
    "two axes of 3,000 values, one rule for every cell": lambda doc: lying(
        doc, {"a": list(range(3000)), "b": list(range(3000))},
        [{"where": {}, "cells": 9_000_000, "transition": "x"}], 9_000_000),
    "a third axis of a million values": lambda doc: lying(
        doc, {"a": list(range(60)), "b": list(range(60)), "c": list(range(1_000_000))},
        [{"where": {}, "cells": 3_600_000_000, "transition": "x"}], 3_600_000_000),
    "20,000 copies of one rule, counted as changed cells": lambda doc: lying(
        doc, {"a": list(range(60)), "b": list(range(60))},
        [{"where": {}, "cells": 3600, "transition": "x"}] * 20_000, 72_000_000),
    "5,000 axes of one value and 20,000 rules": lambda doc: lying(
        doc, {**{f"a{n}": [0] for n in range(5000)}, "b": [0, 1]},
        [{"where": {"b": [1]}, "cells": 1, "transition": "x"}] * 20_000, 20_000),
}  # fmt: skip


@pytest.mark.parametrize("lie", list(LIES))
def test_a_lying_document_draws_no_grid_and_takes_no_time(history, tmp_path, lie):
    import time

    from harness.github.comment import body_for

    done = sample_report(history)
    doc = LIES[lie](json.loads(done.out))
    start = time.process_time()  # this process's CPU: what the rendering costs, whatever the load
    doc = read_document(doc)
    lines = markdown.grid_lines(doc, None)
    assert len(lines) == 2 and lines[1].startswith("(No grid: "), lines
    try:  # the whole comment, as harness comment makes it
        body_for(doc, 10, None)
    except HarnessError as exc:  # or one line, exit 2: an axis too long for a rule table
        assert "more than 62 values" in str(exc)
    assert time.process_time() - start < 10


def test_an_unknown_grid_axis_lists_the_documents_axes_on_one_line(history, tmp_path):
    """The axis names a document holds are hostile: the error that lists them (printed in
    the comment job, where a line starting `::` is a workflow command) is one line, with
    no control character, and lists a few of thousands."""
    done = sample_report(history)
    doc = json.loads(done.out)
    evil = "x\n::error title=pwned::injected\r\n::add-mask::x\u2028::notice::y\x1b[31m\x00"
    doc["axes"][evil] = [1]
    doc["axes"].update({f"filler{n}": [0] for n in range(2000)})
    for item in doc["changed"]:  # a well-formed report: every cell has every axis
        item["cell"].update({evil: 1} | {f"filler{n}": 0 for n in range(2000)})
    report = tmp_path / "comment.json"
    report.write_text(json.dumps(doc))
    bad = run_cli("comment", "--repo-slug", "octo/sglang", "--pr", "7", "--report",
                  str(report), "--dry-run", "--grid", "platform,gpu")  # fmt: skip
    assert bad.code == 2 and bad.out == "", bad.err
    assert len(bad.err.splitlines()) == 1 and bad.err.endswith("\n")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f\u2028\u2029]", bad.err)
    assert "'gpu'" in bad.err and "x ::error title=pwned::injected" in bad.err
    assert "and 1,969 more" in bad.err  # 8 + 1 + 2,000 axes, 40 named and len(bad.err) < 2000


def test_a_document_whose_rule_lists_a_long_axis_is_one_line_quickly(history, tmp_path):
    """An axis of 200,000 values and a rule naming 200,000 values it does not have: the
    rule table matched each against each (hours); now one line, exit 2."""
    import time

    done = sample_report(history)
    doc = lying(json.loads(done.out), {"a": list(range(200_000)), "b": [0, 1]},
                [{"where": {"a": ["x"] * 200_000}, "cells": 400_000, "transition": "x"}],
                400_000)  # fmt: skip
    report = tmp_path / "comment.json"
    report.write_text(json.dumps(doc))
    start = time.process_time()  # this process's CPU (the comment is made in-process)
    bad = run_cli("comment", "--repo-slug", "octo/sglang", "--pr", "7", "--report",
                  str(report), "--dry-run")  # fmt: skip
    assert time.process_time() - start < 10
    assert bad.code == 2 and bad.out == "" and len(bad.err.splitlines()) == 1, bad.err
    assert "more than 62 values" in bad.err
