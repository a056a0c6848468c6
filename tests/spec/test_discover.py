"""Finding spec files in directories, and the specs that name a bare target."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradverify.spec import find_specs_for_target, is_spec_path, spec_files

SQUARE = "tests.functions.correct:Square"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def spec_for(target: str, case: str = "x") -> str:
    return f"target: {target}\ncases: [{{name: {case}, inputs: [{{shape: [3]}}]}}]\n"


def test_spec_files_are_found_recursively_and_sorted(tmp_path: Path) -> None:
    for name in ["b.yaml", "a.yml", "nested/deeper/c.yaml", "nested/a.yaml"]:
        write(tmp_path / name, spec_for(SQUARE))
    for name in ["notes.txt", "spec.yaml.bak", "nested/README.md"]:
        write(tmp_path / name, "not a spec")
    (tmp_path / "folder.yaml").mkdir()  # a directory named like a spec is not one

    found = [path.relative_to(tmp_path).as_posix() for path in spec_files(tmp_path)]

    assert found == ["a.yml", "b.yaml", "nested/a.yaml", "nested/deeper/c.yaml"]


def test_spec_files_of_a_file_is_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "one.yaml", spec_for(SQUARE))

    assert spec_files(path) == [path]
    assert spec_files(str(path)) == [path]


def test_spec_files_of_an_empty_directory_is_empty(tmp_path: Path) -> None:
    assert spec_files(tmp_path) == []


def test_is_spec_path(tmp_path: Path) -> None:
    assert is_spec_path("specs/x.yaml")
    assert is_spec_path("x.yml")
    assert is_spec_path(str(tmp_path))
    assert not is_spec_path("pkg.mod:Attr")
    assert not is_spec_path("path/to/file.py:Attr")
    assert not is_spec_path(str(tmp_path / "no_such_directory"))


def test_find_specs_for_target_matches_the_target_exactly(tmp_path: Path) -> None:
    write(tmp_path / "square.yaml", spec_for(SQUARE, "mine"))
    write(tmp_path / "other.yaml", spec_for("tests.functions.correct:SquareX"))
    write(
        tmp_path / "sub/several.yaml",
        "functions:\n"
        f"  - target: {SQUARE}\n    cases: [{{name: nested}}]\n"
        "  - target: tests.functions.correct:Mul\n    cases: [{name: pair}]\n",
    )

    found = find_specs_for_target(SQUARE, tmp_path)

    assert [(Path(entry.file).name, entry.spec.cases[0].name) for entry in found] == [
        ("square.yaml", "mine"),
        ("several.yaml", "nested"),
    ]


def test_find_specs_for_target_ignores_broken_specs(tmp_path: Path) -> None:
    write(tmp_path / "a_broken.yaml", "target: [unclosed\n")
    write(tmp_path / "b_invalid.yaml", spec_for(SQUARE).replace("shape", "shap"))
    write(tmp_path / "c_good.yaml", spec_for(SQUARE, "good"))

    found = find_specs_for_target(SQUARE, tmp_path)

    assert [entry.spec.cases[0].name for entry in found] == ["good"]


def test_find_specs_for_target_without_the_directory_finds_nothing(tmp_path: Path) -> None:
    assert find_specs_for_target(SQUARE, tmp_path / "specs") == []


def test_find_specs_for_target_defaults_to_specs_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "specs/square.yaml", spec_for(SQUARE, "from_cwd"))
    monkeypatch.chdir(tmp_path)

    (entry,) = find_specs_for_target(SQUARE)

    assert entry.spec.cases[0].name == "from_cwd"
