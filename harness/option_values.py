"""The options a diff and the pytest entry share, and the values they take.

`OPTIONS` declares each option once (its argparse keyword arguments: metavar,
type, default, help); the CLI adds it as `--NAME`, the pytest plugin as
`--override-NAME`. The value types turn text into the value or raise
`argparse.ArgumentTypeError` naming what they expected. The pytest plugin adds
these options in every pytest run, so this module imports nothing of harness but
two constants until a value needs more.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.engine.limits import DEFAULT_LIMITS
from harness.matrix import MAX_CELLS


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


def _options() -> dict[str, dict[str, Any]]:
    limits = DEFAULT_LIMITS
    return {
        "max-cells": dict(
            metavar="N", type=nonnegative, default=MAX_CELLS,
            help=f"refuse a matrix of more cells than this, before allocating anything "
            f"(default: {MAX_CELLS:,}; a table takes 4 bytes per cell)",
        ),
        "repo": dict(
            metavar="PATH",
            help="the git repository to read (default: the one containing the current "
            "directory)",
        ),
        "where": dict(
            metavar="AXIS=V[,V...]", action="append", default=[],
            help="only cells whose AXIS has one of these values, written as in the matrix "
            "file (null, true, 16, fa4); repeat for more axes",
        ),
        "cache-dir": dict(
            metavar="DIR",
            help="where outcome tables are kept between runs "
            "(default: $XDG_CACHE_HOME/harness, else ~/.cache/harness)",
        ),
        "no-cache": dict(action="store_true", help="neither read nor write the on-disk cache"),
        "index-url": dict(
            metavar="URL",
            help="the package index pypi:NAME==VERSION revisions are read from (its simple "
            "API; default: PIP_INDEX_URL, else pip's configured index-url, else "
            "https://pypi.org/simple)",
        ),
        "cert": dict(
            metavar="FILE",
            help="a PEM file of the CA certificates the package index's certificate is "
            "checked against, as pip's --cert (default, the first set: PIP_CERT, "
            "REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, SSL_CERT_FILE, pip's configured cert; else "
            "the system's store)",
        ),
        "github": dict(
            metavar="OWNER/REPO", type=slug_argument,
            help="resolve #N through the GitHub API when no local commit subject ends in "
            "(#N): a merged PR is its merge commit, an open one its head (base URL from "
            "GITHUB_API_URL, token from GITHUB_TOKEN)",
        ),
        "time-limit": dict(
            metavar="SECONDS", type=positive_seconds, default=limits.seconds,
            help="CPU time one revision's evaluation may take before it is stopped and "
            f"reported unevaluable (default: {limits.seconds:g})",
        ),
        "memory-limit": dict(
            metavar="SIZE", type=memory_size, default=limits.memory,
            help="address space the evaluation worker may add to the harness's own, e.g. "
            f"512M or 4G (default: {limits.memory >> 30}G)",
        ),
        "allow-unconfined": dict(
            action="store_true",
            help="evaluate even where this machine gives evaluated code no filesystem wall "
            "(no Landlock and no unprivileged mount namespaces): only for code you trust "
            "(docs/security.md)",
        ),
    }  # fmt: skip


OPTIONS = _options()  # name -> argparse keyword arguments, in the order --help lists them
