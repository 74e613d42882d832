"""Bad input and broken repositories: one line and exit 2, or an honest outcome; never a
silent wrong answer, a traceback, or a file left half written.

Each test builds the real thing: shallow clones, a corrupt loose object, files in
other encodings, a full disk (a file-size limit on a real process, or /dev/full),
a pipe closed early, a real SIGINT.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.testing.gitrepo import FixtureRepo
from tests import oracle
from tests.conftest import git_out, one_line_error, run_cli
from tests.helpers import PATH, commit_versions
from tests.test_hostile import BASE, MATRIX

HARNESS = [sys.executable, "-m", "harness"]


def file_size_limited(limit: int) -> dict:
    """`subprocess.run` arguments for a harness process that may write files of `limit`
    bytes at most (a full disk, as this process meets it), and writes no bytecode: a
    `.pyc` written under the limit is cut short, renamed into place whole, and every later
    import of its module fails (tests/test_install_intact.py)."""

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return {
        "preexec_fn": limit_file_size,
        "env": {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    }


def state_of(repo: Path) -> tuple[str, str, str]:
    """HEAD, every ref and the status: what a harness run must leave as it was."""
    return (
        git_out(repo, "rev-parse", "HEAD"),
        git_out(repo, "show-ref"),
        git_out(repo, "status", "--porcelain", "--untracked-files=all"),
    )


# --- shallow clones -----------------------------------------------------------------


def shallow(history, tmp_path: Path, depth: int) -> Path:
    target = tmp_path / f"depth{depth}"
    subprocess.run(["git", "clone", "-q", "--depth", str(depth), f"file://{history.root}",
                    str(target)], check=True)  # fmt: skip
    return target


def test_a_revision_past_a_shallow_clone_says_so_with_the_fix(history, tmp_path):
    clone = shallow(history, tmp_path, 1)
    line = one_line_error(run_cli("diff", "HEAD~1", "HEAD", "--repo", str(clone)))
    assert "unknown revision 'HEAD~1'" in line and "shallow" in line
    assert "git fetch --unshallow" in line and "fetch-depth: 0" in line


@pytest.mark.parametrize("depth", [1, 5])
def test_history_and_bisect_refuse_to_scan_past_a_shallow_boundary(history, tmp_path, depth):
    clone = shallow(history, tmp_path, depth)
    before = state_of(clone)
    line = one_line_error(run_cli("history", "--repo", str(clone)))
    assert "shallow" in line and "git fetch --unshallow" in line
    root = git_out(history.root, "rev-list", "--max-parents=0", "HEAD").split()[0]
    line = one_line_error(run_cli("bisect", root, "HEAD", "--repo", str(clone)))
    assert "shallow" in line and "git fetch --unshallow" in line
    assert state_of(clone) == before


def test_a_range_inside_a_shallow_clone_still_runs(history, tmp_path):
    clone = shallow(history, tmp_path, 5)
    result = run_cli("history", "HEAD~2..HEAD", "--repo", str(clone))
    assert result.code in (0, 1) and "shallow" not in result.err


# --- broken objects, bad paths ------------------------------------------------------


def test_a_corrupt_target_blob_is_one_line_whichever_side_it_is_on(history, tmp_path):
    clone = tmp_path / "clone"  # --no-local: its objects must not be the fixture's own files
    subprocess.run(["git", "clone", "-q", "--no-local", str(history.root), str(clone)],
                   check=True)  # fmt: skip
    subprocess.run(["git", "unpack-objects", "-q"], cwd=clone, check=True,
                   input=_pack(clone))  # fmt: skip
    blob = git_out(clone, "rev-parse", f"HEAD:{PATH}").strip()
    loose = clone / ".git" / "objects" / blob[:2] / blob[2:]
    data = bytearray(loose.read_bytes())
    data[len(data) // 2] ^= 0xFF
    loose.chmod(0o644)
    loose.write_bytes(bytes(data))
    before = (git_out(clone, "rev-parse", "HEAD"), git_out(clone, "show-ref"), loose.read_bytes())
    for revisions in (("HEAD", "#30835"), ("#30835", "HEAD")):
        result = run_cli("diff", *revisions, "--repo", str(clone), "--no-cache")
        line = one_line_error(result)
        assert f"git cannot read object {blob[:12]} ({PATH})" in line and "git fsck" in line
        assert result.out == ""
    assert (
        git_out(clone, "rev-parse", "HEAD"),
        git_out(clone, "show-ref"),
        loose.read_bytes(),
    ) == before  # nothing "repaired" behind the user's back


def _pack(clone: Path) -> bytes:
    """The clone's pack, moved aside, so that unpacking it leaves loose objects."""
    (pack,) = (clone / ".git" / "objects" / "pack").glob("*.pack")
    data = pack.read_bytes()
    for path in pack.parent.iterdir():
        path.unlink()
    return data


