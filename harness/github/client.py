"""A small GitHub REST client: requests, bounded retries, one-line errors.

The base URL comes from `GITHUB_API_URL` (default the public API), the token
from `GITHUB_TOKEN` (surrounding whitespace stripped). The token is sent as a
header and never appears in a message. Each request is bounded as a whole,
not per read (`HARNESS_HTTP_TIMEOUT`, default 10 s: a server dripping a byte
at a time is cut off), and so is the size of an answer. Timeouts, 5xx
answers and rate limits (403/429 with `Retry-After` or `X-RateLimit-Reset`)
are retried with bounded backoff; 401, 403 and 404 become one line naming
what to check, and so does an answer that is not the JSON asked for: the
server is not trusted either. A listing that may be long (a PR's comments) is
read as a stream (`stream_list`): only what the caller picks of each item is
held, and a page may be up to MAX_PAGE bytes.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from harness.errors import HarnessError
from harness.http import Answer, Http

PUBLIC_API = "https://api.github.com"
SLUG = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
MAX_WAIT = 60.0  # a rate limit that lifts later than this is an error, not a wait
MAX_ANSWER = 16 << 20  # bytes of one API answer, at most
MAX_PAGE = 64 << 20  # bytes of one page of a streamed listing: 100 comments of 65,536
# characters each, every one escaped as \uXXXX, fit
SEND = 4 << 20  # bytes handed to the JSON parser at once: its C backend copies a value split
# across sends once per send, so a long comment in 64 KB pieces would cost its square


def check_slug(text: str) -> str:
    if not SLUG.match(text):
        raise HarnessError(f"--github {text!r}: expected OWNER/REPO, e.g. sgl-project/sglang")
    return text


class GitHub:
    """Requests to one repository's API; `get`/`send` return the decoded JSON."""

    def __init__(self, slug: str, base_url: str | None = None, token: str | None = None) -> None:
        self.slug = check_slug(slug)
        self.base = (base_url or os.environ.get("GITHUB_API_URL") or PUBLIC_API).rstrip("/")
        self.http = Http("GitHub API", {"Accept": "application/vnd.github+json",
                                        "X-GitHub-Api-Version": "2022-11-28"})  # fmt: skip
        token = _checked_token(token if token is not None else os.environ.get("GITHUB_TOKEN"))
        if token:
            self.http.session.headers["Authorization"] = f"Bearer {token}"
        self.timeout = self.http.timeout

    def repo_path(self, rest: str) -> str:
        return f"/repos/{self.slug}/{rest.lstrip('/')}"

    def get(self, path: str, what: str) -> Any:
        return self.send("GET", path, what)

    def get_optional(self, path: str, what: str) -> Any:
        """A GET whose refusal (403, 404) is an answer, None, rather than an error."""
        try:
            return self.get(path, what)
        except _Refused as exc:
            if exc.status in (403, 404):
                return None
            raise

    def get_object(self, path: str, what: str) -> dict[str, Any]:
        """A GET whose answer must be a JSON object."""
        return _of_type(self.get(path, what), dict, "an object", what, self.base)

    def get_list(self, path: str, what: str) -> list[dict[str, Any]]:
        """A GET whose answer must be a JSON list of objects."""
        found = _of_type(self.get(path, what), list, "a list", what, self.base)
        return [_of_type(item, dict, "a list of objects", what, self.base) for item in found]

    def stream_list(self, path: str, what: str, pick: Callable[[dict[str, Any]], Any]) -> list:
        """A GET whose answer must be a JSON list of objects, read as it arrives (at most
        MAX_PAGE bytes): `pick(item)` for each, only its result held."""
        url = self.base + path
        judge = lambda answer: self._judge(answer, what)  # noqa: E731
        sink = lambda chunks: self._picked(chunks, pick, what, url)  # noqa: E731
        return self.http.request("GET", url, judge, limit=MAX_PAGE, sink=sink).parsed

    def _picked(self, chunks: Iterator[bytes], pick: Callable, what: str, url: str) -> list:
        import ijson  # deferred: only a comment's search reads a stream

        items, picked, first = ijson.sendable_list(), [], b""
        parser = ijson.items_coro(items, "item", use_float=True)
        try:
            for chunk in _regrouped(chunks, SEND):
                first = first or chunk.lstrip()[:1]
                if first and first != b"[":
                    break
                parser.send(chunk)
                picked += [pick(_of_type(i, dict, "a list of objects", what, self.base))
                           for i in items]  # fmt: skip
                del items[:]
            else:
                parser.close()
        except (ijson.JSONError, RecursionError, UnicodeDecodeError):
            raise _not_json("GET", url) from None
        if first != b"[":
            raise HarnessError(
                f"the GitHub API at {self.base} answered for {what} with something that is "
                "not a list: check GITHUB_API_URL"
            )
        return picked

    def send(self, method: str, path: str, what: str, body: Any = None) -> Any:
        """The JSON answer to one request, retried as the module docstring says."""
        url = self.base + path
        judge = lambda answer: self._judge(answer, what)  # noqa: E731
        answer = self.http.request(method, url, judge, body, limit=MAX_ANSWER)
        return _json(answer.content, method, url)

    def _judge(self, answer: Answer, what: str) -> tuple[str, float | None] | None:
        """None to take the answer; a retryable problem and how long to wait; or raise."""
        if answer.status_code < 300:
            return None
        return self._retryable(answer, what)

    def _retryable(self, answer, what: str) -> tuple[str, float | None]:
        """A retryable problem and how long to wait (None: the usual backoff), or raise."""
        status = answer.status_code
        if status >= 500:
            return f"HTTP {status}", None
        if status not in (403, 429) or not _is_rate_limit(answer):
            raise _Refused(self._refusal(status, what), status)
        wait = _rate_limit_wait(answer)
        if wait is not None and wait > MAX_WAIT:
            raise HarnessError(
                f"the GitHub API at {self.base} is rate limiting requests for another "
                f"{wait:.0f} s: wait, or set GITHUB_TOKEN for a higher limit"
            )
        return f"rate limited (HTTP {status})", None if wait is None else max(wait, 0.0)

    def _refusal(self, status: int, what: str) -> str:
        if status == 401:
            return (
                f"the GitHub API at {self.base} rejected the credentials (HTTP 401): "
                "check GITHUB_TOKEN"
            )
        if status == 403:
            return (
                f"the GitHub API at {self.base} refused access to {what} (HTTP 403): "
                "the token lacks permission for it"
            )
        if status == 404:
            return (
                f"{what} not found at {self.base} (HTTP 404): check --github {self.slug}, "
                "and that GITHUB_TOKEN can read the repository"
            )
        return f"the GitHub API at {self.base} answered HTTP {status} for {what}"


