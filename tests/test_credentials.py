"""Credentials are never shown nor stored: the user name and password of a package index
URL (from --index-url, PIP_INDEX_URL or pip's configuration) appear in no message of any
error path and in no cache file, and still reach the index on a second run read from the
cache; a GitHub token with a character no header can carry is one line that does not
show it. Real loopback servers throughout."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from harness import gitio
from harness.cli.main import redacted
from tests import oracle
from tests.conftest import TOKEN, one_line_error, run_cli
from tests.releases import Index, Served, build_wheel, package_files
from tests.test_comment import PR, SLUG, comment, report_file

USER, PASSWORD = "alice", "s3cret-pa55word"
WHEEL = "sglang-{}-py3-none-any.whl"


@pytest.fixture(scope="module")
def wheels(history) -> dict[str, bytes]:
    repo = gitio.open_repo(history.repo())
    files = {v: package_files(repo, gitio.resolve(repo, rev).sha)
             for v, rev in (("0.2.0", "#30835^"), ("0.3.0", "#30835"))}  # fmt: skip
    return {v: build_wheel(f, v) for v, f in files.items()}


@pytest.fixture
def index(wheels):
    served = Index([Served(WHEEL.format(v), data) for v, data in wheels.items()],
                   login=(USER, PASSWORD))  # fmt: skip
    yield served
    served.close()


def with_login(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{USER}:{PASSWORD}@{rest}"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_with(source: str, url: str, tmp_path: Path, monkeypatch, *argv: str):
    """`harness diff 0.2.0 0.3.0` with the index URL given by `source`."""
    option: tuple[str, ...] = ()
    if source == "option":
        option = ("--index-url", url)
    elif source == "environment":
        monkeypatch.setenv("PIP_INDEX_URL", url)
    else:
        config = tmp_path / "pip.conf"
        config.write_text(f"[global]\nindex-url = {url}\n")
        monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
        monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    return run_cli("diff", "pypi:sglang==0.2.0", "pypi:sglang==0.3.0", *option, *argv)


def assert_hidden(result) -> None:
    shown = result.out + result.err
    assert PASSWORD not in shown and f"{USER}:" not in shown, shown


SOURCES = ["option", "environment", "pip.conf"]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize(
    "path",
    ["no-such-project", "refused", "not-json", "missing-file", "wrong-sha256", "bad-port"],
)
@pytest.mark.usefixtures("no_retry_pauses")
def test_no_error_path_shows_the_credentials(index, tmp_path, monkeypatch, source, path):
    monkeypatch.setenv("HARNESS_HTTP_TIMEOUT", "2")
    url = with_login(index.url)
    if path == "no-such-project":
        url += "/elsewhere"
    elif path == "refused":
        url = with_login(f"http://127.0.0.1:{closed_port()}/simple")
    elif path == "not-json":
        index.listing = lambda: (b"{not json", "application/vnd.pypi.simple.v1+json")
    elif path == "missing-file":
        listed = {"files": [{"filename": WHEEL.format("0.2.0"), "url": "/files/nothing.whl",
                             "hashes": {}}]}  # fmt: skip
        index.listing = lambda: (json.dumps(listed).encode(), "application/vnd.pypi.simple.v1+json")
    elif path == "wrong-sha256":
        index.ranges = False
        index.files[0].sha256 = "0" * 64
    else:
        url = url.replace("/simple", ":99/simple")
    result = run_with(source, url, tmp_path, monkeypatch, "--no-cache")
    one_line_error(result)
    assert_hidden(result)


@pytest.mark.parametrize("source", SOURCES)
def test_the_credentials_reach_the_index_and_no_cache_file(index, tmp_path, monkeypatch, source):
    """Two runs with one cache: the second reads its pin from the cache, and the files'
    requests still carry the login (the server refuses any that does not)."""
    cache = tmp_path / "cache"
    for _ in range(2):
        result = run_with(source, with_login(index.url), tmp_path, monkeypatch,
                          "--cache-dir", str(cache), "--format", "json")  # fmt: skip
        assert result.code == 1, result.err
        report = json.loads(result.out)
        changed = {oracle.key(i["cell"]): (i["base"]["page_size"], i["head"]["page_size"])
                   for i in report["changed"]}  # fmt: skip
        assert changed == oracle.changed_between(False, True)
        assert_hidden(result)
    stored = [p for p in cache.rglob("*") if p.is_file()]
    assert any("pins" in p.parts for p in stored)
    for path in stored:
        data = path.read_bytes()
        assert PASSWORD.encode() not in data and f"{USER}:".encode() not in data, path


def test_a_traceback_or_line_quoting_a_url_hides_its_credentials(monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", f"https://{USER}:{PASSWORD}@mirror.example/simple")
    quoted = (
        f"ValueError: bad port in 'https://{USER}:{PASSWORD}@mirror.example:x/simple'\n"
        f"  also {PASSWORD} alone, and ftp://bob:hunter22@files.example/a\n"
    )
    text = redacted(quoted)
    assert PASSWORD not in text and "hunter22" not in text and f"{USER}:" not in text
    assert "https://***@mirror.example:x/simple" in text and "ftp://***@files.example/a" in text


@pytest.mark.parametrize("inside", ["\n", "é", "\u2028", "\x01", "€"])
def test_a_token_with_any_character_no_header_carries_is_one_line(
    github_api, history, tmp_path, monkeypatch, inside
):
    report = report_file(history, tmp_path, "#30835^", "#30835", "pr.json")
    token = TOKEN[:10] + inside + TOKEN[10:]
    monkeypatch.setenv("GITHUB_TOKEN", token)
    result = comment(report)
    line = one_line_error(result)
    assert "GITHUB_TOKEN" in line and "not ASCII" in line
    assert TOKEN[:10] not in result.err and TOKEN[10:] not in result.err
    assert all(f"/{SLUG}/issues/{PR}" not in s.path for s in github_api.seen)
