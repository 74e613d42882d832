"""The model's checkpoint: which files it holds, on the serving machine or on the hub.

SGLang reads them by the model's path (`_is_mistral_native_format`: 0.5.18's
`server_args.py`, 0.5.23's `model_path_hook.py`): `os.path.isdir(model_path)`,
`os.path.exists(os.path.join(model_path, "params.json"))`,
`glob.glob(os.path.join(model_path, "model*.safetensors"))`, and for a model on
the hub `HfApi().model_info(model_path).siblings`, each file's name its
`.rfilename`. Two facts of the cell answer them, read with the cell's
`model_path`:

- `model.local` (default false): the path names a directory on the serving
  machine, which holds the files; else it names a hub repository, which does,
  and nothing of it is on the machine;
- `model.files` (default none): the checkpoint's files, relative to its
  directory or repository (`params.json`, `consolidated.safetensors`).

`os.path.join` is Python's own. A path that is neither the model's nor under
it, another repository, a `**` pattern, and anything else of `os.path`, `glob`
or the hub client are refused where read: what else the machine or the hub
holds is nothing the configuration tells.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import posixpath
from collections.abc import Callable
from typing import Any

from harness.engine.world import Context, Obj, Param, Resolver, Spec, world_function

LOCAL, FILES = "model.local", "model.files"
PATH_FIX = (
    "the world answers the model's own path and the files under it (fields model.local "
    "and model.files); what else the serving machine holds is nothing the matrix says"
)
HUB_FIX = (
    "the world answers the model's own repository (field model.files), read without "
    "options; bind HfApi under `bindings:` in the matrix for anything else"
)


class Checkpoint:
    """The cell's checkpoint facts, read when asked: `under(path)` is `path` relative to
    the model's (`""` for the model's own), `local()` and `files()` the two fields."""

    def __init__(self, ctx: Context) -> None:
        self.probe = ctx.probe
        self._path = Param("model_path", reader="the model's path").compile(ctx)
        self._local = Param(LOCAL, default=False, required=False, reader=LOCAL).compile(ctx)
        self._files = Param(FILES, default=[], required=False, reader=FILES).compile(ctx)
        self.hint = ctx.matrix.edit_hint

    def model_path(self) -> str:
        path = self._path(self.probe)
        if type(path) is not str or not path:
            raise self.probe.refuse("the model's path", f"set model_path to a path in {self.hint}")
        return path

    def local(self) -> bool:
        found = self._local(self.probe)
        if type(found) is not bool:
            raise self.probe.refuse(LOCAL, f"set {LOCAL} to true or false in {self.hint}", LOCAL)
        return found

    def files(self) -> list[str]:
        return self.tree()[0]

    def directories(self) -> set[str]:
        """Each directory under the model's that holds a file, at any depth."""
        return self.tree()[1]

    def tree(self) -> tuple[list[str], set[str]]:
        """The cell's files and the directories holding them, checked: relative paths,
        each once, none where a directory is."""
        found = self._files(self.probe)
        if type(found) is not list or not all(_relative(f) for f in found):
            fix = f"set {FILES} to a list of relative file paths in {self.hint}"
            raise self.probe.refuse(FILES, fix, FILES)
        directories = {"/".join(name.split("/")[:n]) for name in found
                       for n in range(1, name.count("/") + 1)}  # fmt: skip
        if len(set(found)) < len(found) or set(found) & directories:
            fix = (f"list each file of {FILES} once, and no file where another's directory "
                   f"is, in {self.hint}")  # fmt: skip
            raise self.probe.refuse(FILES, fix, FILES)
        return found, directories

    def under(self, what: str, path: Any) -> str:
        """`path` relative to the model's path ("" for the path itself); else refused."""
        root = self.model_path()
        if type(path) is str and path == root:
            return ""
        prefix = root.rstrip("/") + "/"
        if type(path) is str and path.startswith(prefix) and _relative(path[len(prefix) :]):
            return path[len(prefix) :]
        raise self.probe.refuse(f"{what}({_shown(path)})", PATH_FIX)

    def listing(self) -> list[str]:
        """The files and directories, each where the directory lists it: in the order of
        `model.files` (a directory where its first file is), which says it."""
        found: dict[str, None] = {}
        for name in self.files():
            parts = name.split("/")
            found.update(dict.fromkeys("/".join(parts[: n + 1]) for n in range(len(parts))))
        return list(found)


def _shown(value: Any) -> str:
    """`value` as a refusal names it: a long string by its ends, else its type."""
    if type(value) is not str:
        return f"a {type(value).__name__}"
    return repr(value if len(value) <= 80 else f"{value[:30]}...{value[-45:]}")


def _relative(path: Any) -> bool:
    parts = path.split("/") if type(path) is str else [""]
    return all(part not in ("", ".", "..") for part in parts)


def _isdir(facts: Checkpoint) -> Callable[[Any], bool]:
    def isdir(s: Any) -> bool:
        rel = facts.under("os.path.isdir", s)
        if not facts.local():
            return False
        return rel == "" or rel in facts.directories()

    return _named(isdir)


def _isfile(facts: Checkpoint) -> Callable[[Any], bool]:
    def isfile(path: Any) -> bool:
        rel = facts.under("os.path.isfile", path)
        return rel != "" and facts.local() and rel in facts.files()

    return _named(isfile)


