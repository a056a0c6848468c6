"""Bad flags, bad settings and cases that do not fit forward are usage errors (exit 2).

They are found before anything runs, and say what is wrong and where, never as a check
that failed (exit 1).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]
GRADVERIFY = [sys.executable, "-m", "gradverify"]

pytestmark = pytest.mark.usefixtures("in_repo")


def invoke(*arguments: str):
    return CliRunner().invoke(app, list(arguments))


def _spec(directory: Path, text: str, name: str = "spec.yaml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf"])
def test_a_timeout_that_is_not_a_positive_number_of_seconds_is_a_usage_error(value):
    result = invoke("check", "--no-cache", "--timeout", value, "tests.functions.correct:Square")
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "'--timeout'" in result.output and "greater than 0" in result.output
    assert "timed out" not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("value", ["0", "-2"])
def test_jobs_below_one_is_a_usage_error_naming_the_range(value):
    result = invoke("check", "--no-cache", "-j", value, "tests.functions.correct:Square")
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "'--jobs'" in result.output and "1" in result.output
    assert "PASSED" not in result.output


def test_the_real_command_rejects_a_negative_timeout_before_running_anything():
    completed = subprocess.run(
        [*GRADVERIFY, "check", "--timeout", "-1", "specs/examples.yaml"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert completed.returncode == ExitCode.USAGE, completed.stderr
    assert "--timeout" in completed.stderr and completed.stdout == ""


@pytest.mark.parametrize(
    ("setting", "key"),
    [("jobs = 0", "tool.gradverify.jobs"), ("timeout = inf", "tool.gradverify.timeout")],
)
def test_the_same_values_in_pyproject_are_usage_errors(tmp_path, monkeypatch, setting, key):
    (tmp_path / "pyproject.toml").write_text(f"[tool.gradverify]\n{setting}\n")
    spec = _spec(
        tmp_path,
        "target: tests.functions.correct:Square\n"
        "checks: [forward]\ncases: [{name: v, inputs: [{shape: [3]}]}]\n",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    result = invoke("check", "--no-cache", str(spec))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert key in result.output


def test_an_infinite_timeout_in_a_spec_is_a_spec_error_not_an_internal_error(tmp_path):
    spec = _spec(
        tmp_path,
        "target: tests.functions.correct:Square\ntimeout: .inf\n"
        "checks: [forward]\ncases: [{name: v, inputs: [{shape: [3]}]}]\n",
    )
    result = invoke("check", "--no-cache", str(spec))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert f"{spec}:2" in result.output and "timeout" in result.output
