"""A stand-in for the GitHub REST API: a real HTTP server on loopback, answering from a script."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (to provoke client timeouts)


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
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def on(self, method: str, path: str, *replies: Reply) -> None:
        self.script[(method, path)] = list(replies)

    def next_reply(self, method: str, path: str) -> Reply:
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
            with fake.lock:
                fake.seen.append(Seen(self.command, self.path, dict(self.headers), body))
            reply = fake.next_reply(self.command, self.path)
            time.sleep(reply.delay)
            data = b"" if reply.body is None else json.dumps(reply.body).encode()
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

        do_GET = do_POST = do_PATCH = _serve

        def log_message(self, *args) -> None:
            pass

    return Handler
