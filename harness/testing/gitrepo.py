"""Build real git repositories for tests and the demo (never the user's)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "Harness Fixture",
    "GIT_AUTHOR_EMAIL": "fixture@harness.invalid",
    "GIT_COMMITTER_NAME": "Harness Fixture",
    "GIT_COMMITTER_EMAIL": "fixture@harness.invalid",
}
EPOCH = 1_760_000_000  # the fixture clock starts here and ticks an hour a commit


class FixtureRepo:
    """A repository under construction: write files, commit them, read back shas."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.ticks = 0
        self.root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str) -> str:
        env = {**os.environ, **IDENTITY, **self._clock()}
        env.pop("GIT_DIR", None)
        done = subprocess.run(
            ["git", *args], cwd=self.root, env=env, check=True, capture_output=True, text=True
        )
        return done.stdout.strip()

    def _clock(self) -> dict[str, str]:
        stamp = f"@{EPOCH + 3600 * self.ticks} +0000"
        return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def commit(self, subject: str, files: dict[str, str]) -> str:
        """Write `files`, commit them all with `subject`, return the new sha."""
        for path, text in files.items():
            self.write(path, text)
        self.git("add", "--", *files)
        self.ticks += 1
        # no `git maintenance run --auto` after each commit: a process per commit
        self.git("-c", "maintenance.auto=false", "commit", "-q", "--allow-empty", "-m", subject)
        return self.git("rev-parse", "HEAD")
