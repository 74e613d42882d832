"""All git access, read-only (git itself runs in `harness.gitcmd`).

Small named functions: open a repository, resolve a revision expression
(including `#N` / `pr:N` for squash-merged PRs), read a file at a revision or
in the working tree. Nothing here checks out, writes the index, or moves a ref.
"""

from __future__ import annotations

import io
import os
import re
import stat
import sys
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, ClassVar, Protocol

from harness import gitcommit
from harness.errors import HarnessError, Unevaluable
from harness.files import undecodable
from harness.gitcmd import GitError, NotARepository, Repo, discover
from harness.patches import FilePatch, PatchStream

PR_EXPR = re.compile(r"^(?:#|pr:)(\d+)(.*)$")
PR_SUBJECT = re.compile(r"\(#(\d+)\)\s*$")
WORKTREE = "worktree"
PRLookup = Callable[[int], str]  # PR number -> commit sha


COMMIT, WORKING_TREE, RELEASE = "commit", "working tree", "release"  # a revision's kinds


class Files(Protocol):
    """How a revision's files are read: their text, and (None where a kind has none) an id
    telling a file's content apart without reading it, and git's patch between two."""

    read: Callable[[str], str | None]
    ident: Callable[[str], tuple[str, object]] | None
    edit: Callable[[str, str], FilePatch | None] | None


class Revision(Protocol):
    """A revision as the user named it, and what it resolved to. Three kinds answer it: a
    commit of the repository (`CommitRevision`), the working tree (`WorkingTree`) and a
    release (`harness.releases.release.ReleaseRevision`). Code asks a revision what it
    needs (its label, its commit, its files) and never tells kinds apart by a None."""

    expr: str  # as the user named it
    subject: str
    date: str
    kind: ClassVar[str]  # COMMIT, WORKING_TREE or RELEASE

    @property
    def sha(self) -> str | None:
        """The commit it is: its id is what caches and reports key on (None: no commit)."""

    @property
    def short(self) -> str:
        """How a list names it: a commit's first 10 digits."""

    @property
    def label(self) -> str:
        """How messages name it: the expression, and the commit when they differ."""

    def files(self, repo: Repo | None, target: str, also: tuple[str, ...] = ()) -> Files:
        """What reads its files, for a matrix whose target is the file `target`, or one of
        `also` where there is no `target` (an entry's `otherwise:`): a release finds its
        layout from the first it holds; `repo`: the run's repository, which a release
        ignores."""


@dataclass(frozen=True)
class CommitRevision:
    """A commit of the repository."""

    expr: str
    sha: str
    subject: str = ""
    date: str = ""
    kind: ClassVar[str] = COMMIT

    @property
    def short(self) -> str:
        return self.sha[:10]

    @property
    def label(self) -> str:
        return self.short if self.sha.startswith(self.expr) else f"{self.expr} ({self.short})"

    def files(self, repo: Repo | None, target: str, also: tuple[str, ...] = ()) -> FilesAt:
        return FilesAt(repo, self.sha)


@dataclass(frozen=True)
class WorkingTree:
    """The repository's working tree, as it is on disk (uncommitted changes included)."""

    expr: str = WORKTREE
    subject: str = ""
    date: str = ""
    kind: ClassVar[str] = WORKING_TREE
    sha: ClassVar[None] = None

    @property
    def short(self) -> str:
        return WORKTREE

    @property
    def label(self) -> str:
        return "the working tree"

    def files(self, repo: Repo | None, target: str, also: tuple[str, ...] = ()) -> FilesAt:
        return FilesAt(repo, None)


def open_repo(path: str | None) -> Repo:
    """The repository at `path` (default: the one containing the current directory)."""
    where = Path(path or ".").resolve()
    if not where.exists():
        raise HarnessError(f"--repo {path}: no such directory")
    try:
        return discover(where, search_parents=path is None)
    except NotARepository as exc:
        if exc.fix:
            raise HarnessError(f"git will not read {where} ({exc.reason}): {exc.fix}") from None
        if exc.top is not None:
            hint = f"point --repo at the repository's top, {exc.top}"
        elif path is None:
            hint = "pass --repo PATH to an SGLang clone"
        else:
            hint = "point --repo at a clone"
        raise HarnessError(f"not a git repository: {where} ({exc.reason}; {hint})") from None


def resolve(repo: Repo, expr: str, lookup: PRLookup | None = None) -> Revision:
    """A commit for a revision expression: sha, branch, tag, HEAD~3, #30835, pr:30835^.

    `#N` is the commit whose subject ends in (#N); when there is none (or
    several), `lookup` (the GitHub API, with --github) names it instead.
    """
    if not expr or expr.startswith("-"):
        raise HarnessError(f"revision {expr!r}: expected a sha, branch, tag, HEAD~N or #PR")
    match = PR_EXPR.match(expr)
    spelled = pr_commit(repo, int(match.group(1)), lookup) + match.group(2) if match else expr
    sha, date, subject = _commit_named(repo, expr, _object_named(repo, expr, spelled))
    return CommitRevision(expr, sha, subject, date)


OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256


def _object_named(repo: Repo, expr: str, spelled: str) -> str:
    """The object `spelled` names, read as `git rev-parse` reads it (`:/text`, `@{-1}`,
    `tag^{commit}`, ...). git's warning that a name is ambiguous (a branch named like a
    short sha) is said on stderr, with what git chose: never a silent choice."""
    try:
        out, said = repo.start("rev-parse", "--verify", "--end-of-options", spelled).said()
    except GitError as exc:
        raise HarnessError(_unknown(repo, expr, spelled, exc.reason)) from None
    found = out.decode().strip()
    if not OBJECT_ID.fullmatch(found):  # `^HEAD`, `HEAD^!`: what git reads as a range
        raise HarnessError(
            f"revision {expr!r} names no single commit (git reads it as part of a range): "
            "name one commit (a sha, branch, tag, HEAD~N, :/TEXT or #PR), or a range as A..B"
        )
    for line in said.splitlines():
        if "ambiguous" in line:
            print(f"harness: warning: revision {expr!r}: git says {line.strip()!r}; it took "
                  f"{found[:10]} (a ref wins over a short sha); to say which, name the ref "
                  "in full (refs/heads/NAME, refs/tags/NAME) or give more digits of the sha",
                  file=sys.stderr)  # fmt: skip
    return found


def _commit_named(repo: Repo, expr: str, found: str) -> tuple[str, str, str]:
    """(sha, date, subject) of the commit the object `found` is or points to (a tag is
    peeled). A full sha names an object whether git has it or not: one it lacks (or
    cannot read) is unknown, with git's reason. Read from the object the run's
    `git cat-file` gives (`harness.gitcommit`); from `git log` where that cannot say."""
    read = _object(repo, f"{found}^{{commit}}", "commit")
    shown = read and gitcommit.date_and_subject(read[2])
    if shown:
        return read[0], *shown
    try:
        out = repo.git.log("-1", "--format=%H%x00%cI%x00%s", f"{found}^{{commit}}")
    except GitError as exc:
        try:
            kind = repo.git.cat_file("-t", found)
        except GitError:
            kind = ""
        if kind in ("", "commit"):  # none git can read, or a commit it cannot parse
            said = exc.reason or _unreadable_object(repo, found)
            raise HarnessError(_unknown(repo, expr, found, said)) from None
        raise HarnessError(
            f"revision {expr!r} names a {kind} ({found[:10]}), not a commit: name a commit "
            "(a sha, branch, tag, HEAD~N, :/TEXT or #PR)"
        ) from None
    sha, date, subject = out.split("\0", 2)  # the subject last: any bytes but NUL
    return sha, date, subject


def _unreadable_object(repo: Repo, sha: str) -> str:
    """Why git could not read the object `sha` a name resolved to, when it is a folder of
    loose objects this user may not read (git itself says only "bad object")."""
    for objects in {Path(repo.git_dir, "objects"), Path(_common_dir(repo), "objects")}:
        folder = objects / sha[:2]
        if folder.is_dir() and not os.access(folder, os.R_OK | os.X_OK):
            return f"cannot open {folder}: Permission denied"
    return ""


def _common_dir(repo: Repo) -> str:
    try:
        return repo.git.rev_parse("--path-format=absolute", "--git-common-dir")
    except GitError:
        return repo.git_dir


def _unknown(repo: Repo, expr: str, spelled: str, said: str = "") -> str:
    """Why `expr` names no commit, and the fix; `said`: git's own reason, when it gave
    one that explains more than "no such name" (a missing alternate, a corrupt object)."""
    where = where_of(repo)
    if said:
        return (f"cannot resolve revision {expr!r} in {where}: git says {said!r}; fix what "
                "git names (`git fsck` checks the repository), or clone it again")  # fmt: skip
    if not _has_commits(repo):
        return f"{where} has no commits yet: commit something, or point --repo at a clone"
    candidates = _prefix_matches(repo, spelled)
    if len(candidates) > 1:
        return (
            f"revision {expr!r} is ambiguous in {where}: {len(candidates)} objects start with "
            f"it ({', '.join(c[:12] for c in candidates[:4])}); give more digits"
        )
    message = (f"unknown revision {expr!r} in {where}: use a sha, branch, tag, HEAD~N, "
               ":/TEXT or #PR")  # fmt: skip
    return message + shallow_hint(repo)


def _has_commits(repo: Repo) -> bool:
    try:
        repo.git.rev_parse("--verify", "--quiet", "HEAD")
    except GitError:
        return bool(repo.git.for_each_ref("--count=1", "refs/"))
    return True


