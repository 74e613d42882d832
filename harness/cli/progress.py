"""Progress on stderr for the commands that can take seconds, drawn only on a terminal.

While the work runs, a ticker thread redraws one line in place every INTERVAL: the
stage (`diff: evaluating A and B`), a bar, and the seconds so far. Counted work
(`bar(done, total)`) fills the bar; work that is not counted (one evaluation, a
search) moves a block along it, so the line still shows that something runs. Nothing
is drawn when stderr is not a terminal, or with --quiet. The line is erased when the
work ends, so the report or an error that follows starts on a clean line; output
written while the bar runs goes through `paused()`.

The evaluation worker forks while the ticker may be drawing: a fork waits for the
drawing lock, so the child never inherits a stream locked mid-write.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

WIDTH = 30  # characters of the bar
BLOCK = 6  # characters of the block that moves along a bar of uncounted work
INTERVAL = 0.1  # seconds between redraws

_DRAWING = threading.RLock()  # one line is drawn at a time, and never across a fork
if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_DRAWING.acquire, after_in_parent=_DRAWING.release, after_in_child=_DRAWING.release
    )


class Progress:
    """`with Progress("history") as bar: scan(on_commit=bar)`; silent when not a TTY or
    `quiet`. `stage(label)` names the next part of the work."""

    def __init__(self, label: str, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.label = label
        self.enabled = not quiet and _is_terminal(self.stream)
        self.counts: tuple[int, int] | None = None  # (done, total) of counted work
        self.started = time.monotonic()
        self.drawn_at = 0.0
        self.shown = 0  # characters on the line now
        self.ticks = 0
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self.enabled:
            self.draw()
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
        if self.enabled:
            with _DRAWING:
                self._erase()

    def __call__(self, done: int, total: int) -> None:
        """`done` of `total` steps are done: redraw, at most every INTERVAL and at the end."""
        if not self.enabled or total <= 0:
            return
        self.counts = (done, total)
        if time.monotonic() - self.drawn_at >= INTERVAL or done >= total:
            self.draw()

    def stage(self, label: str) -> None:
        """The work goes on under a new name (its count, if any, starts over)."""
        self.label, self.counts = label, None
        if self.enabled:
            self.draw()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Write to the same terminal inside this: the bar is erased first and comes back
        at the next tick, below what was written."""
        with _DRAWING:
            if self.enabled:
                self._erase()
            yield

    def draw(self) -> None:
        with _DRAWING:
            text = self.line(time.monotonic())
            padding = " " * max(self.shown - len(text), 0)
            self.stream.write("\r" + text + padding + "\r" + text)
            self.stream.flush()
            self.drawn_at, self.shown = time.monotonic(), len(text)

    def line(self, now: float) -> str:
        """The line as drawn: label, bar, count (when counted), seconds; cut to the
        terminal's width, so that it never wraps (a wrapped line cannot be redrawn)."""
        if self.counts is not None:
            done, total = self.counts
            filled = WIDTH * min(done, total) // total
            bar, count = "#" * filled + "-" * (WIDTH - filled), f" {done}/{total}"
        else:
            start = self.ticks % (WIDTH - BLOCK + 1)
            bar, count = "-" * start + "#" * BLOCK + "-" * (WIDTH - BLOCK - start), ""
        text = f"{self.label} [{bar}]{count} {now - self.started:.0f}s"
        return text[: _columns(self.stream) - 1]

    def _tick(self) -> None:
        while not self._stop.wait(INTERVAL):
            self.ticks += 1
            self.draw()

    def _erase(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * self.shown + "\r")
            self.stream.flush()
            self.shown = 0


def progress(args: argparse.Namespace, label: str) -> Progress:
    """The command's progress line on stderr (none with --quiet)."""
    return Progress(label, quiet=getattr(args, "quiet", False))


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80
