"""Module names to repository files: source roots from the target path, or as given."""

from __future__ import annotations

from harness.closure.modules import RevisionFiles, roots_for

FILES = {
    "python/sglang/srt/utils/__init__.py": "",
    "python/sglang/srt/utils/common.py": "",
    "python/sglang/srt/arg_groups/overrides.py": "",
    "python/sglang/srt/arg_groups/choices.py": "",
    "vendor/sglang/srt/utils/common.py": "",
}
TARGET = "python/sglang/srt/arg_groups/overrides.py"


def test_roots_come_from_the_target_path():
    assert roots_for(TARGET, "sglang.srt.utils") == ["python"]
    assert roots_for(TARGET, "torch") == []
    files = RevisionFiles.of(FILES, TARGET)
    assert (
        files.module_file("sglang.srt.utils.common", TARGET) == "python/sglang/srt/utils/common.py"
    )
    assert files.module_file("sglang.srt.utils", TARGET) == "python/sglang/srt/utils/__init__.py"
    assert files.module_file("sglang.srt.missing", TARGET) is None


def test_relative_imports_climb_from_the_importing_file():
    files = RevisionFiles.of(FILES, TARGET)
    assert files.module_file("choices", TARGET, 1) == "python/sglang/srt/arg_groups/choices.py"
    assert files.module_file("utils.common", TARGET, 2) == "python/sglang/srt/utils/common.py"
    assert files.module_file("", TARGET, 2) is None  # python/sglang/srt has no __init__.py here


def test_roots_a_matrix_names_come_first():
    files = RevisionFiles.of(FILES, TARGET, roots=("vendor",))
    assert (
        files.module_file("sglang.srt.utils.common", TARGET) == "vendor/sglang/srt/utils/common.py"
    )
    assert files.paths_read()[0] == TARGET
