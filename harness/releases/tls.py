"""Which CA certificates the package index's certificate is checked against, chosen as pip
is told: the first of these that is set wins.

  1. `--cert FILE`            4. `CURL_CA_BUNDLE`      (requests reads both, for pip)
  2. `PIP_CERT`               5. `SSL_CERT_FILE`
  3. `REQUESTS_CA_BUNDLE`     6. pip's configured `cert` (see `pipconfig`)

else the system's own store through truststore, as pip uses it; else, without
truststore, certifi's bundle (requests'). A file chosen replaces the others, as pip's
`--cert` does. (pip itself lets `REQUESTS_CA_BUNDLE` beat `--cert`, a requests
quirk; here an option on the command line wins over the environment, which wins over
configuration files.) A chosen file that is missing, unreadable or holds no
certificate is one line naming the setting that pointed at it.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from pathlib import Path

from harness.errors import HarnessError
from harness.http import Trust
from harness.releases.pipconfig import setting

ENVIRONMENT = ("PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")
ADVICE = (
    "pass --cert FILE or set PIP_CERT to a PEM file holding the CA that signs the index's "
    "certificate (behind a TLS-intercepting proxy: the proxy's CA), as for pip"
)


def index_trust(cert: str | None = None, environ: Mapping[str, str] | None = None) -> Trust:
    """The CA source for the package index, given `--cert` (None: not given)."""
    environ = os.environ if environ is None else environ
    chosen = _chosen_file(cert, environ)
    if chosen is None:
        return system_trust()
    setting_name, path = chosen
    _check(path, setting_name)
    return Trust(setting_name, ADVICE, bundle=path)


def _chosen_file(cert: str | None, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """(how the setting is named in messages, the path), for the first setting that is set;
    pip's own settings expand `~`, as pip does, requests' and OpenSSL's do not."""
    if cert:
        return f"--cert {cert}", os.path.expanduser(cert)
    for name in ENVIRONMENT:
        value = environ.get(name, "")
        if value:
            return f"{name}={value}", os.path.expanduser(value) if name == "PIP_CERT" else value
    configured = setting("cert", environ)
    if configured is None:
        return None
    return str(configured), os.path.expanduser(configured.value)


def system_trust() -> Trust:
    """The system's store through truststore; certifi's bundle when truststore is missing."""
    try:
        import truststore
    except ImportError:
        import certifi  # requests depends on it

        return Trust("certifi's bundle (truststore is not installed)", ADVICE, certifi.where())
    context = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return Trust("the system's certificate store (through truststore)", ADVICE, context=context)


def _check(path: str, named: str) -> None:
    """One line, naming the setting, when `path` cannot serve as CA certificates."""
    try:
        if Path(path).is_dir():
            os.listdir(path)
        else:
            ssl.create_default_context(cafile=path)
    except ssl.SSLError:
        _refuse(named, "holds no PEM certificate")
    except FileNotFoundError:
        _refuse(named, "no such file")
    except OSError as exc:
        _refuse(named, f"cannot be read ({exc.strerror or type(exc).__name__})")


def _refuse(named: str, problem: str) -> None:
    raise HarnessError(
        f"{named}: {problem}; point it at a PEM file of the CA certificates to trust "
        "(--cert FILE comes first, then PIP_CERT, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, "
        "SSL_CERT_FILE, pip's configured cert)"
    )