@pytest.mark.parametrize("path", ["../x.py", "/etc/passwd", "a/../../x.py", "a\\\\b.py"])
def test_a_target_path_outside_the_repository_is_refused(tmp_path, path):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX.replace("python/sglang/srt/arg_groups/overrides.py", path))
    line = one_line_error(run_cli("matrix", "--matrix", str(matrix)))
    assert "target.path" in line and "inside the repository" in line


# --- encodings ----------------------------------------------------------------------

SIZED = """\
def target(view):
    # {comment}
    if view.backend == "fa4":
        return {{"page_size": 128}}
    return {{}}
"""


def diff_sources(tmp_path: Path, first: bytes, second: bytes):
    repo = FixtureRepo(tmp_path / "repo")
    shas = []
    for n, data in enumerate((first, second)):
        target = repo.root / PATH
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        repo.git("add", "--", PATH)
        repo.git("commit", "-q", "-m", f"v{n}")
        shas.append(repo.git("rev-parse", "HEAD"))
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX)
    result = run_cli("diff", *shas, "--repo", str(repo.root), "--matrix", str(matrix),
                     "--format", "json", "--no-cache")  # fmt: skip
    return result, json.loads(result.out) if result.out else None


def test_a_utf8_bom_and_a_pep263_coding_line_are_read_as_python_reads_them(tmp_path):
    plain = SIZED.format(comment="prüfen").encode("utf-8")
    bom = b"\xef\xbb\xbf" + plain
    latin = ("# -*- coding: latin-1 -*-\n" + SIZED.format(comment="prüfen")).encode("latin-1")
    for other in (bom, latin):
        compile(other, "check", "exec")  # CPython accepts each
        result, report = diff_sources(tmp_path / str(len(other)), plain, other)
        assert result.code == 0, result.err
        assert report["changed"] == [] and report["notes"] == {}


def test_latin1_without_a_coding_line_is_unevaluable_as_cpython_refuses_it(tmp_path):
    plain = SIZED.format(comment="prufen").encode("utf-8")
    latin = SIZED.format(comment="prüfen").encode("latin-1")
    script = tmp_path / "latin.py"
    script.write_bytes(latin)
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert ran.returncode != 0 and "Non-UTF-8" in ran.stderr  # CPython refuses the file
    result, report = diff_sources(tmp_path, plain, latin)
    assert result.code == 4
    assert "not valid utf-8" in report["notes"]["head"] and "line 2" in report["notes"]["head"]


def test_a_nul_byte_names_its_line(tmp_path):
    plain = SIZED.format(comment="x").encode()
    nul = SIZED.format(comment="x\0y").encode()
    _, report = diff_sources(tmp_path, plain, nul)
    assert "line 2" in report["notes"]["head"] and "None" not in report["notes"]["head"]


# --- the function defined twice --------------------------------------------------

REGISTERED_THEN_PLAIN = """
@register_post_process
def target(view):
    return {"page_size": 64}

def target(view):
    return {"page_size": 1}
"""


def test_the_registered_definition_is_the_one_sglang_runs(tmp_path):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX.replace("world: plain", "world: sglang"))
    plain = "def target(view):\n    return {}\n"
    shas = commit_versions(tmp_path / "repo", [plain, REGISTERED_THEN_PLAIN])
    result = run_cli("diff", *shas, "--repo", str(tmp_path / "repo"), "--matrix", str(matrix),
                     "--format", "json", "--no-cache")  # fmt: skip
    report = json.loads(result.out)
    assert {item["head"]["page_size"] for item in report["changed"]} == {64}
    twice = REGISTERED_THEN_PLAIN.replace("def target(view):\n    return {\"page_size\": 1}",
                                          "@register_post_process\ndef target(view):\n"
                                          "    return {\"page_size\": 1}")  # fmt: skip
    shas = commit_versions(tmp_path / "twice", [plain, twice])
    result = run_cli("diff", *shas, "--repo", str(tmp_path / "twice"), "--matrix", str(matrix),
                     "--format", "json", "--no-cache")  # fmt: skip
    note = json.loads(result.out)["notes"]["head"]
    assert "registered twice" in note and "lines 3 and 7" in note


# --- matrix files -------------------------------------------------------------------


def test_a_key_written_twice_in_a_matrix_is_refused_with_both_lines(tmp_path):
    matrix = tmp_path / "m.yaml"
    text = MATRIX + "  backend: [fa4]\n"
    matrix.write_text(text)
    first, second = (n for n, line in enumerate(text.splitlines(), 1) if "backend:" in line)
    line = one_line_error(run_cli("matrix", "--matrix", str(matrix)))
    assert "'backend' appears twice" in line and f"lines {first} and {second}" in line


