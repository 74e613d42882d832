"""Loading extracted code: compiled alone, in a fresh namespace, with the world's names.

The namespace holds only the world's bindings for the closure's imported
names and the builtins the policy allows (`harness.engine.policy`, checked
before anything is compiled); `import` inside the code answers from the
world too. A pipeline's passes are loaded one by one and chained over an
overlaid view.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from types import TracebackType
from typing import Any

from harness.closure.extract import Closure, Pipeline
from harness.engine.policy import ALLOWED_BUILTINS, check_closure
from harness.engine.world import Bound, Unbound
from harness.errors import Unevaluable


def code_name(path: str, label: str) -> str:
    """The file name evaluated code is compiled under: the path and the revision."""
    return f"{path}@{label}"


def load_target(closure: Closure | Pipeline, bound: Bound, label: str) -> Callable[..., Any]:
    """The callable a cell runs: the target function, or the passes chained."""
    if isinstance(closure, Pipeline):
        passes = [load_function(c, bound, label) for _, c in closure.passes if c is not None]
        return chain(passes)
    return load_function(closure, bound, label)


def chain(passes: list[Callable[..., Any]]) -> Callable[..., Any]:
    """Run passes in order, each seeing the view with the earlier declarations overlaid."""

    def pipeline(view: Any) -> dict[str, Any]:
        declared: dict[str, Any] = {}
        for fn in passes:
            result = fn(Overlay(view, declared))
            if not isinstance(result, dict):
                kind = type(result).__name__
                raise TypeError(f"{fn.__name__} returned {kind}, not a dict of declared fields")
            declared.update(result)
        return declared

    return pipeline


class Overlay:
    """The view as a later pass sees it: declared fields first, then the view itself."""

    __slots__ = ("_declared", "_view")

    def __init__(self, view: Any, declared: dict[str, Any]) -> None:
        object.__setattr__(self, "_view", view)
        object.__setattr__(self, "_declared", declared)

    def __getattr__(self, name: str) -> Any:
        declared = object.__getattribute__(self, "_declared")
        if name in declared:
            return declared[name]
        return getattr(object.__getattribute__(self, "_view"), name)


def load_function(
    closure: Closure,
    bound: Bound,
    label: str,
    extra: dict[str, Any] | None = None,
    nodes: tuple[ast.stmt, ...] | None = None,
) -> Callable[..., Any]:
    """Compile the closure alone (or `nodes`, an instrumented copy of its statements)
    and return the target function object."""
    check_closure(closure)
    filename = code_name(closure.path, label)
    module = ast.Module(body=list(nodes or closure.nodes), type_ignores=[])
    code = compile(module, filename, "exec")
    namespace = {"__builtins__": safe_builtins(bound), "__name__": "harness.closure"}
    namespace.update({name: bound.names[world_name] for name, world_name in closure.needs})
    namespace.update(extra or {})
    try:
        exec(code, namespace)
    except Unbound as exc:
        raise Unevaluable(unbound_reason(exc, filename)) from None
    except Exception as exc:
        raise Unevaluable(f"module-level code of the closure raised {describe(exc)}") from None
    return namespace[closure.function]


def safe_builtins(bound: Bound) -> dict[str, Any]:
    table = {name: getattr(builtins, name) for name in ALLOWED_BUILTINS if hasattr(builtins, name)}
    table["print"] = lambda *args, **kwargs: None
    table["__import__"] = _ImportProxy.factory(bound)
    return table


class _ImportProxy:
    """`import` inside evaluated code: a module whose attributes are the world's names."""

    def __init__(self, module: str, names: dict[str, Any]) -> None:
        self._module, self._names = module, names

    @classmethod
    def factory(cls, bound: Bound) -> Callable[..., Any]:
        def world_import(name: str, *args: Any, **kwargs: Any) -> Any:
            return cls(name, bound.names)

        return world_import

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._names[name]
        except KeyError:
            raise Unbound(
                f"{self._module}.{name}",
                "the world does not bind it: bind the name under `bindings:` in the matrix",
            ) from None


def unbound_reason(exc: Unbound, filename: str) -> str:
    return f"{exc.what} is read at {line_in(exc.__traceback__, filename)}: {exc.fix}"


def line_in(tb: TracebackType | None, filename: str) -> str:
    """`path:line` of the innermost frame of the evaluated code."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    path = filename.rsplit("@", 1)[0]
    return f"{path}:{line}" if line else path


def describe(exc: BaseException) -> str:
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
