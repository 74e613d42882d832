"""Where a text differs from the one it was made from, when the maker already knows.

A scan makes each commit's text from its parent's and git's patch (see
`harness.patches`), so it knows which characters changed without comparing
80 KB strings; `harness.closure.pieces` asks here before comparing. The
answer is tied to the two string objects themselves (both are held, so
their ids stay theirs), never to equal texts found elsewhere.
"""

from __future__ import annotations

KEPT = 16  # the last few edits: a scan asks about each one right after making it
_TOLD: dict[int, tuple[str, str, int, int]] = {}  # id(new) -> (old, new, lo, old_hi)


def tell(old: str, new: str, lo: int, old_hi: int) -> None:
    """`new` is `old` with old[lo:old_hi] replaced (and nothing else changed)."""
    if len(_TOLD) >= KEPT:
        del _TOLD[next(iter(_TOLD))]
    _TOLD[id(new)] = (old, new, lo, old_hi)


def told(old: str, new: str) -> tuple[int, int] | None:
    """(lo, old_hi) when `new` was said to be made from this very `old`."""
    found = _TOLD.get(id(new))
    if found is None or found[0] is not old or found[1] is not new:
        return None
    return found[2], found[3]