def test_a_matrix_file_that_is_not_utf8_is_one_line(tmp_path):
    matrix = tmp_path / "m.yaml"
    text = MATRIX.replace("fa3", "fä3")
    matrix.write_bytes(text.encode("latin-1"))
    (number,) = (n for n, line in enumerate(text.splitlines(), 1) if "ä" in line)
    line = one_line_error(run_cli("matrix", "--matrix", str(matrix)))
    assert "not UTF-8" in line and f"m.yaml:{number}:" in line


def test_a_matrix_past_the_cell_limit_is_refused_before_anything_is_allocated(tmp_path):
    values = ", ".join(f"v{n}" for n in range(62))
    matrix = tmp_path / "m.yaml"
    extra = "".join(f"  extra_{n}: [{values}]\n" for n in range(4))
    matrix.write_text(MATRIX + extra)
    cells = 3 * 3 * 62**4
    line = one_line_error(run_cli("matrix", "--matrix", str(matrix)))
    assert f"{cells:,} cells" in line and "50,000,000" in line and "--max-cells" in line
    smaller = tmp_path / "smaller.yaml"
    smaller.write_text(MATRIX + extra.split("\n", 1)[1])
    allowed = run_cli("matrix", "--matrix", str(smaller), "--max-cells", str(cells // 62))
    assert allowed.code == 0 and f"{cells // 62:,}" in allowed.out
    line = one_line_error(run_cli("matrix", "--matrix", str(smaller), "--max-cells", "1000"))
    assert f"{cells // 62:,} cells" in line and "1,000 allowed" in line


# --- messages -----------------------------------------------------------------------


def test_an_empty_repository_says_it_has_no_commits(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path / "empty")], check=True)
    line = one_line_error(run_cli("diff", "HEAD", "--repo", str(tmp_path / "empty")))
    assert "has no commits yet" in line


