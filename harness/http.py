"""HTTP for the GitHub API and the package index: bounded, retried, one-line errors.

Each request is bounded as a whole, not per read (`HARNESS_HTTP_TIMEOUT`,
default 10 s: a server dripping a byte at a time, even in its headers, is cut
off; the request runs in a thread that is abandoned at the deadline), and so
is the size of an answer. Timeouts, connection errors and 5xx answers are
retried with bounded backoff; what else an answer means is the caller's
`judge`. Servers are not trusted: nothing they send is more than data.

A server's certificate is checked against the CA source a `Trust` names (the
package index's, chosen as pip chooses, see `harness.releases.tls`), else
against requests' own. A certificate that does not verify is not retried: it is
one whole line naming the source and how to point at another. No message shows
the credentials a URL carries, and nothing stores them (`stripped`).

A `file:` URL is read from disk as pip reads an index on disk: regular files
only (a FIFO, a device or a socket is refused before it is read: the type is
checked before opening, and the open does not block), and never more than the
caller's limit.
"""

from __future__ import annotations

import os
import re
import ssl
import stat
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from urllib.request import url2pathname

from harness.errors import HarnessError

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
    parsed: Any = None  # what a `sink` made of a 2xx answer's body (then `content` is empty)


# sink(chunks) -> a value: reads a 2xx answer's body as it arrives (the chunks bounded by the
# request's limit and deadline), so that only what it keeps is held
Sink = Callable[["Iterator[bytes]"], Any]


@dataclass(frozen=True)
class Trust:
    """What a server's certificate is checked against, and how messages name it."""

    source: str  # "PIP_CERT=/etc/ca.pem", "the system's certificate store (through truststore)"
    advice: str  # how to point at the right CA when a certificate does not verify
    bundle: str | None = None  # a PEM file (or a directory) of the CA certificates to use
    context: ssl.SSLContext | None = None  # else a context that verifies on its own (truststore)


REQUESTS_TRUST = Trust(
    "requests' CA bundle (certifi's, or REQUESTS_CA_BUNDLE)",
    "set REQUESTS_CA_BUNDLE to a PEM file holding the CA that signs the server's certificate",
)


# judge(answer) -> None: take it; (problem, wait or None): retry; or raise HarnessError
Judge = Callable[[Answer], "tuple[str, float | None] | None"]


def retry_5xx(answer: Answer) -> tuple[str, float | None] | None:
    """The default judge: 2xx/3xx taken, 5xx retried, anything else left to the caller."""
    return (f"HTTP {answer.status_code}", None) if answer.status_code >= 500 else None


