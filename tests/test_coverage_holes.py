"""Coverage with no green holes (issue 28): every Function a package defines is checked or
listed with the reason it was not, and a run that checked nothing says so in its exit code."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.report import FORMATS, RenderOptions
from gradverify.results import Report, Result, Status

ROOT = Path(__file__).resolve().parents[1]
SCOPES = "tests.functions.scopes_pkg"
SQUARE = f"{SCOPES}.ops:Kernels.Square"
TRIPLE = f"{SCOPES}.ops:Kernels.Triple"
SCALE = f"{SCOPES}.ops:make_scale.<locals>.Scale"


def check(*arguments: str) -> tuple[int, dict, str]:
    """`check ARGUMENTS` in one process: the exit code, the JSON report, the text report."""
    options = ("--no-cache", "--no-isolation", "--format", "json", "--output", "report.json")
    result = CliRunner().invoke(app, ["check", *arguments, *options])
    report = json.loads(Path("report.json").read_text(encoding="utf-8"))
    return result.exit_code, report, result.output


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project: no specs, the repository importable."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    return tmp_path


def test_nested_functions_are_checked_and_a_built_one_is_listed(project: Path) -> None:
    code, report, text = check(SCOPES)

    assert code == 0, text
    assert {r["target"] for r in report["results"]} == {SQUARE, TRIPLE}
    coverage = report["coverage"]
    assert coverage["functions"] == 3
    assert coverage["inferred"] == [SQUARE, TRIPLE]
    (scale,) = coverage["without_inputs"]
    assert scale["target"] == SCALE
    assert scale["reason"].startswith("needs a spec: defined inside make_scale()")
    assert SCALE in coverage["unspecified"]
    assert "defined inside make_scale()" in " ".join(text.split())


# A package this machine lacks: "needs X (not installed)", a skip with its reason.

FUNCTION = (
    "import torch\n{imports}\n\nclass Twice(torch.autograd.Function):\n"
    "    @staticmethod\n    def forward(ctx, x):\n{body}        return 2 * x\n\n"
    "    @staticmethod\n    def backward(ctx, grad_output):\n        return 2 * grad_output\n"
)
MISSING = "gv_not_installed_kernels"
PACKAGES = itertools.count()


def write_package(root: Path, modules: dict[str, str]) -> str:
    """A package with `modules` (name: source) in it, named anew for each test (a package
    imported by an earlier test stays in sys.modules): its name."""
    name = f"gvoptpkg{next(PACKAGES)}"
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    for module, source in modules.items():
        (package / f"{module}.py").write_text(source, encoding="utf-8")
    return name


def function(imports: str = "", body: str = "") -> str:
    return FUNCTION.format(imports=imports, body=body)


@pytest.mark.parametrize("isolation", ["--isolation", "--no-isolation"])
def test_a_module_that_imports_a_missing_package_needs_it(
    project: Path, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    monkeypatch.syspath_prepend(str(project))
    package = write_package(
        project, {"kernels": function(f"import {MISSING}"), "plain": function()}
    )

    code, report, text = check(package, isolation)

    assert code == 0, text
    assert not any(r["status"] == "fail" for r in report["results"])
    assert {r["target"] for r in report["results"]} == {f"{package}.plain:Twice"}
    (without,) = report["coverage"]["without_inputs"]
    assert without == {
        "target": f"{package}.kernels:Twice",
        "reason": f"needs {MISSING} (not installed)",
    }
    assert f"needs {MISSING} (not installed)" in text


def test_a_forward_that_imports_a_missing_package_needs_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(project))
    package = write_package(project, {"lazy": function(body=f"        import {MISSING}\n")})

    code, report, text = check(package)

    (without,) = report["coverage"]["without_inputs"]
    assert without["reason"].startswith(f"needs {MISSING} (not installed): forward imports it")
    assert "rejected every shape" not in without["reason"]
    assert code == 5, text


def test_a_missing_module_of_the_users_own_package_stays_a_failure(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(project))
    package = write_package(project, {})
    (project / package / "broken.py").write_text(
        function(f"import {package}._not_written_yet"), encoding="utf-8"
    )

    code, report, text = check(package)

    assert code == 1, text
    (failed,) = [r for r in report["results"] if r["status"] == "fail"]
    assert f"No module named '{package}._not_written_yet'" in failed["message"]


def test_a_target_that_imports_a_missing_package_is_skipped_with_exit_5(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(project))
    package = write_package(project, {"kernels": function(f"import {MISSING}")})

    code, report, text = check(f"{package}.kernels:Twice")

    assert code == 5, text
    (skipped,) = report["results"]
    assert skipped["status"] == "skip" and not skipped["usage"]
    assert skipped["message"] == f"needs {MISSING} (not installed)"
    assert "NOTHING CHECKED" in text


@pytest.mark.parametrize("isolation", ["--isolation", "--no-isolation"])
def test_a_spec_whose_target_imports_a_missing_package_skips_its_cases(
    project: Path, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    monkeypatch.syspath_prepend(str(project))
    package = write_package(project, {"kernels": function(f"import {MISSING}")})
    spec = project / "kernels.yaml"
    spec.write_text(
        f"target: {package}.kernels:Twice\ncases:\n"
        "  - {name: small, inputs: [{shape: [3]}]}\n  - {name: large, inputs: [{shape: [9]}]}\n",
        encoding="utf-8",
    )

    code, report, text = check(str(spec), isolation)

    assert code == 5, text
    assert [(r["case"], r["status"], r["usage"]) for r in report["results"]] == [
        ("small", "skip", False),
        ("large", "skip", False),
    ]
    assert {r["message"] for r in report["results"]} == {f"needs {MISSING} (not installed)"}
    assert {r["spec_line"] for r in report["results"]} == {3, 4}


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_target_that_needs_cuda_is_skipped_as_one_that_needs_a_package(project: Path) -> None:
    """As zero-config lists it in a package's coverage: a skip that says so, not exit 2."""
    code, report, text = check("tests.functions.kernels_pkg.ops:CudaSquare")

    assert code == 5, text
    (skipped,) = report["results"]
    assert skipped["status"] == "skip" and not skipped["usage"]
    assert skipped["message"] == "needs CUDA (this machine has none)"
    assert skipped["details"]  # torch's complaint


