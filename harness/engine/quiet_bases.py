"""Bases from outside the repository that call nothing back as a class is made on them.

An entry point's closure may leave out a class whose base is a module the world does
not bind (SGLang 0.5.10's `class LoRAPathAction(argparse.Action)`), refusing its name
where a cell reaches it, only if making the class in the project's process would do
nothing but bind its name. A base outside the repository may run code as a class is
made on it: its metaclass, its `__init_subclass__`, which are handed the class and may
call its methods. So only the bases named here qualify, and each is checked, in this
process, to be a class of metaclass `type` whose class chain defines no
`__init_subclass__`: a Python that gave one such a hook would drop it from the list.
"""

from __future__ import annotations

import argparse

# (module, attribute) -> the class, for the standard library's bases known to call nothing
_NAMED = {("argparse", "Action"): argparse.Action}


def _quiet(cls: type) -> bool:
    hooked = any("__init_subclass__" in vars(k) for k in cls.__mro__ if k is not object)
    return isinstance(cls, type) and type(cls) is type and not hooked


QUIET_BASES = frozenset(name for name, cls in _NAMED.items() if _quiet(cls))


def quiet_base(module: str | None, attribute: str) -> bool:
    """Whether `module.attribute` (the module as the file imports it) is a quiet base."""
    return (module, attribute) in QUIET_BASES
