"""A file's own definition of a name the world supplies: no silent substitution.

The world answers names such as `get_platform` or `register_post_process`
wherever the code reads them. When the file itself defines the name (a def, a
class, an assignment, `from m import other as name`), SGLang runs that
definition and the harness would not: the substitution is reported, unless
the definition is one the world stands for by design, in the shape SGLang's
released files give it:

- `logger = logging.getLogger(...)`: the world's logger drops what it is told;
- `register_post_process` that adds its argument to a registry and returns it
  unchanged: the harness calls each pass itself, so registering is moot;
- the view functions and model probes SGLang keeps in `model_override_base.py`
  (`resolved_view` also in `overrides.py`, up to 0.5.18), which the world
  answers from the cell (`HOMES`).

A name the matrix binds under `bindings:` is replaced on purpose and never
reported.
"""

from __future__ import annotations

import ast
import functools
import posixpath

REGISTER = "register_post_process"
LOGGER = "logger"
# SGLang's own definitions the sglang world answers in their place, by the file that
# holds them in the released trees (0.5.16, 0.5.18-0.5.23).
BASE = "model_override_base.py"
HOMES = {
    "resolved_view": ("overrides.py", BASE),  # overrides.py up to 0.5.18
    "resolving_view": (BASE,),
    "record_of": (BASE,),
    "use_mla_backend": (BASE,),
    "model_config_of": (BASE,),
}


def own_definition(node: ast.stmt, name: str) -> ast.AST | None:
    """The part of the top-level statement `node` that binds (or unbinds) `name` as the
    file's own, in the code that runs at import: anything but an import of the same name
    (`import name`, `from m import name`). A name bound by a statement gives the statement
    (`logger = ...`, `del name`)."""
    for child, statement in _module_level(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            found = next((a for a in child.names if _renames(a, name, child)), None)
            if found is not None:
                return found
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if child.name == name:
                return child
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store | ast.Del):
            if child.id == name:
                return statement
        elif getattr(child, "name", None) == name:  # `except E as name`, `case [*name]`
            return child
    return None


def names_bound_at_import(nodes: list[ast.stmt]) -> list[tuple[int, frozenset[str]]]:
    """(position, names) for each statement that binds or unbinds names at module level
    by any means (`del name`, `(name := ...)`, `except E as name`, ...)."""
    out = []
    for position, node in enumerate(nodes):
        names = frozenset(bound_names(node))
        if names:
            out.append((position, names))
    return out


def bound_names(node: ast.stmt) -> list[str]:
    """The names a top-level statement binds or unbinds at module level, by any means, in
    the order they appear ("*" for `from m import *`, which may bind any)."""
    names: list[str] = []
    for child, _ in _module_level(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            names.extend((a.asname or a.name).split(".")[0] for a in child.names)
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store | ast.Del):
            names.append(child.id)
        elif isinstance(getattr(child, "name", None), str):  # def, class, except/case as
            names.append(child.name)
        elif isinstance(getattr(child, "rest", None), str):  # `case {**rest}`
            names.append(child.rest)
    return names


def star_imports(node: ast.stmt) -> list[ast.ImportFrom]:
    """`from m import *` statements the top-level statement runs at import."""
    return [
        child
        for child, _ in _module_level(node)
        if isinstance(child, ast.ImportFrom) and any(a.name == "*" for a in child.names)
    ]


def _module_level(node: ast.stmt) -> list[tuple[ast.AST, ast.stmt]]:
    """The nodes of a top-level statement that bind at module level (not a function's or
    a class's own names; not an annotation without a value, which binds nothing), each
    with the innermost statement holding it."""
    out: list[tuple[ast.AST, ast.stmt]] = []
    stack: list[tuple[ast.AST, ast.stmt]] = [(node, node)]
    while stack:
        child, statement = stack.pop()
        if isinstance(child, ast.AnnAssign) and child.value is None:
            continue
        out.append((child, statement))
        inner = child if isinstance(child, ast.stmt) else statement
        stack.extend((c, inner) for c in reversed(_runs_here(child)))
    return out


