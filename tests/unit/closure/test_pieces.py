"""Piecewise parsing gives exactly the tree `ast.parse` gives, edit after edit."""

from __future__ import annotations

import ast
import copy
import gc
import pickle
import random
import weakref

import pytest

from harness.closure.modules import RevisionFiles
from harness.closure.pieces import Layout, SourceCache, changed_span
from harness.engine.worlds.sglang import FACTS
from harness.errors import Unevaluable
from harness.testing.sglang_fixture import Overrides, overrides_source

TRICKY = '''\
"""Module docstring."""
import os

X = """
def not_a_function():
    return 1
"""

@decorator_one
@decorator_two(
    arg=1,
)
def decorated(view):
    return {"page_size": 1}

if os.environ:
    def conditional():
        return 1
else:
    def conditional():
        return 2

try:
    import thing
except ImportError:
    thing = None
finally:
    pass

TOTAL = 1 + \\
2

CALL = dict(
a=1,
)

class Holder:
    value = 3

if TYPE_CHECKING:
    from typing import Any

# a comment holding """ three quotes
QUOTES = '"""'
SQL = f"""
SELECT {X}
"""
# a trailing comment
'''


def whole_tree(source: str) -> list[str]:
    """What one `ast.parse` of the file says: each top-level statement, lines included."""
    return [ast.dump(node, include_attributes=True) for node in ast.parse(source).body]


def statements(layout: Layout) -> list:
    return [
        layout.statement(i, n) for i, p in enumerate(layout.pieces) for n in range(len(p.nodes))
    ]


def tree_of(layout: Layout) -> list[str]:
    return [
        ast.dump(ast.increment_lineno(copy.deepcopy(s.node), s.offset), include_attributes=True)
        for s in statements(layout)
    ]


def piecewise_tree(cache: SourceCache, source: str) -> list[str]:
    return tree_of(cache.layout(source, "m.py"))


def matching_one_parse(make, version: str) -> Layout | None:
    """`make()`, the layout of `version`: exactly the tree `ast.parse` gives, or refused as a
    syntax error where `ast.parse` refuses it (then None)."""
    try:
        expected = whole_tree(version)
    except SyntaxError:
        with pytest.raises(Unevaluable, match="syntax error"):
            make()
        return None
    layout = make()
    assert tree_of(layout) == expected
    return layout


def edits(source: str, seed: int, count: int) -> list[str]:
    """A chain of random line edits: delete, duplicate, insert a statement or a stray quote."""
    rng = random.Random(seed)
    inserts = [
        "Y = 2\n",
        "def extra():\n    return 3\n",
        "else:\n",
        '"""\n',
        "@deco\n",
        "(\n",
        "if TYPE_CHECKING:\n    import z\n",
        '# """\n',
        'S = \'"""\'\n',
        ")\n",
    ]
    versions, lines = [], source.splitlines(keepends=True)
    for _ in range(count):
        at = rng.randrange(len(lines) + 1)
        action = rng.choice(("delete", "duplicate", "insert"))
        if action == "delete" and at < len(lines):
            del lines[at]
        elif action == "duplicate" and at < len(lines):
            lines.insert(at, lines[at])
        else:
            lines.insert(at, rng.choice(inserts))
        versions.append("".join(lines))
    return versions


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("base", ["tricky", "fixture"])
def test_piecewise_parse_matches_one_parse_after_every_edit(base, seed):
    source = TRICKY if base == "tricky" else overrides_source(Overrides(padding=3))
    cache = SourceCache()  # one across the chain: each version is cut against the last
    for version in [source, *edits(source, seed, 25)]:
        matching_one_parse(lambda v=version: cache.layout(v, "m.py"), version)


def test_an_edit_reuses_the_pieces_around_it():
    source = overrides_source(Overrides(padding=20))
    cache = SourceCache()
    before = cache.layout(source, "m.py")
    after = cache.layout(source.replace("return {}", "return {}  # edited", 1), "m.py")
    shared = {id(p) for p in before.pieces} & {id(p) for p in after.pieces}
    assert len(before.pieces) > 20  # one piece per pass at least: not one whole-file parse
    assert len(before.pieces) == len(after.pieces)
    assert len(shared) == len(before.pieces) - 1


