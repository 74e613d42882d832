"""A progress bar on stderr for long scans, drawn only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30
INTERVAL = 0.1  # seconds between redraws


class Progress:
    """`with Progress("history") as bar: scan(on_commit=bar)`; silent when not a TTY."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.label = label
        self.enabled = _is_terminal(self.stream)
        self.drawn_at = 0.0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled and self.drawn_at:
            self.stream.write("\r" + " " * (WIDTH + len(self.label) + 40) + "\r")
            self.stream.flush()

    def __call__(self, done: int, total: int) -> None:
        """`done` of `total` steps are done: redraw, at most every INTERVAL and at the end."""
        if not self.enabled or total <= 0:
            return
        now = time.monotonic()
        if now - self.drawn_at >= INTERVAL or done >= total:
            self.drawn_at = now
            filled = WIDTH * min(done, total) // total
            bar = "#" * filled + "-" * (WIDTH - filled)
            self.stream.write(f"\r{self.label} [{bar}] {done}/{total}")
            self.stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
