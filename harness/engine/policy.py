"""What evaluated code may use, checked before anything is compiled.

Today the policy is an allow-list of builtins: pure functions, types and
exceptions. A closure reading any other builtin cannot be evaluated, and the
reason names the builtin and the line that reads it.
"""

from __future__ import annotations

from harness.closure.extract import Closure
from harness.errors import Unevaluable

# Builtins the evaluated code may use: pure functions, types and exceptions.
# (Not id() or hash(): their answers change from run to run.)
ALLOWED_BUILTINS = frozenset(
    (
        "abs",
        "all",
        "any",
        "ascii",
        "bin",
        "bool",
        "bytes",
        "callable",
        "chr",
        "complex",
        "dict",
        "divmod",
        "enumerate",
        "filter",
        "float",
        "format",
        "frozenset",
        "getattr",
        "hasattr",
        "hex",
        "int",
        "isinstance",
        "issubclass",
        "iter",
        "len",
        "list",
        "map",
        "max",
        "min",
        "next",
        "object",
        "oct",
        "ord",
        "pow",
        "print",
        "property",
        "range",
        "repr",
        "reversed",
        "round",
        "set",
        "slice",
        "sorted",
        "staticmethod",
        "classmethod",
        "str",
        "sum",
        "super",
        "tuple",
        "type",
        "zip",
        "ArithmeticError",
        "AssertionError",
        "AttributeError",
        "BaseException",
        "Exception",
        "IndexError",
        "KeyError",
        "LookupError",
        "NotImplementedError",
        "OverflowError",
        "RuntimeError",
        "StopIteration",
        "TypeError",
        "ValueError",
        "ZeroDivisionError",
        "NotImplemented",
        "Ellipsis",
        "True",
        "False",
        "None",
        "__build_class__",
        "__name__",
    )
)


def check_closure(closure: Closure) -> None:
    """Raise Unevaluable if the closure reads a builtin outside the allow-list."""
    for name in closure.builtins:
        if name not in ALLOWED_BUILTINS:
            where = closure.use_line(name)
            raise Unevaluable(
                f"builtin {name} (used at {where}) is not available to evaluated code"
            )
