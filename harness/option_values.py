"""The values options take, as argparse types: each turns its text into the value or
raises `argparse.ArgumentTypeError` naming what it expected. Shared by the CLI and the
pytest plugin, so this module imports nothing of harness until a value needs it."""

from __future__ import annotations

import argparse


def nonnegative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def grid_axes(text: str) -> tuple[str, str]:
    """`--grid ROWS,COLUMNS`: two axis names (checked against the matrix later)."""
    names = tuple(name.strip() for name in text.split(","))
    if len(names) != 2 or not all(names):
        raise argparse.ArgumentTypeError(
            f"expected two axes as ROWS,COLUMNS, e.g. prefill_cuda_graph,platform, got {text!r}"
        )
    return names  # type: ignore[return-value]


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"expected more than 0 and at most 86400, got {text}")
    return value


UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def memory_size(text: str) -> int:
    number, unit = text.rstrip("KMGkmg"), text[len(text.rstrip("KMGkmg")) :].upper()
    try:
        value = int(float(number) * UNITS[unit])
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(
            f"expected a size such as 512M or 4G, got {text!r}"
        ) from None
    if value < 64 << 20:
        raise argparse.ArgumentTypeError(f"expected at least 64M, got {text}")
    return value


def slug_argument(text: str) -> str:
    from harness.errors import HarnessError
    from harness.github.client import check_slug

    try:
        return check_slug(text)
    except HarnessError:
        raise argparse.ArgumentTypeError(f"expected OWNER/REPO, got {text!r}") from None
