"""Several jobs in one worker: each answers as it would alone, and one that cannot be done,
or a batch that overruns, costs no other its answer."""

from __future__ import annotations

import os
import time
from array import array

import pytest

from harness.closure.extract import extract_closure
from harness.closure.modules import RevisionFiles
from harness.closure.pieces import SourceCache
from harness.engine.batch import Batch, _decode_each, _encode_each
from harness.engine.branches import TEST, TRUE, sites_of
from harness.engine.explore import Evaluation, _encode, evaluation_job
from harness.engine.limits import Limits
from harness.engine.outcome import CODE_TYPE, VALUE, Outcome, OutcomeTable
from harness.engine.plain import Malformed
from harness.engine.sandbox import load_order
from harness.engine.whatif import Question, start_asking
from harness.engine.worlds.sglang import FACTS
from harness.errors import Unevaluable
from harness.scan.versions import bind_matrix
from tests.unit.engine.test_explore import oracle, outcomes
from tests.unit.tables import small_matrix

SOURCES = {
    "threshold": "def target(view):\n    if view.a0 > 1:\n        return {'page_size': 64}\n"
    "    return {}\n",
    "pair": "def target(view):\n    if view.a0 == view.a1:\n        return {'page_size': 1}\n"
    "    if view.a1 == 2:\n        raise ValueError('two')\n    return {}\n",
    "constant": "def target(view):\n    return {'page_size': 16}\n",
}
UNBOUND = "def target(view):\n    return {'page_size': view.no_such_input}\n"
LOOP = "def target(view):\n    while True:\n        pass\n"


def closure_of(source: str, matrix):
    files = RevisionFiles.of({"m.py": source}, "m.py")
    return extract_closure(SourceCache(), files, "target", bind_matrix(matrix).names, facts=FACTS)


def add(batch: Batch, source: str, matrix):
    closure = closure_of(source, matrix)
    return batch.add(*evaluation_job(closure, matrix, bind_matrix(matrix), "rev", False))


def test_each_evaluation_of_a_batch_answers_as_plain_python(tmp_path):
    matrices = {name: small_matrix([3, 3]) for name in SOURCES}
    batch = Batch(Limits())
    items = {name: add(batch, source, matrices[name]) for name, source in SOURCES.items()}
    batch.submit()
    for name, item in items.items():
        table = item.result().table
        assert outcomes(table, matrices[name]) == oracle(SOURCES[name], matrices[name]), name


def test_an_item_that_cannot_be_evaluated_is_that_items_reason_only():
    matrix = small_matrix([2])
    batch = Batch(Limits())
    good, bad = add(batch, SOURCES["threshold"], matrix), add(batch, UNBOUND, matrix)
    with pytest.raises(Unevaluable, match="no_such_input"):
        bad.result()
    assert outcomes(good.result().table, matrix) == oracle(SOURCES["threshold"], matrix)


def test_a_batch_that_overruns_runs_each_item_alone_under_its_own_limit():
    """The loop spends the batch's one second: the batch is killed, then each item runs
    alone; the others answer, the loop alone runs past its own limit."""
    matrix = small_matrix([2])
    batch = Batch(Limits(seconds=1.0))
    first, loop = add(batch, SOURCES["constant"], matrix), add(batch, LOOP, matrix)
    last = add(batch, SOURCES["threshold"], matrix)
    assert outcomes(first.result().table, matrix) == oracle(SOURCES["constant"], matrix)
    assert outcomes(last.result().table, matrix) == oracle(SOURCES["threshold"], matrix)
    with pytest.raises(Unevaluable, match="ran past"):
        loop.result()


def _as_is(header, payload):
    return header, payload


@pytest.mark.parametrize(
    "headers, payload",
    [
        ([], b""),  # fewer answers than jobs
        ([{"reason": 3, "missing": None}], b""),  # a reason that is not text
        (["text"], b""),  # an answer that is not an object
        ([{"reason": "r", "missing": None}], b"\0\0\0\0"),  # bytes left over
        ([{"answer": 1, "bytes": 5}], b"\0\0\0\0"),  # more bytes than were sent
        ([{"answer": 1, "bytes": -1}], b""),  # a count that is no count
        ([{"answer": 1, "bytes": "4"}], b"\0\0\0\0"),
    ],
    ids=["count", "reason", "shape", "leftover", "short", "negative", "text"],
)
def test_a_malformed_batch_answer_is_refused(headers, payload):
    with pytest.raises(Malformed):
        _decode_each(headers, payload, decodes=[_as_is])


def test_each_job_decodes_the_bytes_its_header_counts():
    headers = [{"answer": "a", "bytes": 2}, {"reason": "no", "missing": None},
               {"answer": "b", "bytes": 0}, {"answer": "c", "bytes": 3}]  # fmt: skip
    first, second, third, fourth = _decode_each(headers, b"xyabc", decodes=[_as_is] * 4)
    assert (first, third, fourth) == (("a", b"xy"), ("b", b""), ("c", b"abc"))
    assert isinstance(second, Unevaluable) and str(second) == "no"


def test_answers_within_their_budgets_but_too_big_together_send_each_alone():
    """Three tables of 12 MB of outcomes each: every one within its own budget, together
    past the batch's share of what one worker may send, so the batch says so (and its
    items then run alone) instead of sending an answer the parent cuts off."""
    outcomes = [Outcome(VALUE, f"{n}" + "A" * (3 << 20)) for n in range(4)]  # 12 MB
    table = OutcomeTable(outcomes, array(CODE_TYPE, [0, 1, 2, 3]))
    encoded = _encode(Evaluation(table, calls=4))
    _encode_each([encoded])  # one is within every cap
    with pytest.raises(Unevaluable, match="the batch's answers"):
        _encode_each([encoded] * 3)


def test_searches_in_a_batch_answer_as_each_alone():
    """Two blind-spot searches of one revision in one worker: each finds what it finds
    alone. The condition `view.a0 > 1` holds on no cell of a0 in {0, 1}: the input that
    takes it true is a0, at a value above 1."""
    matrix = small_matrix([2, 2])
    questions = []
    for source in (SOURCES["threshold"], SOURCES["pair"]):
        closure = closure_of(source, matrix)
        tests = [n for n, s in enumerate(sites_of(closure, load_order)) if s.kind == TEST]
        questions.append((closure, [Question(tests[0], TRUE, 0)]))
    alone = [start_asking(c, matrix, "rev", q).result() for c, q in questions]
    batch = Batch(Limits())
    together = [start_asking(c, matrix, "rev", q, Limits(), batch) for c, q in questions]
    batch.submit()
    assert [item.result() for item in together] == alone
    (threshold,) = alone[0]
    assert threshold.name == "a0" and threshold.value > 1 and threshold.was == 0


def test_a_batch_wanted_later_runs_at_a_lower_priority():
    """A worker whose answer is wanted after others' yields the CPU to them: its niceness
    is its limits' `behind` above the harness's own, whatever that is (read while it
    loops, up to its one-second limit)."""
    matrix = small_matrix([2])
    batch = Batch(Limits(seconds=1.0, behind=5))
    looping = add(batch, LOOP, matrix)
    batch.submit()
    pid, wanted = batch.running.child.pid(), min(19, os.nice(0) + 5)
    deadline = time.monotonic() + 30  # the child lowers its own priority once it has its job
    while os.getpriority(os.PRIO_PROCESS, pid) != wanted and time.monotonic() < deadline:
        time.sleep(0.01)
    assert os.getpriority(os.PRIO_PROCESS, pid) == wanted
    with pytest.raises(Unevaluable, match="ran past"):
        looping.result()
