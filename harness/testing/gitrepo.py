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
# what `git init` writes on Linux (core.filemode: this filesystem keeps the executable bit)
INITIAL_CONFIG = (
    "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    "\tlogallrefupdates = true\n"
)
EPOCH = 1_760_000_000  # the fixture clock starts here and ticks an hour a commit


class FixtureRepo:
    """A repository under construction: write files, commit them, read back shas."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.ticks = 0
        self.tracked: set[str] = set()  # the paths `commit` has added
        self.index: bytes | None = None  # the index's checksum after `commit`
        self.root.mkdir(parents=True, exist_ok=True)
        # A test run builds about a thousand repositories and makes about 3,000 commits:
        # the repository written as `git init --template= -b main` leaves it (no sample
        # hooks), the configuration written rather than set by a process, and processes
        # saved in `commit` too. A directory that is a repository already (a clone) is
        # kept as it is.
        git_dir = self.root / ".git"
        if not git_dir.exists():
            for folder in ("objects/info", "objects/pack", "refs/heads", "refs/tags"):
                (git_dir / folder).mkdir(parents=True)
            (git_dir / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
            (git_dir / "config").write_text(INITIAL_CONFIG, encoding="utf-8")
        with open(git_dir / "config", "a", encoding="utf-8") as config:
            config.write("[commit]\n\tgpgsign = false\n")

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
        self.ticks += 1
        if self._index() != self.index:  # another git command wrote the index since
            self.tracked.clear()
        if files and self.tracked.issuperset(files):
            self._commit(subject, ["-i", "--", *files])
        else:
            self.git("add", "--", *files)
            self.tracked.update(files)
            self._commit(subject, [])
        self.index = self._index()
        return self.head()

    def _commit(self, subject: str, include: list[str]) -> None:
        """Commit what is staged, and the paths `include` names (`-i`: a path this object
        added before, when nothing but its own commits touched the index since, is
        staged by the commit: no `git add`). No `git maintenance run --auto` after each
        commit: a process per commit."""
        self.git("-c", "maintenance.auto=false", "commit", "-q", "--allow-empty", "-m", subject,
                 *include)  # fmt: skip

    def _index(self) -> bytes | None:
        """The index file's checksum (its last 20 bytes, a hash of the rest): any other
        git command that changed it (a `git rm`, a checkout, a test's own `git add`)
        changed that."""
        try:
            with open(self.root / ".git" / "index", "rb") as index:
                index.seek(-20, os.SEEK_END)
                return index.read()
        except OSError:  # none yet (or shorter than a checksum)
            return None

    def head(self) -> str:
        """HEAD's sha, read from the files git just wrote (a process when it is packed)."""
        git_dir = self.root / ".git"
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref: "):
            return head  # detached
        ref = git_dir / head.removeprefix("ref: ")
        if ref.is_file():
            return ref.read_text(encoding="utf-8").strip()
        return self.git("rev-parse", "HEAD")