def _prefix_matches(repo: Repo, spelled: str) -> list[str]:
    if not re.fullmatch(r"[0-9a-fA-F]{4,39}", spelled):
        return []
    try:
        return repo.git.rev_parse(f"--disambiguate={spelled}").split()
    except GitError:
        return []


def shallow_commits(repo: Repo) -> set[str]:
    """The commits where a shallow clone's history is cut (none in a full clone)."""
    path = Path(repo.git_dir) / "shallow"
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


SHALLOW_FIX = (
    "fetch the whole history: `git fetch --unshallow`, or `fetch-depth: 0` in actions/checkout"
)


def shallow_hint(repo: Repo) -> str:
    """A sentence for messages about missing commits, when the clone is shallow."""
    if not shallow_commits(repo):
        return ""
    return f" (this clone is shallow, so older commits are missing: {SHALLOW_FIX})"


def refuse_shallow_range(repo: Repo, revisions: list[str], command: str) -> None:
    """A scan over `revisions` (rev-list arguments) must not cross a shallow boundary."""
    cut = shallow_commits(repo)
    if not cut:
        return
    reached = cut.intersection(repo.git.rev_list(*revisions).split())
    if reached:
        raise HarnessError(
            f"{command} would scan past the start of this shallow clone (history is cut at "
            f"{min(reached)[:10]}), and answer wrongly: {SHALLOW_FIX}"
        )


def worktree(repo: Repo) -> Revision:
    if repo.bare or repo.working_tree_dir is None:
        raise HarnessError(f"{repo.git_dir} is a bare repository: name two revisions to compare")
    return WorkingTree()


def pr_commit(repo: Repo, number: int, lookup: PRLookup | None = None) -> str:
    """The commit for #number: found by subject offline first, else through `lookup`."""
    try:
        return find_pr_commit(repo, number)
    except HarnessError:
        if lookup is None:
            raise
    return lookup(number)


def find_pr_commit(repo: Repo, number: int) -> str:
    """The commit whose subject ends with `(#number)`: reachable from HEAD, else from any ref."""
    for scope in (["HEAD"], ["--all"]):
        found = _commits_ending_with(repo, number, scope)
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            shas = ", ".join(sha[:10] for sha in found)
            raise HarnessError(
                f"#{number}: {len(found)} commits end with (#{number}): {shas}; name one by sha"
            )
    raise HarnessError(
        f"#{number}: no commit subject ends with (#{number}) in {where_of(repo)}; "
        "fetch the branch that has it, name the commit by sha, or pass --github OWNER/REPO"
        + shallow_hint(repo)
    )


def where_of(repo: Repo) -> str:
    return str(repo.working_tree_dir or repo.git_dir)


def _commits_ending_with(repo: Repo, number: int, scope: list[str]) -> list[str]:
    """The commits in `scope` whose subject ends with (#number); asked once per opened
    repository (`#30835^` and `#30835` look up the same commit)."""
    key = ("pr", number, tuple(scope))
    if key not in repo.answers:
        repo.answers[key] = _search_subjects(repo, number, scope)
    return repo.answers[key]


def _search_subjects(repo: Repo, number: int, scope: list[str]) -> list[str]:
    try:
        out = repo.git.log("-z", "--format=%H%x00%s", "-E", f"--grep=\\(#{number}\\)", *scope)
    except GitError:
        return []  # e.g. HEAD is unborn
    fields = out.split("\0")  # sha, subject, sha, subject, ...: a subject is any bytes but NUL
    pairs = zip(fields[::2], fields[1::2], strict=False)  # (the last field: empty)
    return [sha for sha, subject in pairs if pr_number(subject) == number]


def pr_number(subject: str) -> int | None:
    """The PR number a squash-merge subject ends with: `... (#30835)` -> 30835."""
    match = PR_SUBJECT.search(subject)
    return int(match.group(1)) if match else None


def read_file(repo: Repo | None, revision: Revision, path: str) -> str | None:
    """The text of `path` at `revision` (None: no such file there)."""
    return revision.files(repo, path).read(path)


def blob_of(repo: Repo, commit: str, path: str) -> str | None:
    """The blob id of `path` at `commit` (None: no such file), read from the trees.

    Symbolic links are followed as the working tree follows them, within the
    repository (`followed`); a link out of it, or a path inside a submodule, has as
    its id the reason after `UNREADABLE`, and reading it raises Unevaluable (one line,
    when the revision is evaluated). The commit's root tree is
    asked once, each directory's listing once per tree id (a scan of 1,000 commits
    reads mostly the same trees); a tree git cannot read is an error naming it, and
    a blob that turns out unreadable is `read_blob`'s."""
    trees = [_root_tree(repo, commit)]
    try:
        found = followed(path, lambda parents, name: _tree_entry(repo, trees, parents, name),
                         f"at {commit[:10]}")  # fmt: skip
    except Unevaluable as exc:
        return f"{UNREADABLE}{exc}"
    if found is None:
        return None
    if found[0] != path:
        repo.answers.setdefault(LINKS, {}).setdefault(path, set()).add(found[0])
    return found[1]


