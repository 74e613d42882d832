"""A small GitHub REST client: requests, bounded retries, one-line errors.

The base URL comes from `GITHUB_API_URL` (default the public API), the token
from `GITHUB_TOKEN`. The token is sent as a header and never appears in a
message. Timeouts, 5xx answers and rate limits (403/429 with `Retry-After`
or `X-RateLimit-Reset`) are retried with bounded backoff; 401, 403 and 404
become one line naming what to check.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from harness.errors import HarnessError

PUBLIC_API = "https://api.github.com"
SLUG = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
ATTEMPTS = 4
BACKOFF = 0.5  # seconds before the first retry; doubles each time
MAX_WAIT = 60.0  # a rate limit that lifts later than this is an error, not a wait
DEFAULT_TIMEOUT = 10.0


def check_slug(text: str) -> str:
    if not SLUG.match(text):
        raise HarnessError(f"--github {text!r}: expected OWNER/REPO, e.g. sgl-project/sglang")
    return text


class GitHub:
    """Requests to one repository's API; `get`/`send` return the decoded JSON."""

    def __init__(self, slug: str, base_url: str | None = None, token: str | None = None) -> None:
        self.slug = check_slug(slug)
        self.base = (base_url or os.environ.get("GITHUB_API_URL") or PUBLIC_API).rstrip("/")
        import requests  # deferred: most runs never touch the network, and it costs 0.15 s

        self.requests = requests
        self.session = requests.Session()
        self.session.headers.update(
            {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
        )
        token = token if token is not None else os.environ.get("GITHUB_TOKEN")
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"
        self.timeout = _timeout()

    def repo_path(self, rest: str) -> str:
        return f"/repos/{self.slug}/{rest.lstrip('/')}"

    def get(self, path: str, what: str) -> Any:
        return self.send("GET", path, what)

    def send(self, method: str, path: str, what: str, body: Any = None) -> Any:
        """The JSON answer to one request, retried as the module docstring says."""
        url = self.base + path
        problem, pause = "", 0.0
        for attempt in range(ATTEMPTS):
            time.sleep(pause)
            pause = BACKOFF * 2**attempt
            try:
                answer = self.session.request(method, url, json=body, timeout=self.timeout)
            except self.requests.Timeout:
                problem = f"no answer within {self.timeout:g} s"
                continue
            except self.requests.ConnectionError as exc:
                problem = f"cannot connect ({_first_line(exc)})"
                continue
            if answer.status_code < 300:
                return answer.json() if answer.content else None
            problem, wait = self._retryable(answer, what)
            pause = pause if wait is None else wait
        raise HarnessError(
            f"GitHub API {method} {url} failed after {ATTEMPTS} attempts: {problem}; "
            "try again later"
        )

    def _retryable(self, answer, what: str) -> tuple[str, float | None]:
        """A retryable problem and how long to wait (None: the usual backoff), or raise."""
        status = answer.status_code
        if status >= 500:
            return f"HTTP {status}", None
        if status not in (403, 429) or not _is_rate_limit(answer):
            raise HarnessError(self._refusal(status, what))
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


def _timeout() -> float:
    text = os.environ.get("HARNESS_HTTP_TIMEOUT", "")
    try:
        value = float(text) if text else DEFAULT_TIMEOUT
    except ValueError:
        raise HarnessError(f"HARNESS_HTTP_TIMEOUT={text!r}: expected seconds, e.g. 10") from None
    if value <= 0:
        raise HarnessError(f"HARNESS_HTTP_TIMEOUT={text!r}: expected a positive number")
    return value


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
