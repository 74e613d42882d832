"""A progress bar on stderr for long scans, drawn only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30
INTERVAL = 0.1  # seconds between redraws


class Progress:
    """`with Progress(total, "history") as bar: bar.advance()`; silent when not a TTY."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.total, self.label, self.done = total, label, 0
        self.enabled = total > 0 and _is_terminal(self.stream)
        self.drawn_at = 0.0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled and self.drawn_at:
            self.stream.write("\r" + " " * (WIDTH + len(self.label) + 40) + "\r")
            self.stream.flush()

    def advance(self, step: int = 1) -> None:
        self.done += step
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.drawn_at >= INTERVAL or self.done >= self.total:
            self.drawn_at = now
            self._draw()

    def _draw(self) -> None:
        filled = WIDTH * min(self.done, self.total) // self.total
        bar = "#" * filled + "-" * (WIDTH - filled)
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total}")
        self.stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
