"""What a command that evaluates code loads before the first byte of that code runs.

Repository code runs only in the zygote's children (`harness.engine.zygote`),
which can write no file; even so, the harness imports nothing once the first
evaluation has started: every module a run may import late (the report
renderers, the error path's helpers) is imported here, first, and the zygote is
spawned so that it starts while the harness reads git.
`tests/test_no_late_imports.py` watches the import audit event to check it.
"""

from __future__ import annotations

import importlib
import pkgutil

import harness.report
from harness.engine import spawn

LATE = ("harness.http", "harness.files", "secrets", "traceback", "linecache", "tokenize")


def before_evaluation() -> None:
    spawn.warm()
    for module in pkgutil.iter_modules(harness.report.__path__, "harness.report."):
        importlib.import_module(module.name)
    for name in LATE:
        importlib.import_module(name)
