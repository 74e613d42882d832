"""The front door: the README's two quick-start commands (the second is what CI runs),
and docs whose links resolve and whose CLI reference names every option."""

from __future__ import annotations

import re
import subprocess
import sys
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


def test_ci_runs_both_readme_commands_verbatim_in_a_clean_environment():
    ci = (ROOT / ".ci" / "run").read_text()
    runs = re.findall(r'^clean "(.*)"$', ci, flags=re.M)
    assert runs[:2] == quick_start_commands()
    assert 'env -i HOME="$HOME" LANG=C.UTF-8 PATH="/usr/bin:/bin:$python_dir"' in ci


def test_the_readme_pitch_is_what_the_demo_prints():
    readme = (ROOT / "README.md").read_text()
    pitch = readme.split("```\n", 2)[1]  # the first code block: the sample report
    shown = [line for line in pitch.splitlines() if line.strip() and line.strip() != "..."]
    out = run_cli("demo").out
    assert len(shown) >= 5
    for line in shown:
        assert line in out, line


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

    reference = (ROOT / "docs" / "cli.md").read_text()
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    for name, parser in commands.items():
        assert f"harness {name}" in reference, name
        for action in parser._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    assert option in reference, f"harness {name} {option}"


def test_the_pytest_options_are_documented():
    """Every option `pytest --help` lists for the plugin (its own and those it shares with
    diff) has its row in docs/ci.md."""
    text = (ROOT / "docs" / "ci.md").read_text()
    shown = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    options = set(re.findall(r"^\s+(--override-[\w-]+)", shown, re.M))
    assert len(options) >= 5 + 11  # its own five, and the eleven it shares with diff
    for option in options:
        assert f"`{option}" in text, option


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_relative_link_in_the_readme_and_docs_resolves():
    for page in markdown_files():
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links {target}"


def test_the_readme_stays_a_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 160
    for doc in ("cli", "matrix-files", "ci", "security", "internals", "performance"):
        assert f"docs/{doc}.md" in "\n".join(lines), doc
