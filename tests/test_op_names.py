"""One name for a custom op in every mode (issue 23): `check PACKAGE`, zero-config `check
module:attr`, `init`, `record` and the Python API name it `module:ns::name`, after the module
that defines it (tests/functions/coverage_pkg/sub/halve.py's `halve`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.target.loading import target_of
from tests.functions.coverage_pkg.sub.halve import halve

ROOT = Path(__file__).resolve().parents[1]
MODULE = "tests.functions.coverage_pkg.sub.halve"
NAME = f"{MODULE}:gradverify_coverage::halve"
SCRIPT = f"""\
import torch
from {MODULE} import halve

halve(torch.linspace(0.5, 2.0, 5, requires_grad=True)).sum().backward()
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path


def targets_of_check(*arguments: str) -> set[str]:
    result = CliRunner().invoke(app, ["check", *arguments, "--format", "json", "--no-isolation"])
    assert result.exit_code == 0, result.output
    return {item["target"] for item in json.loads(result.stdout)["results"]}


def test_check_and_zero_config_name_the_op_alike(project: Path) -> None:
    assert targets_of_check(f"{MODULE}:halve") == {NAME}
    assert NAME in targets_of_check("tests.functions.coverage_pkg")


def test_init_writes_the_op_by_its_qualified_name(project: Path) -> None:
    result = CliRunner().invoke(
        app, ["init", f"{MODULE}:halve", "-o", "specs/halve.yaml", "--no-isolation"]
    )
    assert result.exit_code == 0, result.output
    written = yaml.safe_load((project / "specs" / "halve.yaml").read_text(encoding="utf-8"))
    assert written["target"] == NAME


def test_record_and_the_api_name_the_op_alike(project: Path) -> None:
    (project / "script.py").write_text(SCRIPT, encoding="utf-8")
    environment = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    gradverify = Path(sys.executable).parent / "gradverify"
    completed = subprocess.run(
        [str(gradverify), "record", "--specs", "recorded", "--", sys.executable, "script.py"],
        cwd=project, capture_output=True, text=True, env=environment, timeout=300,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    (written,) = (project / "recorded").glob("*.yaml")
    assert yaml.safe_load(written.read_text(encoding="utf-8"))["target"] == NAME
    assert target_of(halve).spec == NAME