UNREADABLE = "!"  # starts the "blob id" of a path harness does not read: then the reason
LINKS = "links"  # repo.answers[LINKS]: {a path read through a link: the paths it led to}
MAX_LINKS = 40  # as Linux: more links on one path is a loop


def followed(path: str, entry: Callable, where: str) -> tuple[str, str] | None:
    """(the path a file is at once every symbolic link on `path` is followed, its id),
    or None (no such file). `entry(parents, name)` says what `name` is in the directory
    `parents` (a tuple of names): ("dir" | "file" | "link" | "submodule", id or link
    text), or None. Raises Unevaluable for a link out of the repository (absolute, or
    `..` past its top), a loop, or a path inside a submodule."""
    pending, parents, hops = path.split("/"), [], 0
    while pending:
        name = pending.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            if not parents:
                raise Unevaluable(_outside(path, where))
            parents.pop()
            continue
        kind, ident = entry(tuple(parents), name) or (None, None)
        if kind == "link":
            hops += 1
            pending = _link_parts(path, ident, hops, where) + pending
        elif kind == "submodule":
            raise Unevaluable(_in_submodule(path, "/".join([*parents, name]), where))
        elif kind == "dir" and pending:
            parents.append(name)
        else:  # the last name: a file, else there is none
            return ("/".join([*parents, name]), ident) if kind == "file" and not pending else None
    return None


def _link_parts(path: str, text: str, hops: int, where: str) -> list[str]:
    """The names a link's text leads through, relative to the link's directory."""
    if hops > MAX_LINKS:
        raise Unevaluable(f"{path} ({where}): too many levels of symbolic links (a loop)")
    if text.startswith("/"):
        raise Unevaluable(_outside(path, where))
    return text.split("/")


def _outside(path: str, where: str) -> str:
    return (
        f"{path} ({where}) is a symbolic link that leads out of the repository: harness "
        "reads the repository's own files; point the matrix's target.path at the file"
    )


def _in_submodule(path: str, module: str, where: str) -> str:
    return (
        f"{path} ({where}) is inside the submodule {module}: harness reads one repository "
        f"at a time; run it in the submodule's clone, with the path inside it"
    )


def _tree_entry(repo: Repo, trees: list[str], parents: tuple, name: str) -> tuple | None:
    """`followed`'s `entry` at a commit; `trees`: the root tree, then the trees of
    `parents` as far as they were walked (kept in step with `parents`)."""
    del trees[len(parents) + 1 :]
    entry = _listing(repo, trees[-1]).get(name)
    if entry is None:
        return None
    mode, ident = entry
    if mode == TREE_MODE:
        trees.append(ident)
        return ("dir", ident)
    if mode == LINK_MODE:
        return ("link", _link_text(repo, ident))
    if mode == SUBMODULE_MODE:
        return ("submodule", ident)
    return ("file", ident) if mode in BLOB_MODES else None


def _link_text(repo: Repo, blob: str) -> str:
    found = _object(repo, blob, "blob")
    if found is None:
        raise HarnessError(_unreadable(repo, blob, "a symbolic link"))
    return found[2].decode("utf-8", "surrogateescape")


TREE_MODE, LINK_MODE, SUBMODULE_MODE = "40000", "120000", "160000"
BLOB_MODES = frozenset({"100644", "100755", "100664"})  # files
MAX_REMEMBERED = 100_000  # ids never change: the dicts are only ever cleared, for memory
TEXTS_KEPT, MAX_TEXT = 64, 1 << 20
MEMO = "objects"  # repo.answers[MEMO]: what was read of its objects, for the run


@dataclass
class _Memo:
    """What one opened repository's objects were read as, kept for the run that opened it:
    ids never change, so nothing in it goes stale."""

    roots: dict[str, str] = field(default_factory=dict)  # commit id -> its root tree id
    # tree id -> {name: (mode, id)}
    listings: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # blob id -> text: the last few used


def _memo(repo: Repo) -> _Memo:
    return repo.answers.setdefault(MEMO, _Memo())


def _root_tree(repo: Repo, commit: str) -> str:
    """The commit's root tree id (its listing is kept on the way: it is read next)."""
    roots = _memo(repo).roots
    if commit not in roots:
        found = _object(repo, f"{commit}^{{tree}}", "tree")
        if found is None:
            raise HarnessError(_unreadable(repo, commit, "a commit"))
        if len(roots) > MAX_REMEMBERED:
            roots.clear()
        roots[commit] = found[0]
        _remember_listing(repo, found[0], found[2])
    return roots[commit]


