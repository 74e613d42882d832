"""Name resolution across the files of one revision: what a closure is made of.

Starting from the target, every free name is resolved where it is read, in
this order: a name the world binds (a probe of the machine, `torch`, `envs`,
`logger`) comes from the world, whatever the file says; a name the file
defines at top level brings that definition in, and its own free names in
turn; a name the file imports from a module of the same repository is
resolved in that module's file, at the same revision, by the same rules
(re-exports through `__init__.py` and relative imports included); an
imported module (`import a.b as m`, `from a import b` where `b` is a file)
brings in the names read as its attributes. Anything else is an error naming
the file and line that could not be used, and the fix.
"""

from __future__ import annotations

import ast
import builtins
import posixpath
from collections.abc import Collection
from typing import NamedTuple

from harness.closure.facts import (
    STANDARD_NAMES,
    WorldFacts,
    standard_import,
    within,
    world_import,
)
from harness.closure.index import CONDITIONAL, DEFINITION, IMPORT, Binding, index_module
from harness.closure.modules import RevisionFiles
from harness.closure.mutations import ANY, DEFINES, NO_EFFECTS, Reach, effects_reader
from harness.closure.names import (
    FUNCTIONS,
    bound_by,
    decorator_name,
    free_names,
    own_nodes,
    strip_annotations,
)
from harness.closure.pieces import Layout, SourceCache, Statement, postpones, refusal
from harness.closure.shadows import (
    bound_names,
    names_bound_at_import,
    own_definition,
    registry_of,
    star_imports,
)
from harness.errors import Unevaluable

TARGET, HELPER, METHOD = "target", "helper", "method"  # how a statement enters a closure
METHOD_PREFIX = "_harness_view_method_"  # a view method compiled as a plain function
RESERVED = "_harness_"  # names the repository may not bind (METHOD_PREFIX's)


class ViewClass(NamedTuple):
    """Where the view's methods are defined (the class the view stands for), and the view
    attributes the world and the matrix already answer (never looked up there)."""

    module: str
    name: str
    answered: frozenset[str]
    identities: frozenset[str] = frozenset()  # functions that return the view itself
    namespaces: str | None = None  # a module-level list of classes declaring more fields
    names: frozenset[str] = frozenset()  # what a helper calls the view (its first parameter)
    declarable: tuple[str, str, frozenset[str]] | None = None  # WorldFacts.declarable
    fallback: str | None = None  # WorldFacts.fallback


class LocalImport(NamedTuple):
    """`from module import name` inside a function of `path`, read from the repository:
    at run time the import gives `source_name` of the file `source`."""

    path: str
    module: str
    level: int
    name: str
    source: str
    source_name: str
    deferred: str = ""  # else: why the name, read from outside an entry's code, is refused
    local: str = ""  # ... and the name the import binds (`as` another), as its uses read it


class Part(NamedTuple):
    """One statement of a closure, with the file it comes from and how it entered."""

    path: str
    statement: Statement
    role: str


class Need(NamedTuple):
    """`name` in the file `path` is the world's `world`."""

    path: str
    name: str
    world: str


class Link(NamedTuple):
    """`name` in `path` is `source_name` of the file `source` (None: that module itself)."""

    path: str
    name: str
    source: str
    source_name: str | None


class Use(NamedTuple):
    """A name read by `statement`, to be looked up in the file `path`; `at` is where
    messages say it is read when that is another file (an import statement)."""

    path: str
    statement: Statement
    at: str | None = None

    def where(self, name: str) -> str:
        """`file:line` where the name is read."""
        if self.at is not None:
            return self.at
        for child in ast.walk(self.statement.node):
            if isinstance(child, ast.Name) and child.id == name:
                return f"{self.path}:{child.lineno + self.statement.offset}"
        return f"{self.path}:{self.statement.lineno}"


def reach_in(index: dict[str, list[Binding]]) -> Reach:
    """What a file's statements may change, through its own functions and aliases (its
    `index`: every statement that binds a name, conditionally too, but imports)."""

    def definitions(name: str) -> list[ast.stmt]:
        return [b.statement.node for b in index.get(name, []) if b.kind != IMPORT]

    return Reach(definitions)


MAX_IMPORT_HOPS = 8  # files a name's import is followed through, looking for its writers
MUTATIONS = "mutations"  # a layout's fact: its changers, and the names that told what they change


