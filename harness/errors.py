"""The one user-facing error type.

A `HarnessError` carries one actionable sentence: what was wrong, where, and
the fix. The CLI catches it once and exits 2; anything else is a bug.
"""

from __future__ import annotations


class HarnessError(Exception):
    """A user error (bad input, missing revision, bad matrix file)."""
