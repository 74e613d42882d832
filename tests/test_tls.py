"""The package index over HTTPS, its certificate checked against the CA source pip would be
told to use: a real HTTPS server on loopback, with a certificate from a test CA (trustme),
serves a simple-API index of one wheel of our SGLang-shaped package.

The order of the settings is the documented one (docs/cli.md), written here as a list:
each setting, set to the right CA, wins over every one after it set to a wrong CA, and set
to a wrong CA loses the read although every one after it names the right CA.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import select
import shutil
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
import trustme

from harness import gitio
from harness.releases.pipconfig import config_files
from tests.apiserver import serving
from tests.conftest import one_line_error, run_cli
from tests.releases import Index, Served, _handler, build_wheel, package_files

VERSION = "0.3.0"
WHEEL = f"sglang-{VERSION}-py3-none-any.whl"
PIN = f"pypi:sglang=={VERSION}"
ORDER = ["--cert", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE",
         "pip.conf"]  # fmt: skip
ENVIRONMENT = ("PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE",
               "SSL_CERT_DIR", "PIP_INDEX_URL", "HTTPS_PROXY", "https_proxy", "ALL_PROXY",
               "all_proxy", "NO_PROXY", "no_proxy")  # fmt: skip
# OpenSSL's own words for a chain that ends at no trusted CA (a test CA nobody trusts)
UNTRUSTED = "unable to get local issuer certificate"


@dataclass
class TlsIndex(Index):
    """tests.releases.Index, served over TLS with `certificate`; counts TCP connections."""

    certificate: trustme.LeafCert | None = None
    connections: int = 0

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.certificate.configure_cert(context)
        self.server = _TlsServer(context, self)
        serving(self.server).start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}/simple"


class _TlsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, context: ssl.SSLContext, index: TlsIndex) -> None:
        super().__init__(("127.0.0.1", 0), _handler(index))
        self.context, self.index = context, index

    def get_request(self):
        raw, address = self.socket.accept()
        with self.index.lock:
            self.index.connections += 1
        return self.context.wrap_socket(raw, server_side=True), address

    def handle_error(self, request, client_address) -> None:
        pass  # a client refusing our certificate is what some tests want


@dataclass(frozen=True)
class Cas:
    right: Path  # the CA that signed the index's certificate
    wrong: Path  # another CA
    not_pem: Path  # a file holding no certificate


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def wheel(history) -> bytes:
    repo = gitio.open_repo(history.repo())
    return build_wheel(package_files(repo, gitio.resolve(repo, "#30835").sha), VERSION)


@pytest.fixture
def index(authority, wheel):
    served = TlsIndex([Served(WHEEL, wheel)], certificate=authority.issue_cert("127.0.0.1"))
    yield served
    served.close()


@pytest.fixture
def cas(authority, tmp_path) -> Cas:
    right, wrong, not_pem = tmp_path / "right.pem", tmp_path / "wrong.pem", tmp_path / "x.pem"
    authority.cert_pem.write_to_path(str(right))
    trustme.CA().cert_pem.write_to_path(str(wrong))
    not_pem.write_text("not a certificate\n")
    return Cas(right, wrong, not_pem)


@pytest.fixture(autouse=True)
def no_settings(monkeypatch, tmp_path):
    """None of the machine's CA settings, proxies or pip configuration (this machine's own
    /etc/pip.conf names a cert); a home of the test's own."""
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))


def read(index: TlsIndex, *extra: str):
    """diff the release with itself: exit 0 when it was read (and nothing changed)."""
    return run_cli("diff", PIN, PIN, "--index-url", index.url, "--no-cache", "--format",
                   "json", *extra)  # fmt: skip


def assert_read(result, index: TlsIndex) -> None:
    assert result.code == 0, result.err
    assert json.loads(result.out)["base"]["subject"] == f"sglang {VERSION} ({WHEEL})"
    assert f"/files/{WHEEL}" in index.requests


def point(setting: str, path: Path, monkeypatch, tmp_path, section: str = "global") -> list:
    """Point `setting` at `path`; the command-line arguments it takes (for --cert)."""
    if setting == "--cert":
        return ["--cert", str(path)]
    if setting == "pip.conf":
        conf = tmp_path / "pip.conf"
        conf.write_text(f"[{section}]\ncert = {path}\n")
        monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
        return []
    monkeypatch.setenv(setting, str(path))
    return []


def named(setting: str, path: Path, tmp_path, section: str = "global") -> str:
    """How the one-line messages name the setting."""
    if setting == "--cert":
        return f"--cert {path}"
    if setting == "pip.conf":
        return f"cert = {path} in [{section}] of {tmp_path / 'pip.conf'}"
    return f"{setting}={path}"


def test_without_the_ca_it_is_one_whole_line_and_no_retry(index, authority):
    line = one_line_error(read(index))
    assert "the system's certificate store (through truststore)" in line
    assert f"({UNTRUSTED});" in line
    assert "pass --cert FILE or set PIP_CERT to a PEM file" in line
    assert line.endswith("as for pip")  # the whole advice, not cut
    assert "try again" not in line and index.connections == 1 and index.requests == []