def _listing(repo: Repo, tree: str) -> dict[str, tuple[str, str]]:
    listings = _memo(repo).listings
    if tree not in listings:
        found = _object(repo, tree, "tree")
        if found is None:
            raise HarnessError(_unreadable(repo, tree, "a directory"))
        _remember_listing(repo, tree, found[2])
    return listings[tree]


def _remember_listing(repo: Repo, tree: str, data: bytes) -> None:
    """A tree's entries, parsed from its raw form (`MODE NAME\\0` and 20 bytes of id)."""
    entries, at = {}, 0
    try:
        while at < len(data):
            space, nul = data.index(b" ", at), data.index(b"\0", at)
            name = data[space + 1 : nul].decode("utf-8", "surrogateescape")
            entries[name] = (data[at:space].decode(), data[nul + 1 : nul + 21].hex())
            at = nul + 21
    except (ValueError, UnicodeDecodeError):
        raise HarnessError(_unreadable(repo, tree, "a directory")) from None
    listings = _memo(repo).listings
    if len(listings) > MAX_REMEMBERED:
        listings.clear()
    listings[tree] = entries


def _object(repo: Repo, spec: str, kind: str) -> tuple[str, str, bytes] | None:
    """(id, type, content) of the object, if git gives it whole and it is a `kind`."""
    try:
        found = repo.object(spec)
    except GitError:
        return None
    return found if found is not None and found[1] == kind else None


def read_blob(repo: Repo, blob: str, path: str = "") -> str:
    """The blob as Python source text (see `python_source`); a blob git cannot read is the
    repository's fault, said in one line. The texts used last are kept by id: a scan
    reads the files a commit left alone again and again."""
    if blob.startswith(UNREADABLE):
        raise Unevaluable(blob.removeprefix(UNREADABLE))
    texts = _memo(repo).texts
    text = texts.pop(blob, None)
    if text is None:
        found = _object(repo, blob, "blob")
        if found is None:
            raise HarnessError(_unreadable(repo, blob, path))
        text = python_source(found[2], path or blob[:12])
    if len(text) <= MAX_TEXT:
        if len(texts) >= TEXTS_KEPT:
            del texts[next(iter(texts))]
        texts[blob] = text  # the last used is the last dropped
    return text


def _unreadable(repo: Repo, blob: str, path: str) -> str:
    """Why git cannot read the object, in git's words when it has any (asked again, of a
    `git cat-file` of its own: the batch's stderr is not kept), and the fix."""
    repo.close()  # the `git cat-file` that failed: the next read starts afresh
    said = repo.complaint("cat-file", "-p", blob)
    why = f"git says {said!r}" if said else "it is corrupt or missing"
    return (
        f"git cannot read object {blob[:12]} ({path or 'a file'}) in {where_of(repo)}: {why}; "
        "run `git fsck` there, or clone the repository again"
    )


def python_source(data: bytes, path: str) -> str:
    """Bytes of a Python file decoded as CPython decodes them: a UTF-8 BOM, else a PEP 263
    coding line, else UTF-8; what CPython would refuse makes the revision unevaluable."""
    try:
        if _plainly_utf8(data):
            return data.decode()
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError) as exc:
        raise Unevaluable(f"{path} cannot be read as Python source: {exc}") from None
    except UnicodeDecodeError as exc:
        line, byte = undecodable(data, exc)
        raise Unevaluable(
            f"{path} line {line} is not valid {exc.encoding} (byte {byte}); "
            "CPython would refuse the file too"
        ) from None


def _plainly_utf8(data: bytes) -> bool:
    """Whether the file declares nothing about its encoding (no BOM, no `coding` in its
    first two lines), so it is UTF-8 without asking `tokenize`."""
    head = data[: data.find(b"\n", data.find(b"\n") + 1) + 1 or len(data)]
    return not data.startswith(b"\xef\xbb\xbf") and b"coding" not in head


