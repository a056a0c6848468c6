"""Coverage with no green holes (issue 28): every Function a package defines is checked or
listed with the reason it was not, and a run that checked nothing says so in its exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app

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
