"""What one worker may use: its CPU time and address space (see `harness.engine.worker`)."""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """What one worker (one revision's evaluation, or one traced cell) may use."""

    seconds: float = 60.0  # CPU time; the parent kills at twice this in wall-clock time
    memory: int = 2 * GIB  # address space the evaluation may add, bytes
    unconfined: bool = False  # run even where the machine gives no filesystem wall
    behind: int = 0  # niceness added to the harness's own: a job whose answer is wanted later

    def describe_time(self) -> str:
        return f"{self.seconds:g} s"


DEFAULT_LIMITS = Limits()
