"""Which outside bases call nothing back as a class is made on them."""

from __future__ import annotations

import abc
import argparse

from harness.engine.quiet_bases import QUIET_BASES, _quiet, quiet_base


def test_argparse_action_is_quiet_here_and_only_under_its_own_module_name():
    assert "__init_subclass__" not in vars(argparse.Action) and type(argparse.Action) is type
    assert quiet_base("argparse", "Action")
    assert not quiet_base("plugins", "Action")  # `import plugins as argparse`
    assert not quiet_base(None, "Action")  # a name not bound by a plain import
    assert not quiet_base("argparse", "ArgumentParser")  # not named: not checked


def test_a_hook_anywhere_in_the_class_chain_or_a_metaclass_is_not_quiet():
    called = []

    class Hooking:
        def __init_subclass__(cls, **kwargs):
            called.append(cls)

    class Below(Hooking):
        pass

    class Meta(type):
        pass

    class Made(metaclass=Meta):
        pass

    assert called == [Below]  # what a hook does as a class is made on it
    assert not _quiet(Hooking) and not _quiet(Below)  # inherited hooks count
    assert not _quiet(Made) and not _quiet(abc.ABC)  # a metaclass of its own
    assert _quiet(argparse.Action) and _quiet(type("Plain", (), {}))
    assert all(_quiet(cls) for cls in [argparse.Action]) and len(QUIET_BASES) == 1
