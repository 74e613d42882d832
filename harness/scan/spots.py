"""A blind spot as reports read it: a plain record, apart from the search that finds it
(`harness.scan.blind`), so that a report read back from the cache needs none of it."""

from __future__ import annotations

from dataclasses import dataclass

NEVER_RUN = "never run"  # a blind spot's `seen` for code the harness does not run


@dataclass(frozen=True)
class BlindSpot:
    """A changed condition (or block) the matrix did not take every way, at one side."""

    side: str  # "base" or "head": the revision whose code it is in
    path: str
    line: int
    text: str  # the condition, or the block ("the body of `if x`")
    function: str
    seen: str  # "only true", "only false", "never evaluated", "never entered"
    hint: str = ""  # what it reads, and the input value that takes it the other way

    def where(self) -> str:
        return f"{self.path}:{self.line}"
