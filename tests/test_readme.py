"""The README's front door: two quick-start commands, the second is what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

from tests import oracle
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    return [line for block in blocks for line in block.strip().splitlines()]


def test_quick_start_is_two_commands_demo_then_tests():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert commands[0].endswith("harness demo")
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert quick_start_commands()[1] in ci


def test_demo_shows_the_30835_change():
    result = run_cli("demo")
    changed = len(oracle.changed_between(base_clause=False, head_clause=True))
    assert result.code == 0
    assert "[Tiny] Enable Full Cuda Graph with Page size = 1 (#30835)" in result.out
    assert f"{changed:,} of 349,920 cells change page_size" in result.out
    assert "128 -> input page_size" in result.out


def test_demo_keep_leaves_a_repository_to_explore(tmp_path):
    target = tmp_path / "demo"
    assert run_cli("demo", "--keep", str(target), "--format", "json").code == 0
    assert run_cli("diff", "#30871^", "#30871", "--repo", str(target)).code == 1
    assert run_cli("demo", "--keep", str(target)).code == 2  # exists already


def test_the_cli_reference_names_every_command_and_option():
    from harness.cli.main import build_parser

    readme = (ROOT / "README.md").read_text()
    reference = readme.split("## CLI reference", 1)[1].split("\n## ", 1)[0]
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    for name, parser in commands.items():
        assert f"harness {name}" in reference, name
        for action in parser._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    assert option in reference, f"harness {name} {option}"
