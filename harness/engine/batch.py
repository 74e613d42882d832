"""Several jobs of one revision's code in one worker, one after the other.

A diff split into parts (`--matrix inferred`) evaluates each part's passes
at both revisions, then searches each part's blind spots: dozens of small
jobs, each paying a worker's start, its confinement and its unpickling for a
few milliseconds of work. A `Batch` gathers one side's jobs and runs them in
one worker, each as it would run alone (an evaluation with its own loaded
modules, recorder and runner; a search with its own budget); one that cannot
be done is that job's reason, not the batch's. The two revisions' evaluations
and searches never share a worker: only code of one revision runs in such a
batch, as the passes of one pipeline already run in one evaluation (a trace
job holds both revisions' code already, in any diff; traces share a batch of
their own).

The batch runs under the limits of one job. When it overruns them, or its
answers together take more than half of what one worker may send (each
within its own budgets, eight big tables are not), each of its jobs runs
alone, under its own limits.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.engine.limits import Limits
from harness.engine.plain import Malformed, within_size
from harness.engine.worker import MAX_HEADER, MAX_PAYLOAD, Decode, Encode, start
from harness.errors import Unevaluable

Job = tuple[Callable[[], Any], Encode, Decode]  # what `harness.engine.worker.start` takes


@dataclass
class Batch:
    """One revision's jobs, gathered, then run in one worker (`submit`)."""

    limits: Limits
    jobs: list[Job] = field(default_factory=list)
    running: Any = None

    def add(self, work: Callable[[], Any], encode: Encode, decode: Decode) -> Batched:
        """A job to run in the batch; its answer, when the batch has run."""
        self.jobs.append((work, encode, decode))
        return Batched(self, len(self.jobs) - 1)

    def submit(self) -> None:
        """Start the worker (once): what it answers is each job's, in order."""
        if self.running is None and self.jobs:
            work = functools.partial(_run_each, [(w, e) for w, e, _ in self.jobs])
            decode = functools.partial(_decode_each, decodes=[d for _, _, d in self.jobs])
            self.running = start(work, _encode_each, decode, self.limits)

    def answers(self) -> list[Any]:
        self.submit()
        return self.running.result()


@dataclass
class Batched:
    """One job of a batch: `.result()` as `start(...).result()` gives for it alone."""

    batch: Batch
    index: int
    own: Any = None  # the job alone, once the batch overran

    def result(self) -> Any:
        try:
            answer = self.batch.answers()[self.index]
        except Unevaluable:  # the batch overran together: this one alone, under its limits
            if self.own is None:
                self.own = start(*self.batch.jobs[self.index], self.batch.limits)
            return self.own.result()
        if isinstance(answer, Unevaluable):
            raise answer
        return answer


def started(job: Job, limits: Limits, batch: Batch | None) -> Any:
    """The job joining `batch`, or (None) started alone in its own worker."""
    return start(*job, limits) if batch is None else batch.add(*job)


def _run_each(jobs: list[tuple[Callable[[], Any], Encode]]) -> list:
    """In the worker: each job's answer as its encoder writes it, or the reason it
    cannot be made (past its own budgets, say)."""
    done: list = []
    for work, encode in jobs:
        try:
            done.append(encode(work()))
        except Unevaluable as exc:
            done.append(exc)
    return done


def _encode_each(done: list) -> tuple[list, bytes]:
    headers, payloads = [], []
    for item in done:
        if isinstance(item, Unevaluable):
            headers.append({"reason": str(item), "missing": item.missing})
            continue
        header, payload = item
        headers.append({"answer": header, "bytes": len(payload)})
        payloads.append(payload)
    payload = b"".join(payloads)
    if len(payload) > MAX_PAYLOAD // 2:  # each job within its budgets, not all together
        raise Unevaluable(f"the batch's answers take {len(payload):,} bytes: each alone")
    return within_size(headers, "the batch's answers", MAX_HEADER // 2), payload


def _decode_each(headers: Any, payload: bytes, decodes: list[Decode]) -> list:
    """Each job's answer (checked by its own decoder, as one alone is) or Unevaluable, in
    order; each takes the bytes of the payload its header counts."""
    if type(headers) is not list or len(headers) != len(decodes):
        raise Malformed("not one answer per job of the batch")
    answers, at = [], 0
    for header, decode in zip(headers, decodes, strict=True):
        if type(header) is not dict:
            raise Malformed("an answer of the batch is not an object")
        if "answer" in header:
            size = header.get("bytes")
            if type(size) is not int or size < 0 or at + size > len(payload):
                raise Malformed("the batch's payload ends before a job's bytes")
            answers.append(decode(header["answer"], payload[at : at + size]))
            at += size
            continue
        reason, missing = header.get("reason"), header.get("missing")
        if type(reason) is not str or not (missing is None or type(missing) is str):
            raise Malformed("a job's reason is not text")
        answers.append(Unevaluable(reason, missing))
    if at != len(payload):
        raise Malformed("the batch's payload runs past its jobs")
    return answers