class FilesAt:
    """The files of one commit (sha None: the working tree), each read at most once.

    `blobs` records every path asked for, with its blob id (None: no such file;
    always None in the working tree): what was read, to tell later whether
    another commit has the same files.
    """

    def __init__(
        self,
        repo: Repo,
        sha: str | None,
        known: dict[str, str | None] | None = None,
        stream: PatchStream | None = None,
    ) -> None:
        self.repo, self.sha, self.stream = repo, sha, stream
        self.known = known or {}  # blob ids already looked up (a scan's `git log --raw`)
        self.blobs: dict[str, str | None] = {}

    def read(self, path: str) -> str | None:
        if self.sha is None:
            self.blobs[path] = None
            return _read_worktree(self.repo, path)
        blob = self.ident(path)[1]
        return None if blob is None else read_blob(self.repo, blob, path)

    def edit(self, path: str, base: str) -> FilePatch | None:
        """git's patch that makes this file's blob here from the blob `base`, when the
        scan's stream has it (see `harness.patches`)."""
        if self.stream is None or self.sha is None:
            return None
        blob = self.ident(path)[1]
        return None if blob is None or blob == base else self.stream.patch(blob, base)

    def ident(self, path: str) -> tuple[str, str | None]:
        """The file's content as an id, without reading it: its blob (None: no such file)
        at a commit, its text in the working tree."""
        if self.sha is None:
            return ("text", self.read(path))
        if path not in self.blobs:  # a commit's trees never change: asked once
            known = self.known
            self.blobs[path] = known[path] if path in known else blob_of(self.repo, self.sha, path)
        return ("blob", self.blobs[path])


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit of a scan: its first parent, committer date and subject."""

    sha: str
    parent: str | None
    date: str
    subject: str
    # (the file's blob at the parent, at the commit) when git log said; None: ask git
    blobs: tuple[str | None, str | None] | None = field(default=None, compare=False)
    # every path of the scan git log saw change, (blob at the parent, at the commit); the
    # scan's other paths are unchanged since the parent. None: not known (a merge)
    changes: dict[str, tuple[str | None, str | None]] | None = field(default=None, compare=False)
    watched: tuple[str, ...] = field(default=(), compare=False)  # the scan's paths

    @property
    def pr(self) -> int | None:
        return pr_number(self.subject)

    @property
    def short(self) -> str:
        """A commit's first 10 digits; a release's whole version (its `sha`: `0.5.13.post1`)."""
        return self.sha[:10] if OBJECT_ID.fullmatch(self.sha) else self.sha


def commits_touching(
    repo: Repo, revisions: list[str], paths: list[str], first_parent: bool = False
) -> list[Commit]:
    """Commits in `revisions` (rev-list arguments) that change any of `paths`, oldest
    first, with the blob of the first path (the target) before and after each, when the
    commit changes it (read from the same `git log`)."""
    return Listing(repo, revisions, paths, first_parent).commits()


class Listing:
    """`commits_touching`, started: git lists while the caller goes on."""

    def __init__(self, repo: Repo, revisions: list[str], paths: list[str], first_parent: bool):
        self.repo, self.options = repo, ["--first-parent"] if first_parent else []
        self.revisions, self.paths, self.first_parent = revisions, tuple(paths), first_parent
        links = repo.answers.get(LINKS, {})  # paths read through links, and where they led
        self.linked = any(path in links for path in paths)
        led = sorted({p for path in paths for p in links.get(path, ())} - set(paths))
        self.pathspec = [*self.paths, *led]
        self.started = repo.start(
            "log", "-z", "--reverse", "--topo-order", "--raw", "--no-abbrev", "--no-renames",
            "--format=%x01%H%x00%P%x00%cI%x00%s", *self.options, *revisions, "--",
            *self.pathspec,
        )  # fmt: skip

    def commits(self) -> list[Commit]:
        """The commits, oldest first (see `stream`)."""
        return list(self.stream())

    def stream(self) -> Iterator[Commit]:
        """The commits, oldest first, parsed as git prints them: what is held is the last
        commit and a chunk of git's output, however many there are. When a path is read
        through a link, none carries blob ids (a link's blob is its text: the file's blob
        is asked of git). Raises GitError, at the end, when git failed."""
        for commit in _commits(Fields(self.started.process.stdout), self.paths):
            yield replace(commit, blobs=None, changes=None) if self.linked else commit
        try:
            self.started.said()  # its status: git may have stopped part of the way
        except GitError as exc:
            if not exc.reason:
                raise
            raise HarnessError(
                f"git cannot list the commits of {' '.join(self.revisions)} in "
                f"{where_of(self.repo)}: git says {exc.reason!r}; run `git fsck` there, or "
                "clone the repository again"
            ) from None

    def count(self) -> int:
        """How many commits the listing holds, asked of a git of its own (for a progress
        bar: `stream` does not know until it ends)."""
        return int(self.repo.git.rev_list("--count", *self.options, *self.revisions, "--",
                                          *self.pathspec))  # fmt: skip

    def close(self) -> None:
        self.started.close()


def commits_from(out: bytes, paths: tuple[str, ...]) -> Iterator[Commit]:
    """The commits of `git log -z --raw --format=%x01%H%x00%P%x00%cI%x00%s` (see
    `_commits`), from its whole output."""
    return _commits(Fields(io.BytesIO(out)), paths)


def _commits(fields: Fields, paths: tuple[str, ...]) -> Iterator[Commit]:
    """The commits of `git log -z --raw --format=%x01%H%x00%P%x00%cI%x00%s`: NUL ends every
    field, so a subject is any bytes but NUL and a path is the path (never quoted).
    The output is walked field by field, and a commit shares its parent's id and its
    old blob's with the commit before it. Raises GitError on output that is not git's."""
    names: dict[bytes, str] = {}
    last: Commit | None = None
    while (token := fields.take()) is not None:
        token = token.lstrip(b"\n")
        if not token:
            continue
        head = (token[1:], fields.take(), fields.take(), fields.take())
        if not token.startswith(b"\x01") or head[-1] is None:
            raise GitError(("log", "-z", "--raw"), 0, f"unexpected output {token[:40]!r}")
        last = _commit_from(head, _raw_changes(fields, names, last), paths, last)
        yield last


class Fields:
    """The NUL-terminated fields of git's `-z` output, one at a time, read from `out` (a
    pipe, or a BytesIO) a chunk at a time: the output is never held whole."""

    CHUNK = 1 << 16

    def __init__(self, out: BinaryIO) -> None:
        self.out, self.buffer, self.at, self.ended = out, b"", 0, False

    def peek(self) -> bytes | None:
        if (end := self.buffer.find(b"\0", self.at)) < 0 and not self.ended:
            self._fill()
            end = self.buffer.find(b"\0")
        if end >= 0:
            return self.buffer[self.at : end]
        return self.buffer[self.at :] if self.at < len(self.buffer) else None

    def take(self) -> bytes | None:
        found = self.peek()
        if found is not None:
            self.at += len(found) + 1
        return found

    def _fill(self) -> None:
        """Read on to the next NUL (or the end): each chunk is looked at once and joined
        once, so a field of any length (a subject of megabytes) costs its length."""
        parts = [self.buffer[self.at :]]
        while not self.ended:
            more = self.out.read1(self.CHUNK)
            self.ended = not more
            parts.append(more)
            if b"\0" in more:
                break
        self.buffer, self.at = b"".join(parts), 0


def _raw_changes(fields: Fields, names: dict, last: Commit | None) -> dict | None:
    """The `:oldmode newmode oldblob newblob status` NUL path NUL pairs that come next
    (None: a link or a submodule among them). `names`: each path's one str."""
    changes: dict[str, tuple[str | None, str | None]] | None = {}
    while (line := fields.peek()) is not None and line.lstrip(b"\n").startswith(b":"):
        fields.take()
        parts, raw = line.decode().split(), fields.take() or b""
        path = names.setdefault(raw, raw.decode("utf-8", "surrogateescape"))
        if changes is not None and {parts[0][1:], parts[1]} & {LINK_MODE, SUBMODULE_MODE}:
            changes = None  # a link's blob is its text, not the file it leads to
        elif changes is not None:
            changes[path] = (_shared(_blob_or_none(parts[2]), last, path), _blob_or_none(parts[3]))
    return changes