def test_credentials_in_the_index_url_are_never_printed(index):
    secret_url = index.url.replace("https://", "https://someone:s3cr3t-t0ken@")
    result = run_cli("diff", PIN, PIN, "--index-url", secret_url, "--no-cache")
    line = one_line_error(result)
    assert "s3cr3t-t0ken" not in result.err + result.out and "someone" not in line
    assert "https://***@127.0.0.1:" in line


@pytest.mark.parametrize("rank", range(len(ORDER)), ids=ORDER)
def test_a_setting_with_the_right_ca_wins_over_every_later_one(
    rank, index, cas, monkeypatch, tmp_path
):
    argv = point(ORDER[rank], cas.right, monkeypatch, tmp_path)
    for later in ORDER[rank + 1 :]:
        argv += point(later, cas.wrong, monkeypatch, tmp_path)
    assert_read(read(index, *argv), index)


@pytest.mark.parametrize("rank", range(len(ORDER) - 1), ids=ORDER[:-1])
def test_a_setting_with_a_wrong_ca_is_used_though_later_ones_are_right(
    rank, index, cas, monkeypatch, tmp_path
):
    argv = point(ORDER[rank], cas.wrong, monkeypatch, tmp_path)
    for later in ORDER[rank + 1 :]:
        argv += point(later, cas.right, monkeypatch, tmp_path)
    line = one_line_error(read(index, *argv))
    assert f"does not verify against {named(ORDER[rank], cas.wrong, tmp_path)} " in line
    assert UNTRUSTED in line and index.requests == []


def test_pip_install_section_overrides_global(index, cas, monkeypatch, tmp_path):
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[install]\ncert = {cas.right}\n\n[global]\ncert = {cas.wrong}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert_read(read(index), index)


def test_a_pip_conf_in_the_user_directory_is_read(index, cas, monkeypatch, tmp_path):
    monkeypatch.delenv("PIP_CONFIG_FILE")  # the machine's global files stay below the user's
    user = tmp_path / "home" / ".config" / "pip" / "pip.conf"
    user.parent.mkdir(parents=True)
    user.write_text(f"[install]\ncert = {cas.right}\n")
    assert_read(read(index), index)


@pytest.mark.parametrize("setting", ORDER)
def test_a_missing_cert_file_is_one_line_naming_its_setting(setting, cas, monkeypatch, tmp_path):
    missing = tmp_path / "nowhere" / "ca.pem"
    argv = point(setting, missing, monkeypatch, tmp_path)
    for later in ORDER[ORDER.index(setting) + 1 :]:
        argv += point(later, cas.right, monkeypatch, tmp_path)
    result = run_cli("diff", PIN, PIN, "--index-url", "https://127.0.0.1:9/simple", *argv)
    line = one_line_error(result)
    assert line.startswith(f"harness: error: {named(setting, missing, tmp_path)}: no such file;")


def test_a_file_holding_no_certificate_is_one_line(cas):
    result = run_cli("diff", PIN, PIN, "--index-url", "https://127.0.0.1:9/simple", "--cert",
                     str(cas.not_pem))  # fmt: skip
    line = one_line_error(result)
    assert line.startswith(f"harness: error: --cert {cas.not_pem}: holds no PEM certificate;")


def test_an_index_on_disk_needs_no_certificate(tmp_path, wheel, monkeypatch):
    """A file: index reads no certificate: a broken PIP_CERT does not stand in its way."""
    (tmp_path / "simple" / "sglang").mkdir(parents=True)
    (tmp_path / "simple" / "sglang" / "index.html").write_text(
        f'<a href="../../{WHEEL}">{WHEEL}</a>'
    )
    (tmp_path / WHEEL).write_bytes(wheel)
    monkeypatch.setenv("PIP_CERT", str(tmp_path / "missing.pem"))
    result = run_cli("diff", PIN, PIN, "--index-url", (tmp_path / "simple").as_uri(),
                     "--no-cache")  # fmt: skip
    assert result.code == 0, result.err


needs_openssl_store = pytest.mark.skipif(
    shutil.which("openssl") is None or sys.platform != "linux",
    reason="needs openssl's subject hash, and OpenSSL as the system's store (Linux)",
)


def add_to_system_store(ca: Path, monkeypatch, tmp_path) -> None:
    """Put `ca` in a store of OpenSSL's shape (a hashed directory, as a distribution's own),
    named by SSL_CERT_DIR: what truststore reads on Linux, what certifi never holds."""
    store = tmp_path / "store"
    store.mkdir(exist_ok=True)
    digest = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", str(ca)],
                            capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    shutil.copy(ca, store / f"{digest}.0")
    monkeypatch.setenv("SSL_CERT_DIR", str(store))


@needs_openssl_store
def test_with_nothing_set_the_system_store_is_used(index, cas, monkeypatch, tmp_path):
    add_to_system_store(cas.right, monkeypatch, tmp_path)
    assert_read(read(index), index)


