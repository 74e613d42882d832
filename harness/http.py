"""HTTP for the GitHub API and the package index: bounded, retried, one-line errors.

Each request is bounded as a whole, not per read (`HARNESS_HTTP_TIMEOUT`,
default 10 s: a server dripping a byte at a time, even in its headers, is cut
off; the request runs in a thread that is abandoned at the deadline), and so
is the size of an answer. Timeouts, connection errors and 5xx answers are
retried with bounded backoff; what else an answer means is the caller's
`judge`. Servers are not trusted: nothing they send is more than data.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from harness.errors import HarnessError, first_line

ATTEMPTS = 4
BACKOFF = 0.5  # seconds before the first retry; doubles each time
DEFAULT_TIMEOUT = 10.0
MAX_ANSWER = 64 << 20  # bytes of one answer, at most
CHUNK = 1 << 16


@dataclass(frozen=True)
class Answer:
    status_code: int
    headers: Any  # a case-insensitive mapping
    content: bytes


# judge(answer) -> None: take it; (problem, wait or None): retry; or raise HarnessError
Judge = Callable[[Answer], "tuple[str, float | None] | None"]


def retry_5xx(answer: Answer) -> tuple[str, float | None] | None:
    """The default judge: 2xx/3xx taken, 5xx retried, anything else left to the caller."""
    return (f"HTTP {answer.status_code}", None) if answer.status_code >= 500 else None


class Http:
    """A requests session with the bounds and retries above."""

    def __init__(self, name: str, headers: dict[str, str] | None = None) -> None:
        import requests  # deferred: most runs never touch the network, and it costs 0.15 s

        self.requests = requests
        self.session = requests.Session()
        self.session.headers.update(headers or {})
        self.name = name  # how messages call the server: "GitHub API", "package index"
        self.timeout = timeout_from_environment()

    def request(
        self,
        method: str,
        url: str,
        judge: Judge = retry_5xx,
        body: Any = None,
        headers: dict[str, str] | None = None,
        limit: int = MAX_ANSWER,
    ) -> Answer:
        """The first answer `judge` takes, retried as the module docstring says."""
        problem, pause = "", 0.0
        for attempt in range(ATTEMPTS):
            time.sleep(pause)
            pause = BACKOFF * 2**attempt
            try:
                answer = self.exchange(method, url, body, headers, limit)
            except (self.requests.Timeout, TimeoutError):
                problem = f"no whole answer within {self.timeout:g} s"
                continue
            except self.requests.ConnectionError as exc:
                problem = f"cannot connect ({first_line(exc)})"
                continue
            except self.requests.RequestException as exc:  # a URL it cannot fetch at all
                raise HarnessError(f"{self.name} {method} {url}: {first_line(exc)}") from None
            verdict = judge(answer)
            if verdict is None:
                return answer
            problem, wait = verdict
            pause = pause if wait is None else wait
        raise HarnessError(
            f"{self.name} {method} {url} failed after {ATTEMPTS} attempts: {problem}; "
            "try again later"
        )

    def exchange(
        self,
        method: str,
        url: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        limit: int = MAX_ANSWER,
    ) -> Answer:
        """One request, whole within `timeout` seconds and at most `limit` bytes; raises
        TimeoutError past the deadline. A file: URL (a package index on disk, as pip
        accepts) is read from the file system, ranges included."""
        if url.startswith("file:"):
            return _local(url, headers or {}, limit)
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append((True, self._read(method, url, body, headers, limit)))
            except BaseException as exc:  # handed to the caller's thread
                outcome.append((False, exc))

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(self.timeout)
        if not outcome:
            raise TimeoutError
        succeeded, value = outcome[0]
        if not succeeded:
            raise value
        return value

    def _read(self, method: str, url: str, body: Any, headers: Any, limit: int) -> Answer:
        deadline = time.monotonic() + self.timeout
        with self.session.request(
            method, url, json=body, headers=headers, timeout=self.timeout, stream=True
        ) as answer:
            chunks, size = [], 0
            for chunk in answer.iter_content(CHUNK):
                size += len(chunk)
                if size > limit:
                    raise HarnessError(
                        f"{method} {url}: the server sent more than {limit >> 20} MB where "
                        "less was expected"
                    )
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise TimeoutError
            return Answer(answer.status_code, answer.headers, b"".join(chunks))


def _local(url: str, headers: dict[str, str], limit: int) -> Answer:
    """A file: URL as a server would answer it: a directory's index.html, a byte range."""
    path = Path(url2pathname(urlsplit(url).path))
    if path.is_dir():
        path = path / "index.html"
    try:
        data = path.read_bytes()
    except OSError:
        return Answer(404, {}, b"")
    kind = {"Content-Type": "text/html" if path.suffix == ".html" else "application/octet-stream"}
    wanted = headers.get("Range", "")
    if wanted.startswith("bytes="):
        first, _, last = wanted.removeprefix("bytes=").partition("-")
        start = max(0, len(data) - int(last)) if not first else int(first)
        end = len(data) - 1 if not first or not last else min(int(last), len(data) - 1)
        part = data[start : end + 1]
        return Answer(206, {**kind, "Content-Range": f"bytes {start}-{end}/{len(data)}"}, part)
    if len(data) > limit:
        raise HarnessError(f"{url}: more than {limit >> 20} MB where less was expected")
    return Answer(200, kind, data)


def timeout_from_environment() -> float:
    text = os.environ.get("HARNESS_HTTP_TIMEOUT", "")
    try:
        value = float(text) if text else DEFAULT_TIMEOUT
    except ValueError:
        raise HarnessError(f"HARNESS_HTTP_TIMEOUT={text!r}: expected seconds, e.g. 10") from None
    if value <= 0:
        raise HarnessError(f"HARNESS_HTTP_TIMEOUT={text!r}: expected a positive number")
    return value
