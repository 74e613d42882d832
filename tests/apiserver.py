"""A stand-in for the GitHub REST API: a real HTTP server on loopback, answering from a script."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# How often a serving loop looks for shutdown(): socketserver's 0.5 s default made every
# test with a loopback server wait half a second in its teardown.
POLL_SECONDS = 0.02


def serving(server: Any) -> threading.Thread:
    """A daemon thread serving `server` until its shutdown() (not yet started)."""
    return threading.Thread(target=server.serve_forever, args=(POLL_SECONDS,), daemon=True)


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (to provoke client timeouts)
    drip: float = 0.0  # seconds between bytes: the whole answer a byte at a time


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeGitHub:
    """Scripted replies per (method, path), in order (the last one repeats); records requests."""

    def __init__(self) -> None:
        self.script: dict[tuple[str, str], list[Reply]] = {}
        self.handlers: dict[tuple[str, str], Callable[[Seen], Reply]] = {}
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = serving(self.server)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def on(self, method: str, path: str, *replies: Reply) -> None:
        self.script[(method, path)] = list(replies)

    def serve(self, method: str, path: str, handler: Callable[[Seen], Reply]) -> None:
        """Answer METHOD PATH (query string aside; a last segment `*` matches any) by calling
        `handler` with the request."""
        self.handlers[(method, path)] = handler

    def next_reply(self, seen: Seen) -> Reply:
        method, path = seen.method, seen.path
        bare = urlsplit(path).path
        handler = self.handlers.get((method, bare))
        handler = handler or self.handlers.get((method, bare.rsplit("/", 1)[0] + "/*"))
        if handler is not None:
            return handler(seen)
        with self.lock:
            queue = self.script.get((method, path))
            if not queue:
                return Reply(404, {"message": "Not Found"})
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def __enter__(self) -> FakeGitHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(fake: FakeGitHub):
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            seen = Seen(self.command, self.path, dict(self.headers), body)
            with fake.lock:
                fake.seen.append(seen)
            reply = fake.next_reply(seen)
            time.sleep(reply.delay)
            data = b"" if reply.body is None else json.dumps(reply.body).encode()
            if reply.drip:
                return self._drip(reply, data)
            try:
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting: that is what the test provoked

        def _drip(self, reply: Reply, data: bytes) -> None:
            head = f"HTTP/1.1 {reply.status} OK\r\nContent-Length: {len(data)}\r\n\r\n"
            try:
                for byte in head.encode() + data:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(reply.drip)
            except (BrokenPipeError, ConnectionResetError):
                pass

        do_GET = do_POST = do_PATCH = _serve

        def log_message(self, *args) -> None:
            pass

    return Handler


ACTIONS_BOT = "github-actions[bot]"


class Comments:
    """Issue comments of one pull request, kept as GitHub keeps them (list, create, edit).

    The token belongs to `login`: with the Actions bot (the default), GET /user is refused
    as GitHub refuses it to an Actions token; with another user, it answers the login."""

    def __init__(self, fake: FakeGitHub, slug: str, pr: int, login: str = ACTIONS_BOT) -> None:
        self.items: list[dict[str, Any]] = []
        self.slug, self.pr, self.login = slug, pr, login
        if login == ACTIONS_BOT:
            fake.on(
                "GET", "/user", Reply(403, {"message": "Resource not accessible by integration"})
            )
        else:
            fake.on("GET", "/user", Reply(body={"login": login}))
        base = f"/repos/{slug}/issues"
        fake.serve("GET", f"{base}/{pr}/comments", self.list)
        fake.serve("POST", f"{base}/{pr}/comments", self.create)
        fake.serve("PATCH", f"{base}/comments/*", self.edit)

    def add(self, body: str, author: str | None = None) -> dict[str, Any]:
        number = 1000 + len(self.items)
        url = f"https://github.invalid/{self.slug}/pull/{self.pr}#issuecomment-{number}"
        user = {"login": author or self.login}
        comment = {"id": number, "body": body, "html_url": url, "user": user}
        self.items.append(comment)
        return comment

    def list(self, seen: Seen) -> Reply:
        query = parse_qs(urlsplit(seen.path).query)
        per_page = min(int(query.get("per_page", ["30"])[0]), 100)
        page = int(query.get("page", ["1"])[0])
        return Reply(body=self.items[(page - 1) * per_page : page * per_page])

    def create(self, seen: Seen) -> Reply:
        return Reply(201, self.add(seen.body["body"]))

    def edit(self, seen: Seen) -> Reply:
        number = int(urlsplit(seen.path).path.rsplit("/", 1)[1])
        for comment in self.items:
            if comment["id"] == number:
                comment["body"] = seen.body["body"]
                return Reply(body=comment)
        return Reply(404, {"message": "Not Found"})
