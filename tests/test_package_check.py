"""`gradverify check PACKAGE` (or a directory of code): every Function and custom op its code
defines, each with its spec or inferred inputs, and the run's gradient coverage."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.errors import UsageError
from gradverify.spec.definitions import definitions_in_directory, definitions_in_module
from gradverify.spec.identity import canonical
from gradverify.spec.plan import make_plan

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "tests.functions.coverage_pkg"
PACKAGE_DIR = ROOT / "tests" / "functions" / "coverage_pkg"
CUBE = f"{PACKAGE}.ops:Cube"
TWICE = f"{PACKAGE}.ops:Twice"
SUM_ALL = f"{PACKAGE}.ops:SumAll"
HALVE = f"{PACKAGE}.sub.halve:gradverify_coverage::halve"
TRITON_EXAMPLES = ("TritonSiLU", "TritonSiLUDroppedTerm")
COVERAGE_KEYS = {
    "functions",
    "custom_ops",
    "with_specs",
    "inferred",
    "without_inputs",
    "require_specs",
    "unspecified",
}


def write_spec(project: Path, name: str, target: str, inputs: str = "[{shape: [5]}]") -> None:
    (project / "specs").mkdir(exist_ok=True)
    text = f"target: {target}\ncases:\n  - name: vector\n    inputs: {inputs}\n"
    (project / "specs" / f"{name}.yaml").write_text(text, encoding="utf-8")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose specs/ names Cube only."""
    monkeypatch.chdir(tmp_path)
    write_spec(tmp_path, "cube", CUBE)
    return tmp_path


def check(*arguments: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["check", "--format", "json", "--no-cache", *arguments])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


@dataclass
class Run:
    """One `check PACKAGE` run: its exit code, its JSON report (written with --output) and
    the text report it printed to the terminal all the same."""

    code: int
    report: dict
    text: str


def run_package(tmp_path_factory: pytest.TempPathFactory, *arguments: str) -> Run:
    """`check PACKAGE ARGUMENTS` in a project whose specs/ names Cube only."""
    project = tmp_path_factory.mktemp("project")
    write_spec(project, "cube", CUBE)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        options = ("--no-cache", "--format", "json", "--output", "report.json")
        result = CliRunner().invoke(app, ["check", PACKAGE, *options, *arguments])
    report = json.loads((project / "report.json").read_text(encoding="utf-8"))
    return Run(result.exit_code, report, result.output)


@pytest.fixture(scope="module")
def package_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_package(tmp_path_factory)


@pytest.fixture(scope="module")
def required_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_package(tmp_path_factory, "--require-specs", "-q")


# Discovery: read from the source, defined there and not merely imported.


def test_a_package_defines_its_functions_and_ops_not_its_imports_or_mixins() -> None:
    found = definitions_in_module(PACKAGE)

    assert found is not None
    assert [(canonical(d.target), d.kind) for d in found] == [
        (CUBE, "Function"),
        (TWICE, "Function"),  # `from torch.autograd import Function as AutogradFunction`
        (SUM_ALL, "Function"),  # through a base of the package's own without forward
        (HALVE, "custom op"),  # in a subpackage
    ]


def test_a_directory_of_code_finds_what_its_package_name_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    by_name = [canonical(d.target) for d in definitions_in_module(PACKAGE) or []]
    by_path = [
        canonical(d.target) for d in definitions_in_directory("tests/functions/coverage_pkg/")
    ]

    assert by_path == by_name


def test_a_directory_outside_any_package_names_its_files_by_path(tmp_path: Path) -> None:
    (tmp_path / "loose.py").write_text(
        "import torch\n\nclass Double(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        return 2 * x\n",
        encoding="utf-8",
    )

    (found,) = definitions_in_directory(str(tmp_path))

    assert found.target == f"{tmp_path.as_posix()}/loose.py:Double"


def test_a_module_name_finds_that_module_only() -> None:
    found = definitions_in_module(f"{PACKAGE}.sub.halve")

    assert [canonical(d.target) for d in (found or [])] == [HALVE]


def test_a_directory_with_specs_keeps_meaning_its_specs(tmp_path: Path) -> None:
    write_spec(tmp_path, "cube", CUBE)
    (tmp_path / "specs" / "helpers.py").write_text("X = 1\n", encoding="utf-8")

    plan = make_plan([str(tmp_path / "specs")])

    assert [entry.spec.target for entry in plan.entries] == [CUBE]
    assert plan.defined == [] and plan.code_arguments == []


def test_a_package_without_functions_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("def f(x):\n    return x\n", encoding="utf-8")

    with pytest.raises(UsageError, match=r"defines no torch\.autograd\.Function"):
        make_plan([str(tmp_path)])