class Resolver:
    """Walks free names from the target outwards, across files, collecting the closure."""

    def __init__(
        self,
        cache: SourceCache,
        files: RevisionFiles,
        bound: Collection[str],
        matrix_file: str,
        view_class: ViewClass | None = None,
        chosen: Collection[str] = (),
        *,
        facts: WorldFacts,
    ) -> None:
        self.cache, self.files, self.bound, self.matrix_file = cache, files, bound, matrix_file
        self.view_class, self.facts = view_class, facts
        self.chosen = frozenset(chosen)  # names the matrix binds on purpose (`bindings:`)
        self.data: dict[str, set[str]] = {}  # per file: names the closure reads there
        self.watchers: dict[tuple[str, str], list[tuple[str, Statement]]] = {}
        self.reaches: dict[str, Reach] = {}
        self.registries: set[tuple[str, str]] = set()  # (file, registry) a stand-in fills
        self.homes: set[tuple[str, str]] = set()  # (world name, its SGLang home) imported
        self.deferred: dict[str, list[tuple]] = {}  # file -> watches waiting for its index
        self.stars: dict[str, list[tuple[Statement, str]]] = {}  # file -> its `import *`s
        self.methods: dict[str, str] = {}  # view method -> the file defining it
        self.methods_missing: set[str] = set()  # looked up, not (yet) found
        self.method_kinds: dict[str, str] = {}  # view method -> how its class binds it
        self.blocked: list[tuple[str, str]] | None = None  # set: collect, do not raise
        self.defer = False  # an unbound name is refused where it is reached, not here
        self.unbound: dict[tuple[str, str], str] = {}  # (file, name) -> why nothing binds it
        # (file, name) -> the module a name nothing binds is, and the line of the import,
        # when its file binds it once, by `import M` or `import M as name`: told apart
        # from `import evil as argparse`
        self.outside: dict[tuple[str, str], tuple[str, int]] = {}  # -> (module, its line)
        self.indexes: dict[str, dict[str, list[Binding]]] = {}
        self.layouts: dict = {}
        self.imported: list[str] = []  # an entry's files, in the order the project loads them
        self.changers: set[tuple[str, int, str]] = set()  # (file, line, the data's file)
        self.first_missed = len(files.missed)  # what `missing` counts from
        self.included: dict[tuple[str, int, int], Part] = {}  # by (file, line, member)
        self.needs: dict[tuple[str, str], str] = {}
        self.links: dict[tuple[str, str], Link] = {}
        self.local_imports: set[LocalImport] = set()
        self.builtins: set[str] = set()
        self.seen: set[tuple[str, str]] = set()
        self.peeked: set[tuple[str, str]] = set()  # names only asked whether a file binds them

    def index(self, path: str) -> dict[str, list[Binding]]:
        if path not in self.indexes:
            layout = self.cache.layout_of(self.files, path) or self.cache.layout("", path)
            refused = refusal(layout, path)
            if refused is not None:  # what an import of the file would raise
                raise Unevaluable(refused)
            self.layouts[path] = layout
            self.indexes[path] = index = index_module(layout)
            reserved = next((name for name in index if name.startswith(RESERVED)), None)
            if reserved is not None:  # it would clash with what harness compiles
                raise Unevaluable(
                    f"{path} binds {reserved}: a name starting with {RESERVED} is one harness "
                    "gives the methods it compiles; rename it"
                )
            self._scan(path)
        return self.indexes[path]

    def add(self, path: str, statement: Statement, role: str) -> None:
        self.included[(path, statement.lineno, statement.member)] = Part(path, statement, role)
        for name in sorted(shape(statement, role)[1]):
            self.resolve(name, Use(path, statement))
        if isinstance(statement.node, ast.FunctionDef | ast.AsyncFunctionDef):
            self._local_imports(path, statement)
        elif isinstance(statement.node, ast.ClassDef):  # its methods' imports
            self._local_imports(path, statement, within=True)
        if self.view_class is not None and (role != HELPER or self._handed_view(statement)):
            for method in sorted(view_calls(statement.node) - self.view_class.answered):
                self._view_method(method)

    def _handed_view(self, statement: Statement) -> bool:
        """Whether a helper of an entry (`defer`) takes the configuration, as its first
        parameter's name says (a pass the entry runs, `def _default(view)`): its calls on
        that parameter are the class's methods, as they are the target's."""
        node = statement.node
        if not (self.defer and isinstance(node, ast.FunctionDef) and node.args.args):
            return False
        return node.args.args[0].arg in self.view_class.names

    def resolve(self, name: str, use: Use) -> None:
        key = (use.path, name)
        link = self.links.get(key)
        if link is not None and link.source_name is None:
            self._module_attributes(link, use)
            return
        if key in self.seen:
            return
        world = name in self.bound and self._world_reads(name, use)
        bindings = None if world else self._bindings(name, use)
        if (above := self._read_in_place(bindings, use)) is not None:
            placed = (use.path, f"{name}@{use.statement.slot}.{use.statement.position}")
            if placed not in self.seen:  # read where it stands: the bindings above it
                self.seen.add(placed)
                self.peeked.add(key)
                self._found(name, above, use)
            return
        self.seen.add(key)
        if world:
            self._shadowed(name, use)
            self.needs[key] = name
            self.mark(use.path, name)
            return
        self._found(name, bindings, use)

    def _world_reads(self, name: str, use: Use) -> bool:
        """Whether the use reads the world's `name`: any world name, but one standing for
        Python's standard library only where the file imports it from there (else it is
        the file's own, or a NameError, as in Python)."""
        if name not in STANDARD_NAMES:
            return True
        bindings = self._bindings(name, use)
        if bindings and standard_import(bindings[-1].statement.node, name, name):
            return True
        return _imported_where_read(use.statement.node, name)

    def _bindings(self, name: str, use: Use) -> list[Binding] | None:
        """The statements binding `name` in the use's file, without a trailing `import *`
        of a repository module that binds no such name (a star import is conditional)."""
        bindings = self.index(use.path).get(name)
        while bindings and self._star_without(name, bindings[-1], use.path):
            bindings = bindings[:-1]
        return bindings or None

    def _star_without(self, name: str, binding: Binding, path: str) -> bool:
        node = binding.statement.node
        if binding.kind != CONDITIONAL or not isinstance(node, ast.ImportFrom):
            return False
        if not any(alias.name == "*" for alias in node.names):
            return False
        module = self.files.module_file(node.module or "", path, node.level)
        if module is None or module == path:
            return False
        self.peeked.add((module, name))
        index = self.index(module)
        stars = any(piece.memo("stars", _stars) for piece in self.layouts[module].pieces)
        return name not in index and "__getattr__" not in index and not stars

    def _read_in_place(self, bindings: list[Binding] | None, use: Use) -> list[Binding] | None:
        """The bindings above a module-level statement that reads the name where it stands
        (`TABLE = dict(_tmp)` before `del _tmp`), when a later one is conditional: None
        when it reads it later (in a function, a lambda, a class) or none is."""
        if not bindings or bindings[-1].kind != CONDITIONAL:
            return None
        statement = use.statement
        node = statement.node
        if statement.member >= 0 or isinstance(node, DEFINES):
            return None
        if any(isinstance(n, ast.Lambda) for n in ast.walk(node)):
            return None
        here = (statement.slot, statement.position)
        earlier = [b for b in bindings if (b.piece, b.position) < here]
        if len(earlier) == len(bindings) or not earlier or earlier[-1].kind == CONDITIONAL:
            return None
        return earlier

    def _found(self, name: str, bindings: list[Binding] | None, use: Use) -> None:
        if bindings and bindings[-1].kind == IMPORT:
            self._imported(name, bindings[-1], use)
            module = _module_imported(bindings[0].statement.node, name)
            once = len(bindings) == 1 and (use.path, name) in self.unbound
            if module and once and not self._rebindable(use.path, name):
                self.outside[(use.path, name)] = (module, bindings[0].statement.lineno)
        elif bindings:
            self._include(name, bindings, use)
        elif hasattr(builtins, name):
            self.builtins.add(name)
        else:
            self._fail(name, self._unknown(name, use), use)

    def _rebindable(self, path: str, name: str) -> bool:
        """Whether anything in the file may bind `name` besides its one top-level binding:
        a `global name` in any function, or a star import."""
        nodes = (n for piece in self.layouts[path].pieces for top in piece.nodes
                 for n in ast.walk(top))  # fmt: skip
        return any(
            (isinstance(n, ast.Global) and name in n.names)
            or (isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names))
            for n in nodes
        )

    def watched(self) -> dict[str, frozenset[str]]:
        """Per file, every name looked up in it, and every name whose definitions told what
        a top-level statement there may change (`fill()` is harmless while `def fill` changes
        nothing): an edit binding none of them changes nothing."""
        out: dict[str, set[str]] = {}
        for path, name in self.seen | self.peeked | set(self.links):
            out.setdefault(path, set()).add(name)
        for path, reach in self.reaches.items():
            out.setdefault(path, set()).update(reach.consulted())
        for path, layout in self.layouts.items():
            _, consulted = layout.facts.get(MUTATIONS, ((), ()))  # when another run read it
            out.setdefault(path, set()).update(consulted)
        return {path: frozenset(names) for path, names in out.items()}

    def missing(self) -> frozenset[str]:
        """Every path an import was looked for at, and not found, since this resolver was
        made: a file added at one of them would be imported instead."""
        return frozenset(self.files.missed[self.first_missed :])

    # --- definitions and imports ---------------------------------------------------

    def _include(self, name: str, bindings: list[Binding], use: Use) -> None:
        if bindings[-1].kind != DEFINITION:
            self._fail(name, self._conditional(name, bindings[-1], use), use)
            return
        for binding in bindings:
            statement = binding.statement
            if binding.kind == DEFINITION and (use.path, statement.lineno, -1) not in self.included:
                self.add(use.path, statement, HELPER)
        self.mark(use.path, name)

    def _imported(self, name: str, binding: Binding, use: Use) -> None:
        node, key = binding.statement.node, (use.path, name)
        imported = _imported_name(node, name)
        if imported is not None and imported in self.bound and world_import(node, imported):
            self.needs[key] = imported
            self.mark(use.path, name)
            if imported not in self.chosen:
                self._imported_world_name(binding.statement, name, use.path, 1)
            return
        found = self._source_of(node, name, use.path)
        if found is None:
            self._fail(name, self._unbound(name, binding, use), use)
            return
        if self.defer and not self.resolution_code(found[0]) and not self._self_contained(*found):
            self._fail(name, self._outside(name, binding, use, found[0]), use)
            return
        source, source_name = found
        link = self.links[key] = Link(use.path, name, source, source_name)
        self.mark(use.path, name)
        if source_name is not None:
            at = f"{use.path}:{binding.statement.lineno}"
            self.resolve(source_name, Use(source, binding.statement, at))
            further = self.links.get((source, source_name))
            if further is None or further.source_name is not None:
                return
            link = self.links[key] = further._replace(path=use.path, name=name)  # a re-export
        self._module_attributes(link, use)

    def _self_contained(self, path: str, name: str | None,
                        within: frozenset[str] = frozenset()) -> bool:  # fmt: skip
        """Whether `path` binds `name` once, with an undecorated `def` or an assignment,
        that reads nothing but builtins (and a function's parameters), names the world
        answers, which the file imports once from their home (`from sglang.srt.environ
        import envs`), and other names of the file that are such themselves (not one
        `within` the chain that reads this one), and no statement of the file may change
        it: SGLang's `is_no_spec_infer_or_topk_one(cfg)` in `utils/common.py`,
        `CP_V2_DEFAULT_MODEL_CLASSES = frozenset({...})`, `pp_spec_stable_rows_enabled()`
        (`envs.SGLANG_ENABLE_PP_SPEC.get()`), `is_deepseek_dsa(config)` in
        `configs/model_config.py` (which calls `_hf_arch` and `_hf_attr` there). An entry
        reads such a name from outside the resolution code, as a pass reads its helpers."""
        index = self.index(path)
        bindings = index.get(name, []) if name is not None else []
        if len(bindings) != 1 or bindings[0].kind != DEFINITION:
            return False
        statement = bindings[0].statement
        node = statement.node
        if isinstance(node, ast.FunctionDef) and node.decorator_list:
            return False
        if not isinstance(node, ast.FunctionDef | ast.Assign):
            return False
        frees = shape(statement, HELPER)[1]
        world = {free for free in frees if self._world_name_in(path, free, index)}
        chain = within | {name}
        own = {free for free in frees - world - chain  # (not a builtin the file rebinds)
               if free in index and not hasattr(builtins, free)
               and self._self_contained(path, free, chain)}  # fmt: skip
        if not all(hasattr(builtins, free) or free in world | own for free in frees):
            return False
        if any(free in index for free in frees - world - own):  # a builtin the file rebinds
            return False
        nodes = [n for piece in self.layouts[path].pieces for n in piece.nodes]
        if any(star_imports(n) or _rebinds_builtins(n, frees) for n in nodes):
            return False
        watched = {name, ANY, *frees}
        return not any(watched & data for _, data, _ in self._changers(path))

    def _world_name_in(self, path: str, name: str, index: dict[str, list[Binding]]) -> bool:
        """Whether the file at `path` binds `name` once, importing a name the world
        answers from a file where the project defines it (its home)."""
        bindings = index.get(name, [])
        if len(bindings) != 1 or bindings[0].kind != IMPORT:
            return False
        node = bindings[0].statement.node
        imported = _imported_name(node, name)
        if imported is None or imported not in self.bound or not world_import(node, imported):
            return False
        module = self.files.module_file(node.module or "", path, node.level)
        return module is not None and self.facts.stands_for_file(imported, module)

    def _local_imports(self, path: str, statement: Statement, within: bool = False) -> None:
        """Follow `from m import x` inside a function into the resolution code: a module
        in the target's own directory, or the view class's module. Names the world binds,
        and other modules (SGLang imports its probes of the model and the machine this
        way), are answered by the world when the import runs. In a class's methods
        (`within`), only imports of resolution code are followed, not helpers from
        outside it: a class holds methods the resolution never calls (SGLang's
        `SpeculativeAlgorithm.create_worker` imports the model workers), and an import
        that runs fails there, naming what it reads."""
        for node in ast.walk(statement.node):
            if not isinstance(node, ast.ImportFrom):
                continue
            for alias in node.names:
                world = alias.name in self.bound and world_import(node, alias.name)
                if world and alias.name not in self.chosen:
                    self._local_home(node, alias.name, path)
                homes = {*dict(self.facts.homes), *dict(self.facts.imported_homes)}
                homed = alias.name in homes and alias.name not in self.chosen
                if world and (homed or alias.name == self.facts.class_name):
                    # SGLang's own definition read from another file that defines it: the
                    # project runs that one (another module's class of that name is not
                    # the configuration's)
                    self._imported_world_name(statement, alias.asname or alias.name, path, 1,
                                              node)  # fmt: skip
                if world or alias.name == "*":
                    continue
                if within and not self._imports_resolution_code(node, path):
                    continue
                found = self._source_of(node, alias.asname or alias.name, path)
                if found is None or found[1] is None:
                    continue
                source, source_name = found
                module, level = node.module or "", node.level
                outside = not self.resolution_code(source)
                if outside and not (self.defer and self._self_contained(*found)):
                    why = self._deferred_import(path, statement, node, alias, source)
                    if why:
                        item = LocalImport(path, module, level, alias.name, source, source_name)
                        local = alias.asname or alias.name
                        self.local_imports.add(item._replace(deferred=why, local=local))
                    continue
                at = f"{path}:{node.lineno + statement.offset}"
                self.resolve(source_name, Use(source, statement, at))
                entry = LocalImport(path, module, level, alias.name, source, source_name)
                self.local_imports.add(entry)

    def _deferred_import(self, path: str, statement: Statement, node: ast.ImportFrom,
                         alias: ast.alias, source: str) -> str:  # fmt: skip
        """Why a name an entry's function imports from a file outside the resolution code
        is refused where the code uses it ("": refused where the import runs). SGLang's
        import succeeds, the file defining the name, so the import binds a stand-in that
        refuses every use (`harness.engine.deferral.deferred_import`): a handler imports a
        model's config class before it tests the architecture. Only where each use is
        one the stand-in itself refuses before Python looks at what it is
        (`_refused_uses`): Python's own checks of a value's type (`raise`, `except`,
        `"".join`, a class pattern, `is`) would answer for it."""
        name = alias.asname or alias.name
        if not self.defer or not self.index(source).get(alias.name):
            return ""
        checks = self.index(path)
        if any(check in checks for check in CLASS_CHECKS) or self._any_star(path):
            return ""  # (the file may rebind isinstance)
        if not _refused_uses(statement.node, name):
            return ""
        return (
            f"{name} is imported at {path}:{node.lineno + statement.offset} from {source}, "
            "outside the resolution code an entry runs, and the world does not answer it: "
            f"bind it under `bindings:` in {self.matrix_file}"
        )

    def _any_star(self, path: str) -> bool:
        """Whether the file at `path` has an `import *` of any module at its top level."""
        return any(piece.memo("stars", _stars) for piece in self.layouts[path].pieces)

    def _imports_resolution_code(self, node: ast.ImportFrom, path: str) -> bool:
        module = self.files.module_file(node.module or "", path, node.level)
        return module is not None and self.resolution_code(module)

    def _local_home(self, node: ast.ImportFrom, name: str, path: str) -> None:
        """A world name a function imports from its SGLang home: compared like a
        top-level import of it (see `homes`)."""
        module = self.files.module_file(node.module or "", path, node.level)
        if module is not None and self.facts.is_home(name, module):
            self.homes.add((name, module))

    def resolution_code(self, path: str) -> bool:
        """Whether the file at `path` is resolution code: next to the target, or the
        module of the view's class; for an entry point (`defer`), where the world says
        its project's resolution code is (`WorldFacts.resolution_code`), if it says."""
        if self.defer and self.facts.resolution_code:
            return within(path, self.facts.resolution_code)
        if posixpath.dirname(path) == posixpath.dirname(self.files.target):
            return True
        view = self.view_class
        return view is not None and path == self.files.module_file(view.module, self.files.target)

    def _source_of(self, node: ast.stmt, name: str, path: str) -> tuple[str, str | None] | None:
        """The repository file (and the name in it) that an import of `name` reads."""
        files = self.files
        if isinstance(node, ast.Import):
            alias = next(a for a in node.names if (a.asname or a.name.split(".")[0]) == name)
            if alias.asname is None and "." in alias.name:
                return None  # `import a.b` binds `a`: not followed (use `import a.b as m`)
            found = files.module_file(alias.name, path)
            return None if found is None else (found, None)
        assert isinstance(node, ast.ImportFrom)
        alias = next(a for a in node.names if (a.asname or a.name) == name)
        module = files.module_file(node.module or "", path, node.level)
        if module is None:
            return None
        self.peeked.add((module, alias.name))  # a binding of it there changes what it reads
        if self._submodule_there(module, alias.name):  # `from pkg import submodule`
            sub = ".".join(filter(None, [node.module or "", alias.name]))
            found = files.module_file(sub, path, node.level)
            if found is not None:
                return found, None
        return module, alias.name

    def _submodule_there(self, module: str, name: str) -> bool:
        """Whether `name` read off `module` may be its submodule: the module binds no such
        name, or binds it last by importing it from itself (`from . import sub` in a
        package's `__init__.py`, which binds the submodule)."""
        bindings = self.index(module).get(name)
        if not bindings:
            return True
        node = bindings[-1].statement.node
        return (
            bindings[-1].kind == IMPORT
            and isinstance(node, ast.ImportFrom)
            and self.files.module_file(node.module or "", module, node.level) == module
        )

    def _module_attributes(self, link: Link, use: Use) -> None:
        """Resolve, in the linked module, each attribute `use` reads off the module name."""
        reads = [
            node
            for node in ast.walk(use.statement.node)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == link.name
        ]
        bare = sum(
            isinstance(n, ast.Name) and n.id == link.name for n in ast.walk(use.statement.node)
        )
        if bare > len(reads):
            self._fail(
                link.name,
                f"module {link.name} (from {link.source}) is used at {use.where(link.name)} "
                f"other than as {link.name}.NAME: only attribute reads of an imported module "
                "are followed; import the names it needs instead",
            )
        for node in sorted(reads, key=lambda n: n.attr):
            at = f"{use.path}:{node.lineno + use.statement.offset}"
            self.resolve(node.attr, Use(link.source, use.statement, at))

    def _view_method(self, name: str) -> None:
        """Bring in the view class's method `name`, if the class defines it here (else the
        read stays a view attribute, and strictness names it when it runs)."""
        if name in self.methods or name in self.methods_missing:
            return
        self.methods_missing.add(name)
        found = self.view_class_member(name)
        if found is not None:
            path, statement = found
            self.methods_missing.discard(name)
            self.methods[name] = path
            self.method_kinds[name] = method_kind(statement)
            self.add(path, statement, METHOD)

    def view_class_member(self, name: str) -> tuple[str, Statement] | None:
        """The method `name` of the view's class, with the file defining the class."""
        view = self.view_class
        path = self.files.module_file(view.module, self.files.target)
        bindings = self.index(path).get(view.name, []) if path else []
        if path:
            self.seen.add((path, view.name))  # an edit to the class must not reuse this closure
        if not bindings or bindings[-1].kind != DEFINITION:
            return None
        cls = bindings[-1].statement
        if not isinstance(cls.node, ast.ClassDef):
            return None
        members = [
            n for n, node in enumerate(cls.node.body)
            if isinstance(node, ast.FunctionDef) and node.name == name
        ]  # fmt: skip
        return (path, cls._replace(member=members[-1])) if members else None

    # --- module-level changes of data the closure reads ------------------------------

    def mark(self, path: str, name: str) -> None:
        """`name` in `path` is read by the closure: every top-level statement that may
        change it comes in too, and runs in file order with the definitions."""
        names = self.data.setdefault(path, set())
        if name in names:
            return
        names.add(name)
        changers = self.watchers.pop((path, name), []) + self.watchers.pop((path, ANY), [])
        for where, statement in changers:
            self._mutation(where, statement, path, name)

    def _scan(self, path: str) -> None:
        """Watch, for each top-level statement of `path` that may change data, the names
        (here, or in the repository file they are imported from) it may change."""
        for statement, data, foreign in self._changers(path):
            for name in sorted(data):
                self._watch((path, name), path, statement)
                self._through_import(path, name, statement, call=False)
            for name in sorted(foreign):
                self._through_import(path, name, statement, call=True)
        for job in self.deferred.pop(path, []):
            self._watch_in(path, *job)

    def _watch(self, key: tuple[str, str], path: str, statement: Statement) -> None:
        read = self.data.get(key[0], ())
        if key[1] in read or (key[1] == ANY and read):
            self._mutation(path, statement, *key)
        else:
            self.watchers.setdefault(key, []).append((path, statement))

    def _through_import(self, path: str, name: str, statement: Statement, call: bool) -> None:
        """Watch, in the repository file `path` imports `name` from, that name (or, for a
        function called, what it may change there), and on through the files that file
        imports what it may change from. Done when that file is indexed anyway: looking
        never brings a file into the closure."""
        self._watch_from(path, path, statement, name, call, 0)

    def _watch_from(self, where: str, path: str, statement: Statement, name: str, call: bool,
                    hops: int) -> None:  # fmt: skip
        sources = self._imported_from(where, name, call) if hops < MAX_IMPORT_HOPS else []
        for source, source_name, calls in sources:
            job = (path, statement, source_name, calls, hops + 1)
            if source in self.indexes:
                self._watch_in(source, *job)
            else:
                self.deferred.setdefault(source, []).append(job)

    def _imported_from(self, path: str, name: str, call: bool) -> list[tuple[str, str, bool]]:
        """Where `path` imports `name` from: each (repository file, the name there, whether
        it is called). A module imported whole may have any of its names changed through
        it (ANY; `import a.b` binds `a`: each of a, a.b); `m.f()` calls `f` of m's file,
        `K.f()` the method of K's."""
        owner, _, attr = name.partition(".")
        bindings = self.index(path).get(owner)
        node = bindings[-1].statement.node if bindings and bindings[-1].kind == IMPORT else None
        files, found = self.files, []
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname == owner:
                    found.append((files.module_file(alias.name, path), attr))
                elif alias.asname is None and alias.name.split(".")[0] == owner:
                    parts = alias.name.split(".")
                    found += [(files.module_file(".".join(parts[:n]), path), "")
                              for n in range(1, len(parts) + 1)]  # fmt: skip
        elif isinstance(node, ast.ImportFrom):
            module = files.module_file(node.module or "", path, node.level)
            for alias in (a for a in node.names if (a.asname or a.name) == owner):
                found.append((module, name.replace(owner, alias.name, 1)))  # a name of it
                if module is None or module.endswith("/__init__.py"):  # or a submodule (of a
                    # package, or of a directory without __init__.py: a namespace package)
                    sub = ".".join(filter(None, [node.module or "", alias.name]))
                    found.append((files.module_file(sub, path, node.level), attr))
        return [(f, n or ANY, call and bool(n)) for f, n in found if f is not None]

    def _watch_in(self, module: str, path: str, statement: Statement, name: str, call: bool,
                  hops: int = 1) -> None:  # fmt: skip
        if name == ANY:
            self._watch((module, ANY), path, statement)
            return
        names, foreign = {name}, frozenset()
        if call:
            found, foreign = self._reach(module).of(NO_EFFECTS._replace(calls=frozenset({name})))
            names = set(found)
        for each in sorted(names):
            self._watch((module, each), path, statement)
            self._watch_from(module, path, statement, each, False, hops)
        for each in sorted(foreign):  # what it calls that another file defines
            self._watch_from(module, path, statement, each, True, hops)

    def _changers(self, path: str) -> list[tuple[Statement, frozenset[str], frozenset[str]]]:
        """The statements of `path` that may change data, with what they may change (per
        layout: the same file text is read once per run)."""
        reach = self._reach(path)

        def compute(layout: Layout) -> list:
            found = []
            key, read = effects_reader(postpones(n for p in layout.pieces for n in p.nodes))
            for slot, piece in enumerate(layout.pieces):
                for position in range(len(piece.nodes)):
                    statement = layout.statement(slot, position)
                    changes = statement.memo(key, read)
                    if changes != NO_EFFECTS:
                        found.append((statement, *reach.of(changes)))
            return found, reach.consulted()

        return self.layouts[path].memo(MUTATIONS, compute)[0]

    def _reach(self, path: str) -> Reach:
        if path not in self.reaches:
            self.reaches[path] = reach_in(self.index(path))
        return self.reaches[path]

    def _mutation(self, path: str, statement: Statement, where: str, name: str) -> None:
        self.changers.add((path, statement.lineno, where))
        if (path, statement.lineno, -1) in self.included:
            return
        try:
            self.add(path, statement, HELPER)
        except Unevaluable as exc:
            raise Unevaluable(
                f"{path}:{statement.lineno} may change {name} (of {where}) when "
                f"{self.facts.display} imports it, and the closure reads {name}, but the "
                f"statement cannot be evaluated: {exc}"
            ) from None

    # --- names the world supplies and the file defines --------------------------------

    def _shadowed(self, name: str, use: Use, hops: int = 0) -> None:
        """Report the file's own definition of a world name the closure reads (see
        `harness.closure.shadows`), unless the matrix binds the name on purpose."""
        if name in self.chosen or hops > 8:
            return
        for statement in self._binders(use.path, name):
            node = own_definition(statement.node, name)
            if node is None:
                if isinstance(statement.node, ast.ImportFrom):  # follow it to its definition
                    self._imported_world_name(statement, name, use.path, hops + 1)
                continue
            if self.facts.stands_for(name, node, use.path):
                if name == self.facts.register:
                    self.registries |= {(use.path, r) for r in registry_of(node) or ()}
                continue
            line = getattr(node, "lineno", 1) + statement.offset
            self._fail(
                name,
                f"{use.path}:{line} defines {name}, which the world supplies in its place "
                f"({self.facts.display} would run the file's own): remove the definition, or "
                f"bind {name} under `bindings:` in {self.matrix_file} to replace it on purpose",
            )
            return
        for statement, module in self._star_sources(use.path):  # `from m import *`
            if name in self.index(module):
                self._shadowed(name, Use(module, statement), hops + 1)

    def _imported_world_name(self, statement: Statement, name: str, path: str, hops: int,
                             node: ast.stmt | None = None) -> None:  # fmt: skip
        """Report the definition an import of a world name reads, when it is a file of the
        repository that defines the name itself and not where SGLang defines it (a PR's
        `from .helpers import get_platform`, also inside a function: `node`, the import
        the `statement` holds); a home file is not read (`is_home`)."""
        node = statement.node if node is None else node
        if not isinstance(node, ast.ImportFrom):
            return
        alias = next(a for a in node.names if (a.asname or a.name) == name)
        module = self.files.module_file(node.module or "", path, node.level)
        if module is not None and self.facts.is_home(alias.name, module):
            self.homes.add((alias.name, module))  # the project runs that one: see `homes`
        if module is None or self.facts.is_home(alias.name, module):
            return
        found = self._source_of(node, name, path)
        if found is not None and found[1] is not None:
            self._shadowed(found[1], Use(found[0], statement), hops)

    def _binders(self, path: str, name: str) -> list[Statement]:
        """The top-level statements of `path` that bind or unbind `name` in any way."""
        self.index(path)
        layout = self.layouts[path]
        return [
            layout.statement(*at) for at in layout.memo("binders", _binders_by_name).get(name, ())
        ]

    def _star_sources(self, path: str) -> list[tuple[Statement, str]]:
        """Each `from m import *` of `path` with a repository module, and its file."""
        if path not in self.stars:
            layout, found = self.layouts[path], []
            for slot, piece in enumerate(layout.pieces):
                for position, star in piece.memo("stars", _stars):
                    module = self.files.module_file(star.module or "", path, star.level)
                    if module is not None:
                        found.append((layout.statement(slot, position), module))
            self.stars[path] = found
        return self.stars[path]

    # --- messages ------------------------------------------------------------------

    def _fail(self, name: str, reason: str, use: Use | None = None) -> None:
        """A name nothing can supply: an error, or (when surveying) one more blocker, or
        (`defer`, a free name of a file) refused when the code reaches it: an entry point's
        code spans every platform and feature, and only what a cell runs must be bound."""
        if self.blocked is not None:
            self.blocked.append((name, reason))
        elif self.defer and use is not None:
            why = reason.replace(f"name {name} (used at {use.where(name)}) ", "", 1)
            why = why.removeprefix("is ")  # `name X is read at F:L: defined nowhere in F`
            self.unbound[(use.path, name)] = why
        else:
            raise Unevaluable(reason)

    def _unbound(self, name: str, binding: Binding, use: Use) -> str:
        node = binding.statement.node
        module = node.module if isinstance(node, ast.ImportFrom) else None
        level = "." * getattr(node, "level", 0)
        origin = (
            f" from {level}{module or ''}, which this repository does not hold here,"
            if (module or level)
            else ", as a module this repository does not hold here,"
        )
        return (
            f"name {name} (used at {use.where(name)}) is imported at "
            f"{use.path}:{binding.statement.lineno}{origin} and the world does not bind it: "
            f"bind it under `bindings:` in {self.matrix_file}"
        )

    def _conditional(self, name: str, binding: Binding, use: Use) -> str:
        return (
            f"name {name} (used at {use.where(name)}) is defined conditionally at "
            f"{use.path}:{binding.statement.lineno} and not bound by the world: bind it "
            f"under `bindings:` in {self.matrix_file}"
        )

    def _outside(self, name: str, binding: Binding, use: Use, source: str) -> str:
        return (
            f"name {name} (used at {use.where(name)}) is imported at "
            f"{use.path}:{binding.statement.lineno} from {source}, outside the resolution "
            f"code an entry runs, and the world does not answer it: bind it under "
            f"`bindings:` in {self.matrix_file}"
        )

    def _unknown(self, name: str, use: Use) -> str:
        return (
            f"name {name} (used at {use.where(name)}) is defined nowhere in {use.path}: "
            f"bind it under `bindings:` in {self.matrix_file}"
        )


