"""A survey of the registered passes of one revision: what each reads, declares, needs.

Static, over the closures (nothing runs here): the fields a pass declares (the
keys of the dict literals it returns), the view attributes it and its helpers
read, the world's names it uses, and the names nothing can supply, which
extraction collects here instead of stopping at the first.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, replace
from functools import partial

from harness.closure.extract import (
    Closure,
    LastClosure,
    Pipeline,
    build_closure,
    decorated,
    find_target,
    last_closure,
    remember_closure,
    reuse_closure,
)
from harness.closure.index import DEFINITION, index_module
from harness.closure.modules import RevisionFiles
from harness.closure.names import own_nodes
from harness.closure.pieces import SourceCache, Statement
from harness.closure.resolve import TARGET, Resolver, ViewClass
from harness.errors import Absent, Unevaluable


@dataclass(frozen=True)
class PassSurvey:
    name: str
    line: int
    declares: tuple[str, ...]
    reads: tuple[str, ...]  # view attributes read by the pass, its helpers and view methods
    world: tuple[str, ...]  # names the world supplies
    blocked_by: tuple[tuple[str, str], ...]  # (name, reason): nothing can supply them
    closure: Closure | None  # None: something blocks it
    digest: str = ""  # of the code as far as it could be read: blocked code changes too


def registered(cache: SourceCache, files: RevisionFiles, decorator: str) -> list[str]:
    """The top-level functions of the target file decorated with `decorator`, in order."""
    layout = cache.layout_of(files, files.target)
    if layout is None:
        raise Absent(f"{files.target} does not exist")
    index = index_module(layout)
    found = {}
    for bindings in index.values():
        for binding in bindings:
            node = binding.statement.node
            if binding.kind == DEFINITION and decorated(node, decorator):
                found[node.name] = binding.statement.lineno
    return sorted(found, key=found.get)


def survey_pass(cache, files, function, bound, matrix_file, view, facts) -> PassSurvey:
    """What one pass reads, declares and draws on. Cheap at a revision whose files differ
    from the last surveyed ones only in statements that bind no name the pass looked up
    (`harness.closure.extract.reuse_closure`): the last survey stands, at its new lines."""
    key = ("survey", files.target, function, matrix_file, view, facts)
    names = frozenset(bound)
    last = cache.closures.get(key)
    closure = reuse_closure(cache, files, key, names) if last is not None else None
    if closure is not None:
        return replace(last.survey, line=closure.lineno, closure=closure)
    found, resolver = _surveyed(cache, files, function, names, matrix_file, view, facts)
    if found.closure is not None:  # a blocked survey is made again: its reasons may change
        last = last_closure(resolver, key, found.closure, SurveyedClosure, survey=found)
        remember_closure(cache, last)
    return found


def _surveyed(
    cache, files, function, bound, matrix_file, view, facts
) -> tuple[PassSurvey, Resolver]:
    resolver = Resolver(cache, files, bound, matrix_file, view, facts=facts)
    resolver.blocked = []
    path = files.target
    try:
        target = find_target(resolver.index(path), path, function, facts)
    except (Absent, Unevaluable) as exc:
        return PassSurvey(function, 0, (), (), (), ((function, str(exc)),), None), resolver
    resolver.seen.add((path, function))
    try:
        resolver.add(path, target, TARGET)
    except (Unevaluable, RecursionError) as exc:  # a file it draws on does not parse, say
        reason = str(exc) if isinstance(exc, Unevaluable) else "definitions nested too deeply"
        text = hashlib.sha256(ast.dump(target.node).encode()).hexdigest()
        survey = PassSurvey(function, target.lineno, (), (), (), ((function, reason),), None, text)
        return survey, resolver
    closure = build_closure(path, function, target, resolver)
    blocked = tuple(dict.fromkeys(resolver.blocked))
    world = tuple(sorted({need.world for need in closure.needs}))
    return PassSurvey(
        function, target.lineno, declared_fields(target),
        view_reads(closure, view.identities if view else frozenset(), facts.view_names),
        world, blocked,
        None if blocked else closure, closure.digest,
    ), resolver  # fmt: skip


@dataclass(frozen=True)
class SurveyedClosure(LastClosure):
    """The last survey of a pass, with what `reuse_closure` checks."""

    survey: PassSurvey | None = None


def defaults_read(code: Closure | Pipeline, view: ViewClass | None) -> tuple[tuple[str, str], ...]:
    """(field, default as shown) for each view attribute the code reads that neither the
    matrix nor the world answers and the view's class declares (`code.defaults`)."""
    if view is None or not code.defaults.fields:  # (inputs' defaults are not view reads)
        return ()
    closures = [c for _, c in code.passes if c] if isinstance(code, Pipeline) else [code]
    reads = {name for c in closures for name in view_reads(c, view.identities, view.names)}
    fields = code.defaults.fields
    return tuple(
        (name, fields[name].shown()) for name in sorted(reads - view.answered) if name in fields
    )


def declared_fields(target: Statement) -> tuple[str, ...]:
    """Keys of the dict literals the function returns (its own returns, not nested ones):
    a fact of its text, kept on its parsed piece."""
    return target.memo("declared fields", _returned_keys)


def _returned_keys(function: ast.FunctionDef) -> tuple[str, ...]:
    keys: dict[str, None] = {}
    for node in own_nodes(function):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            for key in node.value.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    keys[key.value] = None
    return tuple(keys)


def view_reads(
    closure: Closure, identities: frozenset[str], names: frozenset[str]
) -> tuple[str, ...]:
    """View attributes read by the closure's functions: off the target's (or a method's)
    first parameter, a helper's first parameter named like a view (one of `names`), or a
    local bound to a call of one of `identities` (`resolving_view(...)`); methods of the
    view's class are code, not reads."""
    reads: set[str] = set()
    for part in closure.parts:
        helper = part.role == "helper"
        compute = partial(_function_reads, helper=helper, identities=identities, names=names)
        reads |= part.statement.memo(("view reads", helper, identities, names), compute)
    return tuple(sorted(reads - {name for name, _ in closure.methods}))


def _function_reads(
    node: ast.stmt, helper: bool, identities: frozenset[str], names: frozenset[str]
) -> frozenset[str]:
    """The view attributes one statement of a closure reads (see `view_reads`): a fact of
    its text, kept on its parsed piece (helpers recur in most passes' closures)."""
    if not (isinstance(node, ast.FunctionDef) and node.args.args):
        return frozenset()
    first = node.args.args[0].arg
    if helper and first not in names:
        return frozenset()
    return frozenset(_reads_off(node, {first, *_view_locals(node, identities)}))


def _view_locals(function: ast.FunctionDef, identities: frozenset[str]) -> set[str]:
    return {
        target.id
        for node in ast.walk(function)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id in identities
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _reads_off(function: ast.FunctionDef, names: set[str]) -> set[str]:
    return {
        node.attr
        for node in ast.walk(function)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in names
        and isinstance(node.ctx, ast.Load)
    }