class Http:
    """A requests session with the bounds and retries above. `trust` is called once, at the
    first request over the network (a file: URL needs none): its errors are the caller's."""

    def __init__(
        self,
        name: str,
        headers: dict[str, str] | None = None,
        trust: Callable[[], Trust] | None = None,
    ) -> None:
        import requests  # deferred: most runs never touch the network, and it costs 0.15 s

        self.requests = requests
        self.session = requests.Session()
        self.session.headers.update(headers or {})
        self.name = name  # how messages call the server: "GitHub API", "package index"
        self.timeout = timeout_from_environment()
        self.choose_trust = trust
        self.trust: Trust | None = None  # chosen at the first request over the network

    def request(
        self,
        method: str,
        url: str,
        judge: Judge = retry_5xx,
        body: Any = None,
        headers: dict[str, str] | None = None,
        limit: int = MAX_ANSWER,
        sink: Sink | None = None,
    ) -> Answer:
        """The first answer `judge` takes, retried as the module docstring says; with a
        `sink`, a 2xx answer's body is handed to it as it arrives (see `Sink`)."""
        problem, pause = "", 0.0
        for attempt in range(ATTEMPTS):
            time.sleep(pause)
            pause = BACKOFF * 2**attempt
            try:
                answer = self.exchange(method, url, body, headers, limit, sink)
            except (self.requests.Timeout, TimeoutError):
                problem = f"no whole answer within {self.timeout:g} s"
                continue
            except self.requests.exceptions.SSLError as exc:  # retrying changes nothing
                raise HarnessError(self._tls_failure(method, url, exc)) from None
            except self.requests.ConnectionError as exc:
                problem = f"cannot connect ({hidden(reason(exc), url)})"
                continue
            except self.requests.RequestException as exc:  # a URL it cannot fetch at all
                raise HarnessError(
                    f"{self.name} {method} {shown(url)}: {hidden(reason(exc), url)}"
                ) from None
            verdict = judge(answer)
            if verdict is None:
                return answer
            problem, wait = verdict
            pause = pause if wait is None else wait
        raise HarnessError(
            f"{self.name} {method} {shown(url)} failed after {ATTEMPTS} attempts: {problem}; "
            "try again later"
        )

    def _tls_failure(self, method: str, url: str, exc: BaseException) -> str:
        """One whole line: what failed, against which CA source, and how to choose another."""
        trust = self.trust or REQUESTS_TRUST
        where = f"{self.name} {method} {shown(url)}"
        if verification_failure(exc) is None:
            return f"{where}: TLS failed ({hidden(reason(exc), url)}) with {trust.source}"
        return (
            f"{where}: the server's certificate does not verify against {trust.source} "
            f"({hidden(reason(exc), url)}); {trust.advice}"
        )

    def _secure(self) -> None:
        """Choose the CA source (once) and set the session up to verify with it."""
        if self.trust is not None or self.choose_trust is None:
            return
        self.trust = self.choose_trust()
        if self.trust.context is not None:
            self.session.mount("https://", _context_adapter(self.requests, self.trust.context))

    def _verify(self) -> bool | str | None:
        """requests' `verify` for each request: given, so that no environment variable
        overrides the source chosen (None, without a Trust: requests' own defaults)."""
        if self.trust is None:
            return None
        return self.trust.bundle or True

    def exchange(
        self,
        method: str,
        url: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        limit: int = MAX_ANSWER,
        sink: Sink | None = None,
    ) -> Answer:
        """One request, whole within `timeout` seconds and at most `limit` bytes; raises
        TimeoutError past the deadline. A file: URL (a package index on disk, as pip
        accepts) is read from the file system, ranges included."""
        if url.startswith("file:"):
            answer = _local(url, headers or {}, limit)
            if sink is None or answer.status_code >= 300:
                return answer
            return Answer(answer.status_code, answer.headers, b"", sink(iter([answer.content])))
        self._secure()
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append((True, self._read(method, url, body, headers, limit, sink)))
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

    def _read(
        self, method: str, url: str, body: Any, headers: Any, limit: int, sink: Sink | None
    ) -> Answer:
        deadline = time.monotonic() + self.timeout
        with self.session.request(
            method,
            url,
            json=body,
            headers=headers,
            timeout=self.timeout,
            stream=True,
            verify=self._verify(),
        ) as answer:
            chunks = _bounded(answer.iter_content(CHUNK), limit, deadline, f"{method} {url}")
            if sink is not None and answer.status_code < 300:
                return Answer(answer.status_code, answer.headers, b"", sink(chunks))
            return Answer(answer.status_code, answer.headers, b"".join(chunks))


def _bounded(chunks: Iterator[bytes], limit: int, deadline: float, what: str) -> Iterator[bytes]:
    """`chunks`, cut off (one line) past `limit` bytes, and (TimeoutError) past `deadline`."""
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            method, _, url = what.partition(" ")
            raise HarnessError(
                f"{method} {shown(url)}: the server sent more than {limit >> 20} MB "
                "where less was expected"
            )
        yield chunk
        if time.monotonic() > deadline:
            raise TimeoutError


def _context_adapter(requests: Any, context: ssl.SSLContext) -> Any:
    """A transport adapter whose connections, direct or through a proxy, verify with
    `context` (as pip hands truststore's context to its own)."""

    class ContextAdapter(requests.adapters.HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("ssl_context", context)
            super().init_poolmanager(*args, **kwargs)

        def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
            kwargs.setdefault("ssl_context", context)
            return super().proxy_manager_for(proxy, **kwargs)

    return ContextAdapter()


USERINFO = re.compile(r"^((?:[A-Za-z][A-Za-z0-9+.-]*:)?//)([^/?#]*)@")
IN_TEXT = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s]*@")


def shown(url: str) -> str:
    """`url` as messages show it: any user name or password it carries replaced by ***
    (read without parsing the URL: a malformed one is shown safely too)."""
    return USERINFO.sub(r"\1***@", url, count=1)


def stripped(url: str) -> str:
    """`url` without the user name and password it carries: what may be stored or keyed."""
    return USERINFO.sub(r"\1", url, count=1)


def redact_credentials(text: str) -> str:
    """`text` (a message, a traceback) with the credentials of every URL in it replaced by
    ***, and those of PIP_INDEX_URL wherever they appear: the last guard before output."""
    text = IN_TEXT.sub(r"\1***@", text)
    found = USERINFO.match(os.environ.get("PIP_INDEX_URL", ""))
    secret = found.group(2) if found else ""
    for part in {secret, *secret.split(":", 1)}:
        if len(part) >= 4:
            text = text.replace(part, "***")
    return text