CLASS_CHECKS = ("isinstance", "issubclass")


def _refused_uses(function: ast.AST, name: str) -> bool:
    """Whether every use of `name` in `function` is one a stand-in refuses before Python
    looks at the value: an attribute of it (read, written or deleted), a call of it, or
    the class `isinstance(x, name)` or `issubclass(c, name)` tests (alone or in a tuple
    written there); and only one import binds it, nothing rebinds it, nor the checks."""
    refused = _refusing_sites(function, name)
    bound, names = 0, {name, *CLASS_CHECKS}
    for node in ast.walk(function):
        if isinstance(node, ast.Name):
            if node.id in names and (not isinstance(node.ctx, ast.Load)
                                     or (node.id == name and id(node) not in refused)):  # fmt: skip
                return False
        elif isinstance(node, ast.alias):
            local = bound_by(node)
            if local & names - {name}:
                return False
            bound += name in local
        elif bound_by(node) & names:
            return False
    return bound == 1


def _refusing_sites(function: ast.AST, name: str) -> set[int]:
    """The ids of the reads of `name` in `function` at a site a stand-in refuses."""
    sites: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute):
            sites.add(id(node.value))
        elif isinstance(node, ast.Call):
            sites.add(id(node.func))
            check = isinstance(node.func, ast.Name) and node.func.id in CLASS_CHECKS
            if check and len(node.args) == 2 and not node.keywords:
                second = node.args[1]
                sites.update(id(e) for e in (second.elts if isinstance(second, ast.Tuple)
                                              else [second]))  # fmt: skip
    return sites