def test_a_long_run_of_edits_keeps_only_the_last_layout_before_the_newest():
    """Each layout knows the one it was cut from (for the edit), and no further back: a
    scan of many commits must not keep every text it read."""
    source = overrides_source(Overrides(padding=20))
    cache = SourceCache()
    first = weakref.ref(cache.layout(source, "m.py"))
    layouts = [cache.layout(source.replace("return {}", f"return {{}}  # {n}", 1), "m.py")
               for n in range(5)]  # fmt: skip
    newest = layouts.pop()
    assert newest.edit.base is layouts[-1] and layouts[-1].edit is None
    del layouts
    gc.collect()
    assert first() is None  # nothing holds the first layout (nor its text) any more


def test_a_syntax_error_names_its_line_in_the_file():
    source = TRICKY + "\n\ndef broken(:\n    pass\n"
    line = source.splitlines().index("def broken(:") + 1
    with pytest.raises(Unevaluable, match=f"syntax error in m.py line {line}:"):
        SourceCache().layout(source, "m.py")


def closure_facts(closure) -> tuple:
    """Everything a closure is: digest, needs, target line, and its nodes with their lines."""
    dumped = [ast.dump(node, include_attributes=True) for node in closure.nodes]
    return closure.digest, closure.needs, closure.lineno, dumped


def fixture_edits() -> list[str]:
    """Edits around the FA4 pass: unrelated ones (the last closure is reused) and ones that
    change it (a helper, a constant rebound, lines inserted above)."""
    text = overrides_source(Overrides(padding=6))
    steps = [
        ("- 2 % 7}", "- 2 % 9}"),  # an unrelated pass
        ("_ATTENTION_FIELDS = (", "_EXTRA = 1\n_ATTENTION_FIELDS = ("),  # lines above
        ("return any(", "return all("),  # the helper the pass uses
        ("- 4 % 7}", "- 4 % 5}"),
        ("\n\n@register_post_process\ndef _tuning_pass_5",
         "\n\nFA4_PAGE_SIZE = 64\n\n\n@register_post_process\ndef _tuning_pass_5"),  # rebound
        ("- 1 % 7}", "- 1 % 3}"),
    ]  # fmt: skip
    versions = [text]
    for old, new in steps:
        assert old in text, old
        text = text.replace(old, new, 1)
        versions.append(text)
    return versions


def test_a_reused_closure_is_the_closure_a_fresh_extraction_finds():
    from harness.closure.extract import extract_closure

    names = {
        "logger",
        "Backend",
        "envs",
        "is_sm100_supported",
        "is_sm90_supported",
        "is_hip",
        "get_platform",
        "use_mla_backend",
        "model_config_of",
        "register_post_process",
    }
    cache = SourceCache()  # one across the chain: layouts and closures are reused

    def facts(cache: SourceCache, text: str) -> tuple:
        files = RevisionFiles.of({"m.py": text}, "m.py")
        return closure_facts(
            extract_closure(cache, files, "_fa4_page_constraint", names, facts=FACTS)
        )

    chained = [facts(cache, v) for v in fixture_edits()]
    fresh = [facts(SourceCache(), v) for v in fixture_edits()]
    assert chained == fresh
    digests = [facts[0] for facts in fresh]
    assert digests[0] == digests[1] == digests[2]  # unrelated edit, lines above
    assert digests[3] != digests[2] and digests[5] != digests[4]  # helper, constant rebound


CONSTANTS = ["_TUNED = 1\n", "logger = logging.getLogger(__name__)\n", "\n", "FA4_PAGE_SIZE = 64\n",
             "x = 1; y = 2\n", "_ATTENTION_FIELDS = ()\n",
             # definitions unchanged module-level code calls, which write or not
             "def _fill():\n    pass\n", "def _fill():\n    _ATTENTION_FIELDS.append('x')\n",
             "_fill()\n", "def _noted(fn):\n    return fn\n",
             "def _noted(fn):\n    _ATTENTION_FIELDS.append('y')\n    return fn\n",
             "@_noted\ndef _other():\n    pass\n"]  # fmt: skip