def _shared(blob: str | None, last: Commit | None, path: str) -> str | None:
    """`blob`, as the commit before made it when it is the same id (one str, not two)."""
    before = None if last is None or not last.changes else last.changes.get(path)
    return before[1] if before is not None and before[1] == blob else blob


def _commit_from(
    head: tuple, changes: dict | None, paths: tuple[str, ...], last: Commit | None
) -> Commit:
    sha, parents, date, subject = (field.decode("utf-8", "replace") for field in head)
    parent = parents.split(" ")[0] or None
    if last is not None and parent == last.sha:
        parent = last.sha  # the previous commit's str
    blobs = None if changes is None else changes.get(paths[0])
    single = changes is not None and len(parents.split()) == 1  # a merge's: not its changes
    return Commit(sha, parent, date, subject, blobs, changes if single else None, paths)


def _blob_or_none(sha: str) -> str | None:
    return None if not sha.strip("0") else sha


def commit_of(repo: Repo, revision: Revision) -> Commit:
    parents = repo.git.log("-1", "--format=%P", revision.sha).split()
    return Commit(revision.sha, parents[0] if parents else None, revision.date, revision.subject)


def changed_files(repo: Repo, base: str, head: str) -> list[str]:
    """The paths whose content differs between two commits (added and removed ones too)."""
    out = repo.git.diff_tree("-r", "--no-commit-id", "--name-only", "-z", base, head)
    return [path for path in out.split("\0") if path]


def changed_in_worktree(repo: Repo, commit: str) -> list[str]:
    """The paths whose content differs between a commit and the working tree, untracked
    ones too; git's optional refresh of the index is off (the user's repository is never
    written)."""
    changed = repo.run("--no-optional-locks", "diff", "--name-only", "--no-renames", "-z",
                       commit, "--")  # fmt: skip
    untracked = repo.run("--no-optional-locks", "ls-files", "--others", "--exclude-standard",
                         "-z")  # fmt: skip
    return [p for p in dict.fromkeys([*changed.split("\0"), *untracked.split("\0")]) if p]


def is_ancestor(repo: Repo, older: str, newer: str) -> bool:
    return start_is_ancestor(repo, older, newer)()


def start_is_ancestor(repo: Repo, older: str, newer: str) -> Callable[[], bool]:
    """`is_ancestor`, started: calling the answer waits for git."""
    started = repo.start("merge-base", "--is-ancestor", older, newer)

    def answer() -> bool:
        try:
            started.output()
        except GitError:
            return False
        return True

    return answer