def _stars(nodes: list[ast.stmt]) -> list[tuple[int, ast.ImportFrom]]:
    return [(n, star) for n, node in enumerate(nodes) for star in star_imports(node)]


def _imported_where_read(node: ast.stmt, name: str) -> bool:
    """Whether every read of `name` in `node` is in a function that imports it from its
    standard module itself, or inside one that does (`def run(): import os` then
    `os.getenv(...)` there; never a read beside `def helper(): import os`)."""
    parents = {id(child): parent for parent in ast.walk(node)
               for child in ast.iter_child_nodes(parent)}  # fmt: skip
    importing = {id(scope) for scope in ast.walk(node) if isinstance(scope, FUNCTIONS)
                 and any(standard_import(n, name, name)
                         for n in own_nodes(scope, (*FUNCTIONS, ast.ClassDef)))}  # fmt: skip
    reads = [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name]
    if not importing or not reads:
        return False
    for read in reads:
        child, scope = read, parents.get(id(read))
        while scope is not None and not (id(scope) in importing and _inside(child, scope)):
            child, scope = scope, parents.get(id(scope))
        if scope is None:
            return False
    return True


def _inside(child: ast.AST, scope: ast.AST) -> bool:
    """Whether `child` of the function `scope` runs in its body, not where it is defined
    (its decorators, defaults and annotations are evaluated in the enclosing scope)."""
    header = [*getattr(scope, "decorator_list", ()), getattr(scope, "args", None),
              getattr(scope, "returns", None)]  # fmt: skip
    return not any(child is part for part in header)


