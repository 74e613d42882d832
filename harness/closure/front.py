"""The front door of extraction for one run: a matrix's target read from a revision's files.

Everything a run extracts goes through one `Extractor`: the closure of the target
function (or each pass's), the registered passes, the order the entry point runs
them in, and the defaults the view's class declares. What the files alone decide
is memoized by the identity of every file it read (`texts_memo`), so a scan's
commits, which mostly leave those files alone, do not decide it again; the
parsed pieces live in the run's `SourceCache`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

from harness.closure.defaults import NO_DEFAULTS, Defaults, class_defaults, input_defaults
from harness.closure.extract import (
    Closure,
    Pipeline,
    ViewClass,
    extract_closure,
    extract_pipeline,
    with_defaults,
)
from harness.closure.facts import WorldFacts
from harness.closure.modules import RevisionFiles
from harness.closure.order import PassOrder, pass_order
from harness.closure.pieces import SourceCache
from harness.closure.survey import PassSurvey, registered, survey_pass
from harness.errors import Absent, Unevaluable
from harness.matrix.model import ALL_PASSES, RUN_ORDER, Matrix

T = TypeVar("T")


class Extractor:
    """The target's code in a revision's files, for one matrix of one run.

    `names`: the names the world binds; `view`: where the world says the view's
    methods are defined (None: nowhere); `facts`: how the world's project lays out its
    code (the decorator that registers a pass, the functions that run the passes, where
    its inputs declare their defaults)."""

    def __init__(
        self, matrix: Matrix, names: Any, view: ViewClass | None, facts: WorldFacts
    ) -> None:
        self.matrix, self.names, self.view, self.facts = matrix, names, view, facts
        self.sources = SourceCache()  # parsed pieces and closures, for this run only
        self.memos: dict[str, tuple[tuple[tuple, Any], ...]] = {}  # see `texts_memo`
        self.kept = 1  # memos kept per name: a scan's last commit's (a diff's two: `sharing`)
        self.made: tuple | None = None  # (last closure, its defaults, the two as one)

    def sharing(self, other: Extractor) -> Extractor:
        """This extractor reading what `other` read: its parsed pieces and the memos of
        what the files alone decide (a diff of several matrices goes back and forth
        between two revisions: two memos kept per name)."""
        self.sources, self.memos, self.kept = other.sources, other.memos, 2
        return self

    def extract(self, files: RevisionFiles) -> Closure | Pipeline:
        """The target's closure (or each pass's), with the defaults the view's class
        declares; raises Absent or Unevaluable."""
        closure, defaults = self._extract(files), self.defaults(files)
        last = self.made
        if last is not None and last[0] is closure and last[1] is defaults:
            return last[2]  # a scan's commits mostly reuse the last closure as it was
        self.made = (closure, defaults, with_defaults(closure, defaults))
        return self.made[2]

    def _extract(self, files: RevisionFiles) -> Closure | Pipeline:
        target, names, hint = self.matrix.target, self.names, self.matrix.edit_hint
        pipeline = partial(extract_pipeline, chosen=self.matrix.bindings, facts=self.facts)
        if target.passes in (ALL_PASSES, RUN_ORDER):
            passes = self.texts_memo("registered", files, self._registered)
            if not passes:
                raise Absent(
                    f"no function is registered with @{self.facts.register} in {target.path}"
                )
            if target.passes == RUN_ORDER:
                order = self.texts_memo("order", files, partial(self.run_order, passes=passes))
                found = pipeline(self.sources, files, order.passes, names, hint, self.view)
                return replace(found, guarded=order.guarded)
            return pipeline(self.sources, files, passes, names, hint, self.view)
        if target.pipeline:
            return pipeline(self.sources, files, target.passes, names, hint, self.view)
        if target.entry:
            return self._entry(files)
        (function,) = target.passes
        return extract_closure(
            self.sources, files, function, names, hint, self.view, self.matrix.bindings,
            facts=self.facts,
        )  # fmt: skip

    def _entry(self, files: RevisionFiles) -> Closure:
        """The closure of the entry in the first of the target's files the revision has (the
        entry's, then each of `otherwise:`); raises Absent naming each file missing. A file
        that is there but does not define its entry as a function (it imports or rebinds
        the name) is the revision's answer, not a reason to run another entry."""
        names, hint = frozenset(self.names), self.matrix.edit_hint
        if self.facts.class_name is not None:  # the world's, in an entry
            names |= {self.facts.class_name}
        missing = []
        for choice in self.matrix.target.alternatives:
            if not files.exists(choice.path):
                missing.append(choice.path)
                continue
            with files.targeting(choice.path):
                try:
                    return extract_closure(
                        self.sources, files, choice.passes[0], names, hint, self.view,
                        self.matrix.bindings, facts=self.facts, defer=True,
                    )  # fmt: skip
                except Absent as exc:
                    raise Absent("; ".join([*_not_there(missing), str(exc)])) from None
        raise Absent("; ".join(_not_there(missing)))

    def texts_memo(
        self, name: str, files: RevisionFiles, compute: Callable[[RevisionFiles], T]
    ) -> T:
        """`compute(files)`, made again only when a file it read (or found missing) differs
        from each of the last `kept` times: a scan's commits mostly leave those files
        alone, and a diff of several matrices goes back and forth between two revisions."""
        memos = self.memos.get(name, ())
        for seen, found in memos:
            if all(files.ident(path) == ident for path, ident in seen):
                return found
        read: list[str] = []

        def record(path: str) -> str | None:
            read.append(path)
            return files.read(path)

        def ident(path: str) -> object:
            read.append(path)
            return files.ident(path)

        def edit(path: str, base: str):
            read.append(path)
            return files.edit(path, base)

        found = compute(RevisionFiles(record, files.target, files.roots, ident, edit))
        seen = tuple((path, files.ident(path)) for path in dict.fromkeys(read))
        self.memos[name] = ((seen, found), *memos[: self.kept - 1])
        return found

    def _registered(self, files: RevisionFiles) -> tuple[str, ...]:
        return tuple(self.registered(files))

    def registered(self, files: RevisionFiles) -> list[str]:
        """The functions the target file registers as passes, in file order; raises
        Absent or Unevaluable."""
        return registered(self.sources, files, self.facts.register)

    def surveys(self, files: RevisionFiles) -> list[PassSurvey]:
        """Each registered pass, surveyed, in file order; raises Absent or Unevaluable."""
        return [self.survey(files, name) for name in self.registered(files)]

    def survey(self, files: RevisionFiles, function: str) -> PassSurvey:
        """What one pass reads, declares and draws on (`harness.closure.survey`)."""
        matrix = self.matrix
        return survey_pass(
            self.sources, files, function, self.names, matrix.edit_hint, self.view, self.facts
        )

    def run_order(self, files: RevisionFiles, passes: tuple[str, ...]) -> PassOrder:
        """The registered `passes` in the order the world's entry point runs them."""
        try:
            return pass_order(self.sources, files, list(passes), self.facts.run_entries)
        except RecursionError:
            raise Unevaluable(
                "the code that runs the passes nests its calls too deeply to follow"
            ) from None

    def defaults(self, files: RevisionFiles) -> Defaults:
        """What the view's class declares for its fields in these files (see
        `harness.closure.defaults`)."""
        return self.texts_memo("defaults", files, self._defaults)

    def _defaults(self, files: RevisionFiles) -> Defaults:
        found = class_defaults(self.sources, files, self.view) if self.view else NO_DEFAULTS
        if self.facts.input_defaults is None:
            return found
        inputs = input_defaults(self.sources, files, *self.facts.input_defaults)
        return replace(found, inputs=inputs) if inputs else found


def _not_there(paths: list[str]) -> list[str]:
    return [f"{path} does not exist" for path in paths]