class _Refused(HarnessError):
    """The API said no (4xx): one line, and the status for callers that expect it."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _regrouped(chunks: Iterator[bytes], size: int) -> Iterator[bytes]:
    """`chunks` joined into pieces of at least `size` bytes (the last one may be shorter)."""
    held: list[bytes] = []
    count = 0
    for chunk in chunks:
        held.append(chunk)
        count += len(chunk)
        if count >= size:
            yield b"".join(held)
            held, count = [], 0
    if held:
        yield b"".join(held)


def _json(content: bytes, method: str, url: str) -> Any:
    if not content:
        return None
    try:
        return json.loads(content)
    except (ValueError, RecursionError):
        raise _not_json(method, url) from None


def _not_json(method: str, url: str) -> HarnessError:
    return HarnessError(
        f"the GitHub API answered {method} {url} with something that is not JSON: "
        "check GITHUB_API_URL"
    )


def _of_type(value: Any, kind: type, name: str, what: str, base: str) -> Any:
    if not isinstance(value, kind):
        raise HarnessError(
            f"the GitHub API at {base} answered for {what} with {type(value).__name__}, "
            f"not {name}: check GITHUB_API_URL"
        )
    return value


def _checked_token(token: str | None) -> str | None:
    """The token without surrounding whitespace (a secret pasted with its newline); one
    with any other character than printable ASCII inside (a space, a newline, a control
    or a non-ASCII character, which no HTTP header can carry) is refused, in one line
    that does not show it."""
    token = (token or "").strip()
    if any(not (c.isascii() and c.isprintable()) or c.isspace() for c in token):
        raise HarnessError(
            "GITHUB_TOKEN has a space, newline or control character inside it, or one that "
            "is not ASCII (no HTTP header can carry it): check how the secret is set"
        )
    return token or None


def _is_rate_limit(answer) -> bool:
    headers = answer.headers
    return (
        answer.status_code == 429
        or "Retry-After" in headers
        or headers.get("X-RateLimit-Remaining") == "0"
    )


def _rate_limit_wait(answer) -> float | None:
    """Seconds until a rate limit lifts, as the answer says (None: it does not say)."""
    after = answer.headers.get("Retry-After", "").strip()
    if after.isdigit():
        return float(after)
    reset = answer.headers.get("X-RateLimit-Reset", "").strip()
    if answer.headers.get("X-RateLimit-Remaining") == "0" and reset.isdigit():
        return float(reset) - time.time()
    return None
