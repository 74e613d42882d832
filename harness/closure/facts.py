"""What a world knows of its project's code, read from text: the facts closure/ reads.

A world (`harness.engine.world.World`) answers, at run time, the names the
code reads; its `WorldFacts` say, before anything runs, how the project's code
is laid out: which decorator registers a pass, what a helper calls its view,
which class declares the view's fields and the inputs' defaults, which
functions run the passes, and which of the project's own definitions the world
stands for (its "homes", compared between revisions as definitions, never run).
A new world is these facts and its answers, in one module of
`harness.engine.worlds`.

`PLAIN` is the world of a project of one's own: passes registered with
`@register_post_process` (or named in the matrix), no class of its own, no
homes; messages call its code "the project".
"""

from __future__ import annotations

import ast
import functools
import posixpath
from dataclasses import dataclass

from harness.closure.shadows import get_logger, registry_of

Home = tuple[str, ...]  # the files (paths from a source root) where a name is defined

# names the worlds bind for Python's standard library (harness.engine.worlds.dataclass,
# .caching, .environ), by the module they come from: code reads them only by importing
# them from it
STANDARD_NAMES = {
    **dict.fromkeys(("dataclass", "field", "dataclasses"), "dataclasses"),
    **dict.fromkeys(("lru_cache", "cache", "cached_property", "functools"), "functools"),
    "os": "os",
    "json": "json",
    "glob": "glob",
    **dict.fromkeys(("copy", "deepcopy"), "copy"),
    **dict.fromkeys(("Enum", "auto", "enum"), "enum"),
}


def standard_import(node: ast.AST, name: str, bound_as: str | None = None) -> bool:
    """Whether `node` imports the world name `name` from its standard module (`from
    functools import cache as c`, for `cache`; `import functools`), binding it as
    `bound_as` when that is given (`import functools as ft` binds no `functools`)."""
    module = STANDARD_NAMES.get(name)
    if isinstance(node, ast.ImportFrom):
        return (
            node.level == 0
            and node.module == module
            and any(
                alias.name == name and bound_as in (None, alias.asname or alias.name)
                for alias in node.names
            )
        )
    return isinstance(node, ast.Import) and any(
        alias.name == name == module and bound_as in (None, alias.asname or alias.name)
        for alias in node.names
    )


def world_import(node: ast.AST, name: str) -> bool:
    """Whether an import of the world name `name` gives the world's: from anywhere for
    a name of the project's, from its standard module for one of Python's."""
    return name not in STANDARD_NAMES or standard_import(node, name)


@dataclass(frozen=True, eq=False)  # one per world: compared (and hashed) by identity
class WorldFacts:
    """How a world's project writes its code (see the module)."""

    display: str = "the project"  # the project's name, as messages say it: "SGLang"
    register: str = "register_post_process"  # the decorator that adds a pass to the run
    view_names: frozenset[str] = frozenset({"view", "cfg", "server_args", "self"})
    view_class: tuple[str, str] | None = None  # (module, class) whose methods the view has
    view_type: str = "view"  # the name of the view's class, as the project's is
    view_functions: frozenset[str] = frozenset()  # names bound to functions returning the view
    step_runners: frozenset[str] = frozenset()  # world functions `f(step, view)` calling step(view)
    # what an entry point runs (directories end with `/`, from a source root); none: the
    # entry's directory and the view class's module
    resolution_code: tuple[str, ...] = ()
    view_namespaces: str | None = None  # the list of classes whose fields the view's class has
    run_entries: tuple[tuple[str, str], ...] = ()  # (module, function) that run the passes
    input_defaults: tuple[str, str] | None = None  # (module, class) declaring inputs' defaults
    logger: str = "logger"  # `logger = logging.getLogger(...)`: the world's drops it all
    # the project's own definitions of names the world answers, by the file's base name
    # (`resolving_view` in model_override_base.py) ...
    homes: tuple[tuple[str, Home], ...] = ()
    # ... and by the file a name is imported from (`from sglang.srt.utils import is_hip`);
    # `default_homes` for a name listed in neither
    imported_homes: tuple[tuple[str, Home], ...] = ()
    default_homes: Home = ()
    # (marker, keyword, other calls): a field the code may declare is one whose annotation
    # is `Annotated[T, ..., marker(keyword=True)]` (SGLang's `Arg(resolvable=True)`; the
    # other calls are classes an annotation holds that are not the marker: `NS(...)`)
    declarable: tuple[str, str, frozenset[str]] | None = None
    # the marker's keyword giving a field's fallback: its value when neither the
    # resolution nor the input gives one (SGLang's `Arg(fallback=...)`, read by
    # `with_fallback`)
    fallback: str | None = None

    @property
    def class_name(self) -> str | None:
        """The name of the configuration's class (SGLang's `ServerArgs`), if it has one:
        what an entry reads it by, the world answering it (`configuration_class`)."""
        return None if self.view_class is None else self.view_class[1]

    @property
    def tops(self) -> tuple[str, ...]:
        """The top-level packages of the modules the world names (`sglang`): where the
        project's own files are, and what gives a file's dotted name as it imports it."""
        named = [self.view_class, self.input_defaults, *self.run_entries]
        return tuple(dict.fromkeys(pair[0].split(".")[0] for pair in named if pair is not None))

    def stands_for(self, name: str, node: ast.AST, path: str) -> bool:
        """Whether the world's answer for `name` stands for the file's own definition
        `node` by design: the logger, a registering decorator that returns its argument
        unchanged (the harness calls each pass itself), or a home's definition."""
        if name == self.logger:
            return get_logger(node)
        if name == self.register:
            return registry_of(node) is not None
        if name == self.class_name and _at(path, self.view_class[0].replace(".", "/") + ".py"):
            return True  # an entry reads the configuration's class as the world gives it
        return self.stands_for_file(name, path)

    def stands_for_file(self, name: str, path: str) -> bool:
        """Whether `path` is a file whose definition of `name` the world answers by design
        (a home, by the file's base name or its path)."""
        homes = dict(self.homes).get(name, ())
        named = any(_at(path, h) if "/" in h else posixpath.basename(path) == h for h in homes)
        return named or self.is_home(name, path)

    def is_home(self, name: str, path: str) -> bool:
        """Whether `path` is a file where the project defines `name`, which the world
        answers: importing it from there reads the definition the world stands for."""
        homes = dict(self.imported_homes).get(name, self.default_homes)
        return any(_at(path, home) for home in homes)

    def is_home_file(self, path: str) -> bool:
        """Whether `path` is a file where the project defines names the world answers
        (compared between revisions as definitions: `harness.closure.homes`)."""
        return any(_at(path, home) for home in self._home_files)

    @functools.cached_property
    def _home_files(self) -> frozenset[str]:
        imported = {home for _, found in self.imported_homes for home in found}
        return frozenset(imported | set(self.default_homes))


def within(path: str, places: tuple[str, ...]) -> bool:
    """Whether `path` is one of `places` (files), or below one (directories, ending `/`)."""
    return any(_at(path, place) if not place.endswith("/") else
               path.startswith(place) or f"/{place}" in path for place in places)  # fmt: skip


def _at(path: str, home: str) -> bool:
    return path == home or path.endswith("/" + home)


PLAIN = WorldFacts()
