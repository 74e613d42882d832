"""An example world: a made-up serving engine, TinyServe, whose code is not SGLang's.

It shows what a world is: the facts of how its project writes its code
(`WorldFacts`, read by closure/) and the answers to what only the machine
could tell (here one probe), in one module, registered by one line in
`harness.engine.worlds`. The tests run the harness on a TinyServe-shaped
repository with it (tests/test_example_world.py); docs/your-project.md
describes the steps for a world of one's own.

TinyServe's shape:

- `tinyserve/config.py`: `class EngineConfig`, a dataclass declaring each
  field with its default; `EngineConfig.finalize` calls the rules in the order
  the engine runs them;
- `tinyserve/rules.py`: the rules, each a function of the config decorated
  with `@config_rule`, returning a dict of the fields it sets; a helper takes
  the config as its first parameter, named `config`;
- `tinyserve/platform.py`: `device_name()`, which asks the machine; the world
  answers it from the input `device`.
"""

from __future__ import annotations

from harness.closure.facts import WorldFacts
from harness.engine.world import Call, Param, World, no_parameters
from harness.engine.worlds import caching, dataclass, enums
from harness.engine.worlds.common import logger, registering

FACTS = WorldFacts(
    display="TinyServe",
    register="config_rule",
    view_names=frozenset({"config"}),
    view_class=("tinyserve.config", "EngineConfig"),
    view_type="EngineConfig",
    run_entries=(("tinyserve.config", "EngineConfig.finalize"),),
    homes=(("device_name", ("platform.py",)),),
    imported_homes=(("device_name", ("tinyserve/platform.py",)),),
)

WORLD = World(
    name="example",
    names={
        "logger": logger(),
        "config_rule": registering("config_rule"),
        "device_name": Call(
            Param("device", reader="device_name()"),
            label="device_name()",
            parameters=no_parameters("device_name"),
        ),
        **dataclass.names(),
        **enums.names(),
        **caching.names(),
    },
    consumed=frozenset({"device"}),
    facts=FACTS,
    suggested={"device": ("cpu", "cuda", "tpu")},
)