def test_without_truststore_certifi_is_the_fallback(index, tmp_path):
    """A Python without truststore installed (stood in for by an import that fails)."""
    code = (
        "import sys; sys.modules['truststore'] = None\n"
        "from harness.cli.main import main\n"
        f"raise SystemExit(main(['diff', {PIN!r}, {PIN!r}, '--index-url', {index.url!r}, "
        "'--no-cache']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "against certifi's bundle (truststore is not installed)" in lines[0]


@pytest.mark.skipif(importlib.util.find_spec("pip") is None, reason="pip is not installed")
def test_pip_config_files_are_the_ones_pip_reads(tmp_path, monkeypatch):
    """The files, in override order, equal those `pip config debug` lists (global, user,
    site, then PIP_CONFIG_FILE's), with a PIP_CONFIG_FILE that exists (the user's files are
    left out) and one that does not."""
    named_file = tmp_path / "named.conf"
    named_file.write_text("[global]\n")
    for environ in (
        {"XDG_CONFIG_DIRS": f"{tmp_path}/a:{tmp_path}/b", "PIP_CONFIG_FILE": f"{tmp_path}/no"},
        {"PIP_CONFIG_FILE": str(named_file)},
    ):
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"),
               **{k: v for k, v in environ.items() if v}}  # fmt: skip
        assert config_files(env) == pip_debug_files(env)


def pip_debug_files(env: dict) -> list[Path]:
    done = subprocess.run([sys.executable, "-m", "pip", "config", "debug"], env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    sections: dict[str, list[Path]] = {}
    current = ""
    for line in done.stdout.splitlines():
        if not line.startswith(" "):
            current = line.rstrip(":")
            sections[current] = []
        elif ", exists: " in line and line.startswith("  ") and not line.startswith("    "):
            sections[current].append(Path(line.strip().split(", exists: ")[0]))
    return [*sections["global"], *sections.get("user", []), *sections["site"],
            *sections["env"]]  # fmt: skip


class _Proxy(socketserver.ThreadingTCPServer):
    """A TLS-intercepting proxy: it answers CONNECT, shows the client a certificate of its
    own CA for the host, and relays to the real server over TLS it checks itself."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, own: trustme.CA, upstream_ca: Path) -> None:
        self.inside = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        own.issue_cert("127.0.0.1").configure_cert(self.inside)
        self.outside = ssl.create_default_context(cafile=str(upstream_ca))
        super().__init__(("127.0.0.1", 0), _ProxyHandler)

    def handle_error(self, request, client_address) -> None:
        pass


class _ProxyHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        target = self.rfile.readline().split()[1].decode()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        host, port = target.rsplit(":", 1)
        client = self.server.inside.wrap_socket(self.connection, server_side=True)
        upstream = self.server.outside.wrap_socket(
            socket.create_connection((host, int(port))), server_hostname=host
        )
        _pump(client, upstream)

    def finish(self) -> None:
        pass


def _pump(client: ssl.SSLSocket, upstream: ssl.SSLSocket) -> None:
    """Relay both ways from one thread until either end closes: an SSL object is not safe
    to read in one thread while another writes it (two relaying threads stalled a read)."""
    other = {client: upstream, upstream: client}
    with contextlib.suppress(OSError), contextlib.ExitStack() as closing:
        for end in other:
            closing.callback(end.close)
            end.setblocking(False)
        while readable := select.select(list(other), [], [], 60)[0]:
            if not all(_drain(source, other[source]) for source in readable):
                return


def _drain(source: ssl.SSLSocket, sink: ssl.SSLSocket) -> bool:
    """Send on everything `source` holds decrypted; False once it has closed."""
    while True:
        try:
            data = source.recv(1 << 16)
        except ssl.SSLWantReadError:
            return True
        if not data:
            return False
        sink.setblocking(True)
        sink.sendall(data)
        sink.setblocking(False)


@pytest.fixture
def proxy_ca(cas, monkeypatch, tmp_path):
    """A TLS-intercepting proxy in HTTPS_PROXY; its CA's PEM file."""
    own, pem = trustme.CA(), tmp_path / "proxy.pem"
    own.cert_pem.write_to_path(str(pem))
    proxy = _Proxy(own, cas.right)
    serving(proxy).start()
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
    yield pem
    proxy.shutdown()
    proxy.server_close()


def test_behind_a_tls_intercepting_proxy_the_proxys_ca_is_the_one(index, cas, proxy_ca):
    line = one_line_error(read(index, "--cert", str(cas.right)))
    assert f"does not verify against --cert {cas.right} ({UNTRUSTED})" in line
    assert_read(read(index, "--cert", str(proxy_ca)), index)


@needs_openssl_store
def test_behind_the_proxy_the_system_store_is_used_too(index, proxy_ca, monkeypatch, tmp_path):
    """The system's store is the one the proxy's connections verify with, not certifi's."""
    line = one_line_error(read(index))
    assert (
        f"does not verify against the system's certificate store (through truststore) ({UNTRUSTED})"
        in line
    )
    add_to_system_store(proxy_ca, monkeypatch, tmp_path)
    assert_read(read(index), index)