def lent(url: str, owner: str) -> str:
    """`url` with the credentials `owner` (an index URL) carries, when it is on the same
    host and port and carries none itself (as pip lends an index's credentials to the
    files it lists); else `url` as it is."""
    mine, theirs = urlsplit(url), urlsplit(owner)
    credentials = theirs.netloc.rpartition("@")[0]
    same = mine.scheme == theirs.scheme and mine.netloc == theirs.netloc.rpartition("@")[2]
    if not credentials or not same:
        return url
    return urlunsplit(mine._replace(netloc=f"{credentials}@{mine.netloc}"))


def hidden(text: str, url: str) -> str:
    """`text` (an exception's message about `url`) without the credentials `url` carries."""
    found = USERINFO.match(url)
    credentials = found.group(2) if found else ""
    return (
        text.replace(credentials + "@", "***@").replace(credentials, "***") if credentials else text
    )


def causes(exc: BaseException) -> list[BaseException]:
    """`exc` and what it wraps, outermost first: requests wraps urllib3's errors, which
    wrap the socket's and the ssl module's (bounded: a chain is data, not a promise)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 16:
        chain.append(current)
        inner = getattr(current, "reason", None)
        if not isinstance(inner, BaseException):
            inner = current.__cause__ or current.__context__
        if inner is None and current.args and isinstance(current.args[0], BaseException):
            inner = current.args[0]
        current = inner
    return chain


def verification_failure(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    return next((e for e in causes(exc) if isinstance(e, ssl.SSLCertVerificationError)), None)


def reason(exc: BaseException, width: int = 160) -> str:
    """Why a request failed, in a few words: the innermost cause's own message (a
    certificate's verify message, a socket's strerror), shortened at a word boundary."""
    inner = causes(exc)[-1]
    text = (
        getattr(inner, "verify_message", None)
        or getattr(inner, "strerror", None)
        or str(inner)
        or type(inner).__name__
    )
    return textwrap.shorten(str(text), width, placeholder=" ...")


def _local(url: str, headers: dict[str, str], limit: int) -> Answer:
    """A file: URL as a server would answer it: a directory's index.html, a byte range."""
    path = Path(url2pathname(urlsplit(url).path))
    if path.is_dir():
        path = path / "index.html"
    try:
        with _open_regular(path, url) as handle:
            size = os.fstat(handle.fileno()).st_size
            kind = "text/html" if path.suffix == ".html" else "application/octet-stream"
            wanted = headers.get("Range", "")
            if wanted.startswith("bytes="):
                return _local_range(handle, wanted, size, limit, kind)
            data = handle.read(limit + 1)
    except FileNotFoundError:
        return Answer(404, {}, b"")
    except OSError as exc:
        raise HarnessError(f"{shown(url)}: cannot be read ({exc.strerror})") from None
    if len(data) > limit:
        raise HarnessError(f"{shown(url)}: more than {limit >> 20} MB where less was expected")
    return Answer(200, {"Content-Type": kind}, data)


def _open_regular(path: Path, url: str) -> Any:
    """`path` opened for reading, when it is a regular file: its type is checked before it
    is opened (a FIFO would block the open), and again after (it may have been swapped)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise HarnessError(_not_regular(url))
    handle = open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb")  # noqa: SIM115
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise HarnessError(_not_regular(url))
    return handle


def _not_regular(url: str) -> str:
    return (
        f"{shown(url)}: not a regular file (a FIFO, device or socket): an index on disk "
        "holds regular files only"
    )


def _local_range(handle: Any, wanted: str, size: int, limit: int, kind: str) -> Answer:
    """The bytes `wanted` (`bytes=FIRST-LAST` or `bytes=-SUFFIX`) of a file of `size`."""
    first, _, last = wanted.removeprefix("bytes=").partition("-")
    try:
        start = max(0, size - int(last)) if not first else int(first)
        end = size - 1 if not first or not last else min(int(last), size - 1)
    except ValueError:
        return Answer(416, {}, b"")
    if end - start + 1 > limit:
        raise HarnessError(f"a range of {end - start + 1} bytes where {limit} were asked for")
    handle.seek(start)
    part = handle.read(max(0, end - start + 1))
    return Answer(206, {"Content-Type": kind, "Content-Range": f"bytes {start}-{end}/{size}"},
                  part)  # fmt: skip


def timeout_from_environment() -> float:
    text = os.environ.get("HARNESS_HTTP_TIMEOUT", "")
    try:
        value = float(text) if text else DEFAULT_TIMEOUT
    except ValueError:
        raise HarnessError(f"HARNESS_HTTP_TIMEOUT={text!r}: expected seconds, e.g. 10") from None
    if value <= 0:
        raise HarnessError(f"HARNESS_HTTP_TIMEOUT={text!r}: expected a positive number")
    return value