def test_an_unknown_name_is_a_usage_error(project: Path) -> None:
    result = CliRunner().invoke(app, ["check", "no_such_package_here"])

    assert result.exit_code == 2
    assert "neither a spec file" in result.output and "module or package" in result.output


# The run and its coverage: the JSON and the text report of one run (--output), shared.


def test_each_function_runs_with_its_spec_or_inferred_inputs(package_run: Run) -> None:
    report = package_run.report

    assert package_run.code == 0, package_run.text
    assert {r["target"] for r in report["results"]} == {CUBE, TWICE, HALVE}
    assert {r["case"] for r in report["results"] if r["target"] == CUBE} == {"vector"}
    coverage = report["coverage"]
    assert set(coverage) == COVERAGE_KEYS
    assert coverage["functions"] == 4 and coverage["custom_ops"] == 1
    assert coverage["with_specs"] == [CUBE]
    assert coverage["inferred"] == [TWICE, HALVE]
    (without,) = coverage["without_inputs"]
    assert without["target"] == SUM_ALL
    assert "forward takes *tensors" in without["reason"]
    assert coverage["unspecified"] == [TWICE, HALVE, SUM_ALL]


def test_text_report_ends_with_the_coverage(package_run: Run) -> None:
    assert package_run.code == 0, package_run.text
    lines = package_run.text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("gradient coverage:"))
    coverage = " ".join(" ".join(lines[start:]).split())
    assert (
        "gradient coverage: 3 Functions and 1 custom op: 1 with specs, 2 inferred, "
        "1 without inputs (record or write a spec)"
    ) in coverage
    assert f"without inputs, not checked: {SUM_ALL} forward takes *tensors" in coverage
    assert lines[-1].startswith("PASSED")


def test_a_directory_path_works_as_the_package_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # where the package's directory is `tests/functions/coverage_pkg/`
    by_name = check(PACKAGE)
    by_path = check("tests/functions/coverage_pkg/")

    assert by_path[0] == by_name[0]
    assert by_path[1]["coverage"] == by_name[1]["coverage"]


def test_require_specs_fails_for_functions_no_spec_names(required_run: Run) -> None:
    report = required_run.report

    assert required_run.code == 1
    assert report["passed"] is False
    assert not any(r["status"] == "fail" for r in report["results"])
    assert report["coverage"]["require_specs"] is True
    assert report["coverage"]["unspecified"] == [TWICE, HALVE, SUM_ALL]


def test_require_specs_lists_them_in_text(required_run: Run) -> None:
    assert required_run.code == 1
    assert "--require-specs: 3 without a spec" in required_run.text
    assert all(target in required_run.text for target in (TWICE, HALVE, SUM_ALL))


def test_require_specs_passes_when_every_function_has_one(project: Path) -> None:
    write_spec(project, "twice", TWICE)
    # The op by the attribute that holds it: a spec names it under any spelling.
    write_spec(project, "halve", f"{PACKAGE}.sub.halve:halve")
    write_spec(project, "sum_all", SUM_ALL, "[{shape: [3]}, {shape: [3]}]")

    code, report = check(PACKAGE, "--require-specs")

    assert code == 0, report
    coverage = report["coverage"]
    assert len(coverage["with_specs"]) == 4
    assert coverage["inferred"] == coverage["without_inputs"] == coverage["unspecified"] == []


def test_require_specs_needs_a_package(project: Path) -> None:
    result = CliRunner().invoke(app, ["check", "specs", "--require-specs"])

    assert result.exit_code == 2
    assert "--require-specs needs a package" in result.output


def test_a_run_over_specs_has_no_coverage(project: Path) -> None:
    code, report = check("specs")

    assert code == 0
    assert report["coverage"] is None


def test_every_bundled_function_and_op_is_checked_through_the_console_script() -> None:
    """The CI step over a whole codebase: `gradverify check gradverify.examples` from the
    project root, where specs/ names every bundled Function but the Triton ones (their specs,
    in specs_triton/, need triton and a GPU or Triton's interpreter)."""
    completed = subprocess.run(
        [
            str(Path(sys.executable).parent / "gradverify"),
            *("check", "gradverify.examples", "--format", "json", "--no-cache"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )

    assert completed.returncode == 1, completed.stderr  # the bundled bugs are found
    report = json.loads(completed.stdout)
    found = [canonical(d.target) for d in definitions_in_module("gradverify.examples") or []]
    coverage = report["coverage"]
    triton = {f"gradverify.examples.triton_kernels:{name}" for name in TRITON_EXAMPLES}
    assert coverage["functions"] == len(found) == 28 and coverage["custom_ops"] == 4
    assert len(coverage["with_specs"]) == 26
    assert {entry["target"] for entry in coverage["without_inputs"]} == triton
    checked = {canonical(result["target"]) for result in report["results"]}
    assert checked == set(found) - triton