@pytest.mark.parametrize("seed", range(16))
def test_a_closure_reused_across_random_module_level_edits_is_a_fresh_one(seed):
    """Statements inserted, dropped and duplicated at module level, anywhere (next to the
    closure's own, which an edit may cut again the same): each version's closure, read
    with the last one's reuse, is what a fresh extraction finds."""
    from harness.closure.extract import extract_closure

    names = {"logger", "Backend", "envs", "is_sm100_supported", "is_sm90_supported", "is_hip",
             "get_platform", "use_mla_backend", "model_config_of", "register_post_process"}  # fmt: skip
    rng = random.Random(seed)
    lines = overrides_source(Overrides(padding=4)).splitlines(keepends=True)
    top = [n for n, line in enumerate(lines) if line and not line[0].isspace()]
    cache = SourceCache()

    def facts(cache: SourceCache, text: str) -> object:
        try:
            files = RevisionFiles.of({"m.py": text}, "m.py")
            return closure_facts(
                extract_closure(cache, files, "_fa4_page_constraint", names, facts=FACTS)
            )
        except Unevaluable as exc:
            return str(exc)

    for _ in range(16):
        at = rng.choice(top)
        if rng.random() < 0.5:
            lines.insert(at, rng.choice(CONSTANTS))
        elif lines[at].strip() in {c.strip() for c in CONSTANTS}:
            del lines[at]
        top = [n for n, line in enumerate(lines) if line and not line[0].isspace()]
        text = "".join(lines)
        assert facts(cache, text) == facts(SourceCache(), text), text


def test_a_pass_edited_only_in_comments_keeps_its_closure_at_its_new_lines():
    """A comment changed, and lines added inside the pass: the same statements, reused
    from the last closure, at the lines a fresh extraction gives them."""
    from harness.closure.extract import extract_closure

    names = {"logger", "Backend", "envs", "is_sm100_supported", "get_platform",
             "use_mla_backend", "model_config_of", "register_post_process"}  # fmt: skip
    base = overrides_source(Overrides(padding=2))
    comment = "    # Pages of 128 tokens match the FA4 kernel tile.\n"
    assert comment in base
    versions = [base, base.replace(comment, "    # Tiles of 128 tokens.\n\n    # (FA4)\n", 1)]
    versions.append(versions[1].replace("    # (FA4)\n", "    # (FA4)\n    x = 1\n", 1))

    def facts(cache: SourceCache, text: str) -> tuple:
        files = RevisionFiles.of({"m.py": text}, "m.py")
        return closure_facts(
            extract_closure(cache, files, "_fa4_page_constraint", names, facts=FACTS)
        )

    cache = SourceCache()
    chained = [facts(cache, v) for v in versions]
    fresh = [facts(SourceCache(), v) for v in versions]
    assert chained == fresh
    assert fresh[0][0] == fresh[1][0] != fresh[2][0]  # a comment is no change; code is
    assert fresh[0][3] != fresh[1][3]  # the statements moved down


@pytest.mark.parametrize("chunk", [1, 3, 1024])
def test_the_changed_span_is_what_a_character_by_character_scan_finds(chunk):
    rng = random.Random(chunk)
    for _ in range(1500):
        old = "".join(rng.choice("ab\n") for _ in range(rng.randrange(40)))
        new = list(old)
        for _ in range(rng.randrange(3)):
            at = rng.randrange(len(new) + 1)
            if rng.random() < 0.5:
                new.insert(at, rng.choice("abc"))
            elif at < len(new):
                del new[at]
        new = "".join(new)
        head = 0
        while head < min(len(old), len(new)) and old[head] == new[head]:
            head += 1
        tail = 0
        while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
            tail += 1
        assert changed_span(old, new, chunk) == (head, len(old) - tail)


def test_a_multi_line_docstring_at_column_0_does_not_force_a_whole_file_parse():
    source = (
        '# License header.\n"""Post-process passes.\n\nDeclarations apply in order,\n'
        'last writer wins.\n"""\n\nimport os\n\nX = """\nnot = code(\n"""\n\n\n'
        "def f(view):\n    return {}\n"
    )
    layout = SourceCache().layout(source, "m.py")
    assert [len(p.nodes) for p in layout.pieces if p.nodes] == [
        1,
        1,
        1,
        1,
    ]  # docstring, import, X, f
    assert piecewise_tree(SourceCache(), source) == whole_tree(source)


def _committed(tmp_path, versions: list[str]) -> tuple[str, list[str]]:
    """A real repository with one commit per version of m.py; its git dir and the shas."""
    from harness.testing.gitrepo import FixtureRepo

    repo = FixtureRepo(tmp_path / "repo")
    return str(repo.root), [repo.commit(f"v{n}", {"m.py": v}) for n, v in enumerate(versions)]


