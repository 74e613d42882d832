"""The files of one revision, and which file a module name or a relative import means.

Module names map to files through source roots: a root is a directory
holding top-level packages (`python/` for `python/sglang/...`). Unless a
matrix names them, the roots are found from the target's own path: for
`import sglang.srt.utils`, the directory above the `sglang` component of the
target path, then the repository root. Files are read lazily and once.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Reader = Callable[[str], "str | None"]  # repository path -> text (None: no such file)


class RevisionFiles:
    """Read-only access to one revision's files, by repository path and by module name."""

    def __init__(
        self,
        read: Reader,
        target: str,
        roots: tuple[str, ...] = (),
        ident: Callable[[str], tuple[str, object]] | None = None,
        edit: Callable[[str, str], Any] | None = None,
    ) -> None:
        self._read, self.target, self.roots = read, target, roots
        self._ident, self._edit = ident, edit
        self._texts: dict[str, str | None] = {}
        self._asked: dict[str, None] = {}  # every path read or identified, in order
        self.made: dict[str, Any] = {}  # path -> its layout (see SourceCache.layout_of)
        self.missed: list[str] = []  # each path an import was looked for at and not found

    @classmethod
    def of(cls, files: dict[str, str], target: str, roots: tuple[str, ...] = ()) -> RevisionFiles:
        """Files held in memory (tests, and callers that already read them)."""
        return cls(files.get, target, roots)

    @contextmanager
    def targeting(self, path: str) -> Iterator[None]:
        """These files, read for another target file (an entry's `otherwise:`) while the
        block runs: roots are found from it, and it leads what was read (the first
        target stays among the paths read)."""
        first, self.target = self.target, path
        try:
            yield
        finally:
            self.target = first

    def read(self, path: str) -> str | None:
        if path not in self._texts:
            self._asked[path] = None
            self._texts[path] = self._read(path)
        return self._texts[path]

    def ident(self, path: str) -> tuple[str, object]:
        """What tells the file's content apart from another revision's without reading it,
        when the reader knows (a commit's blob id), else its text; equal idents, equal
        texts."""
        if self._ident is None:
            return ("text", self.read(path))
        self._asked[path] = None
        return self._ident(path)

    def exists(self, path: str) -> bool:
        """Whether the revision has the file (asked of its blob, when the reader knows)."""
        return self.ident(path)[1] is not None

    def blob(self, path: str) -> str | None:
        """The git blob of the file, when the reader knows it (None: it does not, or there
        is no such file)."""
        kind, found = self.ident(path)
        return found if kind == "blob" else None

    def edit(self, path: str, base: str | None) -> Any:
        """git's patch that makes the file from the blob `base`, when the reader has it (a
        scan's `harness.patches.FilePatch`); else None."""
        if self._edit is None or base is None:
            return None
        self._asked[path] = None
        return self._edit(path, base)

    def paths_read(self) -> tuple[str, ...]:
        """Every path asked for so far (found or not), the target's first."""
        return tuple(dict.fromkeys([self.target, *self._asked]))

    def module_file(self, module: str, importer: str, level: int = 0) -> str | None:
        """The file of `module` imported from the file `importer` (`level` dots for a
        relative import); None when the repository has no such module here."""
        for base in self._bases(module, importer, level):
            stem = posixpath.join(base, *module.split(".")) if module else base
            for path in (f"{stem}/__init__.py", f"{stem}.py"):  # a package wins, as in Python
                if self.exists(path):
                    return path
                self.missed.append(path)  # a file added there would be found instead
        return None

    def _bases(self, module: str, importer: str, level: int) -> list[str]:
        if level:
            base = posixpath.dirname(importer)
            for _ in range(level - 1):
                base = posixpath.dirname(base)
            return [base]
        return list(dict.fromkeys([*self.roots, *roots_for(self.target, module), ""]))


def roots_for(target: str, module: str) -> list[str]:
    """Directories of the target path that hold `module`'s top-level package, deepest last."""
    top, parts = module.split(".")[0], target.split("/")[:-1]
    return ["/".join(parts[:i]) for i, part in enumerate(parts) if part == top]


SOURCE_DIRS = ("src", "python", "lib")  # a leading directory that holds packages, by convention


def module_name(path: str, roots: tuple[str, ...] = (), tops: tuple[str, ...] = ()) -> str:
    """The dotted name Python imports the file `path` under, as the project imports it:
    relative to the first of `roots` that holds it, else to the directory above the
    shallowest component named one of `tops` (top-level packages the world knows), else
    to a leading `src`, `python` or `lib` directory, else to the repository root. A
    package's `__init__.py` is the package (`python/sglang/srt/utils.py` with root
    `python` or top `sglang` is `sglang.srt.utils`)."""
    parts = path.split("/")
    names = parts[_package_root(parts, roots, tops) :]
    names[-1] = names[-1].removesuffix(".py")
    if names[-1] == "__init__" and len(names) > 1:
        names.pop()
    return ".".join(names)


def package_dir(path: str, roots: tuple[str, ...] = (), tops: tuple[str, ...] = ()) -> str:
    """The directory of the top-level package holding `path`, found as `module_name` finds
    its name (`python/sglang` for `python/sglang/srt/utils.py`)."""
    parts = path.split("/")
    return "/".join(parts[: _package_root(parts, roots, tops) + 1])


def _package_root(parts: list[str], roots: tuple[str, ...], tops: tuple[str, ...]) -> int:
    """How many leading components of the path `parts` are the source root's."""
    for root in roots:
        root_parts = [p for p in root.split("/") if p not in ("", ".")]
        if parts[: len(root_parts)] == root_parts and len(parts) > len(root_parts):
            return len(root_parts)
    found = next((i for i, part in enumerate(parts[:-1]) if part in tops), None)
    if found is not None:
        return found
    return 1 if len(parts) > 1 and parts[0] in SOURCE_DIRS else 0