def _exists(facts: Checkpoint) -> Callable[[Any], bool]:
    def exists(path: Any) -> bool:
        rel = facts.under("os.path.exists", path)
        if not facts.local():
            return False
        files, directories = facts.tree()
        return rel == "" or rel in files or rel in directories

    return _named(exists)


def _glob(facts: Checkpoint) -> Callable[..., list[str]]:
    def glob(pathname: Any, *, root_dir: Any = None, dir_fd: Any = None,
             recursive: Any = False, include_hidden: Any = False) -> list[str]:  # fmt: skip
        rel = facts.under("glob.glob", pathname)
        magic_root = any(c in facts.model_path() for c in "*?[")  # a pattern there too
        options = (root_dir, dir_fd, recursive, include_hidden) != (None, None, False, False)
        if "**" in rel or options or magic_root:  # (options: not followed)
            raise facts.probe.refuse(f"glob.glob({_shown(pathname)})", PATH_FIX)
        if not facts.local():
            return []
        if rel == "":
            return [facts.model_path()]
        root = facts.model_path().rstrip("/")
        return [f"{root}/{name}" for name in facts.listing() if _matches(name, rel)]

    return _named(glob)


def _named(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` named as Python's own (its messages say `isdir()`, not the maker's)."""
    function.__qualname__ = function.__name__
    return function


def _matches(name: str, pattern: str) -> bool:
    """Whether glob's `pattern` matches the relative `name`: part by part (`*` never
    crosses a `/`), a part starting with a dot only by one that does."""
    names, patterns = name.split("/"), pattern.split("/")
    return len(names) == len(patterns) and all(
        fnmatch.fnmatchcase(n, p) and (not n.startswith(".") or p.startswith("."))
        for n, p in zip(names, patterns, strict=True)
    )


def _hub(ctx: Context, facts: Checkpoint) -> Callable[..., Any]:
    """`HfApi`: `HfApi().model_info(model_path).siblings`, each with `.rfilename`."""
    from harness.engine.sandbox import overlay_maker  # the sandbox's, when bound

    probe = ctx.probe

    def refuse_read(label: str) -> Callable[[Any, str], Any]:
        def read(inner: Any, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            raise probe.refuse(f"{label}.{name}", HUB_FIX)

        return read

    def write(inner: Any, name: str, done: str) -> BaseException:
        return probe.refuse(f"hub.{name}", HUB_FIX, done=done)

    unhashable = "the hub client's objects are dataclasses Python does not hash"
    sibling = overlay_maker("sibling", probe, otherwise=refuse_read("sibling"), write=write,
                            name="RepoSibling", unhashable=unhashable)  # fmt: skip
    info = overlay_maker("model_info", probe, otherwise=refuse_read("model_info()"),
                         write=write, name="ModelInfo", unhashable=unhashable)  # fmt: skip
    api = overlay_maker("HfApi()", probe, otherwise=refuse_read("HfApi()"), write=write,
                        name="HfApi")  # fmt: skip

    def model_info(repo_id: Any, *args: Any, **options: Any) -> Any:
        if args or options or type(repo_id) is not str or repo_id != facts.model_path():
            raise probe.refuse(f"HfApi().model_info({_shown(repo_id)}, ...)", HUB_FIX)
        if facts.local():  # a directory's path asked of the hub: not followed
            raise probe.refuse(f"HfApi().model_info({_shown(repo_id)}, ...)", HUB_FIX)
        siblings = [sibling(None, {"rfilename": name}) for name in facts.files()]
        return info(None, {"siblings": siblings})

    reader = world_function("model_info", model_info, probe)

    def make(*args: Any, **options: Any) -> Any:
        if args or options:
            raise probe.refuse("HfApi(...) with options", HUB_FIX)
        return api(None, {"model_info": reader})

    return make


@dataclasses.dataclass(frozen=True)
class Facts(Spec):
    """One function of the checkpoint: `make(facts)` (or `make(ctx, facts)`) its answer."""

    label: str
    make: Callable[..., Callable[..., Any]]
    with_context: bool = False

    def compile(self, ctx: Context) -> Resolver:
        facts = _checkpoint(ctx)
        answer = self.make(ctx, facts) if self.with_context else self.make(facts)
        function = world_function(self.label, answer, ctx.probe)
        return lambda probe: function


def _checkpoint(ctx: Context) -> Checkpoint:
    found = ctx.shared.get("checkpoint")
    if found is None:
        found = ctx.shared["checkpoint"] = Checkpoint(ctx)
    return found


def path() -> Spec:
    """The world's `os.path`."""
    return Obj(
        "os.path",
        {
            "isdir": Facts("os.path.isdir", _isdir),
            "isfile": Facts("os.path.isfile", _isfile),
            "exists": Facts("os.path.exists", _exists),
            "join": Joined(),
        },
    )


@dataclasses.dataclass(frozen=True)
class Joined(Spec):
    """`os.path.join`: Python's own (POSIX paths, as on the serving machine)."""

    def compile(self, ctx: Context) -> Resolver:
        function = world_function("os.path.join", posixpath.join, ctx.probe)
        return lambda probe: function


def names() -> dict[str, Spec]:
    """`glob` (after `import glob`: its `glob` alone)."""
    return {"glob": Obj("glob", {"glob": Facts("glob.glob", _glob)})}


def hub() -> dict[str, Spec]:
    """The hub client's `HfApi` (`from huggingface_hub import HfApi`)."""
    return {"HfApi": Facts("HfApi", _hub, with_context=True)}
