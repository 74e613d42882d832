"""Several evaluations of one revision's code in one worker, one after the other.

A diff split into parts (`--matrix inferred`) evaluates each part's passes
at both revisions: dozens of small evaluations, each paying a worker's
start, its confinement and its unpickling for a few milliseconds of work.
A `Batch` gathers one side's evaluations and runs them in one worker, each
as it would run alone (`harness.engine.explore._evaluate`: its own loaded
modules, recorder and runner); one that cannot be evaluated is that item's
reason, not the batch's. The two revisions never share a worker: only code
of one revision runs in a batch, as the passes of one pipeline already run
in one evaluation.

The batch runs under the limits of one evaluation. When it overruns them, or
its answers together take more than half of what one worker may send (each
within its own budgets, eight big tables are not), each of its evaluations
runs alone, under its own limits.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from harness.engine.explore import (
    Evaluation,
    _decode,
    _encode,
    _evaluate,
    evaluation_mode,
    start_evaluation,
)
from harness.engine.limits import Limits
from harness.engine.plain import Malformed, within_size
from harness.engine.worker import MAX_HEADER, MAX_PAYLOAD, start
from harness.errors import Unevaluable

ITEM_BYTES = 4  # an outcome code's size in the payload (CODE_TYPE "I")


@dataclass
class Batch:
    """One revision's evaluations, gathered, then run in one worker (`submit`)."""

    limits: Limits
    items: list[tuple] = field(default_factory=list)  # `_evaluate`'s arguments, each
    alone: list[functools.partial] = field(default_factory=list)  # each as its own job
    running: Any = None

    def add(self, closure, matrix, bound, label: str, every: bool, fresh: bool) -> Batched:
        """An evaluation to run in the batch; its answer, when the batch has run."""
        mode, cube = evaluation_mode(closure, every, fresh), matrix.full_masks()
        self.items.append((closure, matrix, bound, label, mode, cube))
        args = (closure, matrix, bound, label, every, cube, self.limits, fresh)
        self.alone.append(functools.partial(start_evaluation, *args))
        return Batched(self, len(self.items) - 1)

    def submit(self) -> None:
        """Start the worker (once): what it answers is each item's, in order."""
        if self.running is None and self.items:
            sizes = [item[1].size for item in self.items]
            work = functools.partial(_evaluate_each, self.items)
            decode = functools.partial(_decode_each, sizes=sizes)
            self.running = start(work, _encode_each, decode, self.limits)

    def answers(self) -> list[Evaluation | Unevaluable]:
        self.submit()
        return self.running.result()


@dataclass
class Batched:
    """One evaluation of a batch: `.result()` as `start_evaluation(...).result()` gives."""

    batch: Batch
    index: int
    own: Any = None  # its job alone, once the batch overran

    def result(self) -> Evaluation:
        try:
            answer = self.batch.answers()[self.index]
        except Unevaluable:  # the batch overran together: this one alone, under its limits
            if self.own is None:
                self.own = self.batch.alone[self.index]()
            return self.own.result()
        if isinstance(answer, Unevaluable):
            raise answer
        return answer


def _evaluate_each(items: list[tuple]) -> list[Evaluation | Unevaluable]:
    """In the worker: each evaluation, or the reason it cannot be made."""
    answers: list[Evaluation | Unevaluable] = []
    for item in items:
        try:
            answers.append(_evaluate(*item))
        except Unevaluable as exc:
            answers.append(exc)
    return answers


def _encode_each(answers: list[Evaluation | Unevaluable]) -> tuple[list, bytes]:
    headers, payloads = [], []
    for answer in answers:
        if not isinstance(answer, Unevaluable):
            try:
                header, payload = _encode(answer)
            except Unevaluable as exc:  # past the outcome budgets: this item's reason
                answer = exc
            else:
                headers.append({"evaluation": header})
                payloads.append(payload)
                continue
        headers.append({"reason": str(answer), "missing": answer.missing})
    payload = b"".join(payloads)
    if len(payload) > MAX_PAYLOAD // 2:  # each item within its budgets, not all together
        raise Unevaluable(f"the batch's tables take {len(payload):,} bytes: each alone")
    return within_size(headers, "the batch's answers", MAX_HEADER // 2), payload


def _decode_each(headers: Any, payload: bytes, sizes: list[int]) -> list:
    """Each item's Evaluation (checked as one alone is) or Unevaluable, in order."""
    if type(headers) is not list or len(headers) != len(sizes):
        raise Malformed("not one answer per evaluation of the batch")
    answers, at = [], 0
    for header, size in zip(headers, sizes, strict=True):
        if type(header) is not dict:
            raise Malformed("an answer of the batch is not an object")
        if "evaluation" in header:
            end = at + ITEM_BYTES * size
            if end > len(payload):
                raise Malformed("the batch's codes end early")
            answers.append(_decode(header["evaluation"], payload[at:end], size))
            at = end
            continue
        reason, missing = header.get("reason"), header.get("missing")
        if type(reason) is not str or not (missing is None or type(missing) is str):
            raise Malformed("an item's reason is not text")
        answers.append(Unevaluable(reason, missing))
    if at != len(payload):
        raise Malformed("the batch's codes run past its evaluations")
    return answers
