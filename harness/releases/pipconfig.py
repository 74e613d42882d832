"""pip's own configuration files, found and read as pip finds and reads them (pip is not
imported: it may not be installed beside the harness, and its internals are not an API).

The files, each overriding the ones before: the global ones (`$XDG_CONFIG_DIRS/pip/`,
then `/etc/`), the user's (`~/.pip/`, then `$XDG_CONFIG_HOME/pip/`), the environment's
(`sys.prefix`), then `PIP_CONFIG_FILE`. An existing `PIP_CONFIG_FILE` skips the user's;
`PIP_CONFIG_FILE` set to the null device reads none. macOS and Windows use pip's
directories there. In the merged settings a key of `[install]` overrides `[global]`, as
`pip install` reads them.
"""

from __future__ import annotations

import configparser
import locale
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError

SECTIONS = ("global", "install")  # the later overrides the earlier


@dataclass(frozen=True)
class Setting:
    """A value of pip's configuration, and where it was read."""

    key: str
    value: str
    section: str
    path: Path

    def __str__(self) -> str:
        return f"{self.key} = {self.value} in [{self.section}] of {self.path}"


def setting(key: str, environ: Mapping[str, str]) -> Setting | None:
    """The value pip's configuration gives `key` (None: unset, or set to nothing)."""
    found: dict[str, Setting] = {}
    for path in config_files(environ):
        for section, value in _read(path, key).items():
            found[section] = Setting(key, value, section, path)
    chosen = next((found[s] for s in reversed(SECTIONS) if s in found), None)
    return chosen if chosen is not None and chosen.value else None


def config_files(environ: Mapping[str, str]) -> list[Path]:
    """The files pip reads, in the order they override each other (missing ones included)."""
    named = environ.get("PIP_CONFIG_FILE")
    if named == os.devnull:
        return []
    skip_user = bool(named) and Path(named).exists()
    user = [] if skip_user else _user_files(environ)
    site = [Path(sys.prefix) / _basename()]
    return [*_global_files(environ), *user, *site, *([Path(named)] if named else [])]


def _basename() -> str:
    return "pip.ini" if sys.platform == "win32" else "pip.conf"


def _global_files(environ: Mapping[str, str]) -> list[Path]:
    if sys.platform == "win32":
        return [Path(environ.get("PROGRAMDATA", r"C:\ProgramData")) / "pip" / _basename()]
    if sys.platform == "darwin":
        return [Path("/Library/Application Support/pip") / _basename()]
    dirs = environ.get("XDG_CONFIG_DIRS", "").strip() or "/etc/xdg"
    found = [Path(d) / "pip" for d in dirs.split(os.pathsep)]
    return [d / _basename() for d in [*found, Path("/etc")]]


def _user_files(environ: Mapping[str, str]) -> list[Path]:
    posix_home = environ.get("HOME") if sys.platform != "win32" else None
    home = Path(posix_home) if posix_home else Path.home()  # as os.path.expanduser("~")
    legacy = home / ("pip" if sys.platform == "win32" else ".pip") / _basename()
    return [legacy, _user_directory(environ, home) / _basename()]


def _user_directory(environ: Mapping[str, str], home: Path) -> Path:
    if sys.platform == "win32":
        return Path(environ.get("APPDATA") or home / "AppData" / "Roaming") / "pip"
    if sys.platform == "darwin":
        support = home / "Library" / "Application Support" / "pip"
        return support if support.is_dir() else home / ".config" / "pip"
    return Path(environ.get("XDG_CONFIG_HOME", "").strip() or home / ".config") / "pip"


def _read(path: Path, key: str) -> dict[str, str]:
    """{section: value} of `key` in one file (a missing file holds nothing, as for pip)."""
    if not path.is_file():
        return {}
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding=locale.getpreferredencoding(False))
    except (configparser.Error, UnicodeDecodeError, OSError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HarnessError(
            f"{path}: pip's configuration file cannot be read ({why}); fix it, or set "
            f"PIP_CONFIG_FILE={os.devnull} to read no pip configuration"
        ) from None
    return {s: parser.get(s, key) for s in SECTIONS if parser.has_option(s, key)}
