"""make_plan: command-line arguments (spec files, directories, targets) to spec entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradverify.errors import SpecError, UsageError
from gradverify.spec.plan import make_plan

VALID = Path(__file__).resolve().parent / "specs" / "valid"
SQUARE = "tests.functions.correct:Square"
MUL = "tests.functions.correct:Mul"


def spec_text(target: str | None, case: str = "x") -> str:
    head = f"target: {target}\n" if target else ""
    return head + f"cases: [{{name: {case}, inputs: [{{shape: [3]}}]}}]\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory as the working directory (so `specs/` is its own)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_spec_file_argument(project: Path) -> None:
    write(project / "square.yaml", spec_text(SQUARE))

    plan = make_plan(["square.yaml"])

    assert [entry.spec.target for entry in plan.entries] == [SQUARE]
    assert plan.bare_targets == []


def test_directory_expands_to_every_spec_below_it_in_order() -> None:
    plan = make_plan([str(VALID)])

    assert [(Path(entry.file or "").name, entry.spec.target) for entry in plan.entries] == [
        ("anchors.yaml", MUL),
        ("literals.yml", "tests.functions.correct:SumDim"),
        ("several_functions.yaml", MUL),
        ("several_functions.yaml", "tests.functions.correct:MatMul"),
        ("several_functions.yaml", "tests.functions.correct:Scale"),
        ("square.yaml", SQUARE),
    ]


def test_arguments_keep_their_order(project: Path) -> None:
    write(project / "b.yaml", spec_text(MUL))
    write(project / "a.yaml", spec_text(SQUARE))

    plan = make_plan(["b.yaml", "a.yaml"])

    assert [entry.spec.target for entry in plan.entries] == [MUL, SQUARE]


def test_targetless_spec_given_alone_names_the_spec_option(project: Path) -> None:
    write(project / "shapes.yaml", "# shared shapes\n" + spec_text(None))

    with pytest.raises(SpecError) as caught:
        make_plan(["shapes.yaml"])

    (issue,) = caught.value.issues
    assert (issue.file, issue.line, issue.key_path) == ("shapes.yaml", 2, "target")
    assert "--spec shapes.yaml" in issue.message


def test_targetless_spec_in_a_directory_is_refused(project: Path) -> None:
    write(project / "suite/good.yaml", spec_text(SQUARE))
    write(project / "suite/shapes.yaml", spec_text(None))

    with pytest.raises(SpecError) as caught:
        make_plan(["suite"])

    assert caught.value.issues[0].file == str(Path("suite/shapes.yaml"))
    assert "--spec" in caught.value.issues[0].message


def test_invalid_spec_argument_raises_its_spec_error(project: Path) -> None:
    write(project / "bad.yaml", spec_text(SQUARE).replace("shape", "shap"))

    with pytest.raises(SpecError) as caught:
        make_plan(["bad.yaml"])

    assert caught.value.issues[0].key_path == "cases[0].inputs[0].shap"


@pytest.mark.parametrize("argument", ["square", "tests/functions/correct.py", "Square"])
def test_argument_that_is_neither_spec_directory_nor_target(project: Path, argument: str) -> None:
    with pytest.raises(UsageError) as caught:
        make_plan([argument])

    assert repr(argument) in str(caught.value)
    assert "module:Attr" in str(caught.value)


def test_missing_spec_file_is_a_usage_error(project: Path) -> None:
    with pytest.raises(UsageError) as caught:
        make_plan(["missing.yaml"])

    assert "no such spec file: 'missing.yaml'" in str(caught.value)


def test_directory_without_specs_is_a_usage_error(project: Path) -> None:
    (project / "empty").mkdir()

    with pytest.raises(UsageError) as caught:
        make_plan(["empty"])

    assert "no spec files" in str(caught.value)


def test_no_arguments_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        make_plan([])


def test_bare_target_picks_up_its_spec_under_specs(project: Path) -> None:
    write(project / "specs/square.yaml", spec_text(SQUARE, "written"))
    write(project / "specs/mul.yaml", spec_text(MUL, "unrelated"))
    write(project / "specs/broken.yaml", "target: [\n")

    plan = make_plan([SQUARE])

    assert [(entry.spec.target, entry.spec.cases[0].name) for entry in plan.entries] == [
        (SQUARE, "written")
    ]
    assert plan.bare_targets == []


def test_specs_are_looked_up_relative_to_the_working_directory(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(project / "elsewhere/specs/square.yaml", spec_text(SQUARE))

    assert make_plan([SQUARE]).bare_targets == [SQUARE]

    monkeypatch.chdir(project / "elsewhere")
    assert make_plan([SQUARE]).bare_targets == []


def test_bare_target_without_a_spec_is_left_for_inference(project: Path) -> None:
    write(project / "specs/mul.yaml", spec_text(MUL))

    plan = make_plan([SQUARE, "gradverify.examples.linear:Linear"])

    assert plan.entries == []
    assert plan.bare_targets == [SQUARE, "gradverify.examples.linear:Linear"]


def test_spec_option_applies_a_targetless_spec_to_the_target(project: Path) -> None:
    write(project / "shapes.yaml", spec_text(None, "shared"))
    write(project / "specs/square.yaml", spec_text(SQUARE, "ignored"))

    plan = make_plan([SQUARE, MUL], spec="shapes.yaml")

    assert [(entry.spec.target, entry.spec.cases[0].name) for entry in plan.entries] == [
        (SQUARE, "shared"),
        (MUL, "shared"),
    ]
    assert {entry.file for entry in plan.entries} == {"shapes.yaml"}
    assert plan.bare_targets == []


def test_spec_option_overrides_the_target_written_in_the_spec(project: Path) -> None:
    write(project / "shapes.yaml", spec_text(MUL))

    plan = make_plan([SQUARE], spec="shapes.yaml")

    assert [entry.spec.target for entry in plan.entries] == [SQUARE]


def test_spec_and_target_arguments_mix(project: Path) -> None:
    write(project / "mul.yaml", spec_text(MUL))

    plan = make_plan(["mul.yaml", SQUARE])

    assert [entry.spec.target for entry in plan.entries] == [MUL]
    assert plan.bare_targets == [SQUARE]


def test_the_spec_paths_are_read_once_however_many_targets(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each bare target is looked up in the configured spec paths: one reading serves all."""
    from gradverify.spec import load

    write(project / "specs" / "square.yaml", spec_text(SQUARE))
    write(project / "specs" / "mul.yaml", spec_text(MUL))
    write(project / "ops" / "__init__.py", "")
    write(
        project / "ops" / "cube.py",
        "import torch\n\n\nclass Cube(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        return x**3\n",
    )
    read: list[str] = []
    original = load.load_spec_file

    def counted(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        read.append(Path(path).name)
        return original(path, *args, **kwargs)

    monkeypatch.setattr(load, "load_spec_file", counted)
    plan = make_plan([SQUARE, MUL, "tests.functions.correct:Scale", "ops"])

    assert [entry.spec.target for entry in plan.entries] == [SQUARE, MUL]
    assert plan.bare_targets == ["tests.functions.correct:Scale"]
    assert [item.target for item in plan.defined] == ["ops.cube:Cube"]
    assert sorted(read) == ["mul.yaml", "square.yaml"]
