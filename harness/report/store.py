"""Diff reports on disk: a diff of two commits asked again is read, not made again.

A report depends on the two commits (their ids: a commit never changes), the
matrix file and its world, the cells selected (--where), how tables are made
(--exhaustive, the worker's limits), the names the user gave the revisions
(messages quote them), and harness's own code; the key hashes all of them.
The report is stored as plain data in a fixed shape (no classes: values the
evaluated code returned are data, never instructions), in the same directory
as the outcome tables. Reports of a revision that could not be evaluated are
not kept: they cost nothing to make again, and a time limit may fall
differently next time.
"""

from __future__ import annotations

import hashlib
import pickle
from array import array
from dataclasses import astuple
from pathlib import Path
from typing import Any

from harness.engine.events import Event
from harness.engine.outcome import CODE_TYPE, Outcome
from harness.gitio import COMMIT, Revision
from harness.matrix.model import Matrix
from harness.report.model import Condition, DiffReport, RuleView
from harness.scan.because import Difference, Place
from harness.scan.cache import DiskCache, engine_digest, plain, plain_load
from harness.scan.compare import Comparison, Rule
from harness.scan.coverage import PassCoverage
from harness.scan.spots import BlindSpot

MAGIC = b"harness-report-3\n"
SHAPE = 3  # the stored shape's version: part of the key


def report_key(
    matrix: Matrix,
    base: Revision,
    head: Revision,
    where: tuple[int, ...] | None,
    how: tuple,
) -> str | None:
    """The key of the diff of two commits (None: a side is not a commit, so no key).
    `how`: whatever else decides the tables (exhaustive, the worker's limits)."""
    if base.kind != COMMIT or head.kind != COMMIT:
        return None
    parts = (engine_digest(), SHAPE, matrix.world, matrix.digest, base.sha, head.sha,
             base.label, head.label, where, how)  # fmt: skip
    return hashlib.sha256(repr(parts).encode()).hexdigest()


class ReportCache(DiskCache):
    """Get and put diff reports by key; `directory=None` keeps nothing."""

    def __init__(self, directory: Path | DiskCache | None) -> None:
        super().__init__(directory, "reports", MAGIC)

    def get(self, key: str, matrix: Matrix, base: Revision, head: Revision) -> DiffReport | None:
        payload = self.read(key)
        if payload is None:
            return None
        try:
            stored_key, data = plain_load(payload)
            if stored_key != key:
                raise ValueError("another key")
            report = decode_report(data, matrix, base, head)
        except Exception:  # anything a damaged file can raise: make it again
            return self.damaged(key)
        self.hits += 1
        return report

    def put(self, key: str, report: DiffReport) -> None:
        if report.notes:  # a side could not be evaluated: nothing worth keeping
            return
        data = encode_report(report)
        if plain(data):
            self.write(key, pickle.dumps((key, data), protocol=5))


def encode_report(report: DiffReport) -> dict[str, Any]:
    """The report as builtin values and containers, in a fixed shape."""
    comparison = report.comparison
    return {
        "outcomes": [_outcome(o) for o in comparison.outcomes],
        "indices": comparison.indices.tobytes(),
        "base_codes": comparison.base_codes.tobytes(),
        "head_codes": comparison.head_codes.tobytes(),
        "rules": [(r.masks, r.cells, _outcome(r.base), _outcome(r.head)) for r in comparison.rules],
        "views": [_view(v) for v in report.rules],
        "coverage": {
            side: [(c.name, c.cells, c.why) for c in passes]
            for side, passes in report.coverage.items()
        },
        "blind_spots": [_spot(s) for s in report.blind_spots],
        **{name: getattr(report, name) for name in SIDE_FACTS},
    }


SIDE_FACTS = ("notes", "lines", "skipped", "every_cell", "defaults", "unguarded", "unused_guards",
              "unseen")  # fmt: skip


def decode_report(data: dict, matrix: Matrix, base: Revision, head: Revision) -> DiffReport:
    """The report `encode_report` stored, checked against the matrix (raises on anything
    that is not what it wrote)."""
    outcomes = [Outcome(*o) for o in data["outcomes"]]
    arrays = [_array("L", data["indices"])]
    arrays += [_array(CODE_TYPE, data[k]) for k in ("base_codes", "head_codes")]
    if len({len(a) for a in arrays}) != 1 or any(i >= matrix.size for i in arrays[0]):
        raise ValueError("cells outside the matrix")
    if any(c >= len(outcomes) for a in arrays[1:] for c in a):
        raise ValueError("codes past the outcomes")
    rules = [Rule(tuple(m), n, Outcome(*b), Outcome(*h)) for m, n, b, h in data["rules"]]
    comparison = Comparison(outcomes, *arrays, rules)
    views = [_view_from(v) for v in data["views"]]
    coverage = {s: tuple(PassCoverage(*c) for c in cs) for s, cs in data["coverage"].items()}
    facts = {name: data[name] for name in SIDE_FACTS}
    spots = [_spot_from(s) for s in data["blind_spots"]]
    return DiffReport(matrix, base, head, comparison, rules=views, coverage=coverage,
                      blind_spots=spots, **facts)  # fmt: skip


def _spot(spot: BlindSpot) -> tuple:
    return astuple(spot)


def _spot_from(item: tuple) -> BlindSpot:
    spot = BlindSpot(*item)
    texts = [v for n, v in enumerate(astuple(spot)) if n != 2]  # all but the line
    if type(spot.line) is not int or not all(type(v) is str for v in texts):
        raise ValueError("not a blind spot")
    return spot


def _outcome(outcome: Outcome) -> tuple[str, Any]:
    return (outcome.kind, outcome.value)


def _array(kind: str, raw: bytes) -> array:
    found = array(kind)
    found.frombytes(raw)
    return found


def _view(view: RuleView) -> tuple:
    conditions = [(c.axis, c.values, c.negated) for c in view.conditions]
    because = [
        ("text", item)
        if isinstance(item, str)
        else ("difference", _event(item.base), _event(item.head))
        for item in view.because
    ]
    at = None if view.because_at is None else astuple(view.because_at)
    return (view.where, conditions, view.cells, view.transition, because, view.because_more, at)


def _view_from(item: tuple) -> RuleView:
    where, conditions, cells, transition, because, more, at = item
    reasons = tuple(
        b[1] if b[0] == "text" else Difference(_event_from(b[1]), _event_from(b[2]))
        for b in because
    )
    shown = tuple(Condition(a, tuple(v), n) for a, v, n in conditions)
    if type(more) is not int:
        raise ValueError("not a count of reasons")
    return RuleView(where, shown, cells, transition, reasons, more, _place_from(at))


def _place_from(item: tuple | None) -> Place | None:
    if item is None:
        return None
    side, path, line = item
    if side not in ("base", "head") or type(path) is not str or type(line) is not int:
        raise ValueError("not a place")
    return Place(side, path, line)


def _event(event: Event | None) -> tuple | None:
    if event is None:
        return None
    return (event.kind, event.line, event.source, event.key, event.value)


def _event_from(item: tuple | None) -> Event | None:
    return None if item is None else Event(*item)