def _runs_here(node: ast.AST) -> list[ast.AST]:
    """The parts of `node` that run in the scope it stands in: a function's decorators,
    defaults and annotations, not its body; a class's decorators and bases; not a
    comprehension's target; nothing of an import (its names are read whole)."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        return []
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        body = {id(statement) for statement in node.body}
        return [c for c in ast.iter_child_nodes(node) if id(c) not in body]
    if isinstance(node, ast.Lambda):
        return [node.args]
    if isinstance(node, ast.comprehension):  # its target is the comprehension's own
        return [node.iter, *node.ifs]
    return list(ast.iter_child_nodes(node))


# The files where SGLang's released trees define the names the sglang world answers and
# the code imports from elsewhere (`from sglang.srt.utils import is_hip`): an import of
# the name from one of them reads the definition the world stands for; from another file
# of the repository that defines the name itself, it is a substitution (SGLang would run
# that file's definition). Any name not listed has the platform helpers' home.
UTILS = ("sglang/srt/utils/common.py", "sglang/srt/utils/__init__.py", "sglang/srt/utils.py")
IMPORTED_HOMES = {
    "get_platform": ("sglang/srt/runtime_context.py",),
    "current_platform": ("sglang/srt/platforms/__init__.py", "sglang/srt/platforms.py"),
    "envs": ("sglang/srt/environ.py",),
    "Backend": ("sglang/srt/model_executor/cuda_graph_config.py",),
    "AttentionArch": ("sglang/srt/configs/model_config.py",),
    "use_mlx": ("sglang/srt/hardware_backend/mlx/runtime.py", "sglang/srt/utils/tensor_bridge.py"),
}


def stands_for(name: str, node: ast.AST, path: str) -> bool:
    """Whether the world's answer for `name` stands for this definition by design."""
    if name == LOGGER:
        return _get_logger(node)
    if name == REGISTER:
        return registry_of(node) is not None
    return posixpath.basename(path) in HOMES.get(name, ()) or is_home(name, path)


def is_home(name: str, path: str) -> bool:
    """Whether `path` is a file where SGLang defines `name`, which the world answers."""
    return any(path == home or path.endswith("/" + home)
               for home in IMPORTED_HOMES.get(name, UTILS))  # fmt: skip


def is_home_file(path: str) -> bool:
    """Whether `path` is a file where SGLang defines names the world answers (compared
    between revisions as definitions: `harness.closure.homes`)."""
    return any(path == home or path.endswith("/" + home) for home in _home_files())


@functools.cache
def _home_files() -> frozenset[str]:
    return frozenset({home for found in IMPORTED_HOMES.values() for home in found} | set(UTILS))


def registry_of(node: ast.AST) -> tuple[str, ...] | None:
    """The registries a registering decorator adds its argument to, when it returns the
    argument unchanged and does nothing else (a docstring, `R.append(fn)`, `R.add(fn)`,
    `R[key] = fn`, `return fn`); None for any other definition."""
    if not isinstance(node, ast.FunctionDef) or node.decorator_list or not node.args.args:
        return None
    param = node.args.args[0].arg
    body = list(node.body)
    if body and _docstring(body[0]):
        body = body[1:]
    if not body or not _returns(body[-1], param):
        return None
    found = [_registers(statement, param) for statement in body[:-1]]
    return None if None in found else tuple(found)


def _renames(alias: ast.alias, name: str, node: ast.stmt) -> bool:
    if (alias.asname or alias.name.split(".")[0]) != name or alias.asname is None:
        return False
    original = alias.name if isinstance(node, ast.ImportFrom) else alias.name.split(".")[-1]
    return original != name


def _get_logger(node: ast.AST) -> bool:
    value = node.value if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
    func = value.func if isinstance(value, ast.Call) else None
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "getLogger"
        and isinstance(func.value, ast.Name)
        and func.value.id == "logging"
    )


def _docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _returns(node: ast.stmt, param: str) -> bool:
    return isinstance(node, ast.Return) and _is(node.value, param)


def _registers(node: ast.stmt, param: str) -> str | None:
    """The registry `node` adds `param` to (`R.append(p)`, `R.add(p)`, `R[k] = p`)."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        func = call.func
        method = isinstance(func, ast.Attribute) and func.attr in ("append", "add")
        if method and isinstance(func.value, ast.Name) and len(call.args) == 1:
            plain = not call.keywords and _is(call.args[0], param)
            return func.value.id if plain else None
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and _is(node.value, param):
        target = node.targets[0]
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            key = target.slice
            if not any(isinstance(n, ast.Call | ast.NamedExpr) for n in ast.walk(key)):
                return target.value.id
    return None


def _is(node: ast.AST | None, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