def _rebinds_builtins(node: ast.AST, names: frozenset[str]) -> bool:
    """Whether a statement may change one of the builtins `names` through the `builtins`
    module (`builtins.max = min`, `setattr(builtins, ...)`, `vars(builtins)`); adding a
    name of its own there (`builtins.FP8_E4M3_MAX = ...`, as SGLang's utils do) is not."""
    for n in ast.walk(node):
        through = isinstance(n, ast.Attribute) and _is_builtins(n.value)
        written = through and n.attr in names and not isinstance(n.ctx, ast.Load)
        if written or (through and n.attr.startswith("__")):  # `builtins.__dict__`
            return True
        if isinstance(n, ast.Call) and any(_is_builtins(a) for a in n.args):
            return True  # setattr(builtins, name, ...), vars(builtins), ...
    return False


def _is_builtins(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("builtins", "__builtins__")


def _module_imported(node: ast.stmt, name: str) -> str | None:
    """The top-level module `import M` or `import M as name` binds `name` to; None for any
    other statement (`import a.b` imports a submodule, which may not exist)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if (alias.asname or alias.name) == name and "." not in alias.name:
                return alias.name
    return None


def _imported_name(node: ast.stmt, name: str) -> str | None:
    """The name an import binds `name` from (`from m import a as name` -> a); None for
    `import m as name` (a module, not a name the world could bind)."""
    if isinstance(node, ast.ImportFrom):
        for alias in node.names:
            if (alias.asname or alias.name) == name:
                return alias.name
    return None


def shape(statement: Statement, role: str) -> tuple[str, frozenset[str]]:
    """The statement as it enters a closure: its normalized text and its free names."""

    def compute(node: ast.stmt) -> tuple[str, frozenset[str]]:
        stripped = stripped_node(node, role)
        return ast.unparse(stripped), frozenset(free_names(stripped))

    return statement.memo(("shape", role), compute)


DESCRIPTORS = frozenset(("property", "staticmethod", "classmethod", "cached_property"))


def stripped_node(node: ast.stmt, role: str) -> ast.stmt:
    """A copy without annotations. Decorators stay, and run as SGLang would run them (the
    world binds `register_post_process` as the identity), but on a method taken out of
    its class: there `property` and its kind mean nothing, and the method is renamed so
    that it cannot clash with the module's own names."""
    stripped = strip_annotations(node)
    if role == METHOD:
        kept = [d for d in stripped.decorator_list if decorator_name(d) not in DESCRIPTORS]
        stripped.decorator_list = kept
        stripped.name = METHOD_PREFIX + stripped.name
    return stripped


def placed_node(statement: Statement, role: str) -> ast.stmt:
    """`stripped_node` of the statement, at its file lines: one copy per statement, role
    and place, kept on its piece (the closures of a split diff's parts share helpers,
    and each part's would otherwise copy them again). Only the last place is kept: a
    history whose edits move the statement keeps one copy, not one per commit. Shared:
    read it, never change it."""
    key = ("placed", role, statement.position, statement.member)
    found = statement.piece.facts.get(key)
    if found is None or found[0] != statement.offset:
        node = ast.increment_lineno(stripped_node(statement.node, role), statement.offset)
        found = statement.piece.facts[key] = (statement.offset, node)
    return found[1]


METHOD_KINDS = ("staticmethod", "classmethod")


def method_kind(statement: Statement) -> str:
    """How the class binds its method (a member `statement`): "" (a plain method),
    `staticmethod`, `classmethod` (decorated so, by those names), "rebound" (another
    statement of the class body binds the name: `pick = staticmethod(pick)`),
    "decorated" (by anything else: `@property`), or "super" (it calls `super()`, which
    needs the class the method is compiled without, or defines a class, which Python
    names after it)."""
    cls, node = statement.piece.nodes[statement.position], statement.node
    if any(other is not node and node.name in bound_names(other) for other in cls.body):
        return "rebound"
    names = [d.id if isinstance(d, ast.Name) else "" for d in node.decorator_list]
    if any(name not in METHOD_KINDS for name in names):
        return "decorated"
    if any((isinstance(n, ast.Name) and n.id == "super") or isinstance(n, ast.ClassDef)
           for n in ast.walk(node)):  # fmt: skip
        return "super"  # (a class defined there too: Python names it in the class)
    return next((kind for kind in METHOD_KINDS if kind in names), "")


def view_calls(node: ast.stmt) -> set[str]:
    """Methods a function calls on its first parameter (the view, or `self`): `p.m(...)`."""
    if not isinstance(node, ast.FunctionDef) or not node.args.args:
        return set()
    view = node.args.args[0].arg
    return {
        call.func.attr
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == view
    }


def _binders_by_name(layout: Layout) -> dict[str, list[tuple[int, int]]]:
    """Each name bound or unbound at import time in the file: where ((slot, position))."""
    found: dict[str, list[tuple[int, int]]] = {}
    for slot, piece in enumerate(layout.pieces):
        for position, names in piece.memo("binders", names_bound_at_import):
            for name in names:
                found.setdefault(name, []).append((slot, position))
    return found