# Exit 5: targets asked for, nothing checked.


def test_a_package_where_nothing_is_checked_exits_5(project: Path) -> None:
    (project / "built.py").write_text(
        "import torch\n\ndef make():\n    class Built(torch.autograd.Function):\n"
        "        @staticmethod\n        def forward(ctx, x):\n            return x\n"
        "    return Built\n",
        encoding="utf-8",
    )

    code, report, text = check("built")

    assert code == 5, text
    assert report["results"] == [] and report["coverage"]["functions"] == 1
    assert "NOTHING CHECKED" in text


def test_a_pre_commit_run_no_spec_depends_on_stays_0(project: Path) -> None:
    (project / "loose.py").write_text(function(), encoding="utf-8")

    result = CliRunner().invoke(app, ["check", "--changed-files", "loose.py", "--no-cache"])

    assert result.exit_code == 0, result.output
    assert "NOTHING CHECKED" in result.output


@pytest.mark.parametrize(
    ("format_name", "said"),
    [
        ("github", "gradverify NOTHING CHECKED:"),
        ("html", ">NOTHING CHECKED<"),
        ("text", "NOTHING CHECKED"),
    ],
)
def test_a_run_of_skips_alone_is_never_called_passed(format_name: str, said: str) -> None:
    skipped = Result(
        "mypkg.ops:F", "not run here", "forward", Status.SKIP, "needs triton (not installed)"
    )

    rendered = FORMATS[format_name](Report(results=(skipped,)), RenderOptions())

    assert said in rendered and "PASSED" not in rendered