def _read_worktree(repo: Repo, path: str) -> str | None:
    """The file's text in the working tree, its links followed as at a commit (`followed`:
    never out of the repository, never into a submodule)."""
    top = Path(repo.working_tree_dir)
    found = followed(path, lambda parents, name: _disk_entry(top, parents, name),
                     "in the working tree")  # fmt: skip
    if found is None:
        return None
    try:
        data = (top / found[0]).read_bytes()
    except OSError:
        return None  # gone, or not readable: as if absent, as it was
    return python_source(data, path)


def _disk_entry(top: Path, parents: tuple, name: str) -> tuple[str, str] | None:
    """`followed`'s `entry` in the working tree `top`."""
    where = top.joinpath(*parents, name)
    try:
        mode = where.lstat().st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return ("link", os.readlink(where))
    if stat.S_ISDIR(mode):
        return ("submodule" if os.path.lexists(where / ".git") else "dir", "")
    return ("file", "") if stat.S_ISREG(mode) else None


def has_commit(repo: Repo, sha: str) -> bool:
    try:
        repo.git.rev_parse("--verify", "--quiet", f"{sha}^{{commit}}")
    except GitError:
        return False
    return True


def merge_base(repo: Repo, a: str, b: str) -> str | None:
    try:
        return repo.git.merge_base(a, b) or None
    except GitError:
        return None


def remote_for(repo: Repo, slug: str) -> str | None:
    """The name of a remote whose URL points at github.com's OWNER/REPO, if any. Names
    and URLs are read as data (`git config -z`), never from `git remote -v`'s columns:
    a name may hold a tab or a space, and only a whole URL of github.com counts."""
    pattern = re.compile(GITHUB_URL.format(slug=re.escape(slug)), re.IGNORECASE)
    settings = _config(repo, r"^(remote\..*\.url|url\..*\.insteadof)$")
    rewrites = [(value, key[4:-10]) for key, value in settings if key.startswith("url.")]
    for key, url in settings:
        if key.startswith("remote.") and pattern.fullmatch(_rewritten(url, rewrites)):
            return key[len("remote.") : -len(".url")]
    return None


GITHUB_URL = (  # https://, ssh://, git:// (an optional user and port), or scp-like git@host:
    r"(?:(?:https?|ssh|git)://(?:[^@/\s]+@)?github\.com(?::\d+)?/|[^@/:\s]+@github\.com:)"
    r"{slug}(?:\.git)?/?"
)


def _config(repo: Repo, pattern: str) -> list[tuple[str, str]]:
    """(key, value) of the settings whose keys match `pattern`, in git's order."""
    try:
        out = repo.start("config", "-z", "--get-regexp", pattern).data()
    except GitError:  # exit 1: none
        return []
    pairs = (entry.partition(b"\n") for entry in out.split(b"\0") if entry)
    return [(k.decode("utf-8", "surrogateescape"), v.decode("utf-8", "surrogateescape"))
            for k, _, v in pairs]  # fmt: skip


def _rewritten(url: str, rewrites: list[tuple[str, str]]) -> str:
    """`url` as git fetches it: the longest `url.<base>.insteadOf` prefix replaced."""
    found = [(prefix, base) for prefix, base in rewrites if url.startswith(prefix)]
    if not found:
        return url
    prefix, base = max(found, key=lambda pair: len(pair[0]))
    return base + url[len(prefix) :]


def patch_stream(repo: Repo, commits: list[Commit] | Listing) -> PatchStream:
    """git's patches for a scan of `commits`, printed as the scan goes (see
    `harness.patches`); for a Listing being streamed, git walks the same commits in the
    same order, so no list of them is held."""
    where = repo.working_tree_dir or repo.git_dir
    if isinstance(commits, Listing):
        walk = ["--reverse", "--topo-order", *commits.options, *commits.revisions]
        return PatchStream(repo.git_dir, where, [], commits.pathspec, walk)
    shas = [c.sha for c in commits if c.changes is not None]
    paths = list(commits[0].watched) if commits else []
    return PatchStream(repo.git_dir, where, shas, paths)


def fetch_objects(repo: Repo, source: str, ref: str) -> None:
    """Fetch `ref`'s commits into the object store only: no ref, no FETCH_HEAD is written."""
    try:
        repo.git.fetch("--quiet", "--no-tags", "--no-write-fetch-head", "--end-of-options",
                       source, ref)  # fmt: skip
    except GitError as exc:
        raise HarnessError(f"cannot fetch {ref} from {source}: {_git_complaint(exc)}") from None


def _git_complaint(exc: GitError) -> str:
    """git's own first `fatal:`/`error:` line."""
    text = str(exc.stderr or "").strip().removeprefix("stderr:").strip().strip("'")
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("fatal:", "error:")):
            return line
    return text.splitlines()[0] if text else f"git exited with {exc.status}"