def variants(source: str, seed: int, count: int) -> list[str]:
    """Versions of `source`, each with a few random line edits of its own (so one that
    does not parse does not spoil the next): a digit changed, a comment, a blank line,
    a line repeated or dropped, one that joins a statement to its neighbour; now and then
    on lines 1 and 2."""
    rng = random.Random(seed)
    lines, out = source.splitlines(keepends=True), []
    for _ in range(count):
        edited = list(lines)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(0 if rng.random() < 0.05 else 2, len(edited))
            action = rng.choice(("digit", "comment", "blank", "repeat", "drop", "join"))
            if action == "join":  # a line that joins the statement above or below it
                edited.insert(at, rng.choice(("@deco\n", "    x = 1\n", "else:\n", "(\n")))
            elif action == "digit":
                edited[at] = edited[at].replace("1", "7").replace("2", "1")
            elif action == "comment":
                edited.insert(at, "# note\n")
            elif action == "blank":
                edited.insert(at, "\n")
            elif action == "repeat":
                edited.insert(at, edited[at])
            else:
                del edited[at]
        out.append("".join(edited))
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("base", ["tricky", "fixture"])
def test_layouts_made_from_git_s_patches_are_the_trees_one_parse_gives(tmp_path, base, seed):
    """A scan's layouts come from the last one and git's patch, never from the text; each
    must still be exactly what `ast.parse` of the commit's file gives."""
    from harness import gitio

    head = "# line one\n# line two\n"  # lines 1 and 2: edits there go by the text
    cuttable = TRICKY.replace("TOTAL = 1 + \\\n2\n", "").replace("CALL = dict(\na=1,\n)\n", "")
    source = head + (cuttable if base == "tricky" else overrides_source(Overrides(padding=3)))
    versions = [source, *variants(source, seed, 24)]
    root, shas = _committed(tmp_path, versions)
    repo = gitio.open_repo(root)
    commits = gitio.commits_touching(repo, [shas[-1]], ["m.py"])
    cache, by_patch, parsed = SourceCache(), 0, 0
    with gitio.patch_stream(repo, commits) as stream:
        for n, (sha, version) in enumerate(zip(shas, versions, strict=True)):
            reader = gitio.FilesAt(repo, sha, stream=stream)
            read: list[str] = []  # the target's text is read only where no patch serves

            def reading(path: str, reader=reader, read=read) -> str | None:
                read.append(path)
                return reader.read(path)

            files = RevisionFiles(reading, "m.py", (), reader.ident, reader.edit)
            layout = matching_one_parse(lambda f=files: cache.layout_of(f, "m.py"), version)
            if layout is not None:
                assert layout.source == version, f"version {n}"
                parsed += 1
                by_patch += not read
    assert by_patch >= parsed // 3  # the patch path is what was tested


def test_a_method_crosses_to_a_worker_without_its_class():
    """A job pickles a statement with its own node only: a method of a class of many
    annotated fields (SGLang's ServerArgs) does not carry the fields' trees, nor the
    facts computed about other statements; read back, it is the same statement."""
    fields = "".join(f"    f{n}: Annotated[int, Arg(help='field {n}')] = {n}\n" for n in range(300))
    source = f"class Args:\n{fields}\n    def page(self):\n        return self.f1\n"
    layout = SourceCache().layout(source, "args.py")
    position = next(n for n, node in enumerate(layout.pieces[0].nodes)
                    if isinstance(node, ast.ClassDef))  # fmt: skip
    piece = layout.pieces[0]
    statement = layout.statement(0, position)._replace(member=300)
    statement.memo("mine", ast.dump)
    layout.statement(0, position)._replace(member=5).memo("theirs", ast.dump)
    crossed = pickle.loads(pickle.dumps(statement))
    assert ast.dump(crossed.node, include_attributes=True) == ast.dump(
        statement.node, include_attributes=True
    )
    assert crossed.lineno == statement.lineno == 303
    kept = [n for n in crossed.piece.nodes[position].body if not isinstance(n, ast.Pass)]
    assert kept == [crossed.node]
    assert [key[0] for key in crossed.piece.facts] == ["mine"]
    whole = len(pickle.dumps(piece.nodes))
    assert len(pickle.dumps(statement)) < len(source) + whole // 20


@pytest.mark.parametrize("seed", range(6))
def test_the_definitions_an_edited_layout_gives_are_its_index_s(seed):
    """Each layout of a chain of edits (lines repeated: equal texts share a piece) answers
    `definitions_in` from its base's map of names, as its own full index would."""
    from harness.closure.index import IMPORT, definitions_in, index_module

    cache = SourceCache()
    for version in variants(overrides_source(Overrides(padding=6)), seed, 16):
        try:
            layout = cache.layout(version, "m.py")
        except Unevaluable:
            continue
        index = index_module(layout)
        for name in sorted(index)[::3]:
            want = sorted(ast.dump(b.statement.node) for b in index[name] if b.kind != IMPORT)
            got = sorted(ast.dump(node) for node in definitions_in(layout, name))
            assert got == want, name