def test_an_ambiguous_short_sha_is_called_ambiguous(tmp_path):
    repo = FixtureRepo(tmp_path / "repo")
    repo.commit("one", {"a.txt": "a\n"})
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    for n in range(2000):
        (blobs / str(n)).write_text(f"{n}\n")
    names = "\n".join(str(blobs / str(n)) for n in range(2000))
    shas = subprocess.run(
        ["git", "hash-object", "-w", "--stdin-paths"],
        cwd=repo.root,
        input=names,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    by_prefix: dict[str, int] = {}
    for sha in shas:
        by_prefix[sha[:4]] = by_prefix.get(sha[:4], 0) + 1
    prefix = next(p for p, count in by_prefix.items() if count > 1)
    line = one_line_error(run_cli("diff", prefix, "HEAD", "--repo", str(repo.root)))
    assert f"revision '{prefix}' is ambiguous" in line and "more digits" in line


# --- output that cannot be written, readers that go away ---------------------------


def test_a_closed_pipe_keeps_the_answer(history):
    reader = subprocess.Popen([*HARNESS, "diff", "#30835^", "#30835", "--repo", history.repo(),
                               "--format", "json", "--no-cache"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    reader.stdout.read(100)
    reader.stdout.close()
    assert reader.wait(timeout=60) == 1
    assert b"Traceback" not in reader.stderr.read()


def test_output_to_a_full_device_is_one_line(history):
    with open("/dev/full", "w") as full:
        done = subprocess.run([*HARNESS, "diff", "#30835^", "#30835", "--repo", history.repo(),
                               "--no-cache"], stdout=full, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "cannot write the output" in line and "No space left" in line


def test_a_snapshot_that_cannot_be_written_leaves_the_old_baseline_whole(history, tmp_path):
    baseline = tmp_path / "baseline.json"
    assert run_cli("snapshot", "#30835^", "-o", str(baseline), "--repo", history.repo()).code == 0
    before = baseline.read_bytes()
    done = subprocess.run([*HARNESS, "snapshot", "#30835", "-o", str(baseline), "--repo",
                           history.repo(), "--no-cache"], capture_output=True, text=True,
                          **file_size_limited(100))  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert f"cannot write the baseline {baseline}" in line and "left as it was" in line
    assert baseline.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]  # no temporary left


@pytest.mark.parametrize("broken", ["def target(view)\n", "def other(view):\n    return {}\n"])
def test_a_snapshot_of_a_revision_that_cannot_be_evaluated_writes_nothing_and_exits_4(
    tmp_path, broken
):
    """A baseline records what a revision does; where it does nothing that can be read
    (a syntax error; no target function), the snapshot says why, exit 4, and the baseline
    kept from before is left as it was."""
    shas = commit_versions(tmp_path / "repo", [BASE.format(marker=""), broken])
    matrix, baseline = tmp_path / "m.yaml", tmp_path / "baseline.json"
    matrix.write_text(MATRIX)
    common = ("--repo", str(tmp_path / "repo"), "--matrix", str(matrix), "--no-cache")
    assert run_cli("snapshot", shas[0], "-o", str(baseline), *common).code == 0
    before = baseline.read_bytes()
    done = run_cli("snapshot", shas[1], "-o", str(baseline), *common)
    (line,) = done.err.strip().splitlines()
    assert done.code == 4 and line.startswith("harness: cannot tell: ") and done.out == ""
    assert "nothing written" in line and (
        "syntax error in" in line or "no top-level function target" in line
    ), line
    assert baseline.read_bytes() == before


def test_an_output_file_is_written_whole_with_the_rest(history, tmp_path):
    summary, sample = tmp_path / "summary.md", tmp_path / "comment.json"
    result = run_cli("diff", "#30835^", "#30835", "--repo", history.repo(), "--format", "github",
                     "--output", f"markdown={summary}", "--output", f"json-sample={sample}",
                     "--sample", "3")  # fmt: skip
    assert result.code == 1 and result.out.startswith("::warning")
    doc = json.loads(sample.read_text())
    assert doc["changed_count"] == len(oracle.changed_between(False, True))
    assert len(doc["changed"]) == 3 and summary.read_text().startswith("### ")


def test_sigint_is_one_line_exit_130_and_leaves_no_worker(tmp_path):
    forever = BASE.format(marker="") + "\ndef slow(view):\n    while True:\n        pass\n"
    forever = forever.replace("def target(view):\n", "def target(view):\n    slow(view)\n", 1)
    shas = commit_versions(tmp_path / "repo", [BASE.format(marker=""), forever])
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX)
    run = subprocess.Popen([*HARNESS, "diff", *shas, "--repo", str(tmp_path / "repo"),
                            "--matrix", str(matrix), "--no-cache", "--time-limit", "30"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 20
    children = _children(run.pid)
    while not children and time.monotonic() < deadline:  # the worker is forked
        time.sleep(0.1)
        children = _children(run.pid)
    assert children, "the evaluation runs in a worker"
    time.sleep(0.3)  # into the evaluation
    run.send_signal(signal.SIGINT)
    code, err = run.wait(timeout=120), run.stderr.read().strip()  # a hang, not a busy machine
    assert (code, err) == (130, "harness: interrupted")
    deadline = time.monotonic() + 30
    while [pid for pid in children if _alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.1)  # the zygote's children die with it: not always in the same instant
    assert not [pid for pid in children if _alive(pid)]


def _children(pid: int) -> list[int]:
    """The process's children that are Python (its evaluation workers), not git."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and b"git" not in _cmdline(entry):
                found.append(int(entry.name))
    return found


def _cmdline(entry: Path) -> bytes:
    try:
        return (entry / "cmdline").read_bytes().split(b"\0")[0]
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_exit_statuses_are_documented_in_the_readme():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("Exit status") :]
    for words in ("0 no change", "1 outcomes changed", "2 ", "3 ", "4 cannot tell", "130"):
        assert words in section[:1200], words


def test_odd_code_does_not_make_python_print_its_warnings(tmp_path):
    """CPython warns about `1if x` when it parses it; that is the repository's code, and the
    report is ours: nothing reaches stderr."""
    from harness.testing.gitrepo import FixtureRepo

    source = (
        'def _fa4_page_constraint(view):\n    return {"page_size": 1if view.page_size else 2}\n'
    )
    FixtureRepo(tmp_path / "repo").commit(
        "odd", {"python/sglang/srt/arg_groups/overrides.py": source}
    )
    argv = [
        sys.executable,
        "-m",
        "harness",
        "diff",
        "HEAD",
        "HEAD",
        "--repo",
        str(tmp_path / "repo"),
    ]
    done = subprocess.run(argv, capture_output=True, text=True)  # Python's own warning filters
    assert done.returncode == 0 and done.stderr == ""


def test_a_full_disk_stops_no_scan_only_the_cache(history):
    """Reading git never goes through files: with nothing writable, history and bisect
    still answer (the cache warns that it cannot keep anything)."""
    shas = history.shas
    for command in (["history", f"{shas['initial']}..{shas['docs']}"],
                    ["bisect", shas["initial"], shas["docs"]]):  # fmt: skip
        done = subprocess.run([*HARNESS, *command, "--repo", history.repo(), "--format", "json"],
                              capture_output=True, text=True, **file_size_limited(0))  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
        report = json.loads(done.stdout)
        found = report["culprit"] if command[0] == "bisect" else report["commits"][0]
        assert found["sha"] == shas["pr30835"]
